/** The ApiDefinition phase: the run's policies listed first (they hold deletions and fill statuses), then the kind's phase. */
import type { Phase, RegistryEntry } from '../../engine/kind.js';
import { runKindPhase } from '../../engine/phase.js';
import { runPolicies } from '../shared/api-kind.js';
import { API_DEFINITION } from './kind.js';

export const API_DEFINITION_PHASE: Phase = {
  name: 'apidefinitions',
  async run(ctx) {
    await runPolicies(ctx);
    return runKindPhase(ctx, API_DEFINITION);
  },
};

export const API_DEFINITION_ENTRY: RegistryEntry = { managed: [API_DEFINITION], phases: [API_DEFINITION_PHASE] };
