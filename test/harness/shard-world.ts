/**
 * The world of the sharded-run tests (test/integration/shards.test.ts, test/scale/shards.test.ts):
 * the fake API server and Tyk gateway, the SQS stand-in spoken to by the real AWS SDK, a Redis
 * store shared by every "container" (service) the test starts, an injected clock, and Lambda's
 * event source mapping. Everything started is closed in the test's teardown.
 * Helpers: seed/edit ApiDefinitions, count gateway writes per api_id, say which shard reported
 * which object, and a store after whose Nth record the invocation's time runs out.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { Redis } from 'ioredis';
import type { Test } from 'tap';
import type { KubeObject } from '../../lib/kube/types.js';
import { type Config, loadConfig } from '../../lib/platform/config.js';
import { type Logger, silentLogger } from '../../lib/platform/log.js';
import { createService, type Service, type ServiceParts } from '../../lib/service.js';
import { RedisStore } from '../../lib/store/redis.js';
import type { Store, SyncRecord } from '../../lib/store/types.js';
import { type ShardOutcome, shardBatch } from '../../lib/triggers/shards.js';
import { SqsShardQueue } from '../../lib/triggers/sqs.js';
import { type FakeKubeApiServer, startFakeKubeApiServer } from '../fakes/kube-apiserver.js';
import { type FakeSqs, startFakeSqs } from '../fakes/sqs.js';
import { type FakeTykGateway, startFakeTykGateway } from '../fakes/tyk-gateway.js';
import { DelegatingStore } from '../fixtures/delegating-store.js';
import { capturingLogger, type LogEntry } from './log.js';
import { startRedis, type TestRedis } from './redis.js';
import { EventSourceMapping, type SqsHandler, sqsClient } from './sqs-lambda.js';
import { OffsetClock } from './world.js';

export const TOKEN = 'shards-test-token-0123456789';
const SETTLE = { budgetMs: 3_000, initialDelayMs: 15, maxDelayMs: 200, reloadEveryMs: 150 };
/** serverless.yml's: six times the shard function's 300 s, and three deliveries before the dead-letter queue */
export const VISIBILITY_S = 1_800;
export const MAX_RECEIVES = 3;
const SDK_CLIENT = { region: 'us-east-1', credentials: { accessKeyId: 'test-key-id', secretAccessKey: 'test-secret' }, maxAttempts: 1 };

/** A store shared by invocations: an invocation's close() leaves it open (the world closes it). */
export class SharedStore extends DelegatingStore {
  override close(): Promise<void> {
    return Promise.resolve();
  }
}

/** The invocation's time runs out: after `after` records saved (a chunk of writes done), the clock jumps past any deadline. */
export class TimeRunsOut extends SharedStore {
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

export interface ShardWorld {
  /** the Redis the store is on (REDIS_URL for functions built from the environment) */
  redisUrl: string;
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

/**
 * For a test file: a Redis started before its tests (or REDIS_URL's) and stopped after them, and
 * the function that makes a world on it for a test.
 */
export function shardWorlds(file: Test): (t: Test, env?: Record<string, string>) => Promise<ShardWorld> {
  let server: TestRedis | undefined;
  file.before(async () => {
    server = await startRedis();
  });
  file.teardown(async () => {
    if (server?.owned) await server.stop();
  });
  return (t, env = {}) => shardWorld(t, (server as TestRedis).url, env);
}

async function shardWorld(t: Test, redisUrl: string, env: Record<string, string> = {}): Promise<ShardWorld> {
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
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  const store = new RedisStore({ redis: new Redis(redisUrl, { maxRetriesPerRequest: 1 }), prefix });
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
    redisUrl,
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
export function api(namespace: string, name: string, generation?: number): KubeObject {
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
export function seed(kube: FakeKubeApiServer, layout: readonly [string, number][]): string[] {
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
export function edit(kube: FakeKubeApiServer, keys: readonly string[], tag: string): void {
  for (const key of keys) {
    const [ns, name] = key.split('/') as [string, string];
    const current = kube.getObject('apidefinitions', ns, name) as KubeObject;
    const spec = { ...(current.spec ?? {}), proxy: { ...(current.spec?.proxy as object), target_url: `http://${name}.${ns}.svc:${tag}` } };
    kube.put({ ...current, metadata: { ...current.metadata, generation: (current.metadata.generation ?? 1) + 1 }, spec });
  }
}

/** Gateway writes (create, update, delete of APIs) per api_id since the last resetCalls. */
export function writesById(tyk: FakeTykGateway): Map<string, number> {
  const out = new Map<string, number>();
  for (const c of tyk.calls) {
    if (!/^\/tyk\/apis(\/[^/]+)?$/.test(c.path) || !['POST', 'PUT', 'DELETE'].includes(c.method)) continue;
    const id = c.method === 'POST' ? String((c.body as { api_id?: unknown } | undefined)?.api_id) : decodeURIComponent(c.path.split('/')[3] ?? '');
    out.set(id, (out.get(id) ?? 0) + 1);
  }
  return out;
}

export const deletes = (tyk: FakeTykGateway): number => tyk.count('DELETE', /^\/tyk\/apis\//);

/** "namespace/name" → the shards (by index) whose reports name it. */
export function reportedBy(outcomes: readonly ShardOutcome[]): Map<string, number[]> {
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
export function shardFunction(svc: Service, outcomes: ShardOutcome[]): SqsHandler {
  return (event, context) => shardBatch(svc, event, context.getRemainingTimeInMillis(), (o) => outcomes.push(o));
}
