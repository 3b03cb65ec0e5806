/**
 * An ApiDefinition's phase view (ManagedKind.begin): per pass, the Secrets its certificates
 * name, the graphs its `graphql.graph_ref` names (SuperGraph, SubGraphs, the ApiDefinitions of
 * their namespaces, and the composer when a supergraph is built), then per object the body
 * (payload.ts) with the certificate store's ids, the policies' ids its
 * jwt_default_policies name, and its graph's fields; what it waits for or why it is invalid.
 * The run's policies hold its deletion and fill status.linked_by_policies.
 */

import { hashOf } from '../../engine/hash.js';
import { defaultId, gatewayIdFor } from '../../engine/ids.js';
import type { Building, Built, KindPass, KindPhase, PassObject, PassReads } from '../../engine/kind.js';
import type { RunContext } from '../../engine/run-context.js';
import type { GatewayTarget } from '../../gateway/targets.js';
import type { KubeObject } from '../../kube/types.js';
import { nsName } from '../../kube/types.js';
import { nonBlank } from '../../platform/guards.js';
import type { Compose } from '../graphs/compose.js';
import { type GraphqlResolution, type GraphRef, type GraphsRead, graphRefOf, resolveGraphql, subgraphRefsOf } from '../graphs/federation.js';
import { SUBGRAPH, SUPERGRAPH } from '../graphs/kinds.js';
import { certificatesOf, policyHolders, readSecrets, runPolicies } from '../shared/api-kind.js';
import { API_DEFINITION } from './kind.js';
import { apiDefinitionPayload } from './payload.js';

/** What the graphs of ApiDefinitions were built from, and the composer when a supergraph is among them. */
interface GraphsLoaded extends GraphsRead {
  readonly compose?: Compose;
}

let composer: Promise<Compose> | undefined;

/** compose.ts with the composition library and graphql, imported the first time a run builds a supergraph (see compose.ts). */
function loadComposer(): Promise<Compose> {
  composer ??= import('../graphs/compose.js').then(
    (m) => m.composeSubgraphs,
    (err: unknown) => {
      composer = undefined;
      throw err;
    },
  );
  return composer;
}

/** The graph a live ApiDefinition names (federation.ts); undefined for none, or one refused. */
function graphOf(obj: KubeObject): GraphRef | undefined {
  const ref = graphRefOf(obj);
  return ref === undefined || 'invalid' in ref ? undefined : ref;
}

/**
 * For ApiDefinitions naming a graph: their SuperGraphs, then the SubGraphs (theirs, or their
 * SuperGraphs'), then the ApiDefinitions of each existing SubGraph's namespace (which one serves
 * it), each read once; and the composer, loaded only when a supergraph is to be built.
 */
async function loadGraphs(reads: PassReads, objects: readonly PassObject[]): Promise<GraphsLoaded> {
  const superGraphs = await reads.get(SUPERGRAPH, (o) => {
    const ref = graphOf(o.obj);
    return ref?.kind === 'SuperGraph' ? [ref] : [];
  });
  // a SuperGraph composing SubGraphs of another namespace needs a ReferenceGrant there, checked before they are read
  for (const o of objects) {
    const ref = reads.building(o) ? graphOf(o.obj) : undefined;
    const sup = ref?.kind === 'SuperGraph' ? superGraphs.get(nsName(ref)) : undefined;
    if (ref && sup)
      await reads.refuseUnlessGranted(
        o,
        { group: SUPERGRAPH.group, kind: SUPERGRAPH.kind, namespace: ref.namespace },
        subgraphRefsOf(sup).map((r) => ({ field: `SuperGraph ${nsName(ref)} spec.subgraph_refs`, to: { group: SUBGRAPH.group, kind: SUBGRAPH.kind, namespace: r.namespace, name: r.name } })),
      );
  }
  const subgraphsOf = (o: Building): GraphRef[] => {
    const ref = graphOf(o.obj);
    if (ref?.kind === 'SubGraph') return [ref];
    const sup = ref ? superGraphs.get(nsName(ref)) : undefined;
    return sup ? subgraphRefsOf(sup) : [];
  };
  const subGraphs = await reads.get(SUBGRAPH, subgraphsOf);
  const apis = await reads.list(API_DEFINITION, (o) => subgraphsOf(o).flatMap((r) => (subGraphs.get(nsName(r)) ? [r.namespace] : [])));
  const composing = objects.filter((o) => reads.building(o) && graphOf(o.obj)?.kind === 'SuperGraph');
  if (composing.length === 0) return { superGraphs, subGraphs, apis };
  try {
    return { superGraphs, subGraphs, apis, compose: await loadComposer() };
  } catch (err) {
    for (const o of composing) o.readError ??= err;
    return { superGraphs, subGraphs, apis };
  }
}

/** A SecurityPolicy's gateway id, as an ApiDefinition's jwt_default_policies needs it. */
function policyId(policies: readonly KubeObject[], namespace: string, name: string, mode: GatewayTarget['mode']): string {
  const p = policies.find((x) => x.metadata.namespace === namespace && x.metadata.name === name);
  const pinned = nonBlank(p?.spec?.id);
  const recorded = nonBlank(p?.status?.pol_id);
  // the Dashboard knows policies by its own _id (status.pol_id); the Gateway by our id
  return (mode === 'pro' ? (recorded ?? pinned) : (pinned ?? recorded)) ?? defaultId(namespace, name);
}

/**
 * A live ApiDefinition's graph (federation.ts), and `status.linked_to_subgraph` naming the
 * SubGraph it serves, as Tyk Operator kept it (cleared when it serves none any more).
 */
function graphqlFor(obj: KubeObject, graphs: GraphsLoaded): { graph?: GraphqlResolution; uses?: readonly string[]; statusFields?: Record<string, unknown> } {
  if (obj.metadata.deletionTimestamp) return {};
  const ref = graphRefOf(obj);
  const linked = (to: string | undefined) => (to !== undefined || obj.status?.linked_to_subgraph !== undefined ? { statusFields: { linked_to_subgraph: to ?? null } } : {});
  if (ref === undefined) return linked(undefined);
  if ('invalid' in ref) return { graph: { ok: false, invalid: ref.invalid, uses: [] }, ...linked(undefined) };
  const resolved = resolveGraphql(obj, ref, graphs, graphs.compose);
  return { graph: resolved, uses: resolved.uses, ...linked(resolved.ok ? resolved.linkedTo : undefined) };
}

/** One live ApiDefinition's desired state. */
function buildApi(o: Building, policies: readonly KubeObject[] | undefined, secrets: ReadonlyMap<string, KubeObject | null>, graphs: GraphsLoaded): Built {
  const { obj, target } = o;
  const id = gatewayIdFor(API_DEFINITION, obj);
  const certs = certificatesOf(o, obj.spec, secrets);
  const { graph, uses: graphUses, statusFields } = graphqlFor(obj, graphs);
  // the graphs go into its uses too (also when it waits or is invalid, so an event about one finds it)
  const uses = certs || graphUses ? [...(certs?.uses ?? []), ...(graphUses ?? [])] : undefined;
  const extra = { ...(uses ? { uses } : {}), ...(statusFields ? { statusFields } : {}) };
  if (certs && !certs.ok) return 'waiting' in certs ? { id, waiting: certs.waiting, ...extra } : { id, invalid: certs.invalid, ...extra };
  if (graph && !graph.ok) return 'waiting' in graph ? { id, waiting: graph.waiting, ...extra } : { id, invalid: graph.invalid, contentHash: hashOf(graph.inputs ?? null), ...extra };
  const graphqlFields = graph?.ok ? graph.fields : undefined;
  const payload = apiDefinitionPayload(obj, id, target.orgId, (ns, name) => policyId(policies ?? [], ns, name, target.mode), certs?.fields ?? {}, graphqlFields);
  if (!payload.ok) return { id, invalid: payload.reason, ...extra };
  if (certs && certs.uploads.length > 0) return { id, body: payload.body, contentHash: certs.contentHash, certificates: certs.uploads, ...extra };
  return { id, body: payload.body, ...extra };
}

/** The ApiDefinition phase: the run's policies (listed once per run), then per pass the Secrets and graphs. */
export async function beginApiDefinitions(ctx: RunContext): Promise<KindPhase> {
  const policies = await runPolicies(ctx);
  return {
    async pass(reads: PassReads, objects: readonly PassObject[]): Promise<KindPass> {
      const secrets = await readSecrets(ctx, reads, objects, (obj) => obj.spec);
      const graphs = await loadGraphs(reads, objects);
      return {
        build: (o) => buildApi(o, policies, secrets, graphs),
        referencedBy: (o) => policyHolders(reads, o, policies),
      };
    },
  };
}
