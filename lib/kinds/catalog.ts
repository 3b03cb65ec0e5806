/**
 * The custom resource kinds we reconcile, with Tyk Operator's names: group, version,
 * plural and finalizer are part of the drop-in contract and must not change.
 */

import type { GatewayObjectKind } from '../gateway/types.js';
import type { ResourceKind } from '../kube/types.js';

export interface ManagedKind extends ResourceKind {
  readonly finalizer: string;
  /** what the object becomes on the gateway */
  readonly gatewayKind: GatewayObjectKind;
  /** the status field that holds the gateway id */
  readonly statusIdField: string;
  /** the spec field that pins the gateway id; absent: the id is pinned elsewhere (a TykOasApiDefinition's document) */
  readonly specIdField?: string;
  /**
   * the field of the gateway object that status[statusIdField] shows instead of our id (the
   * Dashboard's own id of a portal catalogue or configuration); absent: our id
   */
  readonly nativeIdField?: string;
  /**
   * the gateway keeps nothing of this object's own to delete (an APIDescription), or cannot
   * delete it (the Dashboard's portal configuration): deleting the resource sends nothing
   */
  readonly nothingToDelete?: true;
  /**
   * an id change is carried out by the write itself (a portal catalogue's id is the set of
   * entries it owns; its body says which to release), so the old id is not removed afterwards
   */
  readonly idChangeInBody?: true;
  /**
   * its CRD may not be installed (it came after the first kinds: a cluster with only our earlier
   * CRDs lacks it): a LIST the API server answers 404 means none, not a failed run (load.ts notServed)
   */
  readonly crdOptional?: true;
}

export const API_DEFINITION: ManagedKind = {
  kind: 'ApiDefinition',
  group: 'tyk.tyk.io',
  version: 'v1alpha1',
  plural: 'apidefinitions',
  finalizer: 'finalizers.tyk.io/apidefinition',
  gatewayKind: 'api',
  statusIdField: 'api_id',
  specIdField: 'api_id',
};

/**
 * A Tyk OAS API: the OpenAPI document lives in a ConfigMap (spec.tykOAS.configmapRef); its
 * `x-tyk-api-gateway.info.id` pins the gateway id (oas-payload.ts), so the spec has no id field.
 */
export const TYK_OAS_API_DEFINITION: ManagedKind = {
  kind: 'TykOasApiDefinition',
  group: 'tyk.tyk.io',
  version: 'v1alpha1',
  plural: 'tykoasapidefinitions',
  finalizer: 'finalizers.tyk.io/tykoasapidefinition',
  gatewayKind: 'oas',
  statusIdField: 'id',
};

export const SECURITY_POLICY: ManagedKind = {
  kind: 'SecurityPolicy',
  group: 'tyk.tyk.io',
  version: 'v1alpha1',
  plural: 'securitypolicies',
  finalizer: 'finalizers.tyk.io/securitypolicy',
  gatewayKind: 'policy',
  statusIdField: 'pol_id',
  specIdField: 'id',
};

/** The kinds that become APIs on the gateway: what a policy's access rights can name. */
export const API_KINDS: readonly ManagedKind[] = [API_DEFINITION, TYK_OAS_API_DEFINITION];

/**
 * The developer portal (Tyk Dashboard only; lib/reconcile/portal-*.ts). An APIDescription is the
 * content of a catalogue entry: it has nothing of its own on the Dashboard (the catalogues that
 * list it publish it), so its status names no id (statusIdField '').
 */
export const API_DESCRIPTION: ManagedKind = {
  kind: 'APIDescription',
  group: 'tyk.tyk.io',
  version: 'v1alpha1',
  plural: 'apidescriptions',
  finalizer: 'finalizers.tyk.io/portalapidescription',
  gatewayKind: 'portal-description',
  statusIdField: '',
  nothingToDelete: true,
  crdOptional: true,
};

/** The entries of the organisation's catalogue that one resource declares; status.id is the catalogue's Dashboard id. */
export const PORTAL_API_CATALOGUE: ManagedKind = {
  kind: 'PortalAPICatalogue',
  group: 'tyk.tyk.io',
  version: 'v1alpha1',
  plural: 'portalapicatalogues',
  finalizer: 'finalizers.tyk.io/portalapicatalogue',
  gatewayKind: 'portal-catalogue',
  statusIdField: 'id',
  nativeIdField: 'id',
  idChangeInBody: true,
  crdOptional: true,
};

/** The organisation's portal configuration (one per organisation); status.id is its Dashboard id. */
export const PORTAL_CONFIG: ManagedKind = {
  kind: 'PortalConfig',
  group: 'tyk.tyk.io',
  version: 'v1alpha1',
  plural: 'portalconfigs',
  finalizer: 'finalizers.tyk.io/portalconfiguration',
  gatewayKind: 'portal-configuration',
  statusIdField: 'id',
  nativeIdField: 'id',
  nothingToDelete: true,
  crdOptional: true,
};

/** The portal kinds, in the order a run applies them: descriptions before the catalogues built from them. */
export const PORTAL_KINDS: readonly ManagedKind[] = [API_DESCRIPTION, PORTAL_API_CATALOGUE, PORTAL_CONFIG];

/** In the order a run applies them: APIs before the policies that need them, policies before the portal. */
export const MANAGED_KINDS: readonly ManagedKind[] = [...API_KINDS, SECURITY_POLICY, ...PORTAL_KINDS];

export function isPortalKind(kind: ManagedKind): boolean {
  return PORTAL_KINDS.includes(kind);
}

export function isApiKind(kind: ManagedKind): boolean {
  return API_KINDS.includes(kind);
}

/** Read, never reconciled: where a resource's gateway connection comes from. */
export const OPERATOR_CONTEXT: ResourceKind = { kind: 'OperatorContext', group: 'tyk.tyk.io', version: 'v1alpha1', plural: 'operatorcontexts' };
export const SECRET: ResourceKind = { kind: 'Secret', group: '', version: 'v1', plural: 'secrets' };
/** Read, never reconciled: where a TykOasApiDefinition's document lives. */
export const CONFIG_MAP: ResourceKind = { kind: 'ConfigMap', group: '', version: 'v1', plural: 'configmaps' };
export const EVENT: ResourceKind = { kind: 'Event', group: '', version: 'v1', plural: 'events' };

/**
 * A kind that lives in the cluster only (nothing of it is on a gateway), which other objects
 * use: a finalizer of ours keeps one in use from going (lib/engine/held-finalizers.ts).
 */
export interface HeldKind extends ResourceKind {
  readonly finalizer: string;
}

/** A GraphQL federation subgraph: its SDL, served by the ApiDefinition whose graph_ref names it. */
export const SUBGRAPH: HeldKind = { kind: 'SubGraph', group: 'tyk.tyk.io', version: 'v1alpha1', plural: 'subgraphs', finalizer: 'finalizers.tyk.io/subgraph' };
/** A GraphQL federation supergraph: SubGraphs composed into one API (lib/kinds/graphs/federation.ts). */
export const SUPERGRAPH: HeldKind = { kind: 'SuperGraph', group: 'tyk.tyk.io', version: 'v1alpha1', plural: 'supergraphs', finalizer: 'finalizers.tyk.io/supergraph' };

/** In the order a run looks at them: SuperGraphs first, so one released frees its SubGraphs in the same run. */
export const HELD_KINDS: readonly HeldKind[] = [SUPERGRAPH, SUBGRAPH];

/** Finds a held kind by Kind ("SubGraph") or plural ("subgraphs"), case-insensitively. */
export function findHeldKind(name: string): HeldKind | undefined {
  const n = name.toLowerCase();
  return HELD_KINDS.find((k) => k.kind.toLowerCase() === n || k.plural === n);
}

/** A held object a run should look at. */
export interface HeldRef {
  kind: HeldKind;
  namespace: string;
  name: string;
}

/**
 * Kubernetes Ingresses of our class (INGRESS_CLASS): never sent to a gateway, turned into
 * ApiDefinitions in the cluster (lib/kinds/ingress/phase.ts), with Tyk Operator's finalizer.
 */
export const INGRESS: ResourceKind & { readonly finalizer: string } = {
  kind: 'Ingress',
  group: 'networking.k8s.io',
  version: 'v1',
  plural: 'ingresses',
  finalizer: 'finalizers.tyk.io/ingress',
};

/** Tyk Operator's finalizer on ApiDefinitions labelled `template: "true"`, held while an Ingress names them. */
export const TEMPLATE_FINALIZER = 'finalizers.tyk.io/template';

/** "Ingress" or "ingresses", case-insensitively: how events and /resync name the kind. */
export function isIngressKind(name: string): boolean {
  const n = name.toLowerCase();
  return n === 'ingress' || n === 'ingresses';
}

/** Finds a managed kind by Kind ("ApiDefinition") or plural ("apidefinitions"), case-insensitively. */
export function findKind(name: string): ManagedKind | undefined {
  const n = name.toLowerCase();
  return MANAGED_KINDS.find((k) => k.kind.toLowerCase() === n || k.plural === n);
}

/** Which object a run should look at. */
export interface ObjectRef {
  kind: ManagedKind;
  namespace: string;
  name: string;
  /** a guess (a resync by name without a kind): not reported when nothing by that name exists */
  optional?: boolean;
}

/** "<Kind>/<namespace>/<name>": the key of the object's record and lock. */
export function refString(ref: ObjectRef): string {
  return `${ref.kind.kind}/${ref.namespace}/${ref.name}`;
}
