/**
 * Event intake through HTTP: every forwarder format (audit, watch, CloudEvents in three
 * modes with Knative's types, Argo Events), deduplication, our own identity, coalescing and
 * folding, rate limits, body limits, TLS with client certificates, and hostile input.
 */
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import fc from 'fast-check';
import t from 'tap';
import { Agent, request } from 'undici';
import type { RunReport } from '../../lib/engine/run.js';
import { buildApp } from '../../lib/server.js';
import { apiDefinition } from '../fixtures/builders.js';
import { startWorld, WEBHOOK_TOKEN, type World } from '../harness/world.js';

const AUTH = { authorization: `Bearer ${WEBHOOK_TOKEN}` };
const idOf = (name: string, ns = 'default') => Buffer.from(`${ns}/${name}`).toString('base64url');
const tls = (f: string) => readFileSync(new URL(`../fixtures/tls/${f}`, import.meta.url));

async function world(t: { teardown(fn: () => unknown): void }, options?: Parameters<typeof startWorld>[0]): Promise<World> {
  const w = await startWorld(options);
  t.teardown(() => w.close());
  return w;
}

interface IntakeBody {
  accepted: number;
  ignored: Record<string, number>;
  folded?: string;
  report: RunReport | null;
}

async function post(w: World, url: string, body: string, headers: Record<string, string>, remoteAddress?: string) {
  const res = await w.app.inject({ method: 'POST', url, payload: body, headers: { ...AUTH, ...headers }, ...(remoteAddress ? { remoteAddress } : {}) });
  return { statusCode: res.statusCode, headers: res.headers, body: res.json() as IntakeBody };
}

const subject = (name: string, ns = 'default') => `/apis/tyk.tyk.io/v1alpha1/namespaces/${ns}/apidefinitions/${name}`;
let seq = 0;
function knative(type: 'add' | 'update' | 'delete', mode: 'resource' | 'ref', data: unknown, name: string) {
  return { specversion: '1.0', id: `ev-${++seq}`, source: 'https://10.96.0.1:443', type: `dev.knative.apiserver.${mode}.${type}`, subject: subject(name), datacontenttype: 'application/json', data };
}
const ref = (name: string, ns = 'default') => ({ apiVersion: 'tyk.tyk.io/v1alpha1', kind: 'ApiDefinition', name, namespace: ns });

t.test('CloudEvents, binary mode (ApiServerSource, Resource mode): create, update, delete', async (t) => {
  const w = await world(t);
  const binary = async (type: 'add' | 'update' | 'delete', data: unknown) => {
    const res = await post(w, '/webhooks/cloudevents', JSON.stringify(data), {
      'content-type': 'application/json',
      'ce-specversion': '1.0',
      'ce-id': `bin-${++seq}`,
      'ce-source': 'https://10.96.0.1:443',
      'ce-type': `dev.knative.apiserver.resource.${type}`,
      'ce-subject': subject('httpbin'),
    });
    t.equal(res.statusCode, 200, JSON.stringify(res.body));
    return res.body;
  };
  await w.create(apiDefinition('httpbin').build());
  t.match(await binary('add', await w.get('httpbin')), { accepted: 1, report: { objects: [{ name: 'httpbin', result: 'synced' }] } });
  t.ok(w.gatewayApi(idOf('httpbin')));
  await w.updateSpec('httpbin', (s) => ({ ...s, name: 'changed' }));
  await binary('update', await w.get('httpbin'));
  t.match(w.gatewayApi(idOf('httpbin')), { name: 'changed' });
  await w.delete('httpbin');
  await binary('delete', await w.get('httpbin'));
  t.equal(w.gatewayApi(idOf('httpbin')), undefined);
  t.equal(await w.get('httpbin'), undefined);
});

t.test('CloudEvents, structured mode and batches (ApiServerSource, Reference mode): create, update, delete', async (t) => {
  const w = await world(t);
  const structured = (ev: unknown) => post(w, '/webhooks/cloudevents', JSON.stringify(ev), { 'content-type': 'application/cloudevents+json; charset=utf-8' });
  const batch = (evs: unknown[]) => post(w, '/webhooks/cloudevents', JSON.stringify(evs), { 'content-type': 'application/cloudevents-batch+json' });
  await w.create(apiDefinition('a').build());
  await w.create(apiDefinition('b').build());
  const created = await batch([knative('add', 'ref', ref('a'), 'a'), knative('add', 'ref', ref('b'), 'b')]);
  t.match(created.body, { accepted: 2, report: { gateway: { writes: 2, reloads: 1 } } });
  await w.updateSpec('a', (s) => ({ ...s, name: 'a2' }));
  // a forwarder that sends only the subject still works
  const updated = await structured({ specversion: '1.0', id: 'u1', source: 'forwarder', type: 'x.updated', subject: subject('a') });
  t.match(updated.body, { accepted: 1 });
  t.match(w.gatewayApi(idOf('a')), { name: 'a2' });
  await w.delete('b');
  const deleted = await structured({ ...knative('delete', 'ref', ref('b'), 'b'), data_base64: Buffer.from(JSON.stringify(ref('b'))).toString('base64'), data: undefined });
  t.match(deleted.body.report?.objects, [{ name: 'b', result: 'deleted' }]);
  t.equal(await w.get('b'), undefined);
});

t.test('Argo Events resource events, on the CloudEvents and the watch routes: create, update, delete', async (t) => {
  const w = await world(t);
  const argo = (type: string, body: unknown) => ({ type, body, group: 'tyk.tyk.io', version: 'v1alpha1', resource: 'apidefinitions' });
  await w.create(apiDefinition('httpbin').build());
  const viaCe = await post(w, '/webhooks/cloudevents', JSON.stringify(argo('ADD', await w.get('httpbin'))), {
    'content-type': 'application/json',
    'ce-specversion': '1.0',
    'ce-id': 'argo-1',
    'ce-source': 'argo-events',
    'ce-type': 'resource',
  });
  t.match(viaCe.body, { accepted: 1, report: { objects: [{ result: 'synced' }] } });
  await w.updateSpec('httpbin', (s) => ({ ...s, name: 'argo' }));
  const viaWatch = await post(w, '/webhooks/watch', JSON.stringify(argo('UPDATE', await w.get('httpbin'))), { 'content-type': 'application/json' });
  t.match(viaWatch.body.report?.objects, [{ reason: 'spec changed', result: 'synced' }]);
  await w.delete('httpbin');
  await post(w, '/webhooks/watch', JSON.stringify(argo('DELETE', await w.get('httpbin'))), { 'content-type': 'application/json' });
  t.equal(w.gatewayApi(idOf('httpbin')), undefined);
  const pods = await post(w, '/webhooks/watch', JSON.stringify(argo('ADD', { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'x' } })), { 'content-type': 'application/json' });
  t.match(pods.body, { accepted: 0, ignored: { 'kind not reconciled': 1 }, report: null });
});

function auditEvent(id: string, verb: string, name: string, user = 'jane@example.com') {
  return {
    level: 'Metadata',
    auditID: id,
    stage: 'ResponseComplete',
    requestURI: `/apis/tyk.tyk.io/v1alpha1/namespaces/default/apidefinitions/${name}`,
    verb,
    user: { username: user },
    objectRef: { resource: 'apidefinitions', namespace: 'default', name, apiGroup: 'tyk.tyk.io', apiVersion: 'v1alpha1' },
    responseStatus: { code: 200 },
  };
}
const eventList = (...items: unknown[]) => JSON.stringify({ kind: 'EventList', apiVersion: 'audit.k8s.io/v1', items });

t.test('the same audit batch delivered three times costs one run', async (t) => {
  const w = await world(t);
  await w.create(apiDefinition('a').build());
  await w.create(apiDefinition('b').build());
  const batch = eventList(auditEvent('id-1', 'create', 'a'), auditEvent('id-2', 'create', 'b'));
  const first = await post(w, '/webhooks/audit', batch, { 'content-type': 'application/json' });
  t.match(first.body, { accepted: 2, report: { gateway: { writes: 2 } } });
  w.resetCounts();
  for (let i = 0; i < 2; i++) {
    const again = await post(w, '/webhooks/audit', batch, { 'content-type': 'application/json' });
    t.equal(again.statusCode, 200);
    t.match(again.body, { accepted: 0, ignored: { 'already delivered': 2 }, report: null });
  }
  t.equal(w.kube.calls.length + w.tyk.calls.length, 0, 'the resends cost no call at all');
  // a batch with one new event runs for that event only
  const mixed = await post(w, '/webhooks/audit', eventList(auditEvent('id-2', 'create', 'b'), auditEvent('id-3', 'update', 'a')), { 'content-type': 'application/json' });
  t.match(mixed.body, { accepted: 1, ignored: { 'already delivered': 1 } });
  t.same(
    mixed.body.report?.objects.map((o) => o.name),
    ['a'],
  );
});

t.test('audit events of our own writes are ignored: learned from the API server, or RECONCILER_USERNAME', async (t) => {
  const w = await world(t);
  await w.create(apiDefinition('a').build());
  const ours = eventList(auditEvent('own-1', 'patch', 'a', w.kube.username));
  const learned = await post(w, '/webhooks/audit', ours, { 'content-type': 'application/json' });
  t.match(learned.body, { accepted: 0, ignored: { 'our own request': 1 }, report: null });
  t.equal(w.kube.count('POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews'), 1, 'asked once');
  await post(w, '/webhooks/audit', eventList(auditEvent('own-2', 'patch', 'a', w.kube.username)), { 'content-type': 'application/json' });
  t.equal(w.kube.count('POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews'), 1, 'and remembered');

  const w2 = await world(t, { env: { RECONCILER_USERNAME: 'system:serviceaccount:tyk:reconciler' } });
  const named = await post(w2, '/webhooks/audit', eventList(auditEvent('own-3', 'patch', 'a', 'system:serviceaccount:tyk:reconciler')), { 'content-type': 'application/json' });
  t.match(named.body, { ignored: { 'our own request': 1 } });
  t.equal(w2.kube.count('POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews'), 0, 'not asked when configured');
});

t.test('1,000 events about 10 objects cause at most 10 reconciles, in one run', async (t) => {
  const w = await world(t);
  const names = Array.from({ length: 10 }, (_, i) => `api${i}`);
  for (const n of names) await w.create(apiDefinition(n).build());
  w.resetCounts();
  const events = Array.from({ length: 1000 }, (_, i) => ({
    type: i % 3 === 0 ? 'ADDED' : 'MODIFIED',
    object: { apiVersion: 'tyk.tyk.io/v1alpha1', kind: 'ApiDefinition', metadata: { name: names[i % 10], namespace: 'default' } },
  }));
  const res = await post(w, '/webhooks/watch', events.map((e) => JSON.stringify(e)).join('\n'), { 'content-type': 'application/x-ndjson' });
  t.equal(res.body.accepted, 1000);
  t.equal(res.body.report?.objects.length, 10);
  t.equal(w.tyk.writes(), 10);
  t.equal(w.tyk.count('GET', '/tyk/reload/group'), 1);
  t.ok(w.kube.count('GET', /\/apidefinitions\/[^/]+$/) <= 20, 'a read per object, and one more under its lock');
});

t.test('more objects than WEBHOOK_MAX_REFS are folded into namespace-wide runs, or a full run', async (t) => {
  const w = await world(t, { env: { WEBHOOK_MAX_REFS: '3' } });
  const ev = (name: string, ns: string) => ({ type: 'ADDED', object: { apiVersion: 'tyk.tyk.io/v1alpha1', kind: 'ApiDefinition', metadata: { name, namespace: ns } } });
  for (const [n, ns] of [
    ['a', 'x'],
    ['b', 'x'],
    ['c', 'x'],
    ['d', 'y'],
    ['e', 'y'],
  ] as const)
    await w.create(apiDefinition(n).inNamespace(ns).build());
  const byNs = await post(w, '/webhooks/watch', JSON.stringify([ev('a', 'x'), ev('b', 'x'), ev('c', 'x'), ev('d', 'y')]), { 'content-type': 'application/json' });
  t.equal(byNs.body.folded, 'namespaces');
  t.same(
    byNs.body.report?.objects.map((o) => `${o.namespace}/${o.name}`),
    ['x/a', 'x/b', 'x/c', 'y/d', 'y/e'],
    'whole namespaces x and y',
  );
  const spread = [1, 2, 3, 4].map((i) => ev(`n${i}`, `ns${i}`));
  const all = await post(w, '/webhooks/watch', JSON.stringify(spread), { 'content-type': 'application/json' });
  t.equal(all.body.folded, 'all');
  t.equal(all.body.report?.objects.length, 5, 'a full run');
});

t.test('a source over WEBHOOK_RATE_LIMIT gets 429 with Retry-After; others are not affected', async (t) => {
  const w = await world(t, { env: { WEBHOOK_RATE_LIMIT: '2' } });
  const body = JSON.stringify([]);
  t.equal((await post(w, '/webhooks/watch', body, { 'content-type': 'application/json' }, '10.0.0.1')).statusCode, 200);
  t.equal((await post(w, '/webhooks/watch', body, { 'content-type': 'application/json' }, '10.0.0.1')).statusCode, 200);
  const limited = await post(w, '/webhooks/watch', body, { 'content-type': 'application/json' }, '10.0.0.1');
  t.equal(limited.statusCode, 429);
  t.match(limited.body, { error: /too many requests.*WEBHOOK_RATE_LIMIT/ });
  t.equal(limited.headers['retry-after'], '30');
  t.equal((await post(w, '/webhooks/watch', body, { 'content-type': 'application/json' }, '10.0.0.2')).statusCode, 200, 'another source');
  w.clock.advance(30_000);
  t.equal((await post(w, '/webhooks/watch', body, { 'content-type': 'application/json' }, '10.0.0.1')).statusCode, 200, 'and later again');
  const unauth = await w.app.inject({ method: 'POST', url: '/webhooks/watch', payload: body, headers: { 'content-type': 'application/json' }, remoteAddress: '10.0.0.9' });
  t.equal(unauth.statusCode, 401, 'a request without a token does not spend the budget');
});

t.test('a body over WEBHOOK_BODY_LIMIT: 413 before it is read whole', async (t) => {
  const w = await world(t, { env: { WEBHOOK_BODY_LIMIT: '4096' } });
  await w.app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = w.app.server.address() as { port: number };
  const socket = connect(port, '127.0.0.1');
  await once(socket, 'connect');
  // announce 100 MB, send 10 bytes: the answer must come without the rest
  socket.write(`POST /webhooks/audit HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${WEBHOOK_TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 100000000\r\n\r\n{"kind":"E`);
  const [chunk] = (await once(socket, 'data')) as [Buffer];
  socket.destroy();
  t.match(chunk.toString(), /^HTTP\/1.1 413/);
});

t.test('HTTPS with TLS_CLIENT_CA: webhooks need a client certificate signed by it; probes do not', async (t) => {
  const w = await world(t, { env: { TLS_CERT: 'x', TLS_KEY: 'x', TLS_CLIENT_CA: 'x' } });
  const app = buildApp(w.svc, { https: { cert: tls('server.pem'), key: tls('server-key.pem'), ca: tls('ca.pem') } });
  t.teardown(() => app.close());
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as { port: number };
  const call = async (path: string, client?: 'client' | 'stranger') => {
    const dispatcher = new Agent({ connect: { ca: tls('ca.pem'), ...(client ? { cert: tls(`${client}.pem`), key: tls(`${client}-key.pem`) } : {}) } });
    try {
      const res = await request(`https://127.0.0.1:${port}${path}`, {
        method: path === '/healthz' ? 'GET' : 'POST',
        headers: { ...AUTH, 'content-type': 'application/json' },
        body: path === '/healthz' ? undefined : '[]',
        dispatcher,
      });
      return { status: res.statusCode, body: await res.body.text() };
    } finally {
      await dispatcher.close();
    }
  };
  t.equal((await call('/healthz')).status, 200, 'probe without a certificate');
  const none = await call('/webhooks/watch');
  t.equal(none.status, 401);
  t.match(none.body, /client certificate signed by TLS_CLIENT_CA/);
  t.equal((await call('/webhooks/watch', 'stranger')).status, 401, 'a certificate the CA did not sign');
  t.equal((await call('/webhooks/watch', 'client')).status, 200);
});

t.test('hostile bodies through HTTP: never a 5xx, always 2xx or 4xx with a reason', async (t) => {
  const w = await world(t);
  await w.create(apiDefinition('a').build());
  const valid = [
    JSON.stringify({ type: 'ADDED', object: { apiVersion: 'tyk.tyk.io/v1alpha1', kind: 'ApiDefinition', metadata: { name: 'a', namespace: 'default' } } }),
    eventList(auditEvent('h-1', 'update', 'a')),
    JSON.stringify(knative('update', 'ref', ref('a'), 'a')),
  ];
  const routes = [
    ['/webhooks/watch', 'application/json'],
    ['/webhooks/audit', 'application/json'],
    ['/webhooks/cloudevents', 'application/cloudevents+json'],
  ] as const;
  const body = fc.oneof(
    fc.string(),
    fc.jsonValue().map((v) => JSON.stringify(v)),
    fc.tuple(fc.constantFrom(...valid), fc.nat(), fc.nat({ max: 6 }), fc.string({ maxLength: 3 })).map(([s, at, cut, ins]) => s.slice(0, at % s.length) + ins + s.slice((at % s.length) + cut)),
  );
  let checked = 0;
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(...routes), body, async ([url, type], payload) => {
      const res = await w.app.inject({ method: 'POST', url, payload, headers: { ...AUTH, 'content-type': type } });
      checked++;
      if (res.statusCode >= 500) return false;
      if (res.statusCode >= 400) return typeof (res.json() as { error?: unknown }).error === 'string';
      return res.statusCode === 200;
    }),
    { numRuns: 400 },
  );
  t.equal(checked, 400);
});
