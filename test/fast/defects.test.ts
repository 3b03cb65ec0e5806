/**
 * Two defects of the run, pinned as ordinary tests. Both FAIL on the code this branch was cut
 * from (lib/engine/apply.ts, lib/engine/concurrency.ts) and pass once it is fixed:
 *
 * A. "backoff decided twice against a moving clock": inBackoff runs in applyItem and again in
 *    finalizeItem, with settling (clock sleeps) in between, so an object skipped as in backoff
 *    can be finalized as if it had been written.
 * B. "locks released while writes are in flight": mapLimit rejects as soon as one fn rejects
 *    while the other workers still run, and applyLocked then force-releases the batch's locks;
 *    a throwing lock() leaves the locks taken before it held.
 */
import t from 'tap';
import { mapLimit } from '../../lib/engine/concurrency.js';
import type { JsonObject } from '../../lib/gateway/types.js';
import { API_DEFINITION } from '../../lib/kinds/api-definition/kind.js';
import { StoreUnavailableError } from '../../lib/platform/errors.js';
import type { LockOutcome, ReleaseOutcome, SyncRecord } from '../../lib/store/types.js';
import { apiDefinition, defaultIdOf } from '../fixtures/builders.js';
import { DelegatingStore } from '../fixtures/delegating-store.js';
import { FastWorld, reported } from './world.js';

const retarget = (url: string) => (s: Record<string, unknown>) => ({ ...s, proxy: { ...(s.proxy as JsonObject), target_url: url } });

interface Gate {
  promise: Promise<void>;
  open(): void;
}

function gate(): Gate {
  let open = () => {};
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

/**
 * A Store over MemoryStore that writes every lock, release and record write into `timeline`
 * (record writes as "start" and "end") and lets a test hold or fail calls per key.
 */
class ObservedStore extends DelegatingStore {
  readonly timeline: string[] = [];
  /** awaited before a record write; may throw */
  beforePut: (rec: SyncRecord) => Promise<void> | void = () => {};
  /** awaited before a lock; may throw */
  beforeLock: (key: string) => Promise<void> | void = () => {};

  override async putRecord(record: SyncRecord): Promise<boolean> {
    this.timeline.push(`putRecord ${record.key} start`);
    await this.beforePut(record);
    const stored = await super.putRecord(record);
    this.timeline.push(`putRecord ${record.key} end`);
    return stored;
  }
  override async lock(key: string, token: string, ttlMs: number): Promise<LockOutcome> {
    await this.beforeLock(key);
    const outcome = await super.lock(key, token, ttlMs);
    this.timeline.push(`lock ${key} ${outcome}`);
    return outcome;
  }
  override async release(key: string, token: string): Promise<ReleaseOutcome> {
    this.timeline.push(`release ${key}`);
    return super.release(key, token);
  }
  override async forceRelease(key: string, token: string): Promise<boolean> {
    this.timeline.push(`forceRelease ${key}`);
    return super.forceRelease(key, token);
  }
}

const KEY_A = 'ApiDefinition/default/a';
const KEY_B = 'ApiDefinition/default/b';

/** a and b synced through an observed store; then both specs change, so both are written by the next run. */
async function twoChanged(): Promise<{ w: FastWorld; store: ObservedStore }> {
  let store: ObservedStore | undefined;
  const w = new FastWorld({
    store: (inner) => {
      store = new ObservedStore(inner);
      return store;
    },
  });
  w.apply(apiDefinition('a').build());
  w.apply(apiDefinition('b').build());
  await w.run();
  w.updateSpec(API_DEFINITION, 'a', retarget('http://a.example'));
  w.updateSpec(API_DEFINITION, 'b', retarget('http://b.example'));
  w.resetCounts();
  if (!store) throw new Error('no store');
  store.timeline.length = 0;
  return { w, store };
}

t.test('DEFECT A: backoff decided twice against a moving clock', async (t) => {
  const w = new FastWorld();
  w.apply(apiDefinition('x').build());
  w.apply(apiDefinition('y').build());
  await w.run();
  // x failed earlier; its backoff ends before the settle wait of this run is over
  const retryAt = w.clock.now() + 100;
  t.ok(retryAt - w.clock.now() < w.settings.settle.initialDelayMs, 'retryAt falls inside the first settle wait');
  const failed = await w.editRecord(API_DEFINITION, 'x', (r) => ({ ...r, result: 'failed', failures: 1, retryAt, error: 'write API: 503 boom' }));
  // as that failure left it: status Failed
  const x = w.api('x');
  if (!x) throw new Error('no x');
  await w.kube.patchStatus(API_DEFINITION, x, { latestTransaction: { status: 'Failed', time: failed.time, error: 'write API: 503 boom' } });
  const statusBefore = w.api('x')?.status;
  w.updateSpec(API_DEFINITION, 'y', retarget('http://example.com'));
  w.resetCounts();

  const report = await w.run();

  t.match(reported(report, 'y'), { action: 'UPDATE', reason: 'spec changed', result: 'synced' });
  t.ok(w.clock.now() > retryAt, "settling y moved the clock past x's retryAt");
  t.equal(w.gateway.faults.calls.filter((c) => c.op === 'upsert' && c.id === defaultIdOf('x')).length, 0, 'x got no write');
  t.match(reported(report, 'x'), { result: 'backoff' }, 'x is reported as in backoff, as decided when writes were made');
  t.same(await w.record(API_DEFINITION, 'x'), failed, "x's record unchanged (result failed, failures 1, retryAt kept)");
  t.same(w.api('x')?.status, statusBefore, "x's status still says Failed (not patched to Pending)");
});

t.test('DEFECT B: locks are not released while work under them is in flight', async (t) => {
  const { w, store } = await twoChanged();
  const aHeld = gate();
  let aDone = false;
  store.beforePut = async (rec) => {
    if (rec.key === KEY_A) {
      await aHeld.promise; // a's record write is in flight until the gate opens
      aDone = true;
    }
    if (rec.key === KEY_B) {
      setTimeout(() => aHeld.open(), 20);
      throw new StoreUnavailableError('memory store putRecord failed: connection lost');
    }
  };
  let upsertsInFlight = 0;
  let releasedWhileUpserting = false;
  w.gateway.inject({
    op: 'upsert',
    times: Infinity,
    hook: async () => {
      upsertsInFlight++;
      await new Promise((resolve) => setImmediate(resolve));
      upsertsInFlight--;
    },
  });
  const forceRelease = store.forceRelease.bind(store);
  store.forceRelease = async (key, token) => {
    if (upsertsInFlight > 0) releasedWhileUpserting = true;
    return forceRelease(key, token);
  };

  await t.rejects(w.run(), StoreUnavailableError, 'the store failure ends the run');
  await aHeld.promise;
  await new Promise((resolve) => setImmediate(resolve));

  t.ok(aDone, "a's record write finished");
  const tl = store.timeline;
  const aEnd = tl.indexOf(`putRecord ${KEY_A} end`);
  const firstRelease = tl.findIndex((e) => e.startsWith('forceRelease ') || e.startsWith('release '));
  t.ok(firstRelease >= 0, 'locks were released');
  t.ok(aEnd >= 0 && firstRelease > aEnd, `no lock released before a's in-flight write finished: ${JSON.stringify(tl)}`);
  t.notOk(releasedWhileUpserting, 'no lock released while a gateway write was in flight');
  t.equal(await w.locked(KEY_A), false, "a's lock ends released");
  t.equal(await w.locked(KEY_B), false, "b's lock ends released");
});

t.test('DEFECT B: locks taken before a lock() that throws are released', async (t) => {
  const { w, store } = await twoChanged();
  store.beforeLock = (key) => {
    if (key === KEY_B) throw new StoreUnavailableError('memory store lock failed: connection lost');
  };
  await t.rejects(w.run(), StoreUnavailableError);
  t.ok(store.timeline.includes(`lock ${KEY_A} acquired`), "a's lock was taken");
  t.equal(w.gateway.writes(), 0, 'nothing written');
  t.equal(await w.locked(KEY_A), false, "a's lock was given back (not left to expire in lockTtlMs)");
});

t.test('DEFECT B: mapLimit rejects only after every piece of work in flight has settled', async (t) => {
  const slow = gate();
  let slowFinished = false;
  const work = mapLimit([0, 1], 2, async (i) => {
    if (i === 0) throw new Error('boom');
    await slow.promise;
    slowFinished = true;
    return i;
  });
  setTimeout(() => slow.open(), 20);
  await t.rejects(work, /boom/, 'the first rejection is the answer');
  t.ok(slowFinished, 'but only once the other worker finished');
});
