/**
 * The Store contract (lib/store/types.ts), run against both implementations: RedisStore on
 * a real redis-server (REDIS_URL's when set, else a private one; a fresh prefix per test)
 * and MemoryStore on a FakeClock. Then what only Redis can get wrong: key layout, sharing
 * between clients, unreadable data, and failing fast (without the password) when Redis is
 * down, recovering when it is back.
 */
import { randomUUID } from 'node:crypto';
import { inspect } from 'node:util';
import { Redis } from 'ioredis';
import t from 'tap';
import { systemClock } from '../../lib/clock.js';
import { ConfigError, describeError, StoreUnavailableError } from '../../lib/errors.js';
import { MemoryStore } from '../../lib/store/memory.js';
import { createRedisStore, escapeGlob, RedisStore } from '../../lib/store/redis.js';
import type { Store, SyncRecord } from '../../lib/store/types.js';
import { FakeClock } from '../harness/clock.js';
import { startOwnRedis, startRedis, type TestRedis } from '../harness/redis.js';

type Test = Parameters<Parameters<typeof t.test>[0]>[0];

interface Fixture {
  store: Store;
  /** Lets `ms` of the store's time pass (real time for Redis, a FakeClock for memory). */
  pass(ms: number): Promise<void>;
}
type MakeStore = (t: Test) => Promise<Fixture>;

/** A short ttl, long enough for a few Redis round trips on a loaded machine. */
const S = 100;
/** A long ttl: nothing expires within a test that waits a few S. */
const L = 10 * S;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function record(key: string, generation = 1, extra: Partial<SyncRecord> = {}): SyncRecord {
  return {
    key,
    id: `id-${key}`,
    generation,
    desiredHash: `d${generation}`,
    observedHash: '',
    result: 'synced',
    failures: 0,
    time: '2024-01-01T00:00:00.000Z',
    ...extra,
  };
}

async function assertUnavailable(t: Test, promise: Promise<unknown>, operation: string, secret?: string): Promise<void> {
  try {
    await promise;
    t.fail(`${operation} should have failed`);
  } catch (err) {
    t.ok(err instanceof StoreUnavailableError, `${operation} throws StoreUnavailableError`);
    const text = describeError(err);
    t.match(text, operation, `${operation}: the message names the operation`);
    if (secret !== undefined) assertNoSecret(t, err, secret);
  }
}

/** Not in the message, the cause, or anything a logger would serialise. */
function assertNoSecret(t: Test, err: unknown, secret: string): void {
  const dump = `${describeError(err)}\n${inspect(err, { depth: 10 })}`;
  t.notOk(dump.includes(secret), `no password in ${describeError(err)}`);
}

function storeContract(t: Test, makeStore: MakeStore): void {
  t.test('records round-trip exactly', async (t) => {
    const { store } = await makeStore(t);
    const full = record('default/ApiDefinition/full', 7, {
      result: 'failed',
      error: 'gateway said "no" \n über 🚀',
      retryAt: 1_700_000_000_123,
      failures: 3,
      observedHash: 'o7',
    });
    const minimal = record('default/ApiDefinition/minimal', 2);
    const undefinedField = { ...record('default/ApiDefinition/undef', 1), error: undefined, retryAt: undefined };
    t.equal(await store.putRecord(full), true);
    t.equal(await store.putRecord(minimal), true);
    t.equal(await store.putRecord(undefinedField), true);
    const [gotFull, gotMinimal, gotUndef] = await store.getRecords([full.key, minimal.key, undefinedField.key]);
    t.strictSame(gotFull, full, 'every field, optional ones included');
    t.strictSame(gotMinimal, minimal, 'a record without optional fields');
    t.notOk(gotMinimal && 'error' in gotMinimal, 'absent error stays absent');
    t.notOk(gotMinimal && 'retryAt' in gotMinimal, 'absent retryAt stays absent');
    t.strictSame(gotUndef, record('default/ApiDefinition/undef', 1), 'an undefined field reads back as absent');
  });

  t.test('records are copied in and out (no aliasing)', async (t) => {
    const { store } = await makeStore(t);
    const original = record('ns/Kind/alias', 1);
    await store.putRecord(original);
    original.desiredHash = 'mutated after put';
    const [first] = await store.getRecords([original.key]);
    t.equal(first?.desiredHash, 'd1', 'mutating the argument does not change the store');
    if (first) first.observedHash = 'mutated after get';
    const [second] = await store.getRecords([original.key]);
    t.equal(second?.observedHash, '', 'mutating a result does not change the store');
  });

  t.test('getRecords answers in the order asked, null for missing keys', async (t) => {
    const { store } = await makeStore(t);
    await store.putRecord(record('a'));
    await store.putRecord(record('c', 3));
    const got = await store.getRecords(['c', 'missing', 'a', 'c']);
    t.strictSame(
      got.map((r) => r && [r.key, r.generation]),
      [['c', 3], null, ['a', 1], ['c', 3]],
    );
    t.strictSame(await store.getRecords([]), [], 'no keys, no records');
  });

  t.test('putRecord refuses an older generation, accepts equal and newer', async (t) => {
    const { store } = await makeStore(t);
    const key = 'ns/Kind/gen';
    t.equal(await store.putRecord(record(key, 5, { desiredHash: 'five' })), true, 'first write');
    t.equal(await store.putRecord(record(key, 4, { desiredHash: 'four' })), false, 'older refused');
    t.equal((await store.getRecords([key]))[0]?.desiredHash, 'five', 'the newer record is kept');
    t.equal(await store.putRecord(record(key, 5, { desiredHash: 'five again', result: 'pending' })), true, 'equal accepted');
    t.strictSame((await store.getRecords([key]))[0], record(key, 5, { desiredHash: 'five again', result: 'pending' }));
    t.equal(await store.putRecord(record(key, 6, { desiredHash: 'six' })), true, 'newer accepted');
    t.equal((await store.getRecords([key]))[0]?.generation, 6);
    t.equal(await store.putRecord(record(key, 5)), false, 'older than the latest refused');
  });

  t.test('the uses index follows every put and delete, atomically with the record', async (t) => {
    const { store } = await makeStore(t);
    const a = 'ApiDefinition/ns/a';
    const b = 'ApiDefinition/ns/b';
    await store.putRecord(record(a, 1, { uses: ['Secret/ns/tls', 'Certificate/default/c1'] }));
    await store.putRecord(record(b, 1, { uses: ['Secret/ns/tls'] }));
    t.strictSame(await store.recordsUsing(['Secret/ns/tls', 'Certificate/default/c1', 'Secret/ns/other']), [[a, b], [a], []]);
    await store.putRecord(record(a, 2, { uses: ['Secret/ns/tls', 'Certificate/default/c2'] }));
    t.strictSame(await store.recordsUsing(['Certificate/default/c1', 'Certificate/default/c2']), [[], [a]], 'a use the new record lacks is dropped');
    t.equal(await store.putRecord(record(a, 1, { uses: ['Secret/ns/stale'] })), false);
    t.strictSame(await store.recordsUsing(['Secret/ns/stale', 'Certificate/default/c2']), [[], [a]], 'a refused put changes no index');
    await store.putRecord(record(b, 2));
    t.strictSame(await store.recordsUsing(['Secret/ns/tls']), [[a]], 'a record without uses leaves every set');
    await store.deleteRecord(a);
    t.strictSame(await store.recordsUsing(['Secret/ns/tls', 'Certificate/default/c2']), [[], []], 'a deleted record leaves every set');
    await store.deleteRecord('ApiDefinition/ns/never');
    t.strictSame(await store.recordsUsing([]), [], 'nothing asked, nothing answered');
  });

  t.test('owned ids per pool: own, list, disown', async (t) => {
    const { store } = await makeStore(t);
    t.strictSame(await store.owned('default'), [], 'none at first');
    await store.own('default', ['c2', 'c1']);
    await store.own('default', ['c1']);
    await store.own('context:ns/eu', ['c3']);
    await store.own('default', []);
    t.strictSame(await store.owned('default'), ['c1', 'c2'], 'sorted, each once');
    await store.disown('default', 'c1');
    await store.disown('default', 'never');
    t.strictSame(await store.owned('default'), ['c2']);
    t.strictSame(await store.owned('context:ns/eu'), ['c3'], 'pools are apart');
  });

  t.test('deleteRecord', async (t) => {
    const { store } = await makeStore(t);
    await store.putRecord(record('ns/Kind/gone', 9));
    await store.putRecord(record('ns/Kind/kept'));
    await store.deleteRecord('ns/Kind/gone');
    t.strictSame(
      (await store.getRecords(['ns/Kind/gone', 'ns/Kind/kept'])).map((r) => r?.key ?? null),
      [null, 'ns/Kind/kept'],
    );
    t.strictSame(await store.listRecordKeys('ns/'), ['ns/Kind/kept']);
    await store.deleteRecord('ns/Kind/never-was');
    t.equal(await store.putRecord(record('ns/Kind/gone', 1)), true, 'after a delete any generation is accepted');
  });

  t.test('listRecordKeys matches the prefix literally, glob characters included', async (t) => {
    const { store } = await makeStore(t);
    const prefix = 'ns[1]/Api*?\\/';
    const wanted = [`${prefix}a`, `${prefix}b`, `${prefix}`];
    const decoys = [
      'ns1/Api*?\\/x', // [1] as a character class would match "1"
      'ns[1]/ApiXY\\/c', // * and ? as wildcards would match "XY"
      'ns[1]/Api*?/d', // a dropped backslash would match this
      'ns[1]/Api*?', // shorter than the prefix
      `other/${prefix}e`, // contains the prefix, does not start with it
    ];
    for (const key of [...wanted, ...decoys]) await store.putRecord(record(key));
    t.strictSame(await store.listRecordKeys(prefix), [...wanted].sort());
    t.strictSame(await store.listRecordKeys('nothing/'), []);
    t.strictSame(await store.listRecordKeys(''), [...wanted, ...decoys].sort(), 'the empty prefix lists everything');
  });

  t.test('listRecordKeys pages through more than 1000 keys', async (t) => {
    const { store } = await makeStore(t);
    const keys = Array.from({ length: 1100 }, (_, i) => `bulk/Kind/${String(i).padStart(4, '0')}`);
    const written = await Promise.all(keys.map((key) => store.putRecord(record(key))));
    t.ok(written.every(Boolean), 'all written');
    await store.putRecord(record('bulky/Kind/other'));
    const listed = await store.listRecordKeys('bulk/');
    t.equal(listed.length, 1100);
    t.strictSame(listed, keys, 'each key once, sorted');
  });

  t.test('lock: acquired, else marked-dirty', async (t) => {
    const { store } = await makeStore(t);
    t.equal(await store.lock('k', 'A', L), 'acquired');
    t.equal(await store.lock('k', 'B', L), 'marked-dirty');
    t.equal(await store.lock('k', 'A', L), 'marked-dirty', 'not re-entrant');
    t.equal(await store.lock('other', 'B', L), 'acquired', 'locks are per key');
  });

  t.test('release: released when nothing happened meanwhile', async (t) => {
    const { store } = await makeStore(t);
    await store.lock('k', 'A', L);
    t.equal(await store.release('k', 'A'), 'released');
    t.equal(await store.lock('k', 'B', L), 'acquired', 'free again');
    t.equal(await store.release('k', 'B'), 'released');
  });

  t.test('release: dirty keeps the lock and clears the mark; the next release releases', async (t) => {
    const { store } = await makeStore(t);
    await store.lock('k', 'A', L);
    t.equal(await store.lock('k', 'B', L), 'marked-dirty');
    t.equal(await store.release('k', 'A'), 'dirty');
    t.equal(await store.release('k', 'A'), 'released', 'the lock was kept and the mark cleared');
    t.equal(await store.release('k', 'A'), 'lost', 'and now it is gone');
    t.equal(await store.lock('k', 'C', L), 'acquired');
  });

  t.test('release: lost for a wrong token or a lock never taken', async (t) => {
    const { store } = await makeStore(t);
    t.equal(await store.release('k', 'A'), 'lost', 'never locked');
    await store.lock('k', 'A', L);
    t.equal(await store.release('k', 'B'), 'lost', 'wrong token');
    t.equal(await store.release('k', 'A'), 'released', 'the holder was not disturbed');
  });

  t.test('release: lost once the lock expired', async (t) => {
    const { store, pass } = await makeStore(t);
    await store.lock('k', 'A', S);
    await pass(2 * S);
    t.equal(await store.release('k', 'A'), 'lost');
    t.equal(await store.lock('k', 'B', L), 'acquired', 'an expired lock blocks nobody');
  });

  t.test('locks expire after their ttl, not before', async (t) => {
    const { store, pass } = await makeStore(t);
    t.equal(await store.lock('k', 'A', 3 * S), 'acquired');
    await pass(S);
    t.equal(await store.lock('k', 'B', S), 'marked-dirty', 'still held within the ttl');
    await pass(5 * S);
    t.equal(await store.lock('k', 'C', L), 'acquired', 'expired (and so did the mark)');
    t.equal(await store.release('k', 'C'), 'released', 'the expired mark does not make C re-run');
  });

  t.test('forceRelease releases despite a dirty mark, and leaves the mark for the next holder', async (t) => {
    const { store } = await makeStore(t);
    await store.lock('k', 'A', L);
    await store.lock('k', 'B', L);
    t.equal(await store.forceRelease('k', 'B'), false, 'not ours');
    t.equal(await store.forceRelease('k', 'A'), true, 'ours, dirty or not');
    t.equal(await store.forceRelease('k', 'A'), false, 'no longer ours');
    t.equal(await store.lock('k', 'C', L), 'acquired');
    t.equal(await store.release('k', 'C'), 'dirty', 'the event A gave up on is re-run by the next holder');
    t.equal(await store.release('k', 'C'), 'released');
  });

  t.test('renew: extends the locks still ours, in one call, and says which were', async (t) => {
    const { store, pass } = await makeStore(t);
    await store.lock('a', 'A', 3 * S);
    await store.lock('b', 'B', 3 * S);
    t.strictSame(await store.renew([], 3 * S), [], 'nothing to renew');
    await pass(2 * S);
    t.strictSame(
      await store.renew(
        [
          { key: 'a', token: 'A' },
          { key: 'b', token: 'wrong' },
          { key: 'c', token: 'C' },
        ],
        3 * S,
      ),
      [true, false, false],
      'ours; a wrong token; never locked',
    );
    await pass(2 * S);
    t.equal(await store.lock('a', 'X', L), 'marked-dirty', 'renewed: held past its first ttl');
    t.equal(await store.lock('b', 'X', L), 'acquired', 'not renewed: expired');
    await pass(4 * S);
    t.strictSame(await store.renew([{ key: 'a', token: 'A' }], 3 * S), [false], 'once expired, a renewal cannot bring it back');
  });

  t.test('renew keeps a dirty mark alive past the renewed lock', async (t) => {
    const { store, pass } = await makeStore(t);
    await store.lock('k', 'A', 3 * S);
    t.equal(await store.lock('k', 'B', S), 'marked-dirty');
    for (let i = 0; i < 4; i++) {
      await pass(2 * S);
      t.strictSame(await store.renew([{ key: 'k', token: 'A' }], 3 * S), [true]);
    }
    t.equal(await store.release('k', 'A'), 'dirty', 'after working 8 S on a 3 S lock, the holder still sees the event');
  });

  t.test('write slots: at most `limit` holders per pool, freed by release or by their ttl', async (t) => {
    const { store, pass } = await makeStore(t);
    t.equal(await store.acquireSlot('gw', 'h1', 2, 3 * S), true);
    t.equal(await store.acquireSlot('gw', 'h2', 2, 3 * S), true);
    t.equal(await store.acquireSlot('gw', 'h3', 2, 3 * S), false, 'both taken');
    t.equal(await store.acquireSlot('other', 'h3', 2, 3 * S), true, 'pools are apart');
    await store.releaseSlot('gw', 'h1');
    t.equal(await store.acquireSlot('gw', 'h3', 2, 3 * S), true, 'a released slot is free');
    t.equal(await store.acquireSlot('gw', 'h4', 2, 3 * S), false);
    await store.releaseSlot('gw', 'nobody');
    t.equal(await store.acquireSlot('gw', 'h4', 2, 3 * S), false, 'releasing a slot never held frees nothing');
    await pass(4 * S);
    t.equal(await store.acquireSlot('gw', 'h4', 2, 3 * S), true, 'a dead holder frees its slot with the ttl');
    t.equal(await store.acquireSlot('gw', 'h5', 2, 3 * S), true);
    t.equal(await store.acquireSlot('gw', 'h6', 2, 3 * S), false);
  });

  t.test('write slots under contention: of many concurrent callers, exactly `limit` get one', async (t) => {
    const { store } = await makeStore(t);
    const got = await Promise.all(Array.from({ length: 20 }, (_, i) => store.acquireSlot('gw', `h${i}`, 3, L)));
    t.equal(got.filter(Boolean).length, 3);
  });

  t.test('a dirty mark outlives the lock it was set against', async (t) => {
    const { store, pass } = await makeStore(t);
    await store.lock('k', 'A', L);
    t.equal(await store.lock('k', 'B', S), 'marked-dirty', 'marked by a caller with a shorter ttl');
    await pass(3 * S);
    t.equal(await store.release('k', 'A'), 'dirty', 'the mark is still there for the holder');
  });

  t.test('markSeen: new ids once, repeats within the ttl not, again after it', async (t) => {
    const { store, pass } = await makeStore(t);
    t.same(await store.markSeen([], 1000), []);
    t.same(await store.markSeen(['a', 'b'], 100), [true, true]);
    t.same(await store.markSeen(['b', 'c', 'a'], 100), [false, true, false]);
    await pass(150);
    t.same(await store.markSeen(['a'], 100), [true], 'a mark expires after its ttl');
    const concurrent = await Promise.all(Array.from({ length: 10 }, () => store.markSeen(['x'], 10_000)));
    t.equal(concurrent.filter(([fresh]) => fresh).length, 1, 'exactly one concurrent caller sees it as new');
  });

  t.test('blobs: put replaces, get answers until the ttl passed, then null', async (t) => {
    const { store, pass } = await makeStore(t);
    const key = 'snapshot/run-1/context:team-a/gw';
    t.equal(await store.getBlob(key), null, 'none yet');
    await store.putBlob(key, 'first', L);
    t.equal(await store.getBlob(key), 'first');
    const text = `{"v":1,"api":{"x":["h"]}} über 🚀 ${'x'.repeat(2 * 1024 * 1024)}`;
    await store.putBlob(key, text, S);
    t.equal(await store.getBlob(key), text, 'replaced; a 2 MB value round-trips exactly');
    t.equal(await store.getBlob('snapshot/run-2/context:team-a/gw'), null, 'another key has nothing');
    await store.putBlob('snapshot/run-2/default', 'kept', L);
    await pass(3 * S);
    t.equal(await store.getBlob(key), null, 'gone once its ttl passed');
    t.equal(await store.getBlob('snapshot/run-2/default'), 'kept', 'a longer ttl keeps its value');
  });

  t.test('20 concurrent lock() calls: exactly one acquires', async (t) => {
    const { store } = await makeStore(t);
    const tokens = Array.from({ length: 20 }, (_, i) => `token-${i}`);
    const outcomes = await Promise.all(tokens.map((token) => store.lock('hot', token, L)));
    t.equal(outcomes.filter((o) => o === 'acquired').length, 1);
    t.equal(outcomes.filter((o) => o === 'marked-dirty').length, 19);
    const winner = tokens[outcomes.indexOf('acquired')] ?? '';
    t.equal(await store.release('hot', winner), 'dirty', 'the losers left a mark');
    t.equal(await store.release('hot', winner), 'released');
  });

  t.test('ping, and close', async (t) => {
    const { store } = await makeStore(t);
    await store.ping();
    await store.close();
    await store.close();
    await assertUnavailable(t, store.getRecords(['a']), 'getRecords');
    await assertUnavailable(t, store.ping(), 'ping');
  });
}

t.test('MemoryStore', async (t) => {
  storeContract(t, async () => {
    const clock = new FakeClock();
    return { store: new MemoryStore({ clock }), pass: async (ms) => clock.advance(ms) };
  });

  t.test('kind', async (t) => {
    t.equal(new MemoryStore().kind, 'memory');
  });

  t.test('defaults to the system clock', async (t) => {
    const store = new MemoryStore();
    await store.lock('k', 'A', 20);
    t.equal(await store.lock('k', 'B', 20), 'marked-dirty');
    await systemClock.sleep(100);
    t.equal(await store.lock('k', 'C', 20), 'acquired');
  });

  t.test('every operation fails once closed', async (t) => {
    const store = new MemoryStore({ clock: new FakeClock() });
    await store.close();
    await assertUnavailable(t, store.putRecord(record('a')), 'putRecord');
    await assertUnavailable(t, store.deleteRecord('a'), 'deleteRecord');
    await assertUnavailable(t, store.listRecordKeys(''), 'listRecordKeys');
    await assertUnavailable(t, store.lock('k', 'A', 1), 'lock');
    await assertUnavailable(t, store.release('k', 'A'), 'release');
    await assertUnavailable(t, store.forceRelease('k', 'A'), 'forceRelease');
    await assertUnavailable(t, store.renew([{ key: 'k', token: 'A' }], 1), 'renew');
    await assertUnavailable(t, store.acquireSlot('gw', 'h', 1, 1), 'acquireSlot');
    await assertUnavailable(t, store.releaseSlot('gw', 'h'), 'releaseSlot');
    await assertUnavailable(t, store.markSeen(['x'], 1), 'markSeen');
    await assertUnavailable(t, store.recordsUsing(['x']), 'recordsUsing');
    await assertUnavailable(t, store.own('gw', ['x']), 'own');
    await assertUnavailable(t, store.disown('gw', 'x'), 'disown');
    await assertUnavailable(t, store.owned('gw'), 'owned');
    await assertUnavailable(t, store.putBlob('b', 'v', 1), 'putBlob');
    await assertUnavailable(t, store.getBlob('b'), 'getBlob');
  });
});

/** Deletes every key under `prefix` (matters only on a shared REDIS_URL server). */
async function removeKeys(url: string, prefix: string): Promise<void> {
  const redis = new Redis(url, { lazyConnect: true });
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${escapeGlob(prefix)}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) await redis.del(keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

/** A prefix of our own, with glob characters, so escaping the storage prefix is tested too. */
const freshPrefix = (): string => `gr-test[${randomUUID()}]*?:`;

/** A raw client for looking under the store, closed at teardown. */
function rawClient(t: Test, url: string): Redis {
  const redis = new Redis(url);
  t.teardown(() => redis.disconnect());
  return redis;
}

t.test('RedisStore', async (t) => {
  const server = await startRedis();
  t.teardown(async () => {
    if (server.owned) await server.stop();
  });

  storeContract(t, async (t) => {
    const prefix = freshPrefix();
    const store = createRedisStore(server.url, { prefix });
    t.teardown(async () => {
      await store.close();
      await removeKeys(server.url, prefix);
    });
    return { store, pass: sleep };
  });

  t.test('kind', async (t) => {
    const store = createRedisStore(server.url);
    t.equal(store.kind, 'redis');
    await store.close();
  });

  t.test('key layout: records, locks and dirty marks under the prefix', async (t) => {
    const prefix = freshPrefix();
    const store = createRedisStore(server.url, { prefix });
    t.teardown(async () => {
      await store.close();
      await removeKeys(server.url, prefix);
    });
    const raw = rawClient(t, server.url);
    const rec = record('ns/Kind/name', 3, { error: 'x' });
    await store.putRecord(rec);
    t.strictSame(JSON.parse((await raw.get(`${prefix}rec:ns/Kind/name`)) ?? 'null'), rec, 'a JSON string');
    await store.lock('ns/Kind/name', 'tok', L);
    t.equal(await raw.get(`${prefix}lock:ns/Kind/name`), 'tok');
    const lockTtl = await raw.pttl(`${prefix}lock:ns/Kind/name`);
    t.ok(lockTtl > 0 && lockTtl <= L, `lock has the ttl (${lockTtl})`);
    await store.lock('ns/Kind/name', 'other', L);
    t.equal(await raw.get(`${prefix}dirty:ns/Kind/name`), '1');
    const markTtl = await raw.pttl(`${prefix}dirty:ns/Kind/name`);
    t.ok(markTtl > L, `the mark outlives the lock (${markTtl} > ${L})`);
    await store.putRecord(record('ns/Kind/name', 4, { uses: ['Secret/ns/tls'] }));
    t.strictSame(await raw.smembers(`${prefix}uses:Secret/ns/tls`), ['ns/Kind/name'], 'the uses index: a set of record keys');
    await store.own('default', ['c1']);
    t.strictSame(await raw.smembers(`${prefix}owned:default`), ['c1'], 'owned ids: a set per pool');
    await store.deleteRecord('ns/Kind/name');
    t.equal(await raw.exists(`${prefix}uses:Secret/ns/tls`), 0, 'an emptied index set is gone');
  });

  t.test('the default prefix is gr:, on an injected client', async (t) => {
    const raw = rawClient(t, server.url);
    const key = `contract-test/${randomUUID()}`;
    const store = new RedisStore({ redis: new Redis(server.url) });
    t.teardown(() => store.close());
    await store.putRecord(record(key));
    t.equal(JSON.parse((await raw.get(`gr:rec:${key}`)) ?? 'null')?.key, key);
    t.strictSame(await store.listRecordKeys(key), [key]);
    await store.deleteRecord(key);
    t.equal(await raw.exists(`gr:rec:${key}`), 0);
  });

  t.test('an ioredis keyPrefix is refused', async (t) => {
    const redis = new Redis(server.url, { lazyConnect: true, keyPrefix: 'x:' });
    t.throws(() => new RedisStore({ redis }), ConfigError);
    redis.disconnect();
  });

  t.test('unreadable records read as null and can be overwritten', async (t) => {
    const prefix = freshPrefix();
    const store = createRedisStore(server.url, { prefix });
    const raw = rawClient(t, server.url);
    t.teardown(async () => {
      await store.close();
      await removeKeys(server.url, prefix);
    });
    const garbage = ['not json', 'null', '42', '{"generation":1}', '{"key":"x"}'];
    await Promise.all(garbage.map((value, i) => raw.set(`${prefix}rec:bad/${i}`, value)));
    t.strictSame(
      await store.getRecords(garbage.map((_, i) => `bad/${i}`)),
      garbage.map(() => null),
    );
    const written = await Promise.all(garbage.map((_, i) => store.putRecord(record(`bad/${i}`, 1))));
    t.strictSame(
      written,
      garbage.map(() => true),
      'a CAS against garbage writes',
    );
    t.equal((await store.getRecords(['bad/0']))[0]?.key, 'bad/0');
  });

  t.test('records are shared between clients and outlive them', async (t) => {
    const prefix = freshPrefix();
    const a = createRedisStore(server.url, { prefix });
    const b = createRedisStore(server.url, { prefix });
    t.teardown(async () => {
      await a.close();
      await b.close();
      await removeKeys(server.url, prefix);
    });
    await a.putRecord(record('shared', 2));
    t.equal((await b.getRecords(['shared']))[0]?.generation, 2, 'another client reads it');
    t.equal(await a.lock('shared', 'A', L), 'acquired');
    t.equal(await b.lock('shared', 'B', L), 'marked-dirty', 'and sees the lock');
    await a.close();
    t.equal((await b.getRecords(['shared']))[0]?.generation, 2, 'still there after the writer closed');
    t.equal(await b.putRecord(record('shared', 1)), false, 'the generation check spans clients');
  });

  t.test('a malformed URL is a ConfigError that does not repeat the URL', async (t) => {
    try {
      createRedisStore('redis://:hunter2@exa mple:6379');
      t.fail('should throw');
    } catch (err) {
      t.ok(err instanceof ConfigError);
      t.notOk(describeError(err).includes('hunter2'));
      t.equal((err as Error).cause, undefined, 'no cause carrying the input');
    }
  });
});

t.test('RedisStore failures, on servers of its own', async (t) => {
  const password = 'pa55-w0rd-secret';

  t.test('a stopped Redis fails each operation fast, without the password; a restarted one works', async (t) => {
    const server = await startOwnRedis({ password });
    t.teardown(() => server.stop());
    const errors: StoreUnavailableError[] = [];
    const store = createRedisStore(server.url, { prefix: freshPrefix(), onError: (err) => errors.push(err) });
    t.teardown(() => store.close());
    await store.putRecord(record('a', 1));
    await store.lock('k', 'A', L);
    await server.stop();

    const operations: [string, () => Promise<unknown>][] = [
      ['getRecords', () => store.getRecords(['a'])],
      ['putRecord', () => store.putRecord(record('a', 2))],
      ['deleteRecord', () => store.deleteRecord('a')],
      ['listRecordKeys', () => store.listRecordKeys('')],
      ['lock', () => store.lock('k', 'B', L)],
      ['release', () => store.release('k', 'A')],
      ['forceRelease', () => store.forceRelease('k', 'A')],
      ['renew', () => store.renew([{ key: 'k', token: 'A' }], L)],
      ['acquireSlot', () => store.acquireSlot('gw', 'h', 1, L)],
      ['ping', () => store.ping()],
    ];
    for (const [name, operation] of operations) {
      const started = Date.now();
      await assertUnavailable(t, operation(), name, password);
      t.ok(Date.now() - started < 2000, `${name} failed in ${Date.now() - started} ms`);
    }
    await until(() => errors.length > 0, 3000);
    t.ok(errors.length > 0, 'failed reconnects were reported');
    for (const err of errors) assertNoSecret(t, err, password);

    await server.start();
    await waitForPing(store, 5000);
    t.strictSame(await store.getRecords(['a']), [null], 'a fresh server (nothing persisted)');
    t.equal(await store.putRecord(record('a', 1)), true);
    t.equal(await store.lock('k', 'B', L), 'acquired');
    t.equal(await store.release('k', 'B'), 'released');
  });

  t.test('a store whose server is down at start fails fast, then works once it is up', async (t) => {
    const server = await startOwnRedis();
    t.teardown(() => server.stop());
    await server.stop();
    const store = createRedisStore(server.url, { prefix: freshPrefix() });
    t.teardown(() => store.close());
    const started = Date.now();
    await assertUnavailable(t, Promise.all([store.ping(), store.getRecords(['a'])]), 'ping');
    t.ok(Date.now() - started < 2000, `failed in ${Date.now() - started} ms`);
    await server.start();
    await waitForPing(store, 5000);
    t.equal(await store.lock('k', 'A', L), 'acquired');
  });

  t.test('a password that shows up in a driver error is scrubbed', async (t) => {
    const server: TestRedis = await startOwnRedis();
    await server.stop();
    const secret = 'ECONNREFUSED';
    const errors: StoreUnavailableError[] = [];
    const store = createRedisStore(`redis://:${secret}@127.0.0.1:${server.port}`, { onError: (err) => errors.push(err) });
    await assertUnavailable(t, store.ping(), 'ping', secret);
    await store.close();
    t.ok(errors.length > 0, 'the refused connection was reported');
    t.ok(
      errors.some((err) => describeError(err).includes('***')),
      'scrubbed where it was',
    );
    for (const err of errors) assertNoSecret(t, err, secret);
  });

  t.test('a wrong password fails each operation and leaks nowhere', async (t) => {
    const server = await startOwnRedis({ password });
    t.teardown(() => server.stop());
    const wrong = 'wr0ng-pa55-w0rd';
    for (const auth of [`:${wrong}`, `default:${wrong}`]) {
      const errors: StoreUnavailableError[] = [];
      const store = createRedisStore(`redis://${auth}@127.0.0.1:${server.port}`, { onError: (err) => errors.push(err) });
      await assertUnavailable(t, store.ping(), 'ping', wrong);
      await assertUnavailable(t, store.lock('k', 'A', L), 'lock', wrong);
      await until(() => errors.length > 0, 3000);
      await store.close();
      t.ok(
        errors.some((err) => describeError(err).includes('WRONGPASS')),
        'the refusal was reported',
      );
      for (const err of errors) assertNoSecret(t, err, wrong);
    }
  });
});

async function until(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition() && Date.now() < deadline) await sleep(20);
}

async function waitForPing(store: Store, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await store.ping();
      return;
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await sleep(50);
    }
  }
}
