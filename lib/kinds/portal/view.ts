/**
 * What the portal's kinds answer the engine without their load (which a run loads only when it
 * has portal work: load.ts): the references they make, that only a Dashboard holds them, which
 * of their objects need no read, and their phase's view over the run's PortalRun.
 */
import type { CrossRef, KindPass, KindPhase, ObservedWithoutRead, PassObject } from '../../engine/kind.js';
import { observedState } from '../../engine/load.js';
import type { DesiredState } from '../../engine/plan.js';
import type { RunContext } from '../../engine/run-context.js';
import { portalUnsupported } from '../../gateway/portal.js';
import type { GatewayTarget } from '../../gateway/targets.js';
import type { JsonObject } from '../../gateway/types.js';
import type { KubeObject } from '../../kube/types.js';
import { isObject } from '../../platform/guards.js';
import { SECURITY_POLICY } from '../security-policy/kind.js';
import { tykRef } from '../shared/cross-refs.js';
import { API_DESCRIPTION, PORTAL_API_CATALOGUE } from './kinds.js';
import type { PortalRun } from './load.js';
import { ownedIds, refOf } from './refs.js';

/** The run's PortalRun, under this key in RunContext.shared (made by the portal's phase: phases.ts). */
export const PORTAL_RUN = Symbol('portal run');

/** A description's policy; a catalogue's descriptions and policies. */
export function portalReferences(obj: KubeObject, kind: 'description' | 'catalogue'): CrossRef[] {
  const own = obj.metadata.namespace ?? '';
  const spec = obj.spec ?? {};
  const out: CrossRef[] = [];
  if (kind === 'description') {
    const p = refOf(spec.policyRef, own);
    if (p) out.push({ field: 'spec.policyRef', to: tykRef(SECURITY_POLICY, p.namespace, p.name) });
    return out;
  }
  for (const item of Array.isArray(spec.apis) ? spec.apis.filter(isObject) : []) {
    const d = refOf(item.apiDescriptionRef, own);
    if (d) out.push({ field: 'spec.apis[].apiDescriptionRef', to: tykRef(API_DESCRIPTION, d.namespace, d.name) });
    const p = refOf(item.policyRef, own);
    if (p) out.push({ field: 'spec.apis[].policyRef', to: tykRef(SECURITY_POLICY, p.namespace, p.name) });
  }
  return out;
}

/** The developer portal is the Dashboard's: on a Tyk Gateway, nothing is read or built for it. */
export function portalUnsupportedOn(kind: string, target: GatewayTarget): Error | undefined {
  return target.mode !== 'pro' ? portalUnsupported(kind, target.name) : undefined;
}

/**
 * The portal objects whose observed state needs no read: an APIDescription, which has nothing of
 * its own on the Dashboard, is there once its record says it was synced; a kind whose deletion
 * sends nothing (a description, the configuration, a catalogue that owns no entry), when the
 * resource is being deleted or gone, is absent, so its deletion is done without a write.
 */
export function portalObservedWithoutRead(o: PassObject & { readonly desired?: DesiredState; readonly body?: JsonObject }): ObservedWithoutRead | undefined {
  const id = o.desired?.id ?? o.record?.id ?? '';
  const leaving = !o.desired || o.desired.deleting;
  if (leaving && (o.kind.nothingToDelete === true || (o.kind === PORTAL_API_CATALOGUE && ownedIds(id).length === 0))) return { body: null };
  if (o.kind !== API_DESCRIPTION) return undefined;
  if (!o.record) return { body: null };
  return { body: {}, observed: observedState(id, {}, o.body, o.record.observedHash) };
}

/** A portal kind's phase: every pass prepared by the run's PortalRun (descriptions, catalogues, configurations decided together). */
export async function beginPortal(ctx: RunContext): Promise<KindPhase> {
  const portal = ctx.shared<PortalRun | undefined>(PORTAL_RUN, () => undefined);
  if (portal === undefined) throw new Error('internal: a portal phase without its PortalRun');
  return {
    async pass(_reads, objects): Promise<KindPass> {
      await portal.prepare(objects as PassObject[]);
      return {
        build: (o) => {
          const built = portal.built(o.key);
          if (built === undefined) throw new Error(`internal: ${o.key} has no portal desired state`);
          return built;
        },
        observedWithoutRead: portalObservedWithoutRead,
        referencedBy: async (o) => portal.referencedBy(o.key),
      };
    },
  };
}
