/**
 * The apply, settle and finalize stages of a run, for items already planned.
 *
 * - Only objects whose action writes are locked; under the lock each is re-read and
 *   re-planned (`refresh`), then written: finalizer first, then the gateway.
 * - settle: per gateway, one reload (where the gateway needs one), then a read-back until the
 *   writes are visible, re-issuing a lost reload with backoff within the budget.
 * - finalize: records, statuses (only when they change), finalizer removal, lock release; then
 *   the outcome is told in a Kubernetes Event (outcome-events.ts: a Warning for every problem,
 *   a Normal Event for a few successful changes), and a status patch the API server refused is
 *   put in the report (`statusError`) and told in a Warning, without failing anything else.
 *   An object marked dirty while we held its lock is refreshed and applied again before its
 *   lock is released (bounded), so an event that arrived meanwhile is never lost.
 *
 * Object failures are recorded and reported, never thrown; a StoreUnavailableError is thrown
 * (locks released first), since without records and locks no safe decision can be made.
 */
import { randomUUID } from 'node:crypto';
import { describeError, errorCode, GatewayUnsupportedError, InvalidSpecError, StoreUnavailableError } from '../errors.js';
import type { Gateway } from '../gateway/types.js';
import type { SyncRecord, SyncResult } from '../store/types.js';
import { describeDifferences, sentFieldDifferences } from './compare.js';
import { mapLimit } from './concurrency.js';
import { dispose } from './error-policy.js';
import { hashOf } from './hash.js';
import { SECURITY_POLICY } from '../kinds.js';
import { nsName } from './links.js';
import { loadObserved, targetId } from './load.js';
import { type OutcomeEvent, outcomeEvent, statusPatchFailedEvent } from './outcome-events.js';
import type { Plan } from './plan.js';
import { type Item, type RunContext, errorFields, knownId, reportFor, targetName } from './run-context.js';
import type { ObjectReport, ObjectResult } from './types.js';
import { statusPatch } from './status.js';

/** Re-reads items under their locks and plans them again; supplied by run.ts per kind. */
export type Refresh = (items: Item[]) => Promise<void>;

const WRITES = new Set(['CREATE', 'UPDATE', 'DELETE']);

export function writes(item: Item): boolean {
  return item.readError === undefined && item.plan !== undefined && WRITES.has(item.plan.action);
}

interface Held {
  item: Item;
  token: string;
}

/** Locks, applies, settles and finalizes `items` (all planned to write); returns their reports. */
export async function applyLocked(ctx: RunContext, items: Item[], refresh: Refresh): Promise<ObjectReport[]> {
  const reports: ObjectReport[] = [];
  const held: Held[] = [];
  await mapLimit(items, ctx.settings.concurrency, async (item) => {
    const token = randomUUID();
    const outcome = await ctx.deps.store.lock(item.key, token, ctx.settings.lockTtlMs);
    if (outcome === 'acquired') held.push({ item, token });
    else reports.push(reportFor(item, 'deferred'));
  });
  const out = new Map<string, ObjectReport>();
  let batch = held;
  for (let pass = 0; batch.length > 0; pass++) {
    try {
      await refresh(batch.map((h) => h.item));
      await mapLimit(batch, ctx.settings.concurrency, (h) => applyItem(ctx, h.item));
      await settle(ctx, batch.map((h) => h.item).filter((i) => i.wrote !== undefined));
      await mapLimit(batch, ctx.settings.concurrency, (h) => finalizeItem(ctx, h.item));
    } catch (err) {
      await Promise.allSettled(batch.map((h) => ctx.deps.store.forceRelease(h.item.key, h.token)));
      throw err;
    }
    // a dirty re-run that found nothing to do does not hide what the first pass did
    for (const h of batch) if (!out.has(h.item.key) || h.item.report?.action !== 'NOOP') out.set(h.item.key, h.item.report as ObjectReport);
    const again: Held[] = [];
    await mapLimit(batch, ctx.settings.concurrency, async (h) => {
      if (pass + 1 >= ctx.settings.maxDirtyPasses) {
        await ctx.deps.store.forceRelease(h.item.key, h.token);
        return;
      }
      const outcome = await ctx.deps.store.release(h.item.key, h.token);
      if (outcome === 'dirty') again.push({ item: { kind: h.item.kind, ref: h.item.ref, key: h.item.key }, token: h.token });
      if (outcome === 'lost') ctx.log.warn({ key: h.item.key }, 'lock expired before release');
    });
    batch = again;
  }
  for (const r of out.values()) reports.push(r);
  return reports;
}

// ───────────────────────────── apply ─────────────────────────────

export function inBackoff(ctx: RunContext, item: Item): boolean {
  const r = item.record;
  if (!r || r.result !== 'failed' || r.retryAt === undefined) return false;
  if (ctx.request.trigger === 'resync') return false;
  const reason = item.plan?.reason;
  if (reason === 'spec changed' || reason === 'id changed' || reason === 'moved to another gateway') return false;
  return ctx.deps.clock.now() < r.retryAt;
}

async function removeElsewhere(ctx: RunContext, item: Item, gatewayName: string | undefined, id: string): Promise<void> {
  const old = await ctx.resolver.byName(gatewayName);
  if ('error' in old) throw new InvalidSpecError(`cannot remove from the previous gateway: ${old.error}`);
  ctx.writes++;
  retired(item).push(old.gateway);
  await old.gateway.remove(item.kind.gatewayKind, id);
}

/** Gateways written to besides the item's own (a retired id, a previous context). */
function retired(item: Item): Gateway[] {
  const i = item as Item & { retiredOn?: Gateway[] };
  i.retiredOn ??= [];
  return i.retiredOn;
}

async function applyItem(ctx: RunContext, item: Item): Promise<void> {
  const p = item.plan as Plan;
  if (!writes(item) || inBackoff(ctx, item) || !item.target) return;
  const gw = item.target.gateway;
  const gk = item.kind.gatewayKind;
  try {
    if (p.action === 'DELETE') {
      if (item.observed) {
        item.wrote = 'remove';
        ctx.writes++;
        await gw.remove(gk, p.id);
      }
      if (item.previousTarget !== undefined && item.record) await removeElsewhere(ctx, item, item.previousTarget, item.record.id);
      return;
    }
    if (!item.body || !item.obj) throw new InvalidSpecError(item.desired?.invalid ?? 'nothing to send');
    if (!(item.obj.metadata.finalizers ?? []).includes(item.kind.finalizer)) {
      item.obj = await ctx.deps.kube.addFinalizer(item.kind, item.obj, item.kind.finalizer);
    }
    item.wrote = 'upsert';
    ctx.writes++;
    await gw.upsert(gk, p.id, item.body);
    if (item.previousTarget !== undefined && item.record) await removeElsewhere(ctx, item, item.previousTarget, item.record.id);
    else if (p.retireId !== undefined && p.retireId !== p.id) {
      ctx.writes++;
      await gw.remove(gk, p.retireId);
    }
  } catch (err) {
    item.writeError = err;
    ctx.log.warn({ key: item.key, action: p.action, err: describeError(err), code: errorCode(err) }, 'apply failed');
  }
}

// ───────────────────────────── settle ─────────────────────────────

/**
 * Makes the writes visible, per gateway: one reload where the gateway needs one, then read
 * back; while some writes are not visible, re-issue the reload with backoff within the budget.
 * Marks each item `visible` and refreshes its observed state from the read-back.
 */
export async function settle(ctx: RunContext, attempted: Item[]): Promise<void> {
  if (attempted.length === 0) return;
  const gateways = new Set<Gateway>();
  for (const item of attempted) {
    if (item.target) gateways.add(item.target.gateway);
    for (const gw of retired(item)) gateways.add(gw);
  }
  const { budgetMs, initialDelayMs, maxDelayMs, reloadEveryMs } = ctx.settings.settle;
  const clock = ctx.deps.clock;
  const deadline = clock.now() + Math.max(0, Math.min(budgetMs, ctx.remainingMs()));
  const preHash = new Map(attempted.map((i) => [i, i.observed?.hash]));
  let pending = attempted.filter((i) => i.writeError === undefined && i.target);
  const reloadedAt = new Map<Gateway, number>();
  for (const gw of gateways) reloadedAt.set(gw, await reload(ctx, gw));
  let delay = initialDelayMs;
  const anyReload = [...gateways].some((g) => g.reloadRequired);
  while (pending.length > 0) {
    if (anyReload) await clock.sleep(Math.min(delay, Math.max(0, deadline - clock.now())));
    await readBack(ctx, pending);
    for (const item of pending) item.visible = isVisible(item, preHash.get(item));
    pending = pending.filter((i) => !i.visible);
    if (pending.length === 0 || clock.now() >= deadline) break;
    if (!anyReload) await clock.sleep(Math.min(delay, Math.max(0, deadline - clock.now())));
    for (const gw of new Set(pending.map((i) => i.target!.gateway))) {
      if (gw.reloadRequired && clock.now() - (reloadedAt.get(gw) ?? 0) >= reloadEveryMs) reloadedAt.set(gw, await reload(ctx, gw));
    }
    delay = Math.min(delay * 2, maxDelayMs);
  }
}

/** One reload of a gateway group, where the gateway needs it; returns when it was asked. */
async function reload(ctx: RunContext, gw: Gateway): Promise<number> {
  if (!gw.reloadRequired) return ctx.deps.clock.now();
  ctx.reloads++;
  try {
    await gw.reload();
  } catch (err) {
    ctx.runError(`reload gateway ${gw.name}`, err);
  }
  return ctx.deps.clock.now();
}

async function readBack(ctx: RunContext, items: Item[]): Promise<void> {
  const before = items.map((i) => i.readError);
  await loadObserved(ctx, items);
  // A failed read-back leaves the item not visible; it is not a failure of the write.
  items.forEach((item, i) => {
    if (item.readError !== before[i]) {
      item.observed = undefined;
      item.observedBody = undefined;
      item.readError = before[i];
    }
  });
}

function isVisible(item: Item, preHash: string | undefined): boolean {
  if (item.observedBody === undefined) return false;
  if (item.wrote === 'remove') return item.observedBody === null;
  if (item.observedBody === null) return false;
  if (sentFieldDifferences(item.body, item.observedBody).length === 0) return true;
  // the gateway changed something we sent (e.g. renamed a clashing listen path): visible if it moved at all
  return preHash === undefined || item.observed?.hash !== preHash;
}

// ───────────────────────────── finalize ─────────────────────────────

export function newRecord(ctx: RunContext, item: Item, result: SyncResult, extra: Partial<SyncRecord> = {}): SyncRecord {
  const desired = item.desired;
  const gateway = targetName(item);
  const keepPrevious = item.previousTarget === undefined;
  return {
    key: item.key,
    id: knownId(item),
    ...(gateway ? { gateway } : {}),
    ...(item.links ? { links: item.links.map(nsName) } : keepPrevious && item.record?.links ? { links: item.record.links } : {}),
    generation: desired?.generation ?? item.record?.generation ?? 0,
    desiredHash: desired?.hash ?? item.record?.desiredHash ?? '',
    observedHash: keepPrevious ? (item.record?.observedHash ?? '') : '',
    result,
    failures: 0,
    time: new Date(ctx.deps.clock.now()).toISOString(),
    ...extra,
  };
}

export async function saveRecord(ctx: RunContext, item: Item, record: SyncRecord): Promise<void> {
  const stored = await ctx.deps.store.putRecord(record);
  if (!stored) ctx.log.info({ key: item.key, generation: record.generation }, 'a newer record exists; kept it');
  item.record = record;
}

/**
 * The status id: the Dashboard's own _id for pro policies, else our id. An ApiDefinition's id
 * does not depend on its gateway, so it is known even when the gateway is not (Tyk Operator's
 * CRD requires status.api_id); a policy's may be the Dashboard's, so it is never guessed ('').
 */
function statusId(item: Item, record: SyncRecord): string {
  const native = item.observedBody?._id;
  if (item.kind === SECURITY_POLICY && typeof native === 'string' && native !== '') return native;
  // a record kept from before the id was known (e.g. its context failed)
  if (record.id === '') return knownId(item);
  return record.id;
}

export async function patchStatus(ctx: RunContext, item: Item, record: SyncRecord): Promise<void> {
  const obj = item.obj;
  if (!obj) return;
  const patch = statusPatch(item.kind, obj.status, record, item.statusExtra, statusId(item, record));
  if (patch === undefined) return;
  try {
    item.obj = await ctx.deps.kube.patchStatus(item.kind, obj, patch);
  } catch (err) {
    // the record is already saved; the object keeps its old status, so the report and an Event say so
    item.statusError = describeError(err);
    ctx.log.warn({ key: item.key, err: item.statusError, code: errorCode(err), status: httpStatusOf(err) }, 'status patch failed');
  }
}

/** Objects that write nothing this run: record an invalid spec or a wait, fix a stale status; tell the outcome. */
export async function finishQuiet(ctx: RunContext, item: Item): Promise<void> {
  const before = item.record;
  item.statusError = undefined;
  await quietOutcome(ctx, item);
  await tellOutcome(ctx, item, before);
}

async function quietOutcome(ctx: RunContext, item: Item): Promise<void> {
  if (item.readError !== undefined) {
    const err = item.readError;
    const unsupported = err instanceof GatewayUnsupportedError;
    if (unsupported) await sayUnsupported(ctx, item, err);
    item.report = { ...reportFor(item, 'failed'), reason: unsupported ? 'not supported by gateway' : 'read failed', ...errorFields(err) };
    return;
  }
  if (item.obj === undefined && !ctx.watched(item.ref.namespace)) {
    item.report = { ...reportFor(item, 'skipped'), reason: 'not watched' };
    return;
  }
  if (item.targetError !== undefined) {
    // the object's gateway cannot be reached through its context: say so, retry every run
    if (item.obj) {
      const same = item.record?.result === 'failed' && item.record.error === item.targetError;
      const record = same ? (item.record as SyncRecord) : newRecord(ctx, item, 'failed', { error: item.targetError });
      if (!same) await saveRecord(ctx, item, record);
      if (!item.desired?.deleting) await patchStatus(ctx, item, record);
    }
    item.report = { ...reportFor(item, 'failed'), reason: 'gateway unavailable', error: item.targetError, code: 'GATEWAY_CONTEXT' };
    return;
  }
  const p = item.plan as Plan;
  if (p.reason === 'invalid spec' && item.desired && item.obj) {
    await saveRecord(ctx, item, newRecord(ctx, item, 'invalid', { error: item.desired.invalid ?? 'invalid spec' }));
  }
  if (p.action === 'WAIT' && item.obj) {
    const error = item.waitReason ?? 'waiting';
    const same = item.record?.result === 'waiting' && item.record.error === error;
    if (!same) await saveRecord(ctx, item, newRecord(ctx, item, 'waiting', { error, ...(item.record?.result === 'waiting' || !item.record ? {} : { desiredHash: item.record.desiredHash, observedHash: item.record.observedHash }) }));
  }
  if (item.record && item.obj && (!item.desired?.deleting || p.action === 'WAIT')) await patchStatus(ctx, item, item.record);
  const result: ObjectResult =
    p.action === 'WAIT' ? 'waiting' : p.reason.startsWith('invalid') ? 'invalid' : p.reason === 'not managed' || p.reason === 'template' ? 'skipped' : 'unchanged';
  const error = p.action === 'WAIT' ? item.waitReason : item.record?.error;
  item.report = { ...reportFor(item, result), ...(error ? { error } : {}) };
}

/**
 * The object's gateway lacks what it needs (e.g. a Tyk Gateway without /tyk/policies): like a
 * context whose gateway cannot be reached, the record and status say Failed with the reason
 * (a policy gets an Event when that is new: its CRD may drop our status); nothing is written
 * to the gateway, nothing deleted, and the next run looks again.
 */
async function sayUnsupported(ctx: RunContext, item: Item, err: GatewayUnsupportedError): Promise<void> {
  if (!item.obj || item.desired?.deleting) return;
  const error = describeError(err);
  const same = item.record?.result === 'failed' && item.record.error === error;
  const record = same ? (item.record as SyncRecord) : newRecord(ctx, item, 'failed', { error });
  if (!same) await saveRecord(ctx, item, record);
  await patchStatus(ctx, item, record);
}

async function finalizeItem(ctx: RunContext, item: Item): Promise<void> {
  const before = item.record;
  item.statusError = undefined;
  await outcome(ctx, item);
  await tellOutcome(ctx, item, before);
}

async function outcome(ctx: RunContext, item: Item): Promise<void> {
  const p = item.plan as Plan;
  if (item.readError !== undefined || item.targetError !== undefined || !writes(item)) return quietOutcome(ctx, item);
  if (inBackoff(ctx, item)) {
    item.report = { ...reportFor(item, 'backoff'), ...(item.record?.error ? { error: item.record.error } : {}) };
    return;
  }
  if (item.writeError !== undefined) return finishFailed(ctx, item, item.writeError);
  if (p.action === 'DELETE') return finishDelete(ctx, item);
  return finishUpsert(ctx, item);
}

async function finishFailed(ctx: RunContext, item: Item, err: unknown): Promise<void> {
  const failures = (item.record?.result === 'failed' ? item.record.failures : 0) + 1;
  const disposition = dispose(err, failures, ctx.deps.clock.now(), ctx.settings.backoff);
  const record = newRecord(ctx, item, disposition.result, {
    error: describeError(err),
    failures,
    ...(disposition.retryAt !== undefined ? { retryAt: disposition.retryAt } : {}),
    ...(item.record && item.plan?.action === 'DELETE' ? { desiredHash: item.record.desiredHash } : {}),
  });
  await saveRecord(ctx, item, record);
  if (item.obj && !item.desired?.deleting) await patchStatus(ctx, item, record);
  item.report = { ...reportFor(item, disposition.result), ...errorFields(err) };
}

async function finishUpsert(ctx: RunContext, item: Item): Promise<void> {
  let record: SyncRecord;
  let result: ObjectResult;
  if (!item.visible || !item.observedBody) {
    record = newRecord(ctx, item, 'pending', { error: 'written to the gateway, not yet visible after reload; will retry' });
    result = 'pending';
  } else {
    const diffs = sentFieldDifferences(item.body, item.observedBody);
    const observedHash = item.observed?.hash ?? hashOf(item.observedBody);
    record =
      diffs.length === 0
        ? newRecord(ctx, item, 'synced', { observedHash })
        : newRecord(ctx, item, 'diverged', { observedHash, error: `gateway changed what was sent: ${describeDifferences(diffs)}` });
    result = diffs.length === 0 ? 'synced' : 'diverged';
  }
  await saveRecord(ctx, item, record);
  await patchStatus(ctx, item, record);
  item.report = { ...reportFor(item, result), ...(record.error ? { error: record.error } : {}) };
}

async function finishDelete(ctx: RunContext, item: Item): Promise<void> {
  if (item.wrote === 'remove' && !item.visible) {
    const record = newRecord(ctx, item, 'pending', { error: 'deleted on the gateway, still visible after reload; will retry' });
    await saveRecord(ctx, item, record);
    item.report = { ...reportFor(item, 'pending'), error: record.error as string };
    return;
  }
  try {
    if (item.obj && item.desired?.deleting && item.desired.hasFinalizer) {
      await ctx.deps.kube.removeFinalizer(item.kind, item.obj, item.kind.finalizer);
    }
    await ctx.deps.store.deleteRecord(item.key);
    item.report = reportFor(item, 'deleted');
  } catch (err) {
    if (err instanceof StoreUnavailableError) throw err;
    item.report = { ...reportFor(item, 'failed'), ...errorFields(err) };
  }
}

// ───────────────────────────── tell ─────────────────────────────

/**
 * Puts a refused status patch in the report, and tells the outcome (outcome-events.ts) and a
 * refused status patch in Kubernetes Events about the object. An Event that cannot be
 * recorded is logged, never a failure of the object or the run.
 */
async function tellOutcome(ctx: RunContext, item: Item, before: SyncRecord | null | undefined): Promise<void> {
  const report = item.report;
  if (!report) return;
  if (item.statusError !== undefined) report.statusError = item.statusError;
  const obj = item.obj;
  if (!obj) return;
  const events: OutcomeEvent[] = [];
  const told = outcomeEvent({
    result: report.result,
    reason: report.reason,
    action: report.action,
    id: report.id,
    ...(report.gateway !== undefined ? { gateway: report.gateway } : {}),
    ...(report.error !== undefined ? { error: report.error } : {}),
    ...(report.code !== undefined ? { code: report.code } : {}),
    ...(before ? { before: { result: before.result, ...(before.error !== undefined ? { error: before.error } : {}) } } : {}),
    ...(item.record ? { after: { result: item.record.result, ...(item.record.error !== undefined ? { error: item.record.error } : {}) } } : {}),
  });
  if (told) events.push(told);
  if (item.statusError !== undefined) events.push(statusPatchFailedEvent(item.statusError));
  for (const e of events) {
    try {
      await ctx.deps.kube.recordEvent(obj, e.type, e.reason, e.message);
    } catch (err) {
      ctx.log.warn({ key: item.key, reason: e.reason, err: describeError(err), code: errorCode(err) }, 'event not recorded');
    }
  }
}

/** The HTTP status an error carries, when it was an answer (API server or gateway). */
export function httpStatusOf(err: unknown): number | undefined {
  const status = (err as { status?: unknown } | undefined)?.status;
  return typeof status === 'number' ? status : undefined;
}

export { targetId };
