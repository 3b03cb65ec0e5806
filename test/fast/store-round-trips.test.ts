/**
 * Store round trips of whole runs, counted as calls of the Store interface (one call is one
 * round trip; a call with an empty list makes none, reachable() and close() none): a first run
 * over 300 ApiDefinitions and a run after the gateway restarted empty (every object written
 * again) make a few calls per batch of objects (locks, owner claims, write slots and records
 * taken and saved together: lib/engine/locks.ts, apply.ts, write-slots.ts, run-context.ts's
 * RecordWriter), not several per object; a steady run makes 3 (and a scheduled run's sweep of
 * the certificates it uploaded, one more); a composite kind's run (Ingresses) batches its locks
 * and records too (lib/engine/composite.ts); owner entries claimed again for objects that write
 * nothing go in one call. And the write limit per
 * gateway still holds when each run takes its slots as a lease: two runs writing to one
 * gateway at GATEWAY_MAX_CONCURRENT_WRITES=2 never have more than 2 writes in flight.
 */
import t from 'tap';
import { API_DEFINITION } from '../../lib/kinds/api-definition/kind.js';
import type { Store } from '../../lib/store/types.js';
import { apiDefinition, defaultIdOf, ingress } from '../fixtures/builders.js';
import { MemoryTykGateway } from '../memory/gateway.js';
import { FastWorld } from './world.js';

const N = 300;

function ce(w: FastWorld): MemoryTykGateway {
  if (!(w.gateway instanceof MemoryTykGateway)) throw new Error('not a Tyk Gateway');
  return w.gateway;
}

/** A store that counts its calls by method, as round trips (none for an empty list, reachable, close). */
function counting(calls: Map<string, number>): (store: Store) => Store {
  return (store) =>
    new Proxy(store, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target) as unknown;
        if (typeof value !== 'function' || typeof prop !== 'string') return value;
        return (...args: unknown[]) => {
          const empty = args.some((a) => Array.isArray(a) && a.length === 0);
          if (!empty && prop !== 'reachable' && prop !== 'close') calls.set(prop, (calls.get(prop) ?? 0) + 1);
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
}

function total(calls: ReadonlyMap<string, number>): number {
  return [...calls.values()].reduce((a, b) => a + b, 0);
}

function said(calls: ReadonlyMap<string, number>): string {
  return `${total(calls)} calls: ${JSON.stringify(Object.fromEntries([...calls].sort()))}`;
}

t.test(`a first run over ${N} objects makes a few store round trips per batch, not per object; a restart likewise; a steady run 3`, async (t) => {
  const calls = new Map<string, number>();
  const w = new FastWorld({ store: counting(calls) });
  for (let i = 0; i < N; i++) w.apply(apiDefinition(`api-${i}`).build());

  const first = await w.run();
  t.equal(first.objects.filter((o) => o.result === 'synced').length, N, 'every object written and synced');
  t.ok(total(calls) <= 0.05 * N, `at most ${0.05 * N} store round trips for ${N} written objects (${said(calls)})`);
  t.equal(calls.get('lock') ?? 0, 0, 'no lock taken one by one');
  t.equal(calls.get('putRecord') ?? 0, 0, 'no record saved one by one');
  t.equal(calls.get('claimOwner') ?? 0, 0, 'no owner claimed one by one');
  t.equal(calls.get('acquireSlot') ?? 0, 0, 'no write slot taken one by one');
  for (let i = 0; i < N; i += 37) t.equal((await w.record(API_DEFINITION, `api-${i}`))?.result, 'synced', `api-${i}: its record saved`);
  t.equal(await w.locked(`ApiDefinition/default/api-${N - 1}`), false, 'the locks given back');

  calls.clear();
  const steady = await w.run();
  t.equal(steady.objects.filter((o) => o.result === 'unchanged').length, N);
  // a scheduled run also sweeps the certificates we uploaded (owned: one read of the gateway's)
  t.strictSame(Object.fromEntries(calls), { getRecords: 1, listRecordKeys: 1, owners: 1, owned: 1 }, `a steady run: 3 round trips and the sweep's (${said(calls)})`);

  ce(w).restart();
  calls.clear();
  const restart = await w.run();
  t.equal(restart.objects.filter((o) => o.result === 'synced').length, N, 'after the restart every object written again');
  t.ok(total(calls) <= 0.05 * N, `the restart: at most ${0.05 * N} store round trips (${said(calls)})`);
});

t.test('GATEWAY_MAX_CONCURRENT_WRITES=2 with leases: two runs writing to one gateway never have more than 2 writes in flight', async (t) => {
  const peakOf = async (max: number): Promise<{ peak: number; synced: number }> => {
    const w = new FastWorld({ settings: { concurrency: 8, gatewayWrites: { max, slotTtlMs: 60_000, waitMs: 600_000 } } });
    for (const ns of ['team-a', 'team-b']) for (let i = 0; i < 10; i++) w.apply(apiDefinition(`${ns}-${i}`).inNamespace(ns).build());
    let inFlight = 0;
    let peak = 0;
    w.gateway.inject({
      op: 'upsert',
      times: Infinity,
      hook: async () => {
        inFlight++;
        peak = Math.max(peak, inFlight);
        // 100 ms on the world's clock: woken as the runs' sleeps (settle, a wait for a slot) move it
        await w.clock.sleep(100);
        inFlight--;
      },
    });
    const runs = await Promise.all(['team-a', 'team-b'].map((ns) => w.run({ trigger: 'resync', scope: { namespaces: [ns] } })));
    const synced = runs.flatMap((r) => r.objects).filter((o) => o.result === 'synced').length;
    return { peak, synced };
  };
  const limited = await peakOf(2);
  t.equal(limited.synced, 20, 'every object written');
  t.ok(limited.peak <= 2, `at most 2 writes in flight toward the gateway (${limited.peak})`);
  t.equal(limited.peak, 2, 'and both slots were used');
  const unlimited = await peakOf(0);
  t.equal(unlimited.synced, 20);
  t.ok(unlimited.peak > 2, `without the limit the two runs write ${unlimited.peak} at once: the test above can fail`);
});

t.test('a composite kind too: 60 Ingresses written in one run lock, record and release their objects in batches', async (t) => {
  const calls = new Map<string, number>();
  const w = new FastWorld({ store: counting(calls) });
  w.apply(
    apiDefinition('tpl')
      .template()
      .withSpec({ name: 'tpl', protocol: 'http', use_keyless: true, active: true, proxy: { target_url: 'http://example.com' } })
      .build(),
  );
  const n = 60;
  for (let i = 0; i < n; i++) w.apply(ingress(`web-${i}`).withClass('tyk').withTemplate('tpl').withRule(`web-${i}.example.com`, '/', 'web', 80).build());
  const report = await w.run();
  const ingresses = report.objects.filter((o) => o.kind === 'Ingress');
  t.equal(ingresses.length, n);
  t.ok(
    ingresses.every((o) => o.result === 'synced'),
    'every Ingress written',
  );
  t.equal(report.objects.filter((o) => o.kind === 'ApiDefinition' && o.result === 'synced').length, n, 'and the ApiDefinitions it made, in the same run');
  t.equal(calls.get('lock') ?? 0, 0, 'no lock taken one by one');
  t.equal(calls.get('putRecord') ?? 0, 0, 'no record saved one by one');
  t.ok(total(calls) <= 30, `${2 * n} objects written in at most 30 store round trips (${said(calls)})`);
  t.equal(await w.locked('Ingress/default/web-0'), false, 'the locks given back');
});

t.test('owner entries missing for objects that write nothing are claimed again together, at the stage’s flush', async (t) => {
  const calls = new Map<string, number>();
  const w = new FastWorld({ store: counting(calls) });
  const n = 120;
  for (let i = 0; i < n; i++) w.apply(apiDefinition(`api-${i}`).build());
  await w.run();
  const keys = Array.from({ length: n }, (_, i) => `default/api/${defaultIdOf(`api-${i}`)}`);
  for (let i = 0; i < n; i++) await w.memoryStore.releaseOwner(keys[i] as string, `ApiDefinition/default/api-${i}`);
  calls.clear();
  const report = await w.run();
  t.equal(report.objects.filter((o) => o.result === 'unchanged').length, n, 'nothing written');
  t.equal(calls.get('claimOwner') ?? 0, 0, 'none claimed one by one');
  t.equal(calls.get('claimOwners'), 1, `all in one call (${said(calls)})`);
  const owners = await w.memoryStore.owners(keys);
  t.ok(
    owners.every((o, i) => o?.ref === `ApiDefinition/default/api-${i}`),
    'every owner entry back',
  );
});
