/**
 * The Ingress's two steps of a run: first, Ingresses of our class become ApiDefinitions in the
 * cluster (the engine's composite phase over INGRESS_COMPOSITE, phase.ts); those it wrote or let
 * go join the ApiDefinition phase, so they reach the gateway in the same run. After the
 * ApiDefinition phase, template ApiDefinitions get their finalizer, and a template's deletion is
 * held while an Ingress names it (templates.ts). Both load their code on first use, so a
 * function's bundle does not carry it at start.
 */
import type { Phase, RegistryEntry } from '../../engine/kind.js';
import { API_DEFINITION } from '../api-definition/kind.js';
import { INGRESS } from './kind.js';

export const INGRESS_PHASE: Phase = {
  name: INGRESS.plural,
  async run(ctx) {
    const { INGRESS_COMPOSITE_PHASE } = await import('./phase.js');
    return INGRESS_COMPOSITE_PHASE.run(ctx);
  },
};

export const INGRESS_TEMPLATES_PHASE: Phase = {
  name: 'ingress templates',
  async run(ctx) {
    const [{ settleTemplates }, { ingressSettings }] = await Promise.all([import('./templates.js'), import('./phase.js')]);
    // a template's report takes the place of the ApiDefinition phase's
    return { reports: await settleTemplates(ctx, ctx.outcomes(API_DEFINITION), ingressSettings(ctx)) };
  },
};

/** Registry lines: Ingresses first (compositeEntry's line, its phase loaded on use), their templates after the ApiDefinition phase. */
export const INGRESS_ENTRY: RegistryEntry = { cluster: [INGRESS], phases: [INGRESS_PHASE] };
export const INGRESS_TEMPLATES_ENTRY: RegistryEntry = { phases: [INGRESS_TEMPLATES_PHASE] };
