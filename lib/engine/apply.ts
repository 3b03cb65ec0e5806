/**
 * The apply stage: carries out decisions that write, under per-object locks.
 *
 * - lock (locks.ts): every object that writes is locked; one whose lock another run holds is
 *   marked dirty there and reported deferred (that run takes the change up).
 * - under the lock each object is re-read and decided again (`refresh`), so a change since
 *   the load is never overwritten; then its write is carried out: finalizer first, then the
 *   gateway, then the retirement of an old id or of its copy on its old gateway.
 * - the pass's owner claims (an upsert claims its id before anything is written for it) are
 *   made together before its writes, one store call per 500 (claimOwners); a write skipped
 *   because the run stops before the pass claims nothing.
 * - each gateway write holds one of the gateway's write slots (GATEWAY_MAX_CONCURRENT_WRITES,
 *   in the store, so every invocation together stays under it): the pass's lease of them per
 *   gateway (write-slots.ts withSlotLeases: taken in one store call, given back in one).
 * - settle: per gateway, one reload (where the gateway needs one), then a read-back until the
 *   writes are visible, re-issuing a lost reload with backoff within the budget.
 * - finalize (finalize.ts) records what happened (queued in ctx.records, flushed in batches
 *   when the pass ends, before its locks are released); then each lock is released. An object
 *   marked dirty while we held its lock is refreshed and applied again before its lock is
 *   released (bounded by maxDirtyPasses), so an event that arrived meanwhile is never lost.
 *
 * While it holds locks, a batch renews them every lockRenewMs (locks.ts: real time, as the
 * store's TTLs), so lockTtlMs can be short: a holder that dies blocks its objects for seconds,
 * one that works long keeps them. A renewal that finds a lock gone is logged.
 *
 * Locks are released only when nothing of the batch is still in flight, also on failure; a
 * StoreUnavailableError is thrown after that (locks released first), since without records
 * and locks no safe decision can be made. Object failures are recorded, never thrown.
 */
import type { Gateway, JsonObject } from '../gateway/types.js';
import type { KubeObject } from '../kube/types.js';
import type { FieldDifference } from '../platform/compare.js';
import { describeError, errorCode, InvalidSpecError, OwnershipError } from '../platform/errors.js';
import type { Owner } from '../store/types.js';
import { type GatewayCalls, sumCalls } from './calls.js';
import { chunked, mapLimit } from './concurrency.js';
import { type Decision, exhaustive, type Loaded, observedOf, type WriteDecision } from './decide.js';
import { type Done, finalize, finalizeWrite } from './finalize.js';
import type { Identity } from './load.js';
import { readObserved } from './load.js';
import { underLocks } from './locks.js';
import { hasOwners, ownerKey } from './owners.js';
import { type RunContext, reportOf } from './run-context.js';
import type { ObjectReport } from './types.js';
import { type SlotLeases, withSlotLeases, withWriteSlot } from './write-slots.js';

/** An object with what load found and what was decided (`D`: which of the decision's variants). */
export interface Planned<D extends Decision = Decision> {
  readonly loaded: Loaded;
  readonly decision: D;
}

/** What carrying out a write did, as far as finalize needs it. */
export interface Carried {
  /** the resource after the finalizer was added (else the loaded one) */
  readonly obj: KubeObject | null | undefined;
  /** a gateway write was sent (the object's own; retirements count in `touched`) */
  readonly sent: boolean;
  readonly error?: unknown;
  /** gateways written to */
  readonly touched: readonly Gateway[];
  /** write requests sent to gateways: its own, a retirement, certificate uploads (a failed one included) */
  readonly writes: number;
  /** after settle: the write is visible, and what the read-back found */
  visible: boolean;
  observedBody?: JsonObject | null;
  observedHash?: string;
  /** the whole read-back's identity, its listed bytes' digest or its hashOf (for a sharded run's snapshot) */
  observedWholeHash?: string;
  /** the read-back's differences from the upsert's body (sentFieldDifferences) */
  differences?: readonly FieldDifference[];
}

/** A write as carried out: what load found, what was decided, what carrying it out did. */
export interface Written extends Planned<WriteDecision> {
  readonly carried: Carried;
}

/**
 * An object decided to write, as the apply stage takes it: who it is, and its report should
 * another run hold its lock. Only these: the object is read and decided again under its lock,
 * so what the first reading found need not stay in memory meanwhile (at N objects, one copy
 * of every resource and body instead of two).
 */
export interface ToWrite {
  readonly id: Identity;
  readonly deferred: ObjectReport;
}

export function toWrite({ loaded, decision }: Planned): ToWrite {
  return { id: { kind: loaded.kind, ref: loaded.ref, key: loaded.key }, deferred: reportOf(loaded, decision, 'deferred') };
}

/** Re-reads objects under their locks and decides them again; supplied by run.ts per kind. */
export type Refresh = (objects: readonly Identity[]) => Promise<Planned[]>;

/** Locks, refreshes, applies, settles and finalizes `batch` (all decided to write); returns what each ended with. */
export async function applyLocked(ctx: RunContext, batch: readonly ToWrite[], refresh: Refresh): Promise<{ done: Done[]; deferred: ObjectReport[]; calls: GatewayCalls }> {
  const out = new Map<string, Done>();
  const skipped: ObjectReport[] = [];
  const calls: GatewayCalls[] = [];
  const refused = await underLocks(
    ctx,
    batch,
    (w) => w.id.key,
    async (held) => {
      let pass: Awaited<ReturnType<typeof applyPass>>;
      try {
        pass = await applyPass(ctx, await refresh(held.map((w) => w.id)));
      } finally {
        // the pass's records, saved before its locks are given back (also when it failed: what it recorded stands)
        await ctx.records.flush();
      }
      calls.push(pass.calls);
      // skipped in a dirty re-run: what the first pass did stands
      for (const [p, reason] of pass.skipped) if (!out.has(p.loaded.key)) skipped.push(reportOf(p.loaded, p.decision, 'deferred', { reason }));
      // a dirty re-run that found nothing to do does not hide what the first pass did
      for (const d of pass.done) if (!out.has(d.loaded.key) || d.report.action !== 'NOOP') out.set(d.loaded.key, d);
    },
  );
  return { done: [...out.values()], deferred: [...refused.map((w) => w.deferred), ...skipped], calls: sumCalls(calls) };
}

/**
 * One pass under the locks: write, settle, finalize. Once the process is stopping, or the
 * store is gone (no record could be saved), writes not yet started are not made: those
 * objects are left as they were (no record, no status) and reported deferred, for the next run.
 */
async function applyPass(ctx: RunContext, planned: readonly Planned[]): Promise<{ done: Done[]; skipped: Map<Planned, 'shutting down' | 'store unavailable'>; calls: GatewayCalls }> {
  const skipped = new Map<Planned, NonNullable<ReturnType<RunContext['writesHeld']>>>();
  const claimed = ctx.writesHeld() === undefined ? await claimOwners(ctx, planned) : new Map<Planned, Claimed>();
  const written = await withSlotLeases(ctx, writesPerGateway(planned), (leases) =>
    mapLimit(planned, ctx.settings.concurrency, (p): Promise<Written | undefined> => {
      const d = p.decision;
      switch (d.what) {
        case 'quiet':
          return Promise.resolve(undefined);
        case 'upsert':
        case 'remove': {
          const held = ctx.writesHeld();
          if (held !== undefined) {
            skipped.set(p, held);
            return Promise.resolve(undefined);
          }
          return carryOut(ctx, { loaded: p.loaded, decision: d }, claimed.get(p), leases);
        }
        default:
          return exhaustive(d);
      }
    }),
  );
  const carried = written.filter((w): w is Written => w !== undefined);
  const reloads = await settle(ctx, carried);
  const done = await mapLimit(planned, ctx.settings.concurrency, (p, i) => {
    const d = p.decision;
    switch (d.what) {
      case 'quiet':
        return finalize(ctx, { loaded: p.loaded, decision: d });
      case 'upsert':
      case 'remove': {
        // none: a write not made (skipped), left as it was
        const w = written[i];
        return w === undefined ? Promise.resolve(undefined) : finalizeWrite(ctx, w);
      }
      default:
        return exhaustive(d);
    }
  });
  return {
    done: done.filter((d): d is Done => d !== undefined),
    skipped,
    calls: { writes: carried.reduce((n, w) => n + w.carried.writes, 0), reloads },
  };
}

/** How many writes each gateway (by name) is to take in a pass: the size of its write-slot lease. */
function writesPerGateway(planned: readonly Planned[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const p of planned) {
    const name = p.loaded.target?.gateway.name;
    if (p.decision.what !== 'quiet' && name !== undefined) counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  return counts;
}

/** An owner claim's answer: the owner after it, or why it could not be asked (the write fails with it). */
type Claimed = { readonly owner: Owner } | { readonly error: unknown };

/** Owner claims per store call. */
const CLAIM_CHUNK = 500;

/**
 * The pass's owner claims (the upserts that write to a gateway and claim their id), made before
 * any of its writes in one store call per CLAIM_CHUNK; a store that fails fails those writes
 * (as their own claim failing would), not the pass.
 */
async function claimOwners(ctx: RunContext, planned: readonly Planned[]): Promise<Map<Planned, Claimed>> {
  const claiming = planned.flatMap((p) => (p.decision.what === 'upsert' && p.decision.claim !== undefined && p.loaded.target ? [{ p, claim: p.decision.claim }] : []));
  const out = new Map<Planned, Claimed>();
  await mapLimit(chunked(claiming, CLAIM_CHUNK), ctx.settings.concurrency, async (part) => {
    try {
      const owners = await ctx.deps.store.claimOwners(part.map(({ claim }) => ({ key: claim.key, owner: claim.as })));
      part.forEach(({ p }, i) => out.set(p, { owner: owners[i] as Owner }));
    } catch (error) {
      for (const { p } of part) out.set(p, { error });
    }
  });
  return out;
}

/** Carries out one write (`claimed`: its owner claim's answer, made for the pass; `leases`: the pass's write slots); a failure is kept in what it did (`carried`), never thrown. */
async function carryOut(ctx: RunContext, { loaded, decision }: Planned<WriteDecision>, claimed: Claimed | undefined, leases: SlotLeases | undefined): Promise<Written> {
  const target = loaded.target;
  const touched: Gateway[] = [];
  let obj = loaded.obj;
  let sent = false;
  let writes = 0;
  const written = (carried: Carried): Written => ({ loaded, decision, carried });
  if (!target) return written({ obj, sent, touched, writes, visible: false, error: new InvalidSpecError('no gateway to write to') });
  const gw = target.gateway;
  const gk = loaded.kind.gatewayKind;
  // a removal with nothing to remove (or only a retirement) needs no read-back
  const done = (error?: unknown): Written => written({ obj, sent, touched, writes, visible: error === undefined && !sent, error });
  const write = decision.write;
  try {
    switch (decision.what) {
      case 'remove':
        if (decision.write.present) {
          sent = true;
          touched.push(gw);
          writes++;
          await withWriteSlot(ctx, gw, () => gw.remove(gk, decision.id), leases);
        }
        break;
      case 'upsert': {
        const upsert = decision.write;
        // the id is claimed before anything is written for it: of two resources naming it, one writes
        await claimedBy(ctx, decision, claimed);
        if (upsert.addFinalizer && obj) obj = await ctx.deps.kube.addFinalizer(loaded.kind, obj, loaded.kind.finalizer);
        // adopted as it is: the gateway holds the body already; what load read of it is what a read-back would find
        if (upsert.inPlace) return written({ obj, sent, touched, writes, visible: true, observedBody: loaded.observedBody ?? null, observedHash: loaded.observed?.hash ?? '', differences: [] });
        if (upsert.certificates) {
          // the uploads (certificates.ts) are loaded only by a run that has certificates to put
          const uploads = (await import('./certificates.js')).uploadCertificates(ctx, target, upsert.certificates, leases);
          writes += uploads.sent;
          await uploads.done;
        }
        sent = true;
        touched.push(gw);
        writes++;
        await withWriteSlot(ctx, gw, () => gw.upsert(gk, decision.id, upsert.body, { present: loaded.observedBody !== null }), leases);
        break;
      }
      default:
        exhaustive(decision);
    }
    if (write.retire) {
      const whereName = write.retire.gateway ?? target.name;
      const retireId = write.retire.id;
      const retiredKey = ownerKey(whereName, loaded.kind, retireId);
      const [owner] = hasOwners(loaded.kind) ? await ctx.deps.store.owners([retiredKey]) : [null];
      // what another resource owns now is not ours to retire
      if (owner === null || owner === undefined || owner.ref === loaded.key) {
        const where = write.retire.gateway === undefined ? gw : await gatewayNamed(ctx, write.retire.gateway);
        touched.push(where);
        writes++;
        await withWriteSlot(ctx, where, () => where.remove(gk, retireId), leases);
        if (owner) await ctx.deps.store.releaseOwner(retiredKey, loaded.key);
      }
    }
    return done();
  } catch (err) {
    ctx.log.warn({ key: loaded.key, action: decision.action, err: describeError(err), code: errorCode(err) }, 'apply failed');
    return done(err);
  }
}

/** The decision's id as claimed for its resource (claimOwners); another resource holding it fails the write (nothing was sent). */
async function claimedBy(ctx: RunContext, decision: Extract<WriteDecision, { what: 'upsert' }>, claimed: Claimed | undefined): Promise<void> {
  const claim = decision.claim;
  if (claim === undefined) return;
  // not claimed for the pass (writes were held when it began): claimed on its own
  const answer = claimed ?? { owner: await ctx.deps.store.claimOwner(claim.key, claim.as) };
  if ('error' in answer) throw answer.error;
  if (answer.owner.ref !== claim.as.ref)
    throw new OwnershipError('ID_CLAIMED', `the id ${decision.id} on gateway ${decision.gateway ?? 'default'} is owned by another resource; choose another spec id (or none)`);
}

async function gatewayNamed(ctx: RunContext, name: string): Promise<Gateway> {
  const old = await ctx.resolver.byName(name);
  if ('error' in old) throw new InvalidSpecError(`cannot remove from the previous gateway: ${old.error}`);
  return old.gateway;
}

// ───────────────────────────── settle ─────────────────────────────

/**
 * Makes the writes visible, per gateway: one reload where the gateway needs one, then read
 * back; while some writes are not visible, re-issue the reload with backoff within the budget.
 * Marks each write `visible` and keeps what the read-back found. Answers how many reloads it asked for.
 */
async function settle(ctx: RunContext, writes: readonly Written[]): Promise<number> {
  const gateways = new Set<Gateway>(writes.flatMap((w) => w.carried.touched));
  const { budgetMs, initialDelayMs, maxDelayMs, reloadEveryMs } = ctx.settings.settle;
  const clock = ctx.deps.clock;
  const deadline = clock.now() + Math.max(0, Math.min(budgetMs, ctx.remainingMs()));
  // only the object's own write is read back (a retirement alone is visible at once, see carryOut)
  let pending = writes.filter((w) => w.carried.error === undefined && w.carried.sent);
  const reloadedAt = new Map<Gateway, number>();
  let reloads = 0;
  const reloadOf = async (gw: Gateway) => {
    if (gw.reloadRequired) reloads++;
    reloadedAt.set(gw, await reload(ctx, gw));
  };
  for (const gw of gateways) await reloadOf(gw);
  let delay = initialDelayMs;
  const anyReload = [...gateways].some((g) => g.reloadRequired);
  const wait = () => clock.sleep(Math.min(delay, Math.max(0, deadline - clock.now())));
  while (pending.length > 0) {
    if (anyReload) await wait();
    await readBack(ctx, pending);
    pending = pending.filter((w) => !w.carried.visible);
    if (pending.length === 0 || clock.now() >= deadline) break;
    if (!anyReload) await wait();
    for (const gw of new Set(pending.map((w) => w.loaded.target?.gateway as Gateway))) {
      if (gw.reloadRequired && clock.now() - (reloadedAt.get(gw) ?? 0) >= reloadEveryMs) await reloadOf(gw);
    }
    delay = Math.min(delay * 2, maxDelayMs);
  }
  return reloads;
}

/** One reload of a gateway group, where the gateway needs it; returns when it was asked. */
async function reload(ctx: RunContext, gw: Gateway): Promise<number> {
  if (!gw.reloadRequired) return ctx.deps.clock.now();
  try {
    await gw.reload();
  } catch (err) {
    ctx.runError(`reload gateway ${gw.name}`, err);
  }
  return ctx.deps.clock.now();
}

/** Reads each write's object back; a failed read leaves it not visible (it is not a failure of the write). */
async function readBack(ctx: RunContext, writes: readonly Written[]): Promise<void> {
  const answers = await readObserved(
    ctx,
    writes.map(({ loaded, decision }) => {
      const target = loaded.target as NonNullable<Loaded['target']>;
      const sent = sentBody(decision);
      // the sent body's key when it is the body the desired hash was made from
      const sentKey = sent !== undefined && sent === loaded.body ? loaded.sentKey : undefined;
      return { gateway: target.gateway, gatewayName: target.name, kind: loaded.kind, id: decision.id, readBack: { sent, ...(sentKey !== undefined ? { sentKey } : {}) } };
    }),
    false,
  );
  writes.forEach((w, i) => {
    const answer = answers[i];
    const c = w.carried;
    delete c.observedHash;
    delete c.observedWholeHash;
    delete c.differences;
    if (answer === undefined || 'error' in answer) {
      delete c.observedBody;
      c.visible = false;
      return;
    }
    // the echo as readObserved reduced it: its ids (what finalize reads of it), hashes and differences
    const body = answer.body;
    if (body && answer.hash !== undefined && answer.readBack) {
      c.observedHash = answer.hash;
      c.observedWholeHash = answer.readBack.wholeHash;
      c.differences = answer.readBack.differences;
    }
    c.visible = isVisible(w, body);
    c.observedBody = body;
  });
}

/** The body a write sent, read back against (a removal sent none). */
function sentBody(d: WriteDecision): JsonObject | undefined {
  switch (d.what) {
    case 'upsert':
      return d.write.body;
    case 'remove':
      return undefined;
    default:
      return exhaustive(d);
  }
}

function isVisible({ loaded, decision, carried: c }: Written, observed: JsonObject | null): boolean {
  switch (decision.what) {
    case 'remove':
      return observed === null;
    case 'upsert': {
      if (!observed) return false;
      if ((c.differences ?? []).length === 0) return true;
      // the gateway changed something we sent (e.g. renamed a clashing listen path): visible if it moved at all
      const preHash = observedOf(loaded)?.hash;
      return preHash === undefined || c.observedHash !== preHash;
    }
    default:
      return exhaustive(decision);
  }
}
