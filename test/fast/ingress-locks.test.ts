/**
 * The Ingress phase's lock is renewed while it works (lib/engine/locks.ts), through whole Runs
 * in process: a run whose ApiDefinition write is held past lockTtlMs keeps its lock, so a
 * second invocation meanwhile is deferred to it and the first takes its dirty mark up; without
 * renewal the same wait lets the second one in (so the first test can fail).
 *
 * Lock TTLs pass in real time here (the store is a MemoryStore on the system clock, as a Redis
 * store's are): the write is held ~3 TTLs of a 300 ms lock, renewed every 50 ms. The run's own
 * clock is the fast world's.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import t, { type Test } from 'tap';
import type { ObjectReport, RunReport } from '../../lib/engine/types.js';
import { shortHash } from '../../lib/kinds/ingress/apis.js';
import { INGRESS } from '../../lib/kinds/ingress/kind.js';
import { MemoryStore } from '../../lib/store/memory.js';
import { apiDefinition, ingress } from '../fixtures/builders.js';
import { DelegatingStore } from '../fixtures/delegating-store.js';
import { FastWorld, reported } from './world.js';

const TTL = 300;
const KEY = 'Ingress/default/web';
const A = `default-web-${shortHash('/a')}`;

/** A store over a MemoryStore on real time that counts the renewals that kept a lock. */
class CountingStore extends DelegatingStore {
  renewed = 0;
  override async renew(locks: readonly { key: string; token: string }[], ttlMs: number): Promise<boolean[]> {
    const ours = await super.renew(locks, ttlMs);
    this.renewed += ours.filter(Boolean).length;
    return ours;
  }
}

const template = () =>
  apiDefinition('tpl')
    .template()
    .withSpec({ name: 'tpl', protocol: 'http', use_keyless: true, active: true, proxy: { target_url: 'http://example.com' } })
    .build();

/**
 * A first run whose ApiDefinition create is held ~3 TTLs; meanwhile a second run of the same
 * Ingress. Answers both Ingress reports, the world and its store.
 */
async function secondRunWhileHeld(t: Test, lockRenewMs: number): Promise<{ w: FastWorld; store: CountingStore; first: ObjectReport; second: ObjectReport }> {
  let store: CountingStore | undefined;
  const w = new FastWorld({
    settings: { lockTtlMs: TTL, lockRenewMs },
    store: () => {
      store = new CountingStore(new MemoryStore());
      return store;
    },
  });
  if (!store) throw new Error('no store');
  const counting = store;
  t.teardown(() => counting.close());
  // every phase's code loaded first (a run over nothing): a module compiled on first use in the
  // second run would hold the event loop, and the first run's renewal timer with it, past the TTL
  await w.run();
  w.apply(template());
  w.apply(ingress('web').withClass('tyk').withTemplate('tpl').withRule('', '/a', 'web', 80).build());

  let writing!: () => void;
  const reached = new Promise<void>((resolve) => {
    writing = resolve;
  });
  let open!: () => void;
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  w.kube.inject({
    op: 'createObject',
    hook: async () => {
      writing();
      await gate;
    },
  });
  const firstRun = w.run();
  await reached;
  // the first run holds the Ingress's lock and is writing: past its TTL, a second run comes
  await sleep(3 * TTL);
  const secondRun: RunReport = await w.run({ trigger: 'watch', scope: { cluster: [{ kind: INGRESS, namespace: 'default', name: 'web' }] } });
  open();
  const first = reported(await firstRun, 'web', 'Ingress');
  return { w, store: counting, first, second: reported(secondRun, 'web', 'Ingress') };
}

t.test('a write held past the lock TTL keeps its lock by renewing it: a second invocation is deferred, one create', async (t) => {
  const { w, store, first, second } = await secondRunWhileHeld(t, 50);
  t.match(second, { action: 'CREATE', result: 'deferred' }, 'three TTLs later, the lock is still held');
  t.ok(store.renewed > 0, 'the lock was renewed while the write was held');
  // the Ingress phase reports its last pass: here the dirty one, which found the write done
  t.match(first, { result: /^(synced|unchanged)$/ });
  t.equal(w.kube.count('createObject'), 1, 'one create: the second run did not write');
  t.equal(w.kube.count('get', 'Ingress'), 3, "one read per pass of the first run (the second run's dirty mark taken up) and the second run's own");
  t.ok(w.api(A), 'the ApiDefinition is there');
  t.same(
    w.log.entries.filter((e) => e.msg === 'lock lost while held' || e.msg === 'lock expired before release'),
    [],
    'no lock was lost',
  );
  t.equal(await store.lock(KEY, 'probe', 1_000), 'acquired', 'released at the end');
});

t.test('without renewal the same wait lets the second invocation in: the test above can fail', async (t) => {
  const { w, first, second } = await secondRunWhileHeld(t, 0);
  t.not(second.result, 'deferred', 'the expired lock was taken');
  t.match(second, { action: 'CREATE', result: 'synced' });
  t.match(first, { result: 'synced' }, 'the first run adopts what the second created');
  t.equal(w.kube.count('createObject'), 2, 'both runs wrote');
  t.match(
    w.log.entries.filter((e) => e.msg === 'lock expired before release'),
    [{ level: 'warn', key: KEY }],
    'the first run finds its lock gone at release',
  );
});
