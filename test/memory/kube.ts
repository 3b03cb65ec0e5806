/**
 * MemoryKube: the KubeApi port (lib/kube/types.ts) in memory, with the contract our KubeClient
 * shows against the loopback API server (test/fakes/kube-apiserver.ts); the shared contract
 * suite (./contract.ts) runs against both.
 *
 * Contract:
 * - objects are copied in and out; every real write bumps a global resourceVersion (a write
 *   that changes nothing is no write); custom resources (a group other than '') keep
 *   metadata.generation: 1 on create, +1 when anything but metadata and status changes, +1
 *   when deletion is first requested. Lists are sorted by namespace/name.
 * - get → null only when the object does not exist; list → every object or throws.
 * - patchStatus: RFC 7386 merge patch of `status` only (null removes); 404 → KubeApiError.
 * - addFinalizer/removeFinalizer: as KubeClient does over HTTP: nothing is written when the
 *   list would not change; the change carries the resourceVersion it was computed from, and
 *   a stale one (or an injected KubeConflictError on `patchFinalizers`) is a 409: re-read (a
 *   `get`) and retry, KubeConflictError after 5 attempts. No new finalizer on an object being
 *   deleted (KubeApiError 422); addFinalizer of a vanished object → KubeApiError 404;
 *   removeFinalizer → null. Removing the last finalizer of an object being deleted deletes it.
 * - test-side `delete` is the API server's DELETE: with finalizers it sets deletionTimestamp,
 *   without it removes.
 * - list takes a labelSelector of equality and existence terms (`k`, `!k`, `k=v`, `k==v`,
 *   `k!=v`, comma-joined); other syntax is refused (KubeApiError 400), not ignored.
 * - createObject/replaceObject/deleteObject as over HTTP: create of a taken name → 409
 *   AlreadyExists; replace needs the current resourceVersion (stale → 409 Conflict); delete
 *   with finalizers marks, without removes, 404 → `not found`, a uid precondition that fails → 409.
 * - recordEvent goes through lib/kube/events.ts's EventRecorder over an in-memory Event sink,
 *   so naming and counting are the real ones; Secrets get `stringData` folded into `data`.
 * - faults (./faults.ts) on: get, list, createObject, replaceObject, deleteObject, patchStatus, addFinalizer, removeFinalizer,
 *   patchFinalizers (each finalizer write attempt), recordEvent, createEvent, patchEvent,
 *   getEvent, whoAmI, ping. Errors to inject: KubeApiError, KubeConflictError,
 *   KubeUnavailableError (lib/platform/errors.ts), as the real client throws them.
 * - statusFields (an option): the status fields a kind's CRD keeps; a status patch prunes the rest.
 * - EndpointSlices are served as discovery.k8s.io v1 and v1beta1 (one store, as the API server
 *   converts between them); `unserved` (an option) names versions the cluster does not serve:
 *   get and list of them answer KubeApiError 404 "the server could not find the requested
 *   resource", as kube-apiserver 1.20 answers for EndpointSlice v1 (and 1.25+ for v1beta1).
 * - Namespaces and GatewayClasses are cluster-scoped: stored without a namespace, read with ''.
 * Leaves out (the HTTP tier covers them): CRD schema validation, pruning below status, paging,
 * selectors, watches, authentication.
 */

import { randomUUID } from 'node:crypto';
import { API_DEFINITION } from '../../lib/kinds/api-definition/kind.js';
import { GATEWAY, GATEWAY_CLASS, HTTP_ROUTE } from '../../lib/kinds/gateway-api/kinds.js';
import { INGRESS } from '../../lib/kinds/ingress/kind.js';
import { SECURITY_POLICY } from '../../lib/kinds/security-policy/kind.js';
import { EventRecorder, type EventSink, type EventType, type KubeEvent, type RecordedEvent } from '../../lib/kube/events.js';
import { ENDPOINT_SLICE, ENDPOINT_SLICE_V1BETA1, EVENT, NAMESPACE, OPERATOR_CONTEXT, SECRET, SERVICE } from '../../lib/kube/kinds.js';
import { labelSelectorTest } from '../../lib/kube/overlay.js';
import { REFERENCE_GRANT_V1, REFERENCE_GRANT_V1BETA1 } from '../../lib/kube/reference-grants.js';
import type { KubeApi, KubeObject, ListOptions, ListRange, ResourceKind } from '../../lib/kube/types.js';
import type { Clock } from '../../lib/platform/clock.js';
import { KubeApiError, KubeConflictError, KubeUnavailableError } from '../../lib/platform/errors.js';
import { type FailHow, type PortFault, type PortFaultHandle, PortFaults } from './faults.js';

export type KubeOp =
  | 'get'
  | 'list'
  | 'createObject'
  | 'replaceObject'
  | 'deleteObject'
  | 'patchStatus'
  | 'addFinalizer'
  | 'removeFinalizer'
  | 'patchFinalizers'
  | 'recordEvent'
  | 'getEvent'
  | 'createEvent'
  | 'patchEvent'
  | 'whoAmI'
  | 'ping';

export interface MemoryKubeOptions {
  clock: Clock;
  /** SelfSubjectReview's answer */
  username?: string;
  /** attempts for a finalizer change that keeps meeting 409; default 5, as KubeClient */
  conflictRetries?: number;
  /**
   * Per kind, the only top-level status fields its CRD keeps (Tyk Operator's CRDs keep no
   * conditions or observedGeneration): a status patch drops the others, as the API server's
   * pruning does. Absent: every field is kept (our CRDs).
   */
  statusFields?: Readonly<Record<string, readonly string[]>>;
  /** further kinds the cluster serves (CRDs installed besides ours and the built-in ones) */
  kinds?: readonly ResourceKind[];
  /** versions of kinds the cluster does not serve (get and list answer 404), e.g. EndpointSlice v1 on a 1.20 server */
  unserved?: readonly ResourceKind[];
}

const KNOWN_KINDS: readonly ResourceKind[] = [
  API_DEFINITION,
  SECURITY_POLICY,
  OPERATOR_CONTEXT,
  SECRET,
  EVENT,
  INGRESS,
  ENDPOINT_SLICE,
  ENDPOINT_SLICE_V1BETA1,
  REFERENCE_GRANT_V1,
  REFERENCE_GRANT_V1BETA1,
  SERVICE,
  NAMESPACE,
  GATEWAY_CLASS,
  GATEWAY,
  HTTP_ROUTE,
];
/** Kinds without a namespace: stored and read with none. */
const CLUSTER_SCOPED = new Set([kindKey(NAMESPACE), kindKey(GATEWAY_CLASS)]);

type Json = Record<string, unknown>;

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function clone<T>(v: T): T {
  return structuredClone(v);
}

function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (isObject(v)) {
    return `{${Object.keys(v)
      .filter((k) => v[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

function same(a: unknown, b: unknown): boolean {
  return canonical(a) === canonical(b);
}

/** RFC 7386. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return clone(patch);
  const out: Json = isObject(target) ? clone(target) : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

/** What bumps generation: everything but metadata, type meta and status. */
function generationContent(obj: KubeObject): Json {
  const { metadata: _m, apiVersion: _a, kind: _k, status: _s, ...rest } = obj;
  return rest;
}

function kindKey(kind: Pick<ResourceKind, 'group' | 'plural'>): string {
  return `${kind.group}/${kind.plural}`;
}

function objectKey(namespace: string | undefined, name: string): string {
  return `${namespace ?? ''}/${name}`;
}

export class MemoryKube implements KubeApi, EventSink {
  readonly faults: PortFaults<KubeOp>;
  private readonly clock: Clock;
  private readonly username: string;
  private readonly conflictRetries: number;
  /** the statusFields option; a test replaces it as a CRD upgrade would */
  statusFields: Readonly<Record<string, readonly string[]>>;
  private readonly buckets = new Map<string, Map<string, KubeObject>>();
  private readonly known: readonly ResourceKind[];
  /** the unserved option; a test replaces it as a cluster upgrade would */
  unserved: readonly ResourceKind[];
  private readonly events: EventRecorder;
  private rv = 0;
  /** per list call, in order: the kind, and how many items it returned (after ListOptions.keep) of how many it offered */
  readonly listed: { kind: string; returned: number; offered: number }[] = [];

  constructor(options: MemoryKubeOptions) {
    this.clock = options.clock;
    this.username = options.username ?? 'system:serviceaccount:gateway-reconciler:gateway-reconciler';
    this.conflictRetries = options.conflictRetries ?? 5;
    this.statusFields = options.statusFields ?? {};
    this.unserved = options.unserved ?? [];
    this.known = [...KNOWN_KINDS, ...(options.kinds ?? [])];
    this.faults = new PortFaults<KubeOp>(options.clock);
    this.events = new EventRecorder(this, { component: 'gateway-reconciler', instance: 'memory', now: () => this.clock.now() });
  }

  // ── KubeApi ──

  async get(kind: ResourceKind, namespace: string, name: string): Promise<KubeObject | null> {
    await this.faults.enter({ op: 'get', kind: kind.kind, namespace, name });
    this.refuseUnserved(kind, 'get');
    const found = this.bucket(kind).get(objectKey(namespace, name));
    return found ? clone(found) : null;
  }

  async list(kind: ResourceKind, namespace?: string, options: ListOptions = {}): Promise<KubeObject[]> {
    await this.faults.enter({ op: 'list', kind: kind.kind, ...(namespace !== undefined ? { namespace } : {}) });
    this.refuseUnserved(kind, 'list');
    const selects = labelSelectorTest(options.labelSelector);
    const keep = options.keep ?? (() => true);
    const offered = paged(
      this.objects(kind, namespace).filter((o) => selects(o.metadata.labels ?? {})),
      namespace === undefined ? undefined : options.range,
    );
    const returned = offered.filter((o) => keep(o));
    this.listed.push({ kind: kind.kind, returned: returned.length, offered: offered.length });
    return returned;
  }

  async createObject(kind: ResourceKind, namespace: string, obj: KubeObject): Promise<KubeObject> {
    const name = obj.metadata.name;
    await this.faults.enter({ op: 'createObject', kind: kind.kind, namespace, name });
    if (this.bucket(kind).has(objectKey(namespace, name))) {
      throw new KubeConflictError(409, `create ${kind.plural} "${name}": 409 ${kind.plural}.${kind.group} "${name}" already exists`, { context: { reason: 'AlreadyExists' } });
    }
    const { status: _status, ...rest } = clone(obj);
    const created: KubeObject = { ...rest, metadata: { ...rest.metadata, namespace, uid: randomUUID(), creationTimestamp: this.timestamp() } };
    delete created.metadata.resourceVersion;
    delete created.metadata.deletionTimestamp;
    if (kind.group !== '') created.metadata.generation = 1;
    return this.write(kind, created, undefined);
  }

  async replaceObject(kind: ResourceKind, obj: KubeObject): Promise<KubeObject> {
    const { namespace = '', name, resourceVersion } = obj.metadata;
    await this.faults.enter({ op: 'replaceObject', kind: kind.kind, namespace, name });
    const current = this.bucket(kind).get(objectKey(namespace, name));
    if (!current) throw new KubeApiError(404, `update ${kind.plural} "${name}": 404 ${kind.plural}.${kind.group} "${name}" not found`, { context: { reason: 'NotFound' } });
    if (resourceVersion !== current.metadata.resourceVersion) {
      throw new KubeConflictError(
        409,
        `update ${kind.plural} "${name}": 409 Operation cannot be fulfilled on ${kind.plural}.${kind.group} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
        {
          context: { reason: 'Conflict' },
        },
      );
    }
    // the main resource: status and the system fields stay the stored ones
    const next: KubeObject = { ...clone(obj), metadata: { ...clone(obj.metadata), uid: current.metadata.uid, creationTimestamp: current.metadata.creationTimestamp } };
    if (current.metadata.deletionTimestamp !== undefined) next.metadata.deletionTimestamp = current.metadata.deletionTimestamp;
    else delete next.metadata.deletionTimestamp;
    if (current.status) next.status = clone(current.status);
    else delete next.status;
    if (kind.group !== '') {
      const gen = current.metadata.generation ?? 1;
      next.metadata.generation = same(generationContent(current), generationContent(next)) ? gen : gen + 1;
    }
    return this.write(kind, next, current);
  }

  async deleteObject(kind: ResourceKind, namespace: string, name: string, preconditions: { uid?: string } = {}): Promise<'deleted' | 'terminating' | 'not found'> {
    await this.faults.enter({ op: 'deleteObject', kind: kind.kind, namespace, name });
    const current = this.bucket(kind).get(objectKey(namespace, name));
    if (!current) return 'not found';
    if (preconditions.uid !== undefined && preconditions.uid !== current.metadata.uid) {
      throw new KubeConflictError(409, `delete ${kind.plural} "${name}": 409 Precondition failed: UID in precondition: ${preconditions.uid}, UID in object meta: ${current.metadata.uid ?? ''}`, {
        context: { reason: 'Conflict' },
      });
    }
    return this.delete(kind, name, namespace) === undefined ? 'deleted' : 'terminating';
  }

  async patchStatus(kind: ResourceKind, obj: KubeObject, status: Record<string, unknown>): Promise<KubeObject> {
    const { namespace, name } = obj.metadata;
    await this.faults.enter({ op: 'patchStatus', kind: kind.kind, namespace: namespace ?? '', name });
    const current = this.bucket(kind).get(objectKey(namespace, name));
    if (!current) throw new KubeApiError(404, `patch status of ${kind.plural} "${name}": 404 ${kind.plural}.${kind.group} "${name}" not found`, { context: { reason: 'NotFound' } });
    const next = clone(current);
    const merged = mergePatch(current.status ?? {}, status);
    const keep = this.statusFields[kind.kind];
    if (keep && isObject(merged)) for (const k of Object.keys(merged)) if (!keep.includes(k)) delete merged[k];
    if (isObject(merged) && Object.keys(merged).length > 0) next.status = merged;
    else delete next.status;
    return this.write(kind, next, current);
  }

  async addFinalizer(kind: ResourceKind, obj: KubeObject, finalizer: string): Promise<KubeObject> {
    await this.faults.enter({ op: 'addFinalizer', kind: kind.kind, namespace: obj.metadata.namespace ?? '', name: obj.metadata.name });
    const result = await this.changeFinalizers(kind, obj, (list) => (list.includes(finalizer) ? undefined : [...list, finalizer]));
    if (result === null) throw new KubeApiError(404, `${kind.plural} "${obj.metadata.name}" is gone`);
    return result;
  }

  async removeFinalizer(kind: ResourceKind, obj: KubeObject, finalizer: string): Promise<KubeObject | null> {
    await this.faults.enter({ op: 'removeFinalizer', kind: kind.kind, namespace: obj.metadata.namespace ?? '', name: obj.metadata.name });
    return this.changeFinalizers(kind, obj, (list) => (list.includes(finalizer) ? list.filter((f) => f !== finalizer) : undefined));
  }

  async recordEvent(obj: KubeObject, type: EventType, reason: string, message: string): Promise<RecordedEvent> {
    await this.faults.enter({ op: 'recordEvent', kind: obj.kind, namespace: obj.metadata.namespace ?? '', name: obj.metadata.name });
    return this.events.record(obj, type, reason, message);
  }

  async whoAmI(): Promise<string> {
    await this.faults.enter({ op: 'whoAmI' });
    return this.username;
  }

  async ping(kind: ResourceKind, namespace?: string): Promise<void> {
    await this.faults.enter({ op: 'ping', kind: kind.kind, ...(namespace !== undefined ? { namespace } : {}) });
  }

  // ── EventSink (for the EventRecorder) ──

  async getEvent(namespace: string, name: string): Promise<KubeEvent | null> {
    await this.faults.enter({ op: 'getEvent', kind: 'Event', namespace, name });
    const found = this.bucket(EVENT).get(objectKey(namespace, name));
    return found ? (clone(found) as unknown as KubeEvent) : null;
  }

  async createEvent(namespace: string, event: KubeEvent): Promise<KubeEvent | 'exists'> {
    await this.faults.enter({ op: 'createEvent', kind: 'Event', namespace, name: event.metadata.name });
    if (this.bucket(EVENT).has(objectKey(namespace, event.metadata.name))) return 'exists';
    const obj = { ...clone(event), metadata: { ...clone(event.metadata), namespace, uid: randomUUID(), creationTimestamp: this.timestamp() } };
    return this.write(EVENT, obj as unknown as KubeObject, undefined) as unknown as KubeEvent;
  }

  async patchEvent(namespace: string, name: string, patch: Record<string, unknown>): Promise<KubeEvent | 'gone' | 'conflict'> {
    await this.faults.enter({ op: 'patchEvent', kind: 'Event', namespace, name });
    const current = this.bucket(EVENT).get(objectKey(namespace, name));
    if (!current) return 'gone';
    const want = isObject(patch.metadata) ? patch.metadata.resourceVersion : undefined;
    if (typeof want === 'string' && want !== current.metadata.resourceVersion) return 'conflict';
    return this.write(EVENT, mergePatch(current, patch) as KubeObject, current) as unknown as KubeEvent;
  }

  // ── the test side: what a user (kubectl) or another controller does ──

  /**
   * Creates or replaces an object as given (status, finalizers, deletionTimestamp included):
   * seeds what a cluster holds. Assigns uid, creationTimestamp, resourceVersion, generation.
   */
  put(input: KubeObject): KubeObject {
    const kind = this.kindOf(input);
    const obj = clone(input);
    if (kind.group === '' && kind.kind === 'Secret') foldStringData(obj);
    if (CLUSTER_SCOPED.has(kindKey(kind))) delete obj.metadata.namespace;
    else obj.metadata.namespace ??= 'default';
    const prev = this.bucket(kind).get(objectKey(obj.metadata.namespace, obj.metadata.name));
    obj.metadata.uid ??= prev?.metadata.uid ?? randomUUID();
    obj.metadata.creationTimestamp ??= prev?.metadata.creationTimestamp ?? this.timestamp();
    delete obj.metadata.resourceVersion;
    if (kind.group !== '' && typeof input.metadata.generation !== 'number') {
      const prevGen = prev?.metadata.generation ?? 0;
      obj.metadata.generation = prev ? prevGen + (same(generationContent(prev), generationContent(obj)) ? 0 : 1) : 1;
    }
    return this.write(kind, obj, prev, true);
  }

  /**
   * kubectl apply: the object's spec (and labels, annotations) replace the stored ones; status,
   * finalizers and deletion state stay. Creates it when absent.
   */
  apply(input: KubeObject): KubeObject {
    const kind = this.kindOf(input);
    const clusterScoped = CLUSTER_SCOPED.has(kindKey(kind));
    const namespace = clusterScoped ? undefined : (input.metadata.namespace ?? 'default');
    const prev = this.bucket(kind).get(objectKey(namespace, input.metadata.name));
    if (!prev) return this.put(clusterScoped ? input : { ...input, metadata: { ...input.metadata, namespace } });
    const { metadata, status: _status, ...rest } = clone(input);
    const next: KubeObject = { ...rest, metadata: { ...clone(prev.metadata), labels: metadata.labels, annotations: metadata.annotations }, ...(prev.status ? { status: clone(prev.status) } : {}) };
    if (next.metadata.labels === undefined) delete next.metadata.labels;
    if (next.metadata.annotations === undefined) delete next.metadata.annotations;
    if (kind.group !== '') {
      const gen = prev.metadata.generation ?? 1;
      next.metadata.generation = same(generationContent(prev), generationContent(next)) ? gen : gen + 1;
    }
    return this.write(kind, next, prev);
  }

  /** The API server's DELETE: sets deletionTimestamp while finalizers remain, else removes. Returns the object after, or undefined when gone. */
  delete(kind: ResourceKind, name: string, namespace = 'default'): KubeObject | undefined {
    const current = this.bucket(kind).get(objectKey(namespace, name));
    if (!current) return undefined;
    if ((current.metadata.finalizers ?? []).length === 0) {
      this.removeStored(kind, current);
      return undefined;
    }
    if (current.metadata.deletionTimestamp !== undefined) return clone(current);
    const next = clone(current);
    next.metadata.deletionTimestamp = this.timestamp();
    next.metadata.deletionGracePeriodSeconds = 0;
    if (typeof next.metadata.generation === 'number' && next.metadata.generation > 0) next.metadata.generation += 1;
    return this.write(kind, next, current);
  }

  /** Removes an object outright, finalizers or not (deleted behind our back). */
  remove(kind: ResourceKind, name: string, namespace = 'default'): boolean {
    const current = this.bucket(kind).get(objectKey(namespace, name));
    if (!current) return false;
    this.removeStored(kind, current);
    return true;
  }

  /** A copy of the stored object, without a call (and without faults). */
  read(kind: ResourceKind, name: string, namespace = 'default'): KubeObject | undefined {
    const found = this.bucket(kind).get(objectKey(CLUSTER_SCOPED.has(kindKey(kind)) ? '' : namespace, name));
    return found ? clone(found) : undefined;
  }

  /** Copies of the stored objects, in list order. */
  objects(kind: ResourceKind, namespace?: string): KubeObject[] {
    return [...this.bucket(kind).values()]
      .filter((o) => namespace === undefined || o.metadata.namespace === namespace)
      .sort((a, b) => byKey(objectKey(a.metadata.namespace, a.metadata.name), objectKey(b.metadata.namespace, b.metadata.name)))
      .map(clone);
  }

  /** The Events about an object (as `kubectl describe` lists them). */
  eventsAbout(kind: string, name: string, namespace = 'default'): KubeEvent[] {
    return (this.objects(EVENT, namespace) as unknown as KubeEvent[]).filter((e) => e.involvedObject.kind === kind && e.involvedObject.name === name);
  }

  inject(fault: PortFault<KubeOp>): PortFaultHandle {
    return this.faults.inject(fault);
  }

  count(op?: KubeOp, kind?: string): number {
    return this.faults.count(op, kind);
  }

  resetCalls(): void {
    this.faults.resetCalls();
  }

  // ── internals ──

  /** As KubeClient.changeFinalizers: computed from `obj`, guarded by its resourceVersion, re-read on 409. */
  private async changeFinalizers(kind: ResourceKind, obj: KubeObject, change: (current: string[]) => string[] | undefined): Promise<KubeObject | null> {
    let current: KubeObject | null = obj;
    for (let attempt = 0; ; attempt++) {
      if (current === null) return null;
      const next = change(current.metadata.finalizers ?? []);
      if (next === undefined) return current;
      const { namespace = '', name, resourceVersion } = current.metadata;
      try {
        await this.faults.enter({ op: 'patchFinalizers', kind: kind.kind, namespace, name });
        const stored = this.bucket(kind).get(objectKey(namespace, name));
        if (!stored) return null;
        if (resourceVersion !== undefined && resourceVersion !== stored.metadata.resourceVersion) {
          throw new KubeConflictError(
            409,
            `update finalizers of ${kind.plural} "${name}": 409 Operation cannot be fulfilled on ${kind.plural}.${kind.group} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
            { context: { reason: 'Conflict' } },
          );
        }
        return this.storeFinalizers(kind, stored, next);
      } catch (err) {
        if (!(err instanceof KubeConflictError)) throw err;
        if (attempt + 1 >= this.conflictRetries) throw err;
      }
      current = await this.get(kind, namespace, name);
    }
  }

  private storeFinalizers(kind: ResourceKind, stored: KubeObject, finalizers: string[]): KubeObject {
    const deleting = stored.metadata.deletionTimestamp !== undefined;
    const before = new Set(stored.metadata.finalizers ?? []);
    const added = finalizers.filter((f) => !before.has(f));
    if (deleting && added.length > 0) {
      throw new KubeApiError(422, `update finalizers of ${kind.plural} "${stored.metadata.name}": 422 metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted`, {
        context: { reason: 'Invalid' },
      });
    }
    const next = clone(stored);
    if (finalizers.length > 0) next.metadata.finalizers = [...finalizers];
    else delete next.metadata.finalizers;
    if (deleting && finalizers.length === 0) {
      // delete-during-update: the stored object goes; the answer is the object as sent
      this.removeStored(kind, stored);
      return next;
    }
    return this.write(kind, next, stored);
  }

  /** Stores `obj` with a new resourceVersion unless nothing changed; returns a copy. */
  private write(kind: ResourceKind, obj: KubeObject, prev: KubeObject | undefined, force = false): KubeObject {
    if (prev && !force) {
      const unchanged = same({ ...obj, metadata: { ...obj.metadata, resourceVersion: undefined } }, { ...prev, metadata: { ...prev.metadata, resourceVersion: undefined } });
      if (unchanged) return clone(prev);
    }
    this.rv += 1;
    const stored = clone(obj);
    stored.metadata.resourceVersion = String(this.rv);
    this.bucket(kind).set(objectKey(stored.metadata.namespace, stored.metadata.name), stored);
    return clone(stored);
  }

  private removeStored(kind: ResourceKind, obj: KubeObject): void {
    this.bucket(kind).delete(objectKey(obj.metadata.namespace, obj.metadata.name));
    this.rv += 1;
  }

  private bucket(kind: Pick<ResourceKind, 'group' | 'plural'>): Map<string, KubeObject> {
    const key = kindKey(kind);
    let b = this.buckets.get(key);
    if (!b) {
      b = new Map();
      this.buckets.set(key, b);
    }
    return b;
  }

  private isUnserved(kind: ResourceKind): boolean {
    return this.unserved.some((u) => u.group === kind.group && u.plural === kind.plural && u.version === kind.version);
  }

  /** A version the cluster does not serve: the API server's 404 for a path it has no handler for. */
  private refuseUnserved(kind: ResourceKind, verb: string): void {
    if (this.isUnserved(kind)) throw new KubeApiError(404, `${verb} ${kind.plural}: 404 the server could not find the requested resource`, { context: { reason: 'NotFound' } });
  }

  private kindOf(obj: KubeObject): ResourceKind {
    const found = this.known.find((k) => k.kind === obj.kind && obj.apiVersion === (k.group === '' ? k.version : `${k.group}/${k.version}`) && !this.isUnserved(k));
    if (!found) throw new Error(`MemoryKube: unknown kind ${obj.apiVersion} ${obj.kind}`);
    return found;
  }

  private timestamp(): string {
    return new Date(this.clock.now()).toISOString().replace(/\.\d{3}Z$/, 'Z');
  }
}

/** Secret: stringData is merged into data (base64), as the API server stores it. */
function foldStringData(obj: KubeObject): void {
  const data: Json = isObject(obj.data) ? { ...obj.data } : {};
  if (isObject(obj.stringData)) for (const [k, v] of Object.entries(obj.stringData)) data[k] = Buffer.from(String(v), 'utf8').toString('base64');
  delete obj.stringData;
  if (Object.keys(data).length > 0) obj.data = data;
  if (typeof obj.type !== 'string' || obj.type === '') obj.type = 'Opaque';
}

/** A label selector's equality and existence terms as a predicate; other syntax → KubeApiError 400. */

/** The error KubeClient throws for a call that fails `how` (`what`: e.g. 'list apidefinitions "(all namespaces)"'). */
export function kubeFailure(how: FailHow, what: string): Error {
  if ('unavailable' in how) return new KubeUnavailableError(`API server: ${what}: ECONNREFUSED connect ECONNREFUSED`);
  const message = `${what}: ${how.status} injected fault`;
  return how.status === 409 ? new KubeConflictError(409, message) : new KubeApiError(how.status, message);
}

/** Byte order of etcd keys (the API server's list order), not the locale's. */
function byKey(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The API server's "page": one object here, its continue token `memory:<name>` (start at that name). */
const TOKEN = 'memory:';

/**
 * The items a ranged listing of one namespace is offered (ListOptions.range), as the API server
 * pages it with one object a page: from `startAt`'s name (a token this fake made; any other is
 * refused as the API server refuses a malformed one), each name shown to the range, through
 * the one after which it says to stop, whose page's token (past the first page) it is told.
 */
function paged(items: KubeObject[], range: ListRange | undefined): KubeObject[] {
  if (range === undefined) return items;
  let from = 0;
  if (range.startAt !== undefined) {
    if (!range.startAt.startsWith(TOKEN)) throw new KubeApiError(400, 'continue key is not valid: illegal base64 data or malformed JSON');
    const start = range.startAt.slice(TOKEN.length);
    from = items.findIndex((o) => o.metadata.name >= start);
    if (from < 0) from = items.length;
  }
  range.begin();
  for (let i = from; i < items.length; i++) {
    const name = (items[i] as KubeObject).metadata.name;
    range.seen(name);
    if (!range.reached()) continue;
    if (i > 0) range.stoppedAt(`${TOKEN}${name}`);
    return items.slice(from, i + 1);
  }
  return items.slice(from);
}
