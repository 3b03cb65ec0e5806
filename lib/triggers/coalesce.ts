/**
 * Coalesced runs for the webhooks: a work queue, as controller-runtime keeps one, for a process
 * that keeps no state of its own between runs.
 *
 * One queue for every webhook trigger (watch, audit, CloudEvents), as a controller keeps one
 * work queue whatever its event sources: at most one run at a time in this process. A scope
 * submitted while none runs starts one at once; scopes submitted while one runs wait together
 * and are taken by the next run, over their union (mergeScopes). So a storm of N deliveries
 * about the same objects costs a few runs, not N runs that each read, lock and mark the same
 * objects dirty; and a cluster that sends both audit events and forwarded watch events about
 * each change has each object read once per run, not once per source (two runs side by side
 * would also contend for the same locks). A run is started with the trigger of the first scope
 * it covers (its metrics and logs are counted under it); triggers differ in nothing else.
 *
 * Guarantees: every submitted scope is covered by a run that starts after it was submitted (so
 * it reads what the event was about); no two runs overlap; each caller gets the report of the
 * run that covered its scope (the whole run's, which may name more objects), or that run's
 * error. Runs are level-triggered, so a union is only more objects looked at. Assumes `start`
 * never throws synchronously (it returns a rejected promise instead).
 */

import type { ClusterRef, ObjectRef } from '../engine/kind.js';
import type { RunReport, RunScope, Trigger } from '../engine/types.js';

/** The union of two run scopes: every object, namespace and single object either names. */
export function mergeScopes(a: RunScope, b: RunScope): RunScope {
  return new ScopeUnion().add(a).add(b).scope();
}

const refKey = (r: ObjectRef): string => `${r.kind.kind}/${r.namespace}/${r.name}`;
const clusterKey = (c: ClusterRef): string => `${c.kind.kind}/${c.namespace}/${c.name}`;

/**
 * A union of run scopes built one scope at a time: adding costs the size of the scope added,
 * not of the union so far (a storm folds thousands of one-object scopes into one).
 */
export class ScopeUnion {
  private all = false;
  // a part is undefined until some added scope names it (a named part stays, even empty)
  private namespaces?: Map<string, string>;
  private refs?: Map<string, ObjectRef>;
  private cluster?: Map<string, ClusterRef>;

  add(s: RunScope): this {
    if (this.all) return this;
    if (s.all) {
      this.all = true;
      return this;
    }
    this.namespaces = addAll(this.namespaces, s.namespaces, (ns) => ns);
    this.refs = addAll(this.refs, s.refs, refKey);
    this.cluster = addAll(this.cluster, s.cluster, clusterKey);
    return this;
  }

  /** The union as a scope: a list for each part some added scope named (even empty), `all` when one asked for everything. */
  scope(): RunScope {
    if (this.all) return { all: true };
    const out: RunScope = {};
    if (this.namespaces) out.namespaces = [...this.namespaces.values()];
    if (this.refs) out.refs = [...this.refs.values()];
    if (this.cluster) out.cluster = [...this.cluster.values()];
    return out;
  }
}

/** `items` added to `into` (made when absent and `items` is named), each key once, the first kept. */
function addAll<T>(into: Map<string, T> | undefined, items: readonly T[] | undefined, key: (item: T) => string): Map<string, T> | undefined {
  if (items === undefined) return into;
  const map = into ?? new Map<string, T>();
  for (const item of items) {
    const k = key(item);
    if (!map.has(k)) map.set(k, item);
  }
  return map;
}

interface Waiter {
  resolve(report: RunReport): void;
  reject(err: unknown): void;
}

interface Batch {
  /** the trigger of the first scope submitted to it: the one its run is started with */
  readonly trigger: Trigger;
  readonly scope: ScopeUnion;
  readonly waiters: Waiter[];
}

export class Coalescer {
  private running = false;
  private pending?: Batch;

  constructor(private readonly start: (trigger: Trigger, scope: RunScope) => Promise<RunReport>) {}

  /** A run over `scope`: started now (with `trigger`) when none runs, else folded into the next one. */
  submit(trigger: Trigger, scope: RunScope): Promise<RunReport> {
    return new Promise<RunReport>((resolve, reject) => {
      const waiter = { resolve, reject };
      if (this.pending) {
        this.pending.scope.add(scope);
        this.pending.waiters.push(waiter);
      } else this.pending = { trigger, scope: new ScopeUnion().add(scope), waiters: [waiter] };
      if (!this.running) this.next();
    });
  }

  /** Submitted scopes waiting for a run (for tests and metrics). */
  waiting(): number {
    return this.pending?.waiters.length ?? 0;
  }

  private next(): void {
    const batch = this.pending;
    if (!batch) {
      this.running = false;
      return;
    }
    this.pending = undefined;
    this.running = true;
    this.start(batch.trigger, batch.scope.scope())
      .then(
        (report) => {
          for (const w of batch.waiters) w.resolve(report);
        },
        (err: unknown) => {
          for (const w of batch.waiters) w.reject(err);
        },
      )
      .finally(() => this.next());
  }
}
