/**
 * applyHeld (lib/engine/held-finalizers.ts) on a made-up held kind in MemoryKube: what each
 * decision writes (the finalizer only when asked, the status patch, the finalizer's removal);
 * a dry run writes nothing, reports writers planned and a held deletion still with its error
 * but no Event; a deletion not ours is skipped; a failed write is reported failed with a Warning
 * SyncFailed, never thrown; an Event that cannot be recorded is logged, not thrown.
 */
import t from 'tap';
import { applyHeld, decideHeld, type HeldDecision } from '../../lib/engine/held-finalizers.js';
import { type HeldKind, registryOf } from '../../lib/engine/kind.js';
import { RunContext } from '../../lib/engine/run-context.js';
import type { KubeObject } from '../../lib/kube/types.js';
import { kubeFailure } from '../memory/kube.js';
import { FastWorld } from './world.js';

const GADGET: HeldKind = { kind: 'Gadget', group: 'example.io', version: 'v1', plural: 'gadgets', finalizer: 'finalizers.example.io/gadget' };

function world(): FastWorld {
  return new FastWorld({ kinds: registryOf([{ held: [GADGET], phases: [] }]) });
}

function contextOf(w: FastWorld, dryRun = false): RunContext {
  return new RunContext(w.deps, { trigger: 'schedule', scope: { all: true }, ...(dryRun ? { dryRun } : {}) });
}

function gadget(w: FastWorld, extra: { finalizers?: string[]; status?: Record<string, unknown>; deleting?: boolean } = {}): KubeObject {
  const put = w.put({
    apiVersion: 'example.io/v1',
    kind: 'Gadget',
    metadata: { name: 'g', namespace: 'default', ...(extra.finalizers ? { finalizers: extra.finalizers } : {}) },
    spec: {},
    ...(extra.status ? { status: extra.status } : {}),
  });
  if (!extra.deleting) return put;
  const marked = w.delete(GADGET, 'g');
  if (!marked) throw new Error('gone');
  return marked;
}

function events(w: FastWorld): { type: string; reason: string; message: string }[] {
  return w.kube.eventsAbout('Gadget', 'g').map((e) => ({ type: e.type, reason: e.reason, message: e.message }));
}

const OURS = [GADGET.finalizer];

t.test('each decision writes what it says, no more', async (t) => {
  t.test('a finalizer missing: added, with the status that differs', async (t) => {
    const w = world();
    const obj = gadget(w);
    const input = { kind: GADGET, obj, users: [], status: { linked: 'A' } };
    const r = await applyHeld(contextOf(w), input, decideHeld(input));
    t.same(r, { kind: 'Gadget', namespace: 'default', name: 'g', id: '', action: 'UPDATE', reason: 'finalizer missing', result: 'synced' });
    t.same(w.get(GADGET, 'g')?.metadata.finalizers, OURS);
    t.same(w.get(GADGET, 'g')?.status, { linked: 'A' });
  });

  t.test('only the status changed: patched, no finalizer call', async (t) => {
    const w = world();
    const obj = gadget(w, { finalizers: OURS, status: { linked: 'A' } });
    const input = { kind: GADGET, obj, users: [], status: { linked: 'B' } };
    const r = await applyHeld(contextOf(w), input, decideHeld(input));
    t.match(r, { action: 'UPDATE', reason: 'status changed', result: 'synced' });
    t.equal(w.kube.count('addFinalizer'), 0);
    t.same(w.get(GADGET, 'g')?.status, { linked: 'B' });
  });

  t.test('nothing changed: unchanged, nothing written', async (t) => {
    const w = world();
    const obj = gadget(w, { finalizers: OURS });
    const input = { kind: GADGET, obj, users: [] };
    const r = await applyHeld(contextOf(w), input, decideHeld(input));
    t.match(r, { action: 'NOOP', reason: 'unchanged', result: 'unchanged' });
    t.notOk('error' in r);
    t.equal(w.kube.count('addFinalizer') + w.kube.count('patchStatus'), 0);
  });

  t.test('a deletion not ours: skipped', async (t) => {
    const w = world();
    const obj = gadget(w, { finalizers: ['someone.else/theirs'], deleting: true });
    const input = { kind: GADGET, obj, users: [] };
    const r = await applyHeld(contextOf(w), input, decideHeld(input));
    t.match(r, { action: 'NOOP', reason: 'not managed', result: 'skipped' });
    t.equal(w.kube.count('removeFinalizer'), 0);
  });

  t.test('used by nothing while deleted: the finalizer removed, the object gone', async (t) => {
    const w = world();
    const obj = gadget(w, { finalizers: OURS, deleting: true });
    const input = { kind: GADGET, obj, users: [] };
    const r = await applyHeld(contextOf(w), input, decideHeld(input));
    t.match(r, { action: 'DELETE', result: 'deleted' });
    t.equal(w.get(GADGET, 'g'), undefined);
  });

  t.test('in use while deleted: held, with a Warning', async (t) => {
    const w = world();
    const obj = gadget(w, { finalizers: OURS, deleting: true });
    const input = { kind: GADGET, obj, users: ['Widget default/w'] };
    const r = await applyHeld(contextOf(w), input, decideHeld(input));
    t.match(r, { action: 'WAIT', result: 'waiting', error: 'deletion held: still used by Widget default/w' });
    t.same(events(w), [{ type: 'Warning', reason: 'DeletionHeld', message: 'deletion held: still used by Widget default/w' }]);
    t.ok(w.get(GADGET, 'g'), 'kept');
  });
  t.end();
});

t.test('a dry run writes nothing: writers planned, a held deletion still reported, without an Event', async (t) => {
  const w = world();
  const live = gadget(w);
  const upsert = { kind: GADGET, obj: live, users: [], status: { linked: 'A' } };
  t.match(await applyHeld(contextOf(w, true), upsert, decideHeld(upsert)), { action: 'UPDATE', result: 'planned' });
  t.same(w.get(GADGET, 'g')?.metadata.finalizers, undefined);
  t.same(w.get(GADGET, 'g')?.status, undefined);

  const w2 = world();
  const deleting = gadget(w2, { finalizers: OURS, deleting: true });
  const remove = { kind: GADGET, obj: deleting, users: [] };
  t.match(await applyHeld(contextOf(w2, true), remove, decideHeld(remove)), { action: 'DELETE', result: 'planned' });
  t.ok(w2.get(GADGET, 'g'), 'still there');

  const held = { kind: GADGET, obj: deleting, users: null };
  t.match(await applyHeld(contextOf(w2, true), held, decideHeld(held)), { action: 'WAIT', result: 'waiting', error: 'deletion held: what uses it could not be read' });
  t.same(events(w2), [], 'no Event');
  t.equal(w.kube.count('addFinalizer') + w.kube.count('patchStatus') + w2.kube.count('removeFinalizer') + w2.kube.count('recordEvent'), 0);
});

t.test('a failed write is reported failed with a Warning SyncFailed, not thrown', async (t) => {
  t.test('the status patch', async (t) => {
    const w = world();
    const obj = gadget(w);
    w.kube.inject({ op: 'patchStatus', error: () => kubeFailure({ status: 500 }, 'patch gadgets "g"') });
    const input = { kind: GADGET, obj, users: [], status: { linked: 'A' } };
    const r = await applyHeld(contextOf(w), input, decideHeld(input));
    t.match(r, { action: 'UPDATE', result: 'failed', error: 'patch gadgets "g": 500 injected fault', code: String });
    t.same(events(w), [{ type: 'Warning', reason: 'SyncFailed', message: 'patch gadgets "g": 500 injected fault' }]);
    t.match(
      w.log.entries.filter((e) => e.msg === 'held object not updated'),
      [{ level: 'warn', key: 'Gadget/default/g' }],
    );
  });

  t.test("the finalizer's removal", async (t) => {
    const w = world();
    const obj = gadget(w, { finalizers: OURS, deleting: true });
    w.kube.inject({ op: 'removeFinalizer', error: () => kubeFailure({ status: 500 }, 'patch gadgets "g"') });
    const input = { kind: GADGET, obj, users: [] };
    t.match(await applyHeld(contextOf(w), input, decideHeld(input)), { action: 'DELETE', result: 'failed', error: /500/ });
    t.ok(w.get(GADGET, 'g'));
    t.match(events(w), [{ reason: 'SyncFailed' }]);
  });

  t.test('a decision of no known variant', async (t) => {
    const w = world();
    const obj = gadget(w);
    const bogus = { what: 'bogus', action: 'UPDATE', reason: 'spec changed' } as unknown as HeldDecision;
    t.match(await applyHeld(contextOf(w), { kind: GADGET, obj, users: [] }, bogus), { result: 'failed', error: 'internal: a decision of no known variant' });
    t.match(events(w), [{ reason: 'SyncFailed' }]);
  });
  t.end();
});

t.test('an Event that cannot be recorded is logged, not thrown', async (t) => {
  const w = world();
  const obj = gadget(w);
  w.kube.inject({ op: 'patchStatus', error: () => kubeFailure({ status: 500 }, 'patch gadgets "g"') });
  w.kube.inject({ op: 'recordEvent', times: Infinity, error: () => kubeFailure({ status: 403 }, 'create events') });
  const input = { kind: GADGET, obj, users: [], status: { linked: 'A' } };
  t.match(await applyHeld(contextOf(w), input, decideHeld(input)), { result: 'failed' });

  const w2 = world();
  const deleting = gadget(w2, { finalizers: OURS, deleting: true });
  w2.kube.inject({ op: 'recordEvent', times: Infinity, error: () => kubeFailure({ status: 403 }, 'create events') });
  const held = { kind: GADGET, obj: deleting, users: ['Widget default/w'] };
  t.match(await applyHeld(contextOf(w2), held, decideHeld(held)), { result: 'waiting' });

  for (const [world, reason] of [
    [w, 'SyncFailed'],
    [w2, 'DeletionHeld'],
  ] as const) {
    t.same(events(world), []);
    t.match(
      world.log.entries.filter((e) => e.msg === 'event not recorded'),
      [{ level: 'warn', key: 'Gadget/default/g', reason, err: 'create events: 403 injected fault' }],
    );
  }
});
