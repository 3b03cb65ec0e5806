/**
 * Gateway ids (design rule 4, Tyk Operator's scheme): the id pinned in the spec, else the
 * id already recorded in status, else base64url without padding of "namespace/name" (and back:
 * lib/scale/snapshot.ts namedByDefaultId, kept there for the webhook bundles). Pure; never throws.
 */

import type { KubeObject } from '../kube/types.js';
import { nonBlank } from '../platform/guards.js';
import type { ManagedKind } from './kind.js';

export function defaultId(namespace: string, name: string): string {
  return Buffer.from(`${namespace}/${name}`, 'utf8').toString('base64url');
}

export function gatewayIdFor(kind: ManagedKind, obj: KubeObject): string {
  const pinned = kind.specIdField === undefined ? undefined : nonBlank(obj.spec?.[kind.specIdField]);
  return pinned ?? nonBlank(obj.status?.[kind.statusIdField]) ?? defaultId(obj.metadata.namespace ?? '', obj.metadata.name);
}
