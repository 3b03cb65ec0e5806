/**
 * Operating it, through HTTP with real Redis, our real clients and the loopback fakes (the API
 * server validating every status patch against our CRDs, as kube-apiserver does): the Ready and
 * Synced conditions `kubectl wait` reads, MAX_DELETES_PER_RUN, and the pause annotation.
 */
import t from 'tap';
import type { KubeObject } from '../../lib/kube/types.js';
import { apiDefinition, conditionOf, defaultIdOf, FINALIZER } from '../fixtures/builders.js';
import { GROUP, reported, type World, worldFor } from '../harness/world.js';

const PAUSE = 'tyk.tyk.io/reconcile-paused';

/** `kubectl wait --for=condition=Ready`: the condition's status is "True" at the object's generation. */
function readyNow(obj: KubeObject | undefined): boolean {
  const ready = conditionOf(obj, 'Ready');
  return ready?.status === 'True' && ready.observedGeneration === obj?.metadata.generation;
}

async function setPaused(w: World, name: string, paused: boolean): Promise<void> {
  const current = (await w.api.getNamespacedCustomObject({ ...GROUP, namespace: 'default', name })) as KubeObject;
  const annotations = { ...current.metadata.annotations };
  if (paused) annotations[PAUSE] = 'true';
  else delete annotations[PAUSE];
  await w.api.replaceNamespacedCustomObject({ ...GROUP, namespace: 'default', name, body: { ...current, metadata: { ...current.metadata, annotations } } });
}

t.test('Ready once the API is served; a spec the gateway rejects makes Synced=False with its message', async (t) => {
  const w = await worldFor(t);
  await w.create(apiDefinition('a').build());
  t.equal(readyNow(await w.get('a')), false, 'not before a run');
  const res = await w.resync({ namespace: 'default', name: 'a' });
  t.equal(res.statusCode, 200);
  const a = await w.get('a');
  t.ok(readyNow(a), 'Ready=True at its generation');
  t.match(conditionOf(a, 'Synced'), { status: 'True', reason: 'ReconcileSuccess', observedGeneration: 1 });
  t.equal(a?.status?.observedGeneration, 1);

  w.tyk.inject({ method: 'POST', path: '/tyk/apis', status: 400, body: { status: 'error', message: 'listen path is invalid' }, times: Infinity });
  await w.updateSpec('a', (s) => ({ ...s, active: false }));
  await w.resync({ namespace: 'default', name: 'a' });
  const rejected = await w.get('a');
  t.match(conditionOf(rejected, 'Synced'), { status: 'False', reason: 'Invalid', message: /listen path is invalid/, observedGeneration: 2 });
  t.match(conditionOf(rejected, 'Ready'), { status: 'False', reason: 'Invalid' });
  t.equal(readyNow(rejected), false);

  w.resetCounts();
  await w.tick();
  await w.tick();
  t.equal(w.statusPatches(), 0, 'said once: steady afterwards');
});

t.test('MAX_DELETES_PER_RUN through /resync: over the limit nothing is deleted and each says why; a smaller run proceeds', async (t) => {
  const w = await worldFor(t, { env: { MAX_DELETES_PER_RUN: '2' } });
  for (const n of ['a', 'b', 'c']) await w.create(apiDefinition(n).build());
  await w.resync();
  for (const n of ['a', 'b', 'c']) await w.delete(n);
  const res = await w.resync();
  t.equal(res.statusCode, 200);
  for (const n of ['a', 'b', 'c']) t.match(reported(res.body, n), { action: 'DELETE', result: 'held', error: /would delete 3 objects from the gateway, more than MAX_DELETES_PER_RUN=2/ });
  t.equal(w.tyk.loaded('api').size, 3, 'nothing deleted');
  t.same((await w.get('a'))?.metadata.finalizers, [FINALIZER]);
  t.match(
    (await w.events('a')).filter((e) => e.reason === 'TooManyDeletions'),
    [{ type: 'Warning', message: /MAX_DELETES_PER_RUN=2/ }],
  );

  const one = await w.resync({ namespace: 'default', name: 'a' });
  t.match(reported(one.body, 'a'), { result: 'deleted' }, 'one deletion at a time fits');
  t.equal(await w.get('a'), undefined);
  const rest = await w.resync();
  t.equal(rest.body.counts.deleted, 2, 'two left: within the limit');
  t.equal(w.tyk.loaded('api').size, 0);
});

t.test('the pause annotation through HTTP: nothing written while paused, resumed when it goes', async (t) => {
  const w = await worldFor(t);
  await w.create(apiDefinition('a').paused().build());
  const res = await w.resync({ namespace: 'default', name: 'a' });
  t.match(reported(res.body, 'a'), { action: 'CREATE', result: 'paused' });
  t.equal(w.tyk.loaded('api').size, 0, 'not created');
  t.match(await w.events('a'), [{ type: 'Normal', reason: 'ReconcilePaused', message: /held: CREATE/ }]);

  await setPaused(w, 'a', false);
  const resumed = await w.resync({ namespace: 'default', name: 'a' });
  t.match(reported(resumed.body, 'a'), { action: 'CREATE', result: 'synced' });
  t.ok(readyNow(await w.get('a')));

  await setPaused(w, 'a', true);
  await w.delete('a');
  const held = await w.resync({ namespace: 'default', name: 'a' });
  t.match(reported(held.body, 'a'), { action: 'DELETE', result: 'paused' });
  t.ok(w.gatewayApi(defaultIdOf('a')), 'a paused deletion leaves the gateway alone');
  const a = await w.get('a');
  t.same(a?.metadata.finalizers, [FINALIZER], 'and keeps the finalizer');
  t.match(conditionOf(a, 'Synced'), { status: 'False', reason: 'ReconcilePaused' });
});
