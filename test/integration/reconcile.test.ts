/**
 * The reconcile loop end to end, through HTTP (fastify inject), with real Redis, our real
 * clients, and the loopback API-server and gateway fakes.
 */
import t from 'tap';
import { hashOf } from '../../lib/engine/hash.js';
import type { RunReport } from '../../lib/engine/run.js';
import type { SyncRecord } from '../../lib/store/types.js';
import { apiDefinition, FINALIZER } from '../fixtures/builders.js';
import { startWorld, type World } from '../harness/world.js';

const HTTPBIN_ID = 'ZGVmYXVsdC9odHRwYmlu';

async function world(t: { teardown(fn: () => unknown): void }, options?: Parameters<typeof startWorld>[0]): Promise<World> {
  const w = await startWorld(options);
  t.teardown(() => w.close());
  return w;
}

function obj(report: RunReport, name: string, namespace = 'default') {
  const o = report.objects.find((x) => x.name === name && x.namespace === namespace);
  if (!o) throw new Error(`no report for ${namespace}/${name}: ${JSON.stringify(report.objects)}`);
  return o;
}

t.test('a created ApiDefinition, announced by a watch event, appears under its id with status and finalizer', async (t) => {
  const w = await world(t);
  await w.create(apiDefinition('httpbin').build());
  const report = await w.announce('ADDED', 'httpbin');
  t.match(obj(report, 'httpbin'), { action: 'CREATE', reason: 'created in cluster', result: 'synced', id: HTTPBIN_ID });
  const api = w.gatewayApi(HTTPBIN_ID);
  t.ok(api, 'on the gateway under base64url(namespace/name)');
  t.match(api, { api_id: HTTPBIN_ID, name: 'httpbin', proxy: { listen_path: '/httpbin', target_url: 'http://httpbin.org' } });
  t.same((api?.version_data as Record<string, unknown> | undefined)?.default_version, 'Default', 'versions defaulted');
  const cr = await w.get('httpbin');
  t.same(cr?.metadata.finalizers, [FINALIZER]);
  t.match(cr?.status, { api_id: HTTPBIN_ID, latestTransaction: { status: 'Successful' } });
  t.equal(w.tyk.reloads.requested, 1);
});

t.test('an API already on the gateway under the same id is adopted (updated in place), never duplicated', async (t) => {
  const w = await world(t);
  // What Tyk Operator left behind: the same id, an older definition.
  const res = await fetch(`${w.tyk.url}/tyk/apis`, {
    method: 'POST',
    headers: { 'x-tyk-authorization': w.tyk.secret, 'content-type': 'application/json' },
    body: JSON.stringify({
      api_id: HTTPBIN_ID,
      name: 'old httpbin',
      proxy: { listen_path: '/httpbin', target_url: 'http://old' },
      version_data: { not_versioned: true, versions: { Default: { name: 'Default' } } },
    }),
  });
  t.equal(res.status, 200);
  w.tyk.reloadNow();
  await w.create(apiDefinition('httpbin').build());
  const report = await w.announce('ADDED', 'httpbin');
  t.match(obj(report, 'httpbin'), { action: 'UPDATE', reason: 'adopted from gateway', result: 'synced' });
  t.equal(w.tyk.loaded('api').size, 1, 'one API, not two');
  t.match(w.gatewayApi(HTTPBIN_ID), { name: 'httpbin', proxy: { target_url: 'http://httpbin.org' } });
});

t.test('one write per spec change; a repeated event writes nothing; ten quiet ticks write nothing', async (t) => {
  const w = await world(t);
  await w.create(apiDefinition('httpbin').build());
  await w.announce('ADDED', 'httpbin');
  w.resetCounts();

  await w.updateSpec('httpbin', (s) => ({ ...s, proxy: { ...(s.proxy as object), target_url: 'http://example.com' } }));
  const changed = await w.announce('MODIFIED', 'httpbin');
  t.match(obj(changed, 'httpbin'), { action: 'UPDATE', reason: 'spec changed', result: 'synced' });
  t.equal(w.tyk.writes(), 1, 'exactly one gateway write');
  t.match(w.gatewayApi(HTTPBIN_ID), { proxy: { target_url: 'http://example.com' } });

  w.resetCounts();
  const again = await w.announce('MODIFIED', 'httpbin');
  t.match(obj(again, 'httpbin'), { action: 'NOOP', reason: 'unchanged' });
  t.equal(w.tyk.writes(), 0, 'the same event again writes nothing');

  for (let i = 0; i < 10; i++) {
    const report = await w.tick();
    t.equal(report.gateway.writes, 0);
  }
  t.equal(w.tyk.writes(), 0, 'no gateway write in ten ticks');
  t.equal(w.tyk.count('GET', '/tyk/reload/group'), 0, 'no reload in ten ticks');
  t.equal(w.statusPatches(), 0, 'no status patch in ten ticks');
  t.equal(w.kube.count('PATCH'), 0, 'no patch of any kind');
});

t.test('drift is an edit of what we send: a field the gateway added of its own is not ours to undo', async (t) => {
  const w = await world(t);
  await w.create(apiDefinition('httpbin').build());
  await w.tick();
  w.resetCounts();

  const echo = w.gatewayApi(HTTPBIN_ID) as Record<string, unknown>;
  t.equal(echo.enable_batch_request_support, false, 'a field of the echo we never send');
  w.tyk.editLoaded('api', HTTPBIN_ID, (api) => {
    api.enable_batch_request_support = true;
  });
  t.match(obj(await w.tick(), 'httpbin'), { action: 'NOOP', reason: 'unchanged' });
  t.equal(w.tyk.writes(), 0);

  // a member we send inside an object the gateway fills with defaults of its own
  w.tyk.editLoaded('api', HTTPBIN_ID, (api) => {
    (api.proxy as Record<string, unknown>).listen_path = '/elsewhere/';
  });
  t.match(obj(await w.tick(), 'httpbin'), { action: 'UPDATE', reason: 'drifted on gateway', result: 'synced' });
  t.equal(w.tyk.writes(), 1);
  // the write replaces the whole definition: the field the gateway had of its own goes back to its default too
  t.match(w.gatewayApi(HTTPBIN_ID), { proxy: { listen_path: '/httpbin' }, enable_batch_request_support: false });
});

t.test('a record from before managed hashes (a hash of the whole echo) is read as it was made: no write', async (t) => {
  const w = await world(t);
  await w.create(apiDefinition('httpbin').build());
  await w.tick();
  const key = 'ApiDefinition/default/httpbin';
  const [record] = await w.store.getRecords([key]);
  t.match(record?.observedHash, /^m:[0-9a-f]{32}$/, 'a managed hash is recorded');
  const legacy = hashOf(w.gatewayApi(HTTPBIN_ID));
  t.equal(record?.observedWholeHash, legacy, 'and the hash of the whole echo, for a sharded run’s snapshot');
  t.ok(await w.store.putRecord({ ...(record as SyncRecord), observedHash: legacy }));
  w.resetCounts();

  t.match(obj(await w.tick(), 'httpbin'), { action: 'NOOP', reason: 'unchanged' });
  t.equal(w.tyk.writes(), 0);
  t.equal((await w.store.getRecords([key]))[0]?.observedHash, legacy, 'kept until the next write');

  w.tyk.editLoaded('api', HTTPBIN_ID, (api) => {
    api.enable_batch_request_support = true;
  });
  t.match(obj(await w.tick(), 'httpbin'), { action: 'UPDATE', reason: 'drifted on gateway', result: 'synced' }, 'against a legacy hash, any edit is drift');
  t.match((await w.store.getRecords([key]))[0]?.observedHash, /^m:/, 'the write records a managed hash');
  w.resetCounts();
  t.match(obj(await w.tick(), 'httpbin'), { action: 'NOOP' });
  t.equal(w.tyk.writes(), 0);
});

t.test('full lists read again: an unchanged object answers as before; any change of its bytes, or of what we send, is read anew', async (t) => {
  // getThreshold 0: every tick LISTs the gateway, and its answers go through the process's ObservedMemo (observed-memo.ts)
  const w = await world(t, { settings: { getThreshold: 0 } });
  await w.create(apiDefinition('httpbin').build());
  await w.create(apiDefinition('other').build());
  await w.tick();
  for (let i = 0; i < 3; i++) t.same((await w.tick()).counts, { unchanged: 2 }, `quiet tick ${i + 1}`);
  t.equal(w.tyk.writes(), 2, 'the two creates only');
  const key = 'ApiDefinition/default/httpbin';

  // a field we never send: other bytes, the same managed hash
  w.tyk.editLoaded('api', HTTPBIN_ID, (api) => {
    api.enable_batch_request_support = true;
  });
  t.same((await w.tick()).counts, { unchanged: 2 }, 'an edit of a field we do not send is not drift');
  // a field we send, edited after quiet ticks over the same bytes
  w.tyk.editLoaded('api', HTTPBIN_ID, (api) => {
    (api.proxy as Record<string, unknown>).target_url = 'http://evil.example';
  });
  t.match(obj(await w.tick(), 'httpbin'), { action: 'UPDATE', reason: 'drifted on gateway', result: 'synced' });
  t.match(w.gatewayApi(HTTPBIN_ID), { proxy: { target_url: 'http://httpbin.org' } });
  t.same((await w.tick()).counts, { unchanged: 2 });

  // the same bytes on the gateway, another body to send
  await w.updateSpec('httpbin', (spec) => ({ ...spec, name: 'renamed' }));
  t.match(obj(await w.tick(), 'httpbin'), { action: 'UPDATE', result: 'synced' });
  t.match(w.gatewayApi(HTTPBIN_ID), { name: 'renamed' });
  t.same((await w.tick()).counts, { unchanged: 2 });

  // the same bytes and body, a legacy recorded hash: compared as it was made
  const [record] = await w.store.getRecords([key]);
  const legacy = hashOf(w.gatewayApi(HTTPBIN_ID));
  t.ok(await w.store.putRecord({ ...(record as SyncRecord), observedHash: legacy }));
  t.same((await w.tick()).counts, { unchanged: 2 }, 'the whole echo still hashes to the legacy hash');
  t.equal((await w.store.getRecords([key]))[0]?.observedHash, legacy);
  t.ok(await w.store.putRecord({ ...(record as SyncRecord), observedHash: hashOf({ another: 'echo' }) }));
  t.match(obj(await w.tick(), 'httpbin'), { action: 'UPDATE', reason: 'drifted on gateway' }, 'a legacy hash the echo does not match: drift');
  t.equal(w.tyk.writes(), 5);
});

t.test('gateway-side edits and deletions are undone by the next tick with one write', async (t) => {
  const w = await world(t);
  await w.create(apiDefinition('httpbin').build());
  await w.create(apiDefinition('other').build());
  await w.tick();
  w.resetCounts();

  w.tyk.editLoaded('api', HTTPBIN_ID, (api) => {
    (api.proxy as Record<string, unknown>).target_url = 'http://evil.example';
  });
  const edited = await w.tick();
  t.match(obj(edited, 'httpbin'), { action: 'UPDATE', reason: 'drifted on gateway', result: 'synced' });
  t.match(obj(edited, 'other'), { action: 'NOOP' });
  t.equal(w.tyk.writes(), 1);
  t.match(w.gatewayApi(HTTPBIN_ID), { proxy: { target_url: 'http://httpbin.org' } });

  w.resetCounts();
  w.tyk.removeLoaded('api', HTTPBIN_ID);
  w.tyk.removeFile('api', HTTPBIN_ID);
  const removed = await w.tick();
  t.match(obj(removed, 'httpbin'), { action: 'CREATE', reason: 'missing on gateway', result: 'synced' });
  t.equal(w.tyk.writes(), 1);
  t.ok(w.gatewayApi(HTTPBIN_ID));

  w.resetCounts();
  await w.tick();
  t.equal(w.tyk.writes(), 0, 'and then quiet again');
});

t.test('a gateway that lost everything gets it all back from one tick, with one reload', async (t) => {
  // above getThreshold, objects are re-read under their locks by LIST, not one GET each
  const w = await world(t, { settings: { getThreshold: 3 } });
  const names = ['a', 'b', 'c', 'd', 'e', 'f'];
  for (const n of names) await w.create(apiDefinition(n).build());
  const first = await w.tick();
  t.equal(first.gateway.reloads, 1, 'a run writing N objects reloads once');
  t.equal(w.tyk.reloads.requested, 1);
  t.equal(w.tyk.loaded('api').size, names.length);

  w.tyk.restart();
  t.equal(w.tyk.loaded('api').size, 0);
  w.resetCounts();
  const report = await w.tick();
  t.equal(w.tyk.loaded('api').size, names.length, 'all back');
  t.equal(w.tyk.writes(), names.length, 'one write each');
  t.equal(w.tyk.count('GET', '/tyk/reload/group'), 1, 'one reload');
  t.equal(w.kube.count('GET', /\/apidefinitions\/[^/]+$/), 0, 'no API-server GET per object');
  t.equal(w.tyk.count('GET', /^\/tyk\/apis\/./), 0, 'no gateway GET per object');
  for (const n of names) t.match(obj(report, n), { reason: 'missing on gateway', result: 'synced' });
});

t.test('deleting the ApiDefinition deletes the API, then the finalizer, and the object goes away', async (t) => {
  const w = await world(t);
  await w.create(apiDefinition('httpbin').build());
  await w.announce('ADDED', 'httpbin');
  await w.delete('httpbin');
  t.ok((await w.get('httpbin'))?.metadata.deletionTimestamp, 'held by the finalizer');
  const report = await w.announce('MODIFIED', 'httpbin');
  t.match(obj(report, 'httpbin'), { action: 'DELETE', reason: 'deleted in cluster', result: 'deleted' });
  t.equal(w.gatewayApi(HTTPBIN_ID), undefined, 'gone from the gateway');
  t.equal(await w.get('httpbin'), undefined, 'gone from the cluster');
  const quiet = await w.tick();
  t.equal(quiet.objects.length, 0, 'nothing left to look at');
});

t.test('deletion completes when the gateway API was already gone', async (t) => {
  const w = await world(t);
  await w.create(apiDefinition('httpbin').build());
  await w.announce('ADDED', 'httpbin');
  w.tyk.removeLoaded('api', HTTPBIN_ID);
  w.tyk.removeFile('api', HTTPBIN_ID);
  await w.delete('httpbin');
  const report = await w.announce('DELETED', 'httpbin');
  t.match(obj(report, 'httpbin'), { action: 'DELETE', reason: 'already gone', result: 'deleted' });
  t.equal(await w.get('httpbin'), undefined);
});

t.test('deletion on an older gateway that answers 500 "Delete failed" for what it lacks', async (t) => {
  const w = await world(t, { tyk: { legacyDelete: true } });
  await w.create(apiDefinition('httpbin').build());
  await w.announce('ADDED', 'httpbin');
  await w.delete('httpbin');
  const report = await w.announce('MODIFIED', 'httpbin');
  t.match(obj(report, 'httpbin'), { result: 'deleted' });
  t.equal(await w.get('httpbin'), undefined);
});

t.test('POST /resync?dryRun=true returns the plan and writes nothing', async (t) => {
  const w = await world(t);
  await w.create(apiDefinition('a').build());
  await w.create(apiDefinition('b').build());
  w.resetCounts();
  const res = await w.inject<RunReport>('POST', '/resync?dryRun=true', '', { authorization: 'Bearer test-resync-token-0123456789' });
  t.equal(res.statusCode, 200);
  t.equal(res.body.dryRun, true);
  t.same(
    res.body.objects.map((o) => [o.name, o.action, o.reason, o.result]),
    [
      ['a', 'CREATE', 'created in cluster', 'planned'],
      ['b', 'CREATE', 'created in cluster', 'planned'],
    ],
  );
  t.equal(w.tyk.writes(), 0);
  t.equal(w.tyk.count('GET', '/tyk/reload/group'), 0);
  t.equal(w.kube.count('PATCH'), 0);
  t.equal(w.tyk.loaded('api').size, 0);
  const one = await w.resync({ namespace: 'default', name: 'a', dryRun: true });
  t.same(
    one.body.objects.map((o) => o.name),
    ['a'],
  );
});

t.test('resync scopes: one object, a namespace, everything', async (t) => {
  const w = await world(t);
  await w.create(apiDefinition('a').build());
  await w.create(apiDefinition('b').inNamespace('team').build());
  const one = await w.resync({ namespace: 'team', name: 'b' });
  t.same(
    one.body.objects.map((o) => `${o.namespace}/${o.name}:${o.result}`),
    ['team/b:synced'],
  );
  const ns = await w.resync({ namespace: 'default' });
  t.same(
    ns.body.objects.map((o) => `${o.namespace}/${o.name}:${o.result}`),
    ['default/a:synced'],
  );
  const all = await w.resync();
  t.same(
    all.body.objects.map((o) => `${o.namespace}/${o.name}:${o.result}`),
    ['default/a:unchanged', 'team/b:unchanged'],
  );
});

t.test('gateway 500 or a dropped connection: Failed status, reported, others sync, next tick retries', async (t) => {
  const w = await world(t);
  await w.create(apiDefinition('good').build());
  await w.create(apiDefinition('bad500').build());
  await w.create(apiDefinition('dropped').build());
  const id500 = Buffer.from('default/bad500').toString('base64url');
  const idDrop = Buffer.from('default/dropped').toString('base64url');
  w.tyk.inject({
    method: 'POST',
    path: '/tyk/apis',
    match: (c) => (c.body as { api_id?: string })?.api_id === id500,
    status: 500,
    body: { status: 'error', message: 'file object creation failed, write error' },
  });
  // a connection dropped twice in a row (one reset is retried on a fresh connection)
  w.tyk.inject({ method: 'POST', path: '/tyk/apis', match: (c) => (c.body as { api_id?: string })?.api_id === idDrop, drop: true, times: 2 });
  const report = await w.tick();
  t.match(obj(report, 'good'), { result: 'synced' });
  t.match(obj(report, 'bad500'), { result: 'failed', code: 'GATEWAY_API_ERROR', error: /500 file object creation failed/ });
  t.match(obj(report, 'dropped'), { result: 'failed', code: 'GATEWAY_UNAVAILABLE' });
  t.match((await w.get('bad500'))?.status, { latestTransaction: { status: 'Failed', error: /file object creation failed/ } });
  t.match((await w.get('dropped'))?.status, { latestTransaction: { status: 'Failed' } });
  t.ok(w.gatewayApi(Buffer.from('default/good').toString('base64url')));

  const backingOff = await w.tick();
  t.match(obj(backingOff, 'bad500'), { result: 'backoff' }, 'a tick inside the backoff leaves it alone');
  w.clock.advance(60_000);
  w.resetCounts();
  const retried = await w.tick();
  t.match(obj(retried, 'bad500'), { action: 'CREATE', reason: 'missing on gateway', result: 'synced' });
  t.match(obj(retried, 'dropped'), { result: 'synced' });
  t.equal(w.tyk.writes(), 2);
  t.match((await w.get('bad500'))?.status, { latestTransaction: { status: 'Successful' } });
  t.notOk(((await w.get('bad500'))?.status?.latestTransaction as Record<string, unknown> | undefined)?.error, 'error cleared');
});

t.test('one reset connection (a stale keep-alive socket) is retried, not a failure', async (t) => {
  const w = await world(t);
  await w.create(apiDefinition('httpbin').build());
  const fault = w.tyk.inject({ method: 'POST', path: '/tyk/apis', drop: true });
  const report = await w.announce('ADDED', 'httpbin');
  t.equal(fault.fired, 1);
  t.match(obj(report, 'httpbin'), { result: 'synced' });
  t.equal(w.tyk.count('POST', '/tyk/apis'), 2);
});

t.test('an invalid spec is Failed with the gateway message and retried only when the spec changes', async (t) => {
  const w = await world(t);
  await w.create(apiDefinition('broken').build());
  const id = Buffer.from('default/broken').toString('base64url');
  const fault = w.tyk.inject({
    method: 'POST',
    path: '/tyk/apis',
    match: (c) => (c.body as { api_id?: string })?.api_id === id,
    status: 400,
    body: { status: 'error', message: 'listen path is invalid' },
    times: Infinity,
  });
  const first = await w.tick();
  t.match(obj(first, 'broken'), { result: 'invalid', code: 'GATEWAY_REJECTED', error: /listen path is invalid/ });
  w.clock.advance(3_600_000);
  w.resetCounts();
  const second = await w.tick();
  t.match(obj(second, 'broken'), { action: 'NOOP', reason: 'invalid spec unchanged', result: 'invalid' });
  t.equal(w.tyk.writes(), 0, 'no retry storm');
  t.equal(w.statusPatches(), 0);
  fault.cancel();
  await w.updateSpec('broken', (s) => ({ ...s, name: 'fixed' }));
  const third = await w.tick();
  t.match(obj(third, 'broken'), { reason: 'spec changed', result: 'synced' });
});

t.test('unsupported fields (a graph reference without a federation execution_mode) are a Failed status naming them, and nothing is written', async (t) => {
  const w = await world(t);
  await w.create(apiDefinition('mtls').unsupported().build());
  const report = await w.tick();
  t.match(obj(report, 'mtls'), { result: 'invalid', error: /graphql\.graph_ref/ });
  t.equal(w.tyk.writes(), 0);
  t.match((await w.get('mtls'))?.status, { latestTransaction: { status: 'Failed', error: /unsupported: graphql\.graph_ref with execution_mode "executionEngine"/ } });
  w.resetCounts();
  await w.tick();
  t.equal(w.statusPatches(), 0, 'reported once, not on every tick');
});

t.test('a failed gateway list deletes nothing and writes nothing', async (t) => {
  const w = await world(t);
  await w.create(apiDefinition('a').build());
  await w.tick();
  w.tyk.inject({ method: 'GET', path: '/tyk/apis', status: 500 });
  w.resetCounts();
  const report = await w.tick();
  t.match(obj(report, 'a'), { result: 'failed', reason: 'read failed' });
  t.equal(w.tyk.writes(), 0);
});

t.test('a ref that is gone with no record is left alone', async (t) => {
  const w = await world(t);
  const report = await w.announce('DELETED', 'never-seen');
  t.match(obj(report, 'never-seen'), { action: 'NOOP', reason: 'not managed' });
  t.equal(w.tyk.writes(), 0);
});

t.test('a resource removed without our finalizer (record kept) is deleted from the gateway by the next tick', async (t) => {
  const w = await world(t);
  await w.create(apiDefinition('orphan').build());
  await w.tick();
  await w.kube.remove('apidefinitions', 'default', 'orphan');
  const report = await w.tick();
  t.match(obj(report, 'orphan'), { action: 'DELETE', reason: 'deleted in cluster', result: 'deleted' });
  t.equal(w.gatewayApi(Buffer.from('default/orphan').toString('base64url')), undefined);
});

t.test('WATCH_NAMESPACE limits what is managed', async (t) => {
  const w = await world(t, { env: { WATCH_NAMESPACE: 'team' } });
  await w.create(apiDefinition('inside').inNamespace('team').build());
  await w.create(apiDefinition('outside').build());
  const report = await w.tick();
  t.same(
    report.objects.map((o) => `${o.namespace}/${o.name}`),
    ['team/inside'],
  );
  const ev = await w.announce('ADDED', 'outside');
  t.match(obj(ev, 'outside'), { result: 'skipped', reason: 'not watched' });
  t.equal(w.tyk.loaded('api').size, 1);
});

t.test('a run that runs out of time stops between chunks: what it started is recorded, the rest left unlocked to the next run', async (t) => {
  const w = await world(t, { settings: { deadlineChunk: 2 } });
  for (const n of ['a', 'b', 'c', 'd', 'e']) await w.create(apiDefinition(n).build());
  // the first write "takes" an hour of the run's clock
  w.tyk.inject({ method: 'POST', path: '/tyk/apis', match: () => (w.clock.advance(3_600_000), true), delayMs: 1 });
  const report = await w.svc.run({ trigger: 'schedule', scope: { all: true }, deadline: w.clock.now() + 60_000 });
  const deferred = report.objects.filter((o) => o.result === 'deferred');
  t.equal(deferred.length, 3, 'three objects were not started');
  t.ok(deferred.every((o) => o.reason === 'out of time'));
  t.equal(report.objects.filter((o) => o.result === 'synced' || o.result === 'pending').length, 2, 'the started chunk finished');
  t.equal(w.tyk.files('api').size, 2, 'nothing beyond the started chunk was written');
  const next = await w.tick();
  t.equal(next.objects.filter((o) => o.result === 'synced').length, 5 - (report.counts.synced ?? 0), 'the next run does the rest, no lock left behind');
  t.equal(next.counts.deferred ?? 0, 0);
  t.equal(w.tyk.loaded('api').size, 5);
});
