/**
 * The references a resource makes through the cluster that name a namespace (its own included),
 * as its kind says (ManagedKind.references): what the load stage checks against ReferenceGrants
 * before reading across namespaces. Pure.
 */
import type { KubeObject } from '../kube/types.js';
import type { CrossRef, ManagedKind } from './kind.js';

export type { CrossRef } from './kind.js';

/** Every reference of `obj` (a resource of `kind`) that names a namespace; none for a kind that makes none. */
export function referencesOf(kind: ManagedKind, obj: KubeObject): readonly CrossRef[] {
  return kind.references?.(obj) ?? [];
}
