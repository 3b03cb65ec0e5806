/**
 * `gateway-reconciler export`: the resources that adopt what a gateway already serves. Reads
 * the gateway the service's settings name (TYK_MODE, TYK_URL, TYK_AUTH, TYK_ORG,
 * TYK_TLS_INSECURE_SKIP_VERIFY; HTTP_TIMEOUT_MS) through lib/gateway's clients
 * (lib/export/read.ts), translates (lib/export/translate.ts, pure) and writes YAML: one
 * multi-document stream on stdout, or with `--out DIR` one file per resource. On stderr:
 * progress, one line per thing that cannot be expressed exactly (`export: <name>: <what>`),
 * and the setting the import needs. A bad argument is a UsageError (exit 2); a malformed
 * setting or a failed read exits 1 (lib/cli/main.ts prints the one line). The gateway secret
 * is never printed.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseConnection } from '../gateway/connection.js';
import type { Gateway } from '../gateway/types.js';
import { ConfigError } from '../platform/errors.js';
import { type CliIo, type Command, EXIT, UsageError } from './io.js';

const HELP = `Usage: gateway-reconciler export [--namespace NS] [--out DIR]

Reads every Tyk Classic API, Tyk OAS API and policy of the gateway the service's settings name
(TYK_MODE, TYK_URL, TYK_AUTH, TYK_ORG, TYK_TLS_INSECURE_SKIP_VERIFY) and writes the resources
that adopt them as they are: ApiDefinitions with spec.api_id pinned, TykOasApiDefinitions with
the ConfigMap holding their OAS document, SecurityPolicies with spec.id pinned, granting the
exported APIs by name. What cannot be expressed exactly is said on stderr, one line each, and
as a comment in the YAML.

Options:
  --namespace NS   the namespace of the resources (default: default)
  --out DIR        one file per resource, <kind>-<name>.yaml, in DIR (created if missing);
                   without it, one multi-document YAML on stdout
  --help           this text

Examples:
  TYK_URL=http://tyk-gateway:8080 TYK_AUTH=... npx gateway-reconciler export --namespace apis > apis.yaml
  TYK_MODE=pro TYK_URL=https://dashboard:3000 TYK_AUTH=... TYK_ORG=... npx gateway-reconciler export --out ./exported
  kubectl apply -n apis -f apis.yaml   # then run the reconciler with ADOPT_NAMESPACES=apis

See docs/export.md for the import walk-through.`;

export interface ExportArgs {
  readonly namespace: string;
  readonly out?: string;
}

const LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** The options, or a UsageError naming the bad one. */
export function parseExportArgs(args: readonly string[]): ExportArgs {
  let namespace = 'default';
  let out: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    const eq = arg.indexOf('=');
    const flag = arg.startsWith('--') && eq > 0 ? arg.slice(0, eq) : arg;
    const inline = arg.startsWith('--') && eq > 0 ? arg.slice(eq + 1) : undefined;
    const optionValue = (): string => {
      if (inline !== undefined) return inline;
      const next = args[i + 1];
      if (next === undefined || next.startsWith('--')) throw new UsageError(`${flag} needs a value`);
      i++;
      return next;
    };
    if (flag === '--namespace' || flag === '-n') namespace = optionValue();
    else if (flag === '--out' || flag === '-o') out = optionValue();
    else throw new UsageError(`unknown argument "${arg}" (options: --namespace NS, --out DIR; --help for more)`);
  }
  if (namespace.length > 63 || !LABEL.test(namespace)) throw new UsageError(`--namespace "${namespace}" is not a valid namespace name (lower-case letters, digits and '-')`);
  if (out !== undefined && out.trim() === '') throw new UsageError('--out needs a directory');
  return { namespace, ...(out !== undefined ? { out } : {}) };
}

/** The gateway the settings name, and how to close it; a ConfigError naming each bad setting. */
async function gatewayOf(env: CliIo['env']): Promise<{ gateway: Gateway & { close(): Promise<void> }; orgId?: string }> {
  const parsed = parseConnection({
    TYK_MODE: env.TYK_MODE,
    TYK_URL: env.TYK_URL,
    TYK_AUTH: env.TYK_AUTH,
    TYK_ORG: env.TYK_ORG,
    TYK_TLS_INSECURE_SKIP_VERIFY: env.TYK_TLS_INSECURE_SKIP_VERIFY,
  });
  const { settings } = parsed;
  const problems: { setting: string; message: string }[] = [...parsed.problems];
  const timeout = env.HTTP_TIMEOUT_MS?.trim();
  const timeoutMs = timeout === undefined || timeout === '' ? 30_000 : Number(timeout);
  if (!Number.isInteger(timeoutMs) || timeoutMs < 100 || timeoutMs > 120_000) problems.push({ setting: 'HTTP_TIMEOUT_MS', message: `must be milliseconds from 100 to 120000, got "${timeout}"` });
  if (problems.length > 0) throw new ConfigError(problems);
  const options = { name: 'default', url: settings.url, secret: settings.auth, insecureSkipVerify: settings.insecureSkipVerify, timeoutMs };
  const gateway = settings.mode === 'pro' ? new (await import('../gateway/tyk-dashboard.js')).TykDashboardClient(options) : new (await import('../gateway/tyk-ce.js')).TykGatewayClient(options);
  return { gateway, ...(settings.org !== undefined ? { orgId: settings.org } : {}) };
}

export const EXPORT: Command = {
  name: 'export',
  summary: 'write the resources that adopt what a gateway already serves (YAML)',
  help: HELP,
  async run(args, io) {
    const options = parseExportArgs(args);
    const { gateway, orgId } = await gatewayOf(io.env);
    const [{ readGateway }, { exportResources }, yaml] = await Promise.all([import('../export/read.js'), import('../export/translate.js'), import('../export/yaml.js')]);
    let read: Awaited<ReturnType<typeof readGateway>>;
    try {
      read = await readGateway(gateway, (line) => io.err(`export: ${line}`));
    } finally {
      await gateway.close();
    }
    for (const line of read.lacking) io.err(`export: ${line}`);
    const result = exportResources(read.contents, { namespace: options.namespace, ...(orgId !== undefined ? { orgId } : {}) });
    for (const note of result.notes) io.err(`export: ${note.subject}: ${note.what}`);
    if (options.out !== undefined) {
      await mkdir(options.out, { recursive: true });
      for (const r of result.resources) await writeFile(join(options.out, yaml.fileName(r)), yaml.documentOf(r));
      io.err(`export: wrote ${result.resources.length} files to ${options.out}`);
    } else if (result.resources.length > 0) {
      io.out(yaml.multiDocument(result.resources).replace(/\n$/, ''));
    }
    const adopted = result.resources.filter((r) => r.id !== undefined).length;
    io.err(`export: ${adopted} resources adopt what the gateway serves, in namespace ${options.namespace}`);
    if (result.needsAdoptNamespace) {
      io.err(
        `export: the import needs ADOPT_NAMESPACES=${options.namespace} (or a list holding ${options.namespace}, or *) on the reconciler: these resources adopt gateway objects under ids other than their default ones`,
      );
    }
    return EXIT.ok;
  },
};
