/**
 * What the engine knows of a kind: its names on the API server (ResourceKind), its finalizer
 * and what it becomes on the gateway (ManagedKind), or only its finalizer for a kind that lives
 * in the cluster alone (HeldKind); and how a run names one object (ObjectRef, HeldRef). The
 * kinds themselves are values in lib/kinds/<kind>/, listed in lib/kinds/registry.ts. Types and
 * one pure function; no kind is named here.
 */
import type { GatewayTarget } from '../gateway/targets.js';
import type { GatewayObjectKind, JsonObject } from '../gateway/types.js';
import type { RefFrom, RefTo } from '../kube/reference-grants.js';
import type { KubeObject, NamespacedName, ResourceKind } from '../kube/types.js';
import type { SyncRecord } from '../store/types.js';
import type { GatewayCalls } from './calls.js';
import type { CertificateUpload } from './certificate-text.js';
import type { DesiredState, ObservedState, Reason } from './plan.js';
import type { RunContext } from './run-context.js';
import type { ObjectReport } from './types.js';

export interface ManagedKind extends ResourceKind {
  readonly finalizer: string;
  /** what the object becomes on the gateway */
  readonly gatewayKind: GatewayObjectKind;
  /** the status field that holds the gateway id ('' for a kind whose status names none) */
  readonly statusIdField: string;
  /** the spec field that pins the gateway id; absent: the id is pinned elsewhere (in a document the kind builds) */
  readonly specIdField?: string;
  /** the field of the gateway object that status[statusIdField] shows instead of our id (the gateway's own id of it); absent: our id */
  readonly nativeIdField?: string;
  /** the gateway keeps nothing of this object's own to delete, or cannot delete it: deleting the resource sends nothing */
  readonly nothingToDelete?: true;
  /** an id change is carried out by the write itself (its body says what to release), so the old id is not removed afterwards */
  readonly idChangeInBody?: true;
  /** its CRD may not be installed: a LIST the API server answers 404 means none, not a failed run (load.ts notServed) */
  readonly crdOptional?: true;
  /** the field of the gateway object that status shows, when the gateway gives one, instead of our id (a Dashboard's own `_id`) */
  readonly nativeIdIfAny?: string;
  /** the space its gateway ids are owned in (owners.ts: one owner per id, claimed before a write); absent: its ids have no owners */
  readonly ownerSpace?: string;
  /** its gateway id follows from the resource alone (spec, status or the default), so it is known even without a gateway */
  readonly idWithoutGateway?: true;
  /** the gateway lists it whole (ids asked → objects), not object by object as a stream */
  readonly listedWhole?: true;
  /** what holds its deletion: the objects its phase's KindPass.referencedBy names */
  readonly heldBy?: HeldBy;
  /** a resource labelled `<blueprintLabel>: "true"` is a blueprint for others, never sent (reported skipped, reason `template`) */
  readonly blueprintLabel?: string;

  // what differs between kinds, as functions: pure ones first, then the phase's reads (begin)

  /** the id `obj` asks for on `target`; absent: ids.ts gatewayIdFor */
  desiredId?(obj: KubeObject, target: GatewayTarget): string;
  /** the references `obj` makes that name a namespace (its own included), checked against ReferenceGrants before they are read */
  references?(obj: KubeObject): readonly CrossRef[];
  /** why a gateway cannot hold this kind at all (nothing is read or built there); undefined: it can */
  unsupportedOn?(target: GatewayTarget): Error | undefined;
  /** the route a body serves, when it serves one (owners.ts contest: an older object keeps it) */
  route?(body: JsonObject): Route | undefined;
  /** the status fields besides the id and conditions that its status keeps equal to what a pass found */
  statusExtra?(facts: StatusFacts): Readonly<Record<string, unknown>> | undefined;
  /** the kind's view of one phase over `objects` (what its passes build from) */
  begin(ctx: RunContext, objects: readonly PassObject[]): Promise<KindPhase>;
}

/** What a kind's status fields are made from: what its build gave, and who references it. */
export interface StatusFacts {
  readonly statusFields?: Readonly<Record<string, unknown>>;
  readonly referencedBy?: readonly NamespacedName[] | null;
  readonly links?: readonly string[];
}

/**
 * A kind that lives in the cluster only (nothing of it is on a gateway), with a finalizer of
 * ours: one whose objects others use (a held kind: the finalizer keeps one in use from going,
 * held-finalizers.ts), or one whose objects make others in the cluster.
 */
export interface ClusterKind extends ResourceKind {
  readonly finalizer: string;
}

/** A cluster-only kind whose objects other objects use (held-finalizers.ts). */
export type HeldKind = ClusterKind;

/** Which object a run should look at. */
export interface ObjectRef {
  kind: ManagedKind;
  namespace: string;
  name: string;
  /** a guess (a resync by name without a kind): not reported when nothing by that name exists */
  optional?: boolean;
}

/** A cluster-only object a run should look at, with its kind: the phase of that kind takes it. */
export interface ClusterRef {
  kind: ClusterKind;
  namespace: string;
  name: string;
}

/** A held object a run should look at. */
export type HeldRef = ClusterRef;

/** "<Kind>/<namespace>/<name>": the key of the object's record and lock. */
export function refString(ref: ObjectRef): string {
  return `${ref.kind.kind}/${ref.namespace}/${ref.name}`;
}

// ---------------------------------------------------------------------------------------------
// What a kind's phase gives the load stage (ManagedKind.begin), and the run's order: the
// registry's phases (KindRegistry, given to a run in RunDeps).
// ---------------------------------------------------------------------------------------------

/** An object of a pass, as the load stage holds it while its kind prepares; a kind may only mark it unreadable. */
export interface PassObject {
  readonly kind: ManagedKind;
  readonly ref: ObjectRef;
  readonly key: string;
  /** the resource; null when the API server confirmed it gone; undefined when not read */
  readonly obj: KubeObject | null | undefined;
  readonly record: SyncRecord | null;
  /** its gateway; absent when it cannot be resolved (or a reference of it is refused) */
  readonly target?: GatewayTarget;
  /** the gateway its record names, when it moved elsewhere */
  readonly previousTarget?: string;
  /** what it is built from could not be read: nothing is decided on it */
  readError?: unknown;
}

/** A live object to build: readable, with a gateway, not being deleted. */
export type Building = PassObject & { readonly obj: KubeObject; readonly target: GatewayTarget };

/** What a kind makes of one live object: its gateway id and body, or why it waits or is invalid. */
export interface Built {
  readonly id: string;
  readonly body?: JsonObject;
  readonly invalid?: string;
  readonly waiting?: string;
  /** the hash of what else than the body (or, when invalid, the spec) the desired state depends on: Secrets' content, a graph's */
  readonly contentHash?: string;
  /** the desired hash itself, when it is not the body's */
  readonly hash?: string;
  /** what its desired state was built from (the record's `uses`: Secrets, ConfigMaps, certificates, graphs) */
  readonly uses?: readonly string[];
  /** certificates to have in the gateway's store before the body is sent */
  readonly certificates?: readonly CertificateUpload[];
  /** status fields its kind keeps equal to what was built (statusExtra reads them) */
  readonly statusFields?: Readonly<Record<string, unknown>>;
  /** the record's `links`: keys of the objects it references (a reference's target refreshes its status from them) */
  readonly links?: readonly string[];
}

/** A reference a resource makes through the cluster, checked against ReferenceGrants before it is read. */
export interface CrossRef {
  /** the spec field, for messages */
  field: string;
  to: RefTo;
}

/** The reads a kind's pass may make through the load stage: each read once, a failure marking the objects that need it unreadable. */
export interface PassReads {
  /** whether `o` is to be built now (readable, with a gateway, not being deleted) */
  building(o: PassObject): o is Building;
  /** "namespace/name" → the object (null: 404) of `kind`, for what `namesOf` says each object to build needs */
  get(kind: ResourceKind, namesOf: (o: Building) => readonly NamespacedName[]): Promise<ReadonlyMap<string, KubeObject | null>>;
  /** namespace → every object of `kind` there, for what `namespacesOf` says each object to build needs */
  list(kind: ResourceKind, namespacesOf: (o: Building) => readonly string[]): Promise<ReadonlyMap<string, KubeObject[]>>;
  /** refuses `o` (RefNotPermitted; it loses its gateway, so nothing more is built) at the first of `refs` no ReferenceGrant permits to `from` */
  refuseUnlessGranted(o: PassObject, from: RefFrom, refs: readonly CrossRef[]): Promise<void>;
  /** whether a ReferenceGrant lets `from` name `to` (a grant list that could not be read: true, so what it holds stays held) */
  mayReference(field: string, from: RefFrom, to: RefTo): Promise<boolean>;
  /** refuses `o` as refuseUnlessGranted does (RefNotPermitted, `message` saying why), for a rule of its kind's own */
  refuse(o: PassObject, message: string): void;
}

/** What a gateway object is taken to be without reading it. */
export interface ObservedWithoutRead {
  readonly body: JsonObject | null;
  readonly observed?: ObservedState;
}

/** A kind's view of one pass: built once its reads are done, then asked per object. */
export interface KindPass {
  build(o: Building): Built;
  /** the observed state of an object that needs no read; undefined: read it from the gateway */
  observedWithoutRead?(o: PassObject & { readonly desired?: DesiredState; readonly body?: JsonObject }): ObservedWithoutRead | undefined;
  /** the live objects whose references hold its deletion (null: they could not be listed); undefined: none are kept */
  referencedBy?(o: PassObject): Promise<readonly NamespacedName[] | null | undefined>;
}

/** A kind's view of one phase: made once over the phase's objects, then asked for each pass (the first, and each under the locks). */
export interface KindPhase {
  pass(reads: PassReads, objects: readonly PassObject[]): Promise<KindPass>;
}

/** Which objects hold a kind's deletion while they reference it, as a report and a message say it. */
export interface HeldBy {
  readonly reason: Reason;
  /** the holders' Kind, and its plural, for messages */
  readonly kind: string;
  readonly many: string;
}

/** A gateway route an object serves: an older object keeps it on its gateway (owners.ts contest). */
export interface Route {
  readonly field: string;
  readonly path: string;
  readonly domain: string;
}

/** What a step of a run returns: its reports (one of an object an earlier step reported takes that report's place) and what it cost the gateways. */
export interface PhaseResult {
  readonly reports: readonly ObjectReport[];
  /** absent: no gateway call */
  readonly calls?: GatewayCalls;
}

/** One step of a run, in the registry's order: a kind's phase, or what follows one. */
export interface Phase {
  readonly name: string;
  run(ctx: RunContext): Promise<PhaseResult>;
}

/** The kinds a run serves and the order it takes them in. */
export interface KindRegistry {
  readonly managed: readonly ManagedKind[];
  /** the held kinds (held-finalizers.ts), among `cluster` */
  readonly held: readonly HeldKind[];
  /** every cluster-only kind a run reads: the held kinds, and kinds whose objects make others */
  readonly cluster: readonly ClusterKind[];
  /** kinds no object of which is reconciled on its own, but whose change may concern any object (a run over everything) */
  readonly wide: readonly ResourceKind[];
  readonly phases: readonly Phase[];
}

/** One line of the registry: the kinds a folder of lib/kinds adds, and the steps they run, in the run's order. */
export interface RegistryEntry {
  readonly managed?: readonly ManagedKind[];
  readonly held?: readonly HeldKind[];
  /** cluster-only kinds that are not held (their objects make others) */
  readonly cluster?: readonly ClusterKind[];
  /** kinds whose change may concern any object of the folder's kinds: an event about one runs everything */
  readonly wide?: readonly ResourceKind[];
  readonly phases: readonly Phase[];
}

/** The registry of `entries`, in their order. */
export function registryOf(entries: readonly RegistryEntry[]): KindRegistry {
  const held = entries.flatMap((e) => e.held ?? []);
  return {
    managed: entries.flatMap((e) => e.managed ?? []),
    held,
    cluster: [...held, ...entries.flatMap((e) => e.cluster ?? [])],
    wide: entries.flatMap((e) => e.wide ?? []),
    phases: entries.flatMap((e) => e.phases),
  };
}
