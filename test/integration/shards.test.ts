/**
 * Sharded full runs (issue 13), end to end over real HTTP: the fake API server and Tyk gateway,
 * our real clients, Redis, and the SQS stand-in (test/fakes/sqs.ts) spoken to by the real AWS
 * SDK, with Lambda's event source mapping played by test/harness/sqs-lambda.ts.
 *
 * - 20,000 objects over 10 shards: every object synced exactly once per change (20,000 gateway
 *   writes on the first tick, none on the second, N for a change of N), no object in two shards,
 *   every object reported by exactly one; a shard whose invocation runs out of time mid-run is
 *   delivered again after the visibility timeout and converges without a repeated write or a
 *   deletion; a shard that fails every time, and a malformed message, end in the dead-letter queue.
 * - self-hosted: the shards run in the process, one report as a full run's;
 * - a small run is an ordinary full run: no message, no snapshot; the count includes namespaces
 *   with only records left (their deletions), and no unwatched namespace;
 * - without its snapshot a shard lists the gateway itself; a stale snapshot costs no write and
 *   deletes nothing; deletions happen on the API server's word only;
 * - the Lambda functions (functions/schedule.ts, functions/shard.ts) from their environment;
 * - POST /shards.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { Redis } from 'ioredis';
import t from 'tap';
import { handler as scheduleHandler } from '../../functions/schedule.js';
import { closeLambdaService } from '../../functions/service.js';
import { handler as shardHandler } from '../../functions/shard.js';
import { type Config, loadConfig } from '../../lib/config.js';
import type { KubeObject } from '../../lib/kube/types.js';
import { type Logger, silentLogger } from '../../lib/log.js';
import { describeShard, inPart, parseShardMessage, type Shard, shardMessage } from '../../lib/reconcile/shards.js';
import { snapshotKey } from '../../lib/reconcile/snapshot.js';
import type { RunReport } from '../../lib/reconcile/types.js';
import { buildApp } from '../../lib/server.js';
import { createService, type Service, type ServiceParts } from '../../lib/service.js';
import { RedisStore } from '../../lib/store/redis.js';
import type { Store, SyncRecord } from '../../lib/store/types.js';
import { scheduledRun, scheduledTick } from '../../lib/triggers/schedule.js';
import { type ShardOutcome, shardBatch } from '../../lib/triggers/shards.js';
import { SqsShardQueue } from '../../lib/triggers/sqs.js';
import { type FakeKubeApiServer, startFakeKubeApiServer } from '../fakes/kube-apiserver.js';
import { type FakeSqs, startFakeSqs } from '../fakes/sqs.js';
import { type FakeTykGateway, startFakeTykGateway } from '../fakes/tyk-gateway.js';
import { DelegatingStore } from '../fixtures/delegating-store.js';
import { capturingLogger, type LogEntry } from '../harness/log.js';
import { startRedis, type TestRedis } from '../harness/redis.js';
import { EventSourceMapping, type SqsHandler, sqsClient } from '../harness/sqs-lambda.js';
import { OffsetClock } from '../harness/world.js';

type Test = Parameters<Parameters<typeof t.test>[0]>[0];

const TOKEN = 'shards-test-token-0123456789';
const SETTLE = { budgetMs: 3_000, initialDelayMs: 15, maxDelayMs: 200, reloadEveryMs: 150 };
/** serverless.yml's: six times the shard function's 300 s, and three deliveries before the dead-letter queue */
const VISIBILITY_S = 1_800;
const MAX_RECEIVES = 3;
const SDK_CLIENT = { region: 'us-east-1', credentials: { accessKeyId: 'test-key-id', secretAccessKey: 'test-secret' }, maxAttempts: 1 };

// the 20,000-object test takes minutes on two shared cores: above tap's 120 s a file
t.setTimeout(2_400_000);

let redisServer: TestRedis | undefined;
t.before(async () => {
  redisServer = await startRedis();
});
t.teardown(async () => {
  if (redisServer?.owned) await redisServer.stop();
});

/** A store shared by invocations: an invocation's close() leaves it open (the world closes it). */
class SharedStore extends DelegatingStore {
  override close(): Promise<void> {
    return Promise.resolve();
  }
}

/** The invocation's time runs out: after `after` records saved (a chunk of writes done), the clock jumps past any deadline. */
class TimeRunsOut extends SharedStore {
  private saved = 0;
  constructor(
    inner: Store,
    private readonly clock: OffsetClock,
    private readonly after: number,
  ) {
    super(inner);
  }
  override async putRecord(record: SyncRecord): Promise<boolean> {
    const stored = await super.putRecord(record);
    if (++this.saved === this.after) this.clock.advance(10 * 60_000);
    return stored;
  }
}

interface ShardWorld {
  kube: FakeKubeApiServer;
  tyk: FakeTykGateway;
  sqs: FakeSqs;
  clock: OffsetClock;
  store: RedisStore;
  redis: Redis;
  prefix: string;
  config: Config;
  env: Record<string, string>;
  client: SQSClient;
  log: LogEntry[];
  /** a process or Lambda container: its own clients, the shared store and clock; closed with the world */
  service(parts?: Partial<ServiceParts>): Service;
  queue(): SqsShardQueue;
  mapping(handler: SqsHandler): EventSourceMapping;
}

async function shardWorld(t: Test, env: Record<string, string> = {}): Promise<ShardWorld> {
  const clock = new OffsetClock();
  const [kube, tyk, sqs] = await Promise.all([
    startFakeKubeApiServer(),
    startFakeTykGateway(),
    startFakeSqs({
      clock,
      queues: [
        { name: 'shards', visibilityTimeoutSeconds: VISIBILITY_S, redrive: { deadLetterQueue: 'shards-dlq', maxReceiveCount: MAX_RECEIVES } },
        { name: 'shards-dlq', visibilityTimeoutSeconds: 30 },
      ],
    }),
  ]);
  const dir = await mkdtemp(join(tmpdir(), 'gr-shards-'));
  const fullEnv = {
    KUBECONFIG: await kube.writeKubeconfig(dir),
    TYK_URL: tyk.url,
    TYK_AUTH: tyk.secret,
    WEBHOOK_TOKEN: TOKEN,
    RESYNC_TOKEN: TOKEN,
    SHARD_QUEUE_URL: sqs.queueUrl('shards'),
    ...env,
  };
  const config = loadConfig(fullEnv);
  const prefix = `test:shards:${Math.random().toString(36).slice(2)}:`;
  const redis = new Redis((redisServer as TestRedis).url, { maxRetriesPerRequest: 1 });
  const store = new RedisStore({ redis: new Redis((redisServer as TestRedis).url, { maxRetriesPerRequest: 1 }), prefix });
  const client = sqsClient(sqs);
  const services: Service[] = [];
  const log: LogEntry[] = [];
  const logger: Logger = capturingLogger(log);
  t.teardown(async () => {
    for (const s of services) await s.close();
    client.destroy();
    await store.close();
    redis.disconnect();
    await Promise.all([kube.close(), tyk.close(), sqs.close()]);
    await rm(dir, { recursive: true, force: true });
  });
  return {
    kube,
    tyk,
    sqs,
    clock,
    store,
    redis,
    prefix,
    config,
    env: fullEnv,
    client,
    log,
    service: (parts = {}) => {
      const svc = createService(config, fullEnv, { store: new SharedStore(store), clock, log: logger, settings: { settle: SETTLE }, ...parts });
      services.push(svc);
      return svc;
    },
    queue: () => new SqsShardQueue({ queueUrl: sqs.queueUrl('shards'), log: silentLogger, client: SDK_CLIENT }),
    mapping: (handler) => new EventSourceMapping({ client, queueUrl: sqs.queueUrl('shards'), queueArn: sqs.queueArn('shards'), handler }),
  };
}

/** A small ApiDefinition (the gateway echoes it in full). */
function api(namespace: string, name: string, generation?: number): KubeObject {
  return {
    apiVersion: 'tyk.tyk.io/v1alpha1',
    kind: 'ApiDefinition',
    metadata: { name, namespace, ...(generation !== undefined ? { generation } : {}) },
    spec: {
      name: `${namespace} ${name}`,
      use_keyless: true,
      protocol: 'http',
      active: true,
      proxy: { target_url: `http://${name}.${namespace}.svc:8080`, listen_path: `/${namespace}/${name}`, strip_listen_path: true },
    },
  };
}

/** Puts `count` ApiDefinitions in each namespace (api-00000, …); returns their "namespace/name". */
function seed(kube: FakeKubeApiServer, layout: readonly [string, number][]): string[] {
  const keys: string[] = [];
  for (const [ns, count] of layout) {
    for (let i = 0; i < count; i++) {
      const name = `api-${String(i).padStart(5, '0')}`;
      kube.put(api(ns, name));
      keys.push(`${ns}/${name}`);
    }
  }
  return keys;
}

/** Changes the spec of existing ApiDefinitions (a user's edit: the generation goes up). */
function edit(kube: FakeKubeApiServer, keys: readonly string[], tag: string): void {
  for (const key of keys) {
    const [ns, name] = key.split('/') as [string, string];
    const current = kube.getObject('apidefinitions', ns, name) as KubeObject;
    const spec = { ...(current.spec ?? {}), proxy: { ...(current.spec?.proxy as object), target_url: `http://${name}.${ns}.svc:${tag}` } };
    kube.put({ ...current, metadata: { ...current.metadata, generation: (current.metadata.generation ?? 1) + 1 }, spec });
  }
}

/** Gateway writes (create, update, delete of APIs) per api_id since the last resetCalls. */
function writesById(tyk: FakeTykGateway): Map<string, number> {
  const out = new Map<string, number>();
  for (const c of tyk.calls) {
    if (!/^\/tyk\/apis(\/[^/]+)?$/.test(c.path) || !['POST', 'PUT', 'DELETE'].includes(c.method)) continue;
    const id = c.method === 'POST' ? String((c.body as { api_id?: unknown } | undefined)?.api_id) : decodeURIComponent(c.path.split('/')[3] ?? '');
    out.set(id, (out.get(id) ?? 0) + 1);
  }
  return out;
}

const deletes = (tyk: FakeTykGateway): number => tyk.count('DELETE', /^\/tyk\/apis\//);

/** "namespace/name" → the shards (by index) whose reports name it. */
function reportedBy(outcomes: readonly ShardOutcome[]): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const o of outcomes) {
    if (!o.report || !o.shard) continue;
    for (const r of o.report.objects) {
      const key = `${r.namespace}/${r.name}`;
      out.set(key, [...(out.get(key) ?? []), o.shard.index]);
    }
  }
  return out;
}

/** A shard function container: its service, the handler over it, and every outcome it saw. */
function shardFunction(svc: Service, outcomes: ShardOutcome[]): SqsHandler {
  return (event, context) => shardBatch(svc, event, context.getRemainingTimeInMillis(), (o) => outcomes.push(o));
}

t.test('20,000 objects over 10 shards through the SQS stand-in', { timeout: 2_400_000 }, async (t) => {
  const started = Date.now();
  const w = await shardWorld(t);
  // 8,000 in one namespace (4 buckets by name) and 24 namespaces of 500 (6 shards of 4)
  const layout: [string, number][] = [['big', 8_000], ...Array.from({ length: 24 }, (_, i) => [`team-${String(i).padStart(2, '0')}`, 500] as [string, number])];
  const all = seed(w.kube, layout);
  t.equal(all.length, 20_000);
  const coordinator = w.service();
  const container = w.service();
  const lap = (what: string) => t.comment(`${what}: ${Math.round((Date.now() - started) / 1000)} s, RSS ${Math.round(process.memoryUsage().rss / 2 ** 20)} MB`);
  /** Says why shards failed, when some did (a failing assertion then has its cause next to it). */
  const why = (outcomes: readonly ShardOutcome[]) => {
    for (const o of outcomes) if (!o.ok) t.comment(`shard ${o.shard ? describeShard(o.shard) : '?'} failed: ${o.why}`);
  };
  /** Each tick starts with empty call logs (the fakes keep every call, bodies included). */
  const fresh = () => {
    w.tyk.resetCalls();
    w.kube.resetCalls();
  };

  // ── tick 1: everything is new ──
  let outcomes: ShardOutcome[] = [];
  const first = await scheduledTick(coordinator, { queue: w.queue() });
  t.match(first, { sharded: { shards: 10, objects: 20_000, queued: true } }, 'sent, not run');
  t.equal(first.report, undefined, 'the coordinator ran nothing');
  t.equal(w.tyk.writes(), 0);
  t.equal(w.tyk.count('GET', '/tyk/apis'), 1, 'the coordinator listed the gateway once');
  const messages = w.sqs.queue('shards');
  t.equal(messages.length, 10, 'one message per shard');
  const shards = messages.map((m) => parseShardMessage(m.body));
  t.same(shards.map((s) => describeShard(s)).sort(), [
    '1/10 (big, bucket 0 of 4)',
    '10/10 (team-20, team-21, team-22 and 1 more)',
    '2/10 (big, bucket 1 of 4)',
    '3/10 (big, bucket 2 of 4)',
    '4/10 (big, bucket 3 of 4)',
    '5/10 (team-00, team-01, team-02 and 1 more)',
    '6/10 (team-04, team-05, team-06 and 1 more)',
    '7/10 (team-08, team-09, team-10 and 1 more)',
    '8/10 (team-12, team-13, team-14 and 1 more)',
    '9/10 (team-16, team-17, team-18 and 1 more)',
  ]);
  t.ok(await w.store.getBlob(snapshotKey(first.sharded?.runId ?? '', 'default')), "the tick's snapshot of the gateway is in the store");
  fresh();
  const polls = await w.mapping(shardFunction(container, outcomes)).drain();
  lap('first tick');
  why(outcomes);
  t.equal(polls.length, 10, 'ten invocations');
  t.same(
    outcomes.filter((o) => !o.ok).map((o) => (o.ok ? '' : o.why)),
    [],
    'every shard done',
  );
  t.same(w.sqs.queue('shards'), [], 'every message deleted');
  t.equal(w.tyk.writes(), 20_000, '20,000 gateway writes');
  const byId = writesById(w.tyk);
  t.equal(byId.size, 20_000, 'to 20,000 APIs');
  t.ok(
    [...byId.values()].every((n) => n === 1),
    'each written once',
  );
  t.equal(w.tyk.count('GET', '/tyk/apis'), 0, 'no shard listed the gateway: each took the snapshot');
  t.equal(w.tyk.loaded('api').size, 20_000);
  let by = reportedBy(outcomes);
  t.equal(by.size, 20_000, 'complete: every object reported');
  t.same(
    [...by.entries()].filter(([, s]) => s.length !== 1),
    [],
    'no object in two shards',
  );
  t.same(
    all.filter((k) => !by.has(k)),
    [],
    'every object by some shard',
  );
  const misplaced = outcomes.flatMap((o) => (o.shard && o.report ? o.report.objects.filter((r) => !inPart((o.shard as Shard).part, r.namespace, r.name)) : []));
  t.same(misplaced, [], "each shard reported only its own part's objects");
  t.ok(
    outcomes.every((o) => o.report?.objects.every((r) => r.action === 'CREATE' && r.result === 'synced')),
    'all created and synced',
  );

  // ── tick 2: nothing changed ──
  outcomes = [];
  fresh();
  await scheduledTick(coordinator, { queue: w.queue() });
  await w.mapping(shardFunction(container, outcomes)).drain();
  lap('second tick');
  why(outcomes);
  t.equal(outcomes.length, 10);
  t.ok(
    outcomes.every((o) => o.ok),
    'every shard done',
  );
  t.equal(w.tyk.writes(), 0, 'steady state: no gateway write');
  t.equal(w.tyk.count('GET', /^\/tyk\/reload/), 0, 'no reload');
  t.equal(w.kube.count('PATCH'), 0, 'no status or finalizer patch');
  by = reportedBy(outcomes);
  t.equal(by.size, 20_000);
  t.ok(
    outcomes.every((o) => o.report?.objects.every((r) => r.result === 'unchanged')),
    'all unchanged',
  );
  t.equal(w.tyk.count('GET', '/tyk/apis'), 1, 'one gateway listing in the whole tick: the coordinator\u2019s');

  // ── tick 3: a change of 30 objects across shards ──
  const changed = [...all.filter((k) => k.startsWith('big/')).slice(0, 10), ...all.filter((k) => k.startsWith('team-03/')).slice(0, 10), ...all.filter((k) => k.startsWith('team-23/')).slice(0, 10)];
  edit(w.kube, changed, '8081');
  outcomes = [];
  fresh();
  await scheduledTick(coordinator, { queue: w.queue() });
  await w.mapping(shardFunction(container, outcomes)).drain();
  lap('third tick');
  why(outcomes);
  t.ok(
    outcomes.every((o) => o.ok),
    'every shard done',
  );
  t.equal(w.tyk.writes(), 30, '30 writes for 30 changes');
  t.equal(writesById(w.tyk).size, 30, 'one each');
  const updated = outcomes.flatMap((o) => o.report?.objects.filter((r) => r.action !== 'NOOP').map((r) => `${r.namespace}/${r.name}:${r.reason}:${r.result}`) ?? []);
  t.same(updated.sort(), changed.map((k) => `${k}:spec changed:synced`).sort());

  // ── tick 4: a shard's invocation runs out of time mid-run, and is delivered again ──
  const slow = [...all.filter((k) => k.startsWith('team-00/')), ...all.filter((k) => k.startsWith('team-01/')), ...all.filter((k) => k.startsWith('team-02/')).slice(0, 200)];
  edit(w.kube, slow, '8082');
  outcomes = [];
  fresh();
  const tick4 = await scheduledTick(coordinator, { queue: w.queue() });
  // the container that gets the team-00 shard first is slow: its time runs out after one chunk (500 writes, recorded)
  const slowContainer = w.service({ store: new TimeRunsOut(w.store, w.clock, 500) });
  let slowShard: Shard | undefined;
  const handler: SqsHandler = async (event, context) => {
    const shard = parseShardMessage(event.Records?.[0]?.body ?? '');
    if (slowShard === undefined && 'namespaces' in shard.part && shard.part.namespaces.includes('team-00')) {
      slowShard = shard;
      return shardFunction(slowContainer, outcomes)(event, context);
    }
    return shardFunction(container, outcomes)(event, context);
  };
  const firstRound = await w.mapping(handler).drain();
  why(outcomes);
  t.equal(firstRound.length, 10);
  const killed = outcomes.find((o) => !o.ok);
  t.match(killed, { ok: false, why: /700 objects not got to \(out of time\)/ }, 'the slow shard failed: 700 of its 1,200 changes not started');
  t.equal(killed?.shard?.index, slowShard?.index);
  t.equal(outcomes.filter((o) => !o.ok).length, 1, 'only that one');
  t.equal(w.tyk.writes(), 500, 'one chunk written before the time ran out');
  t.match(w.sqs.queue('shards'), [{ receiveCount: 1, inFlight: true }], 'its message stays, in flight');
  t.same(await w.mapping(handler).drain(), [], 'not delivered again before the visibility timeout');
  w.clock.advance(VISIBILITY_S * 1000);
  const redelivered: ShardOutcome[] = [];
  const secondRound = await w.mapping(shardFunction(container, redelivered)).drain();
  why(redelivered);
  t.equal(secondRound.length, 1, 'delivered again after the visibility timeout');
  t.match(redelivered, [{ ok: true }], 'and done');
  t.equal(redelivered[0]?.shard?.index, slowShard?.index);
  t.same(w.sqs.queue('shards'), []);
  const writes4 = writesById(w.tyk);
  t.equal(w.tyk.writes(), 1_200, '1,200 writes for 1,200 changes: none repeated');
  t.ok(
    [...writes4.values()].every((n) => n === 1),
    'each object written once over both deliveries',
  );
  t.equal(deletes(w.tyk), 0, 'nothing deleted');
  t.same(redelivered[0]?.report?.objects.filter((r) => r.action !== 'NOOP').length, 700, 'the second delivery wrote only what the first did not get to');
  // loaded() copies what the gateway holds: once
  const loaded = w.tyk.loaded('api');
  t.equal(loaded.size, 20_000);
  for (const key of slow) {
    const [ns, name] = key.split('/') as [string, string];
    const id = Buffer.from(`${ns}/${name}`).toString('base64url');
    const target = (loaded.get(id)?.proxy as { target_url?: string } | undefined)?.target_url;
    if (target !== `http://${name}.${ns}.svc:8082`) {
      t.fail(`${key} not converged: ${target}`);
      break;
    }
  }
  t.pass('converged: every changed object has its new spec on the gateway');
  t.ok(tick4.sharded?.queued);
  lap('fourth tick (a shard redelivered)');

  // ── tick 5: a shard that fails every time, and a malformed message, end in the dead-letter queue ──
  const fault = w.kube.inject({ method: 'GET', path: '/apis/tyk.tyk.io/v1alpha1/namespaces/team-05/apidefinitions', status: 500, times: Infinity });
  await w.client.send(new SendMessageCommand({ QueueUrl: w.sqs.queueUrl('shards'), MessageBody: '{"v":1,"runId":"tick","index":0,"count":1,"namespaces":["Not A Namespace"]}' }));
  outcomes = [];
  fresh();
  await scheduledTick(coordinator, { queue: w.queue() });
  for (let delivery = 1; delivery <= MAX_RECEIVES; delivery++) {
    await w.mapping(shardFunction(container, outcomes)).drain();
    w.clock.advance(VISIBILITY_S * 1000);
  }
  t.same(await w.mapping(shardFunction(container, outcomes)).drain(), [], 'nothing is delivered a fourth time');
  const dead = w.sqs.queue('shards-dlq');
  t.equal(dead.length, 2, 'two messages in the dead-letter queue');
  const deadShards = dead.map((m) => {
    try {
      return describeShard(parseShardMessage(m.body));
    } catch {
      return 'malformed';
    }
  });
  t.same(deadShards.sort(), ['6/10 (team-04, team-05, team-06 and 1 more)', 'malformed'].sort());
  const failures = outcomes.filter((o) => !o.ok);
  t.equal(failures.length, 2 * MAX_RECEIVES, 'each failed on every delivery');
  t.ok(
    failures.some((o) => !o.ok && /SHARD_MESSAGE_INVALID: shard message: namespaces must be/.test(o.why)),
    'the malformed one, with its reason',
  );
  t.ok(
    failures.some((o) => !o.ok && /run error: list apidefinitions in team-05/.test(o.why)),
    'the failing one, with its reason',
  );
  t.equal(outcomes.filter((o) => o.ok).length, 9, 'the other shards were done once each');
  t.equal(w.tyk.writes(), 0, 'nothing written');
  t.equal(deletes(w.tyk), 0, 'nothing deleted: the objects of the failing namespace are as they were');
  t.equal(w.tyk.loaded('api').size, 20_000);
  fault.cancel();
  lap('fifth tick (dead letters)');
});

t.test('self-hosted: above SHARD_SIZE, the shards run in the process, one report as a full run', async (t) => {
  const w = await shardWorld(t, { SHARD_SIZE: '100', SHARD_QUEUE_URL: '' });
  const all = seed(w.kube, [
    ['alpha', 250],
    ['beta', 60],
    ['gamma', 30],
  ]);
  const svc = w.service();
  t.equal(svc.shards.queueUrl, undefined);
  const report = await scheduledRun(svc);
  t.equal(report.objects.length, 340, 'every object in the one report');
  t.same(new Set(report.objects.map((o) => `${o.namespace}/${o.name}`)).size, 340, 'each once');
  t.same(report.counts, { synced: 340 });
  t.equal(report.errors.length, 0);
  t.equal(report.gateway.writes, 340);
  t.equal(w.tyk.writes(), 340);
  t.equal(w.sqs.count('SendMessageBatch'), 0, 'nothing sent to a queue');
  t.same(
    all.filter((k) => !report.objects.some((o) => `${o.namespace}/${o.name}` === k)),
    [],
  );
  const runs = w.log.filter((e) => e.msg === 'run finished');
  t.equal(runs.length, 4, 'four shards run: alpha in 3 buckets, beta and gamma packed in one');
  t.ok(
    w.log.some((e) => e.msg === 'sharded full run finished' && e.shards === 4),
    'one line for the tick',
  );
  w.tyk.resetCalls();
  const quiet = await scheduledRun(svc);
  t.same(quiet.counts, { unchanged: 340 }, 'the next tick: all unchanged');
  t.equal(w.tyk.writes(), 0);
});

t.test('the count: a namespace with only records left has a shard (its deletions happen); an unwatched one none', async (t) => {
  const w = await shardWorld(t, { SHARD_SIZE: '5', SHARD_QUEUE_URL: '', WATCH_NAMESPACE: 'a,gone' });
  seed(w.kube, [
    ['a', 6],
    ['gone', 3],
    ['other', 4],
  ]);
  const svc = w.service();
  const first = await scheduledRun(svc);
  t.same(first.counts, { synced: 9 }, 'the watched namespaces only');
  t.same([...new Set(first.objects.map((o) => o.namespace))].sort(), ['a', 'gone']);
  for (let i = 0; i < 3; i++) w.kube.remove('apidefinitions', 'gone', `api-0000${i}`);
  const plan = await svc.planTick();
  if (!plan.sharded) throw new Error('expected shards');
  t.equal(plan.objects, 9, "counted: 'gone' by its records");
  t.same(
    plan.shards.map((s) => s.part),
    [{ namespace: 'a', bucket: 0, buckets: 2 }, { namespace: 'a', bucket: 1, buckets: 2 }, { namespaces: ['gone'] }],
  );
  w.tyk.resetCalls();
  const second = await scheduledRun(svc);
  t.same(
    second.objects.filter((o) => o.action !== 'NOOP').map((o) => `${o.namespace}/${o.name}:${o.action}:${o.reason}:${o.result}`),
    ['gone/api-00000:DELETE:deleted in cluster:deleted', 'gone/api-00001:DELETE:deleted in cluster:deleted', 'gone/api-00002:DELETE:deleted in cluster:deleted'],
  );
  t.equal(deletes(w.tyk), 3);
  t.equal(w.tyk.loaded('api').size, 6);
});

t.test('up to SHARD_SIZE objects, a tick is an ordinary full run: no message, no snapshot', async (t) => {
  const w = await shardWorld(t);
  seed(w.kube, [
    ['default', 40],
    ['other', 10],
  ]);
  const svc = w.service();
  const plan = await svc.planTick();
  t.same(plan, { sharded: false, objects: 50, why: 'small' });
  const tick = await scheduledTick(svc, { queue: w.queue() });
  t.equal(tick.sharded, undefined, 'not sharded');
  t.match(tick.report, { trigger: 'schedule', counts: { synced: 50 } }, 'the full run itself');
  t.equal(w.sqs.count('SendMessageBatch'), 0, 'nothing sent');
  t.same(await w.redis.keys(`${w.prefix}blob:*`), [], 'no snapshot kept');
  const counting = w.kube.calls.filter((c) => c.method === 'GET' && /\/apidefinitions$/.test(c.path));
  t.ok(counting.length >= 2, 'counted, then listed');
});

t.test('a shard without its snapshot lists the gateway itself; a stale one costs no write; deletions only on the API server\u2019s word', async (t) => {
  const w = await shardWorld(t, { SHARD_SIZE: '50' });
  const all = seed(w.kube, [
    ['one', 60],
    ['two', 40],
  ]);
  const svc = w.service();
  const outcomes: ShardOutcome[] = [];
  await scheduledTick(svc, { queue: w.queue() });
  await w.mapping(shardFunction(svc, outcomes)).drain();
  t.equal(w.tyk.writes(), 100);
  t.ok(
    outcomes.every((o) => o.ok),
    'first tick done',
  );

  // the snapshot expires before the shards run: each lists the gateway, decides as a full run would
  const tick = await scheduledTick(svc, { queue: w.queue() });
  const runId = tick.sharded?.runId ?? '';
  t.equal(tick.sharded?.shards, 3);
  await w.redis.del(`${w.prefix}blob:${snapshotKey(runId, 'default')}`);
  w.tyk.resetCalls();
  outcomes.length = 0;
  await w.mapping(shardFunction(svc, outcomes)).drain();
  t.equal(outcomes.filter((o) => o.ok).length, 3);
  t.equal(w.tyk.count('GET', '/tyk/apis'), 3, 'each shard listed the gateway once');
  t.equal(w.tyk.writes(), 0, 'and found nothing to do');
  t.ok(
    w.log.some((e) => e.msg === 'no snapshot of this gateway: the shard lists it itself' && e.why === 'missing or expired'),
    'logged',
  );

  // a stale snapshot: an object it lacks (the gateway has it) is not written, not deleted
  const stale = await scheduledTick(svc, { queue: w.queue() });
  const key = `${w.prefix}blob:${snapshotKey(stale.sharded?.runId ?? '', 'default')}`;
  const snap = JSON.parse((await w.redis.get(key)) ?? '{}') as { kinds: { api: Record<string, unknown> } };
  const dropped = Object.keys(snap.kinds.api).slice(0, 5);
  for (const id of dropped) delete snap.kinds.api[id];
  // …and says another object's hash is other than it is (drift it cannot confirm)
  const [driftId] = Object.keys(snap.kinds.api);
  snap.kinds.api[driftId as string] = ['not-the-hash'];
  await w.redis.set(key, JSON.stringify(snap), 'PX', 60_000);
  // meanwhile in the cluster: one object deleted (finalizer: ours), one gone outright (our record stays)
  const [gone, deleting] = [all[0] as string, all[70] as string];
  w.kube.remove('apidefinitions', 'one', gone.split('/')[1] as string);
  w.kube.markDeleting('apidefinitions', 'two', deleting.split('/')[1] as string);
  w.tyk.resetCalls();
  outcomes.length = 0;
  await w.mapping(shardFunction(svc, outcomes)).drain();
  t.ok(
    outcomes.every((o) => o.ok),
    'done',
  );
  const acted = outcomes.flatMap((o) => o.report?.objects.filter((r) => r.action !== 'NOOP').map((r) => `${r.namespace}/${r.name}:${r.action}:${r.result}`) ?? []);
  t.same(acted.sort(), [`${gone}:DELETE:deleted`, `${deleting}:DELETE:deleted`].sort(), 'deleted: exactly the object deleted in the cluster and the one gone from it');
  t.equal(deletes(w.tyk), 2, 'two gateway deletions');
  t.equal(w.tyk.writes(), 2, 'and no other write: what the snapshot lacked, or said drifted, was read again under the lock and found unchanged');
  const loaded = w.tyk.loaded('api');
  t.equal(loaded.size, 98);
  for (const id of dropped) t.ok(loaded.has(id), `${id}: still on the gateway`);
});

t.test('POST /shards runs one shard: 200 done, 503 not done, 400 malformed, 401 without the token', async (t) => {
  const w = await shardWorld(t, { SHARD_SIZE: '10', SHARD_QUEUE_URL: '' });
  seed(w.kube, [
    ['a', 8],
    ['b', 8],
  ]);
  const svc = w.service();
  const app = buildApp(svc);
  t.teardown(() => app.close());
  const plan = await svc.planTick();
  if (!plan.sharded) throw new Error('expected shards');
  t.equal(plan.shards.length, 2);
  const post = (body: string, token = TOKEN) => app.inject({ method: 'POST', url: '/shards', payload: body, headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` } });
  const done = await post(shardMessage(plan.shards[0] as Shard));
  t.equal(done.statusCode, 200);
  t.match(done.json(), { trigger: 'schedule', counts: { synced: 8 } });
  t.equal((await post(shardMessage(plan.shards[0] as Shard), 'wrong-token-0123456789')).statusCode, 401);
  const bad = await post('{"v":1}');
  t.equal(bad.statusCode, 400);
  t.match(bad.json(), { code: 'SHARD_MESSAGE_INVALID', error: /runId/ });
  const fault = w.kube.inject({ method: 'GET', path: '/apis/tyk.tyk.io/v1alpha1/namespaces/b/apidefinitions', status: 500, times: Infinity });
  const notDone = await post(shardMessage(plan.shards[1] as Shard));
  t.equal(notDone.statusCode, 503);
  t.match(notDone.json(), { code: 'SHARD_INCOMPLETE', error: /run error: list apidefinitions in b/ });
  t.equal(notDone.headers['retry-after'], '60');
  fault.cancel();
  t.equal((await post(shardMessage(plan.shards[1] as Shard))).statusCode, 200, 'delivered again: done');
  t.equal(w.tyk.loaded('api').size, 16);
});

t.test('the Lambda functions from their environment: schedule sends the shards, shard runs them', async (t) => {
  const w = await shardWorld(t, { SHARD_SIZE: '5' });
  seed(w.kube, [
    ['x', 7],
    ['y', 4],
  ]);
  const saved = { ...process.env };
  const stdout = process.stdout.write;
  const emf: string[] = [];
  // EMF lines go to stdout: kept out of tap's stream
  process.stdout.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString();
    if (text.startsWith('{"_aws"')) {
      emf.push(text);
      return true;
    }
    return (stdout as (...a: unknown[]) => boolean).call(process.stdout, chunk, ...rest);
  }) as typeof process.stdout.write;
  t.teardown(async () => {
    await closeLambdaService();
    process.stdout.write = stdout;
    process.env = saved;
  });
  await closeLambdaService();
  Object.assign(process.env, w.env, {
    REDIS_URL: (redisServer as TestRedis).url,
    LOG_LEVEL: 'silent',
    AWS_ACCESS_KEY_ID: 'test-key-id',
    AWS_SECRET_ACCESS_KEY: 'test-secret',
    AWS_REGION: 'us-east-1',
    AWS_LAMBDA_FUNCTION_NAME: 'gateway-reconciler-test-shard',
  });
  const context = { getRemainingTimeInMillis: () => 299_000, awsRequestId: 'r-1' };
  const sent = await scheduleHandler({ time: '2026-11-21T10:05:00Z' }, context);
  t.match(sent, { sharded: { shards: 3, objects: 11, queued: true }, writes: 0, counts: {} }, 'the schedule sends three shards');
  t.equal(w.sqs.queue('shards').length, 3);
  const polls = await w.mapping((event, ctx) => shardHandler(event, ctx)).drain();
  t.same(
    polls.map((p) => p.failed),
    [[], [], []],
    'each shard done',
  );
  t.equal(w.tyk.loaded('api').size, 11, 'every API on the gateway');
  const malformed = await shardHandler({ Records: [{ messageId: 'm-1', body: 'nope', attributes: { ApproximateReceiveCount: '1' } }] }, context);
  t.same(malformed, { batchItemFailures: [{ itemIdentifier: 'm-1' }] }, 'a malformed message is reported failed');
  t.ok(emf.length > 0, 'the shard function writes its metrics as EMF');
});

t.test('shardBatch: each record on its own; a run that throws fails its record only', async (t) => {
  const w = await shardWorld(t, { SHARD_SIZE: '5' });
  seed(w.kube, [
    ['x', 7],
    ['y', 4],
  ]);
  const svc = w.service();
  const plan = await svc.planTick();
  if (!plan.sharded) throw new Error('expected shards');
  const records = plan.shards.map((s, i) => ({ messageId: `m-${i}`, body: shardMessage(s), attributes: { ApproximateReceiveCount: '1' } }));
  const outcomes: ShardOutcome[] = [];
  const out = await shardBatch(svc, { Records: [records[0] as (typeof records)[number], { messageId: 'bad', body: '[]' }, ...records.slice(1)] }, 299_000, (o) => outcomes.push(o));
  t.same(out, { batchItemFailures: [{ itemIdentifier: 'bad' }] });
  t.equal(outcomes.filter((o) => o.ok).length, 3);
  t.equal(w.tyk.loaded('api').size, 11);
  await svc.shutdown(1_000);
  const stopping = await shardBatch(svc, { Records: [records[0] as (typeof records)[number]] }, 299_000);
  t.same(stopping, { batchItemFailures: [{ itemIdentifier: 'm-0' }] }, 'a stopping process fails the shard (ShuttingDownError): delivered again elsewhere');
  t.same(await shardBatch(svc, {}, undefined), { batchItemFailures: [] }, 'an event without records: nothing to report');
  const report: RunReport | undefined = outcomes[0]?.report;
  t.ok(report && report.objects.length > 0);
});
