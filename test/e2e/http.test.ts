/**
 * The service through its HTTP endpoints: authentication, bad input, audit EventLists,
 * concurrent runs, lost reloads, gateway renames, timeouts, health and readiness.
 */
import t from 'tap';
import type { RunReport } from '../../lib/engine/run.js';
import { apiDefinition, FINALIZER } from '../fixtures/builders.js';
import { RESYNC_TOKEN, startWorld, WEBHOOK_TOKEN, type World } from '../harness/world.js';

const HTTPBIN_ID = 'ZGVmYXVsdC9odHRwYmlu';
const idOf = (name: string, ns = 'default') => Buffer.from(`${ns}/${name}`).toString('base64url');

async function world(t: { teardown(fn: () => unknown): void }, options?: Parameters<typeof startWorld>[0]): Promise<World> {
  const w = await startWorld(options);
  t.teardown(() => w.close());
  return w;
}

function obj(report: RunReport, name: string) {
  const o = report.objects.find((x) => x.name === name);
  if (!o) throw new Error(`no report for ${name}: ${JSON.stringify(report.objects)}`);
  return o;
}

let auditSeq = 0;
function auditEvent(verb: string, name: string, namespace = 'default', extra: Record<string, unknown> = {}) {
  return {
    level: 'Metadata',
    auditID: `audit-${++auditSeq}`,
    stage: 'ResponseComplete',
    requestURI: `/apis/tyk.tyk.io/v1alpha1/namespaces/${namespace}/apidefinitions${verb === 'create' ? '' : `/${name}`}`,
    verb,
    user: { username: 'jane@example.com', groups: ['system:authenticated'] },
    sourceIPs: ['10.0.0.1'],
    userAgent: 'kubectl/v1.31.0',
    objectRef: { resource: 'apidefinitions', namespace, name, apiGroup: 'tyk.tyk.io', apiVersion: 'v1alpha1' },
    responseStatus: { metadata: {}, code: verb === 'create' ? 201 : 200 },
    requestReceivedTimestamp: '2026-11-21T10:00:00.000000Z',
    stageTimestamp: '2026-11-21T10:00:00.010000Z',
    annotations: { 'authorization.k8s.io/decision': 'allow', 'authorization.k8s.io/reason': '' },
    ...extra,
  };
}
async function until(cond: () => boolean, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 5));
  }
}

const eventList = (...items: unknown[]) => ({ kind: 'EventList', apiVersion: 'audit.k8s.io/v1', metadata: {}, items });

t.test('wrong, missing, or almost-right tokens: 401 and nothing processed', async (t) => {
  const w = await world(t);
  await w.create(apiDefinition('httpbin').build());
  w.resetCounts();
  const body = JSON.stringify({ type: 'ADDED', object: await w.get('httpbin') });
  const almost = WEBHOOK_TOKEN.slice(0, -1) + (WEBHOOK_TOKEN.endsWith('9') ? '8' : '9');
  const cases: [string, Record<string, string>][] = [
    ['no token', {}],
    ['wrong token', { authorization: 'Bearer not-the-token-at-all-xx' }],
    ['last byte differs', { authorization: `Bearer ${almost}` }],
    ['not bearer', { authorization: `Basic ${Buffer.from(`u:${WEBHOOK_TOKEN}`).toString('base64')}` }],
    ['resync token on a webhook', { authorization: `Bearer ${RESYNC_TOKEN}` }],
  ];
  for (const [what, headers] of cases) {
    const res = await w.inject<{ error: string }>('POST', '/webhooks/watch', body, headers);
    t.equal(res.statusCode, 401, what);
    t.notMatch(JSON.stringify(res.body), WEBHOOK_TOKEN, `${what}: the token is not echoed`);
  }
  for (const url of ['/webhooks/audit', '/resync']) t.equal((await w.inject('POST', url, '{}', { authorization: 'Bearer nope-nope-nope-nope' })).statusCode, 401, url);
  t.equal(w.kube.calls.length, 0, 'the API server was not asked');
  t.equal(w.tyk.calls.length, 0, 'the gateway was not asked');
  t.equal((await w.store.listRecordKeys('')).length, 0, 'nothing in the store');
  t.equal((await w.get('httpbin'))?.metadata.finalizers, undefined);
});

t.test('several webhook tokens (rotation) are all accepted', async (t) => {
  const second = 'second-webhook-token-abcdefgh';
  const w = await world(t, { env: { WEBHOOK_TOKEN: `${WEBHOOK_TOKEN},${second}` } });
  t.equal((await w.watch([], WEBHOOK_TOKEN)).statusCode, 200);
  t.equal((await w.watch([], second)).statusCode, 200);
});

t.test('bad input gets a 4xx with a reason and loses nothing', async (t) => {
  const w = await world(t, { env: {} });
  const auth = { authorization: `Bearer ${WEBHOOK_TOKEN}` };
  const bad = await w.inject<{ error: string }>('POST', '/webhooks/watch', '{"type":"ADDED"', auth);
  t.equal(bad.statusCode, 400);
  t.match(bad.body.error, /not JSON/);
  const notList = await w.inject<{ error: string }>('POST', '/webhooks/audit', '{"kind":"Pod"}', auth);
  t.equal(notList.statusCode, 400);
  t.match(notList.body.error, /EventList/);
  const xml = await w.app.inject({ method: 'POST', url: '/webhooks/watch', payload: '<x/>', headers: { ...auth, 'content-type': 'application/xml' } });
  t.equal(xml.statusCode, 415);
  const resync = await w.inject<{ error: string }>('POST', '/resync', '{"name":"x"}', { authorization: `Bearer ${RESYNC_TOKEN}` });
  t.equal(resync.statusCode, 400);
  t.match(resync.body.error, /name needs namespace/);
  const kind = await w.inject<{ error: string }>('POST', '/resync?kind=Pod', '', { authorization: `Bearer ${RESYNC_TOKEN}` });
  t.match([kind.statusCode, kind.body.error], [400, /unknown kind "Pod"/]);
  const extra = await w.inject<{ error: string }>('POST', '/resync', '{"nmespace":"x"}', { authorization: `Bearer ${RESYNC_TOKEN}` });
  t.match([extra.statusCode, extra.body.error], [400, /unknown parameter nmespace/]);
  const missing = await w.inject('GET', '/nope');
  t.equal(missing.statusCode, 404);
  t.equal(w.tyk.writes(), 0);
});

t.test('a body over the limit is refused with 413', async (t) => {
  const w = await world(t);
  const { buildApp } = await import('../../lib/server.js');
  const small = buildApp(w.svc, { bodyLimit: 1024 });
  t.teardown(() => small.close());
  const res = await small.inject({ method: 'POST', url: '/webhooks/audit', payload: 'x'.repeat(4096), headers: { authorization: `Bearer ${WEBHOOK_TOKEN}`, 'content-type': 'application/json' } });
  t.equal(res.statusCode, 413);
});

t.test('curl -d form bodies work for /resync', async (t) => {
  const w = await world(t);
  await w.create(apiDefinition('a').build());
  const res = await w.app.inject({
    method: 'POST',
    url: '/resync',
    payload: 'namespace=default&dryRun=true',
    headers: { authorization: `Bearer ${RESYNC_TOKEN}`, 'content-type': 'application/x-www-form-urlencoded' },
  });
  t.equal(res.statusCode, 200);
  t.match(res.json(), { dryRun: true, objects: [{ name: 'a', result: 'planned' }] });
});

t.test('the same flows driven by audit EventLists: create, update, delete', async (t) => {
  const w = await world(t);
  await w.create(apiDefinition('httpbin').build());
  const created = await w.audit(eventList(auditEvent('create', 'httpbin')));
  t.equal(created.statusCode, 200);
  t.match(obj(created.body.report as RunReport, 'httpbin'), { action: 'CREATE', result: 'synced' });
  t.ok(w.gatewayApi(HTTPBIN_ID));
  t.same((await w.get('httpbin'))?.metadata.finalizers, [FINALIZER]);

  await w.updateSpec('httpbin', (s) => ({ ...s, name: 'renamed' }));
  w.resetCounts();
  // our own status patch and a failed request come in the same batch: they cause nothing
  const updated = await w.audit(
    eventList(
      auditEvent('patch', 'httpbin', 'default', {
        objectRef: { resource: 'apidefinitions', subresource: 'status', namespace: 'default', name: 'httpbin', apiGroup: 'tyk.tyk.io', apiVersion: 'v1alpha1' },
      }),
      auditEvent('update', 'httpbin'),
      auditEvent('update', 'httpbin', 'default', { responseStatus: { code: 409 } }),
    ),
  );
  t.match(updated.body, { accepted: 1, ignored: { 'status subresource': 1, 'request failed': 1 } });
  t.equal(w.tyk.writes(), 1);
  t.match(w.gatewayApi(HTTPBIN_ID), { name: 'renamed' });

  w.resetCounts();
  const own = await w.audit(
    eventList(
      auditEvent('patch', 'httpbin', 'default', {
        objectRef: { resource: 'apidefinitions', subresource: 'status', namespace: 'default', name: 'httpbin', apiGroup: 'tyk.tyk.io', apiVersion: 'v1alpha1' },
      }),
    ),
  );
  t.match(own.body, { accepted: 0, report: null }, 'an audit event for our own status patch causes nothing');
  t.equal(w.kube.calls.length + w.tyk.calls.length, 0);

  await w.delete('httpbin');
  const deleted = await w.audit(eventList(auditEvent('delete', 'httpbin')));
  t.match(obj(deleted.body.report as RunReport, 'httpbin'), { action: 'DELETE', result: 'deleted' });
  t.equal(w.gatewayApi(HTTPBIN_ID), undefined);
  t.equal(await w.get('httpbin'), undefined);
});

t.test('two runs at once over the same objects make one write per change', async (t) => {
  const w = await world(t);
  for (const n of ['a', 'b', 'c']) await w.create(apiDefinition(n).build());
  // slow the gateway down so the runs overlap
  w.tyk.inject({ method: 'POST', path: '/tyk/apis', delayMs: 80, times: Infinity });
  const events = ['a', 'b', 'c'].map((n) => ({ type: 'ADDED', object: { apiVersion: 'tyk.tyk.io/v1alpha1', kind: 'ApiDefinition', metadata: { name: n, namespace: 'default' } } }));
  const [tick, hook] = await Promise.all([w.tick(), w.watch(events)]);
  t.equal(w.tyk.writes(), 3, 'three objects, three writes, not six');
  const results = [...tick.objects, ...(hook.body.report?.objects ?? [])].map((o) => `${o.name}:${o.result}`).sort();
  t.ok(results.filter((r) => r.endsWith(':synced')).length === 3, `each synced once: ${results.join(' ')}`);
  t.equal(w.tyk.loaded('api').size, 3);
});

t.test('WEBHOOK_ANSWER=accepted (the default): 202 once the objects are taken; the runs follow, coalesced', async (t) => {
  const w = await world(t, { env: { WEBHOOK_ANSWER: 'accepted' } });
  await w.create(apiDefinition('httpbin').build());
  w.resetCounts();
  const event = { type: 'ADDED', object: { apiVersion: 'tyk.tyk.io/v1alpha1', kind: 'ApiDefinition', metadata: { name: 'httpbin', namespace: 'default' } } };
  // the gateway is slow: the first run is still writing when the other deliveries arrive
  w.tyk.inject({ method: 'POST', path: '/tyk/apis', delayMs: 300 });
  const first = await w.watch(event);
  t.equal(first.statusCode, 202);
  t.same(first.body, { accepted: 1, ignored: [], queued: true }, 'what was taken, no report');
  t.equal(w.tyk.writes(), 0, 'answered before the run wrote');
  const more = await Promise.all(Array.from({ length: 20 }, () => w.watch(event)));
  t.same(
    more.map((r) => r.statusCode),
    more.map(() => 202),
  );
  await until(() => w.tyk.loaded('api').has(HTTPBIN_ID));
  await until(() => w.kube.count('GET', '/apis/tyk.tyk.io/v1alpha1/namespaces/default/apidefinitions/httpbin') >= 2);
  await new Promise((r) => setTimeout(r, 700));
  const reads = w.kube.count('GET', '/apis/tyk.tyk.io/v1alpha1/namespaces/default/apidefinitions/httpbin');
  t.ok(reads <= 6, `21 deliveries, two runs (the first, then one for the 20 that came during it): ${reads} reads of the object, not 21 or more`);
  t.equal(w.tyk.writes(), 1, 'one write');
  t.match(await w.get('httpbin'), { status: { api_id: HTTPBIN_ID } }, 'its status set by the run after the answer');
});

t.test('an event arriving while its object is being reconciled is applied before the lock is released', async (t) => {
  const w = await world(t);
  await w.create(apiDefinition('httpbin').build());
  w.tyk.inject({ method: 'POST', path: '/tyk/apis', delayMs: 400 });
  const first = w.announce('ADDED', 'httpbin');
  await until(() => w.tyk.count('POST', '/tyk/apis') === 1);
  await w.updateSpec('httpbin', (s) => ({ ...s, name: 'v2' }));
  const second = await w.announce('MODIFIED', 'httpbin');
  t.match(obj(second, 'httpbin'), { result: 'deferred' }, 'the second run found the lock held and left a dirty mark');
  const firstReport = await first;
  t.match(obj(firstReport, 'httpbin'), { result: 'synced' });
  t.match(w.gatewayApi(HTTPBIN_ID), { name: 'v2' }, 'the holder re-ran the object before releasing');
  t.equal(w.tyk.writes(), 2, 'v1 then v2');
  w.resetCounts();
  await w.tick();
  t.equal(w.tyk.writes(), 0, 'nothing left over');
});

t.test('a lost reload is re-issued until the writes are visible', async (t) => {
  const w = await world(t);
  await w.create(apiDefinition('httpbin').build());
  w.tyk.dropReloads(2);
  const report = await w.announce('ADDED', 'httpbin');
  t.match(obj(report, 'httpbin'), { result: 'synced' });
  t.ok(w.tyk.reloads.requested >= 3, `reload re-issued (${w.tyk.reloads.requested} requested, ${w.tyk.reloads.dropped} dropped)`);
  t.ok(w.gatewayApi(HTTPBIN_ID));
});

t.test('writes still invisible at the end of the budget are left for the next run, not recorded as synced', async (t) => {
  const w = await world(t, { settings: { settle: { budgetMs: 300, initialDelayMs: 20, maxDelayMs: 50, reloadEveryMs: 40 } } });
  await w.create(apiDefinition('httpbin').build());
  w.tyk.dropReloads(1000);
  const report = await w.announce('ADDED', 'httpbin');
  t.match(obj(report, 'httpbin'), { result: 'pending' });
  t.match((await w.get('httpbin'))?.status, { latestTransaction: { status: 'Pending' } });
  w.tyk.dropReloads(0);
  w.tyk.reloadNow();
  w.resetCounts();
  const next = await w.tick();
  t.match(obj(next, 'httpbin'), { result: 'synced' });
  t.match((await w.get('httpbin'))?.status, { latestTransaction: { status: 'Successful' } });
  w.resetCounts();
  await w.tick();
  t.equal(w.tyk.writes(), 0, 'then quiet');
});

t.test('a listen path the gateway renames is reported, not rewritten forever', async (t) => {
  const w = await world(t);
  await w.create(
    apiDefinition('first')
      .patchSpec({ proxy: { target_url: 'http://a', listen_path: '/same' } })
      .build(),
  );
  await w.tick();
  await w.create(
    apiDefinition('second')
      .patchSpec({ proxy: { target_url: 'http://b', listen_path: '/same' } })
      .build(),
  );
  // a run for the second alone writes it (a full run would refuse the younger of the two: ListenPathClash)
  const report = await w.announce('ADDED', 'second');
  t.match(obj(report, 'second'), { result: 'diverged', error: /proxy.listen_path: sent "\/same", gateway has "\/same-/ });
  t.match((await w.get('second'))?.status, { latestTransaction: { status: 'Failed', error: /proxy.listen_path/ } });
  w.resetCounts();
  for (let i = 0; i < 3; i++) await w.tick();
  t.equal(w.tyk.writes(), 0, 'no rewrite loop');
  t.equal(w.statusPatches(), 0);
  await w.updateSpec('second', (s) => ({ ...s, proxy: { target_url: 'http://b', listen_path: '/other' } }));
  const fixed = await w.tick();
  t.match(obj(fixed, 'second'), { reason: 'spec changed', result: 'synced' });
});

t.test('a hung API server: the run reports a timeout and deletes nothing', async (t) => {
  const w = await world(t, { env: { HTTP_TIMEOUT_MS: '300' } });
  await w.create(apiDefinition('a').build());
  await w.tick();
  w.kube.fake.inject({ method: 'GET', path: /apidefinitions/, hang: true, times: Infinity });
  w.resetCounts();
  const report = await w.tick();
  t.match(report.errors, [{ code: 'KUBE_UNAVAILABLE', message: /timed out after 300 ms/ }]);
  t.equal(w.tyk.writes(), 0);
  t.ok(w.gatewayApi(idOf('a')));
});

t.test('a hung gateway: the object fails with a timeout, the next run recovers', async (t) => {
  const w = await world(t, { env: { HTTP_TIMEOUT_MS: '300' } });
  await w.create(apiDefinition('a').build());
  w.tyk.inject({ method: 'POST', path: '/tyk/apis', hang: true });
  const report = await w.announce('ADDED', 'a');
  t.match(obj(report, 'a'), { result: 'failed', code: 'GATEWAY_UNAVAILABLE', error: /timed out/ });
  const again = await w.resync({ namespace: 'default', name: 'a' });
  t.match(obj(again.body, 'a'), { result: 'synced' });
});

t.test('the store unreachable: 503 so the sender retries', async (t) => {
  const w = await world(t);
  await w.create(apiDefinition('a').build());
  await w.redis.stop();
  const res = await w.watch({ type: 'ADDED', object: await w.get('a') });
  t.equal(res.statusCode, 503);
  t.equal(w.tyk.writes(), 0);
  await w.redis.start();
});

t.test('healthz and readyz', async (t) => {
  const w = await world(t);
  t.same((await w.inject('GET', '/healthz')).body, { status: 'ok' });
  const ready = await w.inject<{ status: string; checks: Record<string, { ok: boolean }> }>('GET', '/readyz');
  t.equal(ready.statusCode, 200);
  t.match(ready.body, { status: 'ready', checks: { store: { ok: true }, kube: { ok: true }, gateway: { ok: true } } });
  w.tyk.inject({ path: /^\/tyk\/apis\//, status: 403, body: { status: 'error', message: 'Attempted administrative access with invalid or missing key!' } });
  // the last check is reused for 5 s
  w.clock.advance(5_001);
  const notReady = await w.inject<{ checks: Record<string, { ok: boolean; error?: string }> }>('GET', '/readyz');
  t.equal(notReady.statusCode, 503);
  t.match(notReady.body.checks.gateway, { ok: false, error: /403 .*check TYK_AUTH/ });
  t.notMatch(JSON.stringify(notReady.body), w.tyk.secret, 'no secret in the answer');
});
