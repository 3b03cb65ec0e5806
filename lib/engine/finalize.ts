/**
 * The finalize stage: records what happened to one object. Given a decision that wrote nothing
 * (`finalize`), or a write and what carrying it out did (`finalizeWrite`), it saves the record
 * (the decision's, or recordAfter's), patches the status only when it changes, removes the
 * finalizer of a deleted object, and tells the outcome in Kubernetes Events
 * (outcome-events.ts). A status patch the API server refuses goes in the report
 * (`statusError`) and in a Warning, without failing anything else; an Event that cannot be
 * recorded is logged. Records are not saved one by one: they are queued in the run's
 * RecordWriter (ctx.records, run-context.ts), and the caller flushes it (one store call for up
 * to 500 records; an owner entry claimed again for a quiet object likewise) before it gives
 * the object's lock back (apply.ts) or ends its stage (phase.ts), so a record is still saved
 * before its lock is released; a flush that fails (StoreUnavailableError) fails the pass as a
 * save did. Throws only StoreUnavailableError.
 */

import type { JsonObject } from '../gateway/types.js';
import type { KubeObject } from '../kube/types.js';
import { describeError, errorCode, StoreUnavailableError } from '../platform/errors.js';
import type { SyncRecord } from '../store/types.js';
import type { Carried, Planned, Written } from './apply.js';
import type { ConditionFacts } from './conditions.js';
import { type Decision, exhaustive, type Happened, holdOf, knownId, type Loaded, type QuietDecision, recordAfter, type WriteDecision } from './decide.js';
import { defaultId } from './ids.js';
import { type OutcomeEvent, outcomeEvent, statusPatchFailedEvent } from './outcome-events.js';
import { errorFields, type RunContext, reportOf } from './run-context.js';
import { statusPatch } from './status.js';
import type { ObjectReport } from './types.js';

/** How one object ended: what load found, what was decided, the record now stored (null: none), and its report. */
export interface Done {
  readonly loaded: Loaded;
  readonly decision: Decision;
  readonly record: SyncRecord | null;
  readonly report: ObjectReport;
}

/** Patches the status from a record when it changes; returns the record, with what the answer taught about conditions. */
type Patch = (r: SyncRecord) => Promise<SyncRecord>;

/** Finalizes an object nothing was written for: the decision's outcome, known since it was made. */
export function finalize(ctx: RunContext, { loaded: l, decision: d }: Planned<QuietDecision>): Promise<Done> {
  return ending(ctx, l, d, l.obj, false, l.observedBody, async (patch) => {
    const q = d.outcome;
    let record: SyncRecord | null = l.record;
    if (q.save) record = await save(ctx, q.save);
    if (d.reclaim) ctx.records.reclaim({ key: d.reclaim.key, owner: d.reclaim.as });
    if (d.patchStatus && record) record = await patch(record);
    return { record, report: reportOf(l, d, q.result, { ...(q.error ? { error: q.error } : {}), ...(q.code ? { code: q.code } : {}) }) };
  });
}

/** Finalizes a write: the record its outcome leads to (recordAfter). */
export function finalizeWrite(ctx: RunContext, { loaded: l, decision: d, carried }: Written): Promise<Done> {
  const obj = carried.obj ?? l.obj;
  return ending(ctx, l, d, obj, true, carried.observedBody, async (patch) => {
    const after = recordAfter(d, l, happenedOf(d, carried));
    if (after.record === null) {
      try {
        await letGo(ctx, l, d, obj);
        await ctx.deps.store.deleteRecord(l.key);
        return { record: null, report: reportOf(l, d, 'deleted') };
      } catch (err) {
        if (err instanceof StoreUnavailableError) throw err;
        return { record: l.record, report: reportOf(l, d, 'failed', errorFields(err)) };
      }
    }
    let record = await save(ctx, after.record);
    if (d.patchStatus) record = await patch(record);
    const extra = carried.error !== undefined ? errorFields(carried.error) : record.error ? { error: record.error } : {};
    return { record, report: reportOf(l, d, after.result, extra) };
  });
}

/**
 * What finalizing every decision shares: `recorded` saves the record (with `patch` for the
 * status), then a refused status patch goes in the report, and the outcome is told in Events.
 * `resource` is the object as the write left it (else as loaded); `wrote`: a write was carried out.
 */
async function ending(
  ctx: RunContext,
  l: Loaded,
  d: Decision,
  resource: KubeObject | null | undefined,
  wrote: boolean,
  observedBody: JsonObject | null | undefined,
  recorded: (patch: Patch) => Promise<{ record: SyncRecord | null; report: ObjectReport }>,
): Promise<Done> {
  let obj = resource;
  let statusError: string | undefined;
  const patch: Patch = async (r) => {
    if (!obj) return r;
    const facts = conditionFacts(l, d, r);
    const known = r.conditionsPruned === true;
    // a write of a new generation looks again, so a CRD that started keeping them is noticed
    const recheck = wrote && l.record?.generation !== facts.generation;
    const conditions = { facts, time: d.time, pruned: known && !recheck };
    const p = statusPatch(l.kind, obj.status, r, d.statusExtra ?? {}, statusId(l, d, r, observedBody), conditions);
    if (p === undefined) return r;
    try {
      obj = await ctx.deps.kube.patchStatus(l.kind, obj, p);
    } catch (err) {
      // the record is already saved; the object keeps its old status, so the report and an Event say so
      statusError = describeError(err);
      ctx.log.warn({ key: l.key, err: statusError, code: errorCode(err), status: httpStatusOf(err) }, 'status patch failed');
      return r;
    }
    // the CRD dropped the conditions (Tyk Operator's), or keeps them again: remembered, so they are not patched in a loop
    const pruned = !Array.isArray(obj.status?.conditions);
    if (pruned === known) return r;
    const { conditionsPruned: _, ...rest } = r;
    return save(ctx, pruned ? { ...rest, conditionsPruned: true } : rest);
  };
  const { record, report: said } = await recorded(patch);
  const report = statusError !== undefined ? { ...said, statusError } : said;
  await tell(ctx, l, obj, report, record, statusError);
  return { loaded: l, decision: d, record, report };
}

/** What a removal that is done lets go of: the finalizer of a resource being deleted, the owner entry of its id. */
async function letGo(ctx: RunContext, l: Loaded, d: WriteDecision, obj: KubeObject | null | undefined): Promise<void> {
  switch (d.what) {
    case 'remove':
      if (d.write.removeFinalizer && obj) await ctx.deps.kube.removeFinalizer(l.kind, obj, l.kind.finalizer);
      // the gateway object is gone: its id is free for another resource
      if (d.release !== undefined) await ctx.deps.store.releaseOwner(d.release, l.key);
      return;
    case 'upsert':
      return;
    default:
      return exhaustive(d);
  }
}

/** What the conditions are derived from, besides the record: the generation read, deletion, a pause. */
function conditionFacts(l: Loaded, d: Decision, r: SyncRecord): ConditionFacts {
  const replicas = l.target?.gateway.replicaStatus?.({ kind: l.kind.gatewayKind, id: d.id });
  const behind = replicas?.behind ?? [];
  return {
    generation: l.obj?.metadata.generation ?? r.generation,
    deleting: l.desired?.deleting === true,
    paused: holdOf(d) === 'paused' ? { action: d.action, reason: d.reason } : undefined,
    ...(replicas && (replicas.unreadable.length > 0 || behind.length > 0) ? { replicas: { of: replicas.replicas.length, unreadable: replicas.unreadable.map((u) => u.replica), behind } } : {}),
  };
}

/** What carrying out the write led to, for recordAfter. */
function happenedOf(d: WriteDecision, c: Carried): Happened {
  if (c.error !== undefined) return { failed: c.error };
  if (!c.visible) return { visible: false };
  switch (d.what) {
    case 'remove':
      return { visible: true, observedHash: '', differences: [] };
    case 'upsert':
      // the read-back's hashes and differences (apply.ts readBack; the body it keeps is the slim one)
      if (!c.observedBody || c.observedHash === undefined) return { visible: false };
      return {
        visible: true,
        observedHash: c.observedHash,
        ...(c.observedWholeHash !== undefined ? { observedWholeHash: c.observedWholeHash } : {}),
        differences: c.differences ?? [],
      };
    default:
      return exhaustive(d);
  }
}

/** Queues the record in the run's RecordWriter (saved in a batch at the stage's next flush, before the lock is given back). */
async function save(ctx: RunContext, record: SyncRecord): Promise<SyncRecord> {
  ctx.records.put(record);
  return record;
}

/**
 * The status id: the Dashboard's own _id for pro policies, and its id of a portal catalogue or
 * configuration (nativeIdField; '' while unknown: the status keeps what it has), else our id. An id that follows from the resource alone
 * does not depend on its gateway, so it is known even when the gateway is not (Tyk Operator's
 * CRD requires status.api_id); a policy's may be the Dashboard's, so it is never guessed ('').
 */
function statusId(l: Loaded, d: Decision, record: SyncRecord, observedBody: JsonObject | null | undefined): string {
  // a kind whose status names no id, or the gateway's own id of the object when known (nativeIdField)
  if (l.kind.statusIdField === '') return '';
  if (l.kind.nativeIdField !== undefined) {
    const own = observedBody?.[l.kind.nativeIdField];
    return typeof own === 'string' ? own : '';
  }
  const native = l.kind.nativeIdIfAny === undefined ? undefined : observedBody?.[l.kind.nativeIdIfAny];
  if (typeof native === 'string' && native !== '') return native;
  // a resource refused by ownership before it wrote anything: not the id it was refused (a later choice of id would take
  // it from the status), but its own default one (Tyk Operator's CRD requires an id in the status)
  if (record.id === '' && record.refusal !== undefined) return defaultId(l.ref.namespace, l.ref.name);
  // a record kept from before the id was known (e.g. its context failed)
  if (record.id === '') return knownId(l, d);
  return record.id;
}

/**
 * Tells the outcome (outcome-events.ts) and a refused status patch in Kubernetes Events about
 * the object. An Event that cannot be recorded is logged, never a failure of the object or the run.
 */
async function tell(ctx: RunContext, l: Loaded, obj: KubeObject | null | undefined, report: ObjectReport, after: SyncRecord | null, statusError: string | undefined): Promise<void> {
  if (!obj) return;
  const events: OutcomeEvent[] = [];
  const told = outcomeEvent({ ...report, before: l.record, after });
  if (told) events.push(told);
  if (statusError !== undefined) events.push(statusPatchFailedEvent(statusError));
  for (const e of events) {
    try {
      await ctx.deps.kube.recordEvent(obj, e.type, e.reason, e.message);
    } catch (err) {
      ctx.log.warn({ key: l.key, reason: e.reason, err: describeError(err), code: errorCode(err) }, 'event not recorded');
    }
  }
}

/** The HTTP status an error carries, when it was an answer (API server or gateway). */
export function httpStatusOf(err: unknown): number | undefined {
  const status = (err as { status?: unknown } | undefined)?.status;
  return typeof status === 'number' ? status : undefined;
}
