/**
 * GraphQL federation, as Tyk Operator had it: SubGraph and SuperGraph resources, and the
 * ApiDefinitions whose `graphql.graph_ref` names one of them (in their own namespace). Pure: the
 * load stage reads the objects (lib/kinds/api-definition/build.ts), this module decides what they make of an API.
 *
 * - execution_mode `subgraph`: the SubGraph supplies `graphql.schema` (its spec.schema, else its
 *   sdl) and `graphql.subgraph.sdl` (its spec.sdl). One ApiDefinition serves a SubGraph: the one
 *   its `status.linked_by_api` names while that one still claims it, else the oldest claimant
 *   (creationTimestamp, then name); another one claiming it is invalid, as Tyk Operator refused.
 * - execution_mode `supergraph`: the SuperGraph's `subgraph_refs` (namespace defaulting to the
 *   SuperGraph's) are composed (compose.ts) into the supergraph; the API is sent with
 *   `graphql.supergraph.subgraphs` (per SubGraph: the api_id and spec.name of the ApiDefinition
 *   serving it, url `tyk://<its metadata.name>`, the SDL), `graphql.supergraph.merged_sdl` (the
 *   composed public schema; the SuperGraph's own `merged_sdl`, Tyk Operator's output, is not
 *   read) and `graphql.schema` (the SuperGraph's spec.schema when given, else the composed one).
 * - a SubGraph or SuperGraph that does not exist, or a SubGraph no ApiDefinition serves, makes
 *   the API wait, named; a composition error, an empty SDL, a graph_ref with another
 *   execution_mode, or a subgraph served on another gateway makes it invalid, named.
 * - every graph the API was built from is in its `uses` (`SubGraph/<ns>/<name>`,
 *   `SuperGraph/<ns>/<name>`), also when it waits or is invalid, so an event about one of them
 *   runs the API (lib/events/dependents.ts).
 *
 * Also who uses a SubGraph or SuperGraph (what holds its deletion) and the SubGraph's
 * `status.linked_by_api`, for phase.ts.
 */

import { gatewayIdFor } from '../../engine/ids.js';
import { MAX_DOCUMENT_BYTES, sizeProblem } from '../../engine/input-limits.js';
import type { JsonObject } from '../../gateway/types.js';
import type { KubeObject } from '../../kube/types.js';
import { isObject, nonEmpty } from '../../platform/guards.js';
import { API_DEFINITION } from '../api-definition/kind.js';
import { type NamespacedName, nsName } from '../shared/api-links.js';
import type { Compose, SubgraphSdl } from './compose.js';

export type GraphKindName = 'SubGraph' | 'SuperGraph';

/** The graph an ApiDefinition names, in its own namespace. */
export interface GraphRef extends NamespacedName {
  readonly kind: GraphKindName;
}

/** "SubGraph/<namespace>/<name>": how records' `uses` name a graph. */
export function graphUse(ref: GraphRef): string {
  return `${ref.kind}/${ref.namespace}/${ref.name}`;
}

/** A `uses` entry naming a graph, read back; undefined for anything else. */
export function parseGraphUse(use: string): GraphRef | undefined {
  const [kind, namespace, name, ...rest] = use.split('/');
  if (rest.length > 0 || !namespace || !name || (kind !== 'SubGraph' && kind !== 'SuperGraph')) return undefined;
  return { kind, namespace, name };
}

function graphqlOf(api: KubeObject): Record<string, unknown> | undefined {
  const g = api.spec?.graphql;
  return isObject(g) ? g : undefined;
}

/**
 * The graph an ApiDefinition names: undefined without `graphql.graph_ref`; `invalid` when its
 * execution_mode is neither subgraph nor supergraph (a reference would be silently ignored).
 */
export function graphRefOf(api: KubeObject): GraphRef | { invalid: string } | undefined {
  const g = graphqlOf(api);
  const name = nonEmpty(g?.graph_ref);
  if (!g || name === undefined) return undefined;
  const namespace = api.metadata.namespace ?? '';
  if (g.execution_mode === 'subgraph') return { kind: 'SubGraph', namespace, name };
  if (g.execution_mode === 'supergraph') return { kind: 'SuperGraph', namespace, name };
  return { invalid: `unsupported: graphql.graph_ref with execution_mode ${JSON.stringify(g.execution_mode ?? '')}: a graph reference needs execution_mode subgraph or supergraph` };
}

/** The SubGraphs a SuperGraph composes, in its order, each once; the namespace defaults to the SuperGraph's. */
export function subgraphRefsOf(superGraph: KubeObject): GraphRef[] {
  const refs = superGraph.spec?.subgraph_refs;
  const own = superGraph.metadata.namespace ?? '';
  const seen = new Map<string, GraphRef>();
  for (const r of Array.isArray(refs) ? refs : []) {
    const name = isObject(r) ? nonEmpty(r.name) : undefined;
    if (!isObject(r) || name === undefined) continue;
    const ref: GraphRef = { kind: 'SubGraph', namespace: nonEmpty(r.namespace) ?? own, name };
    seen.set(nsName(ref), ref);
  }
  return [...seen.values()];
}

function names(api: KubeObject, ref: GraphRef): boolean {
  const own = graphRefOf(api);
  return own !== undefined && !('invalid' in own) && own.kind === ref.kind && own.namespace === ref.namespace && own.name === ref.name;
}

function isDeleting(o: KubeObject): boolean {
  return o.metadata.deletionTimestamp !== undefined && o.metadata.deletionTimestamp !== null;
}

function byAge(a: KubeObject, b: KubeObject): number {
  return (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? '') || a.metadata.name.localeCompare(b.metadata.name);
}

/**
 * The ApiDefinition that serves SubGraph `sub` among `apis` (those of its namespace): of the
 * live ones naming it with execution_mode subgraph, the one `status.linked_by_api` names (by
 * gateway id), else the oldest. Undefined when none claims it.
 */
export function subgraphOwner(sub: KubeObject, apis: readonly KubeObject[]): KubeObject | undefined {
  const ref: GraphRef = { kind: 'SubGraph', namespace: sub.metadata.namespace ?? '', name: sub.metadata.name };
  const claimants = apis.filter((a) => (a.metadata.namespace ?? '') === ref.namespace && !isDeleting(a) && names(a, ref)).sort(byAge);
  const linked = nonEmpty(sub.status?.linked_by_api);
  return claimants.find((a) => linked !== undefined && gatewayIdFor(API_DEFINITION, a) === linked) ?? claimants[0];
}

/** A SubGraph's `status.linked_by_api`: the gateway id of the ApiDefinition serving it, or null (none). */
export function linkedByApi(sub: KubeObject, apis: readonly KubeObject[]): string | null {
  const owner = subgraphOwner(sub, apis);
  return owner ? gatewayIdFor(API_DEFINITION, owner) : null;
}

/**
 * What uses a SubGraph ("SuperGraph default/social", "ApiDefinition users/users-api"): the
 * SuperGraphs composing it (any namespace) and the ApiDefinitions of its namespace naming it.
 */
export function subGraphUsers(sub: KubeObject, superGraphs: readonly KubeObject[], apis: readonly KubeObject[]): string[] {
  const ref: GraphRef = { kind: 'SubGraph', namespace: sub.metadata.namespace ?? '', name: sub.metadata.name };
  const key = nsName(ref);
  const supers = superGraphs.filter((s) => subgraphRefsOf(s).some((r) => nsName(r) === key)).map((s) => `SuperGraph ${nsName(nsOf(s))}`);
  return [...supers, ...apiUsers(ref, apis)].sort();
}

/** What uses a SuperGraph: the ApiDefinitions of its namespace naming it. */
export function superGraphUsers(sup: KubeObject, apis: readonly KubeObject[]): string[] {
  return apiUsers({ kind: 'SuperGraph', namespace: sup.metadata.namespace ?? '', name: sup.metadata.name }, apis).sort();
}

function apiUsers(ref: GraphRef, apis: readonly KubeObject[]): string[] {
  return apis.filter((a) => (a.metadata.namespace ?? '') === ref.namespace && names(a, ref)).map((a) => `ApiDefinition ${nsName(nsOf(a))}`);
}

function nsOf(o: KubeObject): NamespacedName {
  return { namespace: o.metadata.namespace ?? '', name: o.metadata.name };
}

/** The graphs and ApiDefinitions the load stage read: by "namespace/name" (null: it does not exist), ApiDefinitions by namespace. */
export interface GraphsRead {
  readonly subGraphs: ReadonlyMap<string, KubeObject | null>;
  readonly superGraphs: ReadonlyMap<string, KubeObject | null>;
  readonly apis: ReadonlyMap<string, readonly KubeObject[]>;
}

/** What an ApiDefinition's graph makes of it. `inputs` (of an invalid one) is what the verdict depends on besides its spec. */
export type GraphqlResolution =
  | { readonly ok: true; readonly fields: JsonObject; readonly uses: readonly string[]; readonly linkedTo?: string }
  | { readonly ok: false; readonly waiting: string; readonly uses: readonly string[] }
  | { readonly ok: false; readonly invalid: string; readonly uses: readonly string[]; readonly inputs?: unknown };

/** The gateway an ApiDefinition goes to, as its contextRef names it ("" : the default). */
function contextOf(api: KubeObject): string {
  const ref = api.spec?.contextRef;
  const name = isObject(ref) ? nonEmpty(ref.name) : undefined;
  return name === undefined ? '' : `${(isObject(ref) ? nonEmpty(ref.namespace) : undefined) ?? api.metadata.namespace ?? ''}/${name}`;
}

/** The graphql fields `api` (of execution_mode subgraph or supergraph, naming `ref`) is sent with. */
export function resolveGraphql(api: KubeObject, ref: GraphRef, graphs: GraphsRead, compose?: Compose): GraphqlResolution {
  return ref.kind === 'SubGraph' ? resolveSubgraph(api, ref, graphs) : resolveSupergraph(api, ref, graphs, compose);
}

function resolveSubgraph(api: KubeObject, ref: GraphRef, graphs: GraphsRead): GraphqlResolution {
  const uses = [graphUse(ref)];
  const sub = graphs.subGraphs.get(nsName(ref)) ?? null;
  if (!sub) return { ok: false, waiting: `waiting for SubGraph ${nsName(ref)} does not exist`, uses };
  const owner = subgraphOwner(sub, graphs.apis.get(ref.namespace) ?? []);
  if (owner && owner.metadata.name !== api.metadata.name) {
    const invalid = `SubGraph ${nsName(ref)} is already linked by ApiDefinition ${nsName(nsOf(owner))}: linking one SubGraph to multiple ApiDefinitions is forbidden`;
    return { ok: false, invalid, uses, inputs: { linkedBy: nsName(nsOf(owner)) } };
  }
  const sdl = nonEmpty(sub.spec?.sdl);
  if (sdl === undefined) return { ok: false, invalid: `SubGraph ${nsName(ref)} has no sdl`, uses, inputs: { sub: sub.spec ?? null } };
  const big = sdlSizeProblem(ref, sdl);
  if (big !== undefined) return { ok: false, invalid: big, uses, inputs: { sub: sub.spec ?? null } };
  return { ok: true, fields: { schema: nonEmpty(sub.spec?.schema) ?? sdl, subgraph: { sdl } }, uses, linkedTo: ref.name };
}

/** One SubGraph of a supergraph, with the ApiDefinition serving it. */
interface Member {
  readonly ref: GraphRef;
  readonly sdl: string;
  readonly api: KubeObject;
}

function resolveSupergraph(api: KubeObject, ref: GraphRef, graphs: GraphsRead, compose: Compose | undefined): GraphqlResolution {
  const sup = graphs.superGraphs.get(nsName(ref)) ?? null;
  if (!sup) return { ok: false, waiting: `waiting for SuperGraph ${nsName(ref)} does not exist`, uses: [graphUse(ref)] };
  const refs = subgraphRefsOf(sup);
  const uses = [graphUse(ref), ...refs.map(graphUse)];
  if (refs.length === 0) return { ok: false, invalid: `SuperGraph ${nsName(ref)} has no subgraph_refs`, uses, inputs: { sup: sup.spec ?? null } };
  const missing: string[] = [];
  const invalid: string[] = [];
  const members: Member[] = [];
  for (const r of refs) {
    const sub = graphs.subGraphs.get(nsName(r)) ?? null;
    if (!sub) {
      missing.push(`SubGraph ${nsName(r)} does not exist`);
      continue;
    }
    const owner = subgraphOwner(sub, graphs.apis.get(r.namespace) ?? []);
    if (!owner) {
      missing.push(`SubGraph ${nsName(r)} has no ApiDefinition (graph_ref ${r.name}, execution_mode subgraph, in ${r.namespace})`);
      continue;
    }
    const sdl = nonEmpty(sub.spec?.sdl);
    const big = sdl === undefined ? undefined : sdlSizeProblem(r, sdl);
    if (sdl === undefined) invalid.push(`SubGraph ${nsName(r)} has no sdl`);
    else if (big !== undefined) invalid.push(big);
    else if (contextOf(owner) !== contextOf(api)) invalid.push(`SubGraph ${nsName(r)} is served by ApiDefinition ${nsName(nsOf(owner))} on another gateway (contextRef)`);
    else members.push({ ref: r, sdl, api: owner });
  }
  if (missing.length > 0) return { ok: false, waiting: `waiting for ${missing.join('; ')}`, uses };
  const entities = members.map((m) => ({
    api_id: gatewayIdFor(API_DEFINITION, m.api),
    name: nonEmpty(m.api.spec?.name) ?? m.api.metadata.name,
    url: `tyk://${m.api.metadata.name}`,
    sdl: m.sdl,
    headers: {},
  }));
  if (invalid.length > 0) return { ok: false, invalid: `SuperGraph ${nsName(ref)}: ${invalid.join('; ')}`, uses, inputs: { sup: sup.spec ?? null, entities } };
  if (!compose) throw new Error(`internal: SuperGraph ${nsName(ref)} to compose, and no composer loaded`);
  const composed = compose(members.map((m): SubgraphSdl => ({ name: nsName(m.ref), sdl: m.sdl })));
  if (!composed.ok) {
    const shown = composed.errors.slice(0, 5).join('; ');
    const more = composed.errors.length > 5 ? ` (and ${composed.errors.length - 5} more)` : '';
    return { ok: false, invalid: `SuperGraph ${nsName(ref)} does not compose: ${shown}${more}`, uses, inputs: { sup: sup.spec ?? null, entities } };
  }
  const supergraph: JsonObject = { subgraphs: entities, merged_sdl: composed.publicSdl };
  return { ok: true, fields: { schema: nonEmpty(sup.spec?.schema) ?? composed.publicSdl, supergraph }, uses };
}

/** The API's graphql with the resolved fields over it; `graph_ref` (the operator's) is not sent. */
export function graphqlWith(spec: Record<string, unknown>, fields: JsonObject): JsonObject {
  const { graph_ref: _, ...own } = isObject(spec.graphql) ? spec.graphql : {};
  const out: JsonObject = { ...own, ...fields };
  for (const nested of ['subgraph', 'supergraph']) {
    const mine = fields[nested];
    const theirs = own[nested];
    if (isObject(mine) && isObject(theirs)) out[nested] = { ...theirs, ...mine };
  }
  return out;
}

/** A SubGraph's SDL above MAX_DOCUMENT_BYTES is refused by its size, before any parser sees it. */
function sdlSizeProblem(ref: GraphRef, sdl: string): string | undefined {
  return sizeProblem(`SubGraph ${nsName(ref)} sdl`, Buffer.byteLength(sdl), MAX_DOCUMENT_BYTES);
}
