/**
 * The Store contract (lib/store/types.ts), run against every implementation: RedisStore on
 * a real redis-server (REDIS_URL's when set, else a private one; a fresh prefix per test),
 * RedisStore on a private three-master Redis Cluster (with a password), and MemoryStore on a
 * FakeClock. Then what only Redis can get wrong: key layout, sharing between clients,
 * unreadable data, and failing fast (without the password) when Redis is down, recovering
 * when it is back; and what only a cluster can get wrong: every key of a prefix in one hash
 * slot, scripts and index updates atomic there, listing keys whichever node holds them, a node
 * or the cluster down, CLUSTERDOWN, and REDIS_CLUSTER wired from the config to the store.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { inspect } from 'node:util';
import { Cluster, Redis } from 'ioredis';
import t from 'tap';
import { systemClock } from '../../lib/platform/clock.js';
import { loadConfig } from '../../lib/platform/config.js';
import { ConfigError, describeError, StoreUnavailableError } from '../../lib/platform/errors.js';
import { silentLogger } from '../../lib/platform/log.js';
import { createService, secretsOf } from '../../lib/service.js';
import { MemoryStore } from '../../lib/store/memory.js';
import { createRedisStore, escapeGlob, hashSlot, loadRedisCluster, RedisStore } from '../../lib/store/redis.js';
import type { Store, SyncRecord } from '../../lib/store/types.js';
import { FakeClock } from '../harness/clock.js';
import { freePort, startOwnRedis, startRedis, type TestRedis } from '../harness/redis.js';
import { startRedisCluster, type TestRedisCluster } from '../harness/redis-cluster.js';

// the Cluster client is loaded on demand (lib/store/redis.ts)
await loadRedisCluster();

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

  t.test('owners of gateway objects: claim, read in one call, release only by the owner', async (t) => {
    const { store } = await makeStore(t);
    const a = { ref: 'ApiDefinition/team-a/x', uid: 'uid-a' };
    const b = { ref: 'ApiDefinition/team-b/payments', uid: 'uid-b' };
    t.strictSame(await store.owners([]), [], 'nothing asked, nothing answered');
    t.strictSame(await store.owners(['default/api/k1', 'default/api/k2']), [null, null], 'none at first');
    t.strictSame(await store.claimOwner('default/api/k1', b), b, 'a free key is taken');
    t.strictSame(await store.claimOwner('default/api/k1', a), b, "a taken key answers its owner, not the claimant's");
    t.strictSame(await store.claimOwner('default/api/k1', b), b, 'the owner claiming again keeps it');
    t.strictSame(await store.claimOwner('default/api/k1', { ref: b.ref, uid: 'uid-b2' }), { ref: b.ref, uid: 'uid-b2' }, 'the same resource recreated takes its new uid');
    t.strictSame(await store.claimOwner('context:ns/eu/api/k1', a), a, 'gateways are apart');
    t.strictSame(await store.owners(['default/api/k1', 'default/api/k2', 'context:ns/eu/api/k1']), [{ ref: b.ref, uid: 'uid-b2' }, null, a], 'in the order asked');
    t.equal(await store.releaseOwner('default/api/k1', a.ref), false, 'only the owner releases');
    t.strictSame(await store.owners(['default/api/k1']), [{ ref: b.ref, uid: 'uid-b2' }]);
    t.equal(await store.releaseOwner('default/api/k1', b.ref), true);
    t.equal(await store.releaseOwner('default/api/k1', b.ref), false, 'a free key releases nothing');
    t.strictSame(await store.owners(['default/api/k1']), [null]);
    t.strictSame(await store.claimOwner('default/api/k1', a), a, 'a released key is free again');
  });

  t.test('owners under contention: of many concurrent claims of one key, exactly one wins', async (t) => {
    const { store } = await makeStore(t);
    const claimants = Array.from({ length: 12 }, (_, i) => ({ ref: `ApiDefinition/ns${i}/api`, uid: `u${i}` }));
    const answers = await Promise.all(claimants.map((c) => store.claimOwner('default/api/hot', c)));
    const winners = new Set(answers.map((o) => o.ref));
    t.equal(winners.size, 1, 'every claimant is told the same owner');
    const [stored] = await store.owners(['default/api/hot']);
    t.equal(stored?.ref, [...winners][0], 'the one stored');
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
    // renewed every S on a 3 S ttl: a margin of 2 S for a loaded machine's timers and round trips
    for (let i = 0; i < 8; i++) {
      await pass(S);
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

  t.test('claims: an allowance never overdrawn, a holder\u2019s claim replaced, pools apart, forgotten after the ttl', async (t) => {
    const { store, pass } = await makeStore(t);
    t.equal(await store.claim('tick', 's0', 30, 50, 3 * S), true);
    t.equal(await store.claim('tick', 's1', 30, 50, 3 * S), false, '30 + 30 is over 50');
    t.equal(await store.claim('tick', 's1', 20, 50, 3 * S), true, '30 + 20 fits exactly');
    t.equal(await store.claim('tick', 's2', 1, 50, 3 * S), false, 'nothing left');
    t.equal(await store.claim('tick', 's2', 0, 50, 3 * S), true, 'a claim of nothing always fits');
    t.equal(await store.claim('other', 's2', 50, 50, 3 * S), true, 'pools are apart');
    t.equal(await store.claim('tick', 's0', 10, 50, 3 * S), true, 'a holder\u2019s new claim replaces its own (a redelivery does not count twice)');
    t.equal(await store.claim('tick', 's2', 20, 50, 3 * S), true, 'what s0 gave back is free: 10 + 20 + 20');
    t.equal(await store.claim('tick', 's0', 40, 50, 3 * S), false, 'refused: 40 + 20 + 20');
    t.equal(await store.claim('tick', 's3', 1, 50, 3 * S), false, 'and the refusal kept s0\u2019s claim of 10: 10 + 20 + 20 is all of it');
    await pass(4 * S);
    t.equal(await store.claim('tick', 's4', 50, 50, 3 * S), true, 'a pool is forgotten after its ttl');
    const racing = await Promise.all(Array.from({ length: 20 }, (_, i) => store.claim('race', `s${i}`, 7, 50, L)));
    t.equal(racing.filter(Boolean).length, 7, 'of concurrent claims of 7 against 50, exactly 7 are granted');
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

  t.test('lockAll: one call, each key acquired or marked dirty as lock() would; an empty batch answers []', async (t) => {
    const { store } = await makeStore(t);
    t.strictSame(await store.lockAll([], L), []);
    t.equal(await store.lock('b', 'X', L), 'acquired');
    const outcomes = await store.lockAll(
      [
        { key: 'a', token: 'A' },
        { key: 'b', token: 'A' },
        { key: 'c', token: 'A' },
      ],
      L,
    );
    t.strictSame(outcomes, ['acquired', 'marked-dirty', 'acquired'], 'in the order given');
    t.equal(await store.release('b', 'X'), 'dirty', "the batch's mark on a key held by another is that holder's to see");
    t.equal(await store.lock('a', 'Z', L), 'marked-dirty', 'the batch holds a');
  });

  t.test('lockAll under contention: of concurrent batches over overlapping keys, each key is acquired by exactly one', async (t) => {
    const { store } = await makeStore(t);
    const keys = Array.from({ length: 30 }, (_, i) => `k${i}`);
    // each batch takes an overlapping window of the keys, in its own order
    const batches = Array.from({ length: 6 }, (_, b) => keys.slice(b * 3, b * 3 + 15).map((key) => ({ key, token: `T${b}` })));
    const answers = await Promise.all(batches.map((entries, b) => store.lockAll(b % 2 === 0 ? entries : [...entries].reverse(), L)));
    const winners = new Map<string, string[]>();
    batches.forEach((entries, b) => {
      const asked = b % 2 === 0 ? entries : [...entries].reverse();
      asked.forEach((e, i) => {
        if (answers[b]?.[i] === 'acquired') winners.set(e.key, [...(winners.get(e.key) ?? []), e.token]);
      });
    });
    const asked = new Set(batches.flat().map((e) => e.key));
    for (const key of asked) t.equal(winners.get(key)?.length, 1, `${key}: exactly one holder (${winners.get(key)?.join(',') ?? 'none'})`);
  });

  t.test('releaseAll and forceReleaseAll: per key as release() and forceRelease(), in one call', async (t) => {
    const { store } = await makeStore(t);
    t.strictSame(await store.releaseAll([]), []);
    t.strictSame(await store.forceReleaseAll([]), []);
    await store.lockAll(
      ['a', 'b', 'c', 'd'].map((key) => ({ key, token: 'A' })),
      L,
    );
    t.equal(await store.lock('b', 'B', L), 'marked-dirty');
    t.strictSame(
      await store.releaseAll([
        { key: 'a', token: 'A' },
        { key: 'b', token: 'A' },
        { key: 'c', token: 'wrong' },
        { key: 'never', token: 'A' },
      ]),
      ['released', 'dirty', 'lost', 'lost'],
    );
    t.equal(await store.lock('a', 'Z', L), 'acquired', 'a released');
    t.equal(await store.lock('c', 'Z', L), 'marked-dirty', 'c still held: the wrong token released nothing');
    t.equal(await store.lock('d', 'D', L), 'marked-dirty', 'd still held');
    t.strictSame(
      await store.forceReleaseAll([
        { key: 'b', token: 'A' },
        { key: 'c', token: 'wrong' },
        { key: 'd', token: 'A' },
      ]),
      [true, false, true],
    );
    t.equal(await store.lock('b', 'Z', L), 'acquired', 'b given back');
    t.equal(await store.lock('d', 'Z', L), 'acquired', 'd given back despite its dirty mark');
    t.equal(await store.release('d', 'Z'), 'dirty', 'and the mark left for the next holder');
  });

  t.test('putRecords: one call, the generation check and the uses index per record; an older generation refuses that record only', async (t) => {
    const { store } = await makeStore(t);
    t.strictSame(await store.putRecords([]), []);
    await store.putRecord(record('b', 5, { uses: ['Secret/ns/old'] }));
    const written = await store.putRecords([record('a', 1, { uses: ['Secret/ns/s'] }), record('b', 4, { uses: ['Secret/ns/s'] }), record('c', 2, { uses: ['Secret/ns/s', 'ConfigMap/ns/m'] })]);
    t.strictSame(written, [true, false, true], 'b refused: a newer generation is stored');
    const [a, b, c] = await store.getRecords(['a', 'b', 'c']);
    t.equal(a?.generation, 1);
    t.equal(b?.generation, 5, 'b kept');
    t.equal(c?.generation, 2);
    t.strictSame(await store.recordsUsing(['Secret/ns/s', 'Secret/ns/old', 'ConfigMap/ns/m']), [['a', 'c'], ['b'], ['c']], 'the index follows the records written, and only those');
    t.strictSame(await store.listRecordKeys(''), ['a', 'b', 'c']);
    t.strictSame(await store.putRecords([record('b', 6), record('a', 1, { uses: [] })]), [true, true], 'equal and newer generations replace');
    t.strictSame(await store.recordsUsing(['Secret/ns/s', 'Secret/ns/old']), [['c'], []]);
  });

  t.test('claimOwners: one call, each claim as claimOwner(); of concurrent batches claiming a free key, exactly one wins', async (t) => {
    const { store } = await makeStore(t);
    t.strictSame(await store.claimOwners([]), []);
    const x = { ref: 'ApiDefinition/ns/x', uid: 'ux' };
    const y = { ref: 'ApiDefinition/ns/y', uid: 'uy' };
    await store.claimOwner('gw/api/taken', y);
    const after = await store.claimOwners([
      { key: 'gw/api/free', owner: x },
      { key: 'gw/api/taken', owner: x },
      { key: 'gw/api/mine', owner: x },
    ]);
    t.strictSame(after, [x, y, x], "a free key is the claimant's, a taken one answers its owner");
    t.strictSame(await store.claimOwners([{ key: 'gw/api/mine', owner: { ref: x.ref, uid: 'new-uid' } }]), [{ ref: x.ref, uid: 'new-uid' }], 'the same resource takes its new uid');
    const claimants = Array.from({ length: 8 }, (_, i) => ({ ref: `ApiDefinition/ns/r${i}`, uid: `u${i}` }));
    const answers = await Promise.all(claimants.map((owner) => store.claimOwners([{ key: 'gw/api/contested', owner }])));
    const won = answers.filter(([o], i) => o?.ref === claimants[i]?.ref);
    t.equal(won.length, 1, 'exactly one claimant wins');
    t.ok(
      answers.every(([o]) => o?.ref === won[0]?.[0]?.ref),
      'every claimant is told the winner',
    );
  });

  t.test('acquireSlots: a lease of up to `want` slots in one call, renewed and shrunk by asking again, given back in one', async (t) => {
    const { store, pass } = await makeStore(t);
    t.equal(await store.acquireSlots('gw', 'A', 3, 4, 3 * S), 3, 'three of four');
    t.equal(await store.acquireSlots('gw', 'B', 3, 4, 3 * S), 1, 'the one left');
    t.equal(await store.acquireSlot('gw', 'single', 4, 3 * S), false, 'a single slot counts against the same limit');
    t.equal(await store.acquireSlots('gw', 'B', 3, 4, 3 * S), 1, 'asking again takes none of the others');
    t.equal(await store.acquireSlots('gw', 'A', 1, 4, 3 * S), 1, 'a smaller want gives the excess back');
    t.equal(await store.acquireSlots('gw', 'B', 3, 4, 3 * S), 3, 'and the excess is free for others');
    t.equal(await store.acquireSlots('other', 'A', 2, 4, 3 * S), 2, 'pools are apart');
    await store.releaseSlots('gw', 'B');
    t.equal(await store.acquireSlots('gw', 'C', 4, 4, 3 * S), 3, "B's slots all given back; A's one stays");
    await store.releaseSlots('gw', 'nobody');
    t.equal(await store.acquireSlots('gw', 'D', 1, 4, 3 * S), 0, 'releasing a holder that holds none frees nothing');
    await pass(2 * S);
    t.equal(await store.acquireSlots('gw', 'A', 1, 4, 3 * S), 1, "A renews its slot: 1 S from C's expiry, 3 S from its own");
    await pass(2 * S);
    t.equal(await store.acquireSlots('gw', 'D', 4, 4, 3 * S), 3, "C's slots expired with their ttl; A's renewed one did not");
  });

  t.test('acquireSlots under contention: slots never exceed the limit across concurrent holders', async (t) => {
    const { store } = await makeStore(t);
    await store.acquireSlot('gw', 'single', 5, L);
    const granted = await Promise.all(Array.from({ length: 12 }, (_, i) => store.acquireSlots('gw', `h${i}`, 1 + (i % 3), 5, L)));
    t.equal(
      granted.reduce((a, b) => a + b, 0),
      4,
      `the four left of five, whoever asked first (${granted.join(',')})`,
    );
    t.equal(await store.acquireSlot('gw', 'late', 5, L), false, 'none left for anyone');
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
    await assertUnavailable(t, store.lockAll([{ key: 'k', token: 'A' }], 1), 'lockAll');
    await assertUnavailable(t, store.releaseAll([{ key: 'k', token: 'A' }]), 'releaseAll');
    await assertUnavailable(t, store.forceReleaseAll([{ key: 'k', token: 'A' }]), 'forceReleaseAll');
    await assertUnavailable(t, store.putRecords([record('a')]), 'putRecords');
    await assertUnavailable(t, store.claimOwners([{ key: 'k', owner: { ref: 'r', uid: 'u' } }]), 'claimOwners');
    await assertUnavailable(t, store.acquireSlots('gw', 'h', 1, 1, 1), 'acquireSlots');
    await assertUnavailable(t, store.releaseSlots('gw', 'h'), 'releaseSlots');
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
    t.strictSame(await raw.zrange(`${prefix}recs`, '0', '-1', 'WITHSCORES'), ['ns/Kind/name', '0'], 'the index of record keys: a sorted set, scores 0');
    await store.deleteRecord('ns/Kind/name');
    t.equal(await raw.exists(`${prefix}uses:Secret/ns/tls`), 0, 'an emptied index set is gone');
    t.equal(await raw.exists(`${prefix}recs`), 0, 'the key is out of the index');
  });

  t.test('listRecordKeys: records from before the index are found by one scan that builds it; after that, the index answers', async (t) => {
    const prefix = freshPrefix();
    const store = createRedisStore(server.url, { prefix });
    t.teardown(async () => {
      await store.close();
      await removeKeys(server.url, prefix);
    });
    const raw = rawClient(t, server.url);
    // written as a version without the index wrote them
    const old = Array.from({ length: 1_500 }, (_, i) => `ApiDefinition/ns/old-${String(i).padStart(4, '0')}`);
    await raw.mset(...old.flatMap((key) => [`${prefix}rec:${key}`, JSON.stringify(record(key))]));
    await store.putRecord(record('SecurityPolicy/ns/new'));
    t.equal(await raw.exists(`${prefix}recs:complete`), 0, 'not built yet');
    t.strictSame(await store.listRecordKeys('ApiDefinition/'), old, 'the old records, past one SCAN page');
    t.equal(await raw.get(`${prefix}recs:complete`), '1', 'built, and marked');
    t.equal(await raw.zcard(`${prefix}recs`), 1_501, 'every record in the index');
    t.strictSame(await store.listRecordKeys(''), [...old, 'SecurityPolicy/ns/new'].sort());
    // a record the index does not know (as a version without it would write one): not listed any more
    await raw.set(`${prefix}rec:ApiDefinition/ns/unindexed`, JSON.stringify(record('ApiDefinition/ns/unindexed')));
    t.notOk((await store.listRecordKeys('ApiDefinition/')).includes('ApiDefinition/ns/unindexed'), 'the index answers, not a scan');
    await store.deleteRecord(old[0] as string);
    t.equal((await store.listRecordKeys('ApiDefinition/')).length, 1_499, 'a deletion leaves the index');
    // the mark deleted: the next listing scans and builds again
    await raw.del(`${prefix}recs:complete`);
    t.ok((await store.listRecordKeys('ApiDefinition/')).includes('ApiDefinition/ns/unindexed'), 'built again from a scan');
    t.equal(await raw.zcard(`${prefix}recs`), 1_501);
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

  t.test('unreadable owners read as null and are claimed over', async (t) => {
    const prefix = freshPrefix();
    const store = createRedisStore(server.url, { prefix });
    const raw = rawClient(t, server.url);
    t.teardown(async () => {
      await store.close();
      await removeKeys(server.url, prefix);
    });
    const garbage = ['not json', 'null', '{"uid":"u"}'];
    await Promise.all(garbage.map((value, i) => raw.set(`${prefix}owner:gw/api/${i}`, value)));
    t.strictSame(
      await store.owners(garbage.map((_, i) => `gw/api/${i}`)),
      garbage.map(() => null),
    );
    const a = { ref: 'ApiDefinition/ns/a', uid: 'u1' };
    t.strictSame(await store.claimOwner('gw/api/0', a), a, 'a claim over garbage takes the key');
    t.equal(await store.releaseOwner('gw/api/1', a.ref), false, 'garbage is nobody to release');
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
      ['lockAll', () => store.lockAll([{ key: 'k', token: 'B' }], L)],
      ['releaseAll', () => store.releaseAll([{ key: 'k', token: 'A' }])],
      ['putRecords', () => store.putRecords([record('a', 2)])],
      ['claimOwners', () => store.claimOwners([{ key: 'o', owner: { ref: 'r', uid: 'u' } }])],
      ['acquireSlots', () => store.acquireSlots('gw', 'h', 2, 4, L)],
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

/** Every key on the node of `port` that starts with `start` (SCAN, paged), sorted. */
async function keysOnNode(cluster: TestRedisCluster, port: number, start: string): Promise<string[]> {
  const redis = cluster.nodeClient(port);
  try {
    const found: string[] = [];
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${escapeGlob(start)}*`, 'COUNT', 1000);
      cursor = next;
      found.push(...keys);
    } while (cursor !== '0');
    return found.sort();
  } finally {
    redis.disconnect();
  }
}

/** CLUSTER KEYSLOT of each key, asked of the node on `port`. */
async function slotsOf(cluster: TestRedisCluster, port: number, keys: readonly string[]): Promise<number[]> {
  const redis = cluster.nodeClient(port);
  try {
    return await Promise.all(keys.map(async (key) => Number(await redis.cluster('KEYSLOT', key))));
  } finally {
    redis.disconnect();
  }
}

t.test('RedisStore on a Redis Cluster', async (t) => {
  const password = 'c1uster-pa55-secret';
  const started = Date.now();
  const cluster = await startRedisCluster({ password });
  t.comment(`three-master cluster ready in ${Date.now() - started} ms`);
  t.teardown(() => cluster.stop());
  const open = (t: Test, prefix = freshPrefix(), options: Parameters<typeof createRedisStore>[1] = {}): RedisStore => {
    const store = createRedisStore(cluster.seeds, { prefix, cluster: true, ...options });
    t.teardown(() => store.close());
    return store;
  };

  // a private cluster and a fresh prefix per test: nothing to clean up between tests
  storeContract(t, async (t) => ({ store: open(t), pass: sleep }));

  t.test('kind', async (t) => {
    t.equal(open(t).kind, 'redis');
  });

  t.test("every key of a prefix is in one hash slot: the prefix is the keys' hash tag", async (t) => {
    const prefix = freshPrefix();
    const store = open(t, prefix);
    await store.putRecord(record('ns/Kind/a', 1, { uses: ['Secret/ns/tls', 'ConfigMap/ns/doc'] }));
    await store.putRecord(record('ns/Kind/b', 1, { uses: ['Secret/ns/tls'] }));
    await store.lock('ns/Kind/a', 'A', L);
    await store.lock('ns/Kind/a', 'B', L);
    await store.acquireSlot('gw', 'holder', 2, L);
    await store.own('gw', ['cert-1']);
    await store.markSeen(['delivery-1'], L);
    await store.claimOwner('gw/api/id-1', { ref: 'ApiDefinition/ns/a', uid: 'u' });
    const tag = `{${prefix}}`;
    const expected = [
      `${tag}dirty:ns/Kind/a`,
      `${tag}lock:ns/Kind/a`,
      `${tag}owned:gw`,
      `${tag}owner:gw/api/id-1`,
      `${tag}rec:ns/Kind/a`,
      `${tag}rec:ns/Kind/b`,
      `${tag}recs`,
      `${tag}seen:delivery-1`,
      `${tag}slots:gw`,
      `${tag}uses:ConfigMap/ns/doc`,
      `${tag}uses:Secret/ns/tls`,
    ].sort();
    const owner = await cluster.ownerOf(tag);
    t.strictSame(await keysOnNode(cluster, owner, tag), expected, 'each kind of key, named {prefix}<kind>:<name>');
    const slots = await slotsOf(cluster, owner, expected);
    t.strictSame([...new Set(slots)], [hashSlot(prefix)], "one slot for every key: the prefix's, as the store computes it");
    for (const port of cluster.ports.filter((p) => p !== owner)) t.strictSame(await keysOnNode(cluster, port, tag), [], `none on the node ${port}`);
    t.strictSame(await keysOnNode(cluster, owner, prefix), [], 'none under the bare prefix (the single-Redis layout)');
  });

  t.test('the uses index follows the record atomically, under concurrent writers', async (t) => {
    const prefix = freshPrefix();
    const [a, b] = [open(t, prefix), open(t, prefix)];
    const key = 'ns/ApiDefinition/hot';
    const uses = (g: number): string[] => [`Secret/ns/s${g}`, 'Secret/ns/common'];
    // 20 generations written at once from two clients: whatever order they arrive in, the index must match the record kept
    const written = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).putRecord(record(key, i + 1, { uses: uses(i + 1) }))));
    t.ok(written.some(Boolean), 'some writes were taken');
    const [kept] = await a.getRecords([key]);
    t.equal(kept?.generation, 20, 'the newest generation is kept');
    const all = Array.from({ length: 20 }, (_, i) => `Secret/ns/s${i + 1}`);
    t.strictSame(await b.recordsUsing([...all, 'Secret/ns/common']), [...all.map((use) => (use === 'Secret/ns/s20' ? [key] : [])), [key]], "only the kept record's uses name it");
    const tag = `{${prefix}}`;
    const owner = await cluster.ownerOf(tag);
    t.strictSame(await keysOnNode(cluster, owner, `${tag}uses:`), [`${tag}uses:Secret/ns/common`, `${tag}uses:Secret/ns/s20`], 'no stale index set is left');
    await a.deleteRecord(key);
    t.strictSame(await keysOnNode(cluster, owner, `${tag}uses:`), [], 'deleting the record empties its index sets');
  });

  t.test("listRecordKeys finds a prefix's keys whichever master serves them, and nothing of another prefix", async (t) => {
    // two prefixes served by different masters: a scan of one node (any random one) misses one of them
    const prefixes: string[] = [];
    const owners = new Set<number>();
    while (prefixes.length < 2) {
      const prefix = freshPrefix();
      const owner = await cluster.ownerOf(`{${prefix}}`);
      if (owners.has(owner)) continue;
      owners.add(owner);
      prefixes.push(prefix);
    }
    const [p1, p2] = prefixes as [string, string];
    const [s1, s2] = [open(t, p1), open(t, p2)];
    const keys = (n: number, name: string): string[] => Array.from({ length: n }, (_, i) => `ns/Kind/${name}-${String(i).padStart(4, '0')}`);
    await Promise.all(keys(1200, 'one').map((key) => s1.putRecord(record(key))));
    await Promise.all(keys(30, 'two').map((key) => s2.putRecord(record(key))));
    await s1.lock('ns/Kind/one-0000', 'A', L);
    await s1.lock('ns/Kind/one-0000', 'B', L);
    // the first listing builds the index from a scan of the master serving the slot (records of before it), the next ones read it
    const owner = await cluster.ownerOf(`{${p1}}`);
    const node = new Redis({ host: '127.0.0.1', port: owner, password, lazyConnect: true });
    t.teardown(() => node.disconnect());
    await node.del(`{${p1}}recs`);
    for (let i = 0; i < 3; i++) {
      t.strictSame(await s1.listRecordKeys('ns/'), keys(1200, 'one'), `listing ${i + 1}: every record of the first prefix, past one SCAN page, no lock or mark`);
      t.equal(await node.zcard(`{${p1}}recs`), 1200, 'the index holds them');
      t.strictSame(await s2.listRecordKeys(''), keys(30, 'two'), `listing ${i + 1}: only the second prefix's`);
    }
  });

  t.test('locks, dirty marks and release across two clients of the cluster', async (t) => {
    const prefix = freshPrefix();
    const [a, b] = [open(t, prefix), open(t, prefix)];
    const outcomes = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).lock('hot', `token-${i}`, L)));
    t.equal(outcomes.filter((o) => o === 'acquired').length, 1, 'exactly one of 20 callers on two clients acquires');
    const winner = outcomes.indexOf('acquired');
    const holder = winner % 2 ? a : b;
    const other = winner % 2 ? b : a;
    t.strictSame(await other.renew([{ key: 'hot', token: `token-${winner}` }], L), [true], 'renewed through the other client');
    t.equal(await other.release('hot', 'token-x'), 'lost', 'a wrong token releases nothing');
    t.equal(await holder.release('hot', `token-${winner}`), 'dirty', 'the losers left a mark');
    t.equal(await other.lock('hot', 'late', L), 'marked-dirty', 'the lock was kept');
    t.equal(await holder.release('hot', `token-${winner}`), 'dirty', 'marked again meanwhile');
    t.equal(await holder.release('hot', `token-${winner}`), 'released');
    t.equal(await other.lock('hot', 'late', L), 'acquired', 'free for the other client');
    t.equal(await other.forceRelease('hot', 'late'), true);
    const tag = `{${prefix}}`;
    const owner = await cluster.ownerOf(tag);
    const [lockSlot, dirtySlot] = await slotsOf(cluster, owner, [`${tag}lock:hot`, `${tag}dirty:hot`]);
    t.equal(lockSlot, dirtySlot, 'a lock and its dirty mark share a slot (the scripts touch both)');
  });

  t.test('the default prefix on an injected Cluster client is gr:, as a hash tag', async (t) => {
    const key = `contract-test/${randomUUID()}`;
    const redis = new Cluster([{ host: '127.0.0.1', port: cluster.ports[0] as number }], { lazyConnect: true, redisOptions: { password } });
    const store = new RedisStore({ redis });
    t.teardown(() => store.close());
    await store.putRecord(record(key));
    const owner = await cluster.ownerOf('{gr:}');
    t.strictSame(await keysOnNode(cluster, owner, `{gr:}rec:${key}`), [`{gr:}rec:${key}`]);
    t.strictSame(await store.listRecordKeys(key), [key]);
    await store.deleteRecord(key);
    t.strictSame(await keysOnNode(cluster, owner, `{gr:}rec:${key}`), []);
  });

  t.test('what a cluster store refuses: ConfigError, never repeating the URL', async (t) => {
    const check = (make: () => unknown, setting: string, message: RegExp): void => {
      try {
        make();
        t.fail(`should refuse (${setting})`);
      } catch (err) {
        t.ok(err instanceof ConfigError, `${setting}: ConfigError`);
        t.match(describeError(err), message);
        t.notOk(describeError(err).includes('hunter2'), 'no password');
        t.equal((err as Error).cause, undefined, 'no cause carrying the input');
      }
    };
    check(() => createRedisStore('redis://:hunter2@a:1,rediss://:hunter2@b:2', { cluster: true }), 'REDIS_URL', /REDIS_URL: mixes redis:\/\/ and rediss:\/\//);
    check(() => createRedisStore('redis://:hunter2@a:1/2', { cluster: true }), 'REDIS_URL', /database 0 only/);
    check(() => createRedisStore('redis://:hunter2@exa mple:1', { cluster: true }), 'REDIS_URL', /REDIS_URL: is not a valid URL/);
    check(() => createRedisStore(cluster.seeds, { cluster: true, prefix: 'app{1}:' }), 'prefix', /prefix: must be non-empty and hold no \{ or \}/);
    check(() => createRedisStore(cluster.seeds, { cluster: true, prefix: '' }), 'prefix', /prefix: must be non-empty/);
    const prefixed = new Cluster([{ host: '127.0.0.1', port: 1 }], { lazyConnect: true, keyPrefix: 'x:' });
    check(() => new RedisStore({ redis: prefixed }), 'keyPrefix', /keyPrefix/);
    prefixed.disconnect();
  });

  t.test("REDIS_CLUSTER=true: the service's store is a cluster store on REDIS_URL's seeds", async (t) => {
    const dir = mkdtempSync(path.join(tmpdir(), 'store-contract-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    // a kubeconfig that is never called: only the store is probed here
    const kubeconfig = path.join(dir, 'kubeconfig');
    writeFileSync(
      kubeconfig,
      'apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "http://127.0.0.1:1"}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n',
    );
    const env = { KUBECONFIG: kubeconfig, TYK_URL: 'http://127.0.0.1:1', TYK_AUTH: 'gateway-secret', ALLOW_UNAUTHENTICATED: 'true', REDIS_URL: cluster.seeds, REDIS_CLUSTER: 'true' };
    const config = loadConfig(env);
    t.equal(config.redisCluster, true);
    t.ok(secretsOf(config).includes(password), "the seeds' password is a secret no Event may carry");
    const service = createService(config, env, { log: silentLogger });
    t.teardown(() => service.close());
    const ready = await service.readiness();
    t.strictSame(ready.checks.store, { ok: true }, 'the store answers through the cluster');
    t.throws(() => loadConfig({ ...env, REDIS_CLUSTER: 'false' }), /REDIS_URL: lists 3 URLs; .*REDIS_CLUSTER=true/, 'several seeds without REDIS_CLUSTER are refused');
  });

  t.test('a wrong password fails each operation and leaks nowhere', async (t) => {
    const wrong = 'wr0ng-c1uster-pa55';
    const errors: StoreUnavailableError[] = [];
    const seeds = cluster.ports.map((p) => `redis://:${wrong}@127.0.0.1:${p}`).join(',');
    const store = createRedisStore(seeds, { cluster: true, prefix: freshPrefix(), onError: (err) => errors.push(err) });
    t.teardown(() => store.close());
    for (const [name, operation] of [
      ['ping', () => store.ping()],
      ['lock', () => store.lock('k', 'A', L)],
      ['listRecordKeys', () => store.listRecordKeys('')],
    ] as const) {
      const began = Date.now();
      await assertUnavailable(t, operation(), name, wrong);
      t.ok(Date.now() - began < 3000, `${name} failed in ${Date.now() - began} ms`);
    }
    await until(() => errors.length > 0, 3000);
    t.ok(
      errors.some((err) => describeError(err).includes('WRONGPASS')),
      'the refusal was reported, with its reason',
    );
    for (const err of errors) assertNoSecret(t, err, wrong);
  });

  t.test('a cluster down at start fails each operation fast, without the password', async (t) => {
    const ports = [await freePort(), await freePort()];
    const errors: StoreUnavailableError[] = [];
    const store = createRedisStore(ports.map((p) => `redis://:${password}@127.0.0.1:${p}`).join(','), { cluster: true, prefix: freshPrefix(), onError: (err) => errors.push(err) });
    t.teardown(() => store.close());
    for (const [name, operation] of [
      ['ping', () => store.ping()],
      ['getRecords', () => store.getRecords(['a'])],
      ['putRecord', () => store.putRecord(record('a'))],
      ['listRecordKeys', () => store.listRecordKeys('')],
      ['lock', () => store.lock('k', 'A', L)],
    ] as const) {
      const began = Date.now();
      await assertUnavailable(t, operation(), name, password);
      t.ok(Date.now() - began < 3000, `${name} failed in ${Date.now() - began} ms`);
    }
    t.equal(store.reachable(), false, 'known to be unreachable');
    await until(() => errors.length > 0, 3000);
    t.ok(
      errors.some((err) => describeError(err).includes('Failed to refresh slots cache')),
      'the failed connects were reported',
    );
    for (const err of errors) assertNoSecret(t, err, password);
  });

  t.test('CLUSTERDOWN is StoreUnavailableError; the store works again once the cluster is up', async (t) => {
    const prefix = freshPrefix();
    const store = open(t, prefix);
    await store.putRecord(record('a', 1));
    const tag = `{${prefix}}`;
    const owner = await cluster.ownerOf(tag);
    const admin = cluster.nodeClient(owner);
    t.teardown(() => admin.disconnect());
    // the owner gives up another of its slots: it sees the cluster as not covering every slot, and refuses commands
    const [ours] = await slotsOf(cluster, owner, [tag]);
    const range = (await admin.cluster('SLOTS')).find(([from, to]) => from <= (ours as number) && (ours as number) <= to);
    if (range === undefined) throw new Error(`slot ${ours} is served by no node`);
    const given = range[0] === ours ? range[0] + 1 : range[0];
    await admin.cluster('DELSLOTS', given);
    t.teardown(async () => {
      await admin.cluster('ADDSLOTS', given).catch(() => undefined);
      await cluster.waitUntilOk();
    });
    const began = Date.now();
    try {
      await store.getRecords(['a']);
      t.fail('should fail while the cluster is down');
    } catch (err) {
      t.ok(err instanceof StoreUnavailableError, 'StoreUnavailableError');
      // ioredis retries CLUSTERDOWN on a random node, which redirects (MOVED) to the owner, until its tries or the
      // command timeout run out: the error says which came first
      t.match(describeError(err), /getRecords failed .*(CLUSTERDOWN|Too many Cluster redirections|Command timed out)/, 'naming the operation and why');
      assertNoSecret(t, err, password);
    }
    t.ok(Date.now() - began < 4000, `failed in ${Date.now() - began} ms (bounded retries)`);
    await admin.cluster('ADDSLOTS', given);
    await cluster.waitUntilOk();
    await waitForPing(store, 5000);
    t.equal((await store.getRecords(['a']))[0]?.generation, 1, 'the record is still there');
  });

  // last: it takes a node down (and brings it back)
  t.test('the master serving the prefix down: each operation fails fast, without the password; back: works again', async (t) => {
    const prefix = freshPrefix();
    const errors: StoreUnavailableError[] = [];
    const store = open(t, prefix, { onError: (err) => errors.push(err) });
    await store.putRecord(record('a', 1));
    await store.lock('k', 'A', L);
    const owner = await cluster.ownerOf(`{${prefix}}`);
    await cluster.stopNode(owner);
    t.teardown(() => cluster.startNode(owner).catch(() => undefined));
    const operations: [string, () => Promise<unknown>][] = [
      ['getRecords', () => store.getRecords(['a'])],
      ['putRecord', () => store.putRecord(record('a', 2))],
      ['deleteRecord', () => store.deleteRecord('a')],
      ['listRecordKeys', () => store.listRecordKeys('')],
      ['lock', () => store.lock('k', 'B', L)],
      ['release', () => store.release('k', 'A')],
      ['renew', () => store.renew([{ key: 'k', token: 'A' }], L)],
      ['recordsUsing', () => store.recordsUsing(['Secret/ns/x'])],
      ['markSeen', () => store.markSeen(['x'], L)],
      ['acquireSlot', () => store.acquireSlot('gw', 'h', 1, L)],
      ['lockAll', () => store.lockAll([{ key: 'k', token: 'B' }], L)],
      ['forceReleaseAll', () => store.forceReleaseAll([{ key: 'k', token: 'A' }])],
      ['putRecords', () => store.putRecords([record('a', 2)])],
      ['acquireSlots', () => store.acquireSlots('gw', 'h', 2, 4, L)],
      ['releaseSlots', () => store.releaseSlots('gw', 'h')],
    ];
    for (const [name, operation] of operations) {
      const began = Date.now();
      await assertUnavailable(t, operation(), name, password);
      t.ok(Date.now() - began < 2000, `${name} failed in ${Date.now() - began} ms`);
    }
    await until(() => errors.length > 0, 3000);
    t.ok(errors.length > 0, 'the lost node was reported');
    for (const err of errors) assertNoSecret(t, err, password);

    await cluster.startNode(owner);
    await waitForPing(store, 5000);
    const back = async (): Promise<boolean> => {
      try {
        return (await store.lock('k', 'B', L)) === 'acquired';
      } catch {
        return false;
      }
    };
    let acquired = false;
    for (const deadline = Date.now() + 5000; !acquired && Date.now() < deadline; ) {
      acquired = await back();
      if (!acquired) await sleep(50);
    }
    t.ok(acquired, 'the restarted master serves the prefix again (its data was not persisted)');
    t.strictSame(await store.getRecords(['a']), [null]);
    t.equal(await store.putRecord(record('a', 1)), true);
    t.equal(await store.release('k', 'B'), 'released');
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
