/**
 * `gateway-reconciler plan`: one dry run with the service's settings and kubeconfig, printed
 * as a table of what would change, field by field (plan-table.ts), or as the run's report
 * (`--json`). Exit 0: nothing would change; 2: something would; 1: the plan failed or is
 * incomplete (a read failed); 2 with one line: a bad argument.
 *
 * Scope: everything, `--namespace NS`, or `--kind K --name N [--namespace NS]` (as /resync
 * names objects). `--from-dir DIR` plans the YAML files of DIR as if they were applied
 * (from-dir.ts) over the live cluster, through OverlayKube: nothing is written to the cluster,
 * the gateways or the store. Settings are the service's (loadConfig; no webhook tokens needed),
 * its parts built by createService; logs go to stderr (LOG_LEVEL, default error).
 */
import { parseArgs } from 'node:util';
import type { RunReport, RunScope } from '../engine/types.js';
import { KubeClient } from '../kube/client.js';
import { OverlayKube } from '../kube/overlay.js';
import { systemClock } from '../platform/clock.js';
import { loadConfig } from '../platform/config.js';
import { BadRequestError } from '../platform/errors.js';
import { createLineLogger } from '../platform/log-lines.js';
import { createService, loadKubeConfig, type ServiceParts, secretsOf } from '../service.js';
import { resyncScope } from '../triggers/resync.js';
import { asStored, readManifests } from './from-dir.js';
import { type CliIo, type Command, EXIT, UsageError } from './io.js';
import { planChanges, planProblems, planTable } from './plan-table.js';

const HELP = `Usage: gateway-reconciler plan [options]

What a run would change on the gateways, field by field, without changing anything: one dry
run with the service's settings (TYK_MODE, TYK_URL, TYK_AUTH, TYK_ORG, REDIS_URL, …) and
kubeconfig (KUBECONFIG, or the pod's service account).

Options:
  --namespace NS     only the objects of namespace NS
  --kind K --name N  only that object (K: ApiDefinition, SecurityPolicy, … or a plural;
                     namespace: --namespace, default "default")
  --from-dir DIR     plan the YAML files of DIR as if applied over the live cluster
                     (nothing is applied)
  --json             print the run's report as JSON instead of the table
  --progress         progress lines on stderr even when it is not a terminal
  --help             this text

Exit status: 0 nothing would change, 2 something would, 1 the plan failed or is incomplete;
a bad argument: 2, with one line.

Examples:
  gateway-reconciler plan
  gateway-reconciler plan --namespace shop
  gateway-reconciler plan --kind ApiDefinition --name httpbin --namespace shop --json
  gateway-reconciler plan --from-dir deploy/apis`;

interface PlanOptions {
  readonly scope: RunScope;
  readonly json: boolean;
  readonly fromDir?: string;
  readonly progress: boolean;
  readonly namespace?: string;
}

/** The options, or a UsageError naming what is wrong. */
export function planOptions(args: readonly string[], errIsTerminal: boolean): PlanOptions {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: [...args],
      options: {
        namespace: { type: 'string' },
        kind: { type: 'string' },
        name: { type: 'string' },
        'from-dir': { type: 'string' },
        json: { type: 'boolean' },
        progress: { type: 'boolean' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    throw new UsageError(`${(err as Error).message.split('\n')[0]} (--help for the options)`);
  }
  const text = (k: string): string | undefined => {
    const v = values[k];
    if (typeof v !== 'string') return undefined;
    if (v.trim() === '') throw new UsageError(`--${k} needs a value`);
    return v;
  };
  const [kind, name, namespace, fromDir] = [text('kind'), text('name'), text('namespace'), text('from-dir')];
  if (kind !== undefined && name === undefined) throw new UsageError('--kind needs --name (or leave both out: every object)');
  let scope: RunScope;
  try {
    scope = resyncScope({ kind, name, namespace: name !== undefined ? (namespace ?? 'default') : namespace, dryRun: true });
  } catch (err) {
    if (err instanceof BadRequestError) throw new UsageError(err.message);
    throw err;
  }
  return { scope, json: values.json === true, progress: values.progress === true || errIsTerminal, ...(fromDir !== undefined ? { fromDir } : {}), ...(namespace !== undefined ? { namespace } : {}) };
}

async function plan(options: PlanOptions, io: CliIo): Promise<RunReport> {
  const env = { ...io.env };
  const config = loadConfig(env, { serving: false });
  const log = createLineLogger(env.LOG_LEVEL?.toLowerCase() ?? 'error', (line) => io.err(line.trimEnd()));
  const progress = (line: string) => {
    if (options.progress) io.err(line);
  };
  const parts: Partial<ServiceParts> = { log };
  const manifests = options.fromDir !== undefined ? await readManifests(options.fromDir) : undefined;
  if (manifests) {
    const client = new KubeClient(loadKubeConfig(config, env), { timeoutMs: config.httpTimeoutMs, now: () => systemClock.now(), secrets: secretsOf(config) });
    parts.closers = [() => client.close()];
    try {
      progress(`reading ${manifests.length.toLocaleString('en-US')} objects from ${options.fromDir}\u2026`);
      parts.kube = new OverlayKube(client, await asStored(client, manifests, new Date(systemClock.now()), options.namespace ?? 'default'));
    } catch (err) {
      await client.close();
      throw err;
    }
  }
  if (!config.redisUrl) io.err('gateway-reconciler plan: REDIS_URL is not set: no records are read, so objects the gateways have are planned as new to the reconciler');
  const svc = createService(config, env, parts);
  try {
    progress('planning: reading the cluster and the gateways\u2026');
    return await svc.run({ trigger: 'resync', scope: options.scope, dryRun: true });
  } finally {
    await svc.close();
  }
}

export const PLAN: Command = {
  name: 'plan',
  summary: 'what a run would change on the gateways, field by field (a dry run)',
  help: HELP,
  async run(args, io) {
    const options = planOptions(args, io.errIsTerminal === true);
    const report = await plan(options, io);
    if (options.json) io.out(JSON.stringify(report, null, 2));
    else for (const line of planTable(report)) io.out(line);
    const problems = planProblems(report);
    for (const p of problems.slice(0, 5)) io.err(`gateway-reconciler plan: incomplete: ${p}`);
    if (problems.length > 5) io.err(`gateway-reconciler plan: incomplete: and ${problems.length - 5} more`);
    if (problems.length > 0) return EXIT.failed;
    return planChanges(report) ? EXIT.usageOrChanges : EXIT.ok;
  },
};
