/**
 * What the engine knows of a kind: its names on the API server (ResourceKind), its finalizer
 * and what it becomes on the gateway (ManagedKind), or only its finalizer for a kind that lives
 * in the cluster alone (HeldKind); and how a run names one object (ObjectRef, HeldRef). The
 * kinds themselves are values in lib/kinds/<kind>/, listed in lib/kinds/registry.ts. Types and
 * one pure function; no kind is named here.
 */
import type { GatewayObjectKind } from '../gateway/types.js';
import type { ResourceKind } from '../kube/types.js';

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
  /** gateway ids of this kind have one owner each (owners.ts): claimed before a write, refused to another resource */
  readonly owned?: true;
  /** the gateway object serves requests on a listen path: an older resource's domain and listen path are refused to a newer one (owners.ts) */
  readonly listens?: true;
}

/**
 * A kind that lives in the cluster only (nothing of it is on a gateway), which other objects
 * use: a finalizer of ours keeps one in use from going (held-finalizers.ts).
 */
export interface HeldKind extends ResourceKind {
  readonly finalizer: string;
}

/** Which object a run should look at. */
export interface ObjectRef {
  kind: ManagedKind;
  namespace: string;
  name: string;
  /** a guess (a resync by name without a kind): not reported when nothing by that name exists */
  optional?: boolean;
}

/** A held object a run should look at. */
export interface HeldRef {
  kind: HeldKind;
  namespace: string;
  name: string;
}

/** "<Kind>/<namespace>/<name>": the key of the object's record and lock. */
export function refString(ref: ObjectRef): string {
  return `${ref.kind.kind}/${ref.namespace}/${ref.name}`;
}
