/**
 * The partition of a full run into shards (lib/scale/partition.ts, lib/scale/shards.ts), as properties over any
 * input: every object of a counted namespace belongs to exactly one shard (disjoint and together
 * complete, names created after the count too), shards stay within SHARD_SIZE (ranges of
 * names: about it), the partition is the same for the same input; and the shard message: a
 * round trip, and a clear refusal of anything else.
 */
import fc from 'fast-check';
import t from 'tap';
import { ShardMessageError } from '../../lib/platform/errors.js';
import { nameRanges, partition } from '../../lib/scale/partition.js';
import { describeShard, inPart, MAX_NAMESPACES_PER_SHARD, parseShardMessage, type Shard, type ShardPart, shardMessage, shardScope, shardsOf } from '../../lib/scale/shards.js';
import { partIndex } from '../../lib/scale/snapshot.js';

const RUNS = 500;

const namespaceName = fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,12}[a-z0-9])?$/);
const objectName = fc.stringMatching(/^[a-z0-9]([-.a-z0-9]{0,30}[a-z0-9])?$/);
/** namespace → objects in it (names), with counts that put some namespaces above the shard size */
const cluster = fc.dictionary(namespaceName, fc.uniqueArray(objectName, { minLength: 1, maxLength: 60 }), { minKeys: 1, maxKeys: 25 });

function countsOf(objects: Record<string, string[]>): Map<string, number> {
  return new Map(Object.entries(objects).map(([ns, names]) => [ns, names.length]));
}

/** The partition of `objects` (namespace → names) at `size`, as the coordinator makes it. */
function partitioned(objects: Record<string, string[]>, size: number): ShardPart[] {
  return partition(countsOf(objects), size, (ns) => objects[ns] ?? []);
}

const noNames = (): string[] => [];

t.test('a namespace cut into ranges of names: at the names given, each of about as many, in byte order', async (t) => {
  t.same(nameRanges('big', ['a', 'b', 'c', 'd', 'e', 'f'], 3), [
    { namespace: 'big', to: 'c' },
    { namespace: 'big', from: 'c', to: 'e' },
    { namespace: 'big', from: 'e' },
  ]);
  t.same(
    nameRanges('big', ['a', 'a', 'a', 'b'], 2),
    [
      { namespace: 'big', to: 'b' },
      { namespace: 'big', from: 'b' },
    ],
    'a name several kinds share is not cut',
  );
  t.same(nameRanges('big', ['a', 'a', 'a', 'a'], 2), [{ namespaces: ['big'] }], 'no cut possible: the whole namespace');
  t.same(nameRanges('big', ['a'], 3), [{ namespaces: ['big'] }], 'no cut before the first name: no empty range');
  t.same(
    nameRanges('big', ['a', 'b', 'b', 'b', 'b', 'b', 'c'], 3),
    [
      { namespace: 'big', to: 'c' },
      { namespace: 'big', from: 'c' },
    ],
    'two cuts at the same name are one: no empty range',
  );
  const [head, , tail] = nameRanges('big', ['a', 'b', 'c', 'd', 'e', 'f'], 3);
  t.notOk(head !== undefined && 'from' in head, 'the first range has no from at all');
  t.notOk(tail !== undefined && 'to' in tail, 'the last has no to at all');
  t.same(
    nameRanges('big', ['api-1', 'api.1', 'api1'], 3),
    [
      { namespace: 'big', to: 'api.1' },
      { namespace: 'big', from: 'api.1', to: 'api1' },
      { namespace: 'big', from: 'api1' },
    ],
    "byte order ('-' < '.' < digits), as etcd keys sort",
  );
  const part = { namespace: 'big', from: 'c', to: 'e' };
  t.same(
    ['b', 'c', 'd', 'd-later', 'e', 'f'].filter((n) => inPart(part, 'big', n)),
    ['c', 'd', 'd-later'],
    'from is in, to is not; a name created after the count falls in its range',
  );
  t.notOk(inPart(part, 'other', 'd'), 'only its namespace');
});

t.test('every object of a counted namespace is in exactly one shard, for any cluster and size, one created after the count too', async (t) => {
  fc.assert(
    fc.property(cluster, fc.integer({ min: 1, max: 80 }), fc.array(objectName, { maxLength: 5 }), (objects, size, later) => {
      const parts = partitioned(objects, size);
      for (const [ns, names] of Object.entries(objects)) {
        for (const name of names) {
          const holders = parts.filter((p) => inPart(p, ns, name));
          if (holders.length !== 1) throw new Error(`${ns}/${name} is in ${holders.length} shards of ${JSON.stringify(parts)}`);
        }
        for (const name of later) {
          const holders = parts.filter((p) => inPart(p, ns, name));
          if (holders.length !== 1) throw new Error(`${ns}/${name}, created later, is in ${holders.length} shards of ${JSON.stringify(parts)}`);
        }
      }
      return true;
    }),
    { numRuns: RUNS },
  );
  t.pass(`${RUNS} clusters: each object in exactly one shard`);
});

t.test('partIndex finds the one shard inPart says holds an object; none outside the counted namespaces', async (t) => {
  fc.assert(
    fc.property(cluster, fc.integer({ min: 1, max: 80 }), namespaceName, (objects, size, stranger) => {
      const parts = partitioned(objects, size);
      const index = partIndex(parts);
      for (const [ns, names] of Object.entries(objects)) {
        for (const name of names) {
          const i = index(ns, name);
          if (i === undefined || !inPart(parts[i] as ShardPart, ns, name)) throw new Error(`${ns}/${name}: index ${i} of ${JSON.stringify(parts)}`);
        }
      }
      return stranger in objects || index(stranger, 'x') === undefined;
    }),
    { numRuns: RUNS },
  );
  t.pass(`${RUNS} clusters: every object found in its shard`);
});

t.test('shards are disjoint: no namespace is named twice, the ranges of one follow each other', async (t) => {
  fc.assert(
    fc.property(cluster, fc.integer({ min: 1, max: 80 }), (objects, size) => {
      const parts = partitioned(objects, size);
      const whole = parts.flatMap((p) => ('namespaces' in p ? p.namespaces : []));
      const ranges = parts.flatMap((p) => ('namespace' in p ? [p] : []));
      const split = new Set(ranges.map((p) => p.namespace));
      // one namespace's ranges, in order: the first has no from, each from is the to before it, the last has no to
      const chained = [...split].every((ns) => {
        const own = ranges.filter((p) => p.namespace === ns);
        return own.length >= 2 && own.every((p, i) => (i === 0 ? p.from === undefined : p.from === own[i - 1]?.to) && (i === own.length - 1 ? p.to === undefined : p.to !== undefined));
      });
      return new Set(whole).size === whole.length && chained && whole.every((ns) => !split.has(ns));
    }),
    { numRuns: RUNS },
  );
  t.pass(`${RUNS} clusters: disjoint`);
});

t.test('sizes: packed shards hold at most SHARD_SIZE, a large namespace has ⌈n/SHARD_SIZE⌉ ranges of at most SHARD_SIZE, only it is split', async (t) => {
  const namesOf = (n: number) => Array.from({ length: n }, (_, i) => `o-${i.toString(36)}`);
  fc.assert(
    fc.property(fc.dictionary(namespaceName, fc.integer({ min: 0, max: 5_000 }), { minKeys: 1, maxKeys: 40 }), fc.integer({ min: 1, max: 3_000 }), (raw, size) => {
      const counts = new Map(Object.entries(raw));
      const parts = partition(counts, size, (ns) => namesOf(counts.get(ns) ?? 0));
      for (const p of parts) {
        if ('namespaces' in p) {
          const load = p.namespaces.reduce((n, ns) => n + (counts.get(ns) ?? 0), 0);
          if (load > size) return false;
          if (p.namespaces.some((ns) => (counts.get(ns) ?? 0) > size)) return false;
        }
      }
      // each split namespace: ⌈n/size⌉ ranges, each holding at most `size` of its names (counted in one walk: names and ranges both in order)
      for (const ns of new Set(parts.flatMap((p) => ('namespace' in p ? [p.namespace] : [])))) {
        const n = counts.get(ns) ?? 0;
        const own = parts.filter((q): q is Extract<ShardPart, { namespace: string }> => 'namespace' in q && q.namespace === ns);
        if (own.length !== Math.ceil(n / size) || n <= size) return false;
        const held = own.map(() => 0);
        let r = 0;
        for (const name of namesOf(n).sort()) {
          while (!inPart(own[r] as ShardPart, ns, name)) r++;
          held[r] = (held[r] ?? 0) + 1;
        }
        if (held.some((h) => h > size || h === 0)) return false;
      }
      // packed greedily: two neighbouring groups could not have been one
      const groups = parts.filter((p): p is Extract<ShardPart, { namespaces: readonly string[] }> => 'namespaces' in p);
      for (let i = 1; i < groups.length; i++) {
        const load = (g: (typeof groups)[number]) => g.namespaces.reduce((n, ns) => n + (counts.get(ns) ?? 0), 0);
        const prev = groups[i - 1] as (typeof groups)[number];
        const first = (groups[i] as (typeof groups)[number]).namespaces[0] as string;
        if (load(prev) + (counts.get(first) ?? 0) <= size && prev.namespaces.length < MAX_NAMESPACES_PER_SHARD) return false;
      }
      return true;
    }),
    { numRuns: RUNS },
  );
  t.pass(`${RUNS} count maps: within the size, split only when larger, packed greedily`);
});

t.test('ranges hold SHARD_SIZE each over realistic names, in any order given', async (t) => {
  const names = Array.from({ length: 20_000 }, (_, i) => `api-${String(i).padStart(5, '0')}`);
  const parts = partition(new Map([['big', names.length]]), 2000, () => [...names].reverse());
  t.equal(parts.length, 10);
  t.same(parts[0], { namespace: 'big', to: 'api-02000' });
  t.same(parts[9], { namespace: 'big', from: 'api-18000' });
  const sizes = parts.map((p) => names.filter((n) => inPart(p, 'big', n)).length);
  t.same(sizes, Array(10).fill(2_000));
});

t.test('deterministic: the same counts in any order give the same shards; an unknown namespace is in none', async (t) => {
  fc.assert(
    fc.property(cluster, fc.integer({ min: 1, max: 80 }), namespaceName, objectName, (objects, size, ns, name) => {
      const counts = countsOf(objects);
      const reversed = new Map([...counts.entries()].reverse());
      const namesOf = (n: string) => objects[n] ?? [];
      const same = JSON.stringify(partition(counts, size, namesOf)) === JSON.stringify(partition(reversed, size, (n) => [...namesOf(n)].reverse()));
      const unknown = counts.has(ns) || partition(counts, size, namesOf).every((p) => !inPart(p, ns, name));
      return same && unknown;
    }),
    { numRuns: RUNS },
  );
  t.same(partition(new Map(), 10, noNames), [], 'nothing counted: no shard');
  t.same(
    partition(
      new Map([
        ['a', 2],
        ['b', 2],
        ['c', 4],
      ]),
      4,
      noNames,
    ),
    [{ namespaces: ['a', 'b'] }, { namespaces: ['c'] }],
    'a shard filled to exactly SHARD_SIZE; a namespace of exactly SHARD_SIZE is whole',
  );
  t.throws(() => partition(new Map([['a', 1]]), 0, noNames), RangeError);
});

t.test('at most MAX_NAMESPACES_PER_SHARD namespaces a shard: a message stays small', async (t) => {
  const counts = new Map(Array.from({ length: 2_500 }, (_, i) => [`ns-${String(i).padStart(4, '0')}`, 1] as [string, number]));
  const parts = partition(counts, 100_000, noNames);
  t.same(
    parts.map((p) => ('namespaces' in p ? p.namespaces.length : 0)),
    [1000, 1000, 500],
  );
  const longest = shardMessage({ runId: 'r'.repeat(64), index: 0, count: 3, part: { namespaces: Array.from({ length: 1000 }, (_, i) => `n${i}-${'x'.repeat(56)}`) } });
  t.ok(Buffer.byteLength(longest) < 256 * 1024, `the largest message: ${Buffer.byteLength(longest)} bytes`);
});

t.test('shard messages: a round trip for any shard', async (t) => {
  fc.assert(
    fc.property(cluster, fc.integer({ min: 1, max: 80 }), fc.uuid(), (objects, size, runId) => {
      const shards = shardsOf(runId, partitioned(objects, size));
      return shards.every((s, i) => s.index === i && s.count === shards.length && JSON.stringify(parseShardMessage(shardMessage(s))) === JSON.stringify(s));
    }),
    { numRuns: RUNS },
  );
  const range: Shard = { runId: 'tick-1', index: 3, count: 10, part: { namespace: 'big', from: 'api-2500', to: 'api-5000' } };
  t.same(JSON.parse(shardMessage(range)), { v: 1, runId: 'tick-1', index: 3, count: 10, namespace: 'big', from: 'api-2500', to: 'api-5000' });
  t.same(shardScope(range), { namespaces: ['big'] });
  t.equal(describeShard(range), '4/10 (big, names from api-2500 before api-5000)');
  t.equal(describeShard({ ...range, part: { namespace: 'big', to: 'api-2500' } }), '4/10 (big, names before api-2500)');
  t.equal(describeShard({ ...range, part: { namespace: 'big', from: 'api-7500' } }), '4/10 (big, names from api-7500)');
  t.equal(describeShard({ ...range, part: { namespaces: ['a', 'b', 'c', 'd', 'e'] } }), '4/10 (a, b, c and 2 more)');
});

t.test('a malformed shard message is refused with a reason, never quoting the body', async (t) => {
  const ok = { v: 1, runId: 'tick-1', index: 0, count: 2, namespaces: ['a'] };
  const cases: [unknown, RegExp][] = [
    ['not json {', /not JSON/],
    [[1, 2], /JSON object/],
    [null, /JSON object/],
    [{ ...ok, v: 2 }, /v must be 1/],
    [{ ...ok, runId: 'has spaces' }, /runId/],
    [{ ...ok, index: 2 }, /index must be less than count/],
    [{ ...ok, index: -1 }, /index must be a whole number/],
    [{ ...ok, count: 0 }, /count/],
    [{ ...ok, namespaces: [] }, /namespaces must be a list/],
    [{ ...ok, namespaces: ['Not_A_Namespace'] }, /namespaces must be a list/],
    [{ ...ok, namespaces: ['a', 'a'] }, /without repeats/],
    [{ ...ok, namespace: 'b', from: 'x' }, /not both/],
    [{ ...ok, namespaces: undefined, from: 'x' }, /namespace must be a namespace name/],
    [{ v: 1, runId: 'r', index: 0, count: 1, namespace: 'b' }, /from must be given, or to/],
    [{ v: 1, runId: 'r', index: 0, count: 1, namespace: 'b', from: 'm', to: 'm' }, /to must be after from \(m\)/],
    [{ v: 1, runId: 'r', index: 0, count: 1, namespace: 'b', from: 'n', to: 'm' }, /to must be after from/],
    [{ v: 1, runId: 'r', index: 0, count: 1, namespace: 'b', from: 'Upper' }, /from must be an object name/],
    [{ v: 1, runId: 'r', index: 0, count: 1, namespace: 'b', to: 7 }, /to must be an object name/],
    [{ v: 1, runId: 'r', index: 0, count: 1, namespace: 'b', to: 'x'.repeat(254) }, /to must be an object name/],
    [{ v: 1, runId: 'r', index: 0, count: 1, namespace: 'b', bucket: 0, buckets: 2 }, /unknown field bucket, buckets/],
    [{ v: 1, runId: 'r', index: 0, count: 1 }, /namespace must be a namespace name/],
    [{ ...ok, secret: 'hunter2-token' }, /unknown field secret/],
  ];
  for (const [body, why] of cases) {
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    t.throws(() => parseShardMessage(text), ShardMessageError, text);
    try {
      parseShardMessage(text);
    } catch (err) {
      t.match((err as Error).message, why, text);
      t.equal((err as ShardMessageError).code, 'SHARD_MESSAGE_INVALID');
      t.equal((err as ShardMessageError).statusCode, 400);
      t.notMatch((err as Error).message, /hunter2/, 'the body is not quoted');
    }
  }
  fc.assert(
    fc.property(fc.string(), (text) => {
      try {
        parseShardMessage(text);
        return true;
      } catch (err) {
        return err instanceof ShardMessageError;
      }
    }),
    { numRuns: RUNS },
  );
});
