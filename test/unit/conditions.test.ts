/**
 * conditions.ts: Ready and Synced for every record result, the pause and deletion, transition
 * times kept unless a status changes, other condition types kept; and statusPatch with
 * conditions: a change of them alone patches, unless the CRD prunes them.
 */
import t from 'tap';
import { type ConditionFacts, conditionsFor, pausedMessage } from '../../lib/engine/conditions.js';
import { statusPatch } from '../../lib/engine/status.js';
import { API_DEFINITION } from '../../lib/kinds/api-definition/kind.js';
import type { SyncRecord } from '../../lib/store/types.js';
import { recordFor } from '../fixtures/builders.js';

const T0 = '2026-01-01T00:00:00.000Z';
const T1 = '2026-02-01T00:00:00.000Z';
const facts = (over: Partial<ConditionFacts> = {}): ConditionFacts => ({ generation: 4, deleting: false, ...over });
const rec = () => recordFor('ApiDefinition', 'a');

function verdicts(record: SyncRecord, f: ConditionFacts = facts()): Record<string, string> {
  const out: Record<string, string> = {};
  for (const c of conditionsFor(record, f, undefined, T1)) out[c.type] = `${c.status} ${c.reason}: ${c.message}`;
  return out;
}

t.test('each record result: Ready and Synced', async (t) => {
  t.same(verdicts(rec().synced('d', 'o').build()), {
    Ready: 'True Available: the gateway serves the current spec',
    Synced: 'True ReconcileSuccess: the last write was accepted by the gateway',
  });
  t.same(verdicts({ ...rec().pending().build(), error: 'not visible yet' }), {
    Ready: 'False NotVisible: not visible yet',
    Synced: 'True ReconcileSuccess: the last write was accepted by the gateway',
  });
  t.same(verdicts(rec().invalid('bad spec').build()), { Ready: 'False Invalid: bad spec', Synced: 'False Invalid: bad spec' });
  t.same(verdicts(rec().diverged('renamed').build()), { Ready: 'False Diverged: renamed', Synced: 'False Diverged: renamed' });
  t.same(verdicts(rec().failed('down').build()), { Ready: 'False NotSynced: down', Synced: 'False ReconcileError: down' });
  t.same(verdicts(rec().waiting('needs x').build()), { Ready: 'False Waiting: needs x', Synced: 'False Waiting: needs x' });
  t.same(verdicts({ ...rec().failed('x').build(), error: '' }), { Ready: 'False NotSynced: no message', Synced: 'False ReconcileError: no message' }, 'never an empty message');
});

t.test('being deleted: Ready=False Deleting; a held deletion says why on both', async (t) => {
  t.same(verdicts(rec().synced('d', 'o').build(), facts({ deleting: true })), {
    Ready: 'False Deleting: the resource is being deleted',
    Synced: 'True ReconcileSuccess: the last write was accepted by the gateway',
  });
  t.same(verdicts(rec().waiting('held by p').build(), facts({ deleting: true })), { Ready: 'False Deleting: held by p', Synced: 'False DeletionHeld: held by p' });
});

t.test('paused: Synced says so and names the write held; Ready says what is not undone', async (t) => {
  const synced = rec().synced('d', 'o').build();
  t.same(verdicts(synced, facts({ paused: { action: 'NOOP', reason: 'unchanged' } })), {
    Ready: 'True Available: the gateway serves the current spec',
    Synced: 'False ReconcilePaused: reconciliation paused by the annotation tyk.tyk.io/reconcile-paused',
  });
  t.same(verdicts(synced, facts({ paused: { action: 'UPDATE', reason: 'drifted on gateway' } })), {
    Ready: 'False Drifted: drifted on gateway; held while paused',
    Synced: 'False ReconcilePaused: reconciliation paused by the annotation tyk.tyk.io/reconcile-paused; held: UPDATE (drifted on gateway)',
  });
  t.match(verdicts(synced, facts({ paused: { action: 'CREATE', reason: 'missing on gateway' } })), { Ready: 'False Drifted: missing on gateway; held while paused' });
  t.match(verdicts(synced, facts({ paused: { action: 'UPDATE', reason: 'spec changed' } })), { Ready: 'False NotSynced: spec changed; held while paused' });
  t.match(verdicts(synced, facts({ deleting: true, paused: { action: 'DELETE', reason: 'deleted in cluster' } })), { Ready: 'False Deleting: deleted in cluster; held while paused' });
  t.match(verdicts(rec().waiting('needs x').build(), facts({ paused: { action: 'WAIT', reason: 'waiting for dependency' } })), { Ready: 'False Waiting: needs x' });
  t.equal(pausedMessage('WAIT', 'waiting for dependency'), 'reconciliation paused by the annotation tyk.tyk.io/reconcile-paused', 'a wait holds no write');
});

t.test('transition times move only when a status changes; observedGeneration is the one read', async (t) => {
  const synced = rec().synced('d', 'o').build();
  const before = [
    { type: 'Ready', status: 'True', reason: 'Available', message: 'old words', lastTransitionTime: T0, observedGeneration: 1 },
    { type: 'Synced', status: 'False', reason: 'ReconcileError', message: 'down', lastTransitionTime: T0, observedGeneration: 1 },
    { type: 'Other', status: 'Unknown', reason: 'Theirs', message: 'kept', lastTransitionTime: T0 },
    'not a condition',
    null,
    { status: 'True', reason: 'NoType' },
  ];
  t.same(conditionsFor(synced, facts(), before, T1), [
    { type: 'Ready', status: 'True', reason: 'Available', message: 'the gateway serves the current spec', lastTransitionTime: T0, observedGeneration: 4 },
    { type: 'Synced', status: 'True', reason: 'ReconcileSuccess', message: 'the last write was accepted by the gateway', lastTransitionTime: T1, observedGeneration: 4 },
    { type: 'Other', status: 'Unknown', reason: 'Theirs', message: 'kept', lastTransitionTime: T0 },
  ]);
  t.match(conditionsFor(synced, facts(), [{ type: 'Ready', status: 'True', lastTransitionTime: 7 }], T1), [{ type: 'Ready', lastTransitionTime: T1 }], 'a time that is not a string is replaced');
  t.match(conditionsFor(synced, facts(), { type: 'Ready' }, T1), [{ lastTransitionTime: T1 }, { lastTransitionTime: T1 }], 'not a list: none before');
});

t.test('statusPatch with conditions: patched when they change, silent when equal, never for them alone when pruned', async (t) => {
  const synced = rec().synced('d', 'o').build();
  const input = { facts: facts(), time: T1, pruned: false };
  const first = statusPatch(API_DEFINITION, undefined, synced, {}, synced.id, input);
  t.match(first, {
    api_id: synced.id,
    observedGeneration: 4,
    conditions: [
      { type: 'Ready', status: 'True' },
      { type: 'Synced', status: 'True' },
    ],
  });
  const current = { ...first, latestTransaction: { status: 'Successful', time: T0 } };
  t.equal(statusPatch(API_DEFINITION, current, synced, {}, synced.id, { ...input, time: '2027-01-01T00:00:00.000Z' }), undefined, 'the same conditions later: no patch');
  t.match(statusPatch(API_DEFINITION, current, synced, {}, synced.id, { ...input, facts: facts({ generation: 5 }) }), { observedGeneration: 5 }, 'a new generation is patched');
  t.match(statusPatch(API_DEFINITION, { ...current, observedGeneration: 3 }, synced, {}, synced.id, input), { observedGeneration: 4 }, 'status.observedGeneration alone differs');
  const prunedStatus = { api_id: synced.id, latestTransaction: { status: 'Successful', time: T0 } };
  t.equal(statusPatch(API_DEFINITION, prunedStatus, synced, {}, synced.id, { ...input, pruned: true }), undefined, 'pruned: no patch for conditions alone');
  t.match(statusPatch(API_DEFINITION, prunedStatus, synced, {}, synced.id, input), { conditions: [{ type: 'Ready' }, { type: 'Synced' }] }, 'kept: they are added');
  t.match(
    statusPatch(API_DEFINITION, prunedStatus, rec().failed('down').build(), {}, synced.id, { ...input, pruned: true }),
    { latestTransaction: { status: 'Failed' }, conditions: [{ status: 'False' }, { status: 'False' }] },
    'they ride along with another change',
  );
  t.notOk('conditions' in (statusPatch(API_DEFINITION, undefined, synced) ?? {}), 'without the input, conditions are not touched');
});
