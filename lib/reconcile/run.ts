/**
 * The Run: one pipeline for every trigger (design.md, "One pipeline for every trigger").
 *
 *   load ─► plan ─► apply ─► settle ─► report
 *
 * A run takes the kinds in dependency order: ApiDefinitions first, then SecurityPolicies,
 * so a policy created in the same run as its API finds it synced. Policies that reference an
 * ApiDefinition the run looked at follow it into the policy phase (an API id change, or an
 * API a policy was waiting for). Every SecurityPolicy of the watched namespaces is listed
 * once per run: references hold the deletion of an ApiDefinition a live policy still uses,
 * and fill `status.linked_by_policies`.
 *
 * Guarantees: nothing is deleted from a gateway because a read failed or was partial (a
 * failed policy listing holds every ApiDefinition deletion); an object whose read failed is
 * reported and left alone; object failures are reported, never thrown. Throws only
 * StoreUnavailableError: without records and locks no safe decision can be made.
 * Stages live in load.ts and apply.ts; the shared state in run-context.ts.
 */
import type { KubeObject } from '../kube/types.js';
import { describeError, errorCode } from '../errors.js';
import { applyLocked, finishQuiet, httpStatusOf, writes } from './apply.js';
import { mapLimit } from './concurrency.js';
import { DEFAULT_BACKOFF } from './error-policy.js';
import { API_DEFINITION, type ManagedKind, SECURITY_POLICY } from '../kinds.js';
import { accessRefs, type NamespacedName, nsName, referencingPolicies } from './links.js';
import { computeDesired, loadDesired, loadObserved, loadOrphans, loadRecords, loadTargets, newItem, planItem } from './load.js';
import { statusPatchFailedEvent } from './outcome-events.js';
import type { ApiResolution } from './policy-payload.js';
import { finishReport, type Item, RunContext, reportFor } from './run-context.js';
import type { ObjectReport, RunDeps, RunReport, RunRequest, RunScope, RunSettings } from './types.js';
import type { GatewayTarget } from '../gateway/targets.js';
import type { SyncRecord } from '../store/types.js';

export type { ObjectReport, ObjectResult, RunDeps, RunReport, RunRequest, RunScope, RunSettings, SettleSettings, Trigger } from './types.js';

export const DEFAULT_RUN_SETTINGS: RunSettings = {
  concurrency: 8,
  lockTtlMs: 10 * 60_000,
  getThreshold: 20,
  settle: { budgetMs: 20_000, initialDelayMs: 250, maxDelayMs: 4_000, reloadEveryMs: 3_000 },
  maxDirtyPasses: 5,
  backoff: DEFAULT_BACKOFF,
  deadlineChunk: 500,
};

export async function runReconcile(deps: RunDeps, request: RunRequest): Promise<RunReport> {
  const ctx = new RunContext(deps, request);
  const reports: ObjectReport[] = [];
  const policies = await ctx.policies((ns) => deps.kube.list(SECURITY_POLICY, ns));
  const apis = await runPhase(ctx, API_DEFINITION, scopeFor(request.scope, API_DEFINITION), reports, policies, new Map());
  const followers = followersOf(apis, policies);
  const policyScope = scopeFor(request.scope, SECURITY_POLICY, followers);
  const policyItems = await runPhase(ctx, SECURITY_POLICY, policyScope, reports, policies, new Map(apis.map((i) => [nsName(i.ref), i])));
  if (request.dryRun !== true) await refreshLinks(ctx, policyItems, new Set(apis.map((i) => nsName(i.ref))), policies);
  return finishReport(ctx, reports);
}

/** The part of a request's scope that concerns `kind`, plus extra refs of that kind. */
function scopeFor(scope: RunScope, kind: ManagedKind, extra: NamespacedName[] = []): RunScope {
  const refs = [...(scope.refs ?? []).filter((r) => r.kind.kind === kind.kind), ...extra.map((r) => ({ kind, ...r }))];
  return { ...(scope.all ? { all: true } : {}), namespaces: scope.namespaces ?? [], refs };
}

/** Policies that reference an ApiDefinition the API phase looked at. */
function followersOf(apis: Item[], policies: KubeObject[] | undefined): NamespacedName[] {
  if (!policies || apis.length === 0) return [];
  const seen = new Set(apis.map((i) => nsName(i.ref)));
  return policies
    .filter((p) => accessRefs(p).some((r) => seen.has(nsName(r))))
    .map((p) => ({ namespace: p.metadata.namespace ?? '', name: p.metadata.name }));
}

/** Load, plan, and (unless a dry run) apply one kind; returns its items. */
async function runPhase(
  ctx: RunContext,
  kind: ManagedKind,
  scope: RunScope,
  reports: ObjectReport[],
  policies: KubeObject[] | undefined,
  apiItems: Map<string, Item>,
): Promise<Item[]> {
  const empty = !scope.all && (scope.namespaces ?? []).length === 0 && (scope.refs ?? []).length === 0;
  if (empty) return [];
  const { items, complete } = await loadDesired(ctx, kind, scope);
  if (complete) items.push(...(await loadOrphans(ctx, kind, scope, items)));
  const resolveApi = await apiResolver(ctx, kind, items, apiItems);
  const prepare = async (batch: Item[], preferList: boolean) => {
    await loadRecords(ctx, batch.filter((i) => i.readError === undefined));
    await loadTargets(ctx, batch);
    for (const item of batch) computeDesired(ctx, item, resolveApi, policies);
    await loadObserved(ctx, batch, preferList);
    for (const item of batch) {
      planItem(ctx, item);
      decorate(item, policies);
    }
  };
  await prepare(items, scope.all === true || (scope.namespaces ?? []).length > 0);

  if (ctx.request.dryRun === true) {
    for (const item of items) {
      if (item.ref.optional && item.obj === null && !item.record) continue;
      reports.push(reportFor(item, item.readError || item.targetError ? 'failed' : item.plan?.action === 'WAIT' ? 'waiting' : 'planned'));
    }
    return items;
  }
  const active = items.filter(writes);
  const quiet = items.filter((i) => !writes(i));
  await mapLimit(quiet, ctx.settings.concurrency, (item) => finishQuiet(ctx, item));
  for (const i of quiet) if (!(i.ref.optional && i.obj === null && !i.record)) reports.push(i.report ?? reportFor(i, 'unchanged'));
  const refresh = async (batch: Item[]) => {
    await reread(ctx, batch);
    await prepare(
      batch.filter((i) => i.readError === undefined),
      false,
    );
  };
  // Without a deadline, every write goes in one batch (one reload). With one, in chunks, each
  // complete (records saved, locks released) before the next is started or left for later.
  const size = ctx.request.deadline === undefined ? Math.max(1, active.length) : ctx.settings.deadlineChunk;
  for (let i = 0; i < active.length; i += size) {
    if (ctx.remainingMs() <= 0) {
      for (const item of active.slice(i)) reports.push({ ...reportFor(item, 'deferred'), reason: 'out of time' });
      break;
    }
    for (const r of await applyLocked(ctx, active.slice(i, i + size), refresh)) reports.push(r);
  }
  return items;
}

/**
 * Kind-specific decisions on top of plan(): an ApiDefinition's deletion waits while live
 * policies reference it (or while we cannot tell); statuses carry the links.
 */
function decorate(item: Item, policies: KubeObject[] | undefined): void {
  if (item.kind === API_DEFINITION) {
    const holders = policies ? referencingPolicies(item.ref, policies) : undefined;
    if (holders) item.statusExtra = { linked_by_policies: holders };
    if (item.plan?.action === 'DELETE' && (holders === undefined || holders.length > 0)) {
      item.plan = { ...item.plan, action: 'WAIT', reason: 'referenced by policies' };
      item.waitReason =
        holders === undefined
          ? 'deletion held: the SecurityPolicies referencing it could not be listed'
          : `deletion held: still referenced by SecurityPolicy ${holders.map(nsName).join(', ')}`;
    }
  } else if (item.links) {
    item.statusExtra = { linked_apis: [...item.links].sort((a, b) => nsName(a).localeCompare(nsName(b))) };
  }
}

/**
 * How a policy phase sees the ApiDefinitions it references: from the API phase of this run
 * when it looked at them (fresh records), else read once (object and record). An API
 * resolves when it exists, is not being deleted, goes to the same gateway, and was synced
 * there; its gateway id is the recorded one.
 */
async function apiResolver(
  ctx: RunContext,
  kind: ManagedKind,
  items: Item[],
  apiItems: Map<string, Item>,
): Promise<(ref: NamespacedName, target: GatewayTarget) => ApiResolution> {
  if (kind !== SECURITY_POLICY) return () => ({ ok: false, why: 'is not a dependency' });
  const wanted = new Map<string, NamespacedName>();
  for (const item of items) for (const r of item.obj ? accessRefs(item.obj) : []) if (!apiItems.has(nsName(r))) wanted.set(nsName(r), r);
  const known = new Map<string, { obj: KubeObject | null; record: SyncRecord | null; error?: string }>();
  for (const [key, item] of apiItems) known.set(key, { obj: item.obj ?? null, record: item.record ?? null });
  const extra = [...wanted.values()].map((r) => newItem(API_DEFINITION, { kind: API_DEFINITION, ...r }));
  await mapLimit(extra, ctx.settings.concurrency, async (item) => {
    try {
      item.obj = ctx.watched(item.ref.namespace) ? await ctx.deps.kube.get(API_DEFINITION, item.ref.namespace, item.ref.name) : null;
    } catch (err) {
      item.readError = err;
    }
  });
  await loadRecords(ctx, extra);
  for (const item of extra) known.set(nsName(item.ref), { obj: item.obj ?? null, record: item.record ?? null, ...(item.readError ? { error: 'could not be read' } : {}) });
  return (ref, target) => {
    const api = known.get(nsName(ref));
    if (!api || api.error) return { ok: false, why: api?.error ?? 'could not be read' };
    if (!api.obj) return { ok: false, why: 'does not exist' };
    if (api.obj.metadata.deletionTimestamp) return { ok: false, why: 'is being deleted' };
    const rec = api.record;
    if (!rec || (rec.result !== 'synced' && rec.result !== 'diverged')) return { ok: false, why: 'is not synced yet' };
    if ((rec.gateway ?? 'default') !== target.name) return { ok: false, why: `is on another gateway (${rec.gateway ?? 'default'})` };
    const name = typeof api.obj.spec?.name === 'string' ? api.obj.spec.name : api.obj.metadata.name;
    return { ok: true, id: rec.id, name };
  };
}

/** Under the lock: the object may have changed since load (its record and gateway state are re-read by prepare). */
async function reread(ctx: RunContext, items: Item[]): Promise<void> {
  if (items.length > ctx.settings.getThreshold) return relist(ctx, items);
  await mapLimit(items, ctx.settings.concurrency, async (item) => {
    item.readError = undefined;
    try {
      item.obj = await ctx.deps.kube.get(item.kind, item.ref.namespace, item.ref.name);
    } catch (err) {
      item.readError = err;
    }
  });
}

/** Many objects: re-read them with one (paginated) LIST per namespace instead of a GET each. */
async function relist(ctx: RunContext, items: Item[]): Promise<void> {
  const groups = new Map<string, Item[]>();
  for (const item of items) groups.set(`${item.kind.kind}\u0000${item.ref.namespace}`, [...(groups.get(`${item.kind.kind}\u0000${item.ref.namespace}`) ?? []), item]);
  for (const group of groups.values()) {
    const { kind, ref } = group[0]!;
    try {
      const current = new Map((await ctx.deps.kube.list(kind, ref.namespace)).map((o) => [o.metadata.name, o]));
      // the list is complete (or it threw), so an object it lacks is confirmed gone
      for (const item of group) {
        item.readError = undefined;
        item.obj = current.get(item.ref.name) ?? null;
      }
    } catch (err) {
      for (const item of group) item.readError = err;
    }
  }
}

/**
 * After the policy phase: ApiDefinitions whose set of referencing policies changed but that
 * the API phase did not look at get their `status.linked_by_policies` brought up to date.
 */
async function refreshLinks(ctx: RunContext, policyItems: Item[], done: Set<string>, policies: KubeObject[] | undefined): Promise<void> {
  if (!policies) return;
  const touched = new Map<string, NamespacedName>();
  for (const item of policyItems) {
    for (const r of item.links ?? []) touched.set(nsName(r), r);
    for (const key of item.record?.links ?? []) {
      const [namespace, name] = key.split('/');
      if (namespace && name) touched.set(key, { namespace, name });
    }
  }
  const todo = [...touched.entries()].filter(([key]) => !done.has(key)).map(([, r]) => r);
  await mapLimit(todo, ctx.settings.concurrency, async (ref) => {
    if (!ctx.watched(ref.namespace)) return;
    let api: KubeObject | null;
    try {
      api = await ctx.deps.kube.get(API_DEFINITION, ref.namespace, ref.name);
    } catch (err) {
      ctx.log.warn({ api: nsName(ref), err: describeError(err) }, 'could not update linked_by_policies');
      return;
    }
    if (!api || !api.status?.api_id) return;
    const linked = referencingPolicies(ref, policies);
    const current = Array.isArray(api.status.linked_by_policies) ? api.status.linked_by_policies : [];
    if (JSON.stringify(current) === JSON.stringify(linked)) return;
    try {
      await ctx.deps.kube.patchStatus(API_DEFINITION, api, { linked_by_policies: linked.length > 0 ? linked : null });
    } catch (err) {
      const error = describeError(err);
      ctx.log.warn({ key: `ApiDefinition/${nsName(ref)}`, err: error, code: errorCode(err), status: httpStatusOf(err) }, 'status patch failed');
      const ev = statusPatchFailedEvent(error);
      await ctx.deps.kube.recordEvent(api, ev.type, ev.reason, ev.message).catch((e: unknown) => ctx.log.warn({ api: nsName(ref), err: describeError(e) }, 'event not recorded'));
    }
  });
}
