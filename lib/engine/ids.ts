/**
 * Gateway ids (design rule 4, Tyk Operator's scheme): the id pinned in the spec, else the
 * id already recorded in status, else base64url without padding of "namespace/name"; and back,
 * from a default id to the object it names (namedByDefaultId). Pure; never throws.
 */

import type { KubeObject } from '../kube/types.js';
import { nonBlank } from '../platform/guards.js';
import type { ManagedKind } from './kind.js';

export function defaultId(namespace: string, name: string): string {
  return Buffer.from(`${namespace}/${name}`, 'utf8').toString('base64url');
}

/**
 * The namespace and name a default id was made from (`defaultId`), or undefined when `id` is
 * not one: its base64url text must decode to "namespace/name" and encode back to `id` exactly.
 */
export function namedByDefaultId(id: string): { namespace: string; name: string } | undefined {
  const text = Buffer.from(id, 'base64url').toString('utf8');
  const cut = text.indexOf('/');
  if (cut <= 0 || cut === text.length - 1) return undefined;
  const namespace = text.slice(0, cut);
  const name = text.slice(cut + 1);
  return defaultId(namespace, name) === id ? { namespace, name } : undefined;
}

export function gatewayIdFor(kind: ManagedKind, obj: KubeObject): string {
  const pinned = kind.specIdField === undefined ? undefined : nonBlank(obj.spec?.[kind.specIdField]);
  return pinned ?? nonBlank(obj.status?.[kind.statusIdField]) ?? defaultId(obj.metadata.namespace ?? '', obj.metadata.name);
}
