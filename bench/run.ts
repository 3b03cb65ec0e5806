/**
 * `npm run bench`: the reconciler measured against the floor of its job.
 *
 * PROCESSES. This process is the measured one: it runs the reconciler as it runs in production
 * (createService with our real clients: KubeClient, TykGatewayClient, the store; runReconcile
 * through Service.run; the fastify app of lib/server.ts listening on 127.0.0.1 for the storm's
 * webhooks), and nothing else during a phase. The Kubernetes API-server fake and the Tyk
 * Gateway fake (test/fakes/*) run in a child process (bench/fakes-child.ts), driven over IPC
 * between phases; the storm's senders run in another (bench/storm-child.ts); Redis, with
 * BENCH_REDIS=1, is its own redis-server. All share the machine's cores, so wall times include
 * waiting for them, as a reconciler waits for a real API server and gateway.
 *
 * SETTINGS. The service's clients send over Node's own http, the default (BENCH_TRANSPORT=undici:
 * undici's pooled client, as with HTTP_CLIENT=undici). The service's production defaults (DEFAULT_RUN_SETTINGS; settle: read back 250 ms
 * after the reload), except WEBHOOK_RATE_LIMIT=0: the storm comes from one address per sender,
 * far above the default 600 requests/minute; HTTP_TIMEOUT_MS, when set in the bench's environment,
 * is passed through (N = 50,000 needs ~60 s for the gateway's list). The gateway fake applies a reload 5 ms after it is
 * asked (a real gateway takes about a second), so settle times here are optimistic.
 *
 * THE FLOOR (bench/floor.ts), measured in this process in the same run: the least any
 * reconciler must do for a no-op full run. Every ApiDefinition page (all namespaces, limit 500,
 * following `continue`, sequential as it must be), fetched and JSON.parse'd, then one store
 * round trip for the N records (Redis: one MGET and a JSON.parse of each; memory store:
 * getRecords of the N keys); concurrently with that chain, the gateway's full list (GET
 * /tyk/apis) fetched and parsed. Plain undici requests with keep-alive, the URLs and
 * credentials our clients use; no planning, hashing or writing. floorMs is the median of 3
 * floor runs, after one unmeasured warm-up.
 *
 * THE WRITE FLOORS (bench/write-floor.ts), measured after the phases (so that their client is
 * in no phase's memory) on the same objects, each on the fakes put back as seeding left them
 * (the gateway restarted empty, every ApiDefinition seeded again without finalizers or
 * status): the least any reconciler must send to create all N, with undici's pooled client and
 * keep-alive, at concurrencies 8 (the reconciler's), 16, 32 and 64. For the first run: a
 * finalizer patch, a gateway create, one reload, a status patch and an Event per object; for the
 * restart: the gateway creates, one reload, and the list that shows them; for the drift: the
 * drifted objects' updates and one reload (after the restart's floor, when the gateway holds
 * every object). Their objects/s bound what a reconciler can reach through these fakes on this
 * machine; each phase reports its ratio to the fastest of them. BENCH_WRITE_FLOOR=0 skips them.
 *
 * PHASES, over N ApiDefinitions (BENCH_N, default 10,000) in 4 namespaces, ~2 KB specs. Each
 * full run is one run over everything (Service.run, trigger schedule, scope all: what a tick is
 * up to SHARD_SIZE objects, or with SHARD_SIZE raised above N); with BENCH_TICK=1, each is a
 * scheduled tick as the self-hosted server and a schedule function without a queue run it
 * (lib/triggers/schedule.ts: above SHARD_SIZE, the coordinator's count and snapshot, then the
 * shards one after the other in this process):
 *   first    a full run creating all N on the gateway;
 *   steady   a full run where nothing changed: floor, steady, floor, steady, floor, steady,
 *            interleaved back to back; wall, floor and CPU times are medians, counts and memory
 *            the worst of the three;
 *   drift    1% of the APIs edited on the gateway side (proxy.target_url, a field we manage;
 *            the file and the loaded copy, as a POST and a reload would), healed by a full run;
 *   restart  the gateway restarted and lost everything; healed by a full run;
 *   replicas a steady state over three replicas of the gateway (the gateway fake and two more,
 *            each holding its files and loading them itself, so each makes up its own ids;
 *            TYK_GATEWAY_SERVICE naming their EndpointSlices): floor, run, three times after a
 *            warm-up, against a floor that lists every replica concurrently;
 *   storm    webhooks, see below;
 *   coldstart  bench/coldstart.ts's measureColdStart() (the watch Lambda bundle in fresh
 *            processes), and the size loaded at start of each webhook function's bundle
 *            (audit, watch, cloudevents); BENCH_COLDSTART=0 skips it.
 * Each phase reports: wall time, its ratio to the floor, objects/s; CPU time of this process
 * and of the fakes process (when the fakes' CPU nears the wall time, the phase is bound by the
 * fakes, not by us); the fakes' call counts (gateway list/get/write/reload; API-server
 * ApiDefinition list pages, other kinds' lists, gets, status patches, finalizer patches, Event
 * writes); store round trips (a counting wrapper around the Store interface, in bench code; on
 * Redis also INFO commandstats); runs (the service's metrics, through a counting sink); memory.
 *
 * MEMORY (bench/measure.ts). The measured process runs with --max-semi-space-size=8 (the npm
 * script): the young generation V8 gives a process whose memory limit is 2 GB or less (Node 20+
 * scales it with the limit), as the 1 GB schedule function has; on a machine with 24 GB, V8
 * would pick 64 MB semi-spaces, ~150 MB of RSS no such function has. The plan() and hashOf()
 * micro benchmarks run after the phases, so their garbage is not in any phase's memory.
 * Before each phase: a full gc, a 500 ms pause, another (a real
 * process idles between runs), then the kernel's peak-RSS mark of this process (VmHWM) is reset
 * through /proc/self/clear_refs. The phase's peak RSS is VmHWM at its end: exact, no sampling,
 * this phase's. It includes what the process kept from earlier phases (shown as RSS before,
 * with the heap used, committed and external memory then): RSS seldom falls back after a large
 * phase (glibc keeps freed native memory), so a long-lived process lives at its largest phase's
 * peak. The RSS target is checked against this absolute peak, as a container's memory limit
 * sees it; "peak above RSS before" is the phase's own growth. getrusage maxRSS cannot be reset
 * (monotonic per process) and is shown for reference only; the heap peak is sampled every
 * 20 ms on this thread (a lower bound).

 * THE STORM (bench/storm-plan.ts, bench/storm-child.ts): 10,000 events about 1,000 objects over
 * 10 s, delivered as the real senders deliver them, through real HTTP to the listening app (not
 * app.inject: the answer's latency must include the HTTP server and the queueing behind other
 * requests and runs in this process, as the API server and a forwarder see it). 5,000 writes by
 * cluster users (at seeded random times, stored in the API-server fake through a back door that
 * skips its costly per-request schema validation, see bench/fakes-child.ts; every one of the
 * 1,000 objects written at least once, ~5 each): 100 objects get exactly one spec
 * edit (global_rate_limit.rate), every other write changes only an annotation (new
 * resourceVersion, same generation: must cost no gateway write). Each write, once answered,
 * becomes two events: an audit event, batched as kube-apiserver's audit webhook batches them
 * (a delivery every 100 ms, its throttle's 10 per second, at most 400 events each, sent without
 * waiting for earlier ones), and a forwarded watch event (MODIFIED, the object as written), one
 * per request, at once, over a pool of at most 64 connections. Latency: from handing the request
 * to undici to the end of the answer's body, in the senders' process (its event-loop delay is
 * reported; so is the time each webhook spent in the reconciler's HTTP server, and the
 * connections opened during the storm). After the last answer, the
 * bench waits until every changed object shows its new spec on the gateway and the fakes have
 * been quiet for 1 s; writes counted until then. Before it, unmeasured, a warm-up plays 300
 * metadata-only writes of the storm's objects in 0.2 s through the same senders
 * (storm-plan.ts, warmupPlan), then waits for the fakes to be quiet: a server taking webhooks
 * has its senders' connections open and its webhook path compiled (the cold path is the cold
 * start's, measured on its own). Not modelled: the audit and watch events of
 * our own status patches (the audit ones are ignored by the parser; watch forwarders would add
 * ~100 more runs), re-deliveries, Lambda's per-request concurrency (the storm measures the
 * self-hosted server).
 *
 * TARGETS (at N = 10,000 on a 2-core machine; ratios to floors measured in the same run, not
 * absolute speeds): steady ≤ 1.3 × floor, 1 gateway list, ⌈N/500⌉ ApiDefinition pages, ≤ 3 store
 * round trips, 0 gateway writes, status and finalizer patches; first run ≤ 1.3 × and restart
 * ≤ 1.2 × their fastest write floor (of concurrencies 8 to 64), each with 1 reload and at most 1
 * store round trip per object written (`storeRoundTripsPerObject`); drift ≤ 1.3 × (the floor +
 * its writes' fastest floor), one write per drifted object, 1 reload; peak RSS ≤ 512 MB in every
 * phase (512 MB up to N = 10,000, then linear to 1,536 MB at N = 50,000), and above N = 10,000
 * the highest phase's peak at most 1.2 × that of the last N = 10,000 run on the same store (each
 * run keeps its BENCH_JSON figures in ~/.cache/gateway-reconciler/bench/last-<N>-<store>.json;
 * BENCH_BASELINE names another file); storm: at most one write per changed object, p99 webhook
 * answer ≤ 50 ms; Lambda: COLDSTART_TARGETS (bench/coldstart.ts) per webhook function. Targets
 * against a floor that was not measured (BENCH_WRITE_FLOOR=0) are not listed. CHECKS (also failing the run) make sure a phase did its job (all synced,
 * healed, every changed object on the gateway, every webhook answered 200 or 202), so that a target
 * cannot pass by doing nothing. PASS/FAIL per line; exit 1 on any FAIL.
 *
 * Output: a table, the targets, and one line `BENCH_JSON {...}`: n, store, machine, settings,
 * micro, floor, first, steady, drift, restart (Phase: wallMs, floorMs, ratioToFloor, peakRssMb,
 * objectsPerSec, cpuMs, fakesCpuMs, memory, gateway, kube, store, runs, results, ...), storm
 * (also writes, changed, p50Ms, p99Ms, convergedMs, sender; null with BENCH_STORM=0),
 * coldstart (loadedKb, firstAnswerMs, importMs, firstCreateMs, functions; nulls with
 * BENCH_COLDSTART=0), profile, skipped, targets and checks ([{name, pass, value, limit}]).
 * Also: plan() and hashOf() micro benchmarks (after the phases). BENCH_PROFILE=<file.cpuprofile> adds one more,
 * unmeasured, steady run under the CPU profiler and prints its top functions and files;
 * BENCH_PROFILE_FIRST=<file.cpuprofile> profiles the first run, BENCH_PROFILE_RESTART the restart, BENCH_PROFILE_STORM the storm
 * (their numbers then include the profiler's overhead). BENCH_PROFILE_FAKES=<file.cpuprofile>
 * profiles the fakes process during the first run (what bounds its throughput), or during the storm with
 * BENCH_PROFILE_FAKES_PHASE=storm. BENCH_STORM=0 skips the storm and BENCH_REPLICAS=0 the replicas phase (their targets are then not listed).
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { cpus, homedir, loadavg, tmpdir, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { FastifyInstance } from 'fastify';
import { hashOf } from '../lib/engine/hash.js';
import { defaultId } from '../lib/engine/ids.js';
import { plan } from '../lib/engine/plan.js';
import { DEFAULT_RUN_SETTINGS, type RunReport } from '../lib/engine/run.js';
import { apiDefinitionPayload } from '../lib/kinds/api-definition/payload.js';
import { loadConfig } from '../lib/platform/config.js';
import type { TransportFactory } from '../lib/platform/http.js';
import { nodeTransports } from '../lib/platform/http-node.js';
import { undiciTransports } from '../lib/platform/http-undici.js';
import { silentLogger } from '../lib/platform/log.js';
import { buildApp } from '../lib/server.js';
import { createService, runConnections, type Service } from '../lib/service.js';
import { MemoryStore } from '../lib/store/memory.js';
import { createRedisStore } from '../lib/store/redis.js';
import type { Store } from '../lib/store/types.js';
import { scheduledRun } from '../lib/triggers/schedule.js';
import { bundleAll } from '../scripts/bundle.js';
import { startOwnRedis, type TestRedis } from '../test/harness/redis.js';
import { COLDSTART_TARGETS, type ColdStartResult, coldStartTargets, measureColdStart, printColdStart } from './coldstart.js';
import type { FakesApi } from './fakes-child.js';
import { apiDefinition, planInputs } from './fixtures.js';
import { Floor, type FloorRun, type FloorTarget } from './floor.js';
import { type Helper, startHelper } from './ipc.js';
import { CountingMetrics, type MemoryWindow, memoryWindow, RedisCommandCounter, StoreCounter, storeRoundTrips } from './measure.js';
import { type ProfileSummary, profiled } from './profile.js';
import { type Counts, type Endpoints, objectName, percentile, REPLICA_SERVICE } from './shared.js';
import type { StormApi, StormResult } from './storm-child.js';
import { type StormPlan, stormPlan } from './storm-plan.js';
import { bestWriteFloor, WRITE_FLOOR_CONCURRENCIES, WriteFloor, type WriteFloorFigure, type WriteFloorObject } from './write-floor.js';

const N = Number(process.env.BENCH_N ?? 10_000);
const USE_REDIS = process.env.BENCH_REDIS === '1';
const COLDSTART = process.env.BENCH_COLDSTART !== '0';
const STORM = process.env.BENCH_STORM !== '0';
const REPLICAS_PHASE = process.env.BENCH_REPLICAS !== '0';
const WRITE_FLOOR = process.env.BENCH_WRITE_FLOOR !== '0';
const TICK = process.env.BENCH_TICK === '1';
/** the transport of the measured service's clients: HTTP_CLIENT's default, Node's own (BENCH_TRANSPORT=undici: undici's pooled client, as HTTP_CLIENT=undici) */
const TRANSPORT = process.env.BENCH_TRANSPORT ?? 'node';
const PROFILE = process.env.BENCH_PROFILE;
const PROFILE_FIRST = process.env.BENCH_PROFILE_FIRST;
const PROFILE_RESTART = process.env.BENCH_PROFILE_RESTART;
const PROFILE_STORM = process.env.BENCH_PROFILE_STORM;
const PROFILE_FAKES = process.env.BENCH_PROFILE_FAKES;
/** which phase BENCH_PROFILE_FAKES profiles: first (the default) or storm */
const PROFILE_FAKES_PHASE = process.env.BENCH_PROFILE_FAKES_PHASE ?? 'first';
const PROFILE_FAKES_FIRST = PROFILE_FAKES !== undefined && PROFILE_FAKES_PHASE === 'first';
const PROFILE_FAKES_STORM = PROFILE_FAKES !== undefined && PROFILE_FAKES_PHASE === 'storm';
const PAGE_SIZE = 500; // KubeClient's default
const STEADY_RUNS = 3;
const DRIFT_EVERY = 100; // 1%
const DRIFT_URL = 'http://drifted.example.com:8000';
const WEBHOOK_TOKEN = 'bench-webhook-token-0123456789';
const HERE = fileURLToPath(new URL('.', import.meta.url));

// ── targets ──
const TARGET = {
  steadyRatio: 1.3,
  steadyGatewayLists: 1,
  steadyPages: Math.ceil(N / PAGE_SIZE),
  steadyStoreRoundTrips: 3,
  /** 512 MB up to N = 10,000, then linear to 1,536 MB at N = 50,000 (and on, at that slope) */
  rssMb: N <= 10_000 ? 512 : Math.round(512 + ((N - 10_000) * 1_024) / 40_000),
  /** above N = 10,000: the highest phase's peak RSS at most this × the N = 10,000 run's (BENCH_BASELINE) */
  rssGrowth: 1.2,
  /** wall time / the fastest write floor of the same work */
  firstWriteRatio: 1.3,
  restartWriteRatio: 1.2,
  /** drift: wall time / (the steady floor + the fastest floor of its writes) */
  driftRatio: 1.3,
  /** store round trips per object written, first run and restart */
  storeRoundTripsPerWrite: 1,
  reloads: 1,
  stormP99Ms: 50,
  /** a steady state over REPLICAS replicas of the gateway (TYK_GATEWAY_SERVICE): its floor lists each */
  replicasRatio: 1.5,
};

/** The replicas phase: the gateway and this many copies behind one Service's EndpointSlices. */
const REPLICAS = 3;

/** A bad setting: one line naming it, no stack trace, exit 2. */
function badSetting(message: string): never {
  console.error(`bench: ${message}`);
  process.exit(2);
}
if (!Number.isInteger(N) || N < 1) badSetting(`BENCH_N must be a positive integer, not ${process.env.BENCH_N}`);
if (TRANSPORT !== 'undici' && TRANSPORT !== 'node') badSetting(`BENCH_TRANSPORT must be undici or node, not ${TRANSPORT}`);
if (PROFILE_FAKES_PHASE !== 'first' && PROFILE_FAKES_PHASE !== 'storm') badSetting(`BENCH_PROFILE_FAKES_PHASE must be first or storm, not ${PROFILE_FAKES_PHASE}`);

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

function rate(count: number, ms: number): number {
  return Math.round((count / ms) * 1000);
}

function median(values: readonly number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

function ratio(ms: number, floorMs: number): number {
  return Math.round((ms / floorMs) * 100) / 100;
}

// ───────────────────────────── micro benchmarks ─────────────────────────────

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

function benchHash(value: unknown, minMs: number): number {
  for (let i = 0; i < 500; i++) hashOf(value); // warm up
  let count = 0;
  const start = performance.now();
  while (performance.now() - start < minMs) {
    for (let i = 0; i < 500; i++) hashOf(value);
    count += 500;
  }
  return rate(count, performance.now() - start);
}

// ───────────────────────────── phases ─────────────────────────────

interface StoreFigures {
  /** see storeRoundTrips (bench/measure.ts) */
  roundTrips: number;
  calls: Record<string, number>;
  /** Redis's own command counts (BENCH_REDIS=1) */
  redisCommands: Record<string, number> | null;
}

interface Phase {
  wallMs: number;
  floorMs: number;
  ratioToFloor: number;
  objectsPerSec: number;
  peakRssMb: number;
  /** CPU time (user + system) this process used during the phase, ms */
  cpuMs: number;
  /** CPU time the fakes process used during the phase, ms (when it nears wallMs, the fakes are the bottleneck) */
  fakesCpuMs: number;
  memory: MemoryWindow;
  gateway: Counts['gateway'];
  kube: Counts['kube'];
  store: StoreFigures;
  /** runs by trigger (the service's runs_total) */
  runs: Record<string, number>;
  /** objects by result (full runs: the report's counts; the storm: the service's objects_total by action/result) */
  results: Record<string, number>;
  runErrors: number;
  /** the first few run errors (stage, code, message) */
  runErrorSample: string[];
  /** first and restart: their fastest write floor (of every concurrency measured), at which concurrency, and the ratio to it */
  writeFloorMs?: number;
  writeFloorConcurrency?: number;
  ratioToWriteFloor?: number;
  /** store round trips per gateway write (first and restart: per object written; 0 without writes) */
  storeRoundTripsPerObject: number;
}

/** The write floors of the phases that write: creating every object, and the drift's updates; empty when skipped. */
interface WriteFloors {
  first: WriteFloorFigure[];
  restart: WriteFloorFigure[];
  /** the drifted objects' updates and one reload */
  drift: WriteFloorFigure[];
}

interface SteadyPhase extends Phase {
  runsMs: number[];
  floorRunsMs: number[];
  /** the fewest objects reported unchanged by one of the runs */
  unchangedMin: number;
}

interface DriftPhase extends Phase {
  drifted: number;
  stillDrifted: number;
  /** the fastest floor of its writes, and wall time / (the steady floor + that) */
  writesFloorMs?: number;
  ratioToFloorAndWrites?: number;
}

interface StormPhase extends Phase {
  events: number;
  changed: number;
  objects: number;
  writes: number;
  p50Ms: number;
  p99Ms: number;
  /** from the storm's start until every changed object showed its new spec on the gateway, ms (null: never, within 60 s) */
  convergedMs: number | null;
  notConverged: number;
  sender: StormResult;
  /** run durations (the service's run_duration_seconds), ms */
  runMs: { p50: number; p99: number; max: number };
  lockContention: number;
  /** this process's event-loop delay during the storm (perf_hooks, 10 ms resolution), ms: what an answer waits behind the runs */
  loopDelayMs: { p50: number; p99: number; max: number };
  /** the webhooks' time in the reconciler's HTTP server (fastify's elapsedTime: request parsed → answer sent), ms; the rest of an answer's latency is the wait to be read */
  handledMs: { p99: number; max: number };
  /** connections the senders opened to the reconciler during the storm (their pools are warm from the warm-up) */
  connectionsOpened: number;
}

interface Machine {
  cpus: number;
  cpuModel: string;
  memGb: number;
  node: string;
  loadAvg1m: number;
}

interface BenchTarget {
  name: string;
  pass: boolean;
  value: number | string;
  limit: number | string;
}

class Bench {
  readonly counter = new StoreCounter();
  readonly metrics = new CountingMetrics();
  floorMs = 0;

  constructor(
    readonly fakes: Helper<FakesApi>,
    readonly redisCommands: RedisCommandCounter | undefined,
  ) {}

  /** Runs `body` as one measured phase: counters reset, a gc, a memory window, the wall time, the counts after. */
  async measure<T>(body: () => Promise<T>, objects: number): Promise<{ value: T; phase: Phase }> {
    await this.fakes.call('resetCalls');
    this.counter.reset();
    this.metrics.reset();
    const redisBefore = this.redisCommands ? await this.redisCommands.snapshot() : undefined;
    await settleMemory();
    const window = memoryWindow();
    const cpu = process.cpuUsage();
    const start = performance.now();
    const value = await body();
    const wallMs = Math.round(performance.now() - start);
    const cpuUsed = process.cpuUsage(cpu);
    const memory = window();
    const counts = await this.fakes.call('counts');
    const redisCommands = this.redisCommands && redisBefore ? await this.redisCommands.since(redisBefore) : null;
    const report = (value as { report?: RunReport }).report;
    return {
      value,
      phase: {
        wallMs,
        floorMs: this.floorMs,
        ratioToFloor: ratio(wallMs, this.floorMs),
        objectsPerSec: rate(objects, wallMs),
        peakRssMb: memory.peakRssMb,
        cpuMs: Math.round((cpuUsed.user + cpuUsed.system) / 1000),
        fakesCpuMs: counts.fakesCpuMs,
        memory,
        gateway: counts.gateway,
        kube: counts.kube,
        store: { roundTrips: storeRoundTrips(this.counter.calls, redisCommands ?? undefined), calls: { ...this.counter.calls }, redisCommands },
        storeRoundTripsPerObject: counts.gateway.write === 0 ? 0 : Math.round((storeRoundTrips(this.counter.calls, redisCommands ?? undefined) / counts.gateway.write) * 1000) / 1000,
        runs: { ...this.metrics.runs },
        results: report ? { ...report.counts } : { ...this.metrics.objects },
        runErrors: report ? report.errors.length : 0,
        runErrorSample: (report?.errors ?? []).slice(0, 3).map((e) => `${e.stage} ${e.code}: ${e.message}`.slice(0, 300)),
      },
    };
  }
}

/** The objects the phases create, as the write floors send them: the bodies our payload builder makes. */
function writeFloorObjects(): WriteFloorObject[] {
  return Array.from({ length: N }, (_, i) => {
    const { namespace, name } = objectName(i);
    const id = defaultId(namespace, name);
    const built = apiDefinitionPayload(apiDefinition(namespace, name, i), id, undefined);
    if (!built.ok) throw new Error(`write floor: the spec of ${namespace}/${name} is invalid: ${built.reason}`);
    return { namespace, name, id, body: built.body };
  });
}

/** The fakes as seeding left them: the gateway restarted empty, every ApiDefinition without finalizers or status. */
async function resetFakes(fakes: Helper<FakesApi>): Promise<void> {
  await fakes.call('restartGateway');
  for (let from = 0; from < N; from += 5_000) await fakes.call('seed', { from, to: Math.min(N, from + 5_000) });
}

/** The write floors at each concurrency (see the header), each on the fakes put back as seeding left them. */
async function measureWriteFloors(fakes: Helper<FakesApi>, endpoints: Endpoints): Promise<WriteFloors> {
  const objects = writeFloorObjects();
  const floors: WriteFloors = { first: [], restart: [], drift: [] };
  const drifted = objects.filter((_, i) => i % DRIFT_EVERY === DRIFT_EVERY / 2);
  const target = { kubeUrl: endpoints.kubeUrl, kubeToken: endpoints.kubeToken, tykUrl: endpoints.tykUrl, tykSecret: endpoints.tykSecret };
  for (const [phase, kind] of [
    ['first', 'create'],
    ['restart', 'gateway'],
  ] as const) {
    for (const concurrency of WRITE_FLOOR_CONCURRENCIES) {
      const wf = new WriteFloor(target, concurrency);
      try {
        await resetFakes(fakes);
        gc();
        await fakes.call('resetCalls');
        const cpu = process.cpuUsage();
        const r = kind === 'create' ? await wf.run(objects) : await wf.runGatewayOnly(objects);
        const used = process.cpuUsage(cpu);
        const { fakesCpuMs } = await fakes.call('counts');
        floors[phase].push({ concurrency, ms: r.ms, objectsPerSec: Math.round(N / (r.ms / 1000)), requests: r.requests, cpuMs: Math.round((used.user + used.system) / 1000), fakesCpuMs });
        if (kind === 'gateway' && drifted.length > 0) {
          // the gateway holds every object now: the drift's writes are updates of some of them
          await fakes.call('resetCalls');
          const cpuDrift = process.cpuUsage();
          const d = await wf.runUpdates(drifted);
          const usedDrift = process.cpuUsage(cpuDrift);
          const counts = await fakes.call('counts');
          floors.drift.push({
            concurrency,
            ms: d.ms,
            objectsPerSec: Math.round(drifted.length / (d.ms / 1000)),
            requests: d.requests,
            cpuMs: Math.round((usedDrift.user + usedDrift.system) / 1000),
            fakesCpuMs: counts.fakesCpuMs,
          });
        }
      } finally {
        await wf.close();
      }
    }
  }
  return floors;
}

/** The measured service's transport (BENCH_TRANSPORT), as lib/service.ts fullRunTransport sets them up. */
function transportOf(): TransportFactory {
  return TRANSPORT === 'node' ? nodeTransports() : undiciTransports({ connections: runConnections() });
}

async function fullRun(bench: Bench, svc: Service): Promise<Phase> {
  const { phase } = await bench.measure(async () => ({ report: TICK ? await scheduledRun(svc) : await svc.run({ trigger: 'schedule', scope: { all: true } }) }), N);
  return phase;
}

/**
 * Before a phase: a full gc, a pause, another: a real process idles between runs (minutes
 * between scheduled runs), long enough for V8 to give back what the last run left, so a phase's
 * peak should not carry the previous phase's garbage. What stays (RSS before) is reported.
 */
async function settleMemory(): Promise<void> {
  gc();
  await sleep(500);
  gc();
}

/** One floor run, after a gc; its time in ms. */
async function floorRun(floor: Floor): Promise<FloorRun> {
  gc();
  return floor.run(N);
}

/** The worst of several phases' counts and memory, with the median wall time. */
function steadyOf(runs: Phase[], floorRuns: FloorRun[]): SteadyPhase {
  const floorMs = median(floorRuns.map((f) => f.ms));
  const wallMs = median(runs.map((r) => r.wallMs));
  const worst = <T extends object>(pick: (p: Phase) => T): T => {
    const out: Record<string, unknown> = {};
    for (const p of runs) for (const [k, v] of Object.entries(pick(p))) out[k] = typeof v === 'number' ? Math.max(Number(out[k] ?? v), v) : v;
    return out as T;
  };
  const base = runs.reduce((a, b) => (b.memory.peakRssMb > a.memory.peakRssMb ? b : a));
  return {
    ...base,
    wallMs,
    floorMs,
    ratioToFloor: ratio(wallMs, floorMs),
    objectsPerSec: rate(N, wallMs),
    cpuMs: median(runs.map((r) => r.cpuMs)),
    fakesCpuMs: median(runs.map((r) => r.fakesCpuMs)),
    peakRssMb: base.memory.peakRssMb,
    memory: worst((p) => p.memory),
    gateway: worst((p) => p.gateway),
    kube: worst((p) => p.kube),
    store: { ...base.store, roundTrips: Math.max(...runs.map((r) => r.store.roundTrips)) },
    runErrors: runs.reduce((n, r) => n + r.runErrors, 0),
    runErrorSample: runs.flatMap((r) => r.runErrorSample).slice(0, 3),
    runsMs: runs.map((r) => r.wallMs),
    floorRunsMs: floorRuns.map((f) => f.ms),
    unchangedMin: Math.min(...runs.map((r) => r.results.unchanged ?? 0)),
  };
}

/** Waits until the fakes have answered no request for `quietMs` (or `maxMs` passed); returns how long it waited. */
async function quiet(fakes: Helper<FakesApi>, quietMs: number, maxMs: number): Promise<number> {
  const start = performance.now();
  let last = -1;
  let since = performance.now();
  while (performance.now() - start < maxMs) {
    const c = await fakes.call('counts');
    const total = c.kube.total + c.gateway.total;
    if (total !== last) {
      last = total;
      since = performance.now();
    } else if (performance.now() - since >= quietMs) break;
    await sleep(100);
  }
  return Math.round(performance.now() - start);
}

/** What the reconciler's HTTP server saw of the webhooks (an onResponse hook and the server's 'connection' events; bench/run.ts main). */
const webhookServer = { handledMs: [] as number[], connections: 0 };
async function stormPhase(bench: Bench, storm: Helper<StormApi>, stormScript: StormPlan, webhookUrl: string, usersUrl: string): Promise<StormPhase> {
  const expected: [string, number][] = stormScript.changed.map((c) => {
    const { namespace, name } = objectName(c.index);
    return [defaultId(namespace, name), c.rate];
  });
  let convergedMs: number | null = null;
  let notConverged = expected.length;
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  const { value: sender, phase } = await bench.measure(async () => {
    const start = performance.now();
    webhookServer.handledMs = [];
    webhookServer.connections = 0;
    const result = await storm.call('run', { plan: stormScript, usersUrl, webhookUrl, webhookToken: WEBHOOK_TOKEN });
    // every changed object's new spec on the gateway (60 s at most), then 1 s without a request to the fakes
    while (performance.now() - start < result.durationMs + 60_000) {
      notConverged = (await bench.fakes.call('notYetOnGateway', { expected })).length;
      if (notConverged === 0) {
        convergedMs = Math.round(performance.now() - start);
        break;
      }
      await sleep(50);
    }
    await quiet(bench.fakes, 1_000, 30_000);
    return result;
  }, stormScript.settings.objects);
  loop.disable();
  const loopMs = (ns: number): number => Math.round(ns / 1e6);
  const runMs = bench.metrics.runSeconds.map((s) => s * 1000).sort((a, b) => a - b);
  const pct = (p: number): number => Math.round(percentile(runMs, p));
  return {
    ...phase,
    events: sender.events.audit + sender.events.watch,
    changed: expected.length,
    objects: stormScript.settings.objects,
    writes: phase.gateway.write,
    p50Ms: sender.answers.all.p50,
    p99Ms: sender.answers.all.p99,
    convergedMs,
    notConverged,
    sender,
    runMs: { p50: pct(50), p99: pct(99), max: Math.round(runMs[runMs.length - 1] ?? 0) },
    lockContention: bench.metrics.lockContention,
    loopDelayMs: { p50: loopMs(loop.percentile(50)), p99: loopMs(loop.percentile(99)), max: loopMs(loop.max) },
    handledMs: (() => {
      const ms = [...webhookServer.handledMs].sort((a, b) => a - b);
      const at = (p: number): number => Math.round(percentile(ms, p) * 10) / 10;
      return { p99: at(99), max: at(100) };
    })(),
    connectionsOpened: webhookServer.connections,
  };
}

// ───────────────────────────── cold start ─────────────────────────────

interface ColdStartJson {
  /** KB the watch bundle loads at start (measureColdStart) */
  loadedKb: number | null;
  /** process start → first answer, unchanged object, median ms */
  firstAnswerMs: number | null;
  importMs: number | null;
  firstCreateMs: number | null;
  /** KB loaded at start per webhook function's bundle */
  functions: Record<string, number>;
  result: ColdStartResult | null;
}

const WEBHOOK_FUNCTIONS = ['audit', 'watch', 'cloudevents', 'admission'];

async function coldStart(): Promise<{ json: ColdStartJson; targets: BenchTarget[] }> {
  const result = await measureColdStart();
  printColdStart(result);
  const dir = await mkdtemp(join(tmpdir(), 'gr-bench-bundles-'));
  let functions: Record<string, number> = {};
  try {
    const built = await bundleAll({ only: WEBHOOK_FUNCTIONS, outDir: join(dir, 'build') });
    functions = Object.fromEntries(built.map((b) => [b.name, Math.round(b.bytes / 1024)]));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  console.log(
    `  loaded at start, per webhook function: ${Object.entries(functions)
      .map(([k, v]) => `${k} ${v} KB`)
      .join(', ')}`,
  );
  const targets: BenchTarget[] = [
    ...coldStartTargets(result),
    ...Object.entries(functions)
      .filter(([name]) => name !== 'watch' || result.bundleKb === undefined)
      .map(([name, kb]) => ({ name: `cold start: ${name} bundle loaded at start, KB`, pass: kb <= COLDSTART_TARGETS.bundleKb, value: kb, limit: COLDSTART_TARGETS.bundleKb })),
  ];
  return {
    json: { loadedKb: result.bundleKb ?? null, firstAnswerMs: result.unchanged.responseMs, importMs: result.unchanged.importMs, firstCreateMs: result.create.responseMs, functions, result },
    targets,
  };
}

// ───────────────────────────── targets ─────────────────────────────

function atMost(name: string, value: number, limit: number): BenchTarget {
  return { name, pass: value <= limit, value, limit };
}

function exactly(name: string, value: number, want: number): BenchTarget {
  return { name, pass: value === want, value, limit: `= ${want}` };
}

interface Phases {
  first: Phase;
  steady: SteadyPhase;
  drift: DriftPhase;
  restart: Phase;
  /** steady over REPLICAS replicas of the gateway, against a floor listing each; null with BENCH_REPLICAS=0 */
  replicas: SteadyPhase | null;
  storm: StormPhase | null;
}

/** The N whose run a larger one's memory is compared with. */
const BASELINE_N = 10_000;
/** Where each run leaves its figures, and where a run above BASELINE_N finds the baseline's (BENCH_BASELINE: another file). */
const RESULTS_DIR = join(homedir(), '.cache', 'gateway-reconciler', 'bench');
const resultsFile = (n: number): string => join(RESULTS_DIR, `last-${n}-${USE_REDIS ? 'redis' : 'memory'}${TICK ? '-tick' : ''}${TRANSPORT === 'undici' ? '-undici' : ''}.json`);
const baselineFile = process.env.BENCH_BASELINE ?? resultsFile(BASELINE_N);

/** The highest peak RSS of the full-run phases (those both sizes have). */
function highestPeak(p: Pick<Phases, 'first' | 'steady' | 'drift' | 'restart'>): number {
  return Math.max(p.first.peakRssMb, p.steady.peakRssMb, p.drift.peakRssMb, p.restart.peakRssMb);
}

/** The baseline run's highest peak RSS, from its BENCH_JSON figures; undefined when there is none. */
async function readBaseline(): Promise<{ peakRssMb: number } | undefined> {
  try {
    const json = JSON.parse(await readFile(baselineFile, 'utf8')) as { n?: unknown } & Pick<Phases, 'first' | 'steady' | 'drift' | 'restart'>;
    if (json.n !== BASELINE_N) return undefined;
    return { peakRssMb: highestPeak(json) };
  } catch {
    return undefined;
  }
}

let baseline: { peakRssMb: number } | undefined;

function targetsOf(p: Phases): BenchTarget[] {
  const rss = (name: string, phase: Phase): BenchTarget => atMost(`${name}: peak RSS of the reconciler, MB`, phase.peakRssMb, TARGET.rssMb);
  const out: BenchTarget[] = [
    atMost('steady: wall time / floor', p.steady.ratioToFloor, TARGET.steadyRatio),
    exactly('steady: gateway lists', p.steady.gateway.list, TARGET.steadyGatewayLists),
    exactly('steady: API-server ApiDefinition list pages', p.steady.kube.listPages, TARGET.steadyPages),
    atMost('steady: store round trips', p.steady.store.roundTrips, TARGET.steadyStoreRoundTrips),
    exactly('steady: gateway writes', p.steady.gateway.write, 0),
    exactly('steady: status patches', p.steady.kube.statusPatches, 0),
    exactly('steady: finalizer patches', p.steady.kube.finalizerPatches, 0),
    rss('first', p.first),
    rss('steady', p.steady),
    rss('drift', p.drift),
    rss('restart', p.restart),
    exactly('first: gateway reloads', p.first.gateway.reload, TARGET.reloads),
    atMost('first: store round trips per object written', p.first.storeRoundTripsPerObject, TARGET.storeRoundTripsPerWrite),
    exactly('restart: gateway reloads', p.restart.gateway.reload, TARGET.reloads),
    atMost('restart: store round trips per object written', p.restart.storeRoundTripsPerObject, TARGET.storeRoundTripsPerWrite),
    exactly('drift: gateway writes (one per drifted object)', p.drift.gateway.write, p.drift.drifted),
    exactly('drift: gateway reloads', p.drift.gateway.reload, TARGET.reloads),
  ];
  if (p.replicas) {
    out.push(
      atMost(`replicas (${REPLICAS}, steady): wall time / floor`, p.replicas.ratioToFloor, TARGET.replicasRatio),
      exactly(`replicas (${REPLICAS}, steady): gateway lists (one per replica)`, p.replicas.gateway.list, REPLICAS * TARGET.steadyGatewayLists),
      exactly(`replicas (${REPLICAS}, steady): gateway writes`, p.replicas.gateway.write, 0),
      rss('replicas', p.replicas),
    );
  }
  for (const [name, ph, limit] of [
    ['first', p.first, TARGET.firstWriteRatio],
    ['restart', p.restart, TARGET.restartWriteRatio],
  ] as const) {
    if (ph.ratioToWriteFloor !== undefined) out.push(atMost(`${name}: wall time / its fastest write floor (concurrency ${ph.writeFloorConcurrency})`, ph.ratioToWriteFloor, limit));
  }
  if (p.drift.ratioToFloorAndWrites !== undefined) out.push(atMost("drift: wall time / (floor + its writes' fastest floor)", p.drift.ratioToFloorAndWrites, TARGET.driftRatio));
  if (N > BASELINE_N) {
    const peak = highestPeak(p);
    const base = baseline?.peakRssMb;
    out.push(
      base === undefined
        ? { name: `peak RSS / the N = ${BASELINE_N} run's`, pass: false, value: `no N = ${BASELINE_N} run to compare (${baselineFile})`, limit: TARGET.rssGrowth }
        : atMost(`peak RSS / the N = ${BASELINE_N} run's (${peak} MB / ${base} MB)`, Math.round((peak / base) * 100) / 100, TARGET.rssGrowth),
    );
  }
  if (p.storm) {
    out.push(rss('storm', p.storm));
    out.push(atMost(`storm: gateway writes (at most one per changed object, ${p.storm.changed})`, p.storm.writes, p.storm.changed));
    out.push(atMost('storm: p99 webhook answer, ms', p.storm.p99Ms, TARGET.stormP99Ms));
  }
  return out;
}

/** That each phase did its job: without these, a target could pass by doing nothing. */
function checksOf(p: Phases): BenchTarget[] {
  const out: BenchTarget[] = [
    exactly('first: every object synced', p.first.results.synced ?? 0, N),
    exactly('steady: every object unchanged, every run', p.steady.unchangedMin, N),
    exactly('drift: every drifted object healed on the gateway', p.drift.stillDrifted, 0),
    exactly('restart: every object synced', p.restart.results.synced ?? 0, N),
    exactly('run errors', p.first.runErrors + p.steady.runErrors + p.drift.runErrors + p.restart.runErrors, 0),
  ];
  if (p.storm) {
    const answered = p.storm.sender.answers.all;
    out.push(exactly('storm: every changed object on the gateway', p.storm.notConverged, 0));
    out.push(exactly('storm: webhook answers that were not 200 or 202', answered.count - (answered.statuses['200'] ?? 0) - (answered.statuses['202'] ?? 0), 0));
    out.push(exactly('storm: user writes that failed', p.storm.sender.userWriteFailures, 0));
  }
  return out;
}

// ───────────────────────────── output ─────────────────────────────

function printTable(p: Phases): void {
  const cols: [string, Phase | null][] = [
    ['first', p.first],
    [`steady (median of ${STEADY_RUNS})`, p.steady],
    ['drift', p.drift],
    ['restart', p.restart],
    [`replicas (${REPLICAS}, steady)`, p.replicas],
    ['storm', p.storm],
  ];
  const kv = (o: Record<string, number>): string =>
    Object.entries(o)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ') || '-';
  const rows: [string, (ph: Phase) => string | number][] = [
    ['wall time (ms)', (ph) => ph.wallMs],
    ['floor (ms)', (ph) => ph.floorMs],
    ['ratio to floor', (ph) => ph.ratioToFloor],
    ['objects/s', (ph) => ph.objectsPerSec],
    ['fastest write floor (ms, at concurrency)', (ph) => (ph.writeFloorMs === undefined ? '-' : `${ph.writeFloorMs} (${ph.writeFloorConcurrency})`)],
    ['ratio to write floor', (ph) => ph.ratioToWriteFloor ?? '-'],
    ['CPU ms: reconciler / fakes', (ph) => `${ph.cpuMs} / ${ph.fakesCpuMs}`],
    ['results', (ph) => kv(ph.results) + (ph.runErrors ? `, ${ph.runErrors} run errors` : '')],
    ['runs', (ph) => kv(ph.runs)],
    ['gateway list', (ph) => ph.gateway.list],
    ['gateway get', (ph) => ph.gateway.get],
    ['gateway write', (ph) => ph.gateway.write],
    ['gateway reload (applied, dropped)', (ph) => `${ph.gateway.reload} (${ph.gateway.reloadsApplied}, ${ph.gateway.reloadsDropped})`],
    ['api-server ApiDefinition pages', (ph) => ph.kube.listPages],
    ['api-server other lists', (ph) => ph.kube.otherLists],
    ['api-server gets (other kinds)', (ph) => `${ph.kube.gets} (${ph.kube.otherGets})`],
    ['api-server status patches', (ph) => ph.kube.statusPatches],
    ['api-server finalizer patches', (ph) => ph.kube.finalizerPatches],
    ['api-server Event writes', (ph) => ph.kube.eventWrites],
    ['store round trips', (ph) => ph.store.roundTrips],
    ['  per object written', (ph) => ph.storeRoundTripsPerObject],
    ['peak RSS (MB)', (ph) => `${ph.peakRssMb}${ph.memory.peakRssSource === 'kernel' ? '' : ' (sampled)'}`],
    ['  peak above RSS before (MB)', (ph) => ph.peakRssMb - ph.memory.rssBeforeMb],
    ['RSS before (MB)', (ph) => ph.memory.rssBeforeMb],
    ['  of which heap used / committed, external', (ph) => `${ph.memory.heapUsedBeforeMb} / ${ph.memory.heapTotalBeforeMb}, ${ph.memory.externalBeforeMb}`],
    ['heap used peak, sampled (MB)', (ph) => ph.memory.heapPeakMb],
    ['getrusage maxRSS so far (MB)', (ph) => ph.memory.maxRssSoFarMb],
  ];
  const present = cols.filter((c): c is [string, Phase] => c[1] !== null);
  const cells = rows.map(([label, f]) => [label, ...present.map(([, ph]) => String(f(ph)))]);
  const header = ['', ...present.map(([name]) => name)];
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]): string => r.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('  ');
  console.log(line(header));
  for (const r of cells) console.log(line(r));
  console.log(`\nsteady runs (ms): ${p.steady.runsMs.join(', ')}; floor runs (ms): ${p.steady.floorRunsMs.join(', ')}`);
  if (p.drift.writesFloorMs !== undefined)
    console.log(`drift: ${p.drift.wallMs} ms against its floor ${p.drift.floorMs} ms + its writes' fastest floor ${p.drift.writesFloorMs} ms: ${p.drift.ratioToFloorAndWrites}`);
  for (const [name, ph] of present) for (const e of ph.runErrorSample) console.log(`run error, ${name}: ${e}`);
  console.log(`store calls, steady: ${kv(p.steady.store.calls)}${p.steady.store.redisCommands ? `; Redis commands: ${kv(p.steady.store.redisCommands)}` : ''}`);
  const s = p.storm;
  if (s) {
    const a = s.sender.answers;
    const lat = (l: typeof a.all): string => `${l.count} answers (${kv(l.statuses)}), p50 ${l.p50} ms, p90 ${l.p90} ms, p99 ${l.p99} ms, max ${l.max} ms`;
    console.log(
      `\nstorm: ${s.events} events (${s.sender.events.audit} audit in ${s.sender.deliveries.audit} deliveries of ≤ ${s.sender.largestAuditBatch}, ${s.sender.events.watch} watch, one each) about ${s.objects} objects, ${s.changed} changed, over ${s.sender.lastEventSentMs} ms`,
    );
    console.log(`  all:   ${lat(a.all)}`);
    console.log(`  audit: ${lat(a.audit)}`);
    console.log(`  watch: ${lat(a.watch)}`);
    console.log(`  p99 by second sent: ${s.sender.perSecond.map((x) => `${x.second}s ${x.p99}`).join(', ')}`);
    console.log(
      `  gateway writes ${s.writes} for ${s.changed} changed objects; runs ${kv(s.runs)} (run p50 ${s.runMs.p50} ms, p99 ${s.runMs.p99} ms, max ${s.runMs.max} ms); lock contention ${s.lockContention}`,
    );
    console.log(`  the reconciler's event-loop delay: p50 ${s.loopDelayMs.p50} ms, p99 ${s.loopDelayMs.p99} ms, max ${s.loopDelayMs.max} ms`);
    console.log(
      `  in the reconciler's HTTP server (parsed → answered): p99 ${s.handledMs.p99} ms, max ${s.handledMs.max} ms; connections opened during the storm: ${s.connectionsOpened}; slowest answers (sent at ms: took ms): ${s.sender.slowest
        .slice(0, 5)
        .map((x) => `${x.at}: ${x.ms}`)
        .join(', ')}`,
    );
    console.log(`  every changed object on the gateway after ${s.convergedMs ?? `never (${s.notConverged} missing)`} ms`);
    const w = s.sender.userWriteMs;
    console.log(`  the senders: event-loop delay p99 ${s.sender.senderLoopDelay.p99} ms; the fakes stored a user's write in p50 ${w.p50} ms, p99 ${w.p99} ms`);
    console.log(`  objects in the answers' reports: ${kv(s.sender.reported)}`);
    if (s.sender.reportedErrors.length > 0) console.log(`  errors in the reports (sample): ${s.sender.reportedErrors.join(' | ')}`);
    if (s.sender.failures.length > 0) console.log(`  failures: ${s.sender.failures.join(' | ')}`);
    const u = s.sender.unanswered;
    if (u.count > 0) console.log(`  unanswered: ${u.count} requests failed ${u.minMs}-${u.maxMs} ms after they were sent`);
  }
}

function printProfile(what: string, summary: ProfileSummary): void {
  console.log(`\nCPU profile of ${what} (${summary.totalMs} ms working, ${summary.idleMs} ms idle): ${summary.file}`);
  console.log('  self time by file:');
  for (const f of summary.files) console.log(`    ${String(f.selfMs).padStart(6)} ms ${String(f.pct).padStart(5)}%  ${f.file}`);
  console.log('  self time by function:');
  for (const f of summary.functions.slice(0, 20)) console.log(`    ${String(f.selfMs).padStart(6)} ms ${String(f.pct).padStart(5)}%  ${f.name}  ${f.where}`);
}

// ───────────────────────────── main ─────────────────────────────

async function main(): Promise<number> {
  const machine: Machine = {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model ?? '?',
    memGb: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    loadAvg1m: Math.round((loadavg()[0] ?? 0) * 10) / 10,
  };
  console.log(`gateway-reconciler bench: N=${N}, store=${USE_REDIS ? 'redis' : 'memory'}, transport=${TRANSPORT}, full runs: ${TICK ? 'scheduled ticks (sharded above SHARD_SIZE)' : 'one run each'}`);
  console.log(`machine: ${machine.cpus} CPUs (${machine.cpuModel}), ${machine.memGb} GB, node ${machine.node}, load average ${machine.loadAvg1m} at start\n`);

  const sample = apiDefinition('team-a', 'api-00001', 1);
  const body = apiDefinitionPayload(sample, defaultId('team-a', 'api-00001'), undefined);
  if (!body.ok) throw new Error(`sample spec is invalid: ${body.reason}`);
  const bodyBytes = JSON.stringify(body.body).length;

  const fakes = startHelper<FakesApi>(resolve(HERE, 'fakes-child.ts'));
  const dir = await mkdtemp(join(tmpdir(), 'gr-bench-'));
  let redis: TestRedis | undefined;
  let storm: Helper<StormApi> | undefined;
  let svc: Service | undefined;
  let replicaSvc: Service | undefined;
  let replicaFloor: Floor | undefined;
  let app: FastifyInstance | undefined;
  let floor: Floor | undefined;
  let redisCommands: RedisCommandCounter | undefined;
  let phases: Phases;
  let micro: Record<string, number>;
  let profile: ProfileSummary | null = null;
  let firstProfile: ProfileSummary | null = null;
  let restartProfile: ProfileSummary | null = null;
  let stormProfile: ProfileSummary | null = null;
  let fakesProfile: ProfileSummary | null = null;
  let writeFloors: WriteFloors = { first: [], restart: [], drift: [] };
  try {
    const endpoints = await fakes.call('endpoints');
    const seedStart = performance.now();
    for (let from = 0; from < N; from += 5_000) await fakes.call('seed', { from, to: Math.min(N, from + 5_000) });
    console.log(`seeded:          ${N} ApiDefinitions in 4 namespaces in ${Math.round(performance.now() - seedStart)} ms (fakes in process ${fakes.pid})\n`);

    redis = USE_REDIS ? await startOwnRedis() : undefined;
    redisCommands = redis ? new RedisCommandCounter(redis.url) : undefined;
    const bench = new Bench(fakes, redisCommands);
    const prefix = 'bench:';
    const rawStore: Store = redis ? createRedisStore(redis.url, { prefix }) : new MemoryStore();
    const kubeconfig = join(dir, 'kubeconfig');
    await writeFile(kubeconfig, endpoints.kubeconfigYaml, { mode: 0o600 });
    const env = {
      KUBECONFIG: kubeconfig,
      TYK_URL: endpoints.tykUrl,
      TYK_AUTH: endpoints.tykSecret,
      TYK_MODE: 'ce',
      WEBHOOK_TOKEN,
      RESYNC_TOKEN: WEBHOOK_TOKEN,
      WEBHOOK_RATE_LIMIT: '0',
      LOG_LEVEL: 'silent',
      // The one production setting passed through: at N = 50,000 the gateway's list (~375 MB)
      // takes longer than the default 10 s to arrive, as it would from a real gateway.
      ...(process.env.HTTP_TIMEOUT_MS ? { HTTP_TIMEOUT_MS: process.env.HTTP_TIMEOUT_MS } : {}),
    };
    svc = createService(loadConfig(env), env, { store: bench.counter.wrap(rawStore), log: silentLogger, metrics: bench.metrics, transport: transportOf() });
    app = buildApp(svc);
    app.addHook('onResponse', async (req, reply) => {
      if (req.url.startsWith('/webhooks/')) webhookServer.handledMs.push(reply.elapsedTime);
    });
    const webhookUrl = await app.listen({ host: '127.0.0.1', port: 0 });
    app.server.on('connection', () => {
      webhookServer.connections++;
    });
    const floorTarget: FloorTarget = {
      kubeUrl: endpoints.kubeUrl,
      kubeToken: endpoints.kubeToken,
      tykUrl: endpoints.tykUrl,
      tykSecret: endpoints.tykSecret,
      pageSize: PAGE_SIZE,
      store: redis ? { kind: 'redis', url: redis.url, prefix } : { kind: 'memory', store: rawStore },
    };
    floor = new Floor(floorTarget);
    const service = svc;
    const run = (): Promise<Phase> => fullRun(bench, service);

    console.log(`phase first ...${PROFILE_FIRST ? ` (under the CPU profiler: its times include the profiler's overhead) → ${PROFILE_FIRST}` : ''}`);
    if (PROFILE_FAKES_FIRST) await fakes.call('profileStart');
    const first = PROFILE_FIRST
      ? await profiled(resolve(PROFILE_FIRST), run).then((r) => {
          firstProfile = r.summary;
          return r.value;
        })
      : await run();
    if (PROFILE_FAKES_FIRST) fakesProfile = await fakes.call('profileStop', { file: resolve(PROFILE_FAKES as string) });

    console.log('phase steady (interleaved with the floor) ...');
    await floorRun(floor); // warm-up, unmeasured
    const floorRuns: FloorRun[] = [];
    const steadyRuns: Phase[] = [];
    for (let i = 0; i < STEADY_RUNS; i++) {
      floorRuns.push(await floorRun(floor));
      bench.floorMs = floorRuns[floorRuns.length - 1]?.ms ?? 0;
      steadyRuns.push(await run());
    }
    const steady = steadyOf(steadyRuns, floorRuns);
    bench.floorMs = steady.floorMs;
    for (const ph of [first]) Object.assign(ph, { floorMs: steady.floorMs, ratioToFloor: ratio(ph.wallMs, steady.floorMs) });

    if (PROFILE) {
      console.log(`steady run under the CPU profiler (unmeasured) → ${PROFILE} ...`);
      gc();
      profile = (await profiled(resolve(PROFILE), () => service.run({ trigger: 'schedule', scope: { all: true } }))).summary;
    }

    console.log('phase drift ...');
    const allIds = Array.from({ length: N }, (_, i) => {
      const { namespace, name } = objectName(i);
      return defaultId(namespace, name);
    });
    const driftIds = allIds.filter((_, i) => i % DRIFT_EVERY === DRIFT_EVERY / 2);
    await fakes.call('drift', { ids: driftIds, targetUrl: DRIFT_URL });
    const driftRun = await run();
    const drift: DriftPhase = { ...driftRun, drifted: driftIds.length, stillDrifted: (await fakes.call('stillDrifted', { ids: driftIds, targetUrl: DRIFT_URL })).length };

    console.log(`phase restart ...${PROFILE_RESTART ? ` (under the CPU profiler) → ${PROFILE_RESTART}` : ''}`);
    await fakes.call('restartGateway');
    const restart = PROFILE_RESTART
      ? await profiled(resolve(PROFILE_RESTART), run).then((r) => {
          restartProfile = r.summary;
          return r.value;
        })
      : await run();
    const loaded = await fakes.call('loadedCount', { ids: allIds });
    if (loaded !== N) restart.results = { ...restart.results, loadedOnGateway: loaded };

    let replicas: SteadyPhase | null = null;
    if (REPLICAS_PHASE) {
      console.log(`phase replicas (a steady state over ${REPLICAS} replicas of the gateway, interleaved with their floor) ...`);
      const replicaUrls = await fakes.call('replicas', { count: REPLICAS - 1 });
      const replicaEnv = { ...env, TYK_GATEWAY_SERVICE: `${REPLICA_SERVICE.namespace}/${REPLICA_SERVICE.name}:${REPLICA_SERVICE.port}` };
      replicaSvc = createService(loadConfig(replicaEnv), replicaEnv, { store: bench.counter.wrap(rawStore), log: silentLogger, metrics: bench.metrics, transport: transportOf() });
      replicaFloor = new Floor({ ...floorTarget, tykUrls: replicaUrls });
      const replicated = replicaSvc;
      await floorRun(replicaFloor); // warm-up, unmeasured
      await replicated.run({ trigger: 'schedule', scope: { all: true } }); // warm-up: discovery, the replicas' connections
      const replicaFloorRuns: FloorRun[] = [];
      const replicaRuns: Phase[] = [];
      for (let i = 0; i < STEADY_RUNS; i++) {
        replicaFloorRuns.push(await floorRun(replicaFloor));
        bench.floorMs = replicaFloorRuns[replicaFloorRuns.length - 1]?.ms ?? 0;
        replicaRuns.push(await fullRun(bench, replicated));
      }
      replicas = steadyOf(replicaRuns, replicaFloorRuns);
      bench.floorMs = steady.floorMs;
    }

    let stormResult: StormPhase | null = null;
    if (STORM) {
      const script = stormPlan(N);
      console.log(`phase storm (${script.happenings.length * 2} events about ${script.settings.objects} objects over ${script.settings.durationMs / 1000} s) ...`);
      storm = startHelper<StormApi>(resolve(HERE, 'storm-child.ts'));
      await storm.call('ready'); // its start (tsx, undici) out of the measured window
      // unmeasured: the senders' connections opened and both sides' webhook code compiled, as on a server already taking webhooks
      const warm = await storm.call('warm', { plan: script, usersUrl: endpoints.usersUrl, webhookUrl, webhookToken: WEBHOOK_TOKEN });
      await quiet(fakes, 1_000, 30_000);
      console.log(
        `  warm-up (unmeasured): ${warm.events.audit + warm.events.watch} events about ${warm.userWrites} objects over ${Math.round(warm.durationMs)} ms, answers p99 ${warm.answers.all.p99} ms`,
      );
      const helper = storm;
      const measureStorm = async (): Promise<StormPhase> => {
        if (PROFILE_FAKES_STORM) await fakes.call('profileStart');
        const result = await stormPhase(bench, helper, script, webhookUrl, endpoints.usersUrl);
        if (PROFILE_FAKES_STORM) fakesProfile = await fakes.call('profileStop', { file: resolve(PROFILE_FAKES as string) });
        return result;
      };
      stormResult = PROFILE_STORM
        ? await profiled(resolve(PROFILE_STORM), measureStorm).then((r) => {
            stormProfile = r.summary;
            return r.value;
          })
        : await measureStorm();
    }
    phases = { first, steady, drift, restart, replicas, storm: stormResult };

    // after the phases, so that the floors' client (in this process) is in no phase's memory
    if (WRITE_FLOOR) {
      console.log(`write floors (concurrency ${WRITE_FLOOR_CONCURRENCIES.join(' and ')}) ...`);
      writeFloors = await measureWriteFloors(fakes, endpoints);
      for (const [phase, figures] of Object.entries(writeFloors) as [string, WriteFloorFigure[]][]) {
        for (const f of figures)
          console.log(`  ${phase}: ${f.ms} ms at concurrency ${f.concurrency}, ${f.objectsPerSec} objects/s (${f.requests} requests; CPU: client ${f.cpuMs} ms, fakes ${f.fakesCpuMs} ms)`);
      }
      console.log('');
      // each phase that creates everything against the fastest of its write floors
      for (const [ph, figures] of [
        [first, writeFloors.first],
        [restart, writeFloors.restart],
      ] as const) {
        const best = bestWriteFloor(figures);
        if (best) Object.assign(ph, { writeFloorMs: best.ms, writeFloorConcurrency: best.concurrency, ratioToWriteFloor: ratio(ph.wallMs, best.ms) });
      }
      const driftWrites = bestWriteFloor(writeFloors.drift);
      if (driftWrites) Object.assign(drift, { writesFloorMs: driftWrites.ms, ratioToFloorAndWrites: ratio(drift.wallMs, drift.floorMs + driftWrites.ms) });
    }

    const echo = await fakes.call('echo', { id: defaultId('team-a', 'api-00000') });
    const echoBytes = JSON.stringify(echo).length;
    // after the phases: the micro benchmarks' garbage must not be in the phases' memory
    const planPerSec = benchPlan();
    const hashPerSec = benchHash(body.body, 1_000);
    const echoHashPerSec = benchHash(echo, 500);
    console.log(`\nplan():          ${planPerSec.toLocaleString('en')} calls/s (1,000,000 calls, 85% unchanged)`);
    console.log(`hashOf(body):    ${hashPerSec.toLocaleString('en')} hashes/s (${bodyBytes} B API definition body)`);
    console.log(`hashOf(echo):    ${echoHashPerSec.toLocaleString('en')} hashes/s (${echoBytes} B gateway echo)\n`);
    micro = { planPerSec, hashPerSec, bodyBytes, echoHashPerSec, echoBytes };
    printTable(phases);
    if (firstProfile) printProfile('the first run', firstProfile);
    if (restartProfile) printProfile('the restart', restartProfile);
    if (fakesProfile) printProfile("the fakes' process in the first run", fakesProfile);
    if (stormProfile) printProfile('the storm', stormProfile);
    if (profile) printProfile('one extra steady run', profile);
  } finally {
    await app?.close();
    await svc?.close();
    await replicaSvc?.close();
    await floor?.close();
    await replicaFloor?.close();
    await redisCommands?.close();
    await Promise.allSettled([fakes.stop(), storm?.stop(), redis?.stop()]);
    await rm(dir, { recursive: true, force: true });
  }

  let cold: { json: ColdStartJson; targets: BenchTarget[] } | undefined;
  if (COLDSTART) {
    console.log('');
    cold = await coldStart();
  }

  if (N > BASELINE_N) baseline = await readBaseline();
  const targets = [...targetsOf(phases), ...(cold?.targets ?? [])];
  const checks = checksOf(phases);
  const skipped = [...(STORM ? [] : ['storm']), ...(COLDSTART ? [] : ['coldstart']), ...(REPLICAS_PHASE ? [] : ['replicas'])];
  console.log('');
  for (const t of targets) console.log(`${t.pass ? 'PASS' : 'FAIL'}  ${t.name}: ${t.value} (limit ${t.limit})`);
  for (const c of checks) console.log(`${c.pass ? 'PASS' : 'FAIL'}  check: ${c.name}: ${c.value} (${c.limit})`);
  if (skipped.length > 0) console.log(`(not measured: ${skipped.join(', ')}; their targets are not listed)`);
  if (!WRITE_FLOOR) console.log('(write floors not measured: the targets against them are not listed)');
  const failed = [...targets, ...checks].filter((t) => !t.pass).length;
  console.log(`\n${failed === 0 ? 'all targets met' : `${failed} target(s) or check(s) failed`}`);

  const json = {
    n: N,
    store: USE_REDIS ? 'redis' : 'memory',
    fullRuns: TICK ? 'tick' : 'run',
    transport: TRANSPORT,
    machine,
    settings: { settle: DEFAULT_RUN_SETTINGS.settle, concurrency: DEFAULT_RUN_SETTINGS.concurrency, pageSize: PAGE_SIZE, webhookRateLimit: 0, rssLimitMb: TARGET.rssMb },
    micro,
    floor: { floorMs: phases.steady.floorMs, runsMs: phases.steady.floorRunsMs, chosen: `median of ${STEADY_RUNS}, after one warm-up` },
    writeFloors,
    first: phases.first,
    steady: phases.steady,
    drift: phases.drift,
    restart: phases.restart,
    replicas: phases.replicas,
    storm: phases.storm,
    coldstart: cold?.json ?? { loadedKb: null, firstAnswerMs: null, importMs: null, firstCreateMs: null, functions: {}, result: null },
    profile,
    profileFirst: firstProfile,
    profileRestart: restartProfile,
    profileStorm: stormProfile,
    profileFakes: fakesProfile,
    skipped,
    targets,
    checks,
  };
  const line = JSON.stringify(json);
  console.log(`BENCH_JSON ${line}`);
  // the figures a larger run compares its memory with; a failure to keep them fails nothing
  await mkdir(RESULTS_DIR, { recursive: true })
    .then(() => writeFile(resultsFile(N), line))
    .catch((err: unknown) => console.log(`(figures not kept in ${RESULTS_DIR}: ${String(err)})`));
  return failed === 0 ? 0 : 1;
}

process.exitCode = await main();
