/**
 * The locks of the apply stage (lib/engine/apply.ts), through whole Runs: an object another
 * run holds is deferred to it (and marked dirty there); a change that arrives while we hold a
 * lock is taken up before the lock is given back, up to maxDirtyPasses passes; a re-read under
 * the lock that finds nothing to do writes nothing; a store failure under the locks releases them.
 */
import t from 'tap';
import type { JsonObject } from '../../lib/gateway/types.js';
import { API_DEFINITION } from '../../lib/kinds/api-definition/kind.js';
import { StoreUnavailableError } from '../../lib/platform/errors.js';
import type { LockOutcome, ReleaseOutcome, SyncRecord } from '../../lib/store/types.js';
import { apiDefinition, defaultIdOf } from '../fixtures/builders.js';
import { DelegatingStore } from '../fixtures/delegating-store.js';
import { FastWorld, reported } from './world.js';

const KEY = 'ApiDefinition/default/httpbin';
const HTTPBIN = defaultIdOf('httpbin');
const retarget = (url: string) => (s: Record<string, unknown>) => ({ ...s, proxy: { ...(s.proxy as JsonObject), target_url: url } });

/** A Store over MemoryStore that counts lock calls and lets a test act before getRecords, lock and release. */
class HookedStore extends DelegatingStore {
  readonly calls: string[] = [];
  beforeGetRecords: () => Promise<void> | void = () => {};
  beforeLock: (key: string) => Promise<void> | void = () => {};

  override async getRecords(keys: readonly string[]): Promise<(SyncRecord | null)[]> {
    await this.beforeGetRecords();
    return super.getRecords(keys);
  }
  override async lock(key: string, token: string, ttlMs: number): Promise<LockOutcome> {
    await this.beforeLock(key);
    this.calls.push(`lock ${key} ${ttlMs}`);
    return super.lock(key, token, ttlMs);
  }
  override async release(key: string, token: string): Promise<ReleaseOutcome> {
    const outcome = await super.release(key, token);
    this.calls.push(`release ${key} ${outcome}`);
    return outcome;
  }
  override async renew(locks: readonly { key: string; token: string }[], ttlMs: number): Promise<boolean[]> {
    const ours = await super.renew(locks, ttlMs);
    this.calls.push(`renew ${locks.map((l) => l.key).join(',')} ${ours.join(',')}`);
    return ours;
  }
  override async forceRelease(key: string, token: string): Promise<boolean> {
    const ours = await super.forceRelease(key, token);
    this.calls.push(`forceRelease ${key} ${ours}`);
    return ours;
  }
}

async function hooked(settings: Partial<FastWorld['settings']> = {}): Promise<{ w: FastWorld; store: HookedStore }> {
  let store: HookedStore | undefined;
  const w = new FastWorld({
    settings,
    store: (inner) => {
      store = new HookedStore(inner);
      return store;
    },
  });
  if (!store) throw new Error('no store');
  w.apply(apiDefinition('httpbin').build());
  await w.run();
  w.resetCounts();
  store.calls.length = 0;
  return { w, store };
}

/** Another run takes the object's lock now (as a watch event arriving meanwhile would): a dirty mark while we hold it. */
async function anotherRunWants(w: FastWorld): Promise<void> {
  await w.memoryStore.lock(KEY, `other-${Math.random()}`, 60_000);
}

t.test('an object whose lock another run holds is deferred to it: nothing written, the holder told to run again', async (t) => {
  const { w, store } = await hooked();
  await w.memoryStore.lock(KEY, 'other-run', 60_000);
  w.updateSpec(API_DEFINITION, 'httpbin', retarget('http://example.com'));
  const report = await w.run();
  t.match(reported(report, 'httpbin'), { action: 'UPDATE', reason: 'spec changed', result: 'deferred', id: HTTPBIN, gateway: 'default' });
  t.same(report.counts, { deferred: 1 });
  t.same(report.gateway, { writes: 0, reloads: 0 });
  t.equal(w.gateway.writes(), 0);
  t.same(store.calls, [`lock ${KEY} ${w.settings.lockTtlMs}`], 'the lock is asked for with lockTtlMs, and not released (it is not ours)');
  t.equal(await w.memoryStore.release(KEY, 'other-run'), 'dirty', 'the holder finds the object marked dirty');
});

t.test('a change that arrives while the lock is held is written before the lock is given back', async (t) => {
  const { w, store } = await hooked();
  w.updateSpec(API_DEFINITION, 'httpbin', retarget('http://one.example'));
  // while the first write is in flight, the user changes the spec again and its event finds the lock taken
  w.gateway.inject({
    op: 'upsert',
    hook: async () => {
      w.updateSpec(API_DEFINITION, 'httpbin', retarget('http://two.example'));
      await anotherRunWants(w);
    },
  });
  const report = await w.run();
  t.match(reported(report, 'httpbin'), { action: 'UPDATE', reason: 'spec changed', result: 'synced' });
  t.equal(w.gateway.count('upsert', 'api'), 2, 'the second change is written by the same run');
  t.same(report.gateway, { writes: 2, reloads: 2 });
  t.match(await w.gateway.get('api', HTTPBIN), { proxy: { target_url: 'http://two.example' } });
  t.match(await w.record(API_DEFINITION, 'httpbin'), { result: 'synced', generation: 3 });
  t.same(store.calls, [`lock ${KEY} ${w.settings.lockTtlMs}`, `release ${KEY} dirty`, `release ${KEY} released`]);
  t.equal(await w.locked(KEY), false);
});

t.test('a dirty pass that writes again reports how that write ended', async (t) => {
  const { w } = await hooked();
  w.updateSpec(API_DEFINITION, 'httpbin', retarget('http://one.example'));
  w.gateway.inject({
    op: 'upsert',
    hook: async () => {
      w.updateSpec(API_DEFINITION, 'httpbin', retarget('http://two.example'));
      await anotherRunWants(w);
    },
  });
  // the second write is refused
  w.gateway.inject({ op: 'upsert', afterCalls: 1, error: () => new Error('second write refused') });
  const report = await w.run();
  t.match(reported(report, 'httpbin'), { action: 'UPDATE', result: 'failed', error: 'second write refused' });
  t.equal(report.objects.length, 1);
  t.match(await w.record(API_DEFINITION, 'httpbin'), { result: 'failed', failures: 1 });
});

t.test('a dirty pass that finds nothing to do leaves the report of the write', async (t) => {
  const { w, store } = await hooked();
  w.updateSpec(API_DEFINITION, 'httpbin', retarget('http://one.example'));
  // an event about something that changes nothing arrives while we write
  w.gateway.inject({ op: 'upsert', hook: () => anotherRunWants(w) });
  const report = await w.run();
  t.match(reported(report, 'httpbin'), { action: 'UPDATE', reason: 'spec changed', result: 'synced' }, 'not the NOOP of the re-run');
  t.equal(report.objects.length, 1);
  t.equal(w.gateway.count('upsert', 'api'), 1, 'the re-run wrote nothing');
  t.same(report.gateway, { writes: 1, reloads: 1 });
  t.same(store.calls, [`lock ${KEY} ${w.settings.lockTtlMs}`, `release ${KEY} dirty`, `release ${KEY} released`]);
});

t.test('an object marked dirty on every pass is applied maxDirtyPasses times, then its lock is given back anyway', async (t) => {
  const { w, store } = await hooked({ maxDirtyPasses: 3 });
  w.updateSpec(API_DEFINITION, 'httpbin', retarget('http://one.example'));
  let n = 0;
  // every write is followed by another change and its event
  w.gateway.inject({
    op: 'upsert',
    times: Infinity,
    hook: async () => {
      n++;
      w.updateSpec(API_DEFINITION, 'httpbin', retarget(`http://next-${n}.example`));
      await anotherRunWants(w);
    },
  });
  const report = await w.run();
  t.equal(w.gateway.count('upsert', 'api'), 3, 'three passes, three writes');
  t.match(reported(report, 'httpbin'), { action: 'UPDATE', result: 'synced' });
  t.same(store.calls, [`lock ${KEY} ${w.settings.lockTtlMs}`, `release ${KEY} dirty`, `release ${KEY} dirty`, `forceRelease ${KEY} true`]);
  t.equal(await w.locked(KEY), false, 'the lock is free for the next run');
});

t.test('a lock that expired before its release is logged', async (t) => {
  const { w, store } = await hooked({ lockTtlMs: 100 });
  w.updateSpec(API_DEFINITION, 'httpbin', retarget('http://one.example'));
  const report = await w.run();
  t.match(reported(report, 'httpbin'), { result: 'synced' }, 'settling took longer than the lock lived');
  t.same(store.calls, [`lock ${KEY} 100`, `release ${KEY} lost`]);
  t.match(
    w.log.entries.filter((e) => e.msg === 'lock expired before release'),
    [{ level: 'warn', key: KEY }],
  );
});

t.test('a lock released normally is not logged as expired', async (t) => {
  const { w } = await hooked();
  w.updateSpec(API_DEFINITION, 'httpbin', retarget('http://one.example'));
  await w.run();
  t.same(
    w.log.entries.filter((e) => e.msg === 'lock expired before release'),
    [],
  );
});

t.test('a write decided at load but found unnecessary under the lock is not made', async (t) => {
  const { w, store } = await hooked();
  const before = w.api('httpbin');
  w.updateSpec(API_DEFINITION, 'httpbin', retarget('http://one.example'));
  // between the load and the lock, the change is undone
  store.beforeLock = () => {
    if (before) w.apply(before);
  };
  const report = await w.run();
  t.match(reported(report, 'httpbin'), { action: 'NOOP', result: 'unchanged' });
  t.same(report.gateway, { writes: 0, reloads: 0 });
  t.equal(w.gateway.writes(), 0);
  t.equal(await w.locked(KEY), false);
});

t.test('a store failure while re-reading under the locks releases them and ends the run', async (t) => {
  const { w, store } = await hooked();
  w.apply(apiDefinition('other').build());
  w.updateSpec(API_DEFINITION, 'httpbin', retarget('http://one.example'));
  let locked = false;
  store.beforeLock = () => {
    locked = true;
  };
  store.beforeGetRecords = () => {
    if (locked) throw new StoreUnavailableError('memory store getRecords failed: connection lost');
  };
  await t.rejects(w.run(), StoreUnavailableError);
  t.equal(w.gateway.writes(), 0, 'nothing written');
  t.equal(await w.locked(KEY), false, 'httpbin released');
  t.equal(await w.locked('ApiDefinition/default/other'), false, 'other released');
});
