/**
 * The SuperGraph and SubGraph step, after the API phases: those of the scope and those the
 * ApiDefinitions used get their finalizer and status, deletions held while in use (phase.ts).
 * A run with none in its scope and no API that started or stopped using one (a webhook about
 * an API without a graph) has nothing to do here and does not load phase.ts (a chunk a Lambda
 * bundle loads on first use).
 */
import type { Phase, RegistryEntry } from '../../engine/kind.js';
import { API_DEFINITION } from '../api-definition/kind.js';
import { SUBGRAPH, SUPERGRAPH } from './kinds.js';
import { graphsUsedBy } from './uses.js';

export const GRAPHS_PHASE: Phase = {
  name: 'graphs',
  async run(ctx) {
    const scope = ctx.request.scope;
    const apis = ctx.outcomes(API_DEFINITION);
    const named = (scope.cluster ?? []).some((r) => ctx.kinds.held.some((k) => k.kind === r.kind.kind));
    const anything = scope.all === true || (scope.namespaces ?? []).some((ns) => ctx.watched(ns)) || named || graphsUsedBy(apis).length > 0;
    if (!anything) return { reports: [] };
    const { runGraphPhase } = await import('./phase.js');
    return { reports: await runGraphPhase(ctx, scope, apis) };
  },
};

/** SuperGraphs first, so one released frees its SubGraphs in the same run. */
export const GRAPHS_ENTRY: RegistryEntry = { held: [SUPERGRAPH, SUBGRAPH], phases: [GRAPHS_PHASE] };
