/**
 * The fake kube-apiserver under Tyk Operator's own CRDs ($TYK_REFERENCE_DIR/crds), answering as
 * a real kube-apiserver v1.20.2 (Debian's build, Go 1.19) answered the same requests under the
 * same CRDs; the expected bodies below are what that server sent. And our reconciler's status
 * patches, accepted under those CRDs.
 *
 * Needs TYK_REFERENCE_DIR (the folder of Tyk Operator's reference, e.g. /work/shared/reference):
 *   TYK_REFERENCE_DIR=/work/shared/reference npx tap --disable-coverage test/compat/fake-validation.test.ts
 */
import t from 'tap';
import type { KubeObject } from '../../lib/kube/types.js';
import { type FakeKubeApiServer, startFakeKubeApiServer } from '../fakes/kube-apiserver.js';
import { type Cause, invalidStatus } from '../fakes/status-bodies.js';
import { startWorld } from '../harness/world.js';
import { referencePath } from './reference.js';

const TYK_CRDS = referencePath('crds');

// Response bodies are JSON asserted field by field.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const APIS = '/apis/tyk.tyk.io/v1alpha1/namespaces/default/apidefinitions';
const POLICIES = '/apis/tyk.tyk.io/v1alpha1/namespaces/default/securitypolicies';
const MERGE = 'application/merge-patch+json';

async function send(fake: FakeKubeApiServer, method: string, path: string, body: unknown, contentType = 'application/json'): Promise<{ status: number; body: Json }> {
  const res = await fetch(fake.url + path, {
    method,
    headers: { authorization: `Bearer ${fake.token}`, 'content-type': contentType },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

async function startTyk(tt: { teardown(fn: () => unknown): void }): Promise<FakeKubeApiServer> {
  const fake = await startFakeKubeApiServer({ crds: [TYK_CRDS] });
  tt.teardown(() => fake.close());
  return fake;
}

const HTTPBIN = {
  apiVersion: 'tyk.tyk.io/v1alpha1',
  kind: 'ApiDefinition',
  metadata: { name: 'httpbin' },
  spec: { name: 'httpbin', protocol: 'http', use_keyless: true, active: true, proxy: { target_url: 'http://x', listen_path: '/h' } },
};

/** ApiDefinition "httpbin" with a status, as the real server's tests started. */
async function withStatus(fake: FakeKubeApiServer): Promise<void> {
  t.equal((await send(fake, 'POST', APIS, HTTPBIN)).status, 201);
  const status = { api_id: 'abc', latestTransaction: { status: 'Failed', error: 'boom', time: '2024-01-01T00:00:00Z' }, linked_by_policies: [{ name: 'p', namespace: 'default' }] };
  t.equal((await send(fake, 'PATCH', `${APIS}/httpbin/status`, { status }, MERGE)).status, 200);
}

function invalidApi(causes: Cause[]): Json {
  return invalidStatus('ApiDefinition', 'tyk.tyk.io', 'httpbin', causes);
}

t.test('ApiDefinition: a merge patch of status.api_id null is 422 (its CRD requires api_id) and the status is kept', async (t) => {
  const fake = await startTyk(t);
  await withStatus(fake);
  const r = await send(fake, 'PATCH', `${APIS}/httpbin/status`, { status: { api_id: null } }, MERGE);
  t.equal(r.status, 422);
  t.same(r.body, invalidApi([{ reason: 'FieldValueRequired', message: 'Required value', field: 'status.api_id' }]), 'the null removes the field; the schema then misses it');
  t.equal(fake.getObject('apidefinitions', 'default', 'httpbin')?.status?.api_id, 'abc', 'the object keeps its old status');
});

t.test('ApiDefinition: status.api_id "" is the 422 the design records', async (t) => {
  const fake = await startTyk(t);
  await withStatus(fake);
  const r = await send(fake, 'PATCH', `${APIS}/httpbin/status`, { status: { api_id: '' } }, MERGE);
  t.same(r.body, invalidApi([{ reason: 'FieldValueInvalid', message: 'Invalid value: "null": status.api_id in body must be of type string: "null"', field: 'status.api_id' }]));
  const error = await send(fake, 'PATCH', `${APIS}/httpbin/status`, { status: { latestTransaction: { error: '' } } }, MERGE);
  t.equal(
    error.body.message,
    'ApiDefinition.tyk.tyk.io "httpbin" is invalid: status.latestTransaction.error: Invalid value: "null": status.latestTransaction.error in body must be of type string: "null"',
  );
  t.same(fake.getObject('apidefinitions', 'default', 'httpbin')?.status?.latestTransaction, { status: 'Failed', error: 'boom', time: '2024-01-01T00:00:00Z' });
});

t.test('ApiDefinition: nulls for optional fields remove them; [] empties a list', async (t) => {
  const fake = await startTyk(t);
  await withStatus(fake);
  const cleared = await send(fake, 'PATCH', `${APIS}/httpbin/status`, { status: { latestTransaction: { error: null }, linked_by_policies: null } }, MERGE);
  t.equal(cleared.status, 200);
  t.same(cleared.body.status, { api_id: 'abc', latestTransaction: { status: 'Failed', time: '2024-01-01T00:00:00Z' } });
  const empty = await send(fake, 'PATCH', `${APIS}/httpbin/status`, { status: { linked_by_policies: [null] } }, MERGE);
  t.same(empty.body.status.linked_by_policies, [], 'a null list item in a merge patch is pruned');
});

t.test("ApiDefinition: spec types, enum and required, with the real server's messages and paths", async (t) => {
  const fake = await startTyk(t);
  await send(fake, 'POST', APIS, HTTPBIN);
  const r = await send(fake, 'PATCH', `${APIS}/httpbin`, { spec: { name: 5, protocol: 'x', active: 'yes', proxy: { listen_path: 1.5 } } }, MERGE);
  t.equal(r.status, 422);
  t.same(r.body.details.causes.map((c: Json) => `${c.field}: ${c.message}`).sort(), [
    'spec.active: Invalid value: "string": spec.active in body must be of type boolean: "string"',
    'spec.name: Invalid value: "integer": spec.name in body must be of type string: "integer"',
    'spec.protocol: Unsupported value: "x": supported values: "", "h2c", "tcp", "tls", "http", "https"',
    'spec.proxy.listen_path: Invalid value: "number": spec.proxy.listen_path in body must be of type string: "number"',
  ]);
  const removed = await send(fake, 'PATCH', `${APIS}/httpbin`, { spec: { name: null } }, MERGE);
  t.equal(removed.body.message, 'ApiDefinition.tyk.tyk.io "httpbin" is invalid: spec.name: Required value');
  const created = await send(fake, 'POST', APIS, { ...HTTPBIN, metadata: { name: 'bad' }, spec: { protocol: 'x', proxy: {} }, status: { api_id: 5 } });
  t.same(
    created.body.details.causes.map((c: Json) => `${c.field}: ${c.message}`).sort(),
    ['spec.name: Required value', 'spec.protocol: Unsupported value: "x": supported values: "", "h2c", "tcp", "tls", "http", "https"', 'spec.proxy.target_url: Required value'],
    'a create is validated after its status is dropped',
  );
  const port = await send(fake, 'PATCH', `${APIS}/httpbin`, { spec: { listen_port: '' } }, MERGE);
  t.equal(port.body.message, 'ApiDefinition.tyk.tyk.io "httpbin" is invalid: spec.listen_port: Invalid value: "null": spec.listen_port in body must be of type integer: "null"');
  const tracing = await send(fake, 'PATCH', `${APIS}/httpbin`, [{ op: 'add', path: '/spec/detailed_tracing', value: null }], 'application/json-patch+json');
  t.equal(tracing.body.spec.detailed_tracing, null, 'a nullable field keeps null');
});

t.test('SecurityPolicy: an unknown status field (latestTransaction) is pruned silently; paths leave list indices out', async (t) => {
  const fake = await startTyk(t);
  const policy = { apiVersion: 'tyk.tyk.io/v1alpha1', kind: 'SecurityPolicy', metadata: { name: 'p' }, spec: { name: 'p', active: true, state: 'active', access_rights_array: [] } };
  t.equal((await send(fake, 'POST', POLICIES, policy)).status, 201);
  const r = await send(fake, 'PATCH', `${POLICIES}/p/status`, { status: { pol_id: 'abc', latestTransaction: { status: 'Successful' } } }, MERGE);
  t.equal(r.status, 200);
  t.same(r.body.status, { pol_id: 'abc' }, 'latestTransaction is gone');
  t.same(fake.getObject('securitypolicies', 'default', 'p')?.status, { pol_id: 'abc' });

  const nested = await send(
    fake,
    'PATCH',
    `${POLICIES}/p`,
    { spec: { access_rights_array: [{ name: 'a', namespace: 'd', allowed_urls: [{ url: '/x', methods: ['GET'], bogus: 1 }], bogus: 2 }] } },
    MERGE,
  );
  t.same(nested.body.spec.access_rights_array, [{ name: 'a', namespace: 'd', allowed_urls: [{ url: '/x', methods: ['GET'] }] }], 'unknown fields in list items are pruned');
  const bad = await send(fake, 'PATCH', `${POLICIES}/p`, { spec: { access_rights_array: [{ name: 'a', namespace: 'd', allowed_urls: [{ url: '/x', methods: [1, 'GET'] }] }, 5] } }, MERGE);
  t.same(bad.body.details.causes.map((c: Json) => `${c.field}: ${c.message}`).sort(), [
    'spec.access_rights_array.allowed_urls.methods: Invalid value: "integer": spec.access_rights_array.allowed_urls.methods in body must be of type string: "integer"',
    'spec.access_rights_array: Invalid value: "integer": spec.access_rights_array in body must be of type object: "integer"',
  ]);
});

t.test("our reconciler's status patches are accepted under Tyk Operator's CRDs", async (t) => {
  const w = await startWorld({ kube: { crds: [TYK_CRDS] } });
  t.teardown(() => w.close());
  const api = (name: string, extra: Record<string, unknown> = {}): KubeObject =>
    ({ ...HTTPBIN, metadata: { name, namespace: 'default' }, spec: { ...HTTPBIN.spec, name, proxy: { target_url: 'http://x', listen_path: `/${name}` }, ...extra } }) as KubeObject;
  await w.create(api('httpbin'));
  await w.create(api('lost', { contextRef: { name: 'nope', namespace: 'default' } }));
  await w.create({
    apiVersion: 'tyk.tyk.io/v1alpha1',
    kind: 'SecurityPolicy',
    metadata: { name: 'p', namespace: 'default' },
    spec: { name: 'p', active: true, state: 'active', access_rights_array: [{ name: 'httpbin', namespace: 'default', versions: ['Default'] }] },
  } as KubeObject);
  await w.tick();
  await w.tick();
  const refused = w.kube.calls.filter((c) => c.status >= 400 && c.method !== 'GET');
  t.same(
    refused.map((c) => `${c.method} ${c.path} ${c.status}`),
    [],
    'no write was refused',
  );
  t.match((await w.get('httpbin'))?.status, {
    api_id: Buffer.from('default/httpbin').toString('base64url'),
    latestTransaction: { status: 'Successful' },
    linked_by_policies: [{ name: 'p', namespace: 'default' }],
  });
  t.match((await w.get('lost'))?.status, { api_id: Buffer.from('default/lost').toString('base64url'), latestTransaction: { status: 'Failed', error: 'OperatorContext default/nope not found' } });
  const policy = await w.get('p', 'default', 'securitypolicies');
  t.equal(policy?.status?.pol_id, Buffer.from('default/p').toString('base64url'));
  t.notOk('latestTransaction' in (policy?.status ?? {}), 'pruned by their SecurityPolicy CRD');

  await w.delete('p', 'default', 'securitypolicies');
  await w.tick();
  await w.tick();
  t.notOk('linked_by_policies' in ((await w.get('httpbin'))?.status ?? {}), 'the emptied link list is removed with null');
  t.same(
    w.kube.calls.filter((c) => c.status >= 400 && c.method !== 'GET').map((c) => `${c.method} ${c.path} ${c.status}`),
    [],
  );
});
