/**
 * The developer portal's step, after the policies whose Dashboard ids its entries publish:
 * APIDescriptions, then the PortalAPICatalogues (with those that list a description the run
 * looked at, or publish a policy it wrote: one catalogue write takes an edit of either), then
 * PortalConfigs, all three decided over one PortalRun (load.ts). A run with none of the portal's
 * kinds in its scope and no policy written (a webhook about an API) has nothing to do here, and
 * does not even load the portal's code (load.ts: a chunk a Lambda bundle loads on first use).
 */
import { sumCalls } from '../../engine/calls.js';
import { isWrite } from '../../engine/decide.js';
import type { Phase, RegistryEntry } from '../../engine/kind.js';
import { runKind, scopeFor } from '../../engine/phase.js';
import { SECURITY_POLICY } from '../security-policy/kind.js';
import { runPolicies } from '../shared/api-kind.js';
import { API_DESCRIPTION, PORTAL_API_CATALOGUE, PORTAL_CONFIG } from './kinds.js';
import { PORTAL_RUN } from './view.js';

const PORTAL = new Set([API_DESCRIPTION.kind, PORTAL_API_CATALOGUE.kind, PORTAL_CONFIG.kind]);

export const PORTAL_PHASE: Phase = {
  name: 'portal',
  async run(ctx) {
    const scope = ctx.request.scope;
    const written = new Set(
      ctx
        .outcomes(SECURITY_POLICY)
        .filter((d) => isWrite(d.decision))
        .map((d) => `${d.loaded.ref.namespace}/${d.loaded.ref.name}`),
    );
    const inScope = scope.all === true || (scope.namespaces ?? []).length > 0 || (scope.refs ?? []).some((r) => PORTAL.has(r.kind.kind)) || ctx.request.shard !== undefined;
    if (!inScope && written.size === 0) return { reports: [] };
    const { PortalRun } = await import('./load.js');
    const portal = new PortalRun(ctx, await runPolicies(ctx), written);
    ctx.shared(PORTAL_RUN, () => portal);
    const descriptions = await runKind(ctx, API_DESCRIPTION, scopeFor(scope, API_DESCRIPTION));
    ctx.setOutcomes(API_DESCRIPTION, descriptions.done);
    portal.seen(descriptions.done.map((d) => d.loaded));
    // a full run, and a shard (its catalogues are in its listing), finds the catalogues in its listing
    const followers = scope.all || ctx.request.shard ? [] : await portal.followers(new Set(descriptions.done.map((d) => `${d.loaded.ref.namespace}/${d.loaded.ref.name}`)), written);
    const catalogues = await runKind(ctx, PORTAL_API_CATALOGUE, scopeFor(scope, PORTAL_API_CATALOGUE, followers));
    ctx.setOutcomes(PORTAL_API_CATALOGUE, catalogues.done);
    const configurations = await runKind(ctx, PORTAL_CONFIG, scopeFor(scope, PORTAL_CONFIG));
    ctx.setOutcomes(PORTAL_CONFIG, configurations.done);
    const steps = [descriptions, catalogues, configurations];
    return { reports: steps.flatMap((s) => s.reports), calls: sumCalls(steps.map((s) => s.calls)) };
  },
};

export const PORTAL_ENTRY: RegistryEntry = { managed: [API_DESCRIPTION, PORTAL_API_CATALOGUE, PORTAL_CONFIG], phases: [PORTAL_PHASE] };
