/**
 * mapLimit (lib/engine/concurrency.ts): at most `limit` calls in flight, results in input
 * order, and on a failure no further item is started. forEachYielding: every item in order,
 * with turns of the event loop between slices of work. chunked: every item once, in order, in
 * runs of at most the size.
 */
import t from 'tap';
import { chunked, forEachYielding, mapLimit } from '../../lib/engine/concurrency.js';

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Runs mapLimit over `n` items, each taking a few ticks (the later ones fewer), and tracks how many were in flight. */
async function tracked(n: number, limit: number): Promise<{ results: number[]; peak: number; started: number[] }> {
  let inFlight = 0;
  let peak = 0;
  const started: number[] = [];
  const results = await mapLimit(
    Array.from({ length: n }, (_, i) => i),
    limit,
    async (item, index) => {
      started.push(index);
      inFlight++;
      peak = Math.max(peak, inFlight);
      for (let k = 0; k < n - item; k++) await tick();
      inFlight--;
      return item * 10;
    },
  );
  return { results, peak, started };
}

t.test('results come back in input order, whatever order the calls end in', async (t) => {
  const { results, started } = await tracked(5, 2);
  t.same(results, [0, 10, 20, 30, 40]);
  t.same(started, [0, 1, 2, 3, 4], 'items are started in order, each once');
});

t.test('never more than `limit` calls in flight, and exactly `limit` when there is enough work', async (t) => {
  t.equal((await tracked(6, 3)).peak, 3);
  t.equal((await tracked(6, 1)).peak, 1);
  t.equal((await tracked(2, 8)).peak, 2, 'no more workers than items');
});

t.test('a limit below 1 still runs everything, one at a time', async (t) => {
  const { results, peak } = await tracked(3, 0);
  t.same(results, [0, 10, 20]);
  t.equal(peak, 1);
});

t.test('no items: no call, an empty result', async (t) => {
  let calls = 0;
  t.same(
    await mapLimit([], 4, async () => {
      calls++;
    }),
    [],
  );
  t.equal(calls, 0);
});

t.test('after a failure no further item is started, and the first error is the answer', async (t) => {
  const started: number[] = [];
  await t.rejects(
    mapLimit([0, 1, 2, 3, 4], 2, async (i) => {
      started.push(i);
      await tick();
      if (i === 1) throw new Error('first');
      if (i === 2) throw new Error('second');
      return i;
    }),
    { message: 'first' },
  );
  t.same(started, [0, 1, 2], 'the worker that was free took item 2 before item 1 failed; nothing after');
});

t.test('a failure of the last item still rejects', async (t) => {
  await t.rejects(
    mapLimit([0, 1], 1, async (i) => {
      if (i === 1) throw new Error('last');
      return i;
    }),
    { message: 'last' },
  );
});

t.test('a failure that is not an Error is passed on as it is', async (t) => {
  const thrown = await mapLimit([0], 1, async () => {
    throw undefined;
  }).then(
    () => 'resolved',
    (e: unknown) => e,
  );
  t.equal(thrown, undefined, 'rejected with undefined, not resolved');
});

t.test('forEachYielding: every item in order; other work runs between slices, not within one', async (t) => {
  const busy = (ms: number) => {
    const until = performance.now() + ms;
    while (performance.now() < until);
  };
  const seen: string[] = [];
  let turns = 0;
  const other = setInterval(() => {
    turns++;
    seen.push('other');
  }, 0);
  // 256 items of 0.2 ms: ~51 ms of work in slices of 10 ms
  await forEachYielding(
    Array.from({ length: 256 }, (_, i) => i),
    (item, index) => {
      t.equal(item, index);
      busy(0.2);
      seen.push(String(item));
    },
    10,
  );
  clearInterval(other);
  const items = seen.filter((s) => s !== 'other');
  t.same(
    items,
    Array.from({ length: 256 }, (_, i) => String(i)),
    'every item, in order',
  );
  t.ok(turns >= 2, `the event loop had turns meanwhile (${turns})`);
  // the time is read every 64 items: a turn comes only after an item whose index is 63 mod 64
  seen.forEach((s, i) => {
    if (s === 'other' && i > 0 && seen[i - 1] !== 'other') t.equal(Number(seen[i - 1]) % 64, 63, `a turn after item ${seen[i - 1]}`);
  });

  let fast = 0;
  const quick = setImmediate(() => fast++);
  await forEachYielding([1, 2, 3], () => undefined);
  t.equal(fast, 0, 'a short loop runs in one slice');
  clearImmediate(quick);
});

t.test('forEachYielding: a loop of many items that takes less than its slice gives no turn', async (t) => {
  // the slice is measured from the loop's start, not from the process's: let the process be older than the slice
  while (performance.now() < 400);
  let turns = 0;
  const other = setImmediate(() => turns++);
  let seen = 0;
  await forEachYielding(
    Array.from({ length: 640 }, (_, i) => i),
    () => {
      seen++;
    },
    200,
  );
  t.equal(seen, 640);
  t.equal(turns, 0, '640 quick items within 200 ms: one slice');
  clearImmediate(other);
});

t.test('chunked: consecutive runs of at most the size, every item once and in order; none for none', async (t) => {
  const items = Array.from({ length: 1001 }, (_, i) => i);
  const runs = chunked(items, 500);
  t.same(
    runs.map((r) => r.length),
    [500, 500, 1],
  );
  t.same(runs.flat(), items, 'every item once, in order');
  t.same(chunked(items.slice(0, 500), 500), [items.slice(0, 500)], 'exactly the size: one run');
  t.same(chunked([], 500), [], 'none for none');
  t.same(chunked(['a', 'b', 'c'], 1), [['a'], ['b'], ['c']]);
});
