/**
 * Holding the store's locks while work runs: the one way every phase takes, keeps and gives
 * back the locks of the objects it writes. It works on store keys only.
 *
 * - acquire: each item's key is locked with lockTtlMs, LOCK_CHUNK keys per store call (lockAll:
 *   one round trip for up to 500 objects). A key another holder has is marked dirty there (that
 *   holder runs it again before it lets go) and answered to the caller, who reports it
 *   deferred. A failure while locking releases what was (or may have been) taken, then is thrown.
 * - renew: while work runs, the held locks are renewed every lockRenewMs (real time, as the
 *   store's TTLs; unref'd timers that never keep a process alive; 0: never), so lockTtlMs can be
 *   short: a holder that dies blocks its keys for one TTL, one that works long keeps them. A
 *   renewal that finds a lock gone is logged; a failed renewal is logged and tried again.
 * - dirty passes: `pass` runs over the held items; each lock is then released (releaseAll, or
 *   forceReleaseAll, LOCK_CHUNK keys per store call), and the items
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
import type { LockEntry, LockOutcome, Store } from '../store/types.js';
import { chunked, mapLimit } from './concurrency.js';
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
        await giveBack(ctx, current);
        throw err;
      }
    }
  } finally {
    renewal.stop();
  }
  return refused;
}

/** Keys per store call when locking and releasing: one round trip each. */
export const LOCK_CHUNK = 500;

/**
 * Takes each item's lock, LOCK_CHUNK keys per store call (lockAll); if taking some throws,
 * gives back what may have been taken (the failed call's keys included: tokens are ours
 * alone, so giving back one never taken is a no-op), then rethrows.
 */
async function acquire<T>(ctx: LockContext, items: readonly T[], keyOf: (item: T) => string): Promise<{ held: Held<T>[]; refused: T[] }> {
  const held: Held<T>[] = [];
  const refused: T[] = [];
  const unsure: Held<T>[] = [];
  const wanted = items.map((item): Held<T> => ({ item, key: keyOf(item), token: randomUUID() }));
  try {
    await mapLimit(chunked(wanted, LOCK_CHUNK), ctx.settings.concurrency, async (chunk) => {
      let outcomes: LockOutcome[];
      try {
        outcomes = await ctx.deps.store.lockAll(chunk.map(entryOf), ctx.settings.lockTtlMs);
      } catch (err) {
        unsure.push(...chunk);
        throw err;
      }
      chunk.forEach((h, i) => {
        if (outcomes[i] === 'acquired') held.push(h);
        else refused.push(h.item);
      });
    });
  } catch (err) {
    await giveBack(ctx, [...held, ...unsure]);
    throw err;
  }
  return { held, refused };
}

/** Gives back each lock after a pass (`last`: regardless of dirty marks), LOCK_CHUNK per store call; answers those kept for another pass. */
async function release<T>(ctx: LockContext, current: readonly Held<T>[], releasing: Set<Held<T>>, last: boolean): Promise<Held<T>[]> {
  for (const h of current) releasing.add(h);
  const parts = chunked(current, LOCK_CHUNK);
  if (last) {
    await mapLimit(parts, ctx.settings.concurrency, (chunk) => ctx.deps.store.forceReleaseAll(chunk.map(entryOf)));
    return [];
  }
  const again: Held<T>[] = [];
  await mapLimit(parts, ctx.settings.concurrency, async (chunk) => {
    const outcomes = await ctx.deps.store.releaseAll(chunk.map(entryOf));
    chunk.forEach((h, i) => {
      const outcome = outcomes[i];
      if (outcome === 'lost') ctx.log.warn({ key: h.key }, 'lock expired before release');
      if (outcome !== 'dirty') return;
      releasing.delete(h);
      again.push(h);
    });
  });
  return again;
}

/** Gives the locks back regardless of dirty marks, after a failure; never throws. */
async function giveBack<T>(ctx: LockContext, held: readonly Held<T>[]): Promise<void> {
  await Promise.allSettled(chunked(held, LOCK_CHUNK).map((chunk) => ctx.deps.store.forceReleaseAll(chunk.map(entryOf))));
}

function entryOf<T>(h: Held<T>): LockEntry {
  return { key: h.key, token: h.token };
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
