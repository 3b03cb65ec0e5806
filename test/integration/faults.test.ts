/**
 * Faults a serverless deployment meets, through HTTP with real Redis and the loopback fakes:
 * locks that are short-lived and renewed while their holder works (a dead invocation blocks
 * its objects for a TTL of seconds; a slow one keeps them), and a shutdown in the middle of a
 * run (it stops writing, settles and records what it wrote, and releases its locks).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { apiDefinition, defaultIdOf } from '../fixtures/builders.js';
import { reported, worldFor } from '../harness/world.js';

const one = (name: string) => ({ namespace: 'default', name });

t.test('a lock held by a dead invocation blocks its object for one short TTL, then the next run converges', async (t) => {
  const w = await worldFor(t, { settings: { lockTtlMs: 500, lockRenewMs: 150 } });
  await w.create(apiDefinition('a').build());
  // what a SIGKILLed invocation leaves behind: its lock, never released nor renewed
  t.equal(await w.store.lock('ApiDefinition/default/a', 'dead-invocation', 500), 'acquired');
  const blocked = await w.resync(one('a'));
  t.match(reported(blocked.body, 'a'), { action: 'CREATE', result: 'deferred' }, 'the lock is respected while it lives');
  t.equal(w.tyk.writes(), 0);
  await sleep(600);
  const after = await w.resync(one('a'));
  t.match(reported(after.body, 'a'), { action: 'CREATE', result: 'synced' }, 'and expires with its TTL');
  t.equal(w.tyk.loaded('api').size, 1);
});

t.test('a holder that works past the TTL keeps its lock by renewing it: a second invocation is deferred, one write', async (t) => {
  const w = await worldFor(t, { settings: { lockTtlMs: 400, lockRenewMs: 100 } });
  await w.create(apiDefinition('a').build());
  w.tyk.inject({ method: 'POST', path: '/tyk/apis', delayMs: 1_200 });
  const first = w.resync(one('a'));
  await sleep(800);
  const second = await w.resync(one('a'));
  t.match(reported(second.body, 'a'), { result: 'deferred' }, 'twice the TTL later, the lock is still held');
  t.match(reported((await first).body, 'a'), { action: 'CREATE', result: 'synced' });
  t.equal(w.tyk.count('POST', '/tyk/apis'), 1, 'exactly one write');
  t.equal(w.gatewayApi(defaultIdOf('a'))?.name, 'a');
});

t.test('without renewal the same wait lets the second invocation in: the test above can fail', async (t) => {
  const w = await worldFor(t, { settings: { lockTtlMs: 400, lockRenewMs: 0 } });
  await w.create(apiDefinition('a').build());
  w.tyk.inject({ method: 'POST', path: '/tyk/apis', delayMs: 1_200 });
  const first = w.resync(one('a'));
  await sleep(800);
  const second = await w.resync(one('a'));
  t.not(reported(second.body, 'a').result, 'deferred', 'the expired lock was taken');
  await first;
});
