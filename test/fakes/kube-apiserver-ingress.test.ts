/**
 * The fake API server serves networking.k8s.io/v1 Ingresses as kube-apiserver 1.20 does: namespaced,
 * built in (list items without apiVersion and kind, strategic merge accepted), a status
 * subresource, generation bumped by spec changes only, finalizers holding a DELETE, label
 * selectors, its validation (with the real messages), and for every kind the metadata rules the
 * Ingress controller's writes meet: label values, ownerReferences (one controller, uid required).
 */
import t from 'tap';
import { type FakeKubeApiServer, startFakeKubeApiServer } from './kube-apiserver.js';

type Json = Record<string, unknown> & { [k: string]: any };

const ING = '/apis/networking.k8s.io/v1/namespaces/default/ingresses';
const APIS = '/apis/tyk.tyk.io/v1alpha1/namespaces/default/apidefinitions';

async function start(tt: { teardown(fn: () => unknown): void }): Promise<FakeKubeApiServer> {
  const fake = await startFakeKubeApiServer();
  tt.teardown(() => fake.close());
  return fake;
}

async function call(fake: FakeKubeApiServer, method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<{ status: number; body: Json }> {
  const headers: Record<string, string> = { authorization: `Bearer ${fake.token}` };
  if (body !== undefined) headers['content-type'] = contentType;
  const res = await fetch(fake.url + path, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  return { status: res.status, body: (await res.json()) as Json };
}

const ingress = (name: string, paths: unknown[] = [{ path: '/a', pathType: 'Prefix', backend: { service: { name: 'web', port: { number: 80 } } } }], extra: Json = {}): Json => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'Ingress',
  metadata: { name, annotations: { 'kubernetes.io/ingress.class': 'tyk' }, ...extra },
  spec: { rules: [{ host: 'shop.example', http: { paths } }] },
});

t.test('Ingress: created, listed, its spec changes bump generation, its status is a subresource', async (t) => {
  const fake = await start(t);
  const created = await call(fake, 'POST', ING, ingress('web'));
  t.equal(created.status, 201);
  t.match(created.body, { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata: { name: 'web', namespace: 'default', generation: 1, uid: /./ } });
  const list = await call(fake, 'GET', ING);
  t.equal(list.body.kind, 'IngressList');
  t.same(Object.keys(list.body.items[0]).sort(), ['metadata', 'spec'], 'list items of a built-in kind carry no apiVersion and kind');
  const annotated = await call(fake, 'PATCH', `${ING}/web`, { metadata: { annotations: { note: 'x' } } }, 'application/merge-patch+json');
  t.equal(annotated.body.metadata.generation, 1, 'metadata changes keep the generation');
  const edited = await call(
    fake,
    'PATCH',
    `${ING}/web`,
    { spec: { rules: [{ host: 'shop.example', http: { paths: [{ path: '/b', pathType: 'Exact', backend: { service: { name: 'web', port: { number: 80 } } } }] } }] } },
    'application/strategic-merge-patch+json',
  );
  t.equal(edited.status, 200, 'strategic merge is accepted for a built-in kind');
  t.equal(edited.body.metadata.generation, 2, 'a spec change bumps it');
  const status = await call(fake, 'PATCH', `${ING}/web/status`, { status: { loadBalancer: { ingress: [{ ip: '10.0.0.1' }] } } }, 'application/merge-patch+json');
  t.same(status.body.status, { loadBalancer: { ingress: [{ ip: '10.0.0.1' }] } });
  t.equal(status.body.metadata.generation, 2, 'a status write keeps the generation');
  const put = await call(fake, 'PUT', `${ING}/web`, { ...status.body, status: {} });
  t.same(put.body.status, { loadBalancer: { ingress: [{ ip: '10.0.0.1' }] } }, 'the main resource cannot change the status');
});

t.test('Ingress: a finalizer holds a DELETE; removing it completes the deletion', async (t) => {
  const fake = await start(t);
  await call(fake, 'POST', ING, ingress('web', undefined, { finalizers: ['finalizers.tyk.io/ingress'] }));
  const deleted = await call(fake, 'DELETE', `${ING}/web`);
  t.match(deleted.body.metadata, { deletionTimestamp: /./, finalizers: ['finalizers.tyk.io/ingress'], generation: 2 });
  const current = await call(fake, 'GET', `${ING}/web`);
  const refused = await call(
    fake,
    'PATCH',
    `${ING}/web`,
    { metadata: { finalizers: ['finalizers.tyk.io/ingress', 'x/y'], resourceVersion: current.body.metadata.resourceVersion } },
    'application/merge-patch+json',
  );
  t.equal(refused.status, 422, 'no new finalizer while deleting');
  const stale = await call(fake, 'PATCH', `${ING}/web`, { metadata: { finalizers: [], resourceVersion: '1' } }, 'application/merge-patch+json');
  t.equal(stale.status, 409, 'a stale resourceVersion in the patch: 409');
  const done = await call(fake, 'PATCH', `${ING}/web`, { metadata: { finalizers: [], resourceVersion: current.body.metadata.resourceVersion } }, 'application/merge-patch+json');
  t.equal(done.status, 200);
  t.equal((await call(fake, 'GET', `${ING}/web`)).status, 404, 'gone once its last finalizer is');
});

t.test("Ingress validation, in kube-apiserver's words", async (t) => {
  const fake = await start(t);
  const refused = async (body: Json, field: RegExp, message: RegExp) => {
    const r = await call(fake, 'POST', ING, body);
    t.equal(r.status, 422, `${field}: 422`);
    t.match(r.body.details.causes, [{ field, message }]);
    t.match(r.body.message, /^Ingress\.networking\.k8s\.io "[^"]+" is invalid: /);
  };
  await refused(ingress('no-type', [{ path: '/a', backend: { service: { name: 'web', port: { number: 80 } } } }]), /pathType/, /Required value: pathType must be specified/);
  await refused(
    ingress('relative', [{ path: 'a', pathType: 'Prefix', backend: { service: { name: 'web', port: { number: 80 } } } }]),
    /^spec\.rules\[0\]\.http\.paths\[0\]\.path$/,
    /must be an absolute path/,
  );
  await refused(
    ingress('both-ports', [{ path: '/a', pathType: 'Prefix', backend: { service: { name: 'web', port: { number: 80, name: 'http' } } } }]),
    /backend$/,
    /cannot set both port name & port number/,
  );
  await refused(ingress('no-port', [{ path: '/a', pathType: 'Prefix', backend: { service: { name: 'web', port: {} } } }]), /backend$/, /port name or number is required/);
  await refused(ingress('no-backend', [{ path: '/a', pathType: 'Prefix', backend: {} }]), /backend$/, /resource or service backend is required/);
  await refused({ ...ingress('both-classes'), spec: { ...ingress('x').spec, ingressClassName: 'tyk' } }, /ingress\.class/, /can not be set when the class field is also set/);
  await refused({ ...ingress('ip'), spec: { rules: [{ host: '10.0.0.1', http: ingress('x').spec.rules[0].http }] } }, /host/, /must be a DNS name, not an IP address/);
  await refused({ ...ingress('empty'), spec: {} }, /^spec\.rules$/, /either `defaultBackend` or `rules` must be specified/);
  const wildcard = await call(fake, 'POST', ING, { ...ingress('wild'), spec: { rules: [{ host: '*.shop.example', http: ingress('x').spec.rules[0].http }] } });
  t.equal(wildcard.status, 201, 'a wildcard host');
  const named = await call(fake, 'POST', ING, ingress('named', [{ path: '/a', pathType: 'ImplementationSpecific', backend: { service: { name: 'web', port: { name: 'http' } } } }]));
  t.equal(named.status, 201, 'a named port');
});

t.test('every kind: label values and ownerReferences are validated', async (t) => {
  const fake = await start(t);
  const api = (name: string, metadata: Json) => ({ apiVersion: 'tyk.tyk.io/v1alpha1', kind: 'ApiDefinition', metadata: { name, ...metadata }, spec: { name } });
  const long = await call(fake, 'POST', APIS, api('a', { labels: { 'tyk.io/ingress': 'x'.repeat(64) } }));
  t.equal(long.status, 422);
  t.match(long.body.details.causes, [{ field: 'metadata.labels', message: /must be no more than 63 characters/ }]);
  const owner = (name: string, uid: string, controller: boolean) => ({ apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', name, uid, controller, blockOwnerDeletion: true });
  const noUid = await call(fake, 'POST', APIS, api('b', { ownerReferences: [owner('web', '', true)] }));
  t.match(noUid.body.details.causes, [{ field: 'metadata.ownerReferences.uid', message: /uid must not be empty/ }]);
  const two = await call(fake, 'POST', APIS, api('c', { ownerReferences: [owner('web', 'u1', true), owner('other', 'u2', true)] }));
  t.match(two.body.details.causes, [{ field: 'metadata.ownerReferences', message: /Only one reference can have Controller set to true. Found "true" in references for web and other/ }]);
  const ok = await call(fake, 'POST', APIS, api('d', { labels: { 'tyk.io/ingress': 'web', 'tyk.io/apidefinition': 'abc123def' }, ownerReferences: [owner('web', 'u1', true)] }));
  t.equal(ok.status, 201);
  t.same(ok.body.metadata.ownerReferences, [owner('web', 'u1', true)], 'kept as given');
  const selected = await call(fake, 'GET', `${APIS}?labelSelector=${encodeURIComponent('tyk.io/ingress=web')}`);
  t.same(
    selected.body.items.map((i: Json) => i.metadata.name),
    ['d'],
  );
  const update = await call(fake, 'PUT', `${APIS}/d`, { ...ok.body, metadata: { ...ok.body.metadata, ownerReferences: [owner('web', 'u1', true), owner('x', 'u3', true)] } });
  t.equal(update.status, 422, 'an update is validated too');
  const preconditioned = await call(fake, 'DELETE', `${APIS}/d`, { kind: 'DeleteOptions', apiVersion: 'v1', preconditions: { uid: 'not-it' } });
  t.equal(preconditioned.status, 409, 'a DELETE whose uid precondition fails');
});
