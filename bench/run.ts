/**
 * `npm run bench`: how fast the reconciler is, and whether it keeps design.md's scale promises
 * ("load": a run over 10,000 objects makes O(1) gateway calls and O(N/page) API-server calls;
 * "steady state is silent": no writes, reloads or status patches when nothing changed).
 *
 * Measures, in this process:
 *   1. plan(): calls per second over 1,000,000 calls with a realistic mix of inputs;
 *   2. hashOf() of a ~2 KB API definition body (and of the gateway's larger echo of it);
 *   3. full scheduled runs (runReconcile, trigger 'schedule', scope all) over N ApiDefinitions
 *      (BENCH_N, default 10,000) in 4 namespaces, against the loopback fakes over real HTTP with
 *      our real clients (KubeClient, TykGatewayClient, MemoryStore or RedisStore with
 *      BENCH_REDIS=1): (a) first run, creating everything; (b) steady state, nothing changed;
 *      (c) after the gateway restarted and lost everything.
 *      Per phase: wall time, objects/s, gateway calls (list, get, write, reload), API-server
 *      calls (list pages, gets, status and finalizer patches), peak RSS and heap.
 *   4. targets, printed as PASS/FAIL; the process exits 1 if any fails.
 *   5. cold start of the watch Lambda bundle (bench/coldstart.ts): bundle size, and time from
 *      process start to the first answer in fresh processes (BENCH_COLDSTART=0 skips it).
 *
 * The fakes run in this process and on the same two cores, so wall time and memory include
 * serving the requests (the gateway fake's echo of 10,000 APIs and its reloads are much of it).
 * Ends with one `BENCH_JSON {...}` line for machines.
 */
import { cpus, totalmem } from 'node:os';
import { performance } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { KubeConfig } from '@kubernetes/client-node';
import { systemClock } from '../lib/clock.js';
import { GatewayTargets } from '../lib/gateway/targets.js';
import { TykGatewayClient } from '../lib/gateway/tyk-ce.js';
import { KubeClient } from '../lib/kube/client.js';
import { silentLogger } from '../lib/log.js';
import { apiDefinitionPayload } from '../lib/reconcile/api-payload.js';
import { hashOf } from '../lib/reconcile/hash.js';
import { defaultId } from '../lib/reconcile/ids.js';
import { plan } from '../lib/reconcile/plan.js';
import { DEFAULT_RUN_SETTINGS, type RunDeps, type RunReport, runReconcile } from '../lib/reconcile/run.js';
import { MemoryStore } from '../lib/store/memory.js';
import { createRedisStore } from '../lib/store/redis.js';
import type { Store } from '../lib/store/types.js';
import { startFakeKubeApiServer } from '../test/fakes/kube-apiserver.js';
import { startFakeTykGateway } from '../test/fakes/tyk-gateway.js';
import { startOwnRedis, type TestRedis } from '../test/harness/redis.js';
import { type ColdStartResult, coldStartTargets, measureColdStart, printColdStart } from './coldstart.js';
import { apiDefinition, planInputs } from './fixtures.js';

const N = Number(process.env.BENCH_N ?? 10_000);
const USE_REDIS = process.env.BENCH_REDIS === '1';
const NAMESPACES = ['team-a', 'team-b', 'team-c', 'team-d'];
const PAGE_SIZE = 500; // KubeClient's default
/** The settle settings the integration tests use (test/harness/world.ts). */
const SETTLE = { budgetMs: 3_000, initialDelayMs: 15, maxDelayMs: 200, reloadEveryMs: 150 };

/**
 * Targets for the steady-state run, set from measurements on this 2-core machine (Node 20,
 * N=10,000, fakes in-process, memory or Redis store): 4.2-6.7 s wall time (typically ~5.5 s)
 * and 1.06-1.17 GB peak RSS over several runs. About 2x headroom, scaled with N (RSS: a fixed
 * base plus a per-object part; at N=1,000 the peak was ~330 MB).
 */
const STEADY_MS_PER_10K = 12_000;
const RSS_BASE_MB = 300;
const RSS_MB_PER_10K = 1_700;

if (!Number.isInteger(N) || N < 1) throw new Error(`BENCH_N must be a positive integer, not ${process.env.BENCH_N}`);

// ───────────────────────────── measuring helpers ─────────────────────────────

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Samples RSS and heap every 10 ms (and at start and stop) while a phase runs. */
function memorySampler(): () => { rssMb: number; heapMb: number } {
  let rss = 0;
  let heap = 0;
  const sample = (): void => {
    const m = process.memoryUsage();
    rss = Math.max(rss, m.rss);
    heap = Math.max(heap, m.heapUsed);
  };
  sample();
  const timer = setInterval(sample, 10);
  return () => {
    clearInterval(timer);
    sample();
    return { rssMb: mb(rss), heapMb: mb(heap) };
  };
}

function mb(bytes: number): number {
  return Math.round(bytes / 1024 / 1024);
}

function rate(count: number, ms: number): number {
  return Math.round((count / ms) * 1000);
}

// ───────────────────────────── 1 and 2: micro benchmarks ─────────────────────────────

function benchPlan(): number {
  const inputs = planInputs();
  const calls = 1_000_000;
  let noops = 0;
  for (let i = 0; i < 50_000; i++) plan(...(inputs[i % inputs.length] as (typeof inputs)[number])); // warm up
  const start = performance.now();
  for (let i = 0; i < calls; i++) {
    const [d, o, r] = inputs[i % inputs.length] as (typeof inputs)[number];
    if (plan(d, o, r).action === 'NOOP') noops++;
  }
  const ms = performance.now() - start;
  if (noops === 0) throw new Error('plan mix produced no NOOP'); // keeps the loop observable
  return rate(calls, ms);
}

function benchHash(value: unknown, minMs = 1_000): number {
  for (let i = 0; i < 500; i++) hashOf(value); // warm up
  let count = 0;
  const start = performance.now();
  while (performance.now() - start < minMs) {
    for (let i = 0; i < 500; i++) hashOf(value);
    count += 500;
  }
  return rate(count, performance.now() - start);
}

// ───────────────────────────── 3: full runs ─────────────────────────────

interface Phase {
  name: string;
  ms: number;
  objectsPerSec: number;
  gateway: { list: number; get: number; write: number; reload: number; reloadsInReport: number; reloadsDropped: number };
  kube: { listPages: number; gets: number; statusPatches: number; finalizerPatches: number };
  rssMb: number;
  /** the process's peak RSS so far (getrusage): catches peaks the sampler misses during long synchronous work */
  maxRssSoFarMb: number;
  heapMb: number;
  baselineRssMb: number;
  counts: RunReport['counts'];
  errors: number;
}

async function main(): Promise<number> {
  const machine = { cpus: cpus().length, cpuModel: cpus()[0]?.model ?? '?', memGb: Math.round(totalmem() / 2 ** 30), node: process.version };
  console.log(`gateway-reconciler bench: N=${N}, store=${USE_REDIS ? 'redis' : 'memory'}`);
  console.log(`machine: ${machine.cpus} CPUs (${machine.cpuModel}), ${machine.memGb} GB, node ${machine.node}\n`);

  const sample = apiDefinition('team-a', 'api-00001', 1);
  const body = apiDefinitionPayload(sample, defaultId('team-a', 'api-00001'), undefined);
  if (!body.ok) throw new Error(`sample spec is invalid: ${body.reason}`);
  const bodyBytes = JSON.stringify(body.body).length;
  const planPerSec = benchPlan();
  const hashPerSec = benchHash(body.body);
  console.log(`plan():          ${planPerSec.toLocaleString('en')} calls/s (1,000,000 calls, 85% unchanged)`);
  console.log(`hashOf(body):    ${hashPerSec.toLocaleString('en')} hashes/s (${bodyBytes} B API definition body)`);

  const kube = await startFakeKubeApiServer();
  const tyk = await startFakeTykGateway();
  const redis: TestRedis | undefined = USE_REDIS ? await startOwnRedis() : undefined;
  const kc = new KubeConfig();
  kc.loadFromString(kube.kubeconfigYaml());
  const kubeClient = new KubeClient(kc);
  const gateway = new TykGatewayClient({ name: 'default', url: tyk.url, secret: tyk.secret });
  const store: Store = redis ? createRedisStore(redis.url, { prefix: 'bench:' }) : new MemoryStore();
  const targets = new GatewayTargets({ name: 'default', gateway, mode: 'ce' }, kubeClient, () => {
    throw new Error('the bench uses no OperatorContext');
  });
  const deps: RunDeps = {
    kube: kubeClient,
    targets,
    store,
    clock: systemClock,
    log: silentLogger,
    settings: { ...DEFAULT_RUN_SETTINGS, settle: SETTLE },
  };

  let runs: { targets: Target[]; json: Record<string, unknown> };
  try {
    const seedStart = performance.now();
    for (let i = 0; i < N; i++) {
      const ns = NAMESPACES[i % NAMESPACES.length] as string;
      kube.put(apiDefinition(ns, `api-${String(i).padStart(5, '0')}`, i));
    }
    console.log(`seeded:          ${N} ApiDefinitions in ${NAMESPACES.length} namespaces in ${Math.round(performance.now() - seedStart)} ms\n`);

    const phase = async (name: string): Promise<Phase> => {
      kube.resetCalls();
      tyk.resetCalls();
      const reloadsBefore = tyk.reloads;
      gc();
      const baselineRssMb = mb(process.memoryUsage().rss);
      const stop = memorySampler();
      const start = performance.now();
      const report = await runReconcile(deps, { trigger: 'schedule', scope: { all: true } });
      const ms = performance.now() - start;
      const mem = stop();
      const reloadsAfter = tyk.reloads;
      const objectPath = /\/apidefinitions\/[^/]+$/;
      return {
        name,
        ms: Math.round(ms),
        objectsPerSec: rate(N, ms),
        gateway: {
          list: tyk.count('GET', '/tyk/apis'),
          get: tyk.count('GET', /^\/tyk\/apis\/[^/]+$/),
          write: tyk.writes(),
          reload: tyk.count('GET', /^\/tyk\/reload/),
          reloadsInReport: report.gateway.reloads,
          reloadsDropped: reloadsAfter.dropped - reloadsBefore.dropped,
        },
        kube: {
          listPages: kube.count('GET', /\/apidefinitions$/),
          gets: kube.count('GET', objectPath),
          statusPatches: kube.count('PATCH', /\/status$/),
          finalizerPatches: kube.count('PATCH', objectPath),
        },
        rssMb: mem.rssMb,
        maxRssSoFarMb: mb(process.resourceUsage().maxRSS * 1024),
        heapMb: mem.heapMb,
        baselineRssMb,
        counts: report.counts,
        errors: report.errors.length,
      };
    };

    const first = await phase('a: first run');
    const steady = await phase('b: steady state');
    tyk.restart();
    const restarted = await phase('c: after restart');
    const phases = [first, steady, restarted];

    // A fresh client: the run's pooled connections may have idled out on the server (see report).
    const probe = new TykGatewayClient({ name: 'probe', url: tyk.url, secret: tyk.secret });
    const echo = await probe.get('api', defaultId('team-a', 'api-00000')).finally(() => probe.close());
    const echoBytes = JSON.stringify(echo).length;
    const echoHashPerSec = benchHash(echo, 500);
    console.log(`hashOf(echo):    ${echoHashPerSec.toLocaleString('en')} hashes/s (${echoBytes} B gateway echo; every observed object is hashed at least once per run)\n`);

    printTable(phases);
    runs = { targets: checkTargets(first, steady, restarted), json: { n: N, store: store.kind, machine, micro: { planPerSec, hashPerSec, bodyBytes, echoHashPerSec, echoBytes }, phases } };
  } finally {
    await Promise.allSettled([kubeClient.close(), gateway.close(), store.close()]);
    await Promise.allSettled([kube.close(), tyk.close(), redis?.stop()]);
  }

  // 5. cold start of the watch Lambda bundle, once the fakes above are gone (BENCH_COLDSTART=0 skips it)
  let coldStart: ColdStartResult | undefined;
  if (process.env.BENCH_COLDSTART !== '0') {
    console.log('');
    coldStart = await measureColdStart();
    printColdStart(coldStart);
  }
  const checks: Target[] = [...runs.targets, ...(coldStart ? coldStartTargets(coldStart) : [])];
  console.log('');
  for (const t of checks) console.log(`${t.pass ? 'PASS' : 'FAIL'}  ${t.name}: ${t.value} (limit ${t.limit})`);
  const failed = checks.filter((t) => !t.pass).length;
  console.log(`\n${failed === 0 ? 'all targets met' : `${failed} target(s) failed`}`);
  console.log(`BENCH_JSON ${JSON.stringify({ ...runs.json, ...(coldStart ? { coldStart } : {}), targets: checks })}`);
  return failed === 0 ? 0 : 1;
}

function printTable(phases: Phase[]): void {
  const rows: [string, (p: Phase) => string | number][] = [
    ['wall time (ms)', (p) => p.ms],
    ['objects/s', (p) => p.objectsPerSec],
    [
      'results',
      (p) =>
        Object.entries(p.counts)
          .map(([k, v]) => `${k} ${v}`)
          .join(', ') + (p.errors ? `, ${p.errors} run errors` : ''),
    ],
    ['gateway list', (p) => p.gateway.list],
    ['gateway get', (p) => p.gateway.get],
    ['gateway write', (p) => p.gateway.write],
    ['gateway reload', (p) => `${p.gateway.reload} (report ${p.gateway.reloadsInReport}, dropped ${p.gateway.reloadsDropped})`],
    ['api-server list pages', (p) => p.kube.listPages],
    ['api-server get', (p) => p.kube.gets],
    ['api-server status patch', (p) => p.kube.statusPatches],
    ['api-server finalizer patch', (p) => p.kube.finalizerPatches],
    ['RSS before / peak (MB)', (p) => `${p.baselineRssMb} / ${p.rssMb}`],
    ['process max RSS so far (MB)', (p) => p.maxRssSoFarMb],
    ['heap used peak (MB)', (p) => p.heapMb],
  ];
  const cells = rows.map(([label, f]) => [label, ...phases.map((p) => String(f(p)))]);
  const header = ['', ...phases.map((p) => p.name)];
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]): string => r.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('  ');
  console.log(line(header));
  for (const r of cells) console.log(line(r));
}

interface Target {
  name: string;
  pass: boolean;
  value: number | string;
  limit: number | string;
}

function checkTargets(first: Phase, steady: Phase, restarted: Phase): Target[] {
  const atMost = (name: string, value: number, limit: number): Target => ({ name, pass: value <= limit, value, limit });
  const exactly = (name: string, value: number, want: number): Target => ({ name, pass: value === want, value, limit: `= ${want}` });
  const steadyMs = Math.max(1_000, Math.round((STEADY_MS_PER_10K * N) / 10_000));
  const rssMb = Math.round(RSS_BASE_MB + (RSS_MB_PER_10K * N) / 10_000);
  return [
    exactly('a: every object synced', first.counts.synced ?? 0, N),
    exactly('a: exactly one reload', first.gateway.reload, 1),
    exactly('b: every object unchanged', steady.counts.unchanged ?? 0, N),
    exactly('b: gateway writes', steady.gateway.write, 0),
    exactly('b: gateway reloads', steady.gateway.reload, 0),
    exactly('b: status patches', steady.kube.statusPatches, 0),
    exactly('b: finalizer patches', steady.kube.finalizerPatches, 0),
    atMost('b: gateway calls, O(1)', steady.gateway.list + steady.gateway.get + steady.gateway.write + steady.gateway.reload, 2),
    atMost('b: api-server list requests, O(N/page)', steady.kube.listPages, Math.ceil(N / PAGE_SIZE) + 2),
    atMost('b: api-server gets', steady.kube.gets, 0),
    atMost(`b: wall time ms (${STEADY_MS_PER_10K} per 10k objects)`, steady.ms, steadyMs),
    atMost(`b: peak RSS MB, process max so far (${RSS_BASE_MB} + ${RSS_MB_PER_10K} per 10k objects)`, steady.maxRssSoFarMb, rssMb),
    exactly('c: every object synced', restarted.counts.synced ?? 0, N),
    exactly('c: gateway writes', restarted.gateway.write, N),
    exactly('c: exactly one reload', restarted.gateway.reload, 1),
    exactly('c: status patches', restarted.kube.statusPatches, 0),
  ];
}

process.exitCode = await main();
