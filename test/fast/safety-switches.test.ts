/**
 * The safety switches through whole Runs: the pause annotation (tyk.tyk.io/reconcile-paused)
 * and MAX_DELETES_PER_RUN. A paused object is neither written nor deleted, its drift is
 * reported and not undone, its finalizer stays; a run over the deletion limit deletes none of
 * its deletions and says so on each; both resume on the next run once lifted.
 */
import t from 'tap';
import type { JsonObject } from '../../lib/gateway/types.js';
import { API_DEFINITION } from '../../lib/kinds/api-definition/kind.js';
import { SECURITY_POLICY } from '../../lib/kinds/security-policy/kind.js';
import type { KubeObject } from '../../lib/kube/types.js';
import { apiDefinition, conditionOf, defaultIdOf, FINALIZER, securityPolicy } from '../fixtures/builders.js';
import { MemoryTykGateway } from '../memory/gateway.js';
import { FastWorld, reported } from './world.js';

const PAUSE = 'tyk.tyk.io/reconcile-paused';

function ce(w: FastWorld): MemoryTykGateway {
  if (!(w.gateway instanceof MemoryTykGateway)) throw new Error('a Tyk Gateway world');
  return w.gateway;
}

function eventsWith(w: FastWorld, name: string, reason: string) {
  return w.kube.eventsAbout('ApiDefinition', name).filter((e) => e.reason === reason);
}

function setPaused(w: FastWorld, name: string, paused: boolean, kind = API_DEFINITION): void {
  const obj = w.get(kind, name) as KubeObject;
  const annotations = { ...obj.metadata.annotations };
  if (paused) annotations[PAUSE] = 'true';
  else delete annotations[PAUSE];
  w.apply({ ...obj, metadata: { ...obj.metadata, annotations } });
}

t.test('pause: drift is reported, not undone; unpausing undoes it with one write', async (t) => {
  const w = new FastWorld();
  w.apply(apiDefinition('a').build());
  await w.run();
  setPaused(w, 'a', true);
  ce(w).tamper('api', defaultIdOf('a'), (o) => {
    (o.proxy as JsonObject).target_url = 'http://elsewhere.example';
  });
  w.resetCounts();
  const report = await w.run();
  t.match(reported(report, 'a'), {
    action: 'UPDATE',
    reason: 'drifted on gateway',
    result: 'paused',
    error: /paused by the annotation tyk.tyk.io\/reconcile-paused; held: UPDATE \(drifted on gateway\)/,
  });
  t.same(report.gateway, { writes: 0, reloads: 0 });
  t.match(ce(w).loaded('api').get(defaultIdOf('a')), { proxy: { target_url: 'http://elsewhere.example' } }, 'the drift stays');
  t.match(conditionOf(w.api('a'), 'Synced'), { status: 'False', reason: 'ReconcilePaused' });
  t.match(conditionOf(w.api('a'), 'Ready'), { status: 'False', reason: 'Drifted', message: 'drifted on gateway; held while paused' });
  t.match(eventsWith(w, 'a', 'ReconcilePaused'), [{ type: 'Normal', message: /held: UPDATE/ }]);
  t.match(await w.record(API_DEFINITION, 'a'), { result: 'synced' }, 'the record is not touched');

  w.resetCounts();
  await w.run();
  t.equal(w.kube.count('patchStatus'), 0, 'still paused: said once');
  t.equal(w.gateway.count('upsert'), 0);

  setPaused(w, 'a', false);
  const resumed = await w.run();
  t.match(reported(resumed, 'a'), { action: 'UPDATE', reason: 'drifted on gateway', result: 'synced' });
  t.same(resumed.gateway, { writes: 1, reloads: 1 });
  t.match(conditionOf(w.api('a'), 'Synced'), { status: 'True', reason: 'ReconcileSuccess' });
});

t.test('pause: a new object is not created, a deleted one keeps its finalizer and its gateway API', async (t) => {
  const w = new FastWorld();
  w.apply(apiDefinition('new').paused().build());
  w.apply(apiDefinition('old').build());
  await w.run();
  t.match(reported(await w.run(), 'new'), { action: 'CREATE', result: 'paused' });
  t.equal(ce(w).loaded('api').has(defaultIdOf('new')), false, 'not created');
  t.notOk(w.api('new')?.metadata.finalizers, 'no finalizer added');

  setPaused(w, 'old', true);
  w.delete(API_DEFINITION, 'old');
  const report = await w.run();
  t.match(reported(report, 'old'), { action: 'DELETE', reason: 'deleted in cluster', result: 'paused' });
  t.ok(ce(w).loaded('api').has(defaultIdOf('old')), 'still on the gateway');
  t.same(w.api('old')?.metadata.finalizers, [FINALIZER], 'the finalizer stays');
  t.match(conditionOf(w.api('old'), 'Ready'), { status: 'False', reason: 'Deleting' });

  setPaused(w, 'old', false);
  t.match(reported(await w.run(), 'old'), { action: 'DELETE', result: 'deleted' });
  t.equal(w.api('old'), undefined, 'gone once resumed');
  t.equal(ce(w).loaded('api').has(defaultIdOf('old')), false);
});

t.test('pause: a paused object with nothing to do is quiet apart from its condition', async (t) => {
  const w = new FastWorld();
  w.apply(apiDefinition('a').build());
  await w.run();
  setPaused(w, 'a', true);
  const report = await w.run();
  t.match(reported(report, 'a'), { action: 'NOOP', result: 'paused', error: 'reconciliation paused by the annotation tyk.tyk.io/reconcile-paused' });
  t.same(eventsWith(w, 'a', 'ReconcilePaused'), [], 'no Event: nothing is held');
  t.match(conditionOf(w.api('a'), 'Synced'), { status: 'False', reason: 'ReconcilePaused' });
  t.match(conditionOf(w.api('a'), 'Ready'), { status: 'True', reason: 'Available' }, 'still served as the spec says');
});

t.test('pause works on policies too', async (t) => {
  const w = new FastWorld();
  w.apply(apiDefinition('a').build());
  w.apply(securityPolicy('p').granting('a').paused().build());
  const report = await w.run();
  t.match(reported(report, 'p', 'SecurityPolicy'), { action: 'CREATE', result: 'paused' });
  t.equal(ce(w).loaded('policy').size, 0);
  setPaused(w, 'p', false, SECURITY_POLICY);
  t.match(reported(await w.run(), 'p', 'SecurityPolicy'), { result: 'synced' });
});

async function withApis(n: number, max: number): Promise<FastWorld> {
  const w = new FastWorld({ settings: { maxDeletesPerRun: max } });
  for (let i = 0; i < n; i++) w.apply(apiDefinition(`api-${i}`).build());
  await w.run();
  return w;
}

t.test('MAX_DELETES_PER_RUN: a run over the limit deletes none, says so on each, and a later run proceeds', async (t) => {
  const w = await withApis(4, 3);
  for (let i = 0; i < 4; i++) w.delete(API_DEFINITION, `api-${i}`);
  const report = await w.run();
  for (let i = 0; i < 4; i++) {
    t.match(reported(report, `api-${i}`), { action: 'DELETE', result: 'held', error: /would delete 4 objects from the gateway, more than MAX_DELETES_PER_RUN=3/ });
  }
  t.same(report.gateway, { writes: 0, reloads: 0 });
  t.equal(ce(w).loaded('api').size, 4, 'nothing deleted');
  t.same(w.api('api-0')?.metadata.finalizers, [FINALIZER], 'finalizers kept');
  t.match(eventsWith(w, 'api-0', 'TooManyDeletions'), [{ type: 'Warning', message: /MAX_DELETES_PER_RUN=3/ }]);
  t.match(
    w.log.entries.filter((e) => e.msg === 'deletions held by MAX_DELETES_PER_RUN'),
    [{ level: 'warn', kind: 'ApiDefinition', deletions: 4, max: 3 }],
  );

  // fewer pending (one completed by hand), or a raised limit: it proceeds
  w.settings.maxDeletesPerRun = 4;
  const next = await w.run();
  t.equal(next.counts.deleted, 4);
  t.equal(ce(w).loaded('api').size, 0);
});

t.test('MAX_DELETES_PER_RUN: at the limit is allowed; 0 means no limit; deletions the gateway no longer has are not counted', async (t) => {
  const w = await withApis(3, 3);
  for (let i = 0; i < 3; i++) w.delete(API_DEFINITION, `api-${i}`);
  t.equal((await w.run()).counts.deleted, 3, 'three of three');

  const off = await withApis(5, 0);
  for (let i = 0; i < 5; i++) off.delete(API_DEFINITION, `api-${i}`);
  t.equal((await off.run()).counts.deleted, 5, '0 turns it off');

  const lost = await withApis(5, 2);
  ce(lost).restart(); // the gateway lost them all: removing the resources sends no DELETE
  for (let i = 0; i < 5; i++) lost.delete(API_DEFINITION, `api-${i}`);
  const report = await lost.run();
  t.equal(report.counts.deleted, 5, 'nothing to delete on the gateway, nothing held');
  t.equal(lost.gateway.count('remove'), 0);
});

t.test('MAX_DELETES_PER_RUN counts the whole run: policies after APIs, against what is left', async (t) => {
  const w = new FastWorld({ settings: { maxDeletesPerRun: 2 } });
  for (const n of ['a', 'b']) w.apply(apiDefinition(n).build());
  for (const n of ['p', 'q']) w.apply(securityPolicy(n).build());
  await w.run();
  w.delete(API_DEFINITION, 'a');
  w.delete(API_DEFINITION, 'b');
  w.delete(SECURITY_POLICY, 'p');
  const report = await w.run();
  t.match(reported(report, 'a'), { result: 'deleted' });
  t.match(reported(report, 'b'), { result: 'deleted' });
  t.match(reported(report, 'p', 'SecurityPolicy'), { result: 'held', error: /would delete 3 objects/ });
  t.equal(ce(w).loaded('policy').size, 2);
  t.match(reported(await w.run(), 'p', 'SecurityPolicy'), { result: 'deleted' }, 'the next run has room');
});

t.test('MAX_DELETES_PER_RUN: deletions a phase held do not count against the phases after it', async (t) => {
  const w = new FastWorld({ settings: { maxDeletesPerRun: 2 } });
  for (const n of ['a', 'b', 'c']) w.apply(apiDefinition(n).build());
  w.apply(securityPolicy('p').build());
  await w.run();
  for (const n of ['a', 'b', 'c']) w.delete(API_DEFINITION, n);
  w.delete(SECURITY_POLICY, 'p');
  const report = await w.run();
  t.same(report.counts, { held: 3, deleted: 1 });
  t.match(reported(report, 'a'), { result: 'held', error: /would delete 3 objects/ });
  t.match(reported(report, 'p', 'SecurityPolicy'), { action: 'DELETE', result: 'deleted' }, 'one of two: none were let through before it');
  t.equal(ce(w).loaded('api').size, 3);
  t.equal(ce(w).loaded('policy').size, 0);
});

t.test('a dry run shows what the limit and the pause would hold', async (t) => {
  const w = await withApis(3, 1);
  w.delete(API_DEFINITION, 'api-0');
  w.delete(API_DEFINITION, 'api-1');
  setPaused(w, 'api-2', true);
  w.updateSpec(API_DEFINITION, 'api-2', (s) => ({ ...s, active: false }));
  const report = await w.run({ dryRun: true });
  t.match(reported(report, 'api-0'), { action: 'DELETE', result: 'held' });
  t.match(reported(report, 'api-2'), { action: 'UPDATE', result: 'paused' });
  t.equal(ce(w).loaded('api').size, 3);
});
