/**
 * The SuperGraph and SubGraph step, after the API phases: those of the scope and those the
 * ApiDefinitions used get their finalizer and status, deletions held while in use (phase.ts).
 */
import type { Phase, RegistryEntry } from '../../engine/kind.js';
import type { ObjectReport } from '../../engine/types.js';
import { API_DEFINITION } from '../api-definition/kind.js';
import { SUBGRAPH, SUPERGRAPH } from './kinds.js';
import { runGraphPhase } from './phase.js';

export const GRAPHS_PHASE: Phase = {
  name: 'graphs',
  async run(ctx) {
    const reports: ObjectReport[] = [];
    await runGraphPhase(ctx, ctx.request.scope, ctx.outcomes(API_DEFINITION), reports);
    return reports;
  },
};

/** SuperGraphs first, so one released frees its SubGraphs in the same run. */
export const GRAPHS_ENTRY: RegistryEntry = { held: [SUPERGRAPH, SUBGRAPH], phases: [GRAPHS_PHASE] };
