/**
 * decide() and recordAfter() at the edges of their rules: which objects get a record and a
 * status, what a held or failed object says, what a write counts and retires, and which record
 * fields an outcome keeps. test/unit/decide.test.ts states the rules; this file pins each one
 * where it turns.
 */
import t from 'tap';
import { decide, holdOf, knownId, type Loaded, observedOf, recordAfter } from '../../lib/engine/decide.js';
import { DEFAULT_BACKOFF, retryDelayMs } from '../../lib/engine/error-policy.js';
import { SECURITY_POLICY } from '../../lib/kinds/security-policy/kind.js';
import { apiKey } from '../../lib/kinds/shared/api-links.js';
import { GatewayApiError, GatewayUnavailableError, GatewayUnsupportedError } from '../../lib/platform/errors.js';
import { apiDefinition, recordFor, securityPolicy } from '../fixtures/builders.js';
import { at, BODY, desired, ID, loaded, NOW, quietOf, removeOf, target, upsertOf, writeOf } from '../fixtures/loaded.js';

const POLICY_ID = Buffer.from('default/p').toString('base64url');

/** A SecurityPolicy "p" granting the given APIs, synced. */
function policy(over: Partial<Loaded> = {}): Loaded {
  return {
    kind: SECURITY_POLICY,
    ref: { kind: SECURITY_POLICY, namespace: 'default', name: 'p' },
    key: 'SecurityPolicy/default/p',
    obj: securityPolicy('p').granting('a').withFinalizer().build(),
    watched: true,
    record: recordFor('SecurityPolicy', 'p').synced('d1', 'o1').linking('default/a').build(),
    target: target(),
    desired: desired({ id: POLICY_ID }),
    body: { id: POLICY_ID },
    observedBody: { id: POLICY_ID },
    observed: { id: POLICY_ID, hash: 'o1' },
    links: ['default/a'],
    ...over,
  };
}

t.test('the decision carries the clock reading it was made with', async (t) => {
  const d = decide(loaded(), at());
  t.equal(d.at, NOW);
  t.equal(d.time, '2026-06-01T00:00:00.000Z');
});

t.test('the gateway is the target, else the one the record names, else unknown', async (t) => {
  t.equal(decide(loaded({ target: target('context:default/ctx') }), at()).gateway, 'context:default/ctx');
  const recorded = recordFor('ApiDefinition', 'httpbin').onGateway('context:default/old').build();
  t.equal(decide(loaded({ target: undefined, targetError: 'x', record: recorded }), at()).gateway, 'context:default/old');
  const unknown = decide(loaded({ target: undefined, targetError: 'x', record: null }), at());
  t.equal(unknown.gateway, undefined);
});

t.test('a failed read: its id is the desired one, else the recorded one, else none', async (t) => {
  const err = new GatewayUnavailableError('gateway down');
  t.equal(decide(loaded({ readError: err, desired: desired({ id: 'wanted' }) }), at()).id, 'wanted');
  t.equal(decide(loaded({ readError: err, desired: undefined, record: recordFor('ApiDefinition', 'httpbin').withId('kept').build() }), at()).id, 'kept');
  t.equal(decide(loaded({ readError: err, desired: undefined, record: null }), at()).id, '');
});

t.test('a failed read still keeps the links the status shows', async (t) => {
  const err = new GatewayUnavailableError('gateway down');
  t.same(decide(loaded({ readError: err, referencedBy: [{ namespace: 'default', name: 'p' }] }), at()).statusExtra, {
    linked_by_policies: [{ namespace: 'default', name: 'p' }],
  });
  t.same(decide(policy({ readError: err }), at()).statusExtra, { linked_apis: [{ namespace: 'default', name: 'a' }] });
});

t.test('a gateway without the API: a vanished object is told in the report only', async (t) => {
  const err = new GatewayUnsupportedError(404, 'no /tyk/policies on this gateway');
  const d = decide(policy({ obj: null, desired: undefined, readError: err }), at());
  t.match(d, { reason: 'not supported by gateway', patchStatus: false, what: 'quiet', outcome: { result: 'failed', code: 'GATEWAY_UNSUPPORTED' } });
  t.equal(quietOf(d).outcome.save, undefined, 'no record for an object that is gone');
  const recorded = decide(policy({ readError: err, record: recordFor('SecurityPolicy', 'p').failed('something else').build() }), at());
  t.match(quietOf(recorded).outcome.save, { result: 'failed', error: /no \/tyk\/policies/, failures: 0, key: 'SecurityPolicy/default/p' }, 'a different failure is recorded');
});

t.test('an object confirmed gone is decided on even outside the watched namespaces', async (t) => {
  const d = decide(loaded({ obj: null, watched: false, desired: undefined }), at());
  t.match(d, { action: 'DELETE', reason: 'deleted in cluster' });
});

t.test('an unresolvable context: the status keeps its links, and a changed failure is recorded again', async (t) => {
  const l = loaded({ target: undefined, targetError: 'OperatorContext default/ctx not found', referencedBy: [{ namespace: 'default', name: 'p' }] });
  t.same(decide(l, at()).statusExtra, { linked_by_policies: [{ namespace: 'default', name: 'p' }] });
  const before = recordFor('ApiDefinition', 'httpbin').failed('Secret default/tyk not found').build();
  t.match(quietOf(decide({ ...l, record: before }, at())).outcome.save, { result: 'failed', error: 'OperatorContext default/ctx not found' });
  const waiting = recordFor('ApiDefinition', 'httpbin').waiting('OperatorContext default/ctx not found').build();
  t.match(quietOf(decide({ ...l, record: waiting }, at())).outcome.save, { result: 'failed' }, 'the same words under another result are a change');
  t.equal(decide({ ...l, obj: null }, at()).patchStatus, false, 'no status for a vanished object');
  t.match(decide(l, at()), { action: 'NOOP', reason: 'gateway unavailable', what: 'quiet', hold: undefined }, 'nothing to carry out: retried every run');
});

t.test('an unresolvable context: the record keeps what is known of the object', async (t) => {
  const rec = recordFor('ApiDefinition', 'httpbin').synced('d0', 'o0').atGeneration(3).onGateway('context:default/ctx').build();
  const d = decide(loaded({ target: undefined, targetError: 'gone', record: rec, desired: desired({ hash: 'd5', generation: 4 }) }), at());
  t.same(quietOf(d).outcome.save, {
    key: 'ApiDefinition/default/httpbin',
    id: ID,
    gateway: 'context:default/ctx',
    generation: 4,
    desiredHash: 'd5',
    observedHash: 'o0',
    result: 'failed',
    error: 'gone',
    failures: 0,
    time: '2026-06-01T00:00:00.000Z',
  });
  const bare = decide(loaded({ target: undefined, targetError: 'gone', record: null, desired: undefined }), at());
  t.same(quietOf(bare).outcome.save, {
    key: 'ApiDefinition/default/httpbin',
    id: ID,
    generation: 0,
    desiredHash: '',
    observedHash: '',
    result: 'failed',
    error: 'gone',
    failures: 0,
    time: '2026-06-01T00:00:00.000Z',
  });
  t.equal(bare.id, '', 'the decision names no id it does not know');
  t.equal(knownId(loaded({ desired: undefined, record: null }), bare), ID, 'known from the resource');
});

t.test('only the label template=true makes a template', async (t) => {
  t.match(decide(loaded({ obj: apiDefinition('httpbin').template().build(), record: null }), at()), { action: 'NOOP', reason: 'template', patchStatus: false });
  const obj = apiDefinition('httpbin').withLabels({ template: 'false' }).build();
  t.notMatch(decide(loaded({ obj, record: null }), at()), { reason: 'template' });
});

t.test('a move to another gateway names only writes as a move', async (t) => {
  const invalid = decide(loaded({ previousTarget: 'default', target: target('context:default/ctx'), desired: desired({ invalid: 'spec.proxy is required' }), body: undefined }), at());
  t.equal(invalid.reason, 'invalid spec');
  const deleting = decide(loaded({ previousTarget: 'default', target: target('context:default/ctx'), desired: desired({ deleting: true }), observed: undefined, observedBody: null }), at());
  t.match(deleting, { action: 'DELETE', reason: 'already gone' }, 'a deletion is a deletion, wherever the object was');
  const update = decide(loaded({ previousTarget: 'default', target: target('context:default/ctx') }), at());
  t.match(update, { action: 'UPDATE', reason: 'moved to another gateway' });
});

t.test('a move waits out no backoff: the user changed something', async (t) => {
  const failed = recordFor('ApiDefinition', 'httpbin')
    .failed('write API: 503', 2, NOW + 60_000)
    .build();
  const d = decide(loaded({ previousTarget: 'default', target: target('context:default/ctx'), record: failed, observed: undefined, observedBody: null }), at());
  t.match(d, { reason: 'moved to another gateway', what: 'upsert', write: { retire: { id: ID, gateway: 'default' } } });
  t.equal(holdOf(d), undefined, 'its backoff holds nothing back');
});

t.test('only an ApiDefinition deletion is held by referencing policies', async (t) => {
  const refs = [
    { namespace: 'team-b', name: 'q' },
    { namespace: 'default', name: 'p' },
  ];
  const held = decide(loaded({ desired: desired({ deleting: true }), referencedBy: refs }), at());
  t.equal(quietOf(held).outcome.error, 'deletion held: still referenced by SecurityPolicy team-b/q, default/p');
  t.match(quietOf(held).outcome.save, { result: 'waiting', error: 'deletion held: still referenced by SecurityPolicy team-b/q, default/p', desiredHash: 'd1', observedHash: 'o1' });
  t.equal(held.patchStatus, true, 'a held deletion is told in the status');
  const notListed = decide(loaded({ desired: desired({ deleting: true }), referencedBy: undefined }), at());
  t.match(notListed, { action: 'DELETE', what: 'remove' }, 'not asked about: not held');
  const pol = decide(policy({ desired: desired({ id: POLICY_ID, deleting: true }), referencedBy: refs }), at());
  t.match(pol, { action: 'DELETE', what: 'remove', write: { removeFinalizer: true } });
});

t.test('a held deletion of a vanished API: a record, no status', async (t) => {
  const d = decide(loaded({ obj: null, desired: undefined, referencedBy: [{ namespace: 'default', name: 'p' }] }), at());
  t.match(d, { action: 'WAIT', hold: 'policies', patchStatus: false, what: 'quiet', outcome: { result: 'waiting', error: /default\/p/ } });
  t.equal(quietOf(d).outcome.save, undefined, 'nothing is saved for an object that is gone');
});

t.test('a quiet object holds nothing back', async (t) => {
  t.equal(quietOf(decide(loaded(), at())).hold, undefined);
  t.equal(quietOf(decide(loaded({ desired: desired({ invalid: 'bad' }), body: undefined }), at())).hold, undefined);
});

t.test('a quiet object says the error its record carries', async (t) => {
  const diverged = recordFor('ApiDefinition', 'httpbin').synced('d1', 'o1').diverged('gateway changed what was sent: proxy.listen_path').build();
  const d = decide(loaded({ record: diverged }), at());
  t.same(quietOf(d).outcome, { result: 'unchanged', error: 'gateway changed what was sent: proxy.listen_path' });
  t.same(quietOf(decide(loaded(), at())).outcome, { result: 'unchanged' });
});

t.test('what we do not manage is skipped, with no record and no status', async (t) => {
  const noFinalizer = decide(loaded({ desired: desired({ deleting: true, hasFinalizer: false }), record: null }), at());
  t.match(noFinalizer, { action: 'NOOP', reason: 'not managed', patchStatus: false });
  t.same(quietOf(noFinalizer).outcome, { result: 'skipped' });
  const deletingRecorded = decide(loaded({ desired: desired({ deleting: true, hasFinalizer: false }) }), at());
  t.equal(deletingRecorded.patchStatus, false, 'an object being deleted gets no status');
  const neverWritten = decide(loaded({ record: null, desired: desired({ invalid: 'bad' }), obj: null, body: undefined }), at());
  t.equal(neverWritten.patchStatus, false, 'no status without an object');
});

t.test("a policy's id is not guessed without its gateway", async (t) => {
  const d = decide(policy({ target: undefined, targetError: 'OperatorContext default/ctx not found', desired: undefined, record: null, links: undefined }), at());
  t.equal(quietOf(d).outcome.save?.id, '', 'a Dashboard names a policy by its own _id: unknown without the gateway');
  t.equal(knownId(policy({ desired: undefined, record: null }), d), '');
  t.equal(knownId(loaded({ obj: null, desired: undefined, record: null }), d), '', 'nothing known of a vanished API');
});

t.test('an invalid spec is recorded with no failures counted', async (t) => {
  const d = decide(loaded({ desired: desired({ invalid: 'spec.proxy is required', hash: 'bad', generation: 2 }), body: undefined }), at());
  t.same(quietOf(d).outcome.save, {
    key: 'ApiDefinition/default/httpbin',
    id: ID,
    gateway: 'default',
    generation: 2,
    desiredHash: 'bad',
    observedHash: 'o1',
    result: 'invalid',
    error: 'spec.proxy is required',
    failures: 0,
    time: '2026-06-01T00:00:00.000Z',
  });
});

t.test('an invalid spec of a vanished object is not recorded', async (t) => {
  const d = decide(loaded({ obj: null, desired: desired({ invalid: 'bad' }), body: undefined }), at());
  t.equal(quietOf(d).outcome.save, undefined);
  t.equal(quietOf(d).outcome.result, 'invalid');
});

t.test('a wait over a failure keeps the hashes of the last sync', async (t) => {
  const failed = recordFor('SecurityPolicy', 'p').synced('d1', 'o1').failed('boom').build();
  const d = decide(policy({ record: failed, desired: desired({ id: POLICY_ID, hash: 'd9', waiting: 'ApiDefinition default/a is not synced yet' }), body: undefined }), at());
  t.match(quietOf(d).outcome.save, { result: 'waiting', desiredHash: 'd1', observedHash: 'o1', failures: 0 });
  const fresh = decide(policy({ record: null, desired: desired({ id: POLICY_ID, hash: 'd9', waiting: 'ApiDefinition default/a is not synced yet' }), body: undefined }), at());
  t.match(quietOf(fresh).outcome.save, { result: 'waiting', desiredHash: 'd9', observedHash: '' }, 'a first wait records the spec it waits with');
  t.equal(fresh.patchStatus, true);
  const waitWords = 'ApiDefinition default/a is not synced yet';
  const failedSameWords = recordFor('SecurityPolicy', 'p').synced('d1', 'o1').failed(waitWords).build();
  const over = decide(policy({ record: failedSameWords, desired: desired({ id: POLICY_ID, hash: 'd9', waiting: waitWords }), body: undefined }), at());
  t.match(quietOf(over).outcome.save, { result: 'waiting', error: waitWords }, 'a failure in the same words is no wait: the wait is recorded');
});

t.test("a policy's record and status name its links, sorted", async (t) => {
  const links = [
    { kind: 'ApiDefinition' as const, namespace: 'team-b', name: 'a' },
    { kind: 'ApiDefinition' as const, namespace: 'default', name: 'z' },
    { kind: 'TykOasApiDefinition' as const, namespace: 'default', name: 'b' },
  ];
  const d = decide(policy({ links: links.map(apiKey), observed: { id: POLICY_ID, hash: 'o2' } }), at());
  t.same(d.statusExtra, {
    linked_apis: [
      { namespace: 'default', name: 'b' },
      { namespace: 'default', name: 'z' },
      { namespace: 'team-b', name: 'a' },
    ],
  });
  t.same(writeOf(d).next.base.links, ['team-b/a', 'default/z', 'TykOasApiDefinition/default/b'], 'the record keeps them in spec order, an OAS API by its kind too');
  const noLinks = decide(policy({ links: undefined }), at());
  t.equal(noLinks.statusExtra, undefined);
});

t.test("a policy's record keeps its last links when none are known now, unless it moved", async (t) => {
  const rec = recordFor('SecurityPolicy', 'p').synced('d1', 'o1').linking('default/a').build();
  const invalid = decide(policy({ links: undefined, record: rec, desired: desired({ id: POLICY_ID, invalid: 'bad', hash: 'bad' }), body: undefined }), at());
  t.same(quietOf(invalid).outcome.save?.links, ['default/a']);
  const moved = decide(policy({ links: undefined, record: rec, previousTarget: 'context:default/old', desired: desired({ id: POLICY_ID, invalid: 'bad', hash: 'bad' }), body: undefined }), at());
  t.equal(quietOf(moved).outcome.save?.links, undefined);
});

t.test('a write counts failures only after a failure', async (t) => {
  const invalid = { ...recordFor('ApiDefinition', 'httpbin').synced('d1', 'o1').invalid('rejected').build(), failures: 3 };
  const d = decide(loaded({ record: invalid, desired: desired({ hash: 'd2' }) }), at());
  t.equal(writeOf(d).next.failures, 1, 'an invalid spec that changed starts counting anew');
  t.equal(writeOf(decide(loaded({ record: null, observed: undefined, observedBody: null }), at())).next.failures, 1);
  t.same(writeOf(decide(loaded({ observed: { id: ID, hash: 'o2' } }), at({ backoff: { baseMs: 1, maxMs: 2 } }))).next.backoff, { baseMs: 1, maxMs: 2 });
});

t.test('the record of a write: generation and hashes from the desired state, else the record', async (t) => {
  const rec = recordFor('ApiDefinition', 'httpbin').synced('d1', 'o1').atGeneration(3).build();
  const d = decide(loaded({ record: rec, desired: desired({ hash: 'd2', generation: 7 }) }), at());
  t.same(writeOf(d).next.base, { key: 'ApiDefinition/default/httpbin', id: ID, gateway: 'default', generation: 7, desiredHash: 'd2', observedHash: 'o1' });
  const vanished = decide(loaded({ obj: null, desired: undefined, record: rec }), at());
  t.same(writeOf(vanished).next.base, { key: 'ApiDefinition/default/httpbin', id: ID, gateway: 'default', generation: 3, desiredHash: 'd1', observedHash: 'o1' });
});

t.test('a backoff keeps the error of the failure it waits out, and its record', async (t) => {
  const failed = recordFor('ApiDefinition', 'httpbin')
    .synced('d1', 'o1')
    .failed('write API: 503', 2, NOW + 1)
    .build();
  const d = decide(loaded({ record: failed }), at());
  t.same(quietOf(d).outcome, { result: 'backoff', error: 'write API: 503' });
  t.notOk('next' in d, 'no record a write would lead to');
  t.notOk('write' in d, 'nothing to write');
  t.same(d.statusExtra, { linked_by_policies: [] });
});

t.test('a write that keeps its id retires nothing; an id change retires the old one on the same gateway', async (t) => {
  const d = decide(loaded({ observed: { id: ID, hash: 'o2' } }), at());
  t.same(upsertOf(d).write, { body: BODY, addFinalizer: false });
  const changed = decide(loaded({ desired: desired({ id: 'new' }), observed: undefined, observedBody: null }), at());
  t.same(upsertOf(changed).write, { body: BODY, addFinalizer: false, retire: { id: ID } });
  const removed = decide(loaded({ desired: desired({ deleting: true }) }), at());
  t.same(removeOf(removed).write, { present: true, removeFinalizer: true });
  t.equal(removed.patchStatus, false, 'an object being removed gets no status');
});

t.test('a write needs a body: planning one without is a bug, said loudly', async (t) => {
  t.throws(() => decide(loaded({ body: undefined, observed: { id: ID, hash: 'o2' } }), at()), /internal: ApiDefinition\/default\/httpbin planned UPDATE without a body/);
  t.throws(() => decide(loaded({ obj: null, observed: { id: ID, hash: 'o2' } }), at()), /without a body/);
});

t.test('a finalizer of another kind is not ours', async (t) => {
  const obj = apiDefinition('httpbin').withFinalizer('finalizers.tyk.io/securitypolicy').build();
  t.match(decide(loaded({ obj, observed: { id: ID, hash: 'o2' } }), at()), { what: 'upsert', write: { addFinalizer: true } });
});

t.test('a failed write: the record keeps the spec it tried, a failed removal the spec last sent', async (t) => {
  const l = loaded({ desired: desired({ hash: 'd2' }) });
  const d = upsertOf(decide(l, at()));
  const failed = recordAfter(d, l, { failed: new GatewayApiError(503, 'busy') });
  t.same(failed.record, {
    key: 'ApiDefinition/default/httpbin',
    id: ID,
    gateway: 'default',
    generation: 1,
    desiredHash: 'd2',
    observedHash: 'o1',
    result: 'failed',
    error: 'busy',
    failures: 1,
    retryAt: NOW + retryDelayMs(1, DEFAULT_BACKOFF, 'ApiDefinition/default/httpbin'),
    time: '2026-06-01T00:00:00.000Z',
  });
  const unrecorded = loaded({ desired: desired({ deleting: true, hash: 'd3' }), record: null });
  const removal = removeOf(decide(unrecorded, at()));
  t.match(recordAfter(removal, unrecorded, { failed: new GatewayApiError(500, 'x') }).record, { result: 'failed', desiredHash: 'd3' }, 'no record: the spec it has');
});

t.test('a write not yet visible, or confirmed, counts no failures', async (t) => {
  const l = loaded({
    record: recordFor('ApiDefinition', 'httpbin')
      .synced('d1', 'o1')
      .failed('boom', 4, NOW - 1)
      .build(),
  });
  const d = upsertOf(decide(l, at()));
  t.same(recordAfter(d, l, { visible: false }).record, {
    key: 'ApiDefinition/default/httpbin',
    id: ID,
    gateway: 'default',
    generation: 1,
    desiredHash: 'd1',
    observedHash: 'o1',
    result: 'pending',
    error: 'written to the gateway, not yet visible after reload; will retry',
    failures: 0,
    time: '2026-06-01T00:00:00.000Z',
  });
  const synced = recordAfter(d, l, { visible: true, observedHash: 'o9', differences: [] }).record;
  t.same(synced, {
    key: 'ApiDefinition/default/httpbin',
    id: ID,
    gateway: 'default',
    generation: 1,
    desiredHash: 'd1',
    observedHash: 'o9',
    result: 'synced',
    failures: 0,
    time: '2026-06-01T00:00:00.000Z',
  });
  const diverged = recordAfter(d, l, { visible: true, observedHash: 'o9', differences: [{ path: 'proxy.listen_path', sent: '/a', reported: '/a-1' }] }).record;
  t.same(diverged, {
    key: 'ApiDefinition/default/httpbin',
    id: ID,
    gateway: 'default',
    generation: 1,
    desiredHash: 'd1',
    observedHash: 'o9',
    result: 'diverged',
    error: 'gateway changed what was sent: proxy.listen_path: sent "/a", gateway has "/a-1"',
    failures: 0,
    time: '2026-06-01T00:00:00.000Z',
  });
});

t.test("certificates missing from the gateway's store are drift: the object is written again", async (t) => {
  t.match(decide(loaded(), at()), { action: 'NOOP', reason: 'unchanged' }, 'all there: nothing to do');
  const missing = decide(loaded({ missingCertificates: ['org-c1'] }), at());
  t.match(missing, { what: 'upsert', action: 'UPDATE' }, 'one missing: an update, which uploads it');
  const l = loaded({ missingCertificates: ['org-c1'] });
  t.not(observedOf(l)?.hash, l.observed?.hash, 'the observed hash a decision compares says what is missing');
  t.equal(observedOf(loaded({ missingCertificates: [] }))?.hash, 'o1', 'none missing: what the gateway reports');
  t.equal(observedOf(loaded({ observed: undefined, missingCertificates: ['org-c1'] })), undefined, 'nothing observed: nothing to mark');
});
