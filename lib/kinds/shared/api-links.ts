/**
 * References between SecurityPolicies and the APIs they grant (ApiDefinitions and
 * TykOasApiDefinitions). Pure.
 *
 * A policy's `spec.access_rights_array[]` names APIs by {name, namespace, kind}; the namespace
 * defaults to the policy's own, the kind to ApiDefinition. The same references, seen from the
 * API, are its `status.linked_by_policies` (ApiDefinition) or `status.linkedByPolicies`
 * (TykOasApiDefinition); seen from the policy, its `status.linked_apis`.
 *
 * An API reference's key (`apiKey`) is "namespace/name" for an ApiDefinition (the form records
 * have always kept) and "TykOasApiDefinition/namespace/name" for a TykOasApiDefinition;
 * `parseApiKey` reads both back.
 */

import { type KubeObject, type NamespacedName, nsName } from '../../kube/types.js';

export { type NamespacedName, nsName } from '../../kube/types.js';

import { isObject } from '../../platform/guards.js';

export type ApiKindName = 'ApiDefinition' | 'TykOasApiDefinition';

/** An API a policy names: which kind, which object. */
export interface ApiRef extends NamespacedName {
  kind: ApiKindName;
}

export function apiKey(r: ApiRef): string {
  return r.kind === 'ApiDefinition' ? nsName(r) : `${r.kind}/${nsName(r)}`;
}

export function parseApiKey(key: string): ApiRef | undefined {
  const parts = key.split('/');
  if (parts.length === 2 && parts[0] && parts[1]) return { kind: 'ApiDefinition', namespace: parts[0], name: parts[1] };
  if (parts.length === 3 && parts[0] === 'TykOasApiDefinition' && parts[1] && parts[2]) return { kind: 'TykOasApiDefinition', namespace: parts[1], name: parts[2] };
  return undefined;
}

/** "ApiDefinition default/httpbin": how messages name a reference. */
export function describeApiRef(r: ApiRef): string {
  return `${r.kind} ${nsName(r)}`;
}

/** The kind an access_rights_array entry names: undefined for a kind that is not an API. */
export function entryKind(entry: Record<string, unknown>): ApiKindName | undefined {
  if (entry.kind === undefined || entry.kind === null || entry.kind === '' || entry.kind === 'ApiDefinition') return 'ApiDefinition';
  return entry.kind === 'TykOasApiDefinition' ? 'TykOasApiDefinition' : undefined;
}

/** The APIs a policy references, in order, without duplicates. */
export function accessRefs(policy: KubeObject): ApiRef[] {
  const list = policy.spec?.access_rights_array;
  if (!Array.isArray(list)) return [];
  const seen = new Map<string, ApiRef>();
  for (const entry of list) {
    if (!isObject(entry) || typeof entry.name !== 'string' || entry.name === '') continue;
    const kind = entryKind(entry);
    if (kind === undefined) continue;
    const namespace = typeof entry.namespace === 'string' && entry.namespace !== '' ? entry.namespace : (policy.metadata.namespace ?? '');
    const ref: ApiRef = { kind, namespace, name: entry.name };
    seen.set(apiKey(ref), ref);
  }
  return [...seen.values()];
}

/** Policies (not being deleted) that reference the API `api`, sorted. */
export function referencingPolicies(api: ApiRef, policies: readonly KubeObject[]): NamespacedName[] {
  const key = apiKey(api);
  return policies
    .filter((p) => !p.metadata.deletionTimestamp && accessRefs(p).some((r) => apiKey(r) === key))
    .map((p) => ({ namespace: p.metadata.namespace ?? '', name: p.metadata.name }))
    .sort((a, b) => nsName(a).localeCompare(nsName(b)));
}
