/**
 * The partition of a full run into shards (lib/scale/shards.ts), as properties over any
 * input: every object of a counted namespace belongs to exactly one shard (disjoint and together
 * complete), shards stay within SHARD_SIZE (buckets: about it), the partition is the same for
 * the same input; and the shard message: a round trip, and a clear refusal of anything else.
 */
import fc from 'fast-check';
import t from 'tap';
import { ShardMessageError } from '../../lib/platform/errors.js';
import {
  bucketOf,
  describeShard,
  fnv1a,
  inPart,
  MAX_NAMESPACES_PER_SHARD,
  parseShardMessage,
  partition,
  type Shard,
  type ShardPart,
  shardMessage,
  shardScope,
  shardsOf,
} from '../../lib/scale/shards.js';
import { partIndex } from '../../lib/scale/snapshot.js';

const RUNS = 500;

const namespaceName = fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,12}[a-z0-9])?$/);
const objectName = fc.stringMatching(/^[a-z0-9]([-.a-z0-9]{0,30}[a-z0-9])?$/);
/** namespace → objects in it (names), with counts that put some namespaces above the shard size */
const cluster = fc.dictionary(namespaceName, fc.uniqueArray(objectName, { minLength: 1, maxLength: 60 }), { minKeys: 1, maxKeys: 25 });

function countsOf(objects: Record<string, string[]>): Map<string, number> {
  return new Map(Object.entries(objects).map(([ns, names]) => [ns, names.length]));
}

t.test('FNV-1a: the published test vectors, and buckets in range and stable', async (t) => {
  t.equal(fnv1a(''), 0x811c9dc5);
  t.equal(fnv1a('a'), 0xe40c292c);
  t.equal(fnv1a('foobar'), 0xbf9cf968);
  t.equal(bucketOf('httpbin', 4), fnv1a('httpbin') % 4);
  t.equal(fnv1a('ü'), fnv1a('\u00fc'), 'by UTF-8 bytes');
  t.not(fnv1a('ü'), fnv1a('u'));
  fc.assert(
    fc.property(objectName, fc.integer({ min: 1, max: 1000 }), (name, buckets) => {
      const b = bucketOf(name, buckets);
      return Number.isInteger(b) && b >= 0 && b < buckets && b === bucketOf(name, buckets);
    }),
    { numRuns: RUNS },
  );
});

t.test('every object of a counted namespace is in exactly one shard, for any cluster and size', async (t) => {
  fc.assert(
    fc.property(cluster, fc.integer({ min: 1, max: 80 }), (objects, size) => {
      const parts = partition(countsOf(objects), size);
      for (const [ns, names] of Object.entries(objects)) {
        for (const name of names) {
          const holders = parts.filter((p) => inPart(p, ns, name));
          if (holders.length !== 1) throw new Error(`${ns}/${name} is in ${holders.length} shards of ${JSON.stringify(parts)}`);
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
      const parts = partition(countsOf(objects), size);
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

t.test('shards are disjoint: no namespace is named twice, no bucket repeated', async (t) => {
  fc.assert(
    fc.property(cluster, fc.integer({ min: 1, max: 80 }), (objects, size) => {
      const parts = partition(countsOf(objects), size);
      const whole = parts.flatMap((p) => ('namespaces' in p ? p.namespaces : []));
      const buckets = parts.flatMap((p) => ('namespace' in p ? [`${p.namespace}#${p.bucket}/${p.buckets}`] : []));
      const split = new Set(parts.flatMap((p) => ('namespace' in p ? [p.namespace] : [])));
      return new Set(whole).size === whole.length && new Set(buckets).size === buckets.length && whole.every((ns) => !split.has(ns));
    }),
    { numRuns: RUNS },
  );
  t.pass(`${RUNS} clusters: disjoint`);
});

t.test('sizes: packed shards hold at most SHARD_SIZE, a large namespace has ⌈n/SHARD_SIZE⌉ buckets, only it is split', async (t) => {
  fc.assert(
    fc.property(fc.dictionary(namespaceName, fc.integer({ min: 0, max: 5_000 }), { minKeys: 1, maxKeys: 40 }), fc.integer({ min: 1, max: 3_000 }), (raw, size) => {
      const counts = new Map(Object.entries(raw));
      const parts = partition(counts, size);
      for (const p of parts) {
        if ('namespaces' in p) {
          const load = p.namespaces.reduce((n, ns) => n + (counts.get(ns) ?? 0), 0);
          if (load > size) return false;
          if (p.namespaces.some((ns) => (counts.get(ns) ?? 0) > size)) return false;
        } else if (p.buckets !== Math.ceil((counts.get(p.namespace) ?? 0) / size) || (counts.get(p.namespace) ?? 0) <= size) return false;
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

t.test('buckets hold about SHARD_SIZE each over realistic names', async (t) => {
  const names = Array.from({ length: 20_000 }, (_, i) => `api-${String(i).padStart(5, '0')}`);
  const [part] = partition(new Map([['big', names.length]]), 2000);
  t.match(part, { namespace: 'big', bucket: 0, buckets: 10 });
  const sizes = Array.from({ length: 10 }, (_, b) => names.filter((n) => bucketOf(n, 10) === b).length);
  t.equal(
    sizes.reduce((a, b) => a + b, 0),
    20_000,
  );
  t.ok(Math.max(...sizes) <= 2_200 && Math.min(...sizes) >= 1_800, `within 10% of 2,000: ${sizes.join(', ')}`);
});

t.test('deterministic: the same counts in any order give the same shards; an unknown namespace is in none', async (t) => {
  fc.assert(
    fc.property(cluster, fc.integer({ min: 1, max: 80 }), namespaceName, objectName, (objects, size, ns, name) => {
      const counts = countsOf(objects);
      const reversed = new Map([...counts.entries()].reverse());
      const same = JSON.stringify(partition(counts, size)) === JSON.stringify(partition(reversed, size));
      const unknown = counts.has(ns) || partition(counts, size).every((p) => !inPart(p, ns, name));
      return same && unknown;
    }),
    { numRuns: RUNS },
  );
  t.same(partition(new Map(), 10), [], 'nothing counted: no shard');
  t.throws(() => partition(new Map([['a', 1]]), 0), RangeError);
});

t.test('at most MAX_NAMESPACES_PER_SHARD namespaces a shard: a message stays small', async (t) => {
  const counts = new Map(Array.from({ length: 2_500 }, (_, i) => [`ns-${String(i).padStart(4, '0')}`, 1] as [string, number]));
  const parts = partition(counts, 100_000);
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
      const shards = shardsOf(runId, partition(countsOf(objects), size));
      return shards.every((s, i) => s.index === i && s.count === shards.length && JSON.stringify(parseShardMessage(shardMessage(s))) === JSON.stringify(s));
    }),
    { numRuns: RUNS },
  );
  const bucket: Shard = { runId: 'tick-1', index: 3, count: 10, part: { namespace: 'big', bucket: 1, buckets: 4 } };
  t.same(JSON.parse(shardMessage(bucket)), { v: 1, runId: 'tick-1', index: 3, count: 10, namespace: 'big', bucket: 1, buckets: 4 });
  t.same(shardScope(bucket), { namespaces: ['big'] });
  t.equal(describeShard(bucket), '4/10 (big, bucket 1 of 4)');
  t.equal(describeShard({ ...bucket, part: { namespaces: ['a', 'b', 'c', 'd', 'e'] } }), '4/10 (a, b, c and 2 more)');
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
    [{ ...ok, namespace: 'b', bucket: 0, buckets: 2 }, /not both/],
    [{ v: 1, runId: 'r', index: 0, count: 1, namespace: 'b', bucket: 2, buckets: 2 }, /bucket must be less than buckets/],
    [{ v: 1, runId: 'r', index: 0, count: 1, namespace: 'b', bucket: 0, buckets: 1 }, /buckets must be a whole number from 2/],
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
