import t from 'tap';
import { backoffMs, dispose, isTerminal } from '../../lib/engine/error-policy.js';
import { statusPatch, transactionFor } from '../../lib/engine/status.js';
import { API_DEFINITION } from '../../lib/kinds/api-definition/kind.js';
import { apiDefinitionPayload } from '../../lib/kinds/api-definition/payload.js';
import { describeDifferences, sentFieldDifferences } from '../../lib/platform/compare.js';
import { GatewayApiError, GatewayRejectedError, InvalidSpecError } from '../../lib/platform/errors.js';
import { apiDefinition, record } from '../fixtures/builders.js';

t.test('payload: api_id, org, default versions; spec fields kept as they are', async (t) => {
  const r = apiDefinitionPayload(apiDefinition('httpbin').build(), 'ID1', 'org1');
  t.ok(r.ok);
  if (!r.ok) return;
  t.equal(r.body.api_id, 'ID1');
  t.equal(r.body.org_id, 'org1');
  t.same(r.body.version_data, { not_versioned: true, default_version: 'Default', versions: { Default: { name: 'Default' } } });
  t.same(r.body.proxy, { target_url: 'http://httpbin.org', listen_path: '/httpbin', strip_listen_path: true });
  t.equal(r.body.use_keyless, true);
});

t.test('payload: given versions are kept; a named default version without versions gets one', async (t) => {
  const versions = { not_versioned: false, default_version: 'v1', versions: { v1: { name: 'v1', expires: '' } } };
  const kept = apiDefinitionPayload(apiDefinition('x').patchSpec({ version_data: versions }).build(), 'I', undefined);
  t.same(kept.ok && kept.body.version_data, versions);
  const named = apiDefinitionPayload(
    apiDefinition('x')
      .patchSpec({ version_data: { default_version: 'v2' } })
      .build(),
    'I',
    undefined,
  );
  t.same(named.ok && named.body.version_data, { default_version: 'v2', not_versioned: true, versions: { v2: { name: 'v2' } } });
  const org = apiDefinitionPayload(apiDefinition('x').patchSpec({ org_id: 'mine' }).build(), 'I', undefined);
  t.equal(org.ok && org.body.org_id, 'mine', 'spec org kept when TYK_ORG is not set');
});

t.test('payload: operator-only fields are not sent', async (t) => {
  const r = apiDefinitionPayload(
    apiDefinition('x')
      .patchSpec({ upstream_certificate_refs: { '*': 'tls' }, pinned_public_keys_refs: { a: 'b' } })
      .build(),
    'I',
    undefined,
  );
  t.ok(r.ok && !('upstream_certificate_refs' in r.body) && !('pinned_public_keys_refs' in r.body), 'Secret references are resolved by the load stage, never sent');
  const routed = apiDefinitionPayload(
    apiDefinition('x')
      .patchSpec({ contextRef: { name: 'c' } })
      .build(),
    'I',
    undefined,
  );
  t.ok(routed.ok && !('contextRef' in routed.body), 'contextRef picks the gateway and is not sent');
  const empty = apiDefinitionPayload(apiDefinition('x').patchSpec({ upstream_certificate_refs: {}, certificate_secret_names: [] }).build(), 'I', undefined);
  t.ok(empty.ok, 'empty operator-only fields are dropped, not refused');
  t.notOk(empty.ok && 'certificate_secret_names' in empty.body);
  const noSpec = apiDefinitionPayload({ apiVersion: 'tyk.tyk.io/v1alpha1', kind: 'ApiDefinition', metadata: { name: 'x' } }, 'I', undefined);
  t.same(noSpec, { ok: false, reason: 'spec is missing' });
});

t.test('compare: only fields we sent; empties equal; absent fields ignored', async (t) => {
  const sent = { name: 'a', proxy: { listen_path: '/a', target_url: 'http://x' }, tags: [], custom: 'x' };
  const echo = { name: 'a', id: '123', proxy: { listen_path: '/a', target_url: 'http://x', preserve_host_header: false }, tags: null };
  t.same(sentFieldDifferences(sent, echo), []);
  const renamed = { ...echo, proxy: { ...echo.proxy, listen_path: '/a-ID' } };
  const diffs = sentFieldDifferences(sent, renamed);
  t.same(diffs, [{ path: 'proxy.listen_path', sent: '/a', reported: '/a-ID' }]);
  t.match(describeDifferences(diffs), 'proxy.listen_path: sent "/a", gateway has "/a-ID"');
  t.same(sentFieldDifferences({ l: [1, 2] }, { l: [1, 3] }), [{ path: 'l[1]', sent: 2, reported: 3 }]);
  t.same(
    sentFieldDifferences({ l: [1, 2] }, { l: [1] }).map((d) => d.path),
    ['l'],
  );
  t.same(
    sentFieldDifferences('a', 'b').map((d) => d.path),
    ['(root)'],
  );
  const many = sentFieldDifferences({ a: 1, b: 2, c: 3, d: 4 }, { a: 0, b: 0, c: 0, d: 0 });
  t.match(describeDifferences(many), /\(and 1 more\)$/);
});

t.test('error policy: rejected specs are terminal, the rest back off exponentially with a cap', async (t) => {
  t.ok(isTerminal(new GatewayRejectedError(400, 'bad')));
  t.ok(isTerminal(new InvalidSpecError('bad')));
  t.notOk(isTerminal(new GatewayApiError(500, 'boom')));
  t.same(dispose(new GatewayRejectedError(400, 'x'), 1, 1000), { result: 'invalid' });
  t.same(dispose(new GatewayApiError(500, 'x'), 1, 1000), { result: 'failed', retryAt: 11_000 });
  t.equal(backoffMs(1), 10_000);
  t.equal(backoffMs(2), 20_000);
  t.equal(backoffMs(3), 40_000);
  t.equal(backoffMs(50), 300_000);
  t.equal(backoffMs(0), 10_000);
});

t.test('status: Tyk Operator shape; no patch when only the time would change', async (t) => {
  const synced = record().synced('d', 'o').build();
  t.same(transactionFor(synced), { status: 'Successful', time: synced.time });
  const patch = statusPatch(API_DEFINITION, undefined, synced);
  t.same(patch, { api_id: synced.id, latestTransaction: { status: 'Successful', time: synced.time, error: null } });
  const current = { api_id: synced.id, latestTransaction: { status: 'Successful', time: '2020-01-01T00:00:00Z' } };
  t.equal(statusPatch(API_DEFINITION, current, synced), undefined);
  const failed = record().failed('gateway said no').build();
  t.match(statusPatch(API_DEFINITION, current, failed), { latestTransaction: { status: 'Failed', error: 'gateway said no' } });
  t.equal(transactionFor(record().pending().build()).status, 'Pending');
  t.equal(transactionFor(record().diverged('renamed').build()).status, 'Failed');
  t.ok(statusPatch(API_DEFINITION, { ...current, api_id: 'other' }, synced), 'a different id is patched');
});

t.test('status: an id not known yet is left out, never sent as ""', async (t) => {
  const failed = { ...record().failed('OperatorContext default/nope not found').build(), id: '' };
  const patch = statusPatch(API_DEFINITION, undefined, failed);
  t.same(patch, { latestTransaction: { status: 'Failed', time: failed.time, error: 'OperatorContext default/nope not found' } });
  t.equal(statusPatch(API_DEFINITION, { latestTransaction: { status: 'Failed', error: 'OperatorContext default/nope not found' } }, failed), undefined, 'said once');
  t.equal(
    statusPatch(API_DEFINITION, { api_id: 'theirs', latestTransaction: { status: 'Failed', error: 'OperatorContext default/nope not found' } }, failed),
    undefined,
    'an id written by someone else is not a change',
  );
});
