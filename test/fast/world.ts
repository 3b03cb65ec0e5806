/**
 * The fast world: a whole Run in process, in milliseconds. RunDeps built from the in-memory
 * ports (test/memory: MemoryKube, MemoryTykGateway or MemoryTykDashboard), MemoryStore, a
 * FakeClock whose sleep moves time at once (settling and backoff cost no real time), a
 * capturing logger and DEFAULT_RUN_SETTINGS; GatewayTargets over the default in-memory gateway,
 * with OperatorContexts resolving to further in-memory gateways registered by URL
 * (`addGateway`); a URL nobody registered is unreachable, a wrong secret is refused (403).
 * Optionally the process-wide parts a Service gives its runs: an ObservedMemo, a stop signal;
 * and a certificate store (test/memory/certificates.ts) on the default gateway or on a gateway
 * added by URL (`certificates`), which the in-memory gateways alone do not have.
 *
 * Drives runReconcile (lib/engine/run.ts) directly: `run(request)` → RunReport. The test
 * side changes the cluster as a user would (apply, delete, remove), the gateway behind our back
 * (through the gateway's own test controls) and reads records, objects and Events back.
 * Nothing here mocks a lib/ module: the ports are implementations of the port interfaces.
 */

import type { KindRegistry, ManagedKind } from '../../lib/engine/kind.js';
import { DEFAULT_RUN_SETTINGS, runReconcile } from '../../lib/engine/run.js';
import type { ObjectReport, RunDeps, RunReport, RunRequest, RunSettings, StopSignal } from '../../lib/engine/types.js';
import type { CertificateStore } from '../../lib/gateway/certificates.js';
import type { ConnectionSettings } from '../../lib/gateway/connection.js';
import { DEFAULT_TARGET, type GatewayTarget, GatewayTargets } from '../../lib/gateway/targets.js';
import type { Gateway } from '../../lib/gateway/types.js';
import { type Resolve, UrlPolicy } from '../../lib/gateway/url-policy.js';
import { API_DEFINITION } from '../../lib/kinds/api-definition/kind.js';
import { REGISTRY } from '../../lib/kinds/registry.js';
import { SECURITY_POLICY } from '../../lib/kinds/security-policy/kind.js';
import { type CrossNamespaceRefs, ReferenceGrants } from '../../lib/kube/reference-grants.js';
import type { KubeObject, ResourceKind } from '../../lib/kube/types.js';
import { GatewayApiError } from '../../lib/platform/errors.js';
import { ListSizes } from '../../lib/scale/list-sizes.js';
import type { ObservedMemo } from '../../lib/scale/observed-memo.js';
import { MemoryStore } from '../../lib/store/memory.js';
import type { Store, SyncRecord } from '../../lib/store/types.js';
import { FakeClock } from '../harness/clock.js';
import { capturingLogger } from '../harness/log.js';
import { DelegatingGateway } from '../memory/delegating-gateway.js';
import { brokenGateway, MemoryTykDashboard, MemoryTykGateway, unreachable } from '../memory/gateway.js';
import { MemoryKube } from '../memory/kube.js';

/** A FakeClock whose sleep(ms) moves time forward by ms at once. */
export class SteppingClock extends FakeClock {
  override sleep(ms: number): Promise<void> {
    const woken = super.sleep(ms);
    if (ms > 0) this.advance(ms);
    return woken;
  }
}

export type MemoryGateway = MemoryTykGateway | MemoryTykDashboard;

export interface FastWorldOptions {
  /** the default gateway: a Tyk Gateway (ce, default) or a Tyk Dashboard (pro) */
  mode?: 'ce' | 'pro';
  /** WATCH_NAMESPACE */
  namespaces?: string[];
  settings?: Partial<RunSettings>;
  /** per kind, the status fields its CRD keeps (Tyk Operator's CRDs prune conditions); absent: ours */
  statusFields?: Record<string, readonly string[]>;
  /** wraps the store the run uses (e.g. to observe or fail calls); the world keeps the MemoryStore under it */
  store?: (store: MemoryStore) => Store;
  /** CROSS_NAMESPACE_REFS; default grant, as the service's */
  crossNamespaceRefs?: CrossNamespaceRefs;
  /** how context hosts resolve; default: every name to 192.0.2.10 (a documentation address, neither loopback nor link-local) */
  resolve?: Resolve;
  /** the kinds the runs serve (the cluster serves their managed and cluster-only kinds); default: the service's (lib/kinds/registry.ts) */
  kinds?: KindRegistry;
  /** wraps the default gateway as the runs reach it (e.g. a client that gives listed objects' digests); the world keeps the in-memory one under it */
  defaultGateway?: (gateway: Gateway) => Gateway;
  /** what the process keeps from listed gateway objects across runs (lib/scale/observed-memo.ts); absent: none, as in most tests */
  observedMemo?: ObservedMemo;
  /** the default gateway's certificate store (it has none without); applied before `defaultGateway` wraps it */
  certificates?: CertificateStore;
}

interface Registered {
  gateway: MemoryGateway;
  secret: string;
  /** the gateway as the runs reach it (with a certificate store, when given one) */
  reached: Gateway;
}

export class FastWorld {
  readonly clock = new SteppingClock();
  readonly kube: MemoryKube;
  readonly gateway: MemoryGateway;
  /** the records and locks (what the run's store, possibly wrapped, keeps them in) */
  readonly memoryStore: MemoryStore;
  readonly store: Store;
  readonly log = capturingLogger();
  readonly settings: RunSettings;
  readonly targets: GatewayTargets;
  /** what the gateways' lists returned, kept across runs as the Service keeps it */
  readonly listSizes = new ListSizes();
  /** the continue tokens range shards leave each other, as a Service keeps them */
  readonly listHandover = new Map<string, string>();
  readonly kinds: KindRegistry;
  readonly observedMemo: ObservedMemo | undefined;
  /** the process's stop signal the runs see (RunDeps.stop); undefined: never stopping */
  stop: StopSignal | undefined;
  private readonly registry = new Map<string, Registered>();

  constructor(options: FastWorldOptions = {}) {
    this.kinds = options.kinds ?? REGISTRY;
    this.observedMemo = options.observedMemo;
    this.kube = new MemoryKube({
      clock: this.clock,
      ...(options.statusFields ? { statusFields: options.statusFields } : {}),
      ...(options.kinds ? { kinds: [...options.kinds.managed, ...options.kinds.cluster] } : {}),
    });
    this.gateway = options.mode === 'pro' ? new MemoryTykDashboard({ clock: this.clock }) : new MemoryTykGateway({ clock: this.clock });
    this.memoryStore = new MemoryStore({ clock: this.clock });
    this.store = options.store ? options.store(this.memoryStore) : this.memoryStore;
    // no renewal by default: it runs on real time, and these tests run on SteppingClock's
    this.settings = { ...DEFAULT_RUN_SETTINGS, lockRenewMs: 0, ...options.settings, ...(options.namespaces ? { namespaces: options.namespaces } : {}) };
    const orgId = this.gateway instanceof MemoryTykDashboard ? this.gateway.orgId : undefined;
    const withCertificates = options.certificates ? new DelegatingGateway(this.gateway, options.certificates) : this.gateway;
    const reached = options.defaultGateway ? options.defaultGateway(withCertificates) : withCertificates;
    const defaultTarget: GatewayTarget = { name: DEFAULT_TARGET, gateway: reached, mode: options.mode ?? 'ce', ...(orgId ? { orgId } : {}) };
    const resolve: Resolve = options.resolve ?? (async () => [{ address: '192.0.2.10', family: 4 }]);
    this.targets = new GatewayTargets(defaultTarget, this.kube, (name, settings) => this.connect(name, settings), {
      grants: new ReferenceGrants(this.kube, options.crossNamespaceRefs ?? 'grant', this.log),
      urls: async () => new UrlPolicy(undefined, resolve),
    });
  }

  get deps(): RunDeps {
    return {
      kinds: this.kinds,
      kube: this.kube,
      targets: this.targets,
      store: this.store,
      clock: this.clock,
      log: this.log,
      settings: this.settings,
      listSizes: this.listSizes,
      listHandover: this.listHandover,
      ...(this.observedMemo ? { observedMemo: this.observedMemo } : {}),
      ...(this.stop ? { stop: this.stop } : {}),
    };
  }

  // ── runs ──

  /** One run; by default a scheduled one over everything. */
  run(request: Partial<RunRequest> = {}): Promise<RunReport> {
    return runReconcile(this.deps, { trigger: 'schedule', scope: { all: true }, ...request });
  }

  /** A run for one object, as a webhook or /resync naming it starts it. */
  runFor(kind: ManagedKind, name: string, trigger: RunRequest['trigger'] = 'watch', namespace = 'default', extra: Partial<RunRequest> = {}): Promise<RunReport> {
    return this.run({ trigger, scope: { refs: [{ kind, namespace, name }] }, ...extra });
  }

  // ── other gateways (OperatorContexts) ──

  /** A further gateway at `url`; an OperatorContext naming this URL and secret reaches it. */
  addGateway(url: string, options: { mode?: 'ce' | 'pro'; secret?: string; certificates?: CertificateStore } = {}): MemoryGateway {
    const gateway = options.mode === 'pro' ? new MemoryTykDashboard({ name: url, clock: this.clock }) : new MemoryTykGateway({ name: url, clock: this.clock });
    const reached = options.certificates ? new DelegatingGateway(gateway, options.certificates) : gateway;
    this.registry.set(url.replace(/\/+$/, ''), { gateway, secret: options.secret ?? 'secret', reached });
    return gateway;
  }

  private connect(name: string, settings: ConnectionSettings): Gateway {
    const found = this.registry.get(settings.url);
    if (!found) return brokenGateway(name, settings.mode === 'ce', unreachable(name, settings.url));
    if (found.secret !== settings.auth)
      return brokenGateway(name, settings.mode === 'ce', () => new GatewayApiError(403, `gateway ${name}: 403 Attempted administrative access with invalid or missing key! (check TYK_AUTH)`));
    return found.reached;
  }

  // ── the cluster, as a user changes it ──

  /** kubectl apply: creates, or replaces spec and labels (status, finalizers, deletion stay). */
  apply(obj: KubeObject): KubeObject {
    return this.kube.apply(obj);
  }

  /** Seeds an object exactly as given (status and finalizers included). */
  put(obj: KubeObject): KubeObject {
    return this.kube.put(obj);
  }

  get(kind: ResourceKind, name: string, namespace = 'default'): KubeObject | undefined {
    return this.kube.read(kind, name, namespace);
  }

  api(name: string, namespace = 'default'): KubeObject | undefined {
    return this.get(API_DEFINITION, name, namespace);
  }

  policy(name: string, namespace = 'default'): KubeObject | undefined {
    return this.get(SECURITY_POLICY, name, namespace);
  }

  /** kubectl delete: marks it while finalizers remain, else removes it. */
  delete(kind: ResourceKind, name: string, namespace = 'default'): KubeObject | undefined {
    return this.kube.delete(kind, name, namespace);
  }

  /** Gone outright, finalizers or not (deleted behind our back). */
  remove(kind: ResourceKind, name: string, namespace = 'default'): boolean {
    return this.kube.remove(kind, name, namespace);
  }

  /** Edits the spec (a new generation when it changes). */
  updateSpec(kind: ResourceKind, name: string, change: (spec: Record<string, unknown>) => Record<string, unknown>, namespace = 'default'): KubeObject {
    const current = this.kube.read(kind, name, namespace);
    if (!current) throw new Error(`no ${kind.kind} ${namespace}/${name}`);
    return this.kube.apply({ ...current, spec: change(structuredClone(current.spec ?? {})) });
  }

  // ── records ──

  async record(kind: ManagedKind, name: string, namespace = 'default'): Promise<SyncRecord | null> {
    const [rec] = await this.memoryStore.getRecords([`${kind.kind}/${namespace}/${name}`]);
    return rec ?? null;
  }

  async putRecord(rec: SyncRecord): Promise<void> {
    await this.memoryStore.putRecord(rec);
  }

  /** Changes a stored record (e.g. a failure in the past). */
  async editRecord(kind: ManagedKind, name: string, change: (rec: SyncRecord) => SyncRecord, namespace = 'default'): Promise<SyncRecord> {
    const rec = await this.record(kind, name, namespace);
    if (!rec) throw new Error(`no record of ${kind.kind} ${namespace}/${name}`);
    const next = change(structuredClone(rec));
    await this.memoryStore.deleteRecord(rec.key);
    await this.memoryStore.putRecord(next);
    return next;
  }

  /** Whether anyone holds the lock of this object (it can be taken and given back). */
  async locked(key: string): Promise<boolean> {
    const token = `probe-${Math.random()}`;
    const outcome = await this.memoryStore.lock(key, token, 1_000);
    if (outcome === 'acquired') {
      await this.memoryStore.forceRelease(key, token);
      return false;
    }
    return true;
  }

  resetCounts(): void {
    this.kube.resetCalls();
    this.gateway.resetCalls();
    for (const r of this.registry.values()) r.gateway.resetCalls();
  }
}

/** One object's entry in a run report; throws (naming what was reported) when it has none. */
export function reported(report: RunReport, name: string, kind = 'ApiDefinition', namespace = 'default'): ObjectReport {
  const o = report.objects.find((x) => x.name === name && x.kind === kind && x.namespace === namespace);
  if (!o) throw new Error(`no report for ${kind} ${namespace}/${name}: ${JSON.stringify(report.objects)}`);
  return o;
}
