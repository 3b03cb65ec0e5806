/**
 * The pure parts of telling outcomes in Kubernetes Events: which Event an outcome gives
 * (lib/engine/outcome-events.ts), and how an Event is named and worded (lib/kube/events.ts).
 */
import t from 'tap';
import { type Outcome, outcomeEvent, statusPatchFailedEvent } from '../../lib/engine/outcome-events.js';
import { eventMessage, eventName, MESSAGE_LIMIT_BYTES } from '../../lib/kube/events.js';
import type { KubeObject } from '../../lib/kube/types.js';
import { apiDefinition } from '../fixtures/builders.js';

const base: Outcome = { result: 'synced', reason: 'created in cluster', action: 'CREATE', id: 'ZGVmYXVsdC9odHRwYmlu' };
const o = (extra: Partial<Outcome>): Outcome => ({ ...base, ...extra });

t.test('successes: a Normal Synced on a first sync, a recovery or a change the user made; Deleted; nothing for the rest', async (t) => {
  t.same(outcomeEvent(base), { type: 'Normal', reason: 'Synced', message: 'created in cluster: written to gateway default as ZGVmYXVsdC9odHRwYmlu' });
  t.match(outcomeEvent(o({ reason: 'retrying after failure', before: { result: 'failed', error: 'boom' } })), { type: 'Normal', reason: 'Synced' });
  t.match(outcomeEvent(o({ reason: 'spec changed', gateway: 'context:tyk/staging', before: { result: 'synced' } })), {
    reason: 'Synced',
    message: 'spec changed: written to gateway context:tyk/staging as ZGVmYXVsdC9odHRwYmlu',
  });
  t.match(outcomeEvent(o({ reason: 'id changed', before: { result: 'synced' } })), { reason: 'Synced' });
  t.match(outcomeEvent(o({ reason: 'moved to another gateway', before: { result: 'synced' } })), { reason: 'Synced' });
  t.equal(outcomeEvent(o({ reason: 'drifted on gateway', before: { result: 'synced' } })), undefined, 'drift undone on a synced object: not a change of outcome');
  t.equal(outcomeEvent(o({ reason: 'missing on gateway', before: { result: 'synced' } })), undefined, 'a gateway restart healed: not one Event per object');
  t.same(outcomeEvent(o({ result: 'deleted', reason: 'deleted in cluster', action: 'DELETE' })), { type: 'Normal', reason: 'Deleted', message: 'deleted from gateway default (ZGVmYXVsdC9odHRwYmlu)' });
  t.match(outcomeEvent(o({ result: 'deleted', reason: 'already gone', action: 'DELETE' })), { message: 'already gone from gateway default (ZGVmYXVsdC9odHRwYmlu)' });
  for (const result of ['unchanged', 'deferred', 'planned', 'skipped'] as const) {
    t.equal(outcomeEvent(o({ result, reason: 'unchanged', action: 'NOOP' })), undefined, `${result}: no Event`);
  }
});

t.test('problems: a Warning naming why, in the words of the report', async (t) => {
  const w = (extra: Partial<Outcome>) => outcomeEvent(o(extra));
  t.same(w({ result: 'failed', reason: 'spec changed', action: 'UPDATE', error: 'write API x: 500 boom' }), { type: 'Warning', reason: 'SyncFailed', message: 'write API x: 500 boom' });
  t.same(w({ result: 'failed', reason: 'deleted in cluster', action: 'DELETE', error: 'delete API x: 500 boom' }), { type: 'Warning', reason: 'DeleteFailed', message: 'delete API x: 500 boom' });
  t.same(
    w({ result: 'backoff', reason: 'retrying after failure', action: 'UPDATE', error: 'write API x: 500 boom' }),
    { type: 'Warning', reason: 'SyncFailed', message: 'write API x: 500 boom' },
    'backoff: the same Event as its failure',
  );
  t.match(w({ result: 'backoff', reason: 'deleted in cluster', action: 'DELETE', error: 'e' }), { reason: 'DeleteFailed' });
  t.match(w({ result: 'failed', reason: 'gateway unavailable', action: 'NOOP', error: 'OperatorContext default/nope not found', code: 'GATEWAY_CONTEXT' }), {
    reason: 'GatewayUnavailable',
    message: 'OperatorContext default/nope not found',
  });
  t.match(w({ result: 'failed', reason: 'read failed', action: 'NOOP', error: 'gateway default: connection refused', code: 'GATEWAY_UNAVAILABLE' }), { reason: 'GatewayUnavailable' });
  t.same(w({ result: 'failed', reason: 'not supported by gateway', action: 'NOOP', error: 'list policies: gateway default has no /tyk/policies API', code: 'GATEWAY_UNSUPPORTED' }), {
    type: 'Warning',
    reason: 'GatewayUnsupported',
    message: 'list policies: gateway default has no /tyk/policies API',
  });
  t.match(
    w({ result: 'failed', reason: 'created in cluster', action: 'CREATE', error: 'write policy p: refused', code: 'GATEWAY_UNSUPPORTED' }),
    { reason: 'GatewayUnsupported' },
    'a write the gateway cannot take',
  );
  t.match(w({ result: 'failed', reason: 'read failed', action: 'NOOP', error: 'list APIs: 500 x', code: 'GATEWAY_API_ERROR' }), { reason: 'ReadFailed' });
  t.match(w({ result: 'failed', reason: 'read failed', action: 'NOOP', error: 'get apidefinitions "x": 500', code: 'KUBE_API_ERROR' }), { reason: 'ReadFailed' });
  t.match(w({ result: 'failed', reason: 'read failed', action: 'NOOP' }), { reason: 'ReadFailed', message: 'failed' }, 'never an empty message');
  t.same(w({ result: 'invalid', reason: 'invalid spec', action: 'NOOP', error: 'unsupported: x' }), { type: 'Warning', reason: 'Invalid', message: 'unsupported: x' });
  t.match(w({ result: 'invalid', reason: 'invalid spec', action: 'NOOP' }), { message: 'invalid spec' });
  t.same(w({ result: 'waiting', reason: 'waiting for dependency', action: 'WAIT', error: 'waiting for ApiDefinition default/a does not exist' }), {
    type: 'Warning',
    reason: 'Waiting',
    message: 'waiting for ApiDefinition default/a does not exist',
  });
  t.match(w({ result: 'waiting', reason: 'waiting for dependency', action: 'WAIT' }), { message: 'waiting for a dependency' });
  t.match(w({ result: 'waiting', reason: 'referenced by policies', action: 'WAIT', error: 'deletion held: x' }), { reason: 'DeletionHeld', message: 'deletion held: x' });
  t.match(w({ result: 'waiting', reason: 'referenced by policies', action: 'WAIT' }), { message: 'deletion held' });
  t.same(w({ result: 'diverged', reason: 'spec changed', action: 'UPDATE', error: 'gateway changed what was sent: proxy.listen_path' }), {
    type: 'Warning',
    reason: 'Diverged',
    message: 'gateway changed what was sent: proxy.listen_path',
  });
  t.match(w({ result: 'diverged', reason: 'spec changed', action: 'UPDATE' }), { message: 'the gateway changed what was sent' });
  t.match(
    w({ result: 'unchanged', reason: 'unchanged', action: 'NOOP', after: { result: 'diverged', error: 'gateway changed what was sent: x' } }),
    { reason: 'Diverged', message: 'gateway changed what was sent: x' },
    'a divergence lasts',
  );
  t.match(w({ result: 'unchanged', reason: 'unchanged', action: 'NOOP', after: { result: 'diverged' } }), { reason: 'Diverged', message: 'the gateway changed what was sent' });
  t.equal(w({ result: 'unchanged', reason: 'unchanged', action: 'NOOP', after: { result: 'synced' } }), undefined);
  t.same(w({ result: 'pending', reason: 'created in cluster', action: 'CREATE', error: 'written to the gateway, not yet visible after reload; will retry' }), {
    type: 'Warning',
    reason: 'NotVisible',
    message: 'written to the gateway, not yet visible after reload; will retry',
  });
  t.match(w({ result: 'pending', reason: 'created in cluster', action: 'CREATE', gateway: 'context:a/b' }), { message: 'not visible on gateway context:a/b after reload; will retry' });
  t.same(statusPatchFailedEvent('patch status of apidefinitions "x": 422 no'), {
    type: 'Warning',
    reason: 'StatusPatchFailed',
    message: 'status not saved: patch status of apidefinitions "x": 422 no',
  });
});

t.test('every reason is UpperCamelCase', async (t) => {
  const results = ['synced', 'unchanged', 'diverged', 'pending', 'waiting', 'failed', 'invalid', 'deleted', 'deferred', 'backoff', 'planned', 'skipped'] as const;
  const reasons = ['created in cluster', 'read failed', 'gateway unavailable', 'referenced by policies'] as const;
  for (const result of results) {
    for (const reason of reasons) {
      const ev = outcomeEvent(o({ result, reason, after: { result: 'diverged' } }));
      if (ev) t.match(ev.reason, /^[A-Z][a-zA-Z]+$/, `${result}/${reason}: ${ev.reason}`);
    }
  }
});

t.test('eventName: deterministic per (uid, type, reason, message), a valid name of bounded length', async (t) => {
  const obj = { ...apiDefinition('httpbin').build(), metadata: { name: 'httpbin', namespace: 'default', uid: 'u-1' } } as KubeObject;
  const a = eventName(obj, 'Warning', 'SyncFailed', 'boom');
  t.match(a, /^httpbin\.[0-9a-f]{16}$/);
  t.equal(eventName(structuredClone(obj), 'Warning', 'SyncFailed', 'boom'), a, 'the same for the same');
  t.not(eventName(obj, 'Warning', 'SyncFailed', 'boom!'), a, 'another message');
  t.not(eventName(obj, 'Warning', 'Invalid', 'boom'), a, 'another reason');
  t.not(eventName(obj, 'Normal', 'SyncFailed', 'boom'), a, 'another type');
  t.not(eventName({ ...obj, metadata: { ...obj.metadata, uid: 'u-2' } }, 'Warning', 'SyncFailed', 'boom'), a, 'another object of the same name');
  t.not(
    eventName({ ...obj, metadata: { name: 'httpbin', namespace: 'other' } }, 'Warning', 'SyncFailed', 'boom'),
    eventName({ ...obj, metadata: { name: 'httpbin', namespace: 'default' } }, 'Warning', 'SyncFailed', 'boom'),
    'without a uid: by namespace and name',
  );
  const long = eventName({ ...obj, metadata: { name: `${'a'.repeat(230)}-${'b'.repeat(22)}`, uid: 'u' } }, 'Warning', 'X', 'y');
  t.ok(long.length <= 253, `at most 253 characters (${long.length})`);
  t.match(long, /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, 'a DNS subdomain');
  const cut = eventName({ ...obj, metadata: { name: `${'a'.repeat(235)}-.-x`, uid: 'u' } }, 'Warning', 'X', 'y');
  t.match(cut, /^a+\.[0-9a-f]{16}$/, 'no separator left before the hash');
  t.match(eventName({ ...obj, metadata: { name: '--' } }, 'Warning', 'X', 'y'), /^object\.[0-9a-f]{16}$/, 'a name with nothing usable');
});

t.test('eventMessage: one line, secrets masked, at most 1024 bytes cut on a character', async (t) => {
  t.equal(eventMessage('  write API x:\n  500\tboom  '), 'write API x: 500 boom');
  t.equal(eventMessage('key s3cr3t-value in the answer', ['s3cr3t-value', '', 'abc']), 'key [redacted] in the answer', 'known values, not short ones');
  t.equal(eventMessage('Authorization: Bearer abc.def.ghi'), 'Authorization: [redacted]');
  t.equal(eventMessage('authorization=Basic dXNlcjpwYXNz, then'), 'authorization=[redacted], then');
  t.equal(eventMessage('sent with bearer abc.def and Bearer [redacted]'), 'sent with bearer [redacted] and Bearer [redacted]');
  t.equal(eventMessage('basic authentication is not supported'), 'basic authentication is not supported', 'the word alone is not a credential');
  t.equal(eventMessage('redis://user:pw@redis:6379/0 and https://tok@example.com/x'), 'redis://[redacted]@redis:6379/0 and https://[redacted]@example.com/x');
  t.equal(
    eventMessage('x-tyk-authorization: abc, TYK_AUTH=def; webhook_token="ghi" password: jkl api-key=mno'),
    'x-tyk-authorization: [redacted], TYK_AUTH=[redacted]; webhook_token="[redacted]" password: [redacted] api-key=[redacted]',
  );
  t.equal(eventMessage('Secret tyk/staging lacks TYK_URL'), 'Secret tyk/staging lacks TYK_URL', 'words alone are not secrets');
  const long = eventMessage('é'.repeat(2000));
  t.ok(Buffer.byteLength(long, 'utf8') <= MESSAGE_LIMIT_BYTES, `${Buffer.byteLength(long, 'utf8')} bytes`);
  t.match(long, /^é+…$/, 'cut between characters, marked');
  const exact = 'x'.repeat(MESSAGE_LIMIT_BYTES);
  t.equal(eventMessage(exact), exact, 'exactly the limit is kept whole');
});

t.test("a refused reference or context URL: the Warning's reason is the refusal, known from the report's code alone", async (t) => {
  const refused = (code: string) => outcomeEvent(o({ result: 'failed', reason: 'not permitted', action: 'NOOP', error: 'no ReferenceGrant', code }));
  t.same(refused('REF_NOT_PERMITTED'), { type: 'Warning', reason: 'RefNotPermitted', message: 'no ReferenceGrant' });
  t.same(refused('URL_NOT_PERMITTED'), { type: 'Warning', reason: 'UrlNotPermitted', message: 'no ReferenceGrant' });
  t.match(refused('GATEWAY_API_ERROR'), { reason: 'SyncFailed' }, 'another code is no refusal');
});
