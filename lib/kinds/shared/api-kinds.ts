/** The kinds that become APIs on the gateway: what a policy's access rights can name. */
import type { ManagedKind } from '../../engine/kind.js';
import { API_DEFINITION } from '../api-definition/kind.js';
import { TYK_OAS_API_DEFINITION } from '../tyk-oas-api-definition/kind.js';

export const API_KINDS: readonly ManagedKind[] = [API_DEFINITION, TYK_OAS_API_DEFINITION];

export function isApiKind(kind: ManagedKind): boolean {
  return API_KINDS.includes(kind);
}
