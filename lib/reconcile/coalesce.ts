/**
 * Coalesced runs for the webhooks: a work queue, as controller-runtime keeps one, for a process
 * that keeps no state of its own between runs.
 *
 * Per trigger, at most one run at a time in this process. A scope submitted while none runs
 * starts one at once; scopes submitted while one runs wait together and are taken by the next
 * run, over their union (mergeScopes). So a storm of N deliveries about the same objects costs
 * a few runs, not N runs that each read, lock and mark the same objects dirty.
 *
 * Guarantees: every submitted scope is covered by a run that starts after it was submitted (so
 * it reads what the event was about); no two runs of one trigger overlap; each caller gets the
 * report of the run that covered its scope (the whole run's, which may name more objects), or
 * that run's error. Runs are level-triggered, so a union is only more objects looked at.
 * Assumes `start` never throws synchronously (it returns a rejected promise instead).
 */
import type { HeldRef, ObjectRef } from '../kinds.js';
import type { NamespacedName } from './links.js';
import type { RunReport, RunScope, Trigger } from './types.js';

/** The union of two run scopes: every object, namespace and single object either names. */
export function mergeScopes(a: RunScope, b: RunScope): RunScope {
  if (a.all || b.all) return { all: true };
  const out: RunScope = {};
  const namespaces = union(a.namespaces, b.namespaces, (ns) => ns);
  if (namespaces) out.namespaces = namespaces;
  const refs = union(a.refs, b.refs, (r: ObjectRef) => `${r.kind.kind}/${r.namespace}/${r.name}`);
  if (refs) out.refs = refs;
  const held = union(a.held, b.held, (h: HeldRef) => `${h.kind.kind}/${h.namespace}/${h.name}`);
  if (held) out.held = held;
  const ingresses = union(a.ingresses, b.ingresses, (i: NamespacedName) => `${i.namespace}/${i.name}`);
  if (ingresses) out.ingresses = ingresses;
  return out;
}

function union<T>(a: readonly T[] | undefined, b: readonly T[] | undefined, key: (item: T) => string): T[] | undefined {
  if (a === undefined && b === undefined) return undefined;
  const seen = new Map<string, T>();
  for (const item of [...(a ?? []), ...(b ?? [])]) if (!seen.has(key(item))) seen.set(key(item), item);
  return [...seen.values()];
}

interface Waiter {
  resolve(report: RunReport): void;
  reject(err: unknown): void;
}

interface Lane {
  running: boolean;
  pending?: { scope: RunScope; waiters: Waiter[] };
}

export class Coalescer {
  private readonly lanes = new Map<Trigger, Lane>();

  constructor(private readonly start: (trigger: Trigger, scope: RunScope) => Promise<RunReport>) {}

  /** A run over `scope` for `trigger`: started now when none of that trigger runs, else folded into the next one. */
  submit(trigger: Trigger, scope: RunScope): Promise<RunReport> {
    let lane = this.lanes.get(trigger);
    if (!lane) {
      lane = { running: false };
      this.lanes.set(trigger, lane);
    }
    const current = lane;
    return new Promise<RunReport>((resolve, reject) => {
      const waiter = { resolve, reject };
      if (current.pending) {
        current.pending.scope = mergeScopes(current.pending.scope, scope);
        current.pending.waiters.push(waiter);
      } else current.pending = { scope, waiters: [waiter] };
      if (!current.running) this.next(trigger, current);
    });
  }

  /** Submitted scopes waiting for a run, per trigger (for tests and metrics). */
  waiting(trigger: Trigger): number {
    return this.lanes.get(trigger)?.pending?.waiters.length ?? 0;
  }

  private next(trigger: Trigger, lane: Lane): void {
    const batch = lane.pending;
    if (!batch) {
      lane.running = false;
      this.lanes.delete(trigger);
      return;
    }
    lane.pending = undefined;
    lane.running = true;
    this.start(trigger, batch.scope)
      .then(
        (report) => {
          for (const w of batch.waiters) w.resolve(report);
        },
        (err: unknown) => {
          for (const w of batch.waiters) w.reject(err);
        },
      )
      .finally(() => this.next(trigger, lane));
  }
}
