/**
 * A composite kind: one whose objects are never sent to a gateway but make other objects in the
 * cluster (its children, of a kind the engine serves), which later phases of the same run send.
 * The engine's second reconciler beside phase.ts, as generic: the kind says what it loads, how
 * it decides and how an outcome is reported, recorded and told; the engine holds the rest.
 *
 * load (the kind's) ─► decide (the kind's, pure, contained: a throw is that object's Invalid)
 * ─► `quiet`: settle (record, Events) and report; `upsert` / `remove`: lock the object
 * (locks.ts: renewed, dirty passes; the writers together, in batches), read it again (the
 * kind's `reread`), decide again, carry the decision out (the finalizer first; one create,
 * replace or delete per child; the finalizer last on a removal), settle, release. Records are
 * queued in the run's RecordWriter and saved together: the quiet objects' when all are settled,
 * a locked pass's before its locks are given back. Dry runs write nothing (writers reported `planned`); a
 * stopping process defers writers; a lock held elsewhere defers (the holder runs again).
 *
 * The decision is the same vocabulary as a managed object's (decide.ts): `quiet | upsert |
 * remove`, matched exhaustively; `ignore` leaves an object not ours unreported. Its payload is
 * the children's writes and the kind's reason (`because`), which only the kind reads.
 *
 * Guarantees: a child is created only at a free name (a name taken since the read is the
 * kind's `takenError`, unless the kind says what is there is its own); a delete carries the uid
 * it was decided on; the finalizer goes only when every child's delete succeeded. The children
 * written and the objects the kind's `released` names are followed by the child kind's phase,
 * so they reach the gateway in the same run. Throws only StoreUnavailableError.
 */
import type { KubeObject, NamespacedName } from '../kube/types.js';
import { InvalidSpecError, KubeConflictError, StoreUnavailableError } from '../platform/errors.js';
import type { SyncRecord } from '../store/types.js';
import { mapLimit } from './concurrency.js';
import { exhaustive } from './decide.js';
import { hashOf } from './hash.js';
import { thrownProblem } from './input-limits.js';
import type { ClusterKind, ManagedKind, Phase, RegistryEntry } from './kind.js';
import { underLocks } from './locks.js';
import { owned } from './phase.js';
import type { FollowRef, RunContext } from './run-context.js';
import type { ObjectReport, ObjectResult, RunScope } from './types.js';

/** One write to a child; a delete names the uid it was decided on. */
export type ChildStep =
  | { readonly op: 'create'; readonly name: string; readonly object: KubeObject }
  | { readonly op: 'update'; readonly name: string; readonly object: KubeObject }
  | { readonly op: 'delete'; readonly name: string; readonly uid: string };

/**
 * A composite's decision, `because` being the kind's own reason (read only by the kind):
 * - ignore: not ours; nothing written, recorded or reported;
 * - quiet: nothing to write; its outcome is settled (record, Events) and reported;
 * - upsert: the object stays; its children are made to match (`steps`), the finalizer added first when asked;
 * - remove: what it made goes (`steps`), then, when asked and every delete succeeded, its finalizer.
 */
export type CompositeDecision<B> =
  | { readonly what: 'ignore' }
  | { readonly what: 'quiet'; readonly because: B }
  | { readonly what: 'upsert'; readonly because: B; readonly steps: readonly ChildStep[]; readonly addFinalizer: boolean }
  | { readonly what: 'remove'; readonly because: B; readonly steps: readonly ChildStep[]; readonly removeFinalizer: boolean };

/** A decision to report: anything but `ignore`. */
export type ReportedDecision<B> = Exclude<CompositeDecision<B>, { readonly what: 'ignore' }>;
/** A decision that writes to the API server (and so runs under the object's lock). */
export type CompositeWrite<B> = Extract<CompositeDecision<B>, { readonly what: 'upsert' | 'remove' }>;

/** How one child's write went; a done create or update keeps the hashes of what was sent and what the API server answered. */
export type ChildResult = { readonly ok: true; readonly memory?: ChildMemory } | { readonly ok: false; readonly error: unknown; readonly taken?: boolean };

/** What was last written of a child and what the API server answered, as hashes of the composite's view of it. */
export interface ChildMemory {
  readonly sent: string;
  readonly seen: string;
}

/** How a composite object's pass ended. */
export type CompositeOutcome<B> =
  /** a read failed, deciding threw (InvalidSpecError), or the finalizer could not be added: nothing written */
  | { readonly what: 'failed'; readonly error: unknown; readonly writing?: boolean }
  /** nothing written: a quiet decision, a dry run's or a deferred writer's */
  | { readonly what: 'decided'; readonly decision: ReportedDecision<B> }
  | { readonly what: 'written'; readonly decision: CompositeWrite<B>; readonly results: readonly ChildResult[]; readonly finalizerError?: unknown };

/** One composite object as its kind loaded it. */
export interface CompositeEntry {
  readonly namespace: string;
  readonly name: string;
  /** "<Kind>/<namespace>/<name>": its record and lock */
  readonly key: string;
  readonly record: SyncRecord | null;
  /** reading it or what it is made from failed: nothing is decided */
  readonly readError?: unknown;
}

/** What differs between composite kinds. */
export interface CompositeKind<E extends CompositeEntry, B> {
  /** the composite's kind and finalizer */
  readonly kind: ClusterKind;
  /** the kind of its children, whose phase follows the children written */
  readonly child: ManagedKind;
  /** the object itself: null when the API server confirmed it gone */
  objectOf(e: E): KubeObject | null;
  /** the entries a run looks at in `scope` (a shard run: its own) */
  load(ctx: RunContext, scope: RunScope): Promise<readonly E[]>;
  /** under the lock: `e` read afresh (and whatever is at each name its plan creates) */
  reread(ctx: RunContext, e: E): Promise<E>;
  /** the decision (pure; may throw: the object is then Invalid) */
  decide(ctx: RunContext, e: E): CompositeDecision<B>;
  /** whether `child`, found at a name a create was refused for, is this object's own (made by another run of ours) */
  isOwn(e: E, child: KubeObject): boolean;
  /** the hash of what the composite manages of a child (its memory of it) */
  viewOf(e: E, child: KubeObject): string;
  /** the error of names held by objects not its own */
  takenError(e: E, names: readonly string[]): Error;
  /** the record after this pass: null to delete it, undefined to leave it */
  recordOf(e: E, o: CompositeOutcome<B>, time: string): SyncRecord | null | undefined;
  /** the report line (result: when the engine knows better: planned, deferred) */
  report(e: E, o: CompositeOutcome<B>, result?: ObjectResult, extra?: Partial<ObjectReport>): ObjectReport;
  /** the Events that tell the outcome (failures to record one are the kind's to log) */
  tell(ctx: RunContext, e: E, o: CompositeOutcome<B>): Promise<void>;
  /** children the record `before` named and `after` does not (let go: their own phase looks at them) */
  released?(e: E, before: SyncRecord | null, after: SyncRecord | null): readonly NamespacedName[];
}

/** The registry line of a composite kind: its objects read, its phase before its children's. */
export function compositeEntry<E extends CompositeEntry, B>(kind: CompositeKind<E, B>): RegistryEntry {
  return { cluster: [kind.kind], phases: [compositePhase(kind)] };
}

/** The composite's phase: its objects reconciled, the children it touched followed by their kind's phase. */
export function compositePhase<E extends CompositeEntry, B>(kind: CompositeKind<E, B>): Phase {
  return {
    name: kind.kind.plural,
    async run(ctx) {
      const { reports, touched } = await runComposite(ctx, kind, ctx.request.scope);
      ctx.follow(kind.child, owned(ctx, touched));
      // its writes are the API server's, not a gateway's
      return { reports };
    },
  };
}

/**
 * Every entry of `scope` reconciled: the reports (in the order loaded), and the children written
 * or let go (to follow). The entries that write nothing are settled first, their records saved
 * together; then the writers are locked together (locks.ts: in batches) and each is read,
 * decided and carried out again under its lock, the pass's records saved together before the
 * locks are given back.
 */
export async function runComposite<E extends CompositeEntry, B>(ctx: RunContext, kind: CompositeKind<E, B>, scope: RunScope): Promise<{ reports: ObjectReport[]; touched: FollowRef[] }> {
  const entries = await kind.load(ctx, scope);
  const touched = new Touched();
  const writers: Writer<E, B>[] = [];
  let first: (ObjectReport | Writer<E, B> | undefined)[];
  try {
    first = await mapLimit(entries, ctx.settings.concurrency, async (e) => {
      const decided = await unlessWrite(ctx, kind, e, touched);
      if ('done' in decided) return decided.done;
      const decision = decided.write;
      if (ctx.request.dryRun === true) return kind.report(e, { what: 'decided', decision }, 'planned');
      if (ctx.stopping()) return kind.report(e, { what: 'decided', decision }, 'deferred', { reason: 'shutting down' });
      const writer = { e, decision };
      writers.push(writer);
      return writer;
    });
  } finally {
    await ctx.records.flush();
  }
  const written = new Map<Writer<E, B>, ObjectReport | undefined>();
  const refused = await underLocks(
    ctx,
    writers,
    (w) => w.e.key,
    async (held) => {
      try {
        await mapLimit(held, ctx.settings.concurrency, async (w) => {
          // under the lock: read again, decide again, and carry out what is still to write
          const fresh = await kind.reread(ctx, w.e);
          const again = await unlessWrite(ctx, kind, fresh, touched);
          written.set(w, 'done' in again ? again.done : await carryOut(ctx, kind, fresh, again.write, touched));
        });
      } finally {
        // the pass's records, saved before its locks are given back
        await ctx.records.flush();
      }
    },
  );
  const deferred = new Set(refused);
  const locked = new Set<unknown>(writers);
  const reports = first.map((r) => {
    if (!locked.has(r)) return r as ObjectReport | undefined;
    const w = r as Writer<E, B>;
    return deferred.has(w) ? kind.report(w.e, { what: 'decided', decision: w.decision }, 'deferred') : written.get(w);
  });
  return { reports: reports.filter((r): r is ObjectReport => r !== undefined), touched: touched.refs() };
}

/** An entry decided to write, as the locked stage takes it. */
interface Writer<E extends CompositeEntry, B> {
  readonly e: E;
  readonly decision: CompositeWrite<B>;
}

/** "namespace/name" of children written, and of those let go: followed, optional (they may be gone). */
class Touched {
  private readonly keys = new Set<string>();
  add(namespace: string, name: string): void {
    this.keys.add(`${namespace}/${name}`);
  }
  refs(): FollowRef[] {
    return [...this.keys].map((k) => {
      const at = k.indexOf('/');
      return { namespace: k.slice(0, at), name: k.slice(at + 1), optional: true };
    });
  }
}

/**
 * `e` decided: what writes nothing is settled and reported now (a read error or a throw as
 * failed, quiet as decided; ignore unreported); a write is answered for the caller to carry out.
 */
async function unlessWrite<E extends CompositeEntry, B>(
  ctx: RunContext,
  kind: CompositeKind<E, B>,
  e: E,
  touched: Touched,
): Promise<{ done: ObjectReport | undefined } | { write: CompositeWrite<B> }> {
  const d = e.readError !== undefined ? ({ what: 'failed', error: e.readError } as const) : decided(ctx, kind, e);
  switch (d.what) {
    case 'failed':
      return { done: await quiet(ctx, kind, e, d, touched) };
    case 'ignore':
      return { done: undefined };
    case 'quiet':
      return { done: await quiet(ctx, kind, e, { what: 'decided', decision: d }, touched) };
    case 'upsert':
    case 'remove':
      return { write: d };
    default:
      return exhaustive(d);
  }
}

/** The decide stage's boundary: what deciding one object throws makes that object Invalid, bounded, nothing written. */
function decided<E extends CompositeEntry, B>(ctx: RunContext, kind: CompositeKind<E, B>, e: E): CompositeDecision<B> | Extract<CompositeOutcome<B>, { what: 'failed' }> {
  try {
    return kind.decide(ctx, e);
  } catch (err) {
    return { what: 'failed', error: new InvalidSpecError(thrownProblem('decided', err)) };
  }
}

/** Report, record and tell an object nothing is written for (a dry run only reports). */
async function quiet<E extends CompositeEntry, B>(ctx: RunContext, kind: CompositeKind<E, B>, e: E, outcome: CompositeOutcome<B>, touched: Touched): Promise<ObjectReport> {
  if (ctx.request.dryRun !== true) await settle(ctx, kind, e, outcome, touched);
  return kind.report(e, outcome);
}

/** Saves the record (when it changed) or deletes it, follows the children it let go, and tells the outcome. */
async function settle<E extends CompositeEntry, B>(ctx: RunContext, kind: CompositeKind<E, B>, e: E, outcome: CompositeOutcome<B>, touched: Touched): Promise<void> {
  const next = kind.recordOf(e, outcome, new Date(ctx.deps.clock.now()).toISOString());
  if (next === null) {
    if (e.record) await ctx.deps.store.deleteRecord(e.key);
  } else if (next !== undefined && !sameRecord(e.record, next)) {
    // saved with the others at the stage's flush (ctx.records), before the lock is given back
    ctx.records.put(next);
  }
  if (next !== undefined) for (const r of kind.released?.(e, e.record, next) ?? []) touched.add(r.namespace, r.name);
  await kind.tell(ctx, e, outcome);
}

/** The same record but for its time. */
function sameRecord(a: SyncRecord | null, b: SyncRecord): boolean {
  if (!a) return false;
  const { time: _a, ...x } = a;
  const { time: _b, ...y } = b;
  return hashOf(x) === hashOf(y);
}

async function carryOut<E extends CompositeEntry, B>(ctx: RunContext, kind: CompositeKind<E, B>, e: E, d: CompositeWrite<B>, touched: Touched): Promise<ObjectReport> {
  const obj = kind.objectOf(e);
  const finalizer = kind.kind.finalizer;
  let current = obj;
  if (d.what === 'upsert' && d.addFinalizer && obj) {
    try {
      current = await ctx.deps.kube.addFinalizer(kind.kind, obj, finalizer);
    } catch (err) {
      return quiet(ctx, kind, e, { what: 'failed', error: err, writing: true }, touched);
    }
  }
  const results = await mapLimit(d.steps, ctx.settings.concurrency, (s) => step(ctx, kind, e, s));
  d.steps.forEach((s, i) => {
    if (results[i]?.ok) touched.add(e.namespace, s.name);
  });
  let finalizerError: unknown;
  if (d.what === 'remove' && d.removeFinalizer && current && results.every((r) => r.ok)) {
    try {
      await ctx.deps.kube.removeFinalizer(kind.kind, current, finalizer);
    } catch (err) {
      finalizerError = err;
    }
  }
  const outcome: CompositeOutcome<B> = { what: 'written', decision: d, results, ...(finalizerError !== undefined ? { finalizerError } : {}) };
  await settle(ctx, kind, e, outcome, touched);
  return kind.report(e, outcome);
}

/** One child's write, with the uid a delete was decided on; a create refused as taken is looked at once. */
async function step<E extends CompositeEntry, B>(ctx: RunContext, kind: CompositeKind<E, B>, e: E, s: ChildStep): Promise<ChildResult> {
  const kube = ctx.deps.kube;
  try {
    switch (s.op) {
      case 'delete':
        await kube.deleteObject(kind.child, e.namespace, s.name, { uid: s.uid });
        return { ok: true };
      case 'create':
      case 'update': {
        const answer = s.op === 'create' ? await kube.createObject(kind.child, e.namespace, s.object) : await kube.replaceObject(kind.child, s.object);
        return { ok: true, memory: { sent: kind.viewOf(e, s.object), seen: kind.viewOf(e, answer) } };
      }
      default:
        return exhaustive(s);
    }
  } catch (err) {
    if (err instanceof StoreUnavailableError) throw err;
    if (s.op === 'create' && err instanceof KubeConflictError) {
      // taken since the read: by another run of ours (the next run adopts it), or by something else
      const there = await kube.get(kind.child, e.namespace, s.name).catch(() => null);
      if (there && kind.isOwn(e, there)) return { ok: true };
      return { ok: false, taken: true, error: kind.takenError(e, [s.name]) };
    }
    return { ok: false, error: err };
  }
}
