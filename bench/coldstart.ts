/**
 * Cold start of the `watch` Lambda bundle: how long a fresh Node process takes from its start
 * to the answer of its first webhook request, and how much code it loads.
 *
 * Bundles functions/watch.ts as `npm run bundle` does (scripts/bundle.ts, into a temporary
 * directory, so .build/ is left alone), starts the loopback API server and Tyk Gateway fakes
 * (in this process) and a private redis-server (REDIS_URL is required on Lambda), then spawns
 * `node runner.mjs` once per sample: the runner imports the bundle and calls its `handler` once
 * with an API Gateway HTTP API (payload 2.0) event carrying a WatchEvent, as the Lambda runtime
 * would, and reports `performance.now()` (milliseconds since the process started) after the
 * import and after the answer. Each child gets only the environment a Lambda would have
 * (no NODE_OPTIONS, no tsx).
 *
 * Two kinds of first request, 5 samples each (medians reported):
 *   - unchanged: the named object is already in sync (the common webhook case: our own status
 *     patch, a re-delivery, a no-op edit): load config, connect Redis, read the object, its
 *     gateway copy and its record, plan NOOP, answer. This is the cold-start cost itself.
 *   - create: a new object: the same plus a gateway write, a reload, the read-back (whose first
 *     wait is the default settle delay, 250 ms, a fixed part of the number), a status patch.
 * One unmeasured run first creates the "unchanged" object and warms the file cache.
 *
 * The fakes and Redis share the machine with the child, so numbers include their work and
 * depend on the machine's load; Lambda's own init (runtime bootstrap, unpacking) is not in them.
 *
 * Run alone: `node --import tsx bench/coldstart.ts [path/to/handler-module.mjs]` (default: a
 * fresh bundle of watch); `npm run bench` calls measureColdStart() at its end.
 * COLDSTART_CPU_PROF=<dir> runs every child under the CPU profiler (a .cpuprofile each, in <dir>;
 * the times then include the profiler's overhead).
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { bundleAll, kb } from '../scripts/bundle.js';
import { startFakeKubeApiServer } from '../test/fakes/kube-apiserver.js';
import { startFakeTykGateway } from '../test/fakes/tyk-gateway.js';
import { startOwnRedis } from '../test/harness/redis.js';
import { apiDefinition } from './fixtures.js';

/**
 * Targets fixed in advance (not taken from measurements): a webhook function
 * loads at most 400 KB of code at start, and answers its first request (object unchanged)
 * within 200 ms of process start, as a median. The other two follow from them: the import may
 * take at most 150 of those 200 ms (the first request itself takes a few tens of ms), and a
 * new object's first answer adds the 250 ms settle delay and a write, a reload, a read-back and
 * a status patch (~150 ms) to the unchanged one. Times depend on the machine's load: "node
 * ready" in printColdStart is Node's own start, ~35 ms on a quiet 2-core machine.
 */
export const COLDSTART_TARGETS = {
  /** code loaded at start (index.mjs and its static chunks), KB */
  bundleKb: 400,
  /** process start → bundle imported (what Lambda reports as most of Init Duration), ms */
  importMs: 150,
  /** process start → first answer, object unchanged, ms */
  firstResponseMs: 200,
  /** process start → first answer, object created (includes the 250 ms settle delay), ms */
  firstCreateMs: 600,
};

const RUNS = 5;
const TOKEN = 'coldstart-webhook-token-0123456789';
const NAMESPACE = 'default';

/** The child: import the handler module, answer one event, report times since process start. */
const RUNNER = `
import { performance } from 'node:perf_hooks';
const [, , moduleUrl] = process.argv;
const started = performance.now();
const { handler } = await import(moduleUrl);
const imported = performance.now();
const res = await handler(JSON.parse(process.env.COLDSTART_EVENT));
const responded = performance.now();
const line = JSON.stringify({ started, imported, responded, rssMb: Math.round(process.memoryUsage().rss / 1048576), statusCode: res.statusCode, body: res.body });
// the Redis connection would keep the process alive; a Lambda container is frozen instead
process.stdout.write('\\nCOLDSTART ' + line + '\\n', () => process.exit(0));
`;

export interface ColdStartSample {
  /** process start → runner's first line (Node's own bootstrap) */
  startedMs: number;
  /** process start → bundle imported */
  importMs: number;
  /** process start → first answer */
  responseMs: number;
  rssMb: number;
}

export interface ColdStartResult {
  module: string;
  /** code loaded at start, KB (undefined when measuring a module that was not bundled here) */
  bundleKb?: number;
  /** code loaded on first use only (the Dashboard client), KB */
  lazyKb?: number;
  runs: number;
  /** medians */
  unchanged: ColdStartSample;
  create: ColdStartSample;
  samples: { unchanged: ColdStartSample[]; create: ColdStartSample[] };
}

export interface ColdStartTarget {
  name: string;
  pass: boolean;
  value: number;
  limit: number;
}

export interface ColdStartOptions {
  /** a module exporting the watch `handler`; default: watch bundled now by scripts/bundle.ts */
  module?: string;
  runs?: number;
}

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

function medianSample(samples: ColdStartSample[]): ColdStartSample {
  return {
    startedMs: Math.round(median(samples.map((s) => s.startedMs))),
    importMs: Math.round(median(samples.map((s) => s.importMs))),
    responseMs: Math.round(median(samples.map((s) => s.responseMs))),
    rssMb: Math.round(median(samples.map((s) => s.rssMb))),
  };
}

/** API Gateway HTTP API (payload format 2.0), as it invokes the watch function. */
export function watchEvent(namespace: string, name: string, token: string): Record<string, unknown> {
  const body = JSON.stringify({ type: 'MODIFIED', object: { apiVersion: 'tyk.tyk.io/v1alpha1', kind: 'ApiDefinition', metadata: { name, namespace } } });
  return {
    version: '2.0',
    routeKey: 'POST /webhooks/watch',
    rawPath: '/webhooks/watch',
    rawQueryString: '',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': String(body.length), host: 'abc123.execute-api.eu-west-1.amazonaws.com' },
    requestContext: {
      accountId: '123456789012',
      apiId: 'abc123',
      domainName: 'abc123.execute-api.eu-west-1.amazonaws.com',
      http: { method: 'POST', path: '/webhooks/watch', protocol: 'HTTP/1.1', sourceIp: '203.0.113.10', userAgent: 'argo-events' },
      requestId: 'coldstart',
      routeKey: 'POST /webhooks/watch',
      stage: '$default',
      time: '21/Nov/2026:10:00:00 +0000',
      timeEpoch: 1795255200000,
    },
    body,
    isBase64Encoded: false,
  };
}

function runChild(runner: string, moduleUrl: string, env: Record<string, string>, event: unknown): Promise<ColdStartSample & { statusCode: number; body: string }> {
  return new Promise((resolvePromise, reject) => {
    const prof = process.env.COLDSTART_CPU_PROF;
    const profArgs = prof ? ['--cpu-prof', '--cpu-prof-dir', resolve(prof), '--cpu-prof-interval', '100'] : [];
    const child = spawn(process.execPath, [...profArgs, runner, moduleUrl], { env: { ...env, COLDSTART_EVENT: JSON.stringify(event) }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      const line = out.split('\n').find((l) => l.startsWith('COLDSTART '));
      if (code !== 0 || !line) {
        reject(new Error(`cold-start runner exited with ${code}: ${(err || out).trim().slice(-2_000)}`));
        return;
      }
      const r = JSON.parse(line.slice('COLDSTART '.length)) as { started: number; imported: number; responded: number; rssMb: number; statusCode: number; body: string };
      resolvePromise({ startedMs: r.started, importMs: r.imported, responseMs: r.responded, rssMb: r.rssMb, statusCode: r.statusCode, body: r.body });
    });
  });
}

export async function measureColdStart(options: ColdStartOptions = {}): Promise<ColdStartResult> {
  const runs = options.runs ?? RUNS;
  const dir = await mkdtemp(join(tmpdir(), 'gr-coldstart-'));
  const [kube, tyk, redis] = await Promise.all([startFakeKubeApiServer(), startFakeTykGateway(), startOwnRedis()]);
  try {
    let module = options.module === undefined ? undefined : resolve(options.module);
    let bundleKb: number | undefined;
    let lazyKb: number | undefined;
    if (module === undefined) {
      const [watch] = await bundleAll({ only: ['watch'], outDir: join(dir, 'build') });
      if (!watch) throw new Error('scripts/bundle.ts built no watch bundle');
      module = watch.entry;
      bundleKb = Math.round(watch.bytes / 1024);
      lazyKb = Math.round(watch.lazyBytes / 1024);
    }
    const runner = join(dir, 'runner.mjs');
    await writeFile(runner, RUNNER);
    // what a Lambda's environment holds (serverless.yml), nothing of this process's
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      KUBECONFIG: await kube.writeKubeconfig(dir),
      TYK_URL: tyk.url,
      TYK_AUTH: tyk.secret,
      TYK_MODE: 'ce',
      WEBHOOK_TOKEN: TOKEN,
      RESYNC_TOKEN: TOKEN,
      REDIS_URL: redis.url,
      LOG_LEVEL: 'info',
    };
    const url = pathToFileURL(module).href;
    const sample = async (name: string, i: number, expect: 'synced' | 'unchanged'): Promise<ColdStartSample> => {
      const r = await runChild(runner, url, env, watchEvent(NAMESPACE, name, TOKEN));
      const body = JSON.parse(r.body) as { report?: { objects?: { result?: string; reason?: string }[] } };
      const result = body.report?.objects?.[0];
      if (r.statusCode !== 200 || result?.result !== expect) throw new Error(`cold-start run ${i} (${name}) answered ${r.statusCode}: ${r.body.slice(0, 500)}`);
      return { startedMs: r.startedMs, importMs: r.importMs, responseMs: r.responseMs, rssMb: r.rssMb };
    };

    kube.put(apiDefinition(NAMESPACE, 'coldstart', 0));
    await sample('coldstart', 0, 'synced'); // creates it; warms the file cache
    const unchanged: ColdStartSample[] = [];
    for (let i = 1; i <= runs; i++) unchanged.push(await sample('coldstart', i, 'unchanged'));
    const create: ColdStartSample[] = [];
    for (let i = 1; i <= runs; i++) {
      kube.put(apiDefinition(NAMESPACE, `coldstart-${i}`, i));
      create.push(await sample(`coldstart-${i}`, i, 'synced'));
    }
    return {
      module,
      ...(bundleKb === undefined ? {} : { bundleKb, lazyKb }),
      runs,
      unchanged: medianSample(unchanged),
      create: medianSample(create),
      samples: { unchanged, create },
    };
  } finally {
    await Promise.allSettled([kube.close(), tyk.close(), redis.stop()]);
    await rm(dir, { recursive: true, force: true });
  }
}

export function coldStartTargets(r: ColdStartResult): ColdStartTarget[] {
  const atMost = (name: string, value: number, limit: number): ColdStartTarget => ({ name, pass: value <= limit, value, limit });
  const t = COLDSTART_TARGETS;
  return [
    ...(r.bundleKb === undefined ? [] : [atMost('cold start: watch bundle loaded at start, KB', r.bundleKb, t.bundleKb)]),
    atMost('cold start: process start → bundle imported, ms (median)', r.unchanged.importMs, t.importMs),
    atMost('cold start: process start → first answer, unchanged object, ms (median)', r.unchanged.responseMs, t.firstResponseMs),
    atMost('cold start: process start → first answer, new object, ms (median)', r.create.responseMs, t.firstCreateMs),
  ];
}

export function printColdStart(r: ColdStartResult): void {
  const size = r.bundleKb === undefined ? '' : `, ${kb(r.bundleKb * 1024)} loaded at start (+${kb((r.lazyKb ?? 0) * 1024)} on first use)`;
  console.log(`cold start of ${r.module}${size}; medians of ${r.runs} fresh processes, ms since process start:`);
  const rows: [string, ColdStartSample][] = [
    ['first request: unchanged object', r.unchanged],
    ['first request: new object', r.create],
  ];
  for (const [name, s] of rows) {
    console.log(`  ${name.padEnd(32)} node ready ${String(s.startedMs).padStart(4)}  imported ${String(s.importMs).padStart(4)}  answered ${String(s.responseMs).padStart(5)}  RSS ${s.rssMb} MB`);
  }
  console.log(`  answered, each run: unchanged ${r.samples.unchanged.map((s) => Math.round(s.responseMs)).join(', ')}; new ${r.samples.create.map((s) => Math.round(s.responseMs)).join(', ')}`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const started = performance.now();
  const result = await measureColdStart(process.argv[2] === undefined ? {} : { module: process.argv[2] });
  printColdStart(result);
  const targets = coldStartTargets(result);
  for (const t of targets) console.log(`${t.pass ? 'PASS' : 'FAIL'}  ${t.name}: ${t.value} (limit ${t.limit})`);
  console.log(`(${Math.round(performance.now() - started)} ms)`);
  process.exitCode = targets.every((t) => t.pass) ? 0 : 1;
}
