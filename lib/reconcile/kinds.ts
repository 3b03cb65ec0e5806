/**
 * The custom resource kinds we reconcile, with Tyk Operator's names: group, version,
 * plural and finalizer are part of the drop-in contract and must not change.
 */
import type { ResourceKind } from '../kube/types.js';
import type { GatewayObjectKind } from '../gateway/types.js';

export interface ManagedKind extends ResourceKind {
  readonly finalizer: string;
  /** what the object becomes on the gateway */
  readonly gatewayKind: GatewayObjectKind;
  /** the status field that holds the gateway id */
  readonly statusIdField: string;
  /** the spec field that pins the gateway id */
  readonly specIdField: string;
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

export const MANAGED_KINDS: readonly ManagedKind[] = [API_DEFINITION];

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
}

export function refString(ref: ObjectRef): string {
  return `${ref.kind.kind}/${ref.namespace}/${ref.name}`;
}
