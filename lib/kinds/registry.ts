/**
 * The registry: every kind the reconciler serves, and the order a run takes them in (the
 * engine's phases: lib/engine/run.ts). A kind is a folder of lib/kinds plus its line here (its
 * RegistryEntry; `kindEntry(KIND)` for a kind whose step is its phase alone). Lookups by name
 * serve the triggers (events and /resync name a kind by Kind or plural).
 *
 * The order is the kinds' dependencies: Ingresses and HTTPRoutes make ApiDefinitions in the
 * cluster before the ApiDefinition phase sends them; APIs come before the policies that grant them and the graphs
 * they serve; policies before the portal that publishes them.
 */
import { type ClusterKind, type HeldKind, type KindRegistry, type ManagedKind, registryOf } from '../engine/kind.js';
import type { ResourceKind } from '../kube/types.js';
import { API_DEFINITION_ENTRY } from './api-definition/phases.js';
import { GATEWAY_API_ENTRY } from './gateway-api/phases.js';
import { GRAPHS_ENTRY } from './graphs/phases.js';
import { INGRESS_ENTRY, INGRESS_TEMPLATES_ENTRY } from './ingress/phases.js';
import { PORTAL_ENTRY } from './portal/phases.js';
import { SECURITY_POLICY_ENTRY } from './security-policy/phases.js';
import { CERTIFICATE_SWEEP_ENTRY } from './shared/certificates-phase.js';
import { TYK_OAS_ENTRY } from './tyk-oas-api-definition/phases.js';

/** What a run is given (RunDeps.kinds): one line per step, in the run's order. */
export const REGISTRY: KindRegistry = registryOf([
  INGRESS_ENTRY,
  GATEWAY_API_ENTRY,
  API_DEFINITION_ENTRY,
  INGRESS_TEMPLATES_ENTRY,
  TYK_OAS_ENTRY,
  GRAPHS_ENTRY,
  CERTIFICATE_SWEEP_ENTRY,
  SECURITY_POLICY_ENTRY,
  PORTAL_ENTRY,
]);

/** In the order a run applies them: APIs before the policies that need them, policies before the portal. */
export const MANAGED_KINDS: readonly ManagedKind[] = REGISTRY.managed;

/** In the order a run looks at them: SuperGraphs first, so one released frees its SubGraphs in the same run. */
export const HELD_KINDS: readonly HeldKind[] = REGISTRY.held;

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

/** Every cluster-only kind (held kinds, and kinds whose objects make others: Ingress, HTTPRoute). */
export const CLUSTER_KINDS: readonly ClusterKind[] = REGISTRY.cluster;

/** A cluster-only kind of a group other than Tyk's (Ingress, HTTPRoute), by its group and Kind or plural (exact Kind, or plural, case-insensitively). */
export function findForeignKind(group: string, name: string): ClusterKind | undefined {
  const n = name.toLowerCase();
  return CLUSTER_KINDS.find((k) => k.group === group && k.group !== 'tyk.tyk.io' && (k.kind.toLowerCase() === n || k.plural === n));
}

/** A cluster-only kind that makes others (not held), by Kind or plural, case-insensitively: Ingress, HTTPRoute. */
export function findMakerKind(name: string): ClusterKind | undefined {
  const n = name.toLowerCase();
  return CLUSTER_KINDS.find((k) => !HELD_KINDS.includes(k) && (k.kind.toLowerCase() === n || k.plural === n));
}

/** The kinds whose objects make others in the cluster, in the run's order: Ingress, HTTPRoute. */
export const MAKER_KINDS: readonly ClusterKind[] = CLUSTER_KINDS.filter((k) => !HELD_KINDS.includes(k));

/** A kind whose change may concern any object (Gateway, GatewayClass), by its group and Kind or plural, case-insensitively. */
export function findWideKind(group: string, name: string): ResourceKind | undefined {
  const n = name.toLowerCase();
  return REGISTRY.wide.find((k) => k.group === group && (k.kind.toLowerCase() === n || k.plural === n));
}
