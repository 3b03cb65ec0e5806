/**
 * Event aggregation (lib/kube/events.ts) over our KubeClient against the loopback API server:
 * create, count, and every way the API server can answer in between (an Event expired, another
 * process counted first, one created meanwhile, a conflict that does not end, a refusal).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import t from 'tap';
import { KubeClient } from '../../lib/kube/client.js';
import { EventRecorder } from '../../lib/kube/events.js';
import type { KubeObject } from '../../lib/kube/types.js';
import { type FakeKubeApiServer, startFakeKubeApiServer } from '../fakes/kube-apiserver.js';
import { apiDefinition } from '../fixtures/builders.js';
import type { StoredEvent } from '../harness/world.js';

interface Setup {
  fake: FakeKubeApiServer;
  client: (options?: ConstructorParameters<typeof KubeClient>[1]) => KubeClient;
  obj: KubeObject;
  clock: { now: number };
}

async function setup(t: { teardown(fn: () => unknown): void }): Promise<Setup> {
  const fake = await startFakeKubeApiServer();
  const dir = await mkdtemp(join(tmpdir(), 'gr-events-'));
  const kc = new KubeConfig();
  kc.loadFromFile(await fake.writeKubeconfig(dir));
  const clients: KubeClient[] = [];
  const clock = { now: Date.parse('2026-03-01T10:00:00Z') };
  t.teardown(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await fake.close();
    await rm(dir, { recursive: true, force: true });
  });
  const obj = fake.put(apiDefinition('httpbin').build()) as KubeObject;
  return {
    fake,
    obj,
    clock,
    client: (options = {}) => {
      const c = new KubeClient(kc, { now: () => clock.now, instance: 'test-instance', ...options });
      clients.push(c);
      return c;
    },
  };
}

const eventsOf = (fake: FakeKubeApiServer, ns = 'default') => fake.listObjects('events', ns) as unknown as StoredEvent[];
const eventCalls = (fake: FakeKubeApiServer) => fake.calls.filter((c) => c.path.includes('/events')).map((c) => `${c.method} ${c.status}`);

t.test('first time: created with count 1; a repeat: one merge PATCH of count and lastTimestamp', async (t) => {
  const { fake, client, obj, clock } = await setup(t);
  const kube = client();
  const first = await kube.recordEvent(obj, 'Warning', 'SyncFailed', 'write API x: 500 boom');
  t.match(first, { name: /^httpbin\.[0-9a-f]{16}$/, count: 1 });
  t.match(eventsOf(fake), [
    {
      metadata: { name: first.name, namespace: 'default' },
      involvedObject: { apiVersion: 'tyk.tyk.io/v1alpha1', kind: 'ApiDefinition', name: 'httpbin', namespace: 'default', uid: obj.metadata.uid, resourceVersion: obj.metadata.resourceVersion },
      type: 'Warning',
      reason: 'SyncFailed',
      message: 'write API x: 500 boom',
      count: 1,
      firstTimestamp: '2026-03-01T10:00:00.000Z',
      lastTimestamp: '2026-03-01T10:00:00.000Z',
      source: { component: 'gateway-reconciler', host: 'test-instance' },
      reportingComponent: 'gateway-reconciler',
      reportingInstance: 'test-instance',
    },
  ]);
  fake.resetCalls();
  clock.now += 300_000;
  t.same(await kube.recordEvent(obj, 'Warning', 'SyncFailed', 'write API x: 500 boom'), { name: first.name, count: 2 });
  t.same(eventCalls(fake), ['PATCH 200'], 'one call');
  t.match(fake.calls[0], { contentType: 'application/merge-patch+json', body: { count: 2, lastTimestamp: '2026-03-01T10:05:00.000Z', metadata: { resourceVersion: /^\d+$/ } } });
  t.match(eventsOf(fake), [{ count: 2, firstTimestamp: '2026-03-01T10:00:00.000Z', lastTimestamp: '2026-03-01T10:05:00.000Z' }]);
  await kube.recordEvent(obj, 'Warning', 'SyncFailed', 'write API x: 500 other');
  await kube.recordEvent(obj, 'Normal', 'Synced', 'write API x: 500 boom');
  t.equal(eventsOf(fake).length, 3, 'another message or type: another Event');
  const shop = fake.put(apiDefinition('orders').inNamespace('shop').build()) as KubeObject;
  await kube.recordEvent(shop, 'Warning', 'Invalid', 'no');
  t.match(eventsOf(fake, 'shop'), [{ involvedObject: { namespace: 'shop', name: 'orders' } }], 'in the namespace of its object');
});

t.test('an Event that expired meanwhile (404 at patch) is created again, from count 1', async (t) => {
  const { fake, client, obj } = await setup(t);
  const kube = client();
  const { name } = await kube.recordEvent(obj, 'Warning', 'Waiting', 'w');
  fake.remove('events', 'default', name);
  fake.resetCalls();
  t.same(await kube.recordEvent(obj, 'Warning', 'Waiting', 'w'), { name, count: 1 });
  t.same(eventCalls(fake), ['PATCH 404', 'POST 201']);
});

t.test('another process counted first: a create answered 409 is read and patched; a stale count is re-read (409 at patch)', async (t) => {
  const { fake, client, obj } = await setup(t);
  const a = client();
  const b = client();
  const { name } = await a.recordEvent(obj, 'Warning', 'SyncFailed', 'boom');
  fake.resetCalls();
  t.same(await b.recordEvent(obj, 'Warning', 'SyncFailed', 'boom'), { name, count: 2 }, 'a process that did not know it');
  t.same(eventCalls(fake), ['POST 409', 'GET 200', 'PATCH 200']);
  fake.resetCalls();
  t.same(await a.recordEvent(obj, 'Warning', 'SyncFailed', 'boom'), { name, count: 3 }, 'the first process, its resourceVersion stale');
  t.same(eventCalls(fake), ['PATCH 409', 'GET 200', 'PATCH 200']);
  t.equal(eventsOf(fake).length, 1);
});

t.test('an Event gone between the answers: created after all', async (t) => {
  const { fake, client, obj } = await setup(t);
  const kube = client();
  // 409 at create, then nothing to read (it expired in between): create again
  fake.inject({
    method: 'POST',
    path: '/api/v1/namespaces/default/events',
    status: 409,
    body: { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'AlreadyExists', code: 409, message: 'events "x" already exists' },
  });
  t.match(await kube.recordEvent(obj, 'Warning', 'A', 'a'), { count: 1 });
  t.same(eventCalls(fake), ['POST 409', 'GET 404', 'POST 201']);
  // 409 at patch, then nothing to read: create again
  const { name } = await kube.recordEvent(obj, 'Warning', 'B', 'b');
  fake.remove('events', 'default', name);
  fake.resetCalls();
  fake.inject({ method: 'PATCH', path: /\/events\//, status: 409 });
  t.same(await kube.recordEvent(obj, 'Warning', 'B', 'b'), { name, count: 1 });
  t.same(eventCalls(fake), ['PATCH 409', 'GET 404', 'POST 201']);
});

t.test('a conflict that does not end, or a refusal: thrown, named', async (t) => {
  const { fake, client, obj } = await setup(t);
  const kube = client();
  await kube.recordEvent(obj, 'Warning', 'SyncFailed', 'boom');
  fake.inject({ method: 'PATCH', path: /\/events\//, status: 409, times: Infinity });
  await t.rejects(kube.recordEvent(obj, 'Warning', 'SyncFailed', 'boom'), /still conflicting after 4 attempts/);
  fake.clearFaults();
  fake.inject({
    method: 'POST',
    path: /\/events$/,
    status: 403,
    body: { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'Forbidden', code: 403, message: 'events is forbidden: User "x" cannot create resource "events"' },
  });
  await t.rejects(kube.recordEvent(obj, 'Warning', 'Other', 'x'), { code: 'KUBE_API_ERROR', message: /create events ".*": 403 events is forbidden/ });
  fake.inject({ method: 'PATCH', path: /\/events\//, status: 500 });
  await t.rejects(kube.recordEvent(obj, 'Warning', 'SyncFailed', 'boom'), { message: /patch events ".*": 500/ });
  fake.inject({ method: 'GET', path: /\/events\//, status: 500 });
  fake.inject({ method: 'POST', path: /\/events$/, status: 409, body: { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'AlreadyExists', code: 409 } });
  await t.rejects(client().recordEvent(obj, 'Warning', 'SyncFailed', 'boom'), { message: /get events ".*": 500/ });
});

t.test('what a process remembers is bounded: the least recently used Event is read again', async (t) => {
  const { fake, client, obj } = await setup(t);
  const kube = client();
  const recorder = new EventRecorder(kube, { component: 'gateway-reconciler', instance: 'i', now: Date.now, cacheSize: 1 });
  await recorder.record(obj, 'Warning', 'A', 'a');
  await recorder.record(obj, 'Warning', 'B', 'b');
  fake.resetCalls();
  t.match(await recorder.record(obj, 'Warning', 'B', 'b'), { count: 2 });
  t.same(eventCalls(fake), ['PATCH 200'], 'the last one is remembered');
  fake.resetCalls();
  t.match(await recorder.record(obj, 'Warning', 'A', 'a'), { count: 2 });
  t.same(eventCalls(fake), ['POST 409', 'GET 200', 'PATCH 200'], 'the first one was forgotten');
});

t.test('secrets given to the client never reach an Event', async (t) => {
  const { fake, client, obj } = await setup(t);
  const kube = client({ secrets: ['gateway-secret-123'] });
  await kube.recordEvent(obj, 'Warning', 'SyncFailed', 'answer echoed gateway-secret-123');
  t.match(eventsOf(fake), [{ message: 'answer echoed [redacted]' }]);
});

t.test('an object known only by name (no namespace, uid or resourceVersion): its Event is in "default", named by kind and name', async (t) => {
  const { fake, client } = await setup(t);
  const kube = client();
  const bare: KubeObject = { apiVersion: 'tyk.tyk.io/v1alpha1', kind: 'ApiDefinition', metadata: { name: 'bare' } };
  const { name } = await kube.recordEvent(bare, 'Warning', 'ReadFailed', 'x');
  const [ev] = eventsOf(fake);
  t.match(ev, { metadata: { name, namespace: 'default' }, involvedObject: { name: 'bare', namespace: 'default' } });
  t.notOk('uid' in (ev?.involvedObject ?? {}) || 'resourceVersion' in (ev?.involvedObject ?? {}), 'nothing made up');
  // an Event another writer left without a count counts from 1
  fake.put({ ...(ev as unknown as KubeObject), count: undefined } as never);
  t.match(await client().recordEvent(bare, 'Warning', 'ReadFailed', 'x'), { count: 2 });
});
