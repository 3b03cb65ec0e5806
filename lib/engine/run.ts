/**
 * The Run: one pipeline for every trigger (design.md, "One pipeline for every trigger").
 *
 *   load ─► plan ─► apply ─► settle ─► report
 *
 * A run takes the kinds in dependency order: ApiDefinitions first, then SecurityPolicies,
 * so a policy created in the same run as its API finds it synced, then the developer portal's
 * kinds (runPortalPhases), whose catalogue entries publish policies. Policies that reference an
 * ApiDefinition the run looked at follow it into the policy phase (an API id change, or an
 * API a policy was waiting for). Every SecurityPolicy of the watched namespaces is listed
 * once per run: references hold the deletion of an ApiDefinition a live policy still uses,
 * and fill `status.linked_by_policies`.
 *
 * Before them, the Ingress phase (ingress.ts) turns Ingresses of our class into ApiDefinitions
 * in the cluster; those it wrote or deleted join the ApiDefinition phase's scope, so they reach
 * the gateway in the same run. After the ApiDefinition phase, template ApiDefinitions get their
 * finalizer, and a template's deletion is held while an Ingress names it (ingress-templates.ts).
 * After the API phases, the SuperGraphs and SubGraphs (cluster-only: graph-phase.ts) of the
 * scope and those the ApiDefinitions used get their finalizer and status, deletions held while
 * in use.
 *
 * After the API phase, certificates we uploaded that no record uses any more are removed
 * (certificates.ts): those the phase's APIs moved off, and on a full run every one we own.
 *
 * Each phase: load (load.ts: one immutable Loaded per object) ─► decide (decide.ts: one pure
 * Decision per object and pass, from one clock reading) ─► for objects that write nothing,
 * finalize (finalize.ts: record, status, Events); for the others, apply (apply.ts: lock,
 * re-read and decide again under the lock, write, settle, finalize, release).
 *
 * A shard of a sharded full run (RunRequest.shard, lib/triggers/schedule.ts) is this pipeline over
 * the shard's namespaces, deciding only the shard's objects: what a phase adds to the next
 * (the APIs an Ingress wrote, the policies following an API) joins only when it is the shard's,
 * as a full run finds those in its own listings; the certificate sweep of a full run is the
 * coordinator's (coordinate.ts), once per tick.
 *
 * Guarantees: nothing is deleted from a gateway because a read failed or was partial (a
 * failed policy listing holds every ApiDefinition deletion); an object whose read failed is
 * reported and left alone; object failures are reported, never thrown. Throws only
 * StoreUnavailableError: without records and locks no safe decision can be made.
 */

import { API_DEFINITION } from '../kinds/api-definition/kind.js';
import { runGraphPhase } from '../kinds/graphs/phase.js';
import { ingressSettings, runIngressPhase } from '../kinds/ingress/phase.js';
import { settleTemplates } from '../kinds/ingress/templates.js';
import { API_DESCRIPTION, isPortalKind, PORTAL_API_CATALOGUE, PORTAL_CONFIG } from '../kinds/portal/kinds.js';
import type { PortalRun } from '../kinds/portal/load.js';
import { SECURITY_POLICY } from '../kinds/security-policy/kind.js';
import { type ApiRef, accessRefs, apiKey, type NamespacedName, parseApiKey, referencingPolicies } from '../kinds/shared/api-links.js';
import { collectCertificates } from '../kinds/shared/certificates.js';
import { TYK_OAS_API_DEFINITION } from '../kinds/tyk-oas-api-definition/kind.js';
import { versionRefsOf } from '../kinds/tyk-oas-api-definition/payload.js';
import type { KubeObject } from '../kube/types.js';
import { describeError, errorCode } from '../platform/errors.js';
import { ListsAhead } from '../scale/list-ahead.js';
import { SNAPSHOT_TTL_MS } from '../scale/snapshot.js';
import { applyLocked, type Planned, type ToWrite, toWrite } from './apply.js';
import { forEachYielding, mapLimit } from './concurrency.js';
import { decideContained, type Loaded, type Moment } from './decide.js';
import { holdDeletions, limitDeletions, tickLimitError } from './delete-limit.js';
import { DEFAULT_BACKOFF } from './error-policy.js';
import { type Done, finalize, httpStatusOf } from './finalize.js';
import type { ManagedKind } from './kind.js';
import { apiKindOf, apiRefOf, apiResolver, type Found, type Identity, loadDesired, loadOrphans, loadState, type ResolveApi, readObjects } from './load.js';
import { statusPatchFailedEvent } from './outcome-events.js';
import { type Contestant, contest, type Refusal } from './owners.js';
import { finishReport, RunContext, reportOf } from './run-context.js';
import type { ObjectReport, RunDeps, RunReport, RunRequest, RunScope, RunSettings } from './types.js';

export type { ObjectReport, RunDeps, RunReport, RunRequest, RunSettings } from './types.js';

export const DEFAULT_RUN_SETTINGS: RunSettings = {
  concurrency: 8,
  lockTtlMs: 15_000,
  lockRenewMs: 5_000,
  getThreshold: 20,
  settle: { budgetMs: 20_000, initialDelayMs: 250, maxDelayMs: 4_000, reloadEveryMs: 3_000 },
  maxDirtyPasses: 5,
  backoff: DEFAULT_BACKOFF,
  deadlineChunk: 500,
  maxDeletesPerRun: 50,
  gatewayWrites: { max: 16, slotTtlMs: 30_000, waitMs: 60_000 },
};

export async function runReconcile(deps: RunDeps, request: RunRequest): Promise<RunReport> {
  const ctx = new RunContext(deps, request);
  const reports: ObjectReport[] = [];
  const ingresses = await runIngressPhase(ctx, request.scope, reports);
  const policies = await ctx.policies((ns) => deps.kube.list(SECURITY_POLICY, ns));
  const classic = await runPhase(ctx, API_DEFINITION, scopeFor(request.scope, API_DEFINITION, owned(ctx, ingresses.apiRefs)), reports, policies, new Map());
  replaceReports(reports, await settleTemplates(ctx, classic, ingressSettings(ctx)));
  const oas = await runOasPhase(ctx, scopeFor(request.scope, TYK_OAS_API_DEFINITION), reports, policies, classic);
  const apis = [...classic, ...oas];
  await runGraphPhase(ctx, request.scope, classic, reports);
  if (request.dryRun !== true) await collectCertificates(ctx, releasedUses(apis), request.scope.all ? gatewaysOf(apis) : []);
  const policyScope = scopeFor(request.scope, SECURITY_POLICY, owned(ctx, followersOf(apis, policies)));
  const policyDone = await runPhase(ctx, SECURITY_POLICY, policyScope, reports, policies, phaseResults(apis));
  if (request.dryRun !== true) await refreshLinks(ctx, policyDone, new Set(apis.map((d) => apiKey(apiRefOf(d.loaded.ref)))), policies);
  await runPortalPhases(ctx, reports, policies, policyDone);
  return finishReport(ctx, reports);
}

/**
 * The developer portal (portal-load.ts, portal-payload.ts), after the policies whose Dashboard
 * ids its entries publish: APIDescriptions, then the PortalAPICatalogues (with those that list a
 * description the run looked at, or publish a policy it wrote: one catalogue write takes an
 * edit of either), then PortalConfigs. A run with none of the portal's kinds in its scope and no
 * policy written (a webhook about an API) has nothing to do here, and does not even load the
 * portal's code (portal-load.ts: a chunk a Lambda bundle loads on first use).
 */
async function runPortalPhases(ctx: RunContext, reports: ObjectReport[], policies: readonly KubeObject[] | undefined, policyDone: readonly Done[]): Promise<void> {
  const scope = ctx.request.scope;
  const written = new Set(policyDone.filter((d) => d.decision.write !== undefined).map((d) => `${d.loaded.ref.namespace}/${d.loaded.ref.name}`));
  const inScope = scope.all === true || (scope.namespaces ?? []).length > 0 || (scope.refs ?? []).some((r) => isPortalKind(r.kind)) || ctx.request.shard !== undefined;
  if (!inScope && written.size === 0) return;
  const { PortalRun } = await import('../kinds/portal/load.js');
  const portal = new PortalRun(ctx, policies, written);
  const descriptions = await runPhase(ctx, API_DESCRIPTION, scopeFor(scope, API_DESCRIPTION), reports, policies, new Map(), portal);
  portal.seen(descriptions.map((d) => d.loaded));
  // a full run, and a shard (its catalogues are in its listing), finds the catalogues in its listing
  const followers = scope.all || ctx.request.shard ? [] : await portal.followers(new Set(descriptions.map((d) => `${d.loaded.ref.namespace}/${d.loaded.ref.name}`)), written);
  await runPhase(ctx, PORTAL_API_CATALOGUE, scopeFor(scope, PORTAL_API_CATALOGUE, followers), reports, policies, new Map(), portal);
  await runPhase(ctx, PORTAL_CONFIG, scopeFor(scope, PORTAL_CONFIG), reports, policies, new Map(), portal);
}

/**
 * The TykOasApiDefinition phase. A versioned API that waited for a version this phase synced
 * (created together) gets a second pass at once, seeing its versions' fresh records, rather
 * than waiting for the next run; its first pass's report is replaced by the second's.
 */
async function runOasPhase(ctx: RunContext, scope: RunScope, reports: ObjectReport[], policies: readonly KubeObject[] | undefined, classic: readonly Done[]): Promise<Done[]> {
  const first: ObjectReport[] = [];
  const done = await runPhase(ctx, TYK_OAS_API_DEFINITION, scope, first, policies, phaseResults(classic));
  const synced = new Set(done.filter((d) => d.record?.result === 'synced' || d.record?.result === 'diverged').map((d) => apiKey(apiRefOf(d.loaded.ref))));
  const again = ctx.request.dryRun === true ? [] : done.filter((d) => d.decision.hold === 'dependency' && d.loaded.obj && versionRefsOf(d.loaded.obj).some((v) => synced.has(apiKey(v.ref))));
  if (again.length === 0) {
    reports.push(...first);
    return done;
  }
  const second: ObjectReport[] = [];
  const redone = await runPhase(ctx, TYK_OAS_API_DEFINITION, { refs: again.map((d) => d.loaded.ref) }, second, policies, phaseResults([...classic, ...done]));
  const keys = new Set(redone.map((d) => d.loaded.key));
  reports.push(...first.filter((r) => !keys.has(`${r.kind}/${r.namespace}/${r.name}`)), ...second);
  return [...done.filter((d) => !keys.has(d.loaded.key)), ...redone];
}

/** How later phases see the APIs a phase looked at: by apiKey, the object and the record it ended with. */
function phaseResults(done: readonly Done[]): Map<string, { obj: KubeObject | null; record: Done['record'] }> {
  return new Map(done.map((d) => [apiKey(apiRefOf(d.loaded.ref)), { obj: d.loaded.obj ?? null, record: d.record }]));
}

/** Uses the objects' records had before this run and have no more (a certificate an API moved off, or of an API deleted). */
function releasedUses(done: readonly Done[]): string[] {
  return done.flatMap((d) => {
    const now = new Set(d.record?.uses ?? []);
    return (d.loaded.record?.uses ?? []).filter((u) => !now.has(u));
  });
}

/** The gateways a full run's objects went to, and the default: where a sweep looks for certificates nobody uses. */
function gatewaysOf(done: readonly Done[]): string[] {
  return [...new Set(['default', ...done.flatMap((d) => [d.record?.gateway, d.loaded.record?.gateway]).filter((g): g is string => g !== undefined)])];
}

/** Puts each of `replacing` in the place of the report of the same object. */
function replaceReports(reports: ObjectReport[], replacing: readonly ObjectReport[]): void {
  for (const r of replacing) {
    const i = reports.findIndex((x) => x.kind === r.kind && x.namespace === r.namespace && x.name === r.name);
    if (i >= 0) reports[i] = r;
    else reports.push(r);
  }
}

/** Of `refs`, those the run decides (a shard run: its own; any other run: all). */
function owned<T extends NamespacedName>(ctx: RunContext, refs: readonly T[]): T[] {
  return refs.filter((r) => ctx.owns(r.namespace, r.name));
}

/** The part of a request's scope that concerns `kind`, plus extra refs of that kind. */
function scopeFor(scope: RunScope, kind: ManagedKind, extra: readonly (NamespacedName & { optional?: boolean })[] = []): RunScope {
  const refs = [...(scope.refs ?? []).filter((r) => r.kind.kind === kind.kind), ...extra.map((r) => ({ kind, ...r }))];
  return { ...(scope.all ? { all: true } : {}), namespaces: scope.namespaces ?? [], refs };
}

/** Policies that reference an API the API phases looked at. */
function followersOf(apis: readonly Done[], policies: readonly KubeObject[] | undefined): NamespacedName[] {
  if (!policies || apis.length === 0) return [];
  const seen = new Set(apis.map((d) => apiKey(apiRefOf(d.loaded.ref))));
  return policies.filter((p) => accessRefs(p).some((r) => seen.has(apiKey(r)))).map((p) => ({ namespace: p.metadata.namespace ?? '', name: p.metadata.name }));
}

const notADependency: ResolveApi = () => ({ ok: false, why: 'is not a dependency' });

/** The APIs a phase's objects reference: a policy's access rights, a Tyk OAS API's versions. */
function dependenciesOf(kind: ManagedKind, objects: readonly Found[]): ApiRef[] {
  const live = objects.flatMap((f) => (f.obj ? [f.obj] : []));
  if (kind === SECURITY_POLICY) return live.flatMap(accessRefs);
  return live.flatMap((o) => versionRefsOf(o).map((v) => v.ref));
}

/** An optional reference (e.g. an OperatorContext's Secret) that is gone and was never ours: not reported. */
function unreported(d: { loaded: Done['loaded'] }): boolean {
  return d.loaded.ref.optional === true && d.loaded.obj === null && !d.loaded.record;
}

/** What one kind's phase works on: the kind, its part of the scope, where reports go, and what earlier phases found. */
interface PhaseInput {
  readonly kind: ManagedKind;
  readonly scope: RunScope;
  readonly reports: ObjectReport[];
  readonly policies: readonly KubeObject[] | undefined;
  readonly apiPhase: ReadonlyMap<string, { obj: KubeObject | null; record: Done['record'] }>;
  readonly portal: PortalRun | undefined;
}

/** Load, decide, and (unless a dry run) apply one kind; returns how each object ended. */
async function runPhase(
  ctx: RunContext,
  kind: ManagedKind,
  scope: RunScope,
  reports: ObjectReport[],
  policies: readonly KubeObject[] | undefined,
  apiPhase: PhaseInput['apiPhase'],
  portal?: PortalRun,
): Promise<Done[]> {
  const empty = !scope.all && (scope.namespaces ?? []).length === 0 && (scope.refs ?? []).length === 0;
  if (empty) return [];
  // what the first decision loaded is let go here: the writers are read again under their locks
  const { quiet, writers, decideAll } = await decidePhase(ctx, { kind, scope, reports, policies, apiPhase, portal });
  const refresh = async (batch: readonly Identity[]) => decideAll(await readObjects(ctx, batch), false);
  const applied: Done[] = [];
  // Without a deadline, every write goes in one batch (one reload). With one, in chunks, each
  // complete (records saved, locks released) before the next is started or left for later.
  const size = ctx.request.deadline === undefined ? Math.max(1, writers.length) : ctx.settings.deadlineChunk;
  for (let i = 0; i < writers.length; i += size) {
    if (ctx.stopping() || ctx.remainingMs() <= 0) {
      const reason = ctx.stopping() ? 'shutting down' : 'out of time';
      for (const w of writers.slice(i)) reports.push({ ...w.deferred, reason });
      break;
    }
    const { done, deferred } = await applyLocked(ctx, writers.slice(i, i + size), refresh);
    reports.push(...deferred, ...done.map((d) => d.report));
    applied.push(...done);
  }
  return [...quiet, ...applied];
}

/**
 * Loads and decides one kind; finalizes the objects that write nothing (or, in a dry run,
 * reports every decision). Returns those, the writers as the apply stage takes them (toWrite),
 * and how to decide a batch again.
 */
async function decidePhase(
  ctx: RunContext,
  { kind, scope, reports, policies, apiPhase, portal }: PhaseInput,
): Promise<{ quiet: Done[]; writers: ToWrite[]; decideAll: (batch: readonly Found[], preferList: boolean) => Promise<Planned[]> }> {
  const listing = scope.all === true || (scope.namespaces ?? []).length > 0;
  const ahead = await listAhead(ctx, kind, listing);
  const desired = await loadDesired(ctx, kind, scope);
  // orphans only after a complete listing: a record whose resource a failed list lacks proves nothing
  const objects = desired.complete ? [...desired.found, ...(await loadOrphans(ctx, kind, scope, desired.found))] : desired.found;
  const resolveApi = kind === API_DEFINITION || isPortalKind(kind) ? notADependency : await apiResolver(ctx, dependenciesOf(kind, objects), apiPhase);
  let refusals: Map<string, Refusal> | undefined;
  // the first decision over a listing may take observed state from a shard's snapshot; a decision under the lock never does
  const decideAll = async (batch: readonly Found[], preferList: boolean, listsAhead?: ListsAhead): Promise<Planned[]> => {
    const snapshot = preferList ? ctx.snapshot : undefined;
    const loaded = await loadState(ctx, batch, {
      policies,
      resolveApi,
      preferList,
      ...(portal ? { portal } : {}),
      ...(snapshot ? { snapshot } : {}),
      ...(listsAhead ? { listsAhead } : {}),
    });
    const adopt = ctx.settings.adoptNamespaces;
    const moment: Moment = { now: ctx.deps.clock.now(), trigger: ctx.request.trigger, backoff: ctx.settings.backoff, ...(adopt ? { adopt } : {}) };
    // who keeps a contested id or listen path is decided once, over the phase's first load; a decision under the lock keeps it
    refusals ??= contest(loaded.flatMap(contestant));
    const planned: Planned[] = [];
    // one object's throw is that object's Invalid outcome, never the phase's (decideContained)
    await forEachYielding(loaded, (l) => {
      const refusal = refusals?.get(l.key);
      planned.push({ loaded: l, decision: decideContained(refusal ? { ...l, refusal } : l, moment) });
    });
    return planned;
  };
  const limit = { max: ctx.settings.maxDeletesPerRun, used: ctx.deletions };
  let { planned, deletions, held } = limitDeletions(await decideAll(objects, listing, ahead), limit);
  // a list read ahead that no read took was sent for nothing: the next run lists after, if at all
  for (const { gateway, kind: gatewayKind } of ahead?.untaken() ?? []) ctx.deps.observedMemo?.forget(gateway, gatewayKind);
  if (held) ctx.log.warn({ kind: kind.kind, deletions, alreadyDeleted: limit.used, max: limit.max }, 'deletions held by MAX_DELETES_PER_RUN');
  else if (await claimTickDeletions(ctx, kind, ctx.deletions + deletions)) ctx.deletions += deletions;
  else planned = holdDeletions(planned, tickLimitError(deletions, limit.max));

  if (ctx.request.dryRun === true) {
    const quiet = planned.map((p) => {
      const quiet = p.decision.quiet?.result;
      const result = quiet === 'failed' || quiet === 'held' || quiet === 'paused' ? quiet : p.decision.action === 'WAIT' ? 'waiting' : 'planned';
      const done: Done = { ...p, record: p.loaded.record, report: reportOf(p.loaded, p.decision, result) };
      if (!unreported(p)) reports.push(done.report);
      return done;
    });
    return { quiet, writers: [], decideAll };
  }
  const quiet = await mapLimit(
    planned.filter((p) => !p.decision.write),
    ctx.settings.concurrency,
    (p) => finalize(ctx, p),
  );
  for (const d of quiet) if (!unreported(d)) reports.push(d.report);
  return { quiet, writers: planned.filter((p) => p.decision.write).map(toWrite), decideAll };
}

/** A loaded object as the contest over ids and listen paths sees it: live, valid, with a gateway and an owner read. */
function contestant(l: Loaded): Contestant[] {
  const obj = l.obj;
  if (!obj || obj.metadata.deletionTimestamp || !l.target || !l.desired || l.desired.invalid !== undefined || l.owner === undefined || l.readError !== undefined) return [];
  return [{ key: l.key, kind: l.kind, obj, gateway: l.target.name, id: l.desired.id, owner: l.owner, body: l.body }];
}

/**
 * For a full (or namespaces') run's first decision of `kind`: the default gateway's list of it,
 * started now, before the API server is paged through (list-ahead.ts), where this process has
 * listed that kind there and kept answers by digest (so this run will list it again, and most
 * of the list will be known by its bytes; a first run, or a gateway whose client gives no
 * digests, the Dashboard's, lists after). A shard run takes its tick's snapshot instead; the
 * portal's kinds are read otherwise.
 */
async function listAhead(ctx: RunContext, kind: ManagedKind, listing: boolean): Promise<ListsAhead | undefined> {
  const memo = ctx.deps.observedMemo;
  if (!listing || !memo || ctx.snapshot || isPortalKind(kind)) return undefined;
  const target = await ctx.resolver.byName(undefined);
  if ('error' in target || !memo.has(target.gateway.name, kind.gatewayKind)) return undefined;
  const ahead = new ListsAhead();
  ahead.start(target.gateway, kind.gatewayKind, memo.reading(target.gateway.name, kind.gatewayKind));
  return ahead;
}

/**
 * A shard run's deletions so far (`total`, this phase's included) claimed against its tick's
 * MAX_DELETES_PER_RUN, shared by all the tick's shards (delete-limit.ts); true when they fit,
 * or when there is nothing to claim (not a shard, no limit, a dry run, no deletion).
 */
async function claimTickDeletions(ctx: RunContext, kind: ManagedKind, total: number): Promise<boolean> {
  const shard = ctx.request.shard;
  const max = ctx.settings.maxDeletesPerRun;
  if (shard === undefined || max === 0 || ctx.request.dryRun === true || total === ctx.deletions) return true;
  const granted = await ctx.deps.store.claim(`deletions:${shard.runId}`, `shard-${shard.index}`, total, max, SNAPSHOT_TTL_MS);
  if (!granted) ctx.log.warn({ kind: kind.kind, deletions: total - ctx.deletions, max }, 'deletions held: the tick\u2019s MAX_DELETES_PER_RUN is taken by other shards');
  return granted;
}

/**
 * After the policy phase: APIs (both kinds) whose set of referencing policies changed but that
 * the API phases did not look at get their `status.linked_by_policies` (ApiDefinition) or
 * `status.linkedByPolicies` (TykOasApiDefinition) brought up to date.
 */
async function refreshLinks(ctx: RunContext, policyDone: readonly Done[], done: ReadonlySet<string>, policies: readonly KubeObject[] | undefined): Promise<void> {
  if (!policies) return;
  const touched = new Map<string, ApiRef>();
  for (const d of policyDone) {
    for (const r of d.loaded.links ?? []) touched.set(apiKey(r), r);
    // the links of the record before this run: an API a policy no longer references is refreshed too
    for (const key of d.loaded.record?.links ?? []) {
      const ref = parseApiKey(key);
      if (ref) touched.set(key, ref);
    }
  }
  // a shard leaves the APIs of other shards to them: their API phase sets the field from every policy
  const todo = [...touched.entries()].filter(([key, r]) => !done.has(key) && ctx.owns(r.namespace, r.name)).map(([, r]) => r);
  await mapLimit(todo, ctx.settings.concurrency, async (ref) => {
    if (!ctx.watched(ref.namespace)) return;
    const kind = apiKindOf(ref);
    const field = kind === API_DEFINITION ? 'linked_by_policies' : 'linkedByPolicies';
    let api: KubeObject | null;
    try {
      api = await ctx.deps.kube.get(kind, ref.namespace, ref.name);
    } catch (err) {
      ctx.log.warn({ api: apiKey(ref), err: describeError(err) }, `could not update ${field}`);
      return;
    }
    if (!api?.status?.[kind.statusIdField]) return;
    const linked = referencingPolicies(ref, policies);
    const current = Array.isArray(api.status[field]) ? api.status[field] : [];
    if (JSON.stringify(current) === JSON.stringify(linked)) return;
    try {
      await ctx.deps.kube.patchStatus(kind, api, { [field]: linked.length > 0 ? linked : null });
    } catch (err) {
      const error = describeError(err);
      ctx.log.warn({ key: `${kind.kind}/${ref.namespace}/${ref.name}`, err: error, code: errorCode(err), status: httpStatusOf(err) }, 'status patch failed');
      const ev = statusPatchFailedEvent(error);
      await ctx.deps.kube.recordEvent(api, ev.type, ev.reason, ev.message).catch((e: unknown) => ctx.log.warn({ api: apiKey(ref), err: describeError(e) }, 'event not recorded'));
    }
  });
}
