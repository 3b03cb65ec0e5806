/**
 * One kind's phase, the same for every kind: load (load.ts: one Loaded per object, the kind's
 * view from ManagedKind.begin) ─► decide (decide.ts: one pure Decision per object and pass, from
 * one clock reading) ─► for objects that write nothing, finalize (finalize.ts: record, status,
 * Events; their records saved together, in batches, when they are all finalized); for the others, apply (apply.ts: lock, re-read and decide again under the lock,
 * write, settle, finalize, release). It returns its reports and what each object ended with
 * (the kind's outcome: RunContext.outcomes, which later phases read).
 *
 * Around it: a full run's gateway list read ahead of the API server (list-ahead.ts), the contest
 * over ids and routes (owners.ts), MAX_DELETES_PER_RUN (delete-limit.ts, and a shard's share of
 * its tick's), a dry run's report of every decision (a planned write's changes, field by field,
 * and what the writes would cost: preview.ts), and writes in chunks under a deadline.
 * Names no kind. Throws only StoreUnavailableError.
 */
import type { NamespacedName } from '../kube/types.js';
import { ListsAhead } from '../scale/list-ahead.js';
import { SNAPSHOT_TTL_MS } from '../scale/shards.js';
import { applyLocked, type Planned, type ToWrite, toWrite } from './apply.js';
import { type GatewayCalls, NO_CALLS, sumCalls } from './calls.js';
import { forEachYielding, mapLimit } from './concurrency.js';
import { type Decision, decideContained, exhaustive, type Loaded, type Moment, type QuietDecision, type WriteDecision } from './decide.js';
import { holdDeletions, limitDeletions, tickLimitError } from './delete-limit.js';
import { type Done, finalize } from './finalize.js';
import type { ManagedKind, PhaseResult, RegistryEntry } from './kind.js';
import { type Found, type Identity, loadDesired, loadOrphans, loadState, readObjects } from './load.js';
import { type Contestant, contest, type Refusal } from './owners.js';
import { type RunContext, reportOf } from './run-context.js';
import type { ObjectReport, ObjectResult, RunScope } from './types.js';

/** The part of a request's scope that concerns `kind`, plus extra refs of that kind. */
export function scopeFor(scope: RunScope, kind: ManagedKind, extra: readonly (NamespacedName & { optional?: boolean })[] = []): RunScope {
  const refs = [...(scope.refs ?? []).filter((r) => r.kind.kind === kind.kind), ...extra.map((r) => ({ kind, ...r }))];
  return { ...(scope.all ? { all: true } : {}), namespaces: scope.namespaces ?? [], refs };
}

/** Of `refs`, those the run decides (a shard run: its own; any other run: all). */
export function owned<T extends NamespacedName>(ctx: RunContext, refs: readonly T[]): T[] {
  return refs.filter((r) => ctx.owns(r.namespace, r.name));
}

/** An optional reference (e.g. an OperatorContext's Secret) that is gone and was never ours: not reported. */
function unreported(d: { loaded: Done['loaded'] }): boolean {
  return d.loaded.ref.optional === true && d.loaded.obj === null && !d.loaded.record;
}

/** How a phase of one kind ended: each object's outcome, and the reports it makes. */
export interface KindRun {
  readonly done: readonly Done[];
  readonly reports: readonly ObjectReport[];
  /** what its writes cost the gateways */
  readonly calls: GatewayCalls;
}

/**
 * `kind`'s phase over `scope`. Returns how each object ended and its reports; the caller keeps
 * the outcome for later phases (runKindPhase does) and returns the reports to the run.
 */
export async function runKind(ctx: RunContext, kind: ManagedKind, scope: RunScope): Promise<KindRun> {
  const empty = !scope.all && (scope.namespaces ?? []).length === 0 && (scope.refs ?? []).length === 0;
  if (empty) return { done: [], reports: [], calls: NO_CALLS };
  const reports: ObjectReport[] = [];
  // what the first decision loaded is let go here: the writers are read again under their locks
  const { quiet, writers, decideAll, previewed } = await decidePhase(ctx, kind, scope, reports);
  const refresh = async (batch: readonly Identity[]) => decideAll(await readObjects(ctx, batch), false);
  const applied: Done[] = [];
  const calls: GatewayCalls[] = [];
  // Without a deadline, every write goes in one batch (one reload). With one, in chunks, each
  // complete (records saved, locks released) before the next is started or left for later.
  const size = ctx.request.deadline === undefined ? Math.max(1, writers.length) : ctx.settings.deadlineChunk;
  for (let i = 0; i < writers.length; i += size) {
    if (ctx.stopping() || ctx.remainingMs() <= 0) {
      const reason = ctx.stopping() ? 'shutting down' : 'out of time';
      for (const w of writers.slice(i)) reports.push({ ...w.deferred, reason });
      break;
    }
    const chunk = await applyLocked(ctx, writers.slice(i, i + size), refresh);
    reports.push(...chunk.deferred, ...chunk.done.map((d) => d.report));
    applied.push(...chunk.done);
    calls.push(chunk.calls);
  }
  return { done: [...quiet, ...applied], reports, calls: previewed ?? sumCalls(calls) };
}

/** The phase most kinds are: `kind` over the request's part for it and what earlier phases asked it to follow; its outcome kept for later phases. */
export async function runKindPhase(ctx: RunContext, kind: ManagedKind): Promise<PhaseResult> {
  const { done, reports, calls } = await runKind(ctx, kind, scopeFor(ctx.request.scope, kind, owned(ctx, ctx.followed(kind))));
  ctx.setOutcomes(kind, done);
  return { reports, calls };
}

/** The registry line of a kind whose step is its phase alone: `kindEntry(MY_KIND)`. */
export function kindEntry(kind: ManagedKind): RegistryEntry {
  return {
    managed: [kind],
    phases: [
      {
        name: kind.plural,
        run: (ctx) => runKindPhase(ctx, kind),
      },
    ],
  };
}

/**
 * Loads and decides one kind; finalizes the objects that write nothing (or, in a dry run,
 * reports every decision, a write's with its changes). Returns those, the writers as the apply
 * stage takes them (toWrite), how to decide a batch again, and, in a dry run, what its writes
 * would cost.
 */
async function decidePhase(
  ctx: RunContext,
  kind: ManagedKind,
  scope: RunScope,
  reports: ObjectReport[],
): Promise<{ quiet: Done[]; writers: ToWrite[]; decideAll: (batch: readonly Found[], preferList: boolean) => Promise<Planned[]>; previewed?: GatewayCalls }> {
  const listing = scope.all === true || (scope.namespaces ?? []).length > 0;
  const ahead = await listAhead(ctx, kind, listing);
  const desired = await loadDesired(ctx, kind, scope);
  // orphans only after a complete listing: a record whose resource a failed list lacks proves nothing
  const objects = desired.complete ? [...desired.found, ...(await loadOrphans(ctx, kind, scope, desired.found))] : desired.found;
  const phase = await kind.begin(
    ctx,
    objects.map((f) => ({ ...f, record: null })),
  );
  let refusals: Map<string, Refusal> | undefined;
  // the first decision over a listing may take observed state from a shard's snapshot; a decision under the lock never does
  const decideAll = async (batch: readonly Found[], preferList: boolean, listsAhead?: ListsAhead): Promise<Planned[]> => {
    const snapshot = preferList ? await ctx.snapshot() : undefined;
    const loaded = await loadState(ctx, batch, { phase, preferList, ...(snapshot ? { snapshot } : {}), ...(listsAhead ? { listsAhead } : {}) });
    const adopt = ctx.settings.adoptNamespaces;
    const moment: Moment = { now: ctx.deps.clock.now(), trigger: ctx.request.trigger, backoff: ctx.settings.backoff, ...(adopt ? { adopt } : {}) };
    // who keeps a contested id or route is decided once, over the phase's first load; a decision under the lock keeps it
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
    // a dry run's preview (preview.ts, changes.ts) is loaded only by a dry run that asks for it
    const preview = ctx.request.decisionsOnly === true ? undefined : await (await import('./preview.js')).previewWrites(ctx, planned);
    const quiet = planned.map((p, i) => {
      const changes = preview?.changes[i];
      const extra = { ...dryRunError(p.decision), ...(changes ? { changes: [...changes] } : {}) };
      const done: Done = { ...p, record: p.loaded.record, report: reportOf(p.loaded, p.decision, dryRunResult(p.decision), extra) };
      if (!unreported(p)) reports.push(done.report);
      return done;
    });
    return { quiet, writers: [], decideAll, ...(preview ? { previewed: preview.calls } : {}) };
  }
  const { nothing, writes } = byWhatTheyDo(planned);
  let quiet: Done[];
  try {
    quiet = await mapLimit(nothing, ctx.settings.concurrency, (p) => finalize(ctx, p));
  } finally {
    // their records, in batches (ctx.records), before the writers are locked
    await ctx.records.flush();
  }
  for (const d of quiet) if (!unreported(d)) reports.push(d.report);
  return { quiet, writers: writes.map(toWrite), decideAll };
}

/** A quiet outcome's error and code, as a dry run reports them (why it waits, is invalid, failed, is paused). */
function dryRunError(d: Decision): Partial<ObjectReport> {
  if (d.what !== 'quiet' || d.outcome.error === undefined) return {};
  return { error: d.outcome.error, ...(d.outcome.code !== undefined ? { code: d.outcome.code } : {}) };
}

/** What a dry run reports for a decision: a quiet outcome that held, failed, paused or found it invalid as such, a wait as waiting, else planned. */
function dryRunResult(d: Decision): ObjectResult {
  switch (d.what) {
    case 'quiet': {
      const result = d.outcome.result;
      return result === 'failed' || result === 'held' || result === 'paused' || result === 'invalid' ? result : d.action === 'WAIT' ? 'waiting' : 'planned';
    }
    case 'upsert':
    case 'remove':
      return 'planned';
    default:
      return exhaustive(d);
  }
}

/** `planned`, in order, split into the objects that write nothing and those that write. */
function byWhatTheyDo(planned: readonly Planned[]): { nothing: Planned<QuietDecision>[]; writes: Planned<WriteDecision>[] } {
  const nothing: Planned<QuietDecision>[] = [];
  const writes: Planned<WriteDecision>[] = [];
  for (const { loaded, decision } of planned) {
    switch (decision.what) {
      case 'quiet':
        nothing.push({ loaded, decision });
        break;
      case 'upsert':
      case 'remove':
        writes.push({ loaded, decision });
        break;
      default:
        exhaustive(decision);
    }
  }
  return { nothing, writes };
}

/** A loaded object as the contest over ids and routes sees it: live, valid, with a gateway and an owner read. */
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
 * digests, lists after). A shard run takes its tick's snapshot instead; a kind the gateway
 * lists whole is read otherwise.
 */
async function listAhead(ctx: RunContext, kind: ManagedKind, listing: boolean): Promise<ListsAhead | undefined> {
  const memo = ctx.deps.observedMemo;
  if (!listing || !memo || ctx.request.shard !== undefined || kind.listedWhole === true) return undefined;
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
