/**
 * TYK_GATEWAY_SERVICE wired into the service (lib/service.ts): the default gateway is the ready
 * endpoints of the gateway's Service (EndpointSlices on the loopback API server), two Tyk Gateway
 * fakes here. A run writes each API to both, reloads each on its own node (never the group),
 * reports the replicas; a replica that joins is served by the full run that its EndpointSlice's
 * watch event starts, and another Service's slice starts nothing. The service sends over undici's
 * pooled client (its replicas' clients too), as the self-hosted server does.
 */
import t, { type Test } from 'tap';
import type { KubeObject } from '../../lib/kube/types.js';
import { type FakeTykGateway, startFakeTykGateway } from '../fakes/tyk-gateway.js';
import { apiDefinition } from '../fixtures/builders.js';
import { reported, worldFor } from '../harness/world.js';

const ENDPOINT_SLICE_TYPE = { group: 'discovery.k8s.io', version: 'v1', kind: 'EndpointSlice', plural: 'endpointslices', builtin: true };

/** An EndpointSlice as the endpoints controller writes it: v1, or v1beta1 on the real tier's server (1.20 serves only that). */
function slice(name: string, service: string, endpoints: { pod: string; gw: FakeTykGateway }[], version: 'v1' | 'v1beta1' = 'v1'): KubeObject {
  // one slice per port: each fake has a port of its own
  const [first] = endpoints;
  return {
    apiVersion: `discovery.k8s.io/${version}`,
    kind: 'EndpointSlice',
    metadata: { name, namespace: 'tyk', labels: { 'kubernetes.io/service-name': service } },
    addressType: 'IPv4',
    endpoints: endpoints.map((e) => ({ addresses: ['127.0.0.1'], conditions: { ready: true }, targetRef: { kind: 'Pod', namespace: 'tyk', name: e.pod } })),
    ports: [{ name: 'http', port: Number(new URL(first!.gw.url).port), protocol: 'TCP' }],
  };
}

/** A World with TYK_GATEWAY_SERVICE=tyk/gateway-svc:http, its gateway fake and two more; the EndpointSlice version its API server serves. */
async function replicasWorld(t: Test) {
  // the replicas' clients over undici's pooled client, as a full run's (lib/main.ts)
  const w = await worldFor(t, { env: { TYK_GATEWAY_SERVICE: 'tyk/gateway-svc:http' }, kube: { resources: [ENDPOINT_SLICE_TYPE] }, tyk: { reloadDelayMs: 1 }, transport: 'undici' });
  const v: 'v1' | 'v1beta1' = w.kube.kind === 'real' ? 'v1beta1' : 'v1';
  const more: FakeTykGateway[] = [];
  for (let i = 0; i < 2; i++) {
    const gw = await startFakeTykGateway({ secret: w.tyk.secret, reloadDelayMs: 1 });
    t.teardown(() => gw.close());
    more.push(gw);
  }
  return { w, v, more };
}

t.test('the default gateway as its replicas: every API on each, a node reload each, the replicas reported; a joining replica served by the full run its slice starts', async (t) => {
  const { w, v, more } = await replicasWorld(t);
  const [second, third] = more as [FakeTykGateway, FakeTykGateway];
  await w.kube.put(slice('gateway-svc-a', 'gateway-svc', [{ pod: 'gw-0', gw: w.tyk }], v));
  await w.kube.put(slice('gateway-svc-b', 'gateway-svc', [{ pod: 'gw-1', gw: second }], v));

  await w.create(apiDefinition('httpbin').build());
  for (const calls of [w.kube, w.tyk, second, third]) calls.resetCalls();
  const sent = w.transportRequests.undici;
  const first = await w.tick();
  t.match(reported(first, 'httpbin'), { result: 'synced' }, 'synced');
  if (w.kube.kind === 'fake') {
    const seen = w.kube.calls.length + w.tyk.calls.length + second.calls.length + third.calls.length;
    t.equal(w.transportRequests.undici - sent, seen, 'every call the API server and the replicas saw came over undici');
  }
  t.same(first.gateway.replicas, [{ gateway: 'default', replicas: ['gw-0', 'gw-1'], unreadable: [] }], 'the replicas reported');
  for (const [name, gw] of [
    ['gw-0', w.tyk],
    ['gw-1', second],
  ] as const) {
    t.equal(gw.files('api').size, 1, `${name}: the API written to it`);
    t.ok(gw.count('GET', '/tyk/reload') >= 1, `${name}: reloaded on its own`);
    t.equal(gw.count('GET', '/tyk/reload/group'), 0, `${name}: never the group`);
  }
  for (const gw of [w.tyk, second]) gw.resetCalls();
  t.match(reported(await w.tick(), 'httpbin'), { result: 'unchanged' }, 'steady: unchanged');
  t.not(w.tyk.loaded('api').values().next().value?.id, second.loaded('api').values().next().value?.id, 'each replica made up its own object id');
  t.equal(w.tyk.count('GET', /^\/tyk\/apis\/[^/]+$/) + second.count('GET', /^\/tyk\/apis\/[^/]+$/), 0, 'yet they agree, compared by their bytes without it: no object read one by one');
  t.equal(w.tyk.writes() + second.writes(), 0, 'and nothing written again');

  // a third replica joins: its slice's watch event starts a full run, which writes to it alone
  await w.kube.put(slice('gateway-svc-c', 'gateway-svc', [{ pod: 'gw-2', gw: third }], v));
  const joined = await w.watch({ type: 'ADDED', object: await w.kube.getObject('endpointslices.discovery.k8s.io', 'tyk', 'gateway-svc-c') });
  t.equal(joined.statusCode, 200);
  t.match(reported(joined.body.report!, 'httpbin'), { result: 'synced' }, 'the full run finds the new replica without the API');
  t.equal(third.files('api').size, 1, 'gw-2: the API written to it');
  t.equal(w.tyk.writes() + second.writes(), 0, 'the others not written again');

  // another Service's slice in that namespace: not ours
  const other = await w.watch({ type: 'ADDED', object: slice('dashboard-svc-a', 'dashboard-svc', [{ pod: 'dash-0', gw: third }]) });
  t.equal(other.statusCode, 200);
  t.equal(other.body.report ?? null, null, 'nothing run');
});

t.test('three replicas over HTTP: one restarted empty, one edited, one answering 500, one removed from the slice', async (t) => {
  const { w, v, more } = await replicasWorld(t);
  const [b, c] = more as [FakeTykGateway, FakeTykGateway];
  const pods = { 'gw-0': w.tyk, 'gw-1': b, 'gw-2': c };
  for (const [pod, gw] of Object.entries(pods)) await w.kube.put(slice(`gateway-svc-${pod}`, 'gateway-svc', [{ pod, gw }], v));
  const writes = () => Object.fromEntries(Object.entries(pods).map(([p, g]) => [p, g.writes()]));
  const reset = () => {
    for (const g of Object.values(pods)) g.resetCalls();
  };
  await w.create(apiDefinition('httpbin').build());
  await w.create(apiDefinition('petstore').build());
  await w.tick();
  t.same(writes(), { 'gw-0': 2, 'gw-1': 2, 'gw-2': 2 }, 'each API to each replica');

  // gw-1 restarts with an empty disk: one run refills it alone
  b.restart();
  reset();
  const refill = await w.tick();
  t.match(reported(refill, 'httpbin'), { reason: 'missing on gateway', result: 'synced' });
  t.same(writes(), { 'gw-0': 0, 'gw-1': 2, 'gw-2': 0 });
  t.equal(b.count('GET', '/tyk/reload'), 1, 'reloaded once, on its own');
  t.equal(w.tyk.count('GET', '/tyk/reload') + c.count('GET', '/tyk/reload'), 0, 'the others not reloaded');

  // gw-2 edited behind our back: restored with one write to it
  const id = [...c.files('api').keys()][0] as string;
  c.editFile('api', id, (o) => ({ ...o, active: false }));
  c.reloadNow();
  reset();
  const restored = await w.tick();
  t.ok(
    restored.objects.some((o) => o.reason === 'drifted on gateway' && o.result === 'synced'),
    'the drift found and undone',
  );
  t.same(writes(), { 'gw-0': 0, 'gw-1': 0, 'gw-2': 1 });

  // gw-0 answers 500: the others are served, nothing is deleted anywhere, the report names it
  const down = w.tyk.inject({ method: 'GET', path: /^\/tyk\/apis/, status: 500, times: 1_000 });
  await w.updateSpec('httpbin', (s) => ({ ...s, active: false }));
  reset();
  const served = await w.tick();
  t.match(reported(served, 'httpbin'), { action: 'UPDATE', result: 'synced' });
  t.same(writes(), { 'gw-0': 0, 'gw-1': 1, 'gw-2': 1 });
  t.equal(w.tyk.count('DELETE') + b.count('DELETE') + c.count('DELETE'), 0, 'nothing deleted');
  t.match(served.errors, [{ stage: 'gateway default replica gw-0', message: /500/ }]);
  down.cancel();
  reset();
  await w.tick();
  t.same(writes(), { 'gw-0': 1, 'gw-1': 0, 'gw-2': 0 }, 'readable again: the next run serves it');

  // gw-2 leaves the slice: never written again
  await w.kube.remove('endpointslices.discovery.k8s.io', 'tyk', 'gateway-svc-gw-2');
  await w.updateSpec('petstore', (s) => ({ ...s, active: false }));
  reset();
  const left = await w.tick();
  t.same(left.gateway.replicas, [{ gateway: 'default', replicas: ['gw-0', 'gw-1'], unreadable: [] }]);
  t.same(writes(), { 'gw-0': 1, 'gw-1': 1, 'gw-2': 0 });
});
