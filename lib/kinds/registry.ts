/**
 * The registry: every kind the reconciler serves, in the order a run takes them. A kind is a
 * folder of lib/kinds plus its line here. Lookups by name serve the triggers (events and
 * /resync name a kind by Kind or plural).
 */
import type { HeldKind, ManagedKind } from '../engine/kind.js';
import { API_DEFINITION } from './api-definition/kind.js';
import { SUBGRAPH, SUPERGRAPH } from './graphs/kinds.js';
import { PORTAL_KINDS } from './portal/kinds.js';
import { SECURITY_POLICY } from './security-policy/kind.js';
import { TYK_OAS_API_DEFINITION } from './tyk-oas-api-definition/kind.js';

/** In the order a run applies them: APIs before the policies that need them, policies before the portal. */
export const MANAGED_KINDS: readonly ManagedKind[] = [API_DEFINITION, TYK_OAS_API_DEFINITION, SECURITY_POLICY, ...PORTAL_KINDS];

/** In the order a run looks at them: SuperGraphs first, so one released frees its SubGraphs in the same run. */
export const HELD_KINDS: readonly HeldKind[] = [SUPERGRAPH, SUBGRAPH];

/** Finds a managed kind by Kind ("ApiDefinition") or plural ("apidefinitions"), case-insensitively. */
export function findKind(name: string): ManagedKind | undefined {
  const n = name.toLowerCase();
  return MANAGED_KINDS.find((k) => k.kind.toLowerCase() === n || k.plural === n);
}

/** Finds a held kind by Kind ("SubGraph") or plural ("subgraphs"), case-insensitively. */
export function findHeldKind(name: string): HeldKind | undefined {
  const n = name.toLowerCase();
  return HELD_KINDS.find((k) => k.kind.toLowerCase() === n || k.plural === n);
}
