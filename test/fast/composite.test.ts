/**
 * The engine's composite reconciler (lib/engine/composite.ts) through whole Runs, with a made-up
 * composite kind (test/fixtures/kinds/composite-example.ts: a Bundle whose names become child
 * ApiDefinitions) before the ApiDefinition phase. Pins: a failed read reported and nothing
 * written; a decision that throws is Invalid (bounded); ignore is not reported; quiet settles (a
 * record saved once, not again while unchanged, deleted when the kind says so); dry runs plan;
 * a stopping process and a lock held elsewhere defer; under the lock the object is read and
 * decided again; the finalizer comes first and its failure writes nothing else; a create
 * refused 409 is the kind's own or a taken name; deletes carry their uid; the finalizer goes only
 * when every delete succeeded; what is written or let go is followed by the ApiDefinition phase.
 */
import t from 'tap';
import type { ChildStep, CompositeDecision } from '../../lib/engine/composite.js';
import { hashOf } from '../../lib/engine/hash.js';
import { runReconcile } from '../../lib/engine/run.js';
import type { RunReport, RunRequest } from '../../lib/engine/types.js';
import { API_DEFINITION } from '../../lib/kinds/api-definition/kind.js';
import { StoreUnavailableError } from '../../lib/platform/errors.js';
import type { MemoryStore } from '../../lib/store/memory.js';
import type { SyncRecord } from '../../lib/store/types.js';
import { DelegatingStore } from '../fixtures/delegating-store.js';
import { BUNDLE, BUNDLE_LABEL, type BundleBecause, type BundleEntry, type BundleKind, bundle, bundleKind, childOf } from '../fixtures/kinds/composite-example.js';
import { kubeFailure } from '../memory/kube.js';
import { FastWorld, reported } from './world.js';

const KEY = 'Bundle/default/b';

/** A store that counts the writes of Bundles' records. */
class CountingStore extends DelegatingStore {
  puts = 0;
  deletes = 0;
  override putRecord(record: SyncRecord): Promise<boolean> {
    if (record.key.startsWith('Bundle/')) this.puts += 1;
    return super.putRecord(record);
  }
  override deleteRecord(key: string): Promise<void> {
    if (key.startsWith('Bundle/')) this.deletes += 1;
    return super.deleteRecord(key);
  }
}

interface Setup {
  w: FastWorld;
  b: BundleKind;
  store: CountingStore;
}

function setup(overrides: Parameters<typeof bundleKind>[0] = {}): Setup {
  const b = bundleKind(overrides);
  let counting: CountingStore | undefined;
  const w = new FastWorld({
    kinds: b.registry,
    store: (m: MemoryStore) => {
      counting = new CountingStore(m);
      return counting;
    },
  });
  if (!counting) throw new Error('no store');
  return { w, b, store: counting };
}

/** A run of the Bundle `b` alone (what a watch event about it starts). */
function runBundle(w: FastWorld, extra: Partial<RunRequest> = {}): Promise<RunReport> {
  return w.run({ trigger: 'watch', scope: { cluster: [{ kind: BUNDLE, namespace: 'default', name: 'b' }] }, ...extra });
}

/** A Bundle `b` already ours: its finalizer on, its record saved, its children there. */
async function settled(s: Setup, spec: Record<string, unknown>): Promise<void> {
  s.w.apply(bundle('b', spec));
  const first = await runBundle(s.w);
  if (reported(first, 'b', 'Bundle').result !== 'synced') throw new Error(`not settled: ${JSON.stringify(first.objects)}`);
  s.store.puts = 0;
  s.store.deletes = 0;
  s.w.resetCounts();
  s.b.told.length = 0;
}

function eventsOf(w: FastWorld): { type: string; reason: string; message: string }[] {
  return w.kube.eventsAbout('Bundle', 'b').map((e) => ({ type: e.type, reason: e.reason, message: e.message }));
}

function hasFinalizer(w: FastWorld): boolean {
  return (w.get(BUNDLE, 'b')?.metadata.finalizers ?? []).includes(BUNDLE.finalizer);
}

t.test('a Bundle makes its children, finalizer first, and the ApiDefinition phase sends them in the same run; unchanged, nothing is saved again', async (t) => {
  const s = setup();
  const { w, b, store } = s;
  w.apply(bundle('b', { names: ['a', 'c'] }));
  const made = await runBundle(w);
  t.match(reported(made, 'b', 'Bundle'), { action: 'CREATE', result: 'synced' });
  t.match(reported(made, 'b-a'), { action: 'CREATE', result: 'synced' }, 'a child written is followed by its phase');
  t.match(reported(made, 'b-c'), { action: 'CREATE', result: 'synced' });
  t.equal(made.gateway.writes, 2, 'both on the gateway');
  t.equal(w.api('b-a')?.metadata.labels?.[BUNDLE_LABEL], 'b');
  t.ok(hasFinalizer(w), 'its finalizer');
  const calls = w.kube.faults.calls.map((c) => `${c.op} ${c.kind}`);
  t.ok(calls.indexOf('addFinalizer Bundle') >= 0 && calls.indexOf('addFinalizer Bundle') < calls.indexOf('createObject ApiDefinition'), 'the finalizer before any child');
  t.match(await w.memoryStore.getRecords([KEY]), [{ key: KEY, result: 'synced', desiredHash: hashOf(['a', 'c']) }], 'its record');
  t.equal(store.puts, 1);
  t.same(eventsOf(w), [{ type: 'Normal', reason: 'Synced', message: 'create b-a, create b-c' }]);
  const written = b.told[0]?.outcome;
  if (written?.what !== 'written') throw new Error('not written');
  t.same(Object.keys(written).sort(), ['decision', 'results', 'what'], 'no finalizerError when none failed');
  t.match(written.results, [
    { ok: true, memory: { sent: String, seen: String } },
    { ok: true, memory: { sent: String, seen: String } },
  ]);
  t.notOk(await w.locked(KEY), 'its lock given back');

  w.resetCounts();
  w.clock.advance(60_000);
  const again = await runBundle(w);
  t.same(
    again.objects.map((o) => [o.kind, o.name, o.action, o.result]),
    [['Bundle', 'b', 'NOOP', 'unchanged']],
    'quiet: reported, nothing followed',
  );
  t.equal(store.puts, 1, 'the same record but for its time: not saved again');
  t.equal(w.kube.count('get', 'Bundle'), 1, 'a quiet decision is not read again under a lock');
  t.equal(w.kube.count('createObject') + w.kube.count('replaceObject') + w.kube.count('addFinalizer', 'Bundle'), 0);

  w.updateSpec(BUNDLE, 'b', (spec) => ({ ...spec, names: ['a'] }));
  const uid = w.api('b-c')?.metadata.uid;
  const fewer = await runBundle(w);
  t.match(reported(fewer, 'b', 'Bundle'), { action: 'UPDATE', result: 'synced' });
  t.equal(w.api('b-c'), undefined, 'the child no longer named is deleted');
  t.match(reported(fewer, 'b-c'), { action: 'DELETE', result: 'deleted' }, 'and followed: gone from the gateway too');
  t.match(await w.memoryStore.getRecords([KEY]), [{ desiredHash: hashOf(['a']) }], 'a changed record is saved');
  t.equal(store.puts, 2);
  t.equal(w.kube.count('addFinalizer', 'Bundle'), 0, 'the finalizer there: not added again');
  t.ok(uid);
});

t.test('a read that fails is reported failed and nothing is written; a dry run only reports it', async (t) => {
  const { w, store } = setup();
  w.apply(bundle('b', { names: ['a'] }));
  const fault = () => w.kube.inject({ op: 'list', kind: 'ApiDefinition', error: () => kubeFailure({ status: 500 }, 'list apidefinitions') });

  fault();
  const dry = await w.run({ dryRun: true });
  t.match(reported(dry, 'b', 'Bundle'), { action: 'NOOP', reason: 'read failed', result: 'failed', error: /list apidefinitions: 500/ });
  t.same(eventsOf(w), [], 'a dry run tells nothing');

  fault();
  const report = await w.run();
  t.match(reported(report, 'b', 'Bundle'), { action: 'NOOP', reason: 'read failed', result: 'failed', error: /list apidefinitions: 500/ });
  t.match(eventsOf(w), [{ type: 'Warning', reason: 'ReadFailed' }], 'told');
  t.equal(w.kube.count('addFinalizer', 'Bundle') + w.kube.count('createObject'), 0, 'nothing written');
  t.notOk(hasFinalizer(w));
  t.equal(store.puts, 0, 'no record');
});

t.test('a decision that throws is the Bundle Invalid, its message bounded; nothing written', async (t) => {
  const { w, store } = setup({
    decide: () => {
      throw new Error(`bad ${'x'.repeat(1_000)}`);
    },
  });
  w.apply(bundle('b', { names: ['a'] }));
  const report = await w.run();
  const r = reported(report, 'b', 'Bundle');
  t.match(r, { action: 'NOOP', reason: 'invalid spec', result: 'invalid', code: 'INVALID_SPEC', error: /^could not be decided: bad x+/ });
  t.equal(r.error?.length, 300, 'bounded');
  t.match(eventsOf(w), [{ type: 'Warning', reason: 'Invalid' }]);
  t.equal(w.kube.count('addFinalizer', 'Bundle') + w.kube.count('createObject'), 0);
  t.equal(store.puts, 0);
});

t.test('a Bundle that is not ours (ignore) is not reported, and nothing of it is written', async (t) => {
  const { w, store } = setup();
  w.apply(bundle('b', { managed: false, names: ['a'] }));
  const report = await w.run();
  t.same(report.objects, []);
  t.same(eventsOf(w), []);
  t.equal(store.puts, 0);
  t.notOk(hasFinalizer(w));
  t.equal(w.api('b-a'), undefined);
});

t.test('a dry run plans a writer and writes nothing; a quiet one is reported as it is', async (t) => {
  const s = setup();
  const { w, store } = s;
  w.apply(bundle('b', { names: ['a'] }));
  const dry = await w.run({ dryRun: true });
  t.match(reported(dry, 'b', 'Bundle'), { action: 'CREATE', result: 'planned' });
  t.equal(w.kube.count('addFinalizer', 'Bundle') + w.kube.count('createObject'), 0);
  t.notOk(hasFinalizer(w));
  t.equal(w.api('b-a'), undefined);
  t.equal(store.puts, 0);
  t.same(eventsOf(w), []);
  t.notOk(await w.locked(KEY));

  await settled(s, { names: ['a'] });
  const quiet = await runBundle(w, { dryRun: true });
  t.match(reported(quiet, 'b', 'Bundle'), { action: 'NOOP', result: 'unchanged' }, 'nothing to write: not planned');
});

t.test('a stopping process defers a writer, shutting down; nothing written', async (t) => {
  const { w, store } = setup();
  w.apply(bundle('b', { names: ['a'] }));
  const report = await runReconcile({ ...w.deps, stop: { deadline: w.clock.now() + 10_000 } }, { trigger: 'schedule', scope: { all: true } });
  t.match(reported(report, 'b', 'Bundle'), { action: 'CREATE', result: 'deferred', reason: 'shutting down' });
  t.equal(w.kube.count('addFinalizer', 'Bundle') + w.kube.count('createObject'), 0);
  t.equal(store.puts, 0);
});

t.test('a lock held elsewhere defers the Bundle to its holder, who runs it again', async (t) => {
  const { w, store } = setup();
  w.apply(bundle('b', { names: ['a'] }));
  t.equal(await w.memoryStore.lock(KEY, 'elsewhere', 60_000), 'acquired');
  const report = await w.run();
  t.match(reported(report, 'b', 'Bundle'), { action: 'CREATE', result: 'deferred' });
  t.equal(reported(report, 'b', 'Bundle').reason, 'spec changed');
  t.equal(w.kube.count('addFinalizer', 'Bundle') + w.kube.count('createObject'), 0);
  t.equal(w.kube.count('get', 'Bundle'), 1, 'not read again');
  t.equal(store.puts, 0);
  t.equal(await w.memoryStore.release(KEY, 'elsewhere'), 'dirty', 'marked dirty for the holder');
});

t.test('under the lock the Bundle is read and decided again', async (t) => {
  t.test('the read failing: reported failed, nothing written', async (t) => {
    const { w, store } = setup();
    w.apply(bundle('b', { names: ['a'] }));
    w.kube.inject({ op: 'get', kind: 'Bundle', afterCalls: 1, error: () => kubeFailure({ status: 500 }, 'get bundles "b"') });
    const report = await w.run();
    t.match(reported(report, 'b', 'Bundle'), { reason: 'read failed', result: 'failed', error: /get bundles "b": 500/ });
    t.equal(w.kube.count('addFinalizer', 'Bundle') + w.kube.count('createObject'), 0);
    t.equal(store.puts, 0);
    t.notOk(await w.locked(KEY));
  });

  t.test('deciding again throws: Invalid, nothing written', async (t) => {
    let n = 0;
    const decide = bundleKind().kind.decide;
    const { w } = setup({
      decide: (ctx, e) => {
        n += 1;
        if (n > 1) throw new Error('changed its mind');
        return decide(ctx, e);
      },
    });
    w.apply(bundle('b', { names: ['a'] }));
    const report = await w.run();
    t.match(reported(report, 'b', 'Bundle'), { result: 'invalid', error: 'could not be decided: changed its mind' });
    t.equal(w.kube.count('addFinalizer', 'Bundle') + w.kube.count('createObject'), 0);
  });

  t.test('what it is now is not ours: not reported, nothing written', async (t) => {
    const { w, store } = setup();
    w.apply(bundle('b', { names: ['a'] }));
    w.kube.inject({ op: 'get', kind: 'Bundle', afterCalls: 1, hook: () => void w.apply(bundle('b', { managed: false, names: ['a'] })) });
    const report = await w.run();
    t.same(report.objects, []);
    t.equal(w.kube.count('addFinalizer', 'Bundle') + w.kube.count('createObject'), 0);
    t.equal(store.puts, 0);
  });

  t.test('what it is now needs nothing written: quiet, its record saved', async (t) => {
    const { w, store } = setup();
    w.put({ ...bundle('b', { names: ['a'] }), metadata: { name: 'b', namespace: 'default', finalizers: [BUNDLE.finalizer] } });
    w.kube.inject({ op: 'get', kind: 'Bundle', afterCalls: 1, hook: () => void w.put(childOf('b', 'a')) });
    const report = await w.run();
    t.match(reported(report, 'b', 'Bundle'), { action: 'NOOP', result: 'unchanged' });
    t.equal(w.kube.count('createObject'), 0);
    t.equal(store.puts, 1);
    t.match(await w.memoryStore.getRecords([KEY]), [{ result: 'synced' }]);
  });
  t.end();
});

t.test('the finalizer is added first: when that fails, the Bundle is failed and nothing else is written', async (t) => {
  const { w, b, store } = setup();
  w.apply(bundle('b', { names: ['a'] }));
  w.kube.inject({ op: 'addFinalizer', error: () => kubeFailure({ status: 500 }, 'patch bundles "b"') });
  const report = await w.run();
  t.match(reported(report, 'b', 'Bundle'), { action: 'NOOP', reason: 'spec changed', result: 'failed', error: /patch bundles "b": 500/ });
  t.equal(w.kube.count('createObject'), 0);
  t.equal(w.api('b-a'), undefined);
  t.equal(store.puts, 0);
  t.match(b.told, [{ outcome: { what: 'failed', writing: true } }]);
  t.match(eventsOf(w), [{ type: 'Warning', reason: 'SyncFailed' }]);
});

t.test('a create refused 409: the child there is ours (done) or not (the taken error, not overwritten)', async (t) => {
  t.test('ours', async (t) => {
    const { w, b } = setup();
    w.apply(bundle('b', { names: ['a'] }));
    w.kube.inject({ op: 'createObject', hook: () => void w.put(childOf('b', 'a')) });
    const report = await w.run();
    t.match(reported(report, 'b', 'Bundle'), { result: 'synced' });
    t.equal(w.kube.count('createObject'), 1);
    const o = b.told[0]?.outcome;
    t.same(o?.what === 'written' ? o.results : undefined, [{ ok: true }], 'done, with no memory of a write');
  });

  t.test('not ours', async (t) => {
    const { w, b } = setup();
    w.apply(bundle('b', { names: ['a'] }));
    const other = childOf('other', 'x');
    w.kube.inject({ op: 'createObject', hook: () => void w.put({ ...other, metadata: { ...other.metadata, name: 'b-a' } }) });
    const report = await w.run();
    t.match(reported(report, 'b', 'Bundle'), { result: 'failed', error: "ApiDefinition default/b-a is not Bundle b's: not overwritten" });
    t.equal(w.api('b-a')?.metadata.labels?.[BUNDLE_LABEL], 'other', 'left as it is');
    const o = b.told[0]?.outcome;
    t.match(o?.what === 'written' ? o.results : undefined, [{ ok: false, taken: true }]);
  });

  t.test('not readable after the refusal: taken', async (t) => {
    const { w } = setup();
    w.apply(bundle('b', { names: ['a'] }));
    w.kube.inject({ op: 'createObject', hook: () => void w.put(childOf('b', 'a')) });
    w.kube.inject({ op: 'get', kind: 'ApiDefinition', error: () => kubeFailure({ status: 500 }, 'get apidefinitions "b-a"') });
    const report = await w.run();
    t.match(reported(report, 'b', 'Bundle'), { result: 'failed', error: /is not Bundle b's/ });
  });
  t.end();
});

t.test('a delete carries the uid it was decided on: a child made again since is not deleted', async (t) => {
  const s = setup();
  const { w, b } = s;
  await settled(s, { names: ['a'] });
  w.updateSpec(BUNDLE, 'b', (spec) => ({ ...spec, names: [] }));
  const before = w.api('b-a')?.metadata.uid;
  w.kube.inject({
    op: 'deleteObject',
    hook: () => {
      w.remove(API_DEFINITION, 'b-a');
      w.put(childOf('b', 'a'));
    },
  });
  const report = await runBundle(w);
  t.match(reported(report, 'b', 'Bundle'), { result: 'failed', error: /Precondition failed/ });
  const now = w.api('b-a');
  t.ok(now, 'the new one stays');
  t.not(now?.metadata.uid, before);
  const o = b.told[0]?.outcome;
  t.match(o?.what === 'written' ? o.decision.steps : undefined, [{ op: 'delete', name: 'b-a', uid: before }]);
});

t.test('a deleted Bundle takes its children; its finalizer goes only when every delete succeeded', async (t) => {
  const s = setup();
  const { w, b, store } = s;
  await settled(s, { names: ['a', 'c'] });
  w.delete(BUNDLE, 'b');
  w.kube.inject({ op: 'deleteObject', match: (c) => c.name === 'b-c', error: () => kubeFailure({ status: 500 }, 'delete apidefinitions "b-c"') });
  const partly = await runBundle(w);
  t.match(reported(partly, 'b', 'Bundle'), { action: 'DELETE', result: 'failed', error: /delete apidefinitions "b-c": 500/ });
  t.equal(w.api('b-a'), undefined, 'the one that could go went');
  t.ok(w.api('b-c'));
  t.ok(hasFinalizer(w), 'the finalizer stays');
  t.equal(w.kube.count('removeFinalizer', 'Bundle'), 0);
  t.equal(w.kube.count('addFinalizer', 'Bundle'), 0, 'a removal adds no finalizer');
  t.match(await w.memoryStore.getRecords([KEY]), [{ result: 'failed', failures: 1 }]);
  t.equal(store.deletes, 0);

  b.told.length = 0;
  const done = await runBundle(w);
  t.match(reported(done, 'b', 'Bundle'), { action: 'DELETE', result: 'deleted' });
  t.equal(w.get(BUNDLE, 'b'), undefined, 'its finalizer removed: gone');
  t.equal(w.api('b-c'), undefined);
  t.same(await w.memoryStore.getRecords([KEY]), [null], 'its record deleted');
  t.equal(store.deletes, 1);
  const o = b.told[0]?.outcome;
  t.same(o ? Object.keys(o).sort() : [], ['decision', 'results', 'what']);
});

t.test('a finalizer that cannot be removed is reported, the record kept failed', async (t) => {
  const s = setup();
  const { w, b } = s;
  await settled(s, { names: ['a'] });
  w.delete(BUNDLE, 'b');
  w.kube.inject({ op: 'removeFinalizer', error: () => kubeFailure({ status: 500 }, 'patch bundles "b"') });
  const report = await runBundle(w);
  t.match(reported(report, 'b', 'Bundle'), { action: 'DELETE', result: 'failed', error: /patch bundles "b": 500/ });
  t.equal(w.api('b-a'), undefined, 'its child went');
  t.ok(hasFinalizer(w));
  t.match(await w.memoryStore.getRecords([KEY]), [{ result: 'failed' }]);
  const o = b.told[0]?.outcome;
  t.ok(o?.what === 'written' && o.finalizerError !== undefined);
});

t.test('a Bundle never recorded that goes deletes no record', async (t) => {
  const { w, store } = setup();
  w.put({ ...bundle('b', { names: [] }), metadata: { name: 'b', namespace: 'default', finalizers: [BUNDLE.finalizer] } });
  w.delete(BUNDLE, 'b');
  const report = await runBundle(w);
  t.match(reported(report, 'b', 'Bundle'), { action: 'DELETE', result: 'deleted' });
  t.equal(w.get(BUNDLE, 'b'), undefined);
  t.equal(store.deletes, 0, 'nothing to delete');
});

t.test('a Bundle gone with its record: quiet, its record deleted', async (t) => {
  const s = setup();
  const { w, store } = s;
  await settled(s, { names: [] });
  w.remove(BUNDLE, 'b');
  const report = await runBundle(w);
  t.match(reported(report, 'b', 'Bundle'), { action: 'NOOP', reason: 'deleted in cluster', result: 'unchanged' });
  t.same(await w.memoryStore.getRecords([KEY]), [null]);
  t.equal(store.deletes, 1);
});

t.test('what the record let go is followed by the ApiDefinition phase; a child not written is not', async (t) => {
  const s = setup();
  const { w } = s;
  w.apply(childOf('base', 'one'));
  w.apply(childOf('base', 'two'));
  await settled(s, { names: [], base: 'base-one' });
  const same = await runBundle(w);
  t.same(
    same.objects.map((o) => o.name),
    ['b'],
  );
  w.updateSpec(BUNDLE, 'b', (spec) => ({ ...spec, base: 'base-two' }));
  const moved = await runBundle(w);
  t.same(moved.objects.map((o) => `${o.kind} ${o.name}`).sort(), ['ApiDefinition base-one', 'Bundle b'], 'the base let go is looked at');
});

t.test('a child deleted that never had a record is followed as a guess: not reported', async (t) => {
  const s = setup();
  const { w } = s;
  await settled(s, { names: [] });
  w.put(childOf('b', 'stray'));
  const report = await runBundle(w);
  t.match(reported(report, 'b', 'Bundle'), { result: 'synced' });
  t.equal(w.api('b-stray'), undefined);
  t.same(
    report.objects.map((o) => o.name),
    ['b'],
  );
});

t.test('a child whose write failed is not followed', async (t) => {
  const s = setup();
  const { w } = s;
  await settled(s, { names: ['c'] });
  w.put({ ...childOf('b', 'a'), spec: { name: 'old' } });
  w.updateSpec(BUNDLE, 'b', (spec) => ({ ...spec, names: ['a', 'c'] }));
  w.kube.inject({ op: 'replaceObject', error: () => kubeFailure({ status: 500 }, 'update apidefinitions "b-a"') });
  const report = await runBundle(w);
  t.match(reported(report, 'b', 'Bundle'), { result: 'failed', error: /update apidefinitions "b-a": 500/ });
  t.same(
    report.objects.map((o) => o.name),
    ['b'],
  );
});

t.test('a store that is gone is thrown, not a child failure', async (t) => {
  const { w } = setup();
  w.apply(bundle('b', { names: ['a'] }));
  w.kube.inject({ op: 'createObject', error: () => new StoreUnavailableError('store: gone') });
  await t.rejects(w.run(), StoreUnavailableError);
  t.notOk(await w.locked(KEY), 'its lock given back');
});

t.test('a decision or step of no known variant is an internal error', async (t) => {
  const bogus = { what: 'bogus' } as unknown as CompositeDecision<BundleBecause>;
  t.test('at the first decision', async (t) => {
    const { w } = setup({ decide: () => bogus });
    w.apply(bundle('b', { names: ['a'] }));
    await t.rejects(w.run(), /a decision of no known variant/);
    t.equal(w.kube.count('get', 'Bundle'), 1, 'thrown before any lock or second read');
  });
  t.test('under the lock', async (t) => {
    let n = 0;
    const write: CompositeDecision<BundleBecause> = { what: 'upsert', because: 'sync', steps: [], addFinalizer: false };
    const { w } = setup({ decide: () => (++n > 1 ? bogus : write) });
    w.apply(bundle('b', { names: ['a'] }));
    await t.rejects(w.run(), /a decision of no known variant/);
    t.notOk(await w.locked(KEY));
  });
  t.test('a step', async (t) => {
    const step = { op: 'move', name: 'b-a' } as unknown as ChildStep;
    const { w } = setup({ decide: (_ctx, _e: BundleEntry) => ({ what: 'upsert', because: 'sync', steps: [step], addFinalizer: false }) });
    w.apply(bundle('b', { names: ['a'] }));
    const report = await w.run();
    t.match(reported(report, 'b', 'Bundle'), { result: 'failed', error: /a decision of no known variant/ });
  });
  t.end();
});
