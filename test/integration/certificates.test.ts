/**
 * Certificates from Secrets, end to end through HTTP with real Redis, our real clients and the
 * loopback fakes (the Tyk Gateway's /tyk/certs store): uploaded once per content before the API
 * that names it, the API carrying the store's id; a rotated Secret re-uploaded and every API
 * using it written once, the old certificate removed after they moved off; shared Secrets
 * uploaded once; a missing Secret waits and an event about it wakes the API; a certificate
 * deleted on the gateway put back by the schedule; what we did not upload never removed; no
 * private key in any log, report, Event or status.
 */
import t from 'tap';
import type { KubeObject } from '../../lib/kube/types.js';
import { auditEventList } from '../fixtures/audit.js';
import { apiDefinition, defaultIdOf, secret } from '../fixtures/builders.js';
import { certId, PEM } from '../fixtures/pem.js';
import { capturingLogger, type LogEntry, reported, type World, worldFor } from '../harness/world.js';

const tlsSecret = (name: string, cert = PEM.server, key = PEM.serverKey): KubeObject => secret(name).tls(cert, key).build();

/** An ApiDefinition whose upstream certificate (all domains) comes from `secretName`. */
const upstreamApi = (name: string, secretName: string) =>
  apiDefinition(name)
    .patchSpec({ upstream_certificate_refs: { '*': secretName } })
    .build();

const uploads = (w: World) => w.tyk.count('POST', '/tyk/certs');
const certRemovals = (w: World) => w.tyk.count('DELETE', /^\/tyk\/certs\//);

t.test('a TLS Secret referenced by an API: uploaded once, the API carries its id; silent for ten ticks', async (t) => {
  const w = await worldFor(t);
  await w.create(tlsSecret('my-test-tls'));
  await w.create(upstreamApi('httpbin', 'my-test-tls'));
  const first = await w.tick();
  const id = certId(PEM.server);
  t.match(reported(first, 'httpbin'), { action: 'CREATE', result: 'synced' });
  t.equal(uploads(w), 1, 'one upload');
  t.ok(w.tyk.certs().get(id)?.hasPrivate, 'the certificate is in the store, with its key');
  t.strictSame(w.gatewayApi(defaultIdOf('httpbin'))?.upstream_certificates, { '*': id }, 'the API names it by the store id');
  t.notOk('upstream_certificate_refs' in (w.gatewayApi(defaultIdOf('httpbin')) ?? {}), 'the reference is not sent');
  t.strictSame(await w.store.owned('default'), [id], 'remembered as ours');
  t.match((await w.get('httpbin'))?.status, { latestTransaction: { status: 'Successful' } });
  w.resetCounts();
  for (let i = 0; i < 10; i++) await w.tick();
  t.equal(w.tyk.writes(), 0, 'no API write in ten ticks');
  t.equal(uploads(w), 0, 'no upload in ten ticks');
  t.equal(w.statusPatches(), 0, 'no status patch');
  t.equal(w.tyk.count('GET', '/tyk/certs'), 10, 'one certificate listing per run finds them all there');
});

t.test('a rotated Secret, announced by an audit event: one upload, one write per API using it, the old certificate removed', async (t) => {
  const w = await worldFor(t);
  await w.create(tlsSecret('shared-tls'));
  await w.create(upstreamApi('a', 'shared-tls'));
  await w.create(
    apiDefinition('b')
      .patchSpec({ certificate_secret_names: ['shared-tls'] })
      .build(),
  );
  await w.create(apiDefinition('bystander').build());
  await w.tick();
  const oldId = certId(PEM.server);
  t.equal(w.tyk.certs().size, 1);
  w.resetCounts();

  await w.kube.put(tlsSecret('shared-tls', PEM.stranger, PEM.strangerKey));
  const res = await w.audit(auditEventList({ resource: 'secrets', name: 'shared-tls' }));
  t.equal(res.statusCode, 200);
  const report = res.body.report;
  if (!report) throw new Error('no run');
  const newId = certId(PEM.stranger);
  t.strictSame(report.objects.map((o) => `${o.name}:${o.action}:${o.result}`).sort(), ['a:UPDATE:synced', 'b:UPDATE:synced'], 'exactly the APIs using the Secret, without a full run');
  t.equal(uploads(w), 1, 'one upload for both');
  t.equal(w.tyk.writes(), 2, 'one write per API');
  t.strictSame(w.gatewayApi(defaultIdOf('a'))?.upstream_certificates, { '*': newId });
  t.strictSame(w.gatewayApi(defaultIdOf('b'))?.certificates, [newId]);
  t.strictSame([...w.tyk.certs().keys()], [newId], 'the old certificate is gone from the store');
  t.equal(certRemovals(w), 1);
  t.strictSame(await w.store.owned('default'), [newId]);
  const removedAfterWrites = w.tyk.calls.findIndex((c) => c.method === 'DELETE' && c.path.startsWith('/tyk/certs/'));
  const lastApiWrite = w.tyk.calls.findLastIndex((c) => c.method === 'POST' && c.path === '/tyk/apis');
  t.ok(removedAfterWrites > lastApiWrite, 'removed only after the APIs moved off it');
  t.not(oldId, newId);
  w.resetCounts();
  const steady = await w.tick();
  t.equal(w.tyk.writes() + uploads(w) + certRemovals(w), 0, 'then silent');
  t.notOk(
    steady.objects.some((o) => o.action !== 'NOOP'),
    'nothing to do',
  );
});

t.test('two APIs sharing one Secret cause one upload; the certificate stays while one still uses it', async (t) => {
  const w = await worldFor(t);
  await w.create(tlsSecret('tls'));
  await w.create(upstreamApi('one', 'tls'));
  await w.create(upstreamApi('two', 'tls'));
  await w.tick();
  t.equal(uploads(w), 1);
  await w.delete('one');
  const report = await w.tick();
  t.match(reported(report, 'one'), { action: 'DELETE', result: 'deleted' });
  t.equal(certRemovals(w), 0, 'still used by two');
  t.equal(w.tyk.certs().size, 1);
  await w.delete('two');
  await w.tick();
  t.equal(certRemovals(w), 1, 'the last user gone: removed');
  t.equal(w.tyk.certs().size, 0);
  t.strictSame(await w.store.owned('default'), []);
});

t.test('a certificate we did not upload is used, and never removed', async (t) => {
  const w = await worldFor(t);
  // Tyk Operator (or an admin) put it there before us
  const res = await fetch(`${w.tyk.url}/tyk/certs`, { method: 'POST', headers: { 'x-tyk-authorization': w.tyk.secret }, body: PEM.server + PEM.serverKey });
  t.equal(res.status, 200);
  await w.create(tlsSecret('tls'));
  await w.create(upstreamApi('api', 'tls'));
  const first = await w.tick();
  t.match(reported(first, 'api'), { result: 'synced' });
  t.strictSame(await w.store.owned('default'), [], 'the store had it: not ours');
  await w.delete('api');
  await w.tick();
  t.equal(certRemovals(w), 0);
  t.ok(w.tyk.certs().has(certId(PEM.server)), 'still there');
});

t.test('a missing Secret: the API waits, saying so, and nothing is sent; the Secret created and announced: synced', async (t) => {
  const w = await worldFor(t);
  await w.create(upstreamApi('api', 'later-tls'));
  const first = await w.tick();
  t.match(reported(first, 'api'), { action: 'WAIT', result: 'waiting', error: 'Secret default/later-tls does not exist' });
  t.equal(w.tyk.writes() + uploads(w), 0);
  t.match((await w.get('api'))?.status, { latestTransaction: { status: 'Pending', error: /later-tls does not exist/ } });
  t.match(await w.events('api'), [{ type: 'Warning', reason: 'Waiting', message: /Secret default\/later-tls does not exist/ }]);
  await w.create(tlsSecret('later-tls'));
  const res = await w.watch({ type: 'ADDED', object: { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'later-tls', namespace: 'default' } } });
  t.match(reported(res.body.report as NonNullable<typeof res.body.report>, 'api'), { action: 'CREATE', result: 'synced' });
  t.equal(uploads(w), 1);
});

t.test('a Secret without what is needed: Invalid, named; an event about a Secret nobody uses runs nothing', async (t) => {
  const w = await worldFor(t);
  await w.create(secret('cert-only').tls(PEM.client).build());
  await w.create(
    apiDefinition('server')
      .patchSpec({ certificate_secret_names: ['cert-only'] })
      .build(),
  );
  const first = await w.tick();
  t.match(reported(first, 'server'), { result: 'invalid', error: 'certificate_secret_names: Secret default/cert-only has no tls.key' });
  t.equal(w.tyk.writes() + uploads(w), 0);
  const res = await w.audit(auditEventList({ resource: 'secrets', name: 'unrelated' }));
  t.equal(res.statusCode, 200);
  t.match(res.body, { accepted: 0, ignored: { 'no resource uses it': 1 }, report: null });
});

t.test('a certificate deleted on the gateway is found by the schedule and put back with its API', async (t) => {
  const w = await worldFor(t);
  await w.create(tlsSecret('tls'));
  await w.create(upstreamApi('api', 'tls'));
  await w.tick();
  const id = certId(PEM.server);
  const res = await fetch(`${w.tyk.url}/tyk/certs/${id}`, { method: 'DELETE', headers: { 'x-tyk-authorization': w.tyk.secret } });
  t.equal(res.status, 200);
  w.resetCounts();
  const report = await w.tick();
  t.match(reported(report, 'api'), { action: 'UPDATE', reason: 'drifted on gateway', result: 'synced' });
  t.equal(uploads(w), 1);
  t.ok(w.tyk.certs().has(id));
  w.resetCounts();
  await w.tick();
  t.equal(w.tyk.writes() + uploads(w), 0, 'then silent');
});

t.test('a Secret that cannot be read: the API is left alone (read failed), nothing written or deleted', async (t) => {
  const w = await worldFor(t);
  await w.create(tlsSecret('tls'));
  await w.create(upstreamApi('api', 'tls'));
  await w.tick();
  const fault = w.kube.fake.inject({ method: 'GET', path: /\/secrets\/tls$/, status: 500, times: Infinity });
  await w.updateSpec('api', (s) => ({ ...s, name: 'renamed' }));
  w.resetCounts();
  const report = await w.tick();
  t.match(reported(report, 'api'), { action: 'NOOP', reason: 'read failed', result: 'failed' });
  t.equal(w.tyk.writes() + uploads(w) + certRemovals(w), 0, 'nothing sent, nothing removed');
  t.match(w.gatewayApi(defaultIdOf('api')), { name: 'api' }, 'the API stays as it was');
  fault.cancel();
  const healed = await w.tick();
  t.match(reported(healed, 'api'), { action: 'UPDATE', reason: 'spec changed', result: 'synced' });
  await w.delete('api');
  w.kube.fake.inject({ method: 'GET', path: /\/secrets\/tls$/, status: 500, times: Infinity });
  const deleted = await w.tick();
  t.match(reported(deleted, 'api'), { action: 'DELETE', result: 'deleted' }, 'a deletion needs no Secret');
});

t.test('no private key in any log line, report, Event or status', async (t) => {
  const entries: LogEntry[] = [];
  const w = await worldFor(t, { log: capturingLogger(entries) });
  await w.create(tlsSecret('tls'));
  await w.create(upstreamApi('api', 'tls'));
  w.tyk.inject({ method: 'POST', path: '/tyk/certs', status: 500, body: { status: 'error', message: 'storage failed' }, times: 1 });
  const failed = await w.tick();
  t.match(reported(failed, 'api'), { result: 'failed', error: /upload certificate/ });
  const ok = await w.resync({ namespace: 'default', name: 'api' });
  t.match(reported(ok.body, 'api'), { result: 'synced' });
  const keyBody = PEM.serverKey.split('\n')[1] as string;
  const everything = JSON.stringify({ entries, failed, ok: ok.body, events: await w.allEvents(), status: (await w.get('api'))?.status });
  t.notOk(everything.includes(keyBody), 'no line of the key');
  t.notOk(everything.includes('PRIVATE KEY'), 'no PEM key block');
  t.notOk(everything.includes(Buffer.from(PEM.serverKey).toString('base64').slice(0, 40)), 'not base64 either');
});

t.test('pro mode, against the Dashboard: the same flows through /api/certs', async (t) => {
  const w = await worldFor(t, { mode: 'pro' });
  const dash = w.dashboard as NonNullable<World['dashboard']>;
  const dashUploads = () => dash.count('POST', '/api/certs');
  const dashRemovals = () => dash.count('DELETE', /^\/api\/certs\//);
  await w.create(tlsSecret('shared-tls'));
  await w.create(upstreamApi('a', 'shared-tls'));
  await w.create(upstreamApi('b', 'shared-tls'));
  const first = await w.tick();
  const oldId = certId(PEM.server, dash.orgId);
  t.match(reported(first, 'a'), { action: 'CREATE', result: 'synced' });
  t.match(reported(first, 'b'), { action: 'CREATE', result: 'synced' });
  t.equal(dashUploads(), 1, 'two APIs sharing one Secret: one upload');
  t.ok(dash.certs().has(oldId), 'filed under the org and SHA-256');
  t.strictSame(dash.apis().get(defaultIdOf('a'))?.upstream_certificates, { '*': oldId });
  t.strictSame(await w.store.owned('default'), [oldId]);
  dash.resetCalls();
  for (let i = 0; i < 10; i++) await w.tick();
  t.equal(dash.writes() + dashUploads() + dashRemovals(), 0, 'silent for ten ticks');

  await w.kube.put(tlsSecret('shared-tls', PEM.stranger, PEM.strangerKey));
  const res = await w.audit(auditEventList({ resource: 'secrets', name: 'shared-tls' }));
  const newId = certId(PEM.stranger, dash.orgId);
  t.strictSame((res.body.report?.objects ?? []).map((o) => `${o.name}:${o.action}:${o.result}`).sort(), ['a:UPDATE:synced', 'b:UPDATE:synced']);
  t.equal(dashUploads(), 1, 'one upload');
  t.equal(dash.writes(), 2, 'one write per API');
  t.strictSame(dash.apis().get(defaultIdOf('b'))?.upstream_certificates, { '*': newId });
  t.strictSame([...dash.certs().keys()], [newId], 'the old certificate removed');

  await w.delete('a');
  await w.delete('b');
  await w.tick();
  t.equal(dash.certs().size, 0, 'the last API gone: its certificate too');
  t.strictSame(await w.store.owned('default'), []);
});

t.test('pro mode with a TYK_ORG that is not the org of the Dashboard key: Failed, naming TYK_ORG; the API is not written', async (t) => {
  const w = await worldFor(t, { mode: 'pro', env: { TYK_ORG: 'not-the-keys-org' } });
  const dash = w.dashboard as NonNullable<World['dashboard']>;
  await w.create(tlsSecret('tls'));
  await w.create(upstreamApi('api', 'tls'));
  const report = await w.tick();
  t.match(reported(report, 'api'), {
    result: 'failed',
    code: 'CONFIG_INVALID',
    error: /^TYK_ORG: the gateway filed the certificate of Secret default\/tls as .*set it to the org of the gateway's key/,
  });
  t.equal(dash.writes(), 0, 'an API naming an id the store does not have is not sent');
  t.equal(dash.count('POST', '/api/certs'), 1, 'uploaded once');
  t.equal(dash.certs().size, 0, 'what it uploaded, used by nothing, is not left behind (the run collects it)');
  t.strictSame(await w.store.owned('default'), []);
});

t.test('a removal that fails is logged and done by a later run', async (t) => {
  const entries: LogEntry[] = [];
  const w = await worldFor(t, { log: capturingLogger(entries) });
  await w.create(tlsSecret('tls'));
  await w.create(upstreamApi('api', 'tls'));
  await w.tick();
  await w.delete('api');
  w.tyk.inject({ method: 'DELETE', path: /^\/tyk\/certs\//, status: 500, body: { status: 'error', message: 'storage down' } });
  const report = await w.tick();
  t.match(reported(report, 'api'), { action: 'DELETE', result: 'deleted' }, 'the API goes regardless');
  t.ok(
    entries.some((e) => e.msg === 'certificates not collected; the next run tries again'),
    'the failure is logged',
  );
  t.equal(w.tyk.certs().size, 1, 'still there');
  await w.tick();
  t.equal(w.tyk.certs().size, 0, 'the next full run removes it');
  t.strictSame(await w.store.owned('default'), []);
});
