/**
 * Holding the store's locks while work runs: the one way every phase takes, keeps and gives
 * back the locks of the objects it writes. It works on store keys only.
 *
 * - acquire: each item's key is locked with lockTtlMs. A key another holder has is marked dirty
 *   there (that holder runs it again before it lets go) and answered to the caller, who reports
 *   it deferred. A failure while locking releases what was taken, then is thrown.
 * - renew: while work runs, the held locks are renewed every lockRenewMs (real time, as the
 *   store's TTLs; unref'd timers that never keep a process alive; 0: never), so lockTtlMs can be
 *   short: a holder that dies blocks its keys for one TTL, one that works long keeps them. A
 *   renewal that finds a lock gone is logged; a failed renewal is logged and tried again.
 * - dirty passes: `pass` runs over the held items; each lock is then released, and the items
 *   marked dirty meanwhile (the store kept their lock) run again, up to maxDirtyPasses passes.
 *   The last pass, or any pass once the process is stopping, gives its locks back regardless
 *   (forceRelease): a dirty mark left then stays for the next run. A lock found expired at its
 *   release is logged.
 * - failure: when a pass or a release throws, the locks still held are given back first
 *   (forceRelease), then the error is thrown. Locks on their way back are no longer renewed.
 */
import { randomUUID } from 'node:crypto';
import { describeError, errorCode } from '../platform/errors.js';
import type { Logger } from '../platform/log.js';
import type { Store } from '../store/types.js';
import { mapLimit } from './concurrency.js';
import type { RunSettings } from './types.js';

/** What holding locks needs of a run (a RunContext is one). */
export interface LockContext {
  readonly deps: { readonly store: Store };
  readonly settings: Pick<RunSettings, 'concurrency' | 'lockTtlMs' | 'lockRenewMs' | 'maxDirtyPasses'>;
  readonly log: Logger;
  /** the process is stopping: no further pass */
  stopping(): boolean;
}

interface Held<T> {
  readonly item: T;
  readonly key: string;
  readonly token: string;
}

/**
 * Locks `items` (by `keyOf`), runs `pass` over those locked (again over those marked dirty
 * meanwhile), renewing their locks until each is given back. Answers the items another holder
 * had locked (marked dirty there; nothing ran for them), in the order they were refused.
 */
export async function underLocks<T>(ctx: LockContext, items: readonly T[], keyOf: (item: T) => string, pass: (held: readonly T[]) => Promise<void>): Promise<T[]> {
  const { held, refused } = await acquire(ctx, items, keyOf);
  let current = held;
  // locks on their way back to the store are no longer renewed
  const releasing = new Set<Held<T>>();
  const renewal = keepRenewed(ctx, () => current.filter((h) => !releasing.has(h)));
  try {
    for (let n = 1; current.length > 0; n++) {
      try {
        await pass(current.map((h) => h.item));
        // stopping: no further pass; a dirty mark stays for the next run (forceRelease leaves it)
        current = await release(ctx, current, releasing, n >= ctx.settings.maxDirtyPasses || ctx.stopping());
      } catch (err) {
        await Promise.allSettled(current.map((h) => ctx.deps.store.forceRelease(h.key, h.token)));
        throw err;
      }
    }
  } finally {
    renewal.stop();
  }
  return refused;
}

/** Takes each item's lock; if taking one throws, releases those taken and rethrows. */
async function acquire<T>(ctx: LockContext, items: readonly T[], keyOf: (item: T) => string): Promise<{ held: Held<T>[]; refused: T[] }> {
  const held: Held<T>[] = [];
  const refused: T[] = [];
  try {
    await mapLimit(items, ctx.settings.concurrency, async (item) => {
      const key = keyOf(item);
      const token = randomUUID();
      const outcome = await ctx.deps.store.lock(key, token, ctx.settings.lockTtlMs);
      if (outcome === 'acquired') held.push({ item, key, token });
      else refused.push(item);
    });
  } catch (err) {
    await Promise.allSettled(held.map((h) => ctx.deps.store.forceRelease(h.key, h.token)));
    throw err;
  }
  return { held, refused };
}

/** Gives back each lock after a pass (`last`: regardless of dirty marks); answers those kept for another pass. */
async function release<T>(ctx: LockContext, current: readonly Held<T>[], releasing: Set<Held<T>>, last: boolean): Promise<Held<T>[]> {
  const again = await mapLimit(current, ctx.settings.concurrency, async (h) => {
    releasing.add(h);
    if (last) {
      await ctx.deps.store.forceRelease(h.key, h.token);
      return undefined;
    }
    const outcome = await ctx.deps.store.release(h.key, h.token);
    if (outcome === 'lost') ctx.log.warn({ key: h.key }, 'lock expired before release');
    if (outcome !== 'dirty') return undefined;
    releasing.delete(h);
    return h;
  });
  return again.filter((h): h is Held<T> => h !== undefined);
}

/**
 * Renews the locks `held()` names every lockRenewMs until stopped. Real timers, unref'd (they
 * never keep a process alive); a failed renewal is logged and tried again at the next beat.
 */
function keepRenewed<T>(ctx: LockContext, held: () => readonly Held<T>[]): { stop(): void } {
  const every = ctx.settings.lockRenewMs;
  if (every <= 0) return { stop: () => undefined };
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const beat = async (): Promise<void> => {
    const locks = held().map((h) => ({ key: h.key, token: h.token }));
    try {
      const ours = await ctx.deps.store.renew(locks, ctx.settings.lockTtlMs);
      // a lock released while the renewal was on its way is not lost
      const still = new Set(held().map((h) => h.token));
      locks.forEach((l, i) => {
        if (ours[i] === false && !stopped && still.has(l.token)) ctx.log.warn({ key: l.key }, 'lock lost while held');
      });
    } catch (err) {
      ctx.log.warn({ err: describeError(err), code: errorCode(err) }, 'could not renew locks');
    }
    if (!stopped) schedule();
  };
  const schedule = () => {
    timer = setTimeout(() => void beat(), every);
    timer.unref();
  };
  schedule();
  return {
    stop: () => {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
