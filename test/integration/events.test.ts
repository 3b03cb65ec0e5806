/**
 * Every outcome other than synced or unchanged is visible to `kubectl describe`: Kubernetes
 * Events about ApiDefinitions and SecurityPolicies, through HTTP with real Redis, our clients
 * and the fakes. One Event per distinct thing said, counted on repeats; a few Normal Events for
 * successful changes; nothing in steady state, dry runs or deferred runs; a status patch the
 * API server refuses is logged, reported and told; no secret in any Event.
 */
import t from 'tap';
import { apiDefinition, securityPolicy } from '../fixtures/builders.js';
import { capturingLogger, RESYNC_TOKEN, reported, type StoredEvent, WEBHOOK_TOKEN, type World, worldFor } from '../harness/world.js';

const idOf = (name: string, ns = 'default') => Buffer.from(`${ns}/${name}`).toString('base64url');

const world = worldFor;

const obj = reported;

const warnings = async (w: World, name: string, kind = 'ApiDefinition'): Promise<StoredEvent[]> => (await w.events(name, 'default', kind)).filter((e) => e.type === 'Warning');
const normals = async (w: World, name: string, kind = 'ApiDefinition'): Promise<StoredEvent[]> => (await w.events(name, 'default', kind)).filter((e) => e.type === 'Normal');

/** A gateway write of this id answers 500 until cancelled. */
function failWrites(w: World, id: string, collection = '/tyk/apis') {
  return w.tyk.inject({
    method: 'POST',
    path: collection,
    match: (c) => (c.body as { api_id?: string; id?: string })?.[collection === '/tyk/apis' ? 'api_id' : 'id'] === id,
    status: 500,
    body: { status: 'error', message: 'file object creation failed, write error' },
    times: Infinity,
  });
}

t.test('a failing write: one SyncFailed Warning counted over failures and backoff, then a Normal Synced and no new Warning', async (t) => {
  const w = await world(t);
  await w.create(apiDefinition('bad').build());
  await w.create(securityPolicy('pol').build());
  const apiFault = failWrites(w, idOf('bad'));
  const polFault = failWrites(w, idOf('pol'), '/tyk/policies');
  const first = await w.tick();
  t.match(obj(first, 'bad'), { result: 'failed' });
  t.match(obj(first, 'pol', 'SecurityPolicy'), { result: 'failed' });
  const cr = await w.get('bad');
  const [ev] = await w.events('bad');
  t.equal((await w.events('bad')).length, 1, 'one Event');
  t.match(ev, {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: /^bad\.[0-9a-f]{16}$/, namespace: 'default' },
    type: 'Warning',
    reason: 'SyncFailed',
    message: /^write API \S+: 500 file object creation failed, write error$/,
    count: 1,
    involvedObject: { apiVersion: 'tyk.tyk.io/v1alpha1', kind: 'ApiDefinition', name: 'bad', namespace: 'default', uid: cr?.metadata.uid, resourceVersion: /^\d+$/ },
    source: { component: 'gateway-reconciler' },
    reportingComponent: 'gateway-reconciler',
    reportingInstance: /./,
  });
  t.equal(ev?.firstTimestamp, ev?.lastTimestamp);
  t.match(await warnings(w, 'pol', 'SecurityPolicy'), [{ reason: 'SyncFailed', message: /write policy \S+: 500 file object creation failed/, count: 1 }], 'a SecurityPolicy too');

  w.resetCounts();
  w.clock.advance(60_000);
  const second = await w.tick();
  t.match(obj(second, 'bad'), { action: 'CREATE', result: 'failed' }, 'retried after its backoff, failed again');
  const [again] = await w.events('bad');
  t.equal((await w.events('bad')).length, 1, 'the same failure twice is still one Event object');
  t.equal(again?.count, 2, 'counted twice');
  t.equal(again?.metadata.name, ev?.metadata.name);
  t.equal(again?.firstTimestamp, ev?.firstTimestamp, 'first seen when it was first seen');
  t.ok(String(again?.lastTimestamp) > String(ev?.lastTimestamp), 'last seen now');
  t.same(w.eventWrites(), { creates: 0, patches: 2 }, 'one PATCH per object, no new Event');

  const third = await w.tick();
  t.match(obj(third, 'bad'), { result: 'backoff' });
  t.match(await warnings(w, 'bad'), [{ reason: 'SyncFailed', count: 3 }], 'a run in backoff still says it is failing, on the same Event');

  apiFault.cancel();
  polFault.cancel();
  w.clock.advance(10 * 60_000);
  const fixed = await w.tick();
  t.match(obj(fixed, 'bad'), { result: 'synced' });
  t.match(await warnings(w, 'bad'), [{ reason: 'SyncFailed', count: 3 }], 'no new Warning');
  t.match(await normals(w, 'bad'), [{ reason: 'Synced', count: 1, message: `missing on gateway: written to gateway default as ${idOf('bad')}` }], 'a Normal Synced');
  t.match(await normals(w, 'pol', 'SecurityPolicy'), [{ reason: 'Synced' }]);

  w.resetCounts();
  await w.tick();
  await w.tick();
  t.same(w.eventWrites(), { creates: 0, patches: 0 }, 'steady state tells nothing');
});

t.test('an invalid spec, by the gateway or by us: an Invalid Warning, counted on every run it stays invalid', async (t) => {
  const w = await world(t);
  await w.create(apiDefinition('broken').build());
  await w.create(apiDefinition('mtls').unsupported().build());
  w.tyk.inject({
    method: 'POST',
    path: '/tyk/apis',
    match: (c) => (c.body as { api_id?: string })?.api_id === idOf('broken'),
    status: 400,
    body: { status: 'error', message: 'listen path is invalid' },
    times: Infinity,
  });
  await w.tick();
  t.match(await w.events('broken'), [{ type: 'Warning', reason: 'Invalid', message: /rejected by the gateway: listen path is invalid/, count: 1 }]);
  t.match(await w.events('mtls'), [{ type: 'Warning', reason: 'Invalid', message: /graphql\.graph_ref/, count: 1 }]);
  w.resetCounts();
  const second = await w.tick();
  t.match(obj(second, 'broken'), { reason: 'invalid spec unchanged', result: 'invalid' });
  t.match(await w.events('broken'), [{ reason: 'Invalid', count: 2 }]);
  t.match(await w.events('mtls'), [{ reason: 'Invalid', count: 2 }]);
  t.same(w.eventWrites(), { creates: 0, patches: 2 });
  t.equal(w.statusPatches(), 0, 'the status is not patched again');
});

t.test('reads that fail: ReadFailed, GatewayUnavailable (the connection drops), GatewayUnsupported (a gateway without the policies API)', async (t) => {
  const w = await world(t);
  await w.create(apiDefinition('a').build());
  await w.tick();
  const listFails = w.tyk.inject({ method: 'GET', path: '/tyk/apis', status: 500, body: { status: 'error', message: 'storage unavailable' } });
  const failed = await w.tick();
  t.match(obj(failed, 'a'), { result: 'failed', reason: 'read failed' });
  t.match(await warnings(w, 'a'), [{ reason: 'ReadFailed', message: /list APIs: 500 storage unavailable/ }]);
  t.equal(listFails.fired, 1);

  const dropped = w.tyk.inject({ method: 'GET', path: '/tyk/apis', drop: true, times: Infinity });
  const unreachable = await w.tick();
  dropped.cancel();
  t.match(obj(unreachable, 'a'), { result: 'failed', reason: 'read failed', code: 'GATEWAY_UNAVAILABLE' });
  t.same((await warnings(w, 'a')).map((e) => e.reason).sort(), ['GatewayUnavailable', 'ReadFailed']);
  t.ok((await warnings(w, 'a')).some((e) => e.reason === 'GatewayUnavailable' && /gateway default/.test(e.message)));

  // Tyk Gateway 3.1 has no /tyk/policies: a plain-text 404 page, not Tyk's JSON
  w.tyk.inject({ method: '*', path: /^\/tyk\/policies/, status: 404, body: '404 page not found', times: Infinity });
  await w.create(securityPolicy('p').granting('a').build());
  const old = await w.tick();
  t.match(obj(old, 'p', 'SecurityPolicy'), { result: 'failed', reason: 'not supported by gateway' });
  t.match(await warnings(w, 'p', 'SecurityPolicy'), [{ reason: 'GatewayUnsupported', message: /has no \/tyk\/policies API: it answered "404 page not found"/ }]);
  const one = await w.resync({ kind: 'SecurityPolicy', namespace: 'default', name: 'p' });
  t.match(obj(one.body, 'p', 'SecurityPolicy'), { result: 'failed' });
  t.same(
    (await warnings(w, 'p', 'SecurityPolicy')).map((e) => e.reason),
    ['GatewayUnsupported', 'GatewayUnsupported'],
    'a GET meeting the same page: the same reason, its own message',
  );
});

t.test('waiting: a policy for an API that does not exist, a deletion held by a policy; counted, never a new Event object', async (t) => {
  const w = await world(t);
  await w.create(securityPolicy('early').granting('missing').build());
  await w.create(apiDefinition('held').build());
  await w.create(securityPolicy('holder').granting('held').build());
  await w.tick();
  t.match(await w.events('early', 'default', 'SecurityPolicy'), [{ type: 'Warning', reason: 'Waiting', message: /ApiDefinition default\/missing does not exist/, count: 1 }]);
  await w.delete('held');
  w.resetCounts();
  const report = await w.tick();
  t.match(obj(report, 'held'), { action: 'WAIT', result: 'waiting' });
  t.match(await warnings(w, 'held'), [{ reason: 'DeletionHeld', message: /still referenced by SecurityPolicy default\/holder/, count: 1 }]);
  t.match(await w.events('early', 'default', 'SecurityPolicy'), [{ reason: 'Waiting', count: 2 }]);
  t.match(await warnings(w, 'holder', 'SecurityPolicy'), [{ reason: 'Waiting', message: /ApiDefinition default\/held is being deleted/ }], 'and its policy says why it waits');
  t.same(w.eventWrites(), { creates: 2, patches: 1 }, 'the held deletion and the policy now waiting are new; the old wait is counted');
  await w.delete('holder', 'default', 'SecurityPolicy');
  await w.tick();
  await w.tick();
  t.equal(await w.get('held'), undefined, 'the deletion completed');
  t.same((await normals(w, 'held')).map((e) => e.reason).sort(), ['Deleted', 'Synced']);
  t.ok(
    (await normals(w, 'held')).some((e) => e.reason === 'Deleted' && e.message === `deleted from gateway default (${idOf('held')})`),
    'Normal Deleted once the deletion completes',
  );
});

t.test('Tyk renames a clashing listen path: a Diverged Warning, kept alive while it lasts', async (t) => {
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
  t.match(obj(report, 'second'), { result: 'diverged' });
  t.match(await warnings(w, 'second'), [{ reason: 'Diverged', message: /proxy\.listen_path: sent "\/same", gateway has "\/same-/, count: 1 }]);
  w.resetCounts();
  const later = await w.tick();
  t.match(obj(later, 'second'), { result: 'unchanged' });
  t.match(await warnings(w, 'second'), [{ reason: 'Diverged', count: 2 }], 'the recorded divergence is still told');
  t.equal(w.tyk.writes(), 0);
  t.same(await warnings(w, 'first'), []);
});

t.test('writes not visible within the budget: a NotVisible Warning; once visible, a Normal Synced', async (t) => {
  const w = await world(t, { settings: { settle: { budgetMs: 300, initialDelayMs: 20, maxDelayMs: 50, reloadEveryMs: 40 } } });
  await w.create(apiDefinition('slow').build());
  w.tyk.dropReloads(1000);
  const report = await w.announce('ADDED', 'slow');
  t.match(obj(report, 'slow'), { result: 'pending' });
  t.match(await warnings(w, 'slow'), [{ reason: 'NotVisible', message: /not yet visible after reload/ }]);
  w.tyk.dropReloads(0);
  w.tyk.reloadNow();
  const next = await w.tick();
  t.match(obj(next, 'slow'), { result: 'synced' });
  t.match(await normals(w, 'slow'), [{ reason: 'Synced' }]);
  t.equal((await warnings(w, 'slow')).length, 1);
});

t.test('an OperatorContext that does not exist: GatewayUnavailable on the resource that uses it', async (t) => {
  const w = await world(t);
  await w.create(
    apiDefinition('lost')
      .patchSpec({ contextRef: { name: 'nope', namespace: 'default' } })
      .build(),
  );
  await w.tick();
  await w.tick();
  t.match(await w.events('lost'), [{ type: 'Warning', reason: 'GatewayUnavailable', message: 'OperatorContext default/nope not found', count: 2 }]);
});

t.test('a status patch the API server refuses: logged, reported, told besides the outcome; the record is kept and the others go on', async (t) => {
  const log = capturingLogger();
  const w = await world(t, { log });
  for (const n of ['good', 'bad', 'worse']) await w.create(apiDefinition(n).build());
  failWrites(w, idOf('worse'));
  const refusal = (name: string) => `ApiDefinition.tyk.tyk.io "${name}" is invalid: status.api_id: Invalid value: "null": status.api_id in body must be of type string: "null"`;
  for (const name of ['bad', 'worse']) {
    w.kube.fake.inject({
      method: 'PATCH',
      path: `/apis/tyk.tyk.io/v1alpha1/namespaces/default/apidefinitions/${name}/status`,
      status: 422,
      body: { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: refusal(name), reason: 'Invalid', code: 422 },
    });
  }
  const report = await w.tick();
  t.match(obj(report, 'good'), { result: 'synced' });
  t.notOk('statusError' in obj(report, 'good'));
  t.match(obj(report, 'bad'), { result: 'synced', statusError: /422 .*status\.api_id in body must be of type string/ });
  t.match(obj(report, 'worse'), { result: 'failed', statusError: /422/ });
  t.match((await w.get('good'))?.status, { latestTransaction: { status: 'Successful' } });
  t.equal((await w.get('bad'))?.status, undefined, 'the object keeps its old status');
  const logged = log.entries.filter((e) => e.level === 'warn' && e.msg === 'status patch failed').sort((a, b) => String(a.key).localeCompare(String(b.key)));
  t.match(logged, [
    { key: 'ApiDefinition/default/bad', err: /must be of type string/, status: 422 },
    { key: 'ApiDefinition/default/worse', err: /must be of type string/, status: 422 },
  ]);
  t.equal(logged.length, 2, "logged once each, as a warning with the key and the server's message");
  t.match((await w.events('bad')).map((e) => [e.type, e.reason]).sort(), [
    ['Normal', 'Synced'],
    ['Warning', 'StatusPatchFailed'],
  ]);
  t.match(await warnings(w, 'bad'), [{ reason: 'StatusPatchFailed', message: /^status not saved: patch status of apidefinitions "bad": 422 .*must be of type string: "null"$/ }]);
  t.same((await w.events('worse')).map((e) => e.reason).sort(), ['StatusPatchFailed', 'SyncFailed'], 'the outcome is told too');
  const [record] = await w.store.getRecords(['ApiDefinition/default/bad']);
  t.match(record, { result: 'synced', id: idOf('bad') }, 'the record write is kept');

  const next = await w.tick();
  t.notOk('statusError' in obj(next, 'bad'), 'the next run patches the status again');
  t.match((await w.get('bad'))?.status, { api_id: idOf('bad'), latestTransaction: { status: 'Successful' } });
  t.match(await warnings(w, 'bad'), [{ reason: 'StatusPatchFailed', count: 1 }], 'and tells nothing new');
});

t.test('no secret in any Event; one line, at most 1 KiB', async (t) => {
  const w = await world(t);
  await w.create(apiDefinition('leaky').build());
  const secret = w.tyk.secret;
  const message = `invalid key ${secret}\nheaders: Authorization: Bearer ${WEBHOOK_TOKEN}, x-tyk-authorization: ${secret}\nredis://:${RESYNC_TOKEN}@redis:6379 ${'x'.repeat(3000)}`;
  w.tyk.inject({ method: 'POST', path: '/tyk/apis', status: 500, body: { status: 'error', message }, times: Infinity });
  await w.tick();
  const events = await w.allEvents();
  t.equal(events.length, 1);
  const text = JSON.stringify(events);
  for (const s of [secret, WEBHOOK_TOKEN, RESYNC_TOKEN]) t.notOk(text.includes(s), 'no secret');
  const [ev] = events;
  t.notMatch(ev?.message, /\n/, 'one line');
  t.ok(Buffer.byteLength(String(ev?.message), 'utf8') <= 1024, 'within the 1 KiB the API allows');
  t.match(ev?.message, /^write API \S+: 500 invalid key \[redacted\] headers: Authorization: .*\[redacted\].*redis:\/\/\[redacted\]@redis:6379 x+…$/);
});

t.test('a dry run and a deferred object tell nothing', async (t) => {
  const w = await world(t);
  await w.create(apiDefinition('bad').build());
  await w.create(securityPolicy('early').granting('missing').build());
  failWrites(w, idOf('bad'));
  const dry = await w.resync({ dryRun: true });
  t.match(obj(dry.body, 'bad'), { result: 'planned' });
  t.match(obj(dry.body, 'early', 'SecurityPolicy'), { result: 'waiting' });
  t.same(w.eventWrites(), { creates: 0, patches: 0 }, 'a dry run writes no Event');
  t.same(await w.allEvents(), []);

  await w.create(apiDefinition('held').build());
  t.equal(await w.store.lock('ApiDefinition/default/held', 'another-run', 60_000), 'acquired');
  const report = await w.tick();
  t.match(obj(report, 'held'), { result: 'deferred' });
  t.same(await w.events('held'), [], 'the run that holds the lock tells the outcome');
  t.equal((await warnings(w, 'bad')).length, 1);
});

t.test('a new process (a restart, another replica, a Lambda cold start) counts on the same Event: create answered 409, GET, PATCH', async (t) => {
  const w = await world(t);
  await w.create(apiDefinition('bad').build());
  failWrites(w, idOf('bad'));
  await w.tick();
  await w.restartService();
  w.clock.advance(60_000);
  w.resetCounts();
  const report = await w.tick();
  t.match(obj(report, 'bad'), { result: 'failed' });
  t.match(await w.events('bad'), [{ reason: 'SyncFailed', count: 2 }]);
  t.equal((await w.events('bad')).length, 1);
  const eventCalls = w.kube.calls.filter((c) => c.path.startsWith('/api/v1/namespaces/default/events')).map((c) => `${c.method} ${c.status}`);
  t.same(eventCalls, ['POST 409', 'GET 200', 'PATCH 200']);
  w.resetCounts();
  w.clock.advance(60_000);
  await w.tick();
  t.same(
    w.kube.calls.filter((c) => c.path.startsWith('/api/v1/namespaces/default/events')).map((c) => `${c.method} ${c.status}`),
    ['PATCH 200'],
    'then it remembers',
  );
});

t.test('successful changes: one Normal Event each, none in steady state; a deletion says Deleted', async (t) => {
  const w = await world(t);
  await w.create(apiDefinition('a').build());
  await w.create(apiDefinition('b').build());
  await w.tick();
  t.match(await w.events('a'), [{ type: 'Normal', reason: 'Synced', message: `created in cluster: written to gateway default as ${idOf('a')}`, count: 1 }]);
  w.resetCounts();
  for (let i = 0; i < 3; i++) await w.tick();
  t.same(w.eventWrites(), { creates: 0, patches: 0 }, 'no Event in steady state');

  w.tyk.editLoaded('api', idOf('b'), (api) => {
    (api.proxy as Record<string, unknown>).target_url = 'http://evil.example';
  });
  await w.tick();
  t.equal((await w.events('b')).length, 1, 'drift undone on something already synced: no new Event');

  await w.updateSpec('a', (s) => ({ ...s, proxy: { ...(s.proxy as object), target_url: 'http://example.com' } }));
  await w.tick();
  t.same((await w.events('a')).map((e) => e.message).sort(), [`created in cluster: written to gateway default as ${idOf('a')}`, `spec changed: written to gateway default as ${idOf('a')}`]);
  await w.delete('a');
  await w.tick();
  t.match(
    (await w.events('a')).filter((e) => e.reason === 'Deleted'),
    [{ type: 'Normal', message: `deleted from gateway default (${idOf('a')})` }],
  );
  t.equal(await w.get('a'), undefined);
  t.same(
    (await w.allEvents()).filter((e) => e.type === 'Warning'),
    [],
  );
});

t.test('Events the API server refuses (no RBAC for them) are logged; the run and its objects go on', async (t) => {
  const log = capturingLogger();
  const w = await world(t, { log });
  await w.create(apiDefinition('fine').build());
  await w.create(apiDefinition('bad').build());
  failWrites(w, idOf('bad'));
  w.kube.fake.inject({
    method: 'POST',
    path: /\/events$/,
    status: 403,
    body: { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'Forbidden', code: 403, message: 'events is forbidden: User "system:serviceaccount:x:y" cannot create resource "events"' },
    times: Infinity,
  });
  const report = await w.tick();
  t.match(obj(report, 'fine'), { result: 'synced' });
  t.match(obj(report, 'bad'), { result: 'failed' });
  t.same(await w.allEvents(), []);
  const refused = log.entries.filter((e) => e.msg === 'event not recorded');
  t.same(refused.map((e) => `${String(e.key)} ${String(e.reason)}`).sort(), ['ApiDefinition/default/bad SyncFailed', 'ApiDefinition/default/fine Synced']);
  t.ok(refused.every((e) => e.level === 'warn' && /403 events is forbidden/.test(String(e.err))));
});

t.test('links kept on an ApiDefinition the run did not otherwise look at: a refused status patch is told there too', async (t) => {
  const log = capturingLogger();
  const w = await world(t, { log });
  for (const n of ['a', 'b', 'c']) await w.create(apiDefinition(n).build());
  await w.create(securityPolicy('p').granting('a').build());
  await w.tick();
  await w.updateSpec('p', (s) => ({ ...s, access_rights_array: ['a', 'b', 'c'].map((name) => ({ name, namespace: 'default', versions: ['Default'] })) }), 'default', 'SecurityPolicy');
  w.kube.fake.inject({
    method: 'PATCH',
    path: '/apis/tyk.tyk.io/v1alpha1/namespaces/default/apidefinitions/b/status',
    status: 403,
    body: { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'Forbidden', code: 403, message: 'apidefinitions.tyk.tyk.io "b" is forbidden: cannot patch resource "apidefinitions/status"' },
  });
  // the policy's run reads c to resolve the access right, then again to update its links: that read fails
  w.kube.fake.inject({ method: 'GET', path: '/apis/tyk.tyk.io/v1alpha1/namespaces/default/apidefinitions/c', status: 500, afterCalls: 1 });
  const report = await w.resync({ kind: 'SecurityPolicy', namespace: 'default', name: 'p' });
  t.match(obj(report.body, 'p', 'SecurityPolicy'), { result: 'synced' });
  t.same(
    report.body.objects.map((o) => o.name),
    ['p'],
    'the run looked at the policy only',
  );
  t.match(await warnings(w, 'b'), [{ reason: 'StatusPatchFailed', message: /^status not saved: patch status of apidefinitions "b": 403 .*is forbidden/ }]);
  t.match(
    log.entries.filter((e) => e.msg === 'status patch failed'),
    [{ level: 'warn', key: 'ApiDefinition/default/b', status: 403 }],
  );
  t.match(
    log.entries.filter((e) => e.msg === 'could not update linked_by_policies'),
    [{ level: 'warn', api: 'default/c' }],
    'a read that failed is logged',
  );
  t.same((await w.get('b'))?.status?.linked_by_policies, undefined);
  await w.tick();
  for (const n of ['b', 'c']) t.match((await w.get(n))?.status?.linked_by_policies, [{ name: 'p', namespace: 'default' }], `${n}: set right by a later run`);
});
