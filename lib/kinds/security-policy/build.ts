/**
 * A SecurityPolicy's phase view (ManagedKind.begin): once per phase, the APIs its access rights
 * name (from this run's API phases, else read once: api-resolver.ts); per object the body
 * (payload.ts) with each API's gateway id, or what it waits for. Its links (the APIs it
 * references) go into its record and status.linked_apis.
 */
import { defaultId, gatewayIdFor } from '../../engine/ids.js';
import type { Building, Built, KindPass, KindPhase, PassObject, StatusFacts } from '../../engine/kind.js';
import type { RunContext } from '../../engine/run-context.js';
import type { GatewayTarget } from '../../gateway/targets.js';
import type { KubeObject, NamespacedName } from '../../kube/types.js';
import { nonBlank } from '../../platform/guards.js';
import { accessRefs, apiKey, nsName, parseApiKey } from '../shared/api-links.js';
import { apiResolver, earlierApis, type ResolveApi } from '../shared/api-resolver.js';
import { SECURITY_POLICY } from './kind.js';
import { securityPolicyPayload } from './payload.js';

/** The id a policy asks for: on the Dashboard, status.pol_id holds the Dashboard's own _id, so ours is spec.id or the default. */
export function policyDesiredId(obj: KubeObject, target: GatewayTarget): string {
  if (target.mode === 'pro') return nonBlank(obj.spec?.id) ?? defaultId(obj.metadata.namespace ?? '', obj.metadata.name);
  return gatewayIdFor(SECURITY_POLICY, obj);
}

function buildPolicy(o: Building, resolveApi: ResolveApi): Built {
  const id = policyDesiredId(o.obj, o.target);
  const payload = securityPolicyPayload(o.obj, id, o.target.orgId, (ref) => resolveApi(ref, o.target));
  if ('waiting' in payload) return { id, waiting: payload.waiting, links: payload.links.map(apiKey) };
  if (!payload.ok) return { id, invalid: payload.reason };
  return { id, body: payload.body, links: payload.links.map(apiKey) };
}

/** A policy's status.linked_apis: each API once, sorted. */
export function linkedApis(links: readonly string[]): NamespacedName[] {
  const refs = links.flatMap((k) => parseApiKey(k) ?? []);
  const byKey = new Map(refs.map((r) => [`${nsName(r)}\u0000${r.kind}`, { namespace: r.namespace, name: r.name }]));
  return [...byKey.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([, r]) => r);
}

/** status.linked_apis, when this pass knows the policy's links. */
export function policyStatusExtra(facts: StatusFacts): Readonly<Record<string, unknown>> | undefined {
  return facts.links ? { linked_apis: linkedApis(facts.links) } : undefined;
}

/** The policy phase: the APIs the phase's policies name, resolved once. */
export async function beginSecurityPolicies(ctx: RunContext, objects: readonly PassObject[]): Promise<KindPhase> {
  const live = objects.flatMap((o) => (o.obj ? [o.obj] : []));
  const resolveApi = await apiResolver(ctx, live.flatMap(accessRefs), earlierApis(ctx));
  const pass: KindPass = { build: (o) => buildPolicy(o, resolveApi) };
  return { pass: async () => pass };
}
