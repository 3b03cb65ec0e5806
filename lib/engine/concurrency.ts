/**
 * Bounded concurrency. `mapLimit` runs `fn` over `items` with at most `limit` in flight and
 * returns results in input order. When `fn` rejects, no further item is started, and the call
 * rejects with the first error only once every call already in flight has settled: nothing
 * the caller started is still running when it sees the failure (so it may release locks).
 * Callers that must not stop on one failure catch inside `fn`.
 *
 * `forEachYielding` runs a long synchronous loop in slices, giving the event loop a turn between
 * them: a full run's pure work over 10,000 objects (~0.4 s of building and hashing desired
 * states) does not hold up the webhooks' answers, /healthz or /metrics meanwhile. Slices are
 * measured in real time: they change when other work runs, never what the loop does.
 *
 * `chunked` cuts a list into the runs one batched store call takes (locks, records, claims).
 */
import { performance } from 'node:perf_hooks';
import { setImmediate as nextTurn } from 'node:timers/promises';
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  let failure: { error: unknown } | undefined;
  const worker = async (): Promise<void> => {
    while (failure === undefined && next < items.length) {
      const i = next++;
      try {
        results[i] = await fn(items[i] as T, i);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  if (failure !== undefined) throw failure.error;
  return results;
}

/** Real time a loop of forEachYielding runs before it gives the event loop a turn. */
export const SLICE_MS = 10;

/** Runs `fn` over `items` in order, giving the event loop a turn after each ~`sliceMs` of work (the time is read every 64 items). */
export async function forEachYielding<T>(items: readonly T[], fn: (item: T, index: number) => void, sliceMs = SLICE_MS): Promise<void> {
  let since = performance.now();
  for (let i = 0; i < items.length; i++) {
    fn(items[i] as T, i);
    if ((i & 63) === 63 && performance.now() - since >= sliceMs) {
      await nextTurn();
      since = performance.now();
    }
  }
}

/** `items` in consecutive runs of at most `size` (≥ 1); none for none. */
export function chunked<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
