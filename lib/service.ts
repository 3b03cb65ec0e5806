/**
 * The service: everything a trigger needs, built once per process from the Config and
 * shared by the HTTP server, the schedule and the Lambda handlers.
 *
 * `createService` builds real clients (KubeConfig from KUBECONFIG or the in-cluster service
 * account, the Tyk gateway client — with TYK_GATEWAY_SERVICE a ReplicaGateway over one client per
 * ready endpoint of the gateway's Service —, Redis or the in-process store) and, unless given one, the
 * logger of ./log-lines.ts (JSON lines on stdout; the self-hosted server passes pino's, which
 * writes the same lines). Tests and embedders pass already-built parts through `parts` instead.
 * `parts.transport` is the HTTP transport every client it builds (API server, gateways,
 * Dashboards, replicas) sends through (lib/platform/http.ts): Node's own by default (the webhook
 * functions, whose bundles must stay small); the self-hosted server and the full-run functions
 * pass undici's pooled client, sized by `runConnections`. Throws ConfigError when no kubeconfig
 * can be found.
 */
import { KubeConfig } from '@kubernetes/client-node';
import { DEFAULT_RUN_SETTINGS, type RunDeps, type RunReport, type RunRequest, type RunSettings, runReconcile } from './engine/run.js';
import type { RunScope, Trigger } from './engine/types.js';
import { resolveDependents } from './events/dependents.js';
import { RateLimiter } from './events/rate-limit.js';
import type { EventItem } from './events/refs.js';
import type { ConnectionSettings } from './gateway/connection.js';
import type { GatewayService } from './gateway/endpoint-slices.js';
import { lazyGateway } from './gateway/lazy.js';
import { type ConnectOptions, DEFAULT_TARGET, type GatewayFactory, type GatewayTarget, GatewayTargets } from './gateway/targets.js';
import type { GatewayObserver } from './gateway/transport.js';
import { TykGatewayClient } from './gateway/tyk-ce.js';
import type { Gateway } from './gateway/types.js';
import type { Resolve, UrlPolicy } from './gateway/url-policy.js';
import { API_DEFINITION } from './kinds/api-definition/kind.js';
import { REGISTRY } from './kinds/registry.js';
import { KubeClient } from './kube/client.js';
import type { Overlaid } from './kube/overlay.js';
import { ReferenceGrants } from './kube/reference-grants.js';
import type { KubeApi } from './kube/types.js';
import { discardMetrics, type Figure, type MetricsSink } from './metrics/catalogue.js';
import { gatewayCallFigures, requestFigures, runFigures } from './metrics/figures.js';
import { type Clock, systemClock } from './platform/clock.js';
import type { Config } from './platform/config.js';
import { ConfigError, describeError, ShuttingDownError } from './platform/errors.js';
import { DEFAULT_CONNECTIONS, type TransportFactory } from './platform/http.js';
import { nodeTransports } from './platform/http-node.js';
import type { Logger } from './platform/log.js';
import { createLineLogger } from './platform/log-lines.js';
import { SharedCheck } from './platform/shared-check.js';
import type { TickPlan } from './scale/coordinate.js';
import { ListSizes } from './scale/list-sizes.js';
import { ObservedMemo } from './scale/observed-memo.js';
import type { Shard } from './scale/shards.js';
import { SNAPSHOT_TTL_MS } from './scale/shards.js';
import { MemoryStore } from './store/memory.js';
import { createRedisStore } from './store/redis.js';
import { redisPasswords } from './store/redis-url.js';
import type { Store } from './store/types.js';
import type { Coalescer } from './triggers/coalesce.js';

export interface ServiceParts {
  kube: KubeApi;
  /** the default gateway (TYK_*); OperatorContexts add others through `factory` */
  gateway: Gateway;
  /** builds the client for a connection; default: Tyk Gateway (ce) or Tyk Dashboard (pro) clients */
  factory: GatewayFactory;
  store: Store;
  clock: Clock;
  log: Logger;
  settings: Partial<RunSettings>;
  /** where run, request and gateway figures go: Prometheus self-hosted, EMF on Lambda; default: dropped */
  metrics: MetricsSink;
  /** called by close(), for parts the service built itself */
  closers: (() => Promise<void>)[];
  /** how an OperatorContext's host is resolved for CONTEXT_URL_ALLOW's checks; default the system resolver */
  resolve?: Resolve;
  /** the HTTP transport of the clients createService builds (see the header); default Node's own */
  transport?: TransportFactory;
}

export interface ReadinessCheck {
  ok: boolean;
  checks: Record<string, { ok: boolean; error?: string }>;
}

/** What a request to a route must present: a bearer token of `tokens` and, when asked, a verified client certificate. */
export interface RouteAccess {
  tokens: readonly string[];
  /** no token configured and ALLOW_UNAUTHENTICATED=true: anyone may call */
  allowUnauthenticated: boolean;
  /** TLS_CLIENT_CA is set */
  clientCertRequired: boolean;
}

/** How old a readiness check /readyz answers from may be: at most one check of each dependency per this, whatever the request rate. */
export const READINESS_MAX_AGE_MS = 5_000;

/** How long a delivery id (auditID, CloudEvent source and id) is remembered, to drop a delivery the sender repeats. */
const DELIVERY_MEMORY_MS = 60 * 60_000;

/**
 * The service's public surface is its methods; its parts (clients, store, clock) and the
 * Config stay inside, so triggers depend on what the service does, not on how it is built.
 */
export class Service {
  private readonly settings: RunSettings;
  private readonly rateLimiter: RateLimiter;
  private readonly targets: GatewayTargets;
  /** CONTEXT_URL_ALLOW's checks, loaded with the first OperatorContext resolved */
  private urls?: Promise<UrlPolicy>;
  private username?: Promise<string | undefined>;
  /** set by shutdown(): runs in flight see it through RunDeps.stop */
  private readonly stop: { deadline: number | undefined } = { deadline: undefined };
  private readonly inFlight = new Set<Promise<unknown>>();
  /** what the gateways' lists returned in this process: a hint for GETs over a LIST (list-sizes.ts) */
  private readonly listSizes = new ListSizes();
  private readonly observedMemo = new ObservedMemo();
  private readonly listHandover = new Map<string, string>();
  /** the webhooks' work queue, loaded with the first coalesced run (the admission function never has one) */
  private coalescer?: Promise<Coalescer>;
  private readonly readinessCheck: SharedCheck<ReadinessCheck>;

  constructor(
    private readonly config: Config,
    private readonly parts: ServiceParts,
  ) {
    // a write slot outlives one write's timeout, so a slot is never freed under a write still in flight
    const gatewayWrites = { ...DEFAULT_RUN_SETTINGS.gatewayWrites, max: config.gatewayMaxConcurrentWrites, slotTtlMs: 2 * config.httpTimeoutMs + 5_000 };
    this.settings = {
      ...DEFAULT_RUN_SETTINGS,
      maxDeletesPerRun: config.maxDeletesPerRun,
      gatewayWrites,
      kindSettings: { ingress: config.ingress, gatewayApi: config.gatewayApi },
      adoptNamespaces: config.adoptNamespaces,
      ...parts.settings,
      namespaces: config.watchNamespaces,
    };
    const defaultTarget: GatewayTarget = { name: DEFAULT_TARGET, gateway: parts.gateway, mode: config.tyk.mode, ...(config.tyk.org ? { orgId: config.tyk.org } : {}) };
    const { crossNamespaceRefs, contextUrlAllow } = config.boundaries;
    this.targets = new GatewayTargets(defaultTarget, parts.kube, parts.factory, {
      grants: new ReferenceGrants(parts.kube, crossNamespaceRefs, parts.log),
      urls: () => (this.urls ??= import('./gateway/url-policy.js').then((m) => new m.UrlPolicy(contextUrlAllow, parts.resolve))),
    });
    this.rateLimiter = new RateLimiter(config.webhook.rateLimitPerMinute, parts.clock);
    this.readinessCheck = new SharedCheck(parts.clock, READINESS_MAX_AGE_MS, () => this.checkReadiness());
  }

  get log(): Logger {
    return this.parts.log;
  }

  /** The service's clock (epoch ms): run deadlines are on it. */
  now(): number {
    return this.parts.clock.now();
  }

  /** Where records and locks are kept: `redis`, or `memory` (this process only). */
  get storeKind(): Store['kind'] {
    return this.parts.store.kind;
  }

  /** WEBHOOK_BODY_LIMIT and WEBHOOK_MAX_REFS. */
  get webhookLimits(): { readonly bodyLimit: number; readonly maxRefs: number } {
    const { bodyLimit, maxRefs } = this.config.webhook;
    return { bodyLimit, maxRefs };
  }

  /** TYK_GATEWAY_SERVICE: the Service whose EndpointSlices are the default gateway's replicas (their events make a full run); undefined when unset. */
  get gatewayService(): GatewayService | undefined {
    return this.config.tyk.mode === 'ce' ? this.config.tyk.service : undefined;
  }

  /** WEBHOOK_ANSWER: whether a webhook answers with its run's report, or 202 once the objects are taken. */
  get webhookAnswer(): Config['webhook']['answer'] {
    return this.config.webhook.answer;
  }

  /**
   * A webhook's run over `scope`, coalesced (lib/triggers/coalesce.ts): started at once when no
   * run of this trigger is in flight in this process, else folded with the others asked meanwhile
   * into the next one. Resolves with the report of the run that covered the scope; rejects as
   * run() does (ShuttingDownError once shutdown() was called).
   */
  runCoalesced(trigger: Trigger, scope: RunScope): Promise<RunReport> {
    if (this.stopping) return Promise.reject(new ShuttingDownError());
    this.coalescer ??= import('./triggers/coalesce.js').then(({ Coalescer }) => new Coalescer((t, s) => this.runEvents(t, s)));
    return this.coalescer.then((queue) => queue.submit(trigger, scope));
  }

  /** The credentials the webhooks (WEBHOOK_TOKEN) or /resync (RESYNC_TOKEN) require. */
  access(route: 'webhook' | 'resync' | 'metrics' | 'admission'): RouteAccess {
    const { config } = this;
    // /metrics is open like the probes unless METRICS_TOKEN is set; scrapers present no client certificate
    if (route === 'metrics') return { tokens: config.metricsTokens, allowUnauthenticated: true, clientCertRequired: false };
    // /admission writes nothing: open unless ADMISSION_TOKEN or ADMISSION_CLIENT_CERT asks for more
    if (route === 'admission') return { tokens: config.admission.tokens, allowUnauthenticated: true, clientCertRequired: config.admission.clientCert };
    return {
      tokens: route === 'webhook' ? config.webhookTokens : config.resyncTokens,
      allowUnauthenticated: config.allowUnauthenticated,
      clientCertRequired: config.tls?.clientCaFile !== undefined,
    };
  }

  /** Counts a webhook request from `source`: 0 when WEBHOOK_RATE_LIMIT allows it, else the ms to wait. */
  rateLimitWait(source: string): number {
    return this.rateLimiter.take(source);
  }

  /** Events about Secrets → the objects whose records use them (lib/events/dependents.ts); other events as given. */
  dependents(items: readonly EventItem[]): Promise<EventItem[]> {
    return resolveDependents(this.parts.store, items);
  }

  /**
   * Marks delivery ids as handled (for DELIVERY_MEMORY_MS) and returns those that were marked
   * already: of two concurrent deliveries of one id, exactly one finds it new.
   */
  async markDelivered(ids: readonly string[]): Promise<ReadonlySet<string>> {
    if (ids.length === 0) return new Set();
    const fresh = await this.parts.store.markSeen(ids, DELIVERY_MEMORY_MS);
    return new Set(ids.filter((_, i) => !fresh[i]));
  }

  /**
   * Our own user name as the API server sees it, to ignore audit events of our own writes:
   * RECONCILER_USERNAME, else asked once from the API server (SelfSubjectReview). Undefined
   * when neither is known; a failed question is asked again next time.
   */
  ownUsername(): Promise<string | undefined> {
    if (this.config.reconcilerUsername !== undefined) return Promise.resolve(this.config.reconcilerUsername);
    this.username ??= this.parts.kube.whoAmI().catch((err: unknown) => {
      this.log.warn({ err: describeError(err) }, 'could not learn our own user name; set RECONCILER_USERNAME');
      this.username = undefined;
      return undefined;
    });
    return this.username;
  }

  /** SHARD_SIZE (objects per shard of a full run) and SHARD_QUEUE_URL (where shards go; absent: this process runs them). */
  get shards(): { readonly size: number; readonly queueUrl?: string } {
    return this.config.shards;
  }

  /**
   * A scheduled tick's first step (lib/scale/coordinate.ts): counts what a full run would
   * look at and, above SHARD_SIZE, snapshots the gateways and returns the tick's shards.
   * Throws ShuttingDownError once shutdown() was called, StoreUnavailableError.
   */
  async planTick(): Promise<TickPlan> {
    if (this.stopping) throw new ShuttingDownError();
    // loaded on the first tick: the webhook functions' bundles keep it out of what they load at start
    const { planTick } = await import('./scale/coordinate.js');
    return planTick(this.runDeps(), this.config.shards.size);
  }

  /**
   * A dry run that sees `objects` as they would be stored (lib/kube/overlay.ts: an admission
   * review's object, plan's files) and writes nothing to the API server, the gateways or the
   * store's records; throws ShuttingDownError once shutdown() was called.
   */
  async preview(request: Omit<RunRequest, 'dryRun'>, objects: readonly Overlaid[]): Promise<RunReport> {
    if (this.stopping) throw new ShuttingDownError();
    // loaded on first use: the webhook functions' bundles keep it out of what they load at start
    const { OverlayKube } = await import('./kube/overlay.js');
    return runReconcile({ ...this.runDeps(), kube: new OverlayKube(this.parts.kube, objects) }, { ...request, dryRun: true });
  }

  /**
   * A webhook's run over `scope`. Over everything (a Gateway or GatewayClass changed, the
   * gateway's replicas, a delivery folded), a full run as the schedule's: sharded in this process
   * above SHARD_SIZE (lib/triggers/schedule.ts, loaded then only), the shards' reports merged.
   */
  async runEvents(trigger: Trigger, scope: RunScope): Promise<RunReport> {
    if (scope.all !== true) return this.run({ trigger, scope });
    const { fullRunHere } = await import('./triggers/schedule.js');
    return (await fullRunHere(this, { trigger })).report;
  }

  /** Runs the reconcile; throws ShuttingDownError once shutdown() was called. */
  run(request: RunRequest): Promise<RunReport> {
    if (this.stopping) return Promise.reject(new ShuttingDownError());
    const running = this.runMeasured(request);
    this.inFlight.add(running);
    const forget = () => this.inFlight.delete(running);
    running.then(forget, forget);
    return running;
  }

  /** shutdown() was called: no new run starts. */
  get stopping(): boolean {
    return this.stop.deadline !== undefined;
  }

  /**
   * Stops the service's runs (SIGTERM): no new run starts (ShuttingDownError, a 503), and
   * runs in flight start no further gateway write, settle and record what they wrote, and
   * release their locks within `graceMs` (they get 80% of it, the rest is for their last
   * records). Resolves with whether every run ended in time; the caller closes the service
   * after, so Redis is closed last.
   */
  async shutdown(graceMs: number): Promise<{ drained: boolean }> {
    const clock = this.parts.clock;
    this.stop.deadline ??= clock.now() + Math.floor(graceMs * 0.8);
    const ended = Promise.allSettled([...this.inFlight]).then(() => true);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), graceMs);
      timer.unref();
    });
    const drained = await Promise.race([ended, late]);
    clearTimeout(timer);
    return { drained };
  }

  private runDeps(): RunDeps {
    const { kube, store, clock, log } = this.parts;
    return {
      kinds: REGISTRY,
      stop: this.stop,
      kube,
      targets: this.targets,
      store,
      clock,
      log,
      settings: this.settings,
      listSizes: this.listSizes,
      observedMemo: this.observedMemo,
      listHandover: this.listHandover,
    };
  }

  private async runMeasured(request: RunRequest): Promise<RunReport> {
    const { clock } = this.parts;
    const started = performance.now();
    const seconds = () => (performance.now() - started) / 1000;
    try {
      const report = await runReconcile(this.runDeps(), request);
      this.record(runFigures(request, { report }, seconds(), clock.now()));
      return report;
    } catch (err) {
      this.record(runFigures(request, { failed: true }, seconds(), clock.now()));
      throw err;
    }
  }

  /**
   * A sharded full run finished in this process, every shard without a run-level error: what an
   * ordinary full run's success sets (the shards' own runs are not full runs).
   */
  recordFullRunSuccess(): void {
    this.record([{ name: 'last_full_run_success_timestamp_seconds', labels: {}, value: Math.floor(this.parts.clock.now() / 1000) }]);
  }

  /**
   * One shard of a tick done without a run-level error (a shard function or POST /shards; the
   * shards a tick runs itself end in recordFullRunSuccess). The tick's shards count themselves
   * done in the store, a claim of 1 each against count - 1: the claim that does not fit is the
   * last shard's, which then sets what an ordinary full run's success sets. A shard done twice
   * (delivered again) counts once. Best effort: a store that fails here costs the metric only.
   */
  async shardDone(shard: Shard): Promise<void> {
    try {
      const last = !(await this.parts.store.claim(`done:${shard.runId}`, `shard-${shard.index}`, 1, shard.count - 1, SNAPSHOT_TTL_MS));
      if (last) this.recordFullRunSuccess();
    } catch (err) {
      this.log.warn({ tick: shard.runId, err: describeError(err) }, 'could not count the shard done: the tick may not set last_full_run_success_timestamp_seconds');
    }
  }

  /** Counts an answered HTTP request (route without query, status code). */
  recordRequest(route: string, status: number): void {
    this.record(requestFigures(route, status));
  }

  /** The Prometheus text exposition, or undefined when this service's metrics are not served over HTTP (Lambda). */
  async metricsExposition(): Promise<{ contentType: string; text: string } | undefined> {
    return this.parts.metrics.exposition?.();
  }

  /** Writes the metrics gathered per invocation (EMF on Lambda); nothing for Prometheus. */
  flushMetrics(): void {
    try {
      this.parts.metrics.flush?.();
    } catch (err) {
      this.log.warn({ err: describeError(err) }, 'could not write metrics');
    }
  }

  private record(figures: Figure[]): void {
    try {
      this.parts.metrics.record(figures);
    } catch (err) {
      this.log.warn({ err: describeError(err) }, 'could not record metrics');
    }
  }

  /**
   * Whether the store, the API server and the gateway answer and accept our credentials: from a
   * check at most READINESS_MAX_AGE_MS old, shared by concurrent callers (./shared-check.ts), so
   * any rate of /readyz requests costs each dependency at most one call per that time.
   */
  readiness(): Promise<ReadinessCheck> {
    return this.readinessCheck.get();
  }

  private async checkReadiness(): Promise<ReadinessCheck> {
    const probe = async (fn: () => Promise<void>): Promise<{ ok: boolean; error?: string }> => {
      try {
        await fn();
        return { ok: true };
      } catch (err) {
        return { ok: false, error: describeError(err) };
      }
    };
    const ns = this.config.watchNamespaces?.[0];
    const [store, kube, gateway] = await Promise.all([probe(() => this.parts.store.ping()), probe(() => this.parts.kube.ping(API_DEFINITION, ns)), probe(() => this.parts.gateway.ping())]);
    return { ok: store.ok && kube.ok && gateway.ok, checks: { store, kube, gateway } };
  }

  async close(): Promise<void> {
    await Promise.allSettled([this.parts.store.close(), this.targets.close(), ...this.parts.closers.map((c) => c())]);
  }
}

export function loadKubeConfig(config: Config, env: Record<string, string | undefined>): KubeConfig {
  const kc = new KubeConfig();
  try {
    if (config.kubeconfigPath !== undefined) kc.loadFromFile(config.kubeconfigPath);
    else if (env.KUBERNETES_SERVICE_HOST) kc.loadFromCluster();
    else throw new Error('KUBECONFIG is not set and this is not running in a cluster');
  } catch (err) {
    throw new ConfigError([{ setting: 'KUBECONFIG', message: describeError(err) }]);
  }
  if (kc.getCurrentCluster() === null) throw new ConfigError([{ setting: 'KUBECONFIG', message: 'has no current context with a cluster' }]);
  return kc;
}

export function createService(config: Config, env: Record<string, string | undefined>, parts: Partial<ServiceParts> = {}): Service {
  const log = parts.log ?? createLineLogger(config.logLevel);
  const closers: (() => Promise<void>)[] = [...(parts.closers ?? [])];
  const transport = parts.transport ?? nodeTransports();
  let kube = parts.kube;
  if (!kube) {
    const clock = parts.clock ?? systemClock;
    const client = new KubeClient(loadKubeConfig(config, env), { timeoutMs: config.httpTimeoutMs, now: () => clock.now(), secrets: secretsOf(config), transport });
    closers.push(() => client.close());
    kube = client;
  }
  const metrics = parts.metrics ?? discardMetrics;
  const factory = parts.factory ?? gatewayFactory(config.httpTimeoutMs, config.gatewayMaxResponseBytes, (call) => metrics.record(gatewayCallFigures(call)), transport);
  let gateway = parts.gateway;
  if (!gateway) {
    const { mode, url, auth, org, insecureSkipVerify, service } = config.tyk;
    if (service !== undefined && mode === 'ce') {
      // the open-source gateway's replicas, each keeping its own files: one client per ready endpoint of its Service (loaded on use)
      const clock = parts.clock ?? systemClock;
      const apiServer = kube;
      const replicated = lazyGateway(
        DEFAULT_TARGET,
        true,
        async () => {
          const [{ replicaGateway }, { ReplicaGateway }] = await Promise.all([import('./gateway/replica-clients.js'), import('./gateway/replicas.js')]);
          const pieces = replicaGateway(apiServer, config.tyk, service, {
            timeoutMs: config.httpTimeoutMs,
            maxResponseBytes: config.gatewayMaxResponseBytes,
            observe: (call) => metrics.record(gatewayCallFigures(call)),
            transport,
          });
          return new ReplicaGateway(DEFAULT_TARGET, pieces.discover, pieces.clientFor, { log, now: () => clock.now() });
        },
        { replicas: true },
      );
      closers.push(() => replicated.close());
      gateway = replicated;
    } else {
      const client = factory(DEFAULT_TARGET, { mode, url, auth, insecureSkipVerify, ...(org ? { org } : {}) });
      closers.push(() => (client as { close?: () => Promise<void> }).close?.() ?? Promise.resolve());
      gateway = client;
    }
  }
  let store = parts.store;
  if (!store) {
    if (config.redisUrl) store = createRedisStore(config.redisUrl, { cluster: config.redisCluster });
    else {
      store = new MemoryStore({ clock: parts.clock ?? systemClock });
      log.warn({ store: 'memory' }, 'REDIS_URL is not set: records and locks are kept in this process only; run a single instance');
    }
  }
  if (config.boundaries.crossNamespaceRefs === 'allow') {
    log.warn({ setting: 'CROSS_NAMESPACE_REFS' }, 'CROSS_NAMESPACE_REFS=allow: a resource may use OperatorContexts, Secrets, ConfigMaps and APIs of any namespace without a ReferenceGrant');
  }
  const resolve = parts.resolve ? { resolve: parts.resolve } : {};
  return new Service(config, { kube, gateway, factory, store, clock: parts.clock ?? systemClock, log, settings: parts.settings ?? {}, metrics, closers, ...resolve });
}

/**
 * The HTTP transport of a process whose runs are full runs (the self-hosted server, the schedule
 * and shard functions), as HTTP_CLIENT says: undici's pooled client (loaded only then, sized by
 * runConnections), or Node's own (undefined: createService's default).
 */
export async function fullRunTransport(config: Pick<Config, 'httpClient'>): Promise<TransportFactory | undefined> {
  if (config.httpClient !== 'undici') return undefined;
  const { undiciTransports } = await import('./platform/http-undici.js');
  return undiciTransports({ connections: runConnections() });
}

/**
 * Connections per origin for a full run's transport: room for the run's requests in flight
 * (`concurrency`, twice over: a run's steps nest, and a webhook's run may overlap it), at least
 * the default. A ceiling, not a reservation: a pool opens connections as requests need them.
 */
export function runConnections(settings: Partial<RunSettings> = {}): number {
  return Math.max(DEFAULT_CONNECTIONS, 2 * (settings.concurrency ?? DEFAULT_RUN_SETTINGS.concurrency));
}

/** The secret values of the settings, which no Kubernetes Event may carry. */
export function secretsOf(config: Config): string[] {
  const secrets = [config.tyk.auth, ...config.webhookTokens, ...config.resyncTokens, ...config.metricsTokens];
  // every seed's password when REDIS_URL lists a cluster's seeds
  if (config.redisUrl) secrets.push(...redisPasswords(config.redisUrl));
  return secrets.filter((s) => s !== '');
}

/**
 * Tyk Gateway clients for ce, Tyk Dashboard clients for pro. The Dashboard client is imported
 * on the first call a pro connection makes, not when this module loads: a CE deployment (and
 * a Lambda's cold start) never loads it, and its bundle keeps it in a chunk of its own.
 */
function gatewayFactory(timeoutMs: number, maxResponseBytes: number, observe: GatewayObserver, transport: TransportFactory): GatewayFactory {
  return (name: string, s: ConnectionSettings, connect?: ConnectOptions) => {
    const options = {
      name,
      transport,
      url: s.url,
      secret: s.auth,
      insecureSkipVerify: s.insecureSkipVerify,
      timeoutMs,
      maxResponseBytes,
      observe,
      ...(connect?.lookup ? { lookup: connect.lookup } : {}),
      ...(connect?.reload ? { reload: connect.reload } : {}),
      ...(connect?.tlsServerName ? { tlsServerName: connect.tlsServerName } : {}),
    };
    if (s.mode !== 'pro') return new TykGatewayClient(options);
    // reloadRequired: the Dashboard applies writes itself (TykDashboardClient.reloadRequired)
    return lazyGateway(name, false, () => import('./gateway/tyk-dashboard.js').then((m) => new m.TykDashboardClient(options)));
  };
}
