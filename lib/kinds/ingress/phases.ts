/**
 * The Ingress's two steps of a run: first, Ingresses of our class become ApiDefinitions in the
 * cluster (the engine's composite phase over INGRESS_COMPOSITE, phase.ts); those it wrote or let
 * go join the ApiDefinition phase, so they reach the gateway in the same run. After the
 * ApiDefinition phase, template ApiDefinitions get their finalizer, and a template's deletion is
 * held while an Ingress names it (templates.ts).
 */
import { compositeEntry } from '../../engine/composite.js';
import type { Phase, RegistryEntry } from '../../engine/kind.js';
import { API_DEFINITION } from '../api-definition/kind.js';
import { INGRESS_COMPOSITE, ingressSettings } from './phase.js';
import { settleTemplates } from './templates.js';

export const INGRESS_TEMPLATES_PHASE: Phase = {
  name: 'ingress templates',
  async run(ctx) {
    // a template's report takes the place of the ApiDefinition phase's
    return { reports: await settleTemplates(ctx, ctx.outcomes(API_DEFINITION), ingressSettings(ctx)) };
  },
};

/** Registry lines: Ingresses first, their templates after the ApiDefinition phase. */
export const INGRESS_ENTRY: RegistryEntry = compositeEntry(INGRESS_COMPOSITE);
export const INGRESS_TEMPLATES_ENTRY: RegistryEntry = { phases: [INGRESS_TEMPLATES_PHASE] };
