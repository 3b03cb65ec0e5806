/**
 * decide() and recordAfter(): the whole decision for one object, pure, from what load found
 * and one clock reading. Each test states a rule; the fast tier (test/fast) checks the same
 * rules through a whole Run.
 */
import t from 'tap';
import { decide, type Loaded, recordAfter, type WriteDecision } from '../../lib/engine/decide.js';
import { DEFAULT_BACKOFF, retryDelayMs } from '../../lib/engine/error-policy.js';
import { SECURITY_POLICY } from '../../lib/kinds/security-policy/kind.js';
import { GatewayApiError, GatewayRejectedError, GatewayUnavailableError, GatewayUnsupportedError } from '../../lib/platform/errors.js';
import type { SyncRecord } from '../../lib/store/types.js';
import { apiDefinition, recordFor, securityPolicy } from '../fixtures/builders.js';
import { at, BODY, desired, ID, loaded, NOW, quietOf, removeOf, target, upsertOf, writeOf } from '../fixtures/loaded.js';

const failedRecord = (retryAt: number, failures = 2): SyncRecord => recordFor('ApiDefinition', 'httpbin').synced('d1', 'o1').failed('write API: 503', failures, retryAt).build();

t.test('a steady state writes nothing and keeps its record', async (t) => {
  const d = decide(loaded(), at());
  t.match(d, { action: 'NOOP', reason: 'unchanged', id: ID, gateway: 'default', patchStatus: true, what: 'quiet', outcome: { result: 'unchanged' } });
  t.notOk('write' in d, 'nothing to write');
  t.equal(quietOf(d).outcome.save, undefined);
  t.same(d.statusExtra, { linked_by_policies: [] });
});

t.test('a failed read decides nothing: read failed, no record, no status', async (t) => {
  const d = decide(loaded({ readError: new GatewayUnavailableError('gateway down') }), at());
  t.match(d, { action: 'NOOP', reason: 'read failed', id: ID, patchStatus: false, what: 'quiet', outcome: { result: 'failed', error: /gateway down/, code: 'GATEWAY_UNAVAILABLE' } });
  t.notOk('write' in d, 'nothing to write');
  t.equal(quietOf(d).outcome.save, undefined);
});

t.test("a gateway without the kind's API: Failed in record and status, once", async (t) => {
  const err = new GatewayUnsupportedError(404, 'no /tyk/policies on this gateway');
  const first = decide(loaded({ readError: err }), at());
  t.match(first, { reason: 'not supported by gateway', patchStatus: true, what: 'quiet', outcome: { result: 'failed', save: { result: 'failed', id: ID, failures: 0 } } });
  const again = decide(loaded({ readError: err, record: quietOf(first).outcome.save ?? null }), at());
  t.equal(quietOf(again).outcome.save, undefined, 'the same failure is not saved again');
  t.equal(again.patchStatus, true);
  const deleting = decide(loaded({ readError: err, desired: desired({ deleting: true }) }), at());
  t.equal(deleting.patchStatus, false, 'an object being deleted gets no status');
  t.equal(quietOf(deleting).outcome.save, undefined);
});

t.test('outside the watched namespaces: skipped', async (t) => {
  t.match(decide(loaded({ obj: undefined, watched: false }), at()), { reason: 'not watched', what: 'quiet', outcome: { result: 'skipped' }, patchStatus: false });
  t.notMatch(decide(loaded({ obj: undefined, watched: true, record: null, desired: undefined }), at()), { reason: 'not watched' });
});

t.test('a context that cannot be resolved: Failed, retried every run, status only while not deleting', async (t) => {
  const d = decide(loaded({ target: undefined, targetError: 'OperatorContext default/ctx not found' }), at());
  t.match(d, {
    reason: 'gateway unavailable',
    patchStatus: true,
    what: 'quiet',
    outcome: { result: 'failed', code: 'GATEWAY_CONTEXT', save: { result: 'failed', error: 'OperatorContext default/ctx not found' } },
  });
  const same = decide(loaded({ target: undefined, targetError: 'OperatorContext default/ctx not found', record: quietOf(d).outcome.save ?? null }), at());
  t.equal(quietOf(same).outcome.save, undefined);
  t.equal(decide(loaded({ target: undefined, targetError: 'x', desired: desired({ deleting: true }) }), at()).patchStatus, false);
  t.equal(quietOf(decide(loaded({ obj: null, target: undefined, targetError: 'x' }), at())).outcome.save, undefined, 'nothing to say about a vanished object');
});

t.test('an ingress template is never an API of its own', async (t) => {
  const obj = apiDefinition('httpbin').template().build();
  t.match(decide(loaded({ obj, record: null }), at()), { reason: 'template', what: 'quiet', outcome: { result: 'skipped' } });
  t.notMatch(decide(loaded({ obj }), at()), { reason: 'template' }, 'one we already manage stays managed');
});

t.test('a deletion waits while policies reference the API, or while they cannot be listed', async (t) => {
  const deleting = { desired: desired({ deleting: true }) };
  const held = decide(loaded({ ...deleting, referencedBy: [{ namespace: 'default', name: 'p' }] }), at());
  t.match(held, { action: 'WAIT', reason: 'referenced by policies', hold: 'policies', what: 'quiet', outcome: { result: 'waiting', error: /SecurityPolicy default\/p/ } });
  t.notOk('write' in held, 'nothing to write');
  const unknown = decide(loaded({ ...deleting, referencedBy: null }), at());
  t.match(unknown, { action: 'WAIT', hold: 'policies', what: 'quiet', outcome: { error: /could not be listed/ } });
  t.same(unknown.statusExtra, undefined, 'no links claimed when the policies are unknown');
  const free = decide(loaded({ ...deleting, referencedBy: [] }), at());
  t.match(free, { action: 'DELETE', what: 'remove', write: { present: true, removeFinalizer: true } });
  const gone = decide(loaded({ ...deleting, referencedBy: [], observed: undefined, observedBody: null }), at());
  t.match(gone, { action: 'DELETE', reason: 'already gone', what: 'remove', write: { present: false } });
  const vanished = decide(loaded({ obj: null, desired: undefined, referencedBy: [] }), at());
  t.match(vanished, { action: 'DELETE', what: 'remove', write: { present: true, removeFinalizer: false } }, 'no finalizer to remove from a vanished object');
});

t.test('a wait keeps the hashes of the last sync, and says the same thing once', async (t) => {
  const waiting = 'ApiDefinition default/a is not synced yet';
  const policy = securityPolicy('p').granting('a').withFinalizer().build();
  const l = loaded({
    kind: SECURITY_POLICY,
    key: 'SecurityPolicy/default/p',
    obj: policy,
    desired: desired({ hash: 'd9', waiting }),
    body: undefined,
    record: recordFor('SecurityPolicy', 'p').synced('d1', 'o1').build(),
  });
  const d = decide(l, at());
  t.match(d, { action: 'WAIT', hold: 'dependency', what: 'quiet', outcome: { result: 'waiting', error: waiting, save: { result: 'waiting', desiredHash: 'd1', observedHash: 'o1', error: waiting } } });
  const again = decide({ ...l, record: quietOf(d).outcome.save ?? null }, at());
  t.equal(quietOf(again).outcome.save, undefined, 'the same wait is not saved again');
  const otherReason = decide({ ...l, record: quietOf(d).outcome.save ?? null, desired: desired({ hash: 'd9', waiting: 'other' }) }, at());
  t.match(quietOf(otherReason).outcome.save, { error: 'other', desiredHash: 'd9' }, 'a new wait over a wait records the spec it waits with');
});

t.test('an invalid spec is recorded once and never sent', async (t) => {
  const d = decide(loaded({ desired: desired({ invalid: 'spec.proxy is required', hash: 'bad' }), body: undefined }), at());
  t.match(d, { action: 'NOOP', reason: 'invalid spec', what: 'quiet', outcome: { result: 'invalid', save: { result: 'invalid', error: 'spec.proxy is required', desiredHash: 'bad' } } });
  t.notOk('write' in d, 'nothing to write');
  const again = decide(loaded({ desired: desired({ invalid: 'spec.proxy is required', hash: 'bad' }), body: undefined, record: quietOf(d).outcome.save ?? null }), at());
  t.match(again, { reason: 'invalid spec unchanged', what: 'quiet', outcome: { result: 'invalid', error: 'spec.proxy is required' } });
  t.equal(quietOf(again).outcome.save, undefined);
});

t.test('backoff: decided once, from the one clock reading', async (t) => {
  const retryAt = NOW + 5_000;
  const inBackoff = loaded({ record: failedRecord(retryAt) });
  const held = decide(inBackoff, at());
  t.match(held, { action: 'UPDATE', reason: 'retrying after failure', hold: 'backoff', patchStatus: false, what: 'quiet', outcome: { result: 'backoff', error: 'write API: 503' } });
  t.notOk('write' in held, 'no write while in backoff');
  t.equal(quietOf(held).outcome.save, undefined, 'the record is kept as it is');
  t.match(decide(inBackoff, at({ now: retryAt })), { what: 'upsert' }, 'due at retryAt');
  t.match(decide(inBackoff, at({ trigger: 'resync' })), { what: 'upsert' }, 'a resync does not wait');
  t.match(decide(loaded({ record: failedRecord(retryAt), desired: desired({ hash: 'd2' }) }), at()), { reason: 'spec changed', what: 'upsert' }, 'a spec change does not wait');
  t.match(decide(loaded({ record: failedRecord(retryAt), desired: desired({ id: 'new' }) }), at()), { reason: 'id changed', what: 'upsert', write: { retire: { id: ID } } });
  const noRetry = recordFor('ApiDefinition', 'httpbin').synced('d1', 'o1').failed('boom').build();
  t.match(decide(loaded({ record: noRetry }), at()), { what: 'upsert' }, 'a failure without retryAt is retried');
});

t.test('a write carries its finalizer, its retirement and what its failure would count', async (t) => {
  const noFinalizer = apiDefinition('httpbin').build();
  t.match(decide(loaded({ obj: noFinalizer, observed: { id: ID, hash: 'o2' } }), at()), { reason: 'drifted on gateway', what: 'upsert', write: { addFinalizer: true, body: BODY } });
  const d = decide(loaded({ observed: { id: ID, hash: 'o2' } }), at());
  t.match(d, { what: 'upsert', write: { addFinalizer: false }, patchStatus: true, next: { failures: 1, base: { id: ID, desiredHash: 'd1', observedHash: 'o1', gateway: 'default' } } });
  const retrying = decide(loaded({ record: failedRecord(NOW - 1, 3) }), at());
  t.equal(writeOf(retrying).next.failures, 4, 'consecutive failures count up');
  t.same(upsertOf(decide(loaded({ record: recordFor('ApiDefinition', 'httpbin').withId('old').build() }), at())).write, { body: BODY, addFinalizer: false, retire: { id: 'old' } });
});

t.test('a contextRef move: new here, retired on the old gateway, no hashes carried over', async (t) => {
  const l = loaded({ target: target('context:default/ctx'), previousTarget: 'default', observed: undefined, observedBody: null });
  const d = decide(l, at());
  t.match(d, { action: 'CREATE', reason: 'moved to another gateway', gateway: 'context:default/ctx', what: 'upsert', write: { retire: { id: ID, gateway: 'default' } } });
  t.match(writeOf(d).next.base, { observedHash: '', gateway: 'context:default/ctx' });
  const deleting = decide({ ...l, desired: desired({ deleting: true }) }, at());
  t.match(deleting, { action: 'DELETE', what: 'remove', write: { present: false, retire: { id: ID, gateway: 'default' } } }, 'a deletion cleans the old gateway too');
});

function writeDecision(over: Partial<Loaded> = {}): { d: WriteDecision; l: Loaded } {
  const l = loaded({ observed: { id: ID, hash: 'o2' }, ...over });
  return { d: upsertOf(decide(l, at())), l };
}

t.test('recordAfter: what a write leads to', async (t) => {
  const { d, l } = writeDecision();
  t.match(recordAfter(d, l, { visible: true, observedHash: 'o3', differences: [] }), { result: 'synced', record: { result: 'synced', observedHash: 'o3', failures: 0, desiredHash: 'd1' } });
  const renamed = recordAfter(d, l, { visible: true, observedHash: 'o3', differences: [{ path: 'proxy.listen_path', sent: '/a/', reported: '/a-1/' }] });
  t.match(renamed, { result: 'diverged', record: { result: 'diverged', observedHash: 'o3', error: /proxy\.listen_path/ } });
  t.match(recordAfter(d, l, { visible: false }), { result: 'pending', record: { result: 'pending', error: /written to the gateway, not yet visible/ } });
  const transient = recordAfter(d, l, { failed: new GatewayApiError(503, 'busy') });
  t.match(transient, { result: 'failed', record: { result: 'failed', failures: 1, retryAt: NOW + retryDelayMs(1, DEFAULT_BACKOFF, l.key), error: /busy/ } });
  t.ok((transient.record?.retryAt ?? 0) <= NOW + DEFAULT_BACKOFF.baseMs, 'never later than the backoff');
  const terminal = recordAfter(d, l, { failed: new GatewayRejectedError(400, 'bad listen path') });
  t.match(terminal, { result: 'invalid', record: { result: 'invalid', failures: 1 } });
  t.notOk(terminal.record && 'retryAt' in terminal.record, 'a terminal failure has no retry time');
});

t.test('recordAfter: what a removal leads to', async (t) => {
  const l = loaded({ desired: desired({ deleting: true, hash: 'd2' }) });
  const d = removeOf(decide(l, at()));
  t.same(recordAfter(d, l, { visible: true, observedHash: '', differences: [] }), { record: null, result: 'deleted' });
  t.match(recordAfter(d, l, { visible: false }), { result: 'pending', record: { error: /deleted on the gateway, still visible/ } });
  const failed = recordAfter(d, l, { failed: new GatewayApiError(500, 'Delete failed') });
  t.match(failed, { result: 'failed', record: { desiredHash: 'd1' } }, 'a failed DELETE keeps the hash of the spec last sent');
});
