/**
 * The registry: every kind the reconciler serves, and the order a run takes them in (the
 * engine's phases: lib/engine/run.ts). A kind is a folder of lib/kinds plus its lines here.
 * Lookups by name serve the triggers (events and /resync name a kind by Kind or plural).
 *
 * The order is the kinds' dependencies: Ingresses make ApiDefinitions in the cluster before the
 * ApiDefinition phase sends them; APIs come before the policies that grant them and the graphs
 * they serve; policies before the portal that publishes them.
 */
import type { HeldKind, KindRegistry, ManagedKind, Phase } from '../engine/kind.js';
import { API_DEFINITION } from './api-definition/kind.js';
import { API_DEFINITION_PHASE } from './api-definition/phases.js';
import { SUBGRAPH, SUPERGRAPH } from './graphs/kinds.js';
import { GRAPHS_PHASE } from './graphs/phases.js';
import { INGRESS_PHASE, INGRESS_TEMPLATES_PHASE } from './ingress/phases.js';
import { API_DESCRIPTION, PORTAL_API_CATALOGUE, PORTAL_CONFIG } from './portal/kinds.js';
import { PORTAL_PHASE } from './portal/phases.js';
import { SECURITY_POLICY } from './security-policy/kind.js';
import { POLICY_LINKS_PHASE, SECURITY_POLICY_PHASE } from './security-policy/phases.js';
import { CERTIFICATE_SWEEP_PHASE } from './shared/certificates-phase.js';
import { TYK_OAS_API_DEFINITION } from './tyk-oas-api-definition/kind.js';
import { TYK_OAS_PHASE } from './tyk-oas-api-definition/phases.js';

/** In the order a run applies them: APIs before the policies that need them, policies before the portal. */
export const MANAGED_KINDS: readonly ManagedKind[] = [API_DEFINITION, TYK_OAS_API_DEFINITION, SECURITY_POLICY, API_DESCRIPTION, PORTAL_API_CATALOGUE, PORTAL_CONFIG];

/** In the order a run looks at them: SuperGraphs first, so one released frees its SubGraphs in the same run. */
export const HELD_KINDS: readonly HeldKind[] = [SUPERGRAPH, SUBGRAPH];

/** A run's steps, in order. */
export const PHASES: readonly Phase[] = [
  INGRESS_PHASE,
  API_DEFINITION_PHASE,
  INGRESS_TEMPLATES_PHASE,
  TYK_OAS_PHASE,
  GRAPHS_PHASE,
  CERTIFICATE_SWEEP_PHASE,
  SECURITY_POLICY_PHASE,
  POLICY_LINKS_PHASE,
  PORTAL_PHASE,
];

/** What a run is given (RunDeps.kinds). */
export const REGISTRY: KindRegistry = { managed: MANAGED_KINDS, held: HELD_KINDS, phases: PHASES };

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
