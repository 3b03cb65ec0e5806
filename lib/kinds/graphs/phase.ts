/**
 * The SuperGraph and SubGraph phase of a run, after the API phases: these live in the cluster
 * only (held-finalizers.ts does the finalizer and status; federation.ts says what uses each).
 *
 * Which objects: every one on a full run, those of the namespaces a run covers, those an event
 * or /resync names (RunScope.cluster), and those the ApiDefinitions the run looked at started or
 * stopped using (their records' `uses` before and after it), so an API that stops using a
 * graph, or is deleted, releases that graph in the same run, and a new subgraph API's SubGraph
 * gets its `status.linked_by_api` at once. SuperGraphs are decided first: one released this run no
 * longer holds its SubGraphs.
 *
 * What uses them is read after the API phases: the SuperGraphs of the watched namespaces (for
 * SubGraphs) and the ApiDefinitions of each object's namespace. A listing that fails makes the
 * objects depending on it unknown: a deletion is then held, a status left as it is. A kind the
 * API server does not serve (404: its CRD is not installed) has no objects. A dry run reports
 * what would be done and writes nothing. A shard run decides the shard's objects only.
 */

import { mapLimit } from '../../engine/concurrency.js';
import type { Done } from '../../engine/finalize.js';
import { applyHeld, decideHeld, type HeldInput } from '../../engine/held-finalizers.js';
import type { HeldKind } from '../../engine/kind.js';
import type { RunContext } from '../../engine/run-context.js';
import type { ObjectReport, RunScope } from '../../engine/types.js';
import type { KubeObject } from '../../kube/types.js';
import { describeError, errorCode, KubeApiError } from '../../platform/errors.js';
import { API_DEFINITION } from '../api-definition/kind.js';
import { linkedByApi, subGraphUsers, subgraphRefsOf, superGraphUsers } from './federation.js';
import { SUBGRAPH, SUPERGRAPH } from './kinds.js';
import { graphsUsedBy } from './uses.js';

type Listed = { readonly objects: KubeObject[] } | { readonly failed: true };

/**
 * The SuperGraphs that may hold `sub`: those of its namespace, and those of another that name it
 * under a ReferenceGrant of its namespace (kept when the grants could not be read: a deletion is
 * held on doubt, never let through).
 */
async function permittedSuperGraphs(ctx: RunContext, sub: KubeObject, superGraphs: readonly KubeObject[]): Promise<KubeObject[]> {
  const namespace = sub.metadata.namespace ?? '';
  const to = { group: SUBGRAPH.group, kind: SUBGRAPH.kind, namespace, name: sub.metadata.name };
  const out: KubeObject[] = [];
  for (const s of superGraphs) {
    const from = { group: SUPERGRAPH.group, kind: SUPERGRAPH.kind, namespace: s.metadata.namespace ?? '' };
    const names = subgraphRefsOf(s).some((r) => r.namespace === namespace && r.name === sub.metadata.name);
    if (!names || from.namespace === namespace) {
      out.push(s);
      continue;
    }
    const checked = await ctx.resolver.grants.check('spec.subgraph_refs', from, to);
    if (checked.ok || 'error' in checked) out.push(s);
  }
  return out;
}

/** Every object of `kind` in `namespaces` (undefined: all); a kind the API server does not serve has none. */
async function listKind(ctx: RunContext, kind: HeldKind | typeof API_DEFINITION, namespaces: readonly (string | undefined)[]): Promise<Listed> {
  const objects: KubeObject[] = [];
  for (const ns of namespaces) {
    try {
      objects.push(...(await ctx.deps.kube.list(kind, ns)));
    } catch (err) {
      if (err instanceof KubeApiError && err.status === 404 && kind !== API_DEFINITION) return { objects: [] };
      ctx.runError(`list ${kind.plural}${ns ? ` in ${ns}` : ''}`, err);
      return { failed: true };
    }
  }
  return { objects };
}

const keyOf = (kind: string, o: { namespace?: string; name: string }): string => `${kind}/${o.namespace ?? ''}/${o.name}`;

export async function runGraphPhase(ctx: RunContext, scope: RunScope, apis: readonly Done[]): Promise<ObjectReport[]> {
  const reports: ObjectReport[] = [];
  const watchedAll: (string | undefined)[] = ctx.settings.namespaces ? [...ctx.settings.namespaces] : [undefined];
  const namespaces = [...new Set(scope.namespaces ?? [])].filter((ns) => ctx.watched(ns));
  const found = new Map<string, { kind: HeldKind; obj: KubeObject }>();
  let superList: Listed | undefined;
  for (const kind of ctx.kinds.held) {
    const where = scope.all ? watchedAll : namespaces;
    if (where.length === 0) continue;
    const listed = await listKind(ctx, kind, where);
    if ('failed' in listed) continue;
    if (kind === SUPERGRAPH && scope.all) superList = listed;
    for (const obj of listed.objects) {
      // a shard run decides its own objects only (a range: its names of the namespace)
      if (ctx.owns(obj.metadata.namespace ?? '', obj.metadata.name)) found.set(keyOf(kind.kind, { namespace: obj.metadata.namespace, name: obj.metadata.name }), { kind, obj });
    }
  }
  const held = (scope.cluster ?? []).filter((r) => ctx.kinds.held.some((k) => k.kind === r.kind.kind));
  const named = [...held, ...graphsUsedBy(apis)].filter((r) => ctx.watched(r.namespace) && ctx.owns(r.namespace, r.name) && !found.has(keyOf(r.kind.kind, r)));
  const unique = [...new Map(named.map((r) => [keyOf(r.kind.kind, r), r])).values()];
  await mapLimit(unique, ctx.settings.concurrency, async (r) => {
    try {
      const obj = await ctx.deps.kube.get(r.kind, r.namespace, r.name);
      if (obj) found.set(keyOf(r.kind.kind, r), { kind: r.kind, obj });
    } catch (err) {
      if (err instanceof KubeApiError && err.status === 404) return;
      reports.push({ kind: r.kind.kind, namespace: r.namespace, name: r.name, id: '', action: 'NOOP', reason: 'read failed', result: 'failed', error: describeError(err), code: errorCode(err) });
    }
  });
  if (found.size === 0) return reports;

  // what uses them, read fresh after the API phases
  const objects = [...found.values()];
  const apisOf = new Map<string, KubeObject[] | null>();
  const apiNamespaces = [...new Set(objects.map((o) => o.obj.metadata.namespace ?? ''))];
  if (scope.all) {
    const all = await listKind(ctx, API_DEFINITION, watchedAll);
    for (const ns of apiNamespaces) apisOf.set(ns, 'failed' in all ? null : all.objects.filter((a) => a.metadata.namespace === ns));
  } else {
    for (const ns of apiNamespaces) {
      const listed = await listKind(ctx, API_DEFINITION, [ns]);
      apisOf.set(ns, 'failed' in listed ? null : listed.objects);
    }
  }
  const subs = objects.filter((o) => o.kind === SUBGRAPH);
  if (subs.length > 0 && superList === undefined) superList = await listKind(ctx, SUPERGRAPH, watchedAll);

  const decideAll = (kind: HeldKind, inputOf: (obj: KubeObject, apis: KubeObject[] | null) => HeldInput) =>
    objects
      .filter((o) => o.kind === kind)
      .map(({ obj }) => {
        const input = inputOf(obj, apisOf.get(obj.metadata.namespace ?? '') ?? null);
        return { input, decision: decideHeld(input) };
      });
  const supers = decideAll(SUPERGRAPH, (obj, apis) => ({ kind: SUPERGRAPH, obj, users: apis === null ? null : superGraphUsers(obj, apis) }));
  // a SuperGraph this run releases holds its SubGraphs no more
  const going = new Set(supers.filter((s) => s.decision.what === 'remove').map((s) => keyOf('SuperGraph', s.input.obj.metadata)));
  const superGraphs = superList && !('failed' in superList) ? superList.objects.filter((s) => !going.has(keyOf('SuperGraph', s.metadata))) : null;
  // a SuperGraph of another namespace holds a SubGraph only where a ReferenceGrant lets it name it
  const holding = new Map<string, KubeObject[]>();
  for (const { obj } of objects.filter((o) => o.kind === SUBGRAPH)) {
    if (superGraphs !== null) holding.set(keyOf('SubGraph', obj.metadata), await permittedSuperGraphs(ctx, obj, superGraphs));
  }
  const subDecisions = decideAll(SUBGRAPH, (obj, apis) => ({
    kind: SUBGRAPH,
    obj,
    users: apis === null || superGraphs === null ? null : subGraphUsers(obj, holding.get(keyOf('SubGraph', obj.metadata)) ?? superGraphs, apis),
    ...(apis === null ? {} : { status: { linked_by_api: linkedByApi(obj, apis) } }),
  }));
  for (const batch of [supers, subDecisions]) reports.push(...(await mapLimit(batch, ctx.settings.concurrency, ({ input, decision }) => applyHeld(ctx, input, decision))));
  return reports;
}
