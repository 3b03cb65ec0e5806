/**
 * Bounded concurrency. `mapLimit` runs `fn` over `items` with at most `limit` in flight and
 * returns results in input order. When `fn` rejects, no further item is started, and the call
 * rejects with the first error only once every call already in flight has settled: nothing
 * the caller started is still running when it sees the failure (so it may release locks).
 * Callers that must not stop on one failure catch inside `fn`.
 */
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
