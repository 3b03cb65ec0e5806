/**
 * Faults a serverless deployment meets, through HTTP with real Redis and the loopback fakes:
 * locks that are short-lived and renewed while their holder works (a dead invocation blocks
 * its objects for a TTL of seconds; a slow one keeps them), and a shutdown in the middle of a
 * run (it stops writing, settles and records what it wrote, and releases its locks). The
 * concurrent full runs and the restarted gateway send over undici's pooled client, as full runs
 * are deployed; the others over Node's own.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import t, { type Test } from 'tap';
import { auditEventList } from '../fixtures/audit.js';
import { apiDefinition, defaultIdOf } from '../fixtures/builders.js';
import { reported, worldFor } from '../harness/world.js';

const one = (name: string) => ({ namespace: 'default', name });

t.test('a lock held by a dead invocation blocks its object for one short TTL, then the next run converges', async (t) => {
  const w = await worldFor(t, { settings: { lockTtlMs: 500, lockRenewMs: 150 } });
  // a first run loads every phase, so the TTL below is not spent on loading code
  await w.resync();
  await w.create(apiDefinition('a').build());
  // what a SIGKILLed invocation leaves behind: its lock, never released nor renewed
  t.equal(await w.store.lock('ApiDefinition/default/a', 'dead-invocation', 1_000), 'acquired');
  const blocked = await w.resync(one('a'));
  t.match(reported(blocked.body, 'a'), { action: 'CREATE', result: 'deferred' }, 'the lock is respected while it lives');
  t.equal(w.tyk.writes(), 0);
  await sleep(1_100);
  const after = await w.resync(one('a'));
  t.match(reported(after.body, 'a'), { action: 'CREATE', result: 'synced' }, 'and expires with its TTL');
  t.equal(w.tyk.loaded('api').size, 1);
});

/** A run whose write takes 1.2 s on a 400 ms lock, and a second run of the same object 800 ms in: both reports, and the world. */
async function secondRunPastTheTtl(t: Test, lockRenewMs: number) {
  const w = await worldFor(t, { settings: { lockTtlMs: 400, lockRenewMs } });
  await w.create(apiDefinition('a').build());
  w.tyk.inject({ method: 'POST', path: '/tyk/apis', delayMs: 1_200 });
  const first = w.resync(one('a'));
  await sleep(800);
  const second = reported((await w.resync(one('a'))).body, 'a');
  return { w, first: reported((await first).body, 'a'), second };
}

t.test('a holder that works past the TTL keeps its lock by renewing it: a second invocation is deferred, one write', async (t) => {
  const { w, first, second } = await secondRunPastTheTtl(t, 100);
  t.match(second, { result: 'deferred' }, 'twice the TTL later, the lock is still held');
  t.match(first, { action: 'CREATE', result: 'synced' });
  t.equal(w.tyk.count('POST', '/tyk/apis'), 1, 'exactly one write');
  t.equal(w.gatewayApi(defaultIdOf('a'))?.name, 'a');
});

t.test('without renewal the same wait lets the second invocation in: the test above can fail', async (t) => {
  const { second } = await secondRunPastTheTtl(t, 0);
  t.not(second.result, 'deferred', 'the expired lock was taken');
});

t.test('SIGTERM mid-run: writes not started are left, what was written settles and is recorded, locks are released, no new run starts', async (t) => {
  const w = await worldFor(t, { settings: { concurrency: 1 } });
  const names = ['a', 'b', 'c'];
  for (const n of names) await w.create(apiDefinition(n).build());
  w.tyk.inject({ method: 'POST', path: '/tyk/apis', delayMs: 400 });
  const run = w.resync();
  while (w.tyk.count('POST', '/tyk/apis') === 0) await sleep(10);
  const stopped = w.svc.shutdown(5_000);
  const report = (await run).body;
  t.same(await stopped, { drained: true }, 'the run ended within the grace');

  const results = names.map((n) => reported(report, n));
  const synced = results.filter((r) => r.result === 'synced');
  const left = results.filter((r) => r.result === 'deferred');
  t.equal(synced.length, 1, 'the write in flight finished');
  t.equal(left.length, 2);
  for (const r of left) t.match(r, { action: 'CREATE', reason: 'shutting down' });
  t.equal(w.tyk.count('POST', '/tyk/apis'), 1, 'no write started after the stop');
  t.equal(w.tyk.loaded('api').size, 1, 'the one written was reloaded and is served');
  const done = await w.get(synced[0]?.name as string);
  t.match(done?.status, { api_id: defaultIdOf(synced[0]?.name as string), latestTransaction: { status: 'Successful' } }, 'its status and record were written');
  for (const r of left) {
    t.equal((await w.get(r.name))?.status?.api_id, undefined, `${r.name} untouched`);
    t.equal(await w.store.lock(`ApiDefinition/default/${r.name}`, 'probe', 1_000), 'acquired', `${r.name}'s lock was released`);
    await w.store.release(`ApiDefinition/default/${r.name}`, 'probe');
  }

  const refused = await w.resync();
  t.equal(refused.statusCode, 503, 'a run asked for after the stop is refused');
  t.match(refused.body, { code: 'SHUTTING_DOWN' });
  const delivery = auditEventList({ resource: 'apidefinitions', apiGroup: 'tyk.tyk.io', name: 'b' });
  const webhook = await w.audit(delivery);
  t.equal(webhook.statusCode, 503, 'so is a webhook delivery: the API server retries it against the next process');

  // the next process takes up what was left, each API written once in all
  await w.restartService();
  const next = await w.resync();
  for (const r of left) t.match(reported(next.body, r.name), { action: 'CREATE', result: 'synced' });
  t.match(reported(next.body, synced[0]?.name as string), { action: 'NOOP', result: 'unchanged' });
  t.equal(w.tyk.count('POST', '/tyk/apis'), 3, 'three APIs, three writes');
  const again = await w.audit(delivery);
  t.equal(again.statusCode, 200);
  t.match(again.body, { accepted: 1 }, 'the refused delivery was not remembered as seen: its retry is taken');
});

t.test('Redis killed mid-run: no further write starts, the run answers 503; once Redis is back the next run converges with no duplicate', async (t) => {
  const w = await worldFor(t, { settings: { concurrency: 1 } });
  if (!w.redis.owned) return t.pass('REDIS_URL points at a shared server: this test needs its own');
  const names = ['a', 'b', 'c'];
  for (const n of names) await w.create(apiDefinition(n).build());
  let killed: Promise<void> | undefined;
  // the first write reaches the gateway, and Redis dies (with every record and lock) while it is answered
  w.tyk.inject({
    method: 'POST',
    path: '/tyk/apis',
    match: () => {
      killed ??= w.redis.stop();
      return true;
    },
    // long enough for redis-server to exit and the client to see its connection close
    delayMs: 1_500,
  });
  const res = await w.resync();
  await killed;
  t.equal(res.statusCode, 503, 'the run could not record: the caller is told to retry');
  t.match(res.body, { code: 'STORE_UNAVAILABLE' });
  t.equal(w.tyk.count('POST', '/tyk/apis'), 1, 'no write started after the store was gone');

  await w.redis.start();
  await w.restartService();
  const next = await w.resync();
  t.equal(next.statusCode, 200);
  const results = names.map((n) => reported(next.body, n));
  t.equal(results.filter((r) => r.action === 'CREATE' && r.result === 'synced').length, 2, 'the two never written are created');
  // Redis lost its records with it: the API written before the loss is found on the gateway by
  // its id, holding exactly what would be sent, and adopted as it is, with no write; never created twice
  t.equal(results.filter((r) => r.action === 'NOOP' && r.reason === 'adopted from gateway' && r.result === 'synced').length, 1);
  t.equal(w.tyk.count('POST', '/tyk/apis'), 3, 'one write per object never written: 1 before the loss, 2 after');
  t.equal(w.tyk.loaded('api').size, 3, 'each API exactly once on the gateway');
  for (const n of names) t.match((await w.get(n))?.status, { api_id: defaultIdOf(n) }, `${n}'s status names its API`);
  const quiet = await w.resync();
  t.equal(quiet.body.counts.unchanged, 3, 'then steady');
});

t.test('eight concurrent invocations over the same 200 objects: one write per object, then one per change', async (t) => {
  // full runs, over undici's pooled client as they are deployed
  const w = await worldFor(t, { transport: 'undici' });
  const names = Array.from({ length: 200 }, (_, i) => `api-${String(i).padStart(3, '0')}`);
  for (const n of names) await w.create(apiDefinition(n).build());
  const invocations = Array.from({ length: 8 }, () => w.anotherInvocation());
  const all = () => Promise.all(invocations.map((svc) => svc.run({ trigger: 'schedule', scope: { all: true } })));

  const first = await all();
  t.equal(w.tyk.count('POST', '/tyk/apis'), 200, '200 creates among the eight');
  t.equal(w.tyk.loaded('api').size, 200);
  for (const n of names) {
    const synced = first.filter((r) => reported(r, n).result === 'synced').length;
    if (synced !== 1) t.fail(`${n} synced by ${synced} invocations`);
  }
  t.ok(
    first.every((r) => r.errors.length === 0),
    'no run-level error',
  );

  const changed = names.filter((_, i) => i % 4 === 0);
  for (const n of changed) await w.updateSpec(n, (s) => ({ ...s, proxy: { ...(s.proxy as object), target_url: 'http://changed.default.svc:8080' } }));
  w.resetCounts();
  await all();
  t.equal(w.tyk.count('POST', '/tyk/apis'), changed.length, 'one write per change');
  for (const n of changed) t.match(w.gatewayApi(defaultIdOf(n)), { proxy: { target_url: 'http://changed.default.svc:8080' } });
  w.resetCounts();
  await all();
  t.equal(w.tyk.writes(), 0, 'then silence');
});

/** Two invocations at once, each syncing its own namespace of 12 APIs, against a gateway that answers each write in 150 ms. */
async function twoInvocationsWriting(t: Test, limit: string): Promise<{ peak: number; synced: number }> {
  const w = await worldFor(t, { env: { GATEWAY_MAX_CONCURRENT_WRITES: limit }, settings: { concurrency: 8 } });
  // names unique across both namespaces: the gateway would rename clashing listen paths
  for (const ns of ['team-a', 'team-b']) for (let i = 0; i < 12; i++) await w.create({ ...apiDefinition(`${ns}-${i}`).build(), metadata: { name: `${ns}-${i}`, namespace: ns } });
  w.tyk.inject({ method: 'POST', path: '/tyk/apis', delayMs: 150, times: Infinity });
  w.resetCounts();
  const [a, b] = await Promise.all(['team-a', 'team-b'].map((ns) => w.anotherInvocation().run({ trigger: 'resync', scope: { namespaces: [ns] } })));
  const synced = [...(a?.objects ?? []), ...(b?.objects ?? [])].filter((o) => o.result === 'synced').length;
  return { peak: w.tyk.peakConcurrentWrites(), synced };
}

t.test('GATEWAY_MAX_CONCURRENT_WRITES holds every invocation together under the limit', async (t) => {
  const limited = await twoInvocationsWriting(t, '3');
  t.equal(limited.synced, 24, 'every API written');
  t.ok(limited.peak <= 3, `at most 3 writes at once toward the gateway (${limited.peak})`);
  t.ok(limited.peak >= 2, 'and the slots were used');
  const unlimited = await twoInvocationsWriting(t, '0');
  t.equal(unlimited.synced, 24);
  t.ok(unlimited.peak > 3, `without the limit the two invocations write ${unlimited.peak} at once: the test above can fail`);
});

t.test('a gateway restarted empty drops the first reload: the run re-issues it and every API is served again, one write each', async (t) => {
  const w = await worldFor(t, { transport: 'undici' });
  const names = ['a', 'b', 'c', 'd'];
  for (const n of names) await w.create(apiDefinition(n).build());
  await w.tick();
  w.tyk.restart();
  w.tyk.dropReloads(1);
  w.resetCounts();
  const healed = await w.tick();
  for (const n of names) t.match(reported(healed, n), { action: 'CREATE', reason: 'missing on gateway', result: 'synced' });
  t.equal(w.tyk.count('POST', '/tyk/apis'), 4, 'one write each');
  t.ok(w.tyk.reloads.requested >= 2, `the lost reload was re-issued (${w.tyk.reloads.requested} requested, ${w.tyk.reloads.dropped} dropped)`);
  t.equal(w.tyk.loaded('api').size, 4);
});
