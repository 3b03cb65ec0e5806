/**
 * A whole world for integration and end-to-end tests: a Kubernetes API server (the loopback
 * fake, serving our CRDs from deploy/crds and pruning and validating as kube-apiserver does; or
 * in the real tier a real kube-apiserver: see ./cluster.ts), the Tyk gateway fakes, a real
 * Redis, and the service built from real parts (KubeConfig from a kubeconfig → our KubeClient;
 * our TykGatewayClient; RedisStore) behind the real fastify app, driven through `app.inject`.
 *
 * The test side changes the cluster with the real @kubernetes/client-node CustomObjectsApi,
 * over HTTP, as an admin, so the same steps work against a real API server; the service uses
 * its own token (in the real tier, with the RBAC from deploy/kubernetes).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import type { RunReport, RunSettings } from '../../lib/engine/run.js';
import { KubeClient } from '../../lib/kube/client.js';
import type { KubeObject } from '../../lib/kube/types.js';
import { PrometheusMetrics } from '../../lib/metrics/prometheus.js';
import type { Clock } from '../../lib/platform/clock.js';
import { loadConfig } from '../../lib/platform/config.js';
import type { HttpTransport, TransportFactory, TransportKind } from '../../lib/platform/http.js';
import { nodeTransports } from '../../lib/platform/http-node.js';
import { undiciTransports } from '../../lib/platform/http-undici.js';
import { type Logger, silentLogger } from '../../lib/platform/log.js';
import { buildApp } from '../../lib/server.js';
import { createService, loadKubeConfig, runConnections, type Service, secretsOf } from '../../lib/service.js';
import { RedisStore } from '../../lib/store/redis.js';
import type { FakeKubeApiServerOptions } from '../fakes/kube-apiserver.js';
import { type FakeTykDashboard, type FakeTykDashboardOptions, startFakeTykDashboard } from '../fakes/tyk-dashboard.js';
import { type FakeTykGateway, type FakeTykOptions, startFakeTykGateway } from '../fakes/tyk-gateway.js';
import { type Cluster, ensureNamespace, startCluster } from './cluster.js';
import { parseExposition, type Sample } from './prometheus.js';
import { startRedis, type TestRedis } from './redis.js';

export const WEBHOOK_TOKEN = 'test-webhook-token-0123456789';
export const RESYNC_TOKEN = 'test-resync-token-0123456789';
export const GROUP = { group: 'tyk.tyk.io', version: 'v1alpha1', plural: 'apidefinitions' };
const PLURALS: Record<string, string> = {
  ApiDefinition: 'apidefinitions',
  TykOasApiDefinition: 'tykoasapidefinitions',
  SecurityPolicy: 'securitypolicies',
  OperatorContext: 'operatorcontexts',
  SubGraph: 'subgraphs',
  SuperGraph: 'supergraphs',
  Ingress: 'ingresses',
  APIDescription: 'apidescriptions',
  PortalAPICatalogue: 'portalapicatalogues',
  PortalConfig: 'portalconfigs',
  ReferenceGrant: 'referencegrants',
  HTTPRoute: 'httproutes',
  Gateway: 'gateways',
};
/** Group and version of the plurals that are not tyk.tyk.io's (the test side creates them as kubectl would, over HTTP). */
const GROUPS: Record<string, { group: string; version: string }> = {
  ingresses: { group: 'networking.k8s.io', version: 'v1' },
  referencegrants: { group: 'gateway.networking.k8s.io', version: 'v1beta1' },
  httproutes: { group: 'gateway.networking.k8s.io', version: 'v1' },
  gateways: { group: 'gateway.networking.k8s.io', version: 'v1' },
};

/** The API group, version and plural a kind or plural is served under. */
function resourceOf(kindOrPlural: string): { group: string; version: string; plural: string } {
  const plural = pluralOf(kindOrPlural);
  return { ...(GROUPS[plural] ?? { group: GROUP.group, version: GROUP.version }), plural };
}
const KINDS: Record<string, string> = Object.fromEntries(Object.entries(PLURALS).map(([kind, plural]) => [plural, kind]));

/** The plural of a tyk.tyk.io kind or plural name. */
export function pluralOf(kindOrPlural: string): string {
  return PLURALS[kindOrPlural] ?? kindOrPlural;
}

/** Real time for sleeping, with a movable "now": backoff and retry times without waiting. */
export class OffsetClock implements Clock {
  private offset = 0;
  now(): number {
    return Date.now() + this.offset;
  }
  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, ms));
  }
  advance(ms: number): void {
    this.offset += ms;
  }
}

export interface WorldOptions {
  env?: Record<string, string>;
  /** the default gateway: a Tyk Gateway fake (ce, default) or a Tyk Dashboard fake (pro) */
  mode?: 'ce' | 'pro';
  tyk?: FakeTykOptions;
  /** the API server fake's options (by default it serves our CRDs, deploy/crds); the real tier ignores them */
  kube?: FakeKubeApiServerOptions;
  /** the Dashboard fake's options (pro mode) */
  dashboard?: FakeTykDashboardOptions;
  settings?: Partial<RunSettings>;
  /** where the service logs; default nowhere (see `capturingLogger`) */
  log?: Logger;
  /** items per list page the service's API-server client asks for (default: the client's) */
  kubePageSize?: number;
  /** the service's HTTP transport (lib/platform/http.ts): Node's own (default, as the webhook functions) or undici's (as full runs) */
  transport?: TransportKind;
}

export { capturingLogger, type LogEntry } from './log.js';

export interface Response<T = unknown> {
  statusCode: number;
  body: T;
}

/** A core/v1 Event as the fake API server stores it. */
export interface StoredEvent extends KubeObject {
  involvedObject: { apiVersion: string; kind: string; name: string; namespace: string; uid?: string; resourceVersion?: string };
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
  count: number;
  firstTimestamp: string;
  lastTimestamp: string;
  source: { component: string; host?: string };
  reportingComponent: string;
  reportingInstance: string;
}

export class World {
  readonly api: CustomObjectsApi;
  /** the service as a process holds it; `restartService` replaces it (and the app) with a new one */
  svc: Service;
  app: FastifyInstance;
  private readonly retired: Service[] = [];
  /** what every key of `store` starts with (set by startWorld) */
  storePrefix = '';
  /** the requests the services sent through their HTTP transport (WorldOptions.transport), by its kind */
  transportRequests: Record<TransportKind, number> = { node: 0, undici: 0 };

  constructor(
    readonly clock: OffsetClock,
    readonly kube: Cluster,
    readonly tyk: FakeTykGateway,
    readonly dashboard: FakeTykDashboard | undefined,
    readonly redis: TestRedis,
    /** the service's record and lock store (the same across `restartService`) */
    readonly store: RedisStore,
    svc: Service,
    app: FastifyInstance,
    readonly kubeconfigPath: string,
    adminKubeconfigPath: string,
    private readonly newService: () => Service,
    private readonly cleanup: () => Promise<void>,
  ) {
    this.svc = svc;
    this.app = app;
    const kc = new KubeConfig();
    kc.loadFromFile(adminKubeconfigPath);
    this.api = kc.makeApiClient(CustomObjectsApi);
  }

  /**
   * A new process in place of the current one (a pod restart, another replica, a Lambda cold
   * start): new clients with nothing remembered in memory, the same Redis and settings.
   */
  async restartService(): Promise<void> {
    await this.app.close();
    this.retired.push(this.svc);
    this.svc = this.newService();
    this.app = buildApp(this.svc);
  }

  /**
   * Another invocation beside the current one (a second Lambda container, another replica):
   * its own clients and memory, the same Redis and settings. Closed with the world.
   */
  anotherInvocation(): Service {
    const svc = this.newService();
    this.retired.push(svc);
    return svc;
  }

  // ── the cluster, as a user changes it ──

  /** Creates a tyk.tyk.io object (any kind) or an Ingress as kubectl would; a Secret or ConfigMap is put as an admin. */
  async create(obj: KubeObject): Promise<KubeObject> {
    const namespace = obj.metadata.namespace ?? 'default';
    await ensureNamespace(this.kube, namespace);
    if (obj.kind === 'Secret' || obj.kind === 'ConfigMap') return this.kube.put({ ...obj, metadata: { ...obj.metadata, namespace } });
    return (await this.api.createNamespacedCustomObject({ ...resourceOf(obj.kind), namespace, body: { ...obj, metadata: { ...obj.metadata, namespace } } })) as KubeObject;
  }

  async get(name: string, namespace = 'default', kind = 'apidefinitions'): Promise<KubeObject | undefined> {
    return this.kube.getObject(pluralOf(kind), namespace, name);
  }

  /** Replaces the spec (read-modify-write with resourceVersion, as kubectl does). */
  async updateSpec(name: string, change: (spec: Record<string, unknown>) => Record<string, unknown>, namespace = 'default', kind = 'apidefinitions'): Promise<KubeObject> {
    return this.update(name, (obj) => ({ ...obj, spec: change(structuredClone(obj.spec ?? {})) }), namespace, kind);
  }

  /** Replaces the whole object (metadata too: labels, annotations), read-modify-write with resourceVersion, as `kubectl edit`. */
  async update(name: string, change: (obj: KubeObject) => KubeObject, namespace = 'default', kind = 'apidefinitions'): Promise<KubeObject> {
    const resource = resourceOf(kind);
    const current = (await this.api.getNamespacedCustomObject({ ...resource, namespace, name })) as KubeObject;
    const body = change(structuredClone(current));
    return (await this.api.replaceNamespacedCustomObject({ ...resource, namespace, name, body })) as KubeObject;
  }

  async delete(name: string, namespace = 'default', kind = 'apidefinitions'): Promise<void> {
    await this.api.deleteNamespacedCustomObject({ ...resourceOf(kind), namespace, name });
  }

  // ── the triggers, through HTTP ──

  async inject<T = unknown>(method: 'GET' | 'POST', url: string, payload?: string, headers: Record<string, string> = {}): Promise<Response<T>> {
    const res = await this.app.inject({ method, url, payload, headers: { 'content-type': 'application/json', ...headers } });
    return { statusCode: res.statusCode, body: res.body === '' ? (undefined as T) : (res.json() as T) };
  }

  /** POST /webhooks/watch with the given events (objects, or a preformatted body). */
  async watch(events: unknown, token = WEBHOOK_TOKEN): Promise<Response<{ accepted: number; report: RunReport | null }>> {
    const body = typeof events === 'string' ? events : JSON.stringify(events);
    return this.inject('POST', '/webhooks/watch', body, { authorization: `Bearer ${token}` });
  }

  /** A watch event for the object as it now is in the cluster. */
  async announce(type: 'ADDED' | 'MODIFIED' | 'DELETED', name: string, namespace = 'default'): Promise<RunReport> {
    const object = (await this.get(name, namespace)) ?? { apiVersion: 'tyk.tyk.io/v1alpha1', kind: 'ApiDefinition', metadata: { name, namespace } };
    const res = await this.watch({ type, object });
    if (res.statusCode !== 200 || !res.body.report) throw new Error(`watch webhook answered ${res.statusCode}: ${JSON.stringify(res.body)}`);
    return res.body.report;
  }

  async audit(eventList: unknown, token = WEBHOOK_TOKEN): Promise<Response<{ accepted: number; report: RunReport | null }>> {
    return this.inject('POST', '/webhooks/audit', JSON.stringify(eventList), { authorization: `Bearer ${token}` });
  }

  async resync(params: Record<string, unknown> = {}, token = RESYNC_TOKEN): Promise<Response<RunReport>> {
    return this.inject('POST', '/resync', JSON.stringify(params), { authorization: `Bearer ${token}` });
  }

  /** GET /metrics as Prometheus scrapes it: the status, the text, and its samples. */
  async scrape(token?: string): Promise<{ statusCode: number; contentType: string; text: string; samples: Sample[] }> {
    const res = await this.app.inject({ method: 'GET', url: '/metrics', headers: token === undefined ? {} : { authorization: `Bearer ${token}` } });
    const contentType = String(res.headers['content-type'] ?? '');
    return { statusCode: res.statusCode, contentType, text: res.body, samples: res.statusCode === 200 ? parseExposition(res.body) : [] };
  }

  /** One scheduled run, as node-cron or EventBridge would start it. */
  tick(): Promise<RunReport> {
    return this.svc.run({ trigger: 'schedule', scope: { all: true } });
  }

  // ── assertions' helpers ──

  gatewayApi(id: string): Record<string, unknown> | undefined {
    return this.tyk.loaded('api').get(id) as Record<string, unknown> | undefined;
  }

  /** A Tyk OAS API as the gateway's GET answers it (its document). */
  gatewayOas(id: string): Record<string, unknown> | undefined {
    return this.tyk.loaded('oas').get(id) as Record<string, unknown> | undefined;
  }

  statusPatches(): number {
    return this.kube.count('PATCH', /\/status$/);
  }

  /** The Events about an object, as `kubectl describe` shows them (kind: ApiDefinition, SecurityPolicy or a plural). */
  async events(name: string, namespace = 'default', kind = 'ApiDefinition'): Promise<StoredEvent[]> {
    const want = KINDS[kind] ?? kind;
    return ((await this.kube.listObjects('events', namespace)) as unknown as StoredEvent[]).filter(
      (e) => e.involvedObject.kind === want && e.involvedObject.name === name && e.involvedObject.namespace === namespace,
    );
  }

  /** Every Event in every namespace. */
  async allEvents(): Promise<StoredEvent[]> {
    return (await this.kube.listObjects('events')) as unknown as StoredEvent[];
  }

  /** Event writes since the last resetCounts: creates (POST) and count bumps (PATCH). */
  eventWrites(): { creates: number; patches: number } {
    return { creates: this.kube.count('POST', /\/events$/), patches: this.kube.count('PATCH', /\/events\/[^/]+$/) };
  }

  resetCounts(): void {
    this.kube.resetCalls();
    this.tyk.resetCalls();
  }

  /** Every key of the service's store (records, owners, locks) removed, as a flushed or replaced Redis leaves it. */
  async flushStore(): Promise<void> {
    const raw = new Redis(this.redis.url, { maxRetriesPerRequest: 1 });
    try {
      let cursor = '0';
      do {
        const [next, keys] = await raw.scan(cursor, 'MATCH', `${this.storePrefix}*`, 'COUNT', 1000);
        if (keys.length > 0) await raw.del(...keys);
        cursor = next;
      } while (cursor !== '0');
    } finally {
      raw.disconnect();
    }
  }

  async close(): Promise<void> {
    await this.app.close();
    for (const svc of [...this.retired, this.svc]) await svc.close();
    await this.cleanup();
  }
}

/** A World for one tap test, closed when the test ends. */
export async function worldFor(t: { teardown(fn: () => unknown): void }, options?: WorldOptions): Promise<World> {
  const w = await startWorld(options);
  t.teardown(() => w.close());
  return w;
}

/** One object's entry in a run report; throws (naming what was reported) when it has none. */
export function reported(report: RunReport, name: string, kind = 'ApiDefinition'): RunReport['objects'][number] {
  const o = report.objects.find((x) => x.name === name && x.kind === kind);
  if (!o) throw new Error(`no report for ${kind} ${name}: ${JSON.stringify(report.objects)}`);
  return o;
}

export async function startWorld(options: WorldOptions = {}): Promise<World> {
  const [kube, tyk, redis] = await Promise.all([startCluster(options.kube), startFakeTykGateway(options.tyk), startRedis()]);
  const dashboard = options.mode === 'pro' ? await startFakeTykDashboard(options.dashboard) : undefined;
  const dir = await mkdtemp(join(tmpdir(), 'gr-world-'));
  const kubeconfigPath = await kube.writeKubeconfig(dir);
  const adminKubeconfigPath = await kube.adminKubeconfig(dir);
  const gateway = dashboard ? { TYK_MODE: 'pro', TYK_URL: dashboard.url, TYK_AUTH: dashboard.secret, TYK_ORG: dashboard.orgId } : { TYK_URL: tyk.url, TYK_AUTH: tyk.secret };
  const env = {
    KUBECONFIG: kubeconfigPath,
    ...gateway,
    WEBHOOK_TOKEN,
    RESYNC_TOKEN,
    // the tests read each delivery's run report in its answer; WEBHOOK_ANSWER=accepted has tests of its own
    WEBHOOK_ANSWER: 'report',
    // the fakes of further gateways (OperatorContexts) listen on loopback: the administrator's explicit choice
    CONTEXT_URL_ALLOW: '127.0.0.1',
    ...options.env,
  };
  const config = loadConfig(env);
  const client = new Redis(redis.url, { maxRetriesPerRequest: 1 });
  const storePrefix = `test:${Math.random().toString(36).slice(2)}:`;
  const store = new RedisStore({ redis: client, prefix: storePrefix });
  const clock = new OffsetClock();
  // one registry per world, shared by its services, as one process's /metrics
  const metrics = new PrometheusMetrics({ defaultMetrics: false });
  const chosen: TransportFactory = options.transport === 'undici' ? undiciTransports({ connections: runConnections(options.settings) }) : nodeTransports();
  const transportRequests: Record<TransportKind, number> = { node: 0, undici: 0 };
  const transport: TransportFactory = (tls) => counting(chosen(tls), transportRequests);
  const kubeClient = (pageSize: number) => {
    const client = new KubeClient(loadKubeConfig(config, env), { pageSize, timeoutMs: config.httpTimeoutMs, now: () => clock.now(), secrets: secretsOf(config), transport });
    return { kube: client, closers: [() => client.close()] };
  };
  const newService = () =>
    createService(config, env, {
      ...(options.kubePageSize === undefined ? {} : kubeClient(options.kubePageSize)),
      store,
      clock,
      metrics,
      log: options.log ?? silentLogger,
      transport,
      settings: { settle: { budgetMs: 3_000, initialDelayMs: 15, maxDelayMs: 200, reloadEveryMs: 150 }, ...options.settings },
    });
  const svc = newService();
  const app = buildApp(svc);
  const world = new World(clock, kube, tyk, dashboard, redis, store, svc, app, kubeconfigPath, adminKubeconfigPath, newService, async () => {
    await Promise.allSettled([kube.close(), tyk.close(), dashboard?.close(), redis.owned ? redis.stop() : Promise.resolve()]);
    await rm(dir, { recursive: true, force: true });
  });
  world.storePrefix = storePrefix;
  world.transportRequests = transportRequests;
  return world;
}

/** A transport that counts the requests sent through it, by its kind (World.transportRequests). */
function counting(transport: HttpTransport, counts: Record<TransportKind, number>): HttpTransport {
  return {
    kind: transport.kind,
    get closed() {
      return transport.closed;
    },
    request: (req) => {
      counts[transport.kind] += 1;
      return transport.request(req);
    },
    close: () => transport.close(),
  };
}
