/**
 * GraphQL federation's kinds, which live in the cluster only: a SubGraph (its SDL, served by the
 * ApiDefinition whose graph_ref names it) and a SuperGraph (SubGraphs composed into one API,
 * federation.ts). A finalizer of ours holds one in use (phase.ts). Names are Tyk Operator's.
 */
import type { HeldKind } from '../../engine/kind.js';

export const SUBGRAPH: HeldKind = { kind: 'SubGraph', group: 'tyk.tyk.io', version: 'v1alpha1', plural: 'subgraphs', finalizer: 'finalizers.tyk.io/subgraph' };
export const SUPERGRAPH: HeldKind = { kind: 'SuperGraph', group: 'tyk.tyk.io', version: 'v1alpha1', plural: 'supergraphs', finalizer: 'finalizers.tyk.io/supergraph' };
