/**
 * The Run: one pipeline for every trigger (design.md, "One pipeline for every trigger").
 *
 *   load ─► plan ─► apply ─► settle ─► report
 *
 * - load: desired state from the API server (GET per ref, or LIST with pagination), observed
 *   state from the gateway (GET per id for a few objects, one LIST for many), records from the
 *   store in one round trip.
 * - plan: the pure `plan()` per object.
 * - apply: only objects whose action is not NOOP are locked; under the lock each is re-read
 *   and re-planned, then written (finalizer first, then the gateway).
 * - settle: one reload per gateway per pass, then a read-back until the writes are visible
 *   (re-issuing the reload with backoff within the budget); then records, statuses, finalizer
 *   removal, and lock release. An object marked dirty while we held its lock is re-run
 *   before its lock is released.
 *
 * Guarantees: nothing is deleted from the gateway because a read failed or was partial; an
 * object whose read failed is reported and left alone. Object failures are reported, never
 * thrown. Throws only when the store is unavailable (StoreUnavailableError): without records
 * and locks no safe decision can be made.
 */
import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.js';
import { describeError, errorCode, InvalidSpecError, StoreUnavailableError } from '../errors.js';
import type { Gateway, JsonObject } from '../gateway/types.js';
import type { KubeApi, KubeObject } from '../kube/types.js';
import type { Logger } from '../log.js';
import type { Store, SyncRecord, SyncResult } from '../store/types.js';
import { apiDefinitionPayload } from './api-payload.js';
import { describeDifferences, sentFieldDifferences } from './compare.js';
import { mapLimit } from './concurrency.js';
import { type BackoffSettings, DEFAULT_BACKOFF, dispose } from './error-policy.js';
import { hashOf } from './hash.js';
import { gatewayIdFor } from './ids.js';
import { API_DEFINITION, type ManagedKind, type ObjectRef } from './kinds.js';
import { type Action, type DesiredState, type ObservedState, type Plan, plan, type Reason } from './plan.js';
import { statusPatch } from './status.js';

export interface SettleSettings {
  /** how long a pass may wait for its writes to become visible */
  budgetMs: number;
  /** first wait after a reload before reading back; doubles up to maxDelayMs */
  initialDelayMs: number;
  maxDelayMs: number;
  /** a reload not visible after this long is re-issued (a gateway can lose one silently) */
  reloadEveryMs: number;
}

export interface RunSettings {
  /** WATCH_NAMESPACE; undefined means all namespaces */
  namespaces?: readonly string[];
  /** TYK_ORG */
  orgId?: string;
  concurrency: number;
  lockTtlMs: number;
  /** up to this many objects, observed state is read with one GET each; above, with one LIST */
  getThreshold: number;
  settle: SettleSettings;
  maxDirtyPasses: number;
  backoff: BackoffSettings;
}

export const DEFAULT_RUN_SETTINGS: RunSettings = {
  concurrency: 8,
  lockTtlMs: 10 * 60_000,
  getThreshold: 20,
  settle: { budgetMs: 20_000, initialDelayMs: 250, maxDelayMs: 4_000, reloadEveryMs: 3_000 },
  maxDirtyPasses: 5,
  backoff: DEFAULT_BACKOFF,
};

export interface RunDeps {
  kube: KubeApi;
  gateway: Gateway;
  store: Store;
  clock: Clock;
  log: Logger;
  settings: RunSettings;
}

/**
 * Which objects a run looks at: everything (`all`), whole namespaces (listed), and single
 * objects (read one by one). An empty scope looks at nothing.
 */
export interface RunScope {
  all?: boolean;
  namespaces?: readonly string[];
  refs?: readonly ObjectRef[];
}

export type Trigger = 'schedule' | 'watch' | 'audit' | 'resync' | 'cloudevents';

export interface RunRequest {
  trigger: Trigger;
  scope: RunScope;
  dryRun?: boolean;
}

export type ObjectResult =
  | 'synced'
  | 'unchanged'
  | 'diverged'
  | 'pending'
  | 'failed'
  | 'invalid'
  | 'deleted'
  | 'deferred'
  | 'backoff'
  | 'planned'
  | 'skipped';

export interface ObjectReport {
  kind: string;
  namespace: string;
  name: string;
  id: string;
  action: Action;
  reason: Reason | 'read failed' | 'not watched';
  result: ObjectResult;
  error?: string;
  code?: string;
}

export interface RunReport {
  runId: string;
  trigger: Trigger;
  dryRun: boolean;
  startedAt: string;
  durationMs: number;
  gateway: { name: string; writes: number; reloads: number };
  objects: ObjectReport[];
  errors: { stage: string; code: string; message: string }[];
  counts: Partial<Record<ObjectResult, number>>;
}

/** Everything known about one object during a run. */
interface Item {
  ref: ObjectRef;
  key: string;
  /** the custom resource; null when confirmed gone; undefined when not read (yet) */
  obj?: KubeObject | null;
  desired?: DesiredState;
  body?: JsonObject;
  observedBody?: JsonObject | null;
  observed?: ObservedState;
  record?: SyncRecord | null;
  plan?: Plan;
  readError?: unknown;
  /** set by apply */
  wrote?: 'upsert' | 'remove';
  writeError?: unknown;
  visible?: boolean;
  report?: ObjectReport;
}

class RunContext {
  readonly runId = randomUUID();
  readonly startedAt: number;
  readonly errors: RunReport['errors'] = [];
  writes = 0;
  reloads = 0;
  readonly log: Logger;

  constructor(
    readonly deps: RunDeps,
    readonly request: RunRequest,
  ) {
    this.startedAt = deps.clock.now();
    this.log = deps.log.child({ runId: this.runId, trigger: request.trigger });
  }

  get kind(): ManagedKind {
    return API_DEFINITION;
  }

  keyFor(ref: { namespace: string; name: string }): string {
    return `${this.deps.gateway.name}/${this.kind.kind}/${ref.namespace}/${ref.name}`;
  }

  watched(namespace: string): boolean {
    const ns = this.deps.settings.namespaces;
    return ns === undefined || ns.includes(namespace);
  }

  runError(stage: string, err: unknown): void {
    this.errors.push({ stage, code: errorCode(err), message: describeError(err) });
    this.log.warn({ stage, err: describeError(err), code: errorCode(err) }, 'run stage failed');
  }
}

export async function runReconcile(deps: RunDeps, request: RunRequest): Promise<RunReport> {
  const ctx = new RunContext(deps, request);
  const reports: ObjectReport[] = [];
  const { items, complete } = await loadDesired(ctx);
  if (complete) items.push(...(await loadOrphans(ctx, items)));
  await loadRecords(ctx, items);
  for (const item of items) computeDesired(ctx, item);
  const listing = request.scope.all === true || (request.scope.namespaces ?? []).length > 0;
  await loadObserved(ctx, items.filter((i) => i.readError === undefined), listing);
  for (const item of items) planItem(ctx, item);

  if (request.dryRun === true) {
    for (const item of items) reports.push(reportFor(ctx, item, item.readError ? 'failed' : 'planned'));
    return finish(ctx, reports);
  }

  const actionable = items.filter((i) => i.readError === undefined && i.plan?.action !== 'NOOP');
  const quiet = items.filter((i) => i.readError !== undefined || i.plan?.action === 'NOOP');
  await mapLimit(quiet, deps.settings.concurrency, (item) => finishQuiet(ctx, item));
  for (const i of quiet) reports.push(i.report ?? reportFor(ctx, i, 'unchanged'));

  const locked = await lockAll(ctx, actionable, reports);
  for (const r of await processLocked(ctx, locked)) reports.push(r);
  return finish(ctx, reports);
}

// ───────────────────────────── load ─────────────────────────────

async function loadDesired(ctx: RunContext): Promise<{ items: Item[]; complete: boolean }> {
  const { scope } = ctx.request;
  const kind = ctx.kind;
  const all = scope.all === true;
  const namespaces: (string | undefined)[] = all
    ? ctx.deps.settings.namespaces
      ? [...ctx.deps.settings.namespaces]
      : [undefined]
    : [...new Set(scope.namespaces ?? [])].filter((ns) => ctx.watched(ns));
  let complete = true;
  const items: Item[] = [];
  for (const ns of namespaces) {
    try {
      for (const obj of await ctx.deps.kube.list(kind, ns)) {
        const ref = { kind, namespace: obj.metadata.namespace ?? '', name: obj.metadata.name };
        items.push({ ref, key: ctx.keyFor(ref), obj });
      }
    } catch (err) {
      complete = false;
      ctx.runError(`list ${kind.plural}${ns ? ` in ${ns}` : ''}`, err);
    }
  }
  if (all) return { items, complete };
  const listed = new Set(namespaces);
  const refs = dedupe((scope.refs ?? []).filter((r) => r.kind === kind && !listed.has(r.namespace)));
  const single = refs.map((ref) => ({ ref, key: ctx.keyFor(ref) }) as Item);
  await mapLimit(single, ctx.deps.settings.concurrency, async (item) => {
    if (!ctx.watched(item.ref.namespace)) return;
    try {
      item.obj = await ctx.deps.kube.get(kind, item.ref.namespace, item.ref.name);
    } catch (err) {
      item.readError = err;
    }
  });
  return { items: [...items, ...single], complete };
}

function dedupe(refs: readonly ObjectRef[]): ObjectRef[] {
  const seen = new Map<string, ObjectRef>();
  for (const r of refs) seen.set(`${r.kind.kind}/${r.namespace}/${r.name}`, r);
  return [...seen.values()];
}

/**
 * Records whose resource the (complete) listing did not return. Each is confirmed with a GET:
 * only a 404 makes it a deletion candidate; an object created since the list is kept.
 */
async function loadOrphans(ctx: RunContext, listed: Item[]): Promise<Item[]> {
  const { scope } = ctx.request;
  const base = `${ctx.deps.gateway.name}/${ctx.kind.kind}/`;
  const prefixes = scope.all ? [base] : [...new Set(scope.namespaces ?? [])].filter((ns) => ctx.watched(ns)).map((ns) => `${base}${ns}/`);
  const known = new Set(listed.map((i) => i.key));
  const keys: string[] = [];
  for (const prefix of prefixes) keys.push(...(await ctx.deps.store.listRecordKeys(prefix)).filter((k) => !known.has(k)));
  const orphans: Item[] = [];
  for (const key of keys) {
    const [, , namespace, name] = key.split('/');
    if (namespace === undefined || name === undefined || !ctx.watched(namespace)) continue;
    orphans.push({ ref: { kind: ctx.kind, namespace, name }, key });
  }
  await mapLimit(orphans, ctx.deps.settings.concurrency, async (item) => {
    try {
      item.obj = await ctx.deps.kube.get(ctx.kind, item.ref.namespace, item.ref.name);
    } catch (err) {
      item.readError = err;
    }
  });
  return orphans;
}

async function loadRecords(ctx: RunContext, items: Item[]): Promise<void> {
  if (items.length === 0) return;
  const records = await ctx.deps.store.getRecords(items.map((i) => i.key));
  items.forEach((item, i) => {
    item.record = records[i] ?? null;
  });
}

function computeDesired(ctx: RunContext, item: Item): void {
  item.desired = undefined;
  item.body = undefined;
  const obj = item.obj;
  if (!obj) return;
  const id = gatewayIdFor(ctx.kind, obj);
  const payload = apiDefinitionPayload(obj, id, ctx.deps.settings.orgId);
  item.body = payload.ok ? payload.body : undefined;
  item.desired = {
    id,
    hash: payload.ok ? hashOf(payload.body) : hashOf(obj.spec ?? null),
    generation: obj.metadata.generation ?? 0,
    deleting: obj.metadata.deletionTimestamp !== undefined && obj.metadata.deletionTimestamp !== null,
    hasFinalizer: (obj.metadata.finalizers ?? []).includes(ctx.kind.finalizer),
    ...(payload.ok ? {} : { invalid: payload.reason }),
  };
}

/** The id whose gateway object matters for this item. */
function targetId(item: Item): string | undefined {
  return item.desired?.id ?? item.record?.id ?? undefined;
}

/**
 * Reads the gateway objects of `items`: one GET each for a few, one LIST for many or for a
 * full run. A failed read marks the affected items with readError; it never yields "absent".
 */
async function loadObserved(ctx: RunContext, items: Item[], preferList = false): Promise<void> {
  const wanted = items.filter((i) => targetId(i) !== undefined && (i.obj || i.record));
  if (wanted.length === 0) return;
  const gw = ctx.deps.gateway;
  const gk = ctx.kind.gatewayKind;
  const useList = preferList || wanted.length > ctx.deps.settings.getThreshold;
  if (useList) {
    try {
      const all = await gw.list(gk);
      for (const item of wanted) setObserved(item, all.get(targetId(item) as string) ?? null);
    } catch (err) {
      ctx.runError(`list gateway ${gk}s`, err);
      for (const item of wanted) item.readError = err;
    }
    return;
  }
  await mapLimit(wanted, ctx.deps.settings.concurrency, async (item) => {
    try {
      setObserved(item, await gw.get(gk, targetId(item) as string));
    } catch (err) {
      item.readError = err;
    }
  });
}

function setObserved(item: Item, body: JsonObject | null): void {
  item.observedBody = body;
  item.observed = body ? { id: targetId(item) as string, hash: hashOf(body) } : undefined;
}

function planItem(ctx: RunContext, item: Item): void {
  if (item.readError !== undefined || (item.obj === undefined && !ctx.watched(item.ref.namespace))) {
    item.plan = { action: 'NOOP', reason: 'not managed', id: targetId(item) ?? '' };
    return;
  }
  item.plan = plan(item.desired, item.observed, item.record ?? undefined);
}

// ───────────────────────────── quiet objects ─────────────────────────────

/** NOOP objects: no lock, no gateway write; record an invalid spec, and fix a stale status. */
async function finishQuiet(ctx: RunContext, item: Item): Promise<void> {
  if (item.readError !== undefined) {
    item.report = { ...reportFor(ctx, item, 'failed'), reason: 'read failed', ...errorFields(item.readError) };
    return;
  }
  if (item.obj === undefined && !ctx.watched(item.ref.namespace)) {
    item.report = { ...reportFor(ctx, item, 'skipped'), reason: 'not watched' };
    return;
  }
  const p = item.plan as Plan;
  if (p.reason === 'invalid spec' && item.desired && item.obj) {
    const record = newRecord(ctx, item, 'invalid', { error: item.desired.invalid ?? 'invalid spec' });
    await saveRecord(ctx, item, record);
  }
  if (item.record && item.obj && !item.desired?.deleting) await patchStatus(ctx, item, item.record);
  const result: ObjectResult = p.reason.startsWith('invalid') ? 'invalid' : p.reason === 'not managed' ? 'skipped' : 'unchanged';
  item.report = { ...reportFor(ctx, item, result), ...(item.record?.error ? { error: item.record.error } : {}) };
}

// ───────────────────────────── lock ─────────────────────────────

interface Held {
  item: Item;
  token: string;
}

async function lockAll(ctx: RunContext, items: Item[], reports: ObjectReport[]): Promise<Held[]> {
  const held: Held[] = [];
  await mapLimit(items, ctx.deps.settings.concurrency, async (item) => {
    const token = randomUUID();
    const outcome = await ctx.deps.store.lock(item.key, token, ctx.deps.settings.lockTtlMs);
    if (outcome === 'acquired') held.push({ item, token });
    else reports.push(reportFor(ctx, item, 'deferred'));
  });
  return held;
}

/**
 * Re-read, re-plan, apply and settle the held objects, then release their locks; objects
 * marked dirty meanwhile go round again (bounded), so no event is lost.
 */
async function processLocked(ctx: RunContext, held: Held[]): Promise<ObjectReport[]> {
  const out = new Map<string, ObjectReport>();
  let batch = held;
  for (let pass = 0; batch.length > 0; pass++) {
    try {
      await applyAndSettle(ctx, batch.map((h) => h.item));
    } catch (err) {
      await Promise.allSettled(batch.map((h) => ctx.deps.store.forceRelease(h.item.key, h.token)));
      throw err;
    }
    // a dirty re-run that found nothing to do does not hide what the first pass did
    for (const h of batch) if (!out.has(h.item.key) || h.item.report?.action !== 'NOOP') out.set(h.item.key, h.item.report as ObjectReport);
    const again: Held[] = [];
    await mapLimit(batch, ctx.deps.settings.concurrency, async (h) => {
      if (pass + 1 >= ctx.deps.settings.maxDirtyPasses) {
        await ctx.deps.store.forceRelease(h.item.key, h.token);
        return;
      }
      const outcome = await ctx.deps.store.release(h.item.key, h.token);
      if (outcome === 'dirty') again.push({ item: freshItem(h.item), token: h.token });
      if (outcome === 'lost') ctx.log.warn({ key: h.item.key }, 'lock expired before release');
    });
    batch = again;
  }
  return [...out.values()];
}

function freshItem(item: Item): Item {
  return { ref: item.ref, key: item.key };
}

async function applyAndSettle(ctx: RunContext, items: Item[]): Promise<void> {
  await reread(ctx, items);
  await mapLimit(items, ctx.deps.settings.concurrency, (item) => applyItem(ctx, item));
  await settle(ctx, items.filter((i) => i.wrote !== undefined));
  await mapLimit(items, ctx.deps.settings.concurrency, (item) => finalizeItem(ctx, item));
}

/** Under the lock: the object, its record and its gateway object may have changed since load. */
async function reread(ctx: RunContext, items: Item[]): Promise<void> {
  if (items.length > ctx.deps.settings.getThreshold) await relist(ctx, items);
  else {
    await mapLimit(items, ctx.deps.settings.concurrency, async (item) => {
      item.readError = undefined;
      try {
        item.obj = await ctx.deps.kube.get(ctx.kind, item.ref.namespace, item.ref.name);
      } catch (err) {
        item.readError = err;
      }
    });
  }
  const ok = items.filter((i) => i.readError === undefined);
  await loadRecords(ctx, ok);
  for (const item of ok) computeDesired(ctx, item);
  await loadObserved(ctx, ok);
  for (const item of items) planItem(ctx, item);
}

/** Many objects: re-read them with one (paginated) LIST per namespace instead of a GET each. */
async function relist(ctx: RunContext, items: Item[]): Promise<void> {
  const byNamespace = new Map<string, Item[]>();
  for (const item of items) byNamespace.set(item.ref.namespace, [...(byNamespace.get(item.ref.namespace) ?? []), item]);
  for (const [namespace, group] of byNamespace) {
    try {
      const current = new Map((await ctx.deps.kube.list(ctx.kind, namespace)).map((o) => [o.metadata.name, o]));
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

// ───────────────────────────── apply ─────────────────────────────

function inBackoff(ctx: RunContext, item: Item): boolean {
  const r = item.record;
  if (!r || r.result !== 'failed' || r.retryAt === undefined) return false;
  if (ctx.request.trigger === 'resync') return false;
  const reason = item.plan?.reason;
  if (reason === 'spec changed' || reason === 'id changed') return false;
  return ctx.deps.clock.now() < r.retryAt;
}

async function applyItem(ctx: RunContext, item: Item): Promise<void> {
  const p = item.plan as Plan;
  if (item.readError !== undefined || p.action === 'NOOP' || inBackoff(ctx, item)) return;
  const gw = ctx.deps.gateway;
  const gk = ctx.kind.gatewayKind;
  try {
    if (p.action === 'DELETE') {
      if (item.observed) {
        item.wrote = 'remove';
        ctx.writes++;
        await gw.remove(gk, p.id);
      }
      return;
    }
    if (!item.body || !item.obj) throw new InvalidSpecError(item.desired?.invalid ?? 'nothing to send');
    if (!(item.obj.metadata.finalizers ?? []).includes(ctx.kind.finalizer)) {
      item.obj = await ctx.deps.kube.addFinalizer(ctx.kind, item.obj, ctx.kind.finalizer);
    }
    item.wrote = 'upsert';
    ctx.writes++;
    await gw.upsert(gk, p.id, item.body);
    if (p.retireId !== undefined && p.retireId !== p.id) {
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
 * Makes the writes visible: one reload (where the gateway needs one), then read back; while
 * some writes are not visible, re-issue the reload with backoff within the budget. Marks each
 * item `visible` and refreshes its observed state from the read-back.
 */
async function settle(ctx: RunContext, attempted: Item[]): Promise<void> {
  if (attempted.length === 0) return;
  const gw = ctx.deps.gateway;
  const { budgetMs, initialDelayMs, maxDelayMs, reloadEveryMs } = ctx.deps.settings.settle;
  const clock = ctx.deps.clock;
  const deadline = clock.now() + budgetMs;
  const preHash = new Map(attempted.map((i) => [i, i.observed?.hash]));
  let pending = attempted.filter((i) => i.writeError === undefined);
  let reloadedAt = await reload(ctx);
  let delay = initialDelayMs;
  while (pending.length > 0) {
    if (gw.reloadRequired) await clock.sleep(Math.min(delay, Math.max(0, deadline - clock.now())));
    await readBack(ctx, pending);
    for (const item of pending) item.visible = isVisible(item, preHash.get(item));
    pending = pending.filter((i) => !i.visible);
    if (pending.length === 0 || clock.now() >= deadline) break;
    if (!gw.reloadRequired) await clock.sleep(Math.min(delay, Math.max(0, deadline - clock.now())));
    else if (clock.now() - reloadedAt >= reloadEveryMs) reloadedAt = await reload(ctx);
    delay = Math.min(delay * 2, maxDelayMs);
  }
}

/** One reload of the gateway group, where the gateway needs it; returns when it was asked. */
async function reload(ctx: RunContext): Promise<number> {
  if (!ctx.deps.gateway.reloadRequired) return ctx.deps.clock.now();
  ctx.reloads++;
  try {
    await ctx.deps.gateway.reload();
  } catch (err) {
    ctx.runError('reload', err);
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

function newRecord(ctx: RunContext, item: Item, result: SyncResult, extra: Partial<SyncRecord> = {}): SyncRecord {
  const desired = item.desired;
  return {
    key: item.key,
    id: item.plan?.id || desired?.id || item.record?.id || '',
    generation: desired?.generation ?? item.record?.generation ?? 0,
    desiredHash: desired?.hash ?? item.record?.desiredHash ?? '',
    observedHash: item.record?.observedHash ?? '',
    result,
    failures: 0,
    time: new Date(ctx.deps.clock.now()).toISOString(),
    ...extra,
  };
}

async function saveRecord(ctx: RunContext, item: Item, record: SyncRecord): Promise<void> {
  const stored = await ctx.deps.store.putRecord(record);
  if (!stored) ctx.log.info({ key: item.key, generation: record.generation }, 'a newer record exists; kept it');
  item.record = record;
}

async function finalizeItem(ctx: RunContext, item: Item): Promise<void> {
  const p = item.plan as Plan;
  if (item.readError !== undefined) {
    item.report = { ...reportFor(ctx, item, 'failed'), reason: 'read failed', ...errorFields(item.readError) };
    return;
  }
  if (p.action === 'NOOP') return finishQuiet(ctx, item);
  if (inBackoff(ctx, item)) {
    item.report = { ...reportFor(ctx, item, 'backoff'), ...(item.record?.error ? { error: item.record.error } : {}) };
    return;
  }
  if (item.writeError !== undefined) return finishFailed(ctx, item, item.writeError);
  if (p.action === 'DELETE') return finishDelete(ctx, item);
  return finishUpsert(ctx, item);
}

async function finishFailed(ctx: RunContext, item: Item, err: unknown): Promise<void> {
  const failures = (item.record?.result === 'failed' ? item.record.failures : 0) + 1;
  const disposition = dispose(err, failures, ctx.deps.clock.now(), ctx.deps.settings.backoff);
  const record = newRecord(ctx, item, disposition.result, {
    error: describeError(err),
    failures,
    ...(disposition.retryAt !== undefined ? { retryAt: disposition.retryAt } : {}),
    ...(item.record && item.plan?.action === 'DELETE' ? { desiredHash: item.record.desiredHash } : {}),
  });
  await saveRecord(ctx, item, record);
  if (item.obj && !item.desired?.deleting) await patchStatus(ctx, item, record);
  item.report = { ...reportFor(ctx, item, disposition.result), ...errorFields(err) };
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
  item.report = { ...reportFor(ctx, item, result), ...(record.error ? { error: record.error } : {}) };
}

async function finishDelete(ctx: RunContext, item: Item): Promise<void> {
  if (item.wrote === 'remove' && !item.visible) {
    const record = newRecord(ctx, item, 'pending', { error: 'deleted on the gateway, still visible after reload; will retry' });
    await saveRecord(ctx, item, record);
    item.report = { ...reportFor(ctx, item, 'pending'), error: record.error as string };
    return;
  }
  try {
    if (item.obj && item.desired?.deleting && item.desired.hasFinalizer) {
      await ctx.deps.kube.removeFinalizer(ctx.kind, item.obj, ctx.kind.finalizer);
    }
    await ctx.deps.store.deleteRecord(item.key);
    item.report = reportFor(ctx, item, 'deleted');
  } catch (err) {
    if (err instanceof StoreUnavailableError) throw err;
    item.report = { ...reportFor(ctx, item, 'failed'), ...errorFields(err) };
  }
}

async function patchStatus(ctx: RunContext, item: Item, record: SyncRecord): Promise<void> {
  const obj = item.obj;
  if (!obj) return;
  const patch = statusPatch(ctx.kind, obj.status, record);
  if (patch === undefined) return;
  try {
    item.obj = await ctx.deps.kube.patchStatus(ctx.kind, obj, patch);
  } catch (err) {
    ctx.log.warn({ key: item.key, err: describeError(err), code: errorCode(err) }, 'status patch failed');
  }
}

// ───────────────────────────── report ─────────────────────────────

function errorFields(err: unknown): { error: string; code: string } {
  return { error: describeError(err), code: errorCode(err) };
}

function reportFor(ctx: RunContext, item: Item, result: ObjectResult): ObjectReport {
  const p = item.plan ?? { action: 'NOOP' as const, reason: 'unchanged' as const, id: targetId(item) ?? '' };
  return {
    kind: ctx.kind.kind,
    namespace: item.ref.namespace,
    name: item.ref.name,
    id: p.id,
    action: p.action,
    reason: p.reason,
    result,
  };
}

function finish(ctx: RunContext, objects: ObjectReport[]): RunReport {
  const counts: Partial<Record<ObjectResult, number>> = {};
  for (const o of objects) counts[o.result] = (counts[o.result] ?? 0) + 1;
  objects.sort((a, b) => (a.namespace + '/' + a.name).localeCompare(b.namespace + '/' + b.name));
  const report: RunReport = {
    runId: ctx.runId,
    trigger: ctx.request.trigger,
    dryRun: ctx.request.dryRun === true,
    startedAt: new Date(ctx.startedAt).toISOString(),
    durationMs: ctx.deps.clock.now() - ctx.startedAt,
    gateway: { name: ctx.deps.gateway.name, writes: ctx.writes, reloads: ctx.reloads },
    objects,
    errors: ctx.errors,
    counts,
  };
  ctx.log.info({ counts, writes: ctx.writes, reloads: ctx.reloads, errors: ctx.errors.length, durationMs: report.durationMs }, 'run finished');
  return report;
}
