/**
 * Dependency events → the objects to look at: an event about a Secret, a ConfigMap, a Service,
 * a SubGraph, a SuperGraph or a ReferenceGrant names, through the store's uses index (records'
 * `uses`), every object whose last sync used it, so a rotated certificate reaches its APIs, an
 * edited OAS document its TykOasApiDefinitions, an edited SubGraph its subgraph API and every
 * supergraph API composing it, a Service the HTTPRoutes it backs, and a grant the HTTPRoutes
 * whose backends cross into its namespace (recorded as `ReferenceGrant/<namespace>/*`), without
 * a full run. One store round trip per delivery. A Secret or ConfigMap no
 * record uses is ignored ("no resource uses it"); the schedule catches objects that name one
 * before any record of theirs does. A SubGraph or SuperGraph is also looked at itself (its
 * finalizer, its status: lib/kinds/graphs/phase.ts), used or not.
 * Throws StoreUnavailableError (the store's).
 */
import { findHeldKind, findKind, findMakerKind } from '../kinds/registry.js';
import type { Store } from '../store/types.js';
import type { EventItem } from './refs.js';

export async function resolveDependents(store: Store, items: readonly EventItem[]): Promise<EventItem[]> {
  const uses = [...new Set(items.flatMap((i) => ('dependency' in i ? [useOf(i.dependency)] : [])))];
  if (uses.length === 0) return [...items];
  const found = await store.recordsUsing(uses);
  const users = new Map(uses.map((u, i) => [u, found[i] ?? []]));
  return items.flatMap((item): EventItem[] => {
    if (!('dependency' in item)) return [item];
    const id = item.id === undefined ? {} : { id: item.id };
    const objects = (users.get(useOf(item.dependency)) ?? []).flatMap((key) => {
      const [kind, namespace, name] = key.split('/');
      return kind && namespace && name && (findKind(kind) || findMakerKind(kind)) ? [{ ...id, object: { kind, namespace, name } }] : [];
    });
    // a held kind (SubGraph, SuperGraph) is an object of ours too
    const itself = findHeldKind(item.dependency.kind) ? [{ ...id, object: { ...item.dependency } }] : [];
    return objects.length > 0 || itself.length > 0 ? [...itself, ...objects] : [{ ...id, ignored: 'no resource uses it' }];
  });
}

/** The use a dependency is recorded as: a ReferenceGrant stands for its namespace's grants (`ReferenceGrant/<namespace>/*`). */
export function useOf(dep: { kind: string; namespace: string; name: string }): string {
  return `${dep.kind}/${dep.namespace}/${dep.kind === 'ReferenceGrant' ? '*' : dep.name}`;
}
