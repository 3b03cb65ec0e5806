/**
 * The Ingress's two steps of a run: first, Ingresses of our class become ApiDefinitions in the
 * cluster (phase.ts); those it wrote or deleted join the ApiDefinition phase, so they reach the
 * gateway in the same run. After the ApiDefinition phase, template ApiDefinitions get their
 * finalizer, and a template's deletion is held while an Ingress names it (templates.ts).
 */
import type { Phase, RegistryEntry } from '../../engine/kind.js';
import { owned } from '../../engine/phase.js';
import type { ObjectReport } from '../../engine/types.js';
import { API_DEFINITION } from '../api-definition/kind.js';
import { INGRESS } from './kind.js';
import { ingressSettings, runIngressPhase } from './phase.js';
import { settleTemplates } from './templates.js';

export const INGRESS_PHASE: Phase = {
  name: 'ingresses',
  async run(ctx) {
    const reports: ObjectReport[] = [];
    const { apiRefs } = await runIngressPhase(ctx, ctx.request.scope, reports);
    ctx.follow(API_DEFINITION, owned(ctx, apiRefs));
    return reports;
  },
};

export const INGRESS_TEMPLATES_PHASE: Phase = {
  name: 'ingress templates',
  async run(ctx) {
    // a template's report takes the place of the ApiDefinition phase's
    return settleTemplates(ctx, ctx.outcomes(API_DEFINITION), ingressSettings(ctx));
  },
};

/** Registry lines: Ingresses first, their templates after the ApiDefinition phase. */
export const INGRESS_ENTRY: RegistryEntry = { cluster: [INGRESS], phases: [INGRESS_PHASE] };
export const INGRESS_TEMPLATES_ENTRY: RegistryEntry = { phases: [INGRESS_TEMPLATES_PHASE] };
