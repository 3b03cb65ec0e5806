/**
 * What a Run looks at and how it is cut up (lib/engine/run.ts): scopes per kind, policies
 * that follow an ApiDefinition into the policy phase, guesses (optional refs) that are not
 * reported, dry runs, and writes in chunks under a deadline; a process that stops (RunDeps.stop)
 * starts no further write: the chunks not started are deferred without a lock, the writes of a
 * chunk under way not yet sent are deferred under theirs; so are they when the store is lost.
 */
import t from 'tap';
import { API_DEFINITION } from '../../lib/kinds/api-definition/kind.js';
import { SECURITY_POLICY } from '../../lib/kinds/security-policy/kind.js';
import type { LockOutcome } from '../../lib/store/types.js';
import { apiDefinition, operatorContext, securityPolicy } from '../fixtures/builders.js';
import { DelegatingStore } from '../fixtures/delegating-store.js';
import { FastWorld, reported } from './world.js';

const names = (r: { objects: { kind: string; namespace: string; name: string }[] }) => r.objects.map((o) => `${o.kind}/${o.namespace}/${o.name}`);

t.test('a run for one ApiDefinition looks at it and at the policies that reference it, nothing else', async (t) => {
  const w = new FastWorld();
  w.apply(apiDefinition('a').build());
  w.apply(apiDefinition('b').build());
  w.apply(securityPolicy('p').granting('a').build());
  w.apply(securityPolicy('q').granting('b').build());
  const report = await w.runFor(API_DEFINITION, 'a');
  t.same(names(report), ['ApiDefinition/default/a', 'SecurityPolicy/default/p']);
  t.match(reported(report, 'p', 'SecurityPolicy'), { action: 'CREATE', result: 'synced' });
  t.same(report.gateway, { writes: 2, reloads: 2 });
  t.equal(w.kube.count('list', 'ApiDefinition'), 0, 'no ApiDefinition listed');
});

t.test('a policy follows an ApiDefinition it references among others; without any ApiDefinition looked at, none follows', async (t) => {
  const w = new FastWorld();
  for (const n of ['a', 'b']) w.apply(apiDefinition(n).build());
  w.apply(securityPolicy('both').granting('a', 'b').build());
  await w.run();
  const report = await w.runFor(API_DEFINITION, 'a');
  t.same(names(report), ['ApiDefinition/default/a', 'SecurityPolicy/default/both'], 'one of its APIs is enough');
  const none = await w.runFor(API_DEFINITION, 'gone');
  t.same(names(none), ['ApiDefinition/default/gone'], 'an API that does not exist is looked at; no policy follows it');
});

t.test('a run for one SecurityPolicy looks at no ApiDefinition', async (t) => {
  const w = new FastWorld();
  w.apply(apiDefinition('a').build());
  w.apply(securityPolicy('p').build());
  const report = await w.runFor(SECURITY_POLICY, 'p');
  t.same(names(report), ['SecurityPolicy/default/p']);
  t.equal(w.gateway.count('upsert', 'api'), 0);
});

t.test('a run over a namespace looks at that namespace only, both kinds', async (t) => {
  const w = new FastWorld();
  w.apply(apiDefinition('a').inNamespace('x').build());
  w.apply(securityPolicy('p').inNamespace('x').build());
  w.apply(apiDefinition('b').build());
  const report = await w.run({ trigger: 'resync', scope: { namespaces: ['x'] } });
  t.same(names(report), ['ApiDefinition/x/a', 'SecurityPolicy/x/p']);
});

t.test('a run with an empty scope looks at nothing and reads nothing but the policies', async (t) => {
  const w = new FastWorld();
  w.apply(apiDefinition('a').build());
  const report = await w.run({ scope: {} });
  t.same(report.objects, []);
  t.equal(w.kube.count('get', 'ApiDefinition') + w.kube.count('list', 'ApiDefinition'), 0);
  t.equal(w.gateway.count('get') + w.gateway.count('list'), 0);
});

t.test('a resync by name without a kind: the kind that exists is reported, the guess that does not is not', async (t) => {
  const w = new FastWorld();
  w.apply(apiDefinition('a').build());
  const refs = [
    { kind: API_DEFINITION, namespace: 'default', name: 'a', optional: true },
    { kind: SECURITY_POLICY, namespace: 'default', name: 'a', optional: true },
  ];
  const report = await w.run({ trigger: 'resync', scope: { refs } });
  t.same(names(report), ['ApiDefinition/default/a']);
  t.match(reported(report, 'a'), { result: 'synced' });
  const dry = await w.run({ trigger: 'resync', dryRun: true, scope: { refs: [{ ...refs[0]!, name: 'nothing' }, refs[1]!] } });
  t.same(dry.objects, [], 'nor in a dry run');
  const named = await w.run({ trigger: 'resync', scope: { refs: [{ kind: SECURITY_POLICY, namespace: 'default', name: 'a' }] } });
  t.match(reported(named, 'a', 'SecurityPolicy'), { action: 'NOOP', result: 'skipped' }, 'a ref given with its kind is reported even when absent');
  w.apply(apiDefinition('bad').unsupported().build());
  const quiet = await w.run({ trigger: 'resync', scope: { refs: [{ kind: API_DEFINITION, namespace: 'default', name: 'bad', optional: true }] } });
  t.match(reported(quiet, 'bad'), { action: 'NOOP', result: 'invalid' }, 'a guess that exists is reported when nothing is written for it, too');
});

t.test('a guess whose object is gone but has a record is reported: its deletion is carried out', async (t) => {
  const w = new FastWorld();
  w.apply(securityPolicy('a').build());
  await w.run();
  w.remove(SECURITY_POLICY, 'a');
  const report = await w.run({ trigger: 'resync', scope: { refs: [{ kind: SECURITY_POLICY, namespace: 'default', name: 'a', optional: true }] } });
  t.match(reported(report, 'a', 'SecurityPolicy'), { action: 'DELETE', result: 'deleted' });
});

t.test('a dry run: planned, waiting or failed, as decided; nothing written, nothing patched', async (t) => {
  const w = new FastWorld();
  w.apply(apiDefinition('a').build());
  w.apply(securityPolicy('p').granting('a').build());
  await w.run();
  w.apply(apiDefinition('b').build());
  w.apply(operatorContext('ctx').ce('http://nowhere:8080', 's').build());
  w.apply(apiDefinition('far').inContext('ctx').build());
  w.delete(API_DEFINITION, 'a');
  w.resetCounts();
  const dry = await w.run({ dryRun: true });
  t.equal(dry.dryRun, true);
  t.match(reported(dry, 'a'), { action: 'WAIT', reason: 'referenced by policies', result: 'waiting' });
  t.match(reported(dry, 'b'), { action: 'CREATE', result: 'planned' });
  t.match(reported(dry, 'far'), { result: 'failed' });
  t.match(reported(dry, 'p', 'SecurityPolicy'), { action: 'WAIT', result: 'waiting' });
  t.same(dry.gateway, { writes: 1, reloads: 1 }, 'what the planned write would cost');
  t.equal(w.gateway.writes(), 0);
  t.equal(w.kube.count('patchStatus') + w.kube.count('patchFinalizers') + w.kube.count('createEvent'), 0);
  t.equal(await w.record(API_DEFINITION, 'b'), null, 'no record');
  t.equal(await w.locked('ApiDefinition/default/b'), false);
});

t.test('a dry run reports an object with nothing to do as planned, and an invalid one as invalid with why, as the run then records it', async (t) => {
  const w = new FastWorld();
  w.apply(apiDefinition('quiet').build());
  await w.run();
  w.apply(apiDefinition('bad').unsupported().build());
  w.resetCounts();
  const dry = await w.run({ dryRun: true });
  t.match(reported(dry, 'quiet'), { action: 'NOOP', reason: 'unchanged', result: 'planned' });
  t.match(reported(dry, 'bad'), { action: 'NOOP', result: 'invalid', error: /^unsupported: graphql\.graph_ref/ });
  t.same(dry.counts, { planned: 1, invalid: 1 });
  t.equal(w.gateway.writes(), 0, 'nothing written');
  t.match(reported(await w.run(), 'bad'), { result: 'invalid', error: reported(dry, 'bad').error }, 'what the run itself records');
});

t.test('without a deadline every write goes in one batch: one reload', async (t) => {
  const w = new FastWorld({ settings: { deadlineChunk: 1 } });
  for (const n of ['a', 'b', 'c']) w.apply(apiDefinition(n).build());
  const report = await w.run();
  t.same(report.gateway, { writes: 3, reloads: 1 });
  t.same(report.counts, { synced: 3 });
});

t.test('with a deadline, writes go in chunks of deadlineChunk, each settled on its own', async (t) => {
  const w = new FastWorld({ settings: { deadlineChunk: 2 } });
  for (const n of ['a', 'b', 'c']) w.apply(apiDefinition(n).build());
  const report = await w.run({ deadline: w.clock.now() + 10_000 });
  t.same(report.counts, { synced: 3 });
  t.same(report.gateway, { writes: 3, reloads: 2 }, 'two chunks, a reload each');
  t.equal(report.durationMs, 500);
});

t.test('a chunk not started by the deadline is deferred, out of time, unlocked and untouched', async (t) => {
  const w = new FastWorld({ settings: { deadlineChunk: 1 } });
  for (const n of ['a', 'b', 'c']) w.apply(apiDefinition(n).build());
  // the first chunk's settle wait ends exactly at the deadline
  const report = await w.run({ deadline: w.clock.now() + 250 });
  t.match(reported(report, 'a'), { action: 'CREATE', result: 'synced' });
  for (const n of ['b', 'c']) {
    t.match(reported(report, n), { action: 'CREATE', reason: 'out of time', result: 'deferred' });
    t.equal(await w.locked(`ApiDefinition/default/${n}`), false);
    t.equal(await w.record(API_DEFINITION, n), null);
  }
  t.same(report.counts, { synced: 1, deferred: 2 });
  t.same(report.gateway, { writes: 1, reloads: 1 });
  const next = await w.run();
  t.same(next.counts, { synced: 2, unchanged: 1 }, 'the next run takes them up');
});

/** A store that notes the keys it is asked to lock, and can say it is not reachable (its connection lost). */
class LockLog extends DelegatingStore {
  readonly locked: string[] = [];
  lost = false;
  override reachable(): boolean {
    return !this.lost && super.reachable();
  }
  override lock(key: string, token: string, ttlMs: number): Promise<LockOutcome> {
    this.locked.push(key);
    return super.lock(key, token, ttlMs);
  }
}

/** A world of three new ApiDefinitions a, b, c, a stop signal that is not set yet, and the keys locked. */
function stoppable(settings: Partial<FastWorld['settings']> = {}): { w: FastWorld; stop: { deadline: number | undefined }; store: LockLog } {
  let store: LockLog | undefined;
  const w = new FastWorld({
    settings,
    store: (inner) => {
      store = new LockLog(inner);
      return store;
    },
  });
  if (!store) throw new Error('no store');
  for (const n of ['a', 'b', 'c']) w.apply(apiDefinition(n).build());
  const stop: { deadline: number | undefined } = { deadline: undefined };
  w.stop = stop;
  return { w, stop, store };
}

t.test('a process that stops between chunks: the chunks not started are deferred, shutting down, and take no lock', async (t) => {
  const { w, stop, store } = stoppable({ deadlineChunk: 1 });
  // SIGTERM while the first chunk's write is in flight; the process has 30 s left
  w.gateway.inject({
    op: 'upsert',
    hook: () => {
      stop.deadline = w.clock.now() + 30_000;
    },
  });
  const report = await w.run({ deadline: w.clock.now() + 60_000 });
  t.match(reported(report, 'a'), { action: 'CREATE', result: 'synced' }, 'the write under way settles and is recorded');
  for (const n of ['b', 'c']) {
    t.match(reported(report, n), { action: 'CREATE', reason: 'shutting down', result: 'deferred' });
    t.equal(await w.record(API_DEFINITION, n), null);
  }
  t.same(store.locked, ['ApiDefinition/default/a'], 'no lock asked for the chunks not started');
  t.same(report.gateway, { writes: 1, reloads: 1 });
});

t.test('a process already stopping, past its deadline, defers every write as shutting down (not out of time)', async (t) => {
  const { w, stop, store } = stoppable();
  stop.deadline = w.clock.now();
  const report = await w.run();
  t.same(report.counts, { deferred: 3 });
  for (const n of ['a', 'b', 'c']) t.match(reported(report, n), { reason: 'shutting down', result: 'deferred' });
  t.same(store.locked, []);
  t.equal(w.gateway.writes(), 0);

  w.stop = undefined;
  t.same((await w.run()).counts, { synced: 3 }, 'the next process takes them up');
});

t.test('a stop during a chunk: its writes not yet sent are deferred under their locks, and the locks given back', async (t) => {
  const { w, stop, store } = stoppable({ concurrency: 1 });
  w.gateway.inject({
    op: 'upsert',
    hook: () => {
      stop.deadline = w.clock.now() + 30_000;
    },
  });
  const report = await w.run();
  t.same(report.counts, { synced: 1, deferred: 2 });
  const deferred = report.objects.filter((o) => o.result === 'deferred');
  t.match(deferred, [{ reason: 'shutting down' }, { reason: 'shutting down' }]);
  t.equal(store.locked.length, 3, 'all three were locked in one batch');
  for (const o of deferred) {
    t.equal(await w.locked(`ApiDefinition/default/${o.name}`), false, `${o.name}: its lock given back`);
    t.equal(await w.record(API_DEFINITION, o.name), null, `${o.name}: no record`);
  }
  t.equal(w.gateway.count('upsert'), 1);
});

t.test('the store lost during a chunk: its writes not yet sent are deferred (store unavailable), nothing more is written', async (t) => {
  const { w, store } = stoppable({ concurrency: 1 });
  // the connection drops while the first write is in flight (it is back for the records by the time they are saved)
  w.gateway.inject({
    op: 'upsert',
    hook: () => {
      store.lost = true;
    },
  });
  const report = await w.run();
  t.same(report.counts, { synced: 1, deferred: 2 });
  t.match(
    report.objects.filter((o) => o.result === 'deferred'),
    [
      { action: 'CREATE', reason: 'store unavailable' },
      { action: 'CREATE', reason: 'store unavailable' },
    ],
  );
  t.equal(w.gateway.count('upsert'), 1, 'no write after the loss');
  store.lost = false;
  t.same((await w.run()).counts, { synced: 2, unchanged: 1 }, 'the next run takes them up');
});
