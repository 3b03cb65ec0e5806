/**
 * `gateway-reconciler plan` against the loopback API server and Tyk Gateway fakes and a real
 * Redis, with the service's settings: main() in process for the table, --json, the exit
 * statuses (0 nothing would change, 2 something would, 1 the plan failed, 2 a bad argument),
 * and --from-dir (files planned over the live cluster, nothing written anywhere); the bin
 * spawned once (its help, a bad argument).
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { main } from '../../lib/cli/main.js';
import type { RunReport } from '../../lib/engine/types.js';
import { loadConfig } from '../../lib/platform/config.js';
import { silentLogger } from '../../lib/platform/log.js';
import { createService } from '../../lib/service.js';
import { apiDefinition, defaultIdOf } from '../fixtures/builders.js';
import { startOwnRedis } from '../harness/redis.js';
import { type World, worldFor } from '../harness/world.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

interface Ran {
  code: number;
  out: string[];
  err: string[];
}

async function cli(env: Record<string, string>, ...argv: string[]): Promise<Ran> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(argv, { out: (l) => out.push(l), err: (l) => err.push(l), env });
  return { code, out, err };
}

/** A world whose cluster has `names` synced by the service, and the settings the service and the command line share. */
async function synced(t: Parameters<typeof worldFor>[0], names: string[]): Promise<{ w: World; env: Record<string, string> }> {
  const w = await worldFor(t);
  const redis = await startOwnRedis();
  t.teardown(() => redis.stop());
  const env = { KUBECONFIG: w.kubeconfigPath, TYK_URL: w.tyk.url, TYK_AUTH: w.tyk.secret, REDIS_URL: redis.url };
  for (const n of names) await w.create(apiDefinition(n).build());
  const svc = createService(loadConfig({ ...env, ALLOW_UNAUTHENTICATED: 'true' }), env, {
    log: silentLogger,
    settings: { settle: { budgetMs: 3_000, initialDelayMs: 15, maxDelayMs: 200, reloadEveryMs: 150 } },
  });
  try {
    const report = await svc.run({ trigger: 'resync', scope: { all: true } });
    for (const n of names) if (!report.objects.some((o) => o.name === n && o.result === 'synced')) throw new Error(`${n} did not sync: ${JSON.stringify(report.objects)}`);
  } finally {
    await svc.close();
  }
  w.resetCounts();
  return { w, env };
}

function kubeWrites(w: World): number {
  return ['POST', 'PUT', 'PATCH', 'DELETE'].reduce((n, m) => n + w.kube.count(m), 0);
}

t.test('a steady state: nothing would change, exit 0', async (t) => {
  const { w, env } = await synced(t, ['a']);
  const ran = await cli(env, 'plan');
  t.equal(ran.code, 0, ran.err.join('\n'));
  t.same(ran.out, ['Nothing would change (0 gateway writes, 0 reloads).']);
  t.same(ran.err, []);
  t.equal(w.tyk.writes(), 0);
  t.equal(kubeWrites(w), 0);
});

t.test('a changed field: the table lists it, before and after; exit 2; --json gives the report', async (t) => {
  const { w, env } = await synced(t, ['a', 'b']);
  await w.updateSpec('a', (spec) => ({ ...spec, proxy: { ...(spec.proxy as object), target_url: 'http://example.com' } }));
  w.resetCounts();
  const ran = await cli(env, 'plan');
  t.equal(ran.code, 2, ran.err.join('\n'));
  t.match(ran.out[0], /^OBJECT\s+ACTION\s+FIELD\s+BEFORE → AFTER$/);
  t.match(ran.out.slice(1, -1), [/^ApiDefinition default\/a\s+UPDATE\s+proxy\.target_url\s+"http:\/\/httpbin\.org" → "http:\/\/example\.com"$/]);
  t.equal(ran.out.length, 3, 'one row: b has nothing to change');
  t.equal(ran.out.at(-1), '1 object would change, 1 field (1 gateway write, 1 reload).');

  const json = await cli(env, 'plan', '--json');
  t.equal(json.code, 2);
  const report = JSON.parse(json.out.join('\n')) as RunReport;
  t.equal(report.dryRun, true);
  t.same(report.gateway, { writes: 1, reloads: 1 });
  t.same(report.objects.find((o) => o.name === 'a')?.changes, [{ path: 'proxy.target_url', before: 'http://httpbin.org', after: 'http://example.com' }]);
  t.match(
    report.objects.find((o) => o.name === 'b'),
    { action: 'NOOP', reason: 'unchanged' },
  );

  const one = await cli(env, 'plan', '--kind', 'ApiDefinition', '--name', 'b', '--json');
  t.equal(one.code, 0, 'b alone: nothing would change');
  t.same(
    (JSON.parse(one.out.join('\n')) as RunReport).objects.map((o) => o.name),
    ['b'],
  );
  t.equal(w.tyk.writes(), 0, 'nothing written to the gateway');
  t.match(w.gatewayApi(defaultIdOf('a')), { proxy: { target_url: 'http://httpbin.org' } });
  t.equal(kubeWrites(w), 0, 'nor to the API server');
});

t.test('--from-dir: the files as if applied, over the live cluster; nothing written anywhere', async (t) => {
  const { w, env } = await synced(t, ['a', 'b']);
  const dir = await mkdtemp(path.join(tmpdir(), 'gr-plan-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const a = apiDefinition('a').build();
  (a.spec as { proxy: Record<string, unknown> }).proxy.listen_path = '/moved';
  const yaml = (o: unknown) => JSON.stringify(o); // JSON is YAML
  await writeFile(path.join(dir, 'apis.yaml'), `---\n# the APIs\n${yaml(a)}\n---\n${yaml(apiDefinition('c').build())}\n---\n`);
  await writeFile(path.join(dir, 'notes.txt'), 'not a manifest');
  const progress = await cli(env, 'plan', '--from-dir', dir, '--progress');
  t.equal(progress.code, 2, progress.err.join('\n'));
  t.same(progress.err, [`reading 2 objects from ${dir}…`, 'planning: reading the cluster and the gateways…']);
  const rows = progress.out.slice(1, -1);
  t.match(rows, [/^ApiDefinition default\/a\s+UPDATE\s+proxy\.listen_path\s+"\/a" → "\/moved"$/]);
  t.ok(
    rows.slice(1).every((r) => /^ApiDefinition default\/c\s+CREATE\s+\S+\s+\(none\) → /.test(r)),
    'c is new: its fields, nothing before',
  );
  t.ok(
    rows.some((r) => /proxy\.listen_path\s+\(none\) → "\/c"$/.test(r)),
    'c’s listen path',
  );
  t.equal(progress.out.at(-1), `2 objects would change, ${rows.length} fields (2 gateway writes, 1 reload).`);
  t.equal(kubeWrites(w), 0, 'no write reached the API server');
  t.equal(w.tyk.writes(), 0, 'nor the gateway');
  t.equal(await w.get('c'), undefined, 'c is not in the cluster');
  t.match(await w.get('a'), { spec: { proxy: { listen_path: '/a' } } }, 'a is as it was');

  const quiet = await cli(env, 'plan', '--from-dir', dir);
  t.equal(quiet.code, 2);
  t.same(quiet.err, [], 'no progress lines when stderr is not a terminal');

  await writeFile(path.join(dir, 'z-other.yml'), yaml({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' } }));
  const unknown = await cli(env, 'plan', '--from-dir', dir);
  t.equal(unknown.code, 2);
  t.same(unknown.out, []);
  t.equal(unknown.err.length, 1);
  t.match(unknown.err[0], /^gateway-reconciler plan: .*z-other\.yml: unknown kind Widget \(example\.com\/v1\)/);

  const missing = await cli(env, 'plan', '--from-dir', path.join(dir, 'nowhere'));
  t.equal(missing.code, 2);
  t.match(missing.err, [/--from-dir .*nowhere: no such directory$/]);
});

t.test('bad arguments: one line, exit 2, nothing read', async (t) => {
  const { w, env } = await synced(t, []);
  for (const argv of [['--bogus'], ['--kind', 'ApiDefinition'], ['--kind', 'Nope', '--name', 'x'], ['extra'], ['--namespace']]) {
    const ran = await cli(env, 'plan', ...argv);
    t.equal(ran.code, 2, argv.join(' '));
    t.same(ran.out, [], argv.join(' '));
    t.equal(ran.err.length, 1, argv.join(' '));
    t.match(ran.err[0], /^gateway-reconciler plan: \S/, argv.join(' '));
  }
  t.equal(w.kube.count('GET'), 0, 'nothing read');
});

t.test('a gateway that cannot be read: the plan is incomplete, exit 1, no secret shown', async (t) => {
  const { env } = await synced(t, ['a']);
  const ran = await cli({ ...env, TYK_URL: 'http://127.0.0.1:1', HTTP_TIMEOUT_MS: '2000' }, 'plan');
  t.equal(ran.code, 1, ran.out.join('\n'));
  t.match(ran.err.join('\n'), /incomplete/);
  t.match(ran.out.at(-1), /^Incomplete: \d+ problems? \(on stderr\)\. Of what could be read: nothing would change/, "the table's last line says the plan is incomplete");
  t.notMatch([...ran.out, ...ran.err].join('\n'), env.TYK_AUTH as string);
});

function spawned(...argv: string[]): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve, reject) => {
    // the child's coverage off (as test/harness/child.ts does): tsx's source maps differ from the test runner's, and merged they would undo its coverage
    const child = spawn(process.execPath, [path.join(ROOT, 'lib/cli/bin.mjs'), ...argv], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', _TAPJS_PROCESSINFO_COV_EXCLUDE_: '/./' } });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => {
      out += String(d);
    });
    child.stderr.on('data', (d) => {
      err += String(d);
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out, err }));
  });
}

t.test('the bin runs from the checkout: its help, and a bad argument', async (t) => {
  const help = await spawned('plan', '--help');
  t.equal(help.code, 0, help.err);
  t.match(help.out, /^Usage: gateway-reconciler plan \[options\]/);
  t.match(help.out, /--from-dir DIR/);
  const bad = await spawned('plan', '--bogus');
  t.equal(bad.code, 2);
  t.equal(bad.out, '');
  t.match(bad.err, /^gateway-reconciler plan: Unknown option '--bogus'[^\n]*\n$/);
});
