/**
 * What one delivered event asks for (an EventItem), and how a request's events become one
 * run's scope: deliveries already seen are dropped, duplicates collapse (400 events about 3
 * objects become 3 refs), and more distinct objects than `maxRefs` are folded into
 * namespace-wide runs, or one full run. Pure. An item of a kind that makes others (Ingress,
 * HTTPRoute: the parsers emit one only for their own groups) goes to the scope's `cluster`, as
 * a held kind's object does. An EndpointSlice of the gateway's Service (its replicas changed),
 * or a Gateway or GatewayClass (a `wide` item: any route may attach to it), makes the run a
 * full one.
 */

import type { ClusterRef, ObjectRef } from '../engine/kind.js';
import type { RunScope } from '../engine/types.js';
import { findHeldKind, findKind, findMakerKind } from '../kinds/registry.js';

export type EventItem =
  /** one object to look at */
  | { id?: string; object: { kind: string; namespace: string; name: string } }
  /** a whole namespace to look at (a create whose name the event lacks, a deletecollection) */
  | { id?: string; namespace: { kind: string; namespace: string } }
  /**
   * a resource ours are built from (a Secret, a ConfigMap, a SubGraph, a SuperGraph): the objects
   * whose records use it are looked at (dependents.ts), and a held one (SubGraph, SuperGraph) itself
   */
  | { id?: string; dependency: { kind: DependencyKind; namespace: string; name: string } }
  /**
   * an EndpointSlice changed (discovery.k8s.io): when it is of the gateway's Service
   * (TYK_GATEWAY_SERVICE), replicas joined or left, and a full run serves those that joined
   */
  | { id?: string; endpoints: EndpointsRef }
  /** an object any of ours may depend on (a Gateway, a GatewayClass): the run is a full one */
  | { id?: string; wide: { kind: string; namespace?: string; name?: string } }
  /** nothing to do, and why */
  | { id?: string; ignored: string };

/** An EndpointSlice an event names: its namespace, its name when the event has it, its Service when the event shows its labels. */
export interface EndpointsRef {
  readonly namespace: string;
  readonly slice?: string;
  readonly service?: string;
}

/** EndpointSlices' group and plural, as events name them. */
export const ENDPOINT_SLICES = { group: 'discovery.k8s.io', plural: 'endpointslices', kind: 'EndpointSlice', serviceLabel: 'kubernetes.io/service-name' } as const;

/** Whether the EndpointSlice `ref` names is one of `service`'s: its label says so, or (without labels) its name is the controller's `<service>-<suffix>`. */
export function endpointsOf(ref: EndpointsRef, service: { readonly namespace: string; readonly name: string }): boolean {
  if (ref.namespace !== service.namespace) return false;
  if (ref.service !== undefined) return ref.service === service.name;
  return ref.slice === undefined || ref.slice.startsWith(`${service.name}-`);
}

/**
 * Kinds whose change changes what our objects send: core Secrets, ConfigMaps and Services (an
 * HTTPRoute's backends), tyk.tyk.io SubGraphs and SuperGraphs, and Gateway API's
 * ReferenceGrants (the objects whose references cross into their namespace).
 */
export type DependencyKind = 'Secret' | 'ConfigMap' | 'Service' | 'SubGraph' | 'SuperGraph' | 'ReferenceGrant';

const DEPENDENCY_KINDS: ReadonlyMap<string, DependencyKind> = new Map([
  ['secret', 'Secret'],
  ['secrets', 'Secret'],
  ['configmap', 'ConfigMap'],
  ['configmaps', 'ConfigMap'],
  ['subgraph', 'SubGraph'],
  ['subgraphs', 'SubGraph'],
  ['supergraph', 'SuperGraph'],
  ['supergraphs', 'SuperGraph'],
  ['service', 'Service'],
  ['services', 'Service'],
  ['referencegrant', 'ReferenceGrant'],
  ['referencegrants', 'ReferenceGrant'],
]);

const DEPENDENCY_GROUPS: Readonly<Record<DependencyKind, string>> = {
  Secret: '',
  ConfigMap: '',
  Service: '',
  SubGraph: 'tyk.tyk.io',
  SuperGraph: 'tyk.tyk.io',
  ReferenceGrant: 'gateway.networking.k8s.io',
};

/** The dependency kind of a resource of API group `group` ("" core), by Kind or plural, case-insensitively. */
export function findDependencyKind(name: string, group = ''): DependencyKind | undefined {
  const kind = DEPENDENCY_KINDS.get(name.toLowerCase());
  return kind !== undefined && DEPENDENCY_GROUPS[kind] === group ? kind : undefined;
}

/** Whether `scope` names nothing to look at (no run is needed for it). */
export function isEmptyScope(scope: RunScope): boolean {
  return !scope.all && (scope.refs ?? []).length === 0 && (scope.namespaces ?? []).length === 0 && (scope.cluster ?? []).length === 0;
}

export interface Intake {
  scope: RunScope;
  /** events taken (each names something we reconcile) */
  accepted: number;
  /** events not taken, by why */
  ignored: Record<string, number>;
  /** set when more objects were named than one request may: how they were folded */
  folded?: 'namespaces' | 'all';
}

export interface CollectOptions {
  /** delivery ids (audit IDs, CloudEvent source+id) already handled: their events are dropped */
  seen?: ReadonlySet<string>;
  maxRefs?: number;
  /** the Service whose EndpointSlices are the default gateway's replicas (TYK_GATEWAY_SERVICE); absent: EndpointSlices are not ours */
  gatewayService?: { readonly namespace: string; readonly name: string };
}

export function collect(items: readonly EventItem[], options: CollectOptions = {}): Intake {
  const refs = new Map<string, ObjectRef>();
  const cluster = new Map<string, ClusterRef>();
  const namespaces = new Set<string>();
  const ignored: Record<string, number> = {};
  let accepted = 0;
  let replicasChanged = false;
  let everything = false;
  const ignore = (why: string) => (ignored[why] = (ignored[why] ?? 0) + 1);
  for (const item of items) {
    if (item.id !== undefined && options.seen?.has(item.id)) {
      ignore('already delivered');
      continue;
    }
    if ('ignored' in item) {
      ignore(item.ignored);
      continue;
    }
    if ('dependency' in item) {
      // resolved to the objects using it before collect (lib/events/dependents.ts)
      ignore('dependency not resolved');
      continue;
    }
    if ('wide' in item) {
      accepted++;
      everything = true;
      continue;
    }
    if ('endpoints' in item) {
      if (options.gatewayService === undefined || !endpointsOf(item.endpoints, options.gatewayService)) {
        ignore('not the gateway Service');
        continue;
      }
      accepted++;
      replicasChanged = true;
      continue;
    }
    const target = 'object' in item ? item.object : item.namespace;
    const maker = findMakerKind(target.kind);
    if (maker !== undefined) {
      accepted++;
      if ('object' in item) cluster.set(`${maker.kind}/${item.object.namespace}/${item.object.name}`, { kind: maker, namespace: item.object.namespace, name: item.object.name });
      else namespaces.add(item.namespace.namespace);
      continue;
    }
    const kind = findKind(target.kind);
    const heldKind = kind === undefined ? findHeldKind(target.kind) : undefined;
    if (kind === undefined && heldKind === undefined) {
      ignore('kind not reconciled');
      continue;
    }
    accepted++;
    if (!('object' in item)) namespaces.add(item.namespace.namespace);
    else if (kind !== undefined) refs.set(`${kind.kind}/${item.object.namespace}/${item.object.name}`, { kind, namespace: item.object.namespace, name: item.object.name });
    else if (heldKind !== undefined) cluster.set(`${heldKind.kind}/${item.object.namespace}/${item.object.name}`, { kind: heldKind, namespace: item.object.namespace, name: item.object.name });
  }
  // the gateway's replicas changed: a full run, so a replica that joined gets everything now; a Gateway or GatewayClass changed: a full run too
  if (replicasChanged || everything) return { scope: { all: true }, accepted, ignored };
  const single = [...refs.values()].filter((r) => !namespaces.has(r.namespace));
  const singleCluster = [...cluster.values()].filter((r) => !namespaces.has(r.namespace));
  const max = options.maxRefs ?? Infinity;
  if (single.length + singleCluster.length <= max) {
    const extra = singleCluster.length > 0 ? { cluster: singleCluster } : {};
    return { scope: { refs: single, namespaces: [...namespaces], ...extra }, accepted, ignored };
  }
  for (const r of [...single, ...singleCluster]) namespaces.add(r.namespace);
  if (namespaces.size <= max) return { scope: { refs: [], namespaces: [...namespaces] }, accepted, ignored, folded: 'namespaces' };
  return { scope: { all: true }, accepted, ignored, folded: 'all' };
}
