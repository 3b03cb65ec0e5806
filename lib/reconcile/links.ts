/**
 * References between SecurityPolicies and ApiDefinitions. Pure.
 *
 * A policy's `spec.access_rights_array[]` names ApiDefinitions by {name, namespace}; the
 * namespace defaults to the policy's own. The same references, seen from the API, are its
 * `status.linked_by_policies`; seen from the policy, its `status.linked_apis`.
 */
import { isObject } from '../guards.js';
import type { KubeObject } from '../kube/types.js';

export interface NamespacedName {
  namespace: string;
  name: string;
}

export function nsName(r: NamespacedName): string {
  return `${r.namespace}/${r.name}`;
}

/** The ApiDefinitions a policy references, in order, without duplicates. */
export function accessRefs(policy: KubeObject): NamespacedName[] {
  const list = policy.spec?.access_rights_array;
  if (!Array.isArray(list)) return [];
  const seen = new Map<string, NamespacedName>();
  for (const entry of list) {
    if (!isObject(entry) || typeof entry.name !== 'string' || entry.name === '') continue;
    if (entry.kind !== undefined && entry.kind !== 'ApiDefinition') continue;
    const namespace = typeof entry.namespace === 'string' && entry.namespace !== '' ? entry.namespace : (policy.metadata.namespace ?? '');
    const ref = { namespace, name: entry.name };
    seen.set(nsName(ref), ref);
  }
  return [...seen.values()];
}

/** Policies (not being deleted) that reference the ApiDefinition `api`, sorted. */
export function referencingPolicies(api: NamespacedName, policies: readonly KubeObject[]): NamespacedName[] {
  const key = nsName(api);
  return policies
    .filter((p) => !p.metadata.deletionTimestamp && accessRefs(p).some((r) => nsName(r) === key))
    .map((p) => ({ namespace: p.metadata.namespace ?? '', name: p.metadata.name }))
    .sort((a, b) => nsName(a).localeCompare(nsName(b)));
}
