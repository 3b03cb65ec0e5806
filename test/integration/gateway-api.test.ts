/**
 * Gateway API end to end, through HTTP, with real Redis, our real clients and the loopback Tyk
 * gateway fake, against the fake API server serving the tests' Gateway API CRDs (or, in the real
 * tier, a real kube-apiserver with the fixtures' CRDs or upstream's standard channel): each test
 * is named after the Gateway API conformance test it follows where one applies.
 *
 * - An HTTPRoute attached to a Gateway of our GatewayClass becomes an ApiDefinition in the
 *   cluster, labelled for it, that the same run sends to the gateway (its listen path served,
 *   the Service's URL the target); the route's parent entry, the Gateway (listeners, attached
 *   routes) and the GatewayClass say so in statuses the API server's schema accepts.
 * - A steady state writes nothing: no gateway write, no POST, PUT or PATCH to the API server.
 * - A changed route: observedGeneration follows in its parent conditions, the new path is
 *   served and the old one not.
 * - A backend Service of another namespace is refused (RefNotPermitted) until a ReferenceGrant
 *   there permits it.
 * - The route deleted: what it made goes from the cluster and the gateway, then the route.
 * - An audit event about the route runs it (and not another route).
 * - A PathPrefix that upstream's CEL rules refuse (not absolute, or with `//`) reaches the
 *   reconciler on a server that does not run them (kube-apiserver 1.20): it is not served, its
 *   parent says Accepted=False UnsupportedValue naming the field, as for what Tyk cannot serve.
 *
 * No fault is injected: the file is one of the real tier's suites (scripts/test-real.ts).
 */
import t, { type Test } from 'tap';
import type { RunReport } from '../../lib/engine/run.js';
import type { KubeObject } from '../../lib/kube/types.js';
import { DEFAULT_CRD_DIR } from '../fakes/crd-schema.js';
import { GATEWAY_API_CRDS, REFERENCE_GRANT_CRD } from '../fakes/kube-apiserver.js';
import { auditEventList } from '../fixtures/audit.js';
import { secret } from '../fixtures/builders.js';
import { backend, gateway, gatewayClass, httpRoute, listener, service } from '../fixtures/gateway-api.js';
import { certId, PEM } from '../fixtures/pem.js';
import { reported, type World, worldFor } from '../harness/world.js';

type Json = Record<string, unknown>;
const CONTROLLER = 'tyk.io/gateway-reconciler';
const ROUTE_LABEL = 'tyk.io/httproute';
const ADDRESS = '203.0.113.7';

/** A World serving Gateway API with our class `tyk`, a Gateway `gw` (one HTTP listener) and a Service `web` (port 8080). */
async function setUp(t: Test): Promise<World> {
  const w = await worldFor(t, {
    kube: { crds: [DEFAULT_CRD_DIR, REFERENCE_GRANT_CRD, GATEWAY_API_CRDS], emptyStringIsNull: false },
    env: { GATEWAY_ADDRESSES: ADDRESS },
  });
  await w.kube.put(gatewayClass('tyk'));
  await w.kube.put(gateway('gw', 'tyk', [listener('http', 80)]));
  await w.kube.put(service('web', [8080]));
  return w;
}

const simple = (path = '/app') =>
  httpRoute('web')
    .parent('gw')
    .rule({ path, backends: [backend('web', 8080)] })
    .build();

/** The ApiDefinitions labelled for a route. */
async function generated(w: World, route = 'web', namespace = 'default'): Promise<KubeObject[]> {
  return (await w.kube.listObjects('apidefinitions', namespace)).filter((o) => o.metadata.labels?.[ROUTE_LABEL] === route);
}

/** The APIs the Tyk gateway fake serves, by listen path. */
function served(w: World): Map<string, Json> {
  const out = new Map<string, Json>();
  for (const api of w.tyk.loaded('api').values()) out.set(String(((api as Json).proxy as Json).listen_path), api as Json);
  return out;
}

function condition(list: unknown, type: string): Json | undefined {
  return ((list ?? []) as Json[]).find((c) => c.type === type);
}

/** The route's `status.parents` entry written by us. */
async function ourParent(w: World, name = 'web', namespace = 'default'): Promise<Json | undefined> {
  const route = await w.get(name, namespace, 'httproutes');
  return ((route?.status?.parents ?? []) as Json[]).find((p) => p.controllerName === CONTROLLER);
}

const routeReport = (r: RunReport, name = 'web') => reported(r, name, 'HTTPRoute');

/** The calls the API server refused (the service's; on the fake the test side's too): a 404 is an answer, not a refusal. */
function refused(w: World): string[] {
  return w.kube.calls.filter((c) => c.status >= 400 && c.status !== 404).map((c) => `${c.method} ${c.path} ${c.status}`);
}

/** Writes to the API server since the last reset (the service's; the test side's go around the count on a real server). */
function apiServerWrites(w: World): number {
  return w.kube.count('POST') + w.kube.count('PUT') + w.kube.count('PATCH');
}

t.test('HTTPRouteSimpleSameNamespace: an ApiDefinition in the cluster, served by the gateway in the same run; route, Gateway and class statuses accepted by the schema', async (t) => {
  const w = await setUp(t);
  await w.create(simple());
  const report = await w.tick();
  t.same(report.errors, [], 'no run-level error');
  t.match(routeReport(report), { action: 'CREATE', result: 'synced' });

  const route = await w.get('web', 'default', 'httproutes');
  const made = await generated(w);
  t.equal(made.length, 1, 'one ApiDefinition labelled for the route');
  const [api] = made;
  t.match(api?.metadata.ownerReferences, [{ apiVersion: 'gateway.networking.k8s.io/v1', kind: 'HTTPRoute', name: 'web', uid: route?.metadata.uid, controller: true }], 'controlled by the route');
  t.match(reported(report, api?.metadata.name ?? '', 'ApiDefinition'), { result: 'synced' }, 'sent by the same run');
  t.same([...served(w).keys()], ['/app'], 'the gateway serves the route’s path, and nothing else');
  t.match(served(w).get('/app'), { proxy: { listen_path: '/app', target_url: 'http://web.default.svc:8080' } }, 'to the Service');

  const generation = route?.metadata.generation;
  t.ok(typeof generation === 'number' && generation >= 1, 'the route has a generation');
  const parent = await ourParent(w);
  t.match(parent, { parentRef: { name: 'gw' }, controllerName: CONTROLLER }, 'our parent entry, naming the Gateway');
  t.match(condition(parent?.conditions, 'Accepted'), { status: 'True', reason: 'Accepted', observedGeneration: generation });
  t.match(condition(parent?.conditions, 'ResolvedRefs'), { status: 'True', reason: 'ResolvedRefs', observedGeneration: generation });

  const gw = await w.get('gw', 'default', 'gateways');
  t.match(condition(gw?.status?.conditions, 'Accepted'), { status: 'True', observedGeneration: gw?.metadata.generation });
  t.match(condition(gw?.status?.conditions, 'Programmed'), { status: 'True', observedGeneration: gw?.metadata.generation });
  t.match(gw?.status?.listeners, [{ name: 'http', attachedRoutes: 1, supportedKinds: [{ kind: 'HTTPRoute' }] }], 'one route attached to the listener');
  t.match(condition((gw?.status?.listeners as Json[] | undefined)?.[0]?.conditions, 'Programmed'), { status: 'True' }, 'the listener programmed');
  t.match(gw?.status?.addresses, [{ type: 'IPAddress', value: ADDRESS }], 'the address from GATEWAY_ADDRESSES');

  const gc = await w.kube.getObject('gatewayclasses', undefined, 'tyk');
  t.match(condition(gc?.status?.conditions, 'Accepted'), { status: 'True', reason: 'Accepted', observedGeneration: gc?.metadata.generation });
  // a real server serves the GatewayClass CRD (its bundle-version annotation, read with the RBAC we deploy); the fake serves no CRDs
  t.match(
    condition(gc?.status?.conditions, 'SupportedVersion'),
    w.kube.kind === 'real' ? { status: 'True', reason: 'SupportedVersion', message: /v1\.\d+\.\d+/ } : { status: 'Unknown', reason: 'Pending' },
    'SupportedVersion from the installed CRD’s bundle version',
  );
  t.same(refused(w), [], 'no call of the service refused (RBAC, schema)');
});

t.test('a steady state: three more runs write nothing to the gateway and nothing to the API server', async (t) => {
  const w = await setUp(t);
  await w.create(simple());
  await w.tick();
  const statusBefore = (await w.get('web', 'default', 'httproutes'))?.status;
  w.resetCounts();
  for (let i = 0; i < 3; i++) {
    const report = await w.tick();
    t.same(report.errors, [], `run ${i + 1}: no run-level error`);
  }
  t.equal(w.tyk.writes(), 0, 'no gateway write');
  t.equal(apiServerWrites(w), 0, 'no POST, PUT or PATCH to the API server');
  t.same(refused(w), [], 'no call refused');
  t.equal(w.statusPatches(), 0, 'no status patch');
  t.same((await w.get('web', 'default', 'httproutes'))?.status, statusBefore, 'the route’s status as it was');
  t.ok(served(w).has('/app'), 'still served');
});

t.test('HTTPRouteObservedGenerationBump: a changed path bumps observedGeneration in the parent conditions; the new path served, the old one not', async (t) => {
  const w = await setUp(t);
  await w.create(simple());
  await w.tick();
  const before = await w.get('web', 'default', 'httproutes');
  const changed = await w.updateSpec(
    'web',
    (spec) => ({ ...spec, rules: [{ matches: [{ path: { type: 'PathPrefix', value: '/v2' } }], backendRefs: [backend('web', 8080)] }] }),
    'default',
    'httproutes',
  );
  t.ok((changed.metadata.generation ?? 0) > (before?.metadata.generation ?? 0), 'the change bumped the route’s generation');
  const report = await w.tick();
  t.match(routeReport(report), { action: 'UPDATE', result: 'synced' });
  const parent = await ourParent(w);
  for (const type of ['Accepted', 'ResolvedRefs'])
    t.match(condition(parent?.conditions, type), { status: 'True', observedGeneration: changed.metadata.generation }, `${type} observed the new generation`);
  t.same([...served(w).keys()], ['/v2'], 'the new path served, the old one not');
  t.equal((await generated(w)).length, 1, 'still one ApiDefinition');
});

t.test('HTTPRouteInvalidCrossNamespaceBackendRef and HTTPRouteReferenceGrant: another namespace’s Service is RefNotPermitted until a ReferenceGrant there permits it', async (t) => {
  const w = await setUp(t);
  await w.kube.put({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'backends' } });
  await w.kube.put(service('shared', [80], 'backends'));
  await w.create(
    httpRoute('web')
      .parent('gw')
      .rule({ path: '/s', backends: [backend('shared', 80, { namespace: 'backends' })] })
      .build(),
  );
  const refused = await w.tick();
  t.match(routeReport(refused), { result: 'waiting', code: 'ROUTE_BACKEND' });
  const parent = await ourParent(w);
  t.match(condition(parent?.conditions, 'ResolvedRefs'), { status: 'False', reason: 'RefNotPermitted' });
  t.match(condition(parent?.conditions, 'Accepted'), { status: 'True' }, 'still accepted');
  t.equal(served(w).size, 0, 'nothing served');
  t.same(await generated(w), [], 'no ApiDefinition');

  await w.create({
    apiVersion: 'gateway.networking.k8s.io/v1beta1',
    kind: 'ReferenceGrant',
    metadata: { name: 'routes', namespace: 'backends' },
    spec: { from: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', namespace: 'default' }], to: [{ group: '', kind: 'Service' }] },
  });
  const granted = await w.tick();
  t.match(routeReport(granted), { result: 'synced' });
  t.match(served(w).get('/s'), { proxy: { target_url: 'http://shared.backends.svc:80' } }, 'served from the other namespace’s Service');
  t.match(condition((await ourParent(w))?.conditions, 'ResolvedRefs'), { status: 'True', reason: 'ResolvedRefs' });
});

t.test('the route deleted: its ApiDefinition goes from the cluster and the gateway, then the route itself', async (t) => {
  const w = await setUp(t);
  await w.create(simple());
  await w.tick();
  t.equal((await generated(w)).length, 1);
  await w.delete('web', 'default', 'httproutes');
  t.ok((await w.get('web', 'default', 'httproutes'))?.metadata.deletionTimestamp, 'our finalizer holds it while it is torn down');
  const report = await w.tick();
  t.match(routeReport(report), { action: 'DELETE', result: 'deleted' });
  t.same(await generated(w), [], 'no ApiDefinition left in the cluster');
  t.equal(served(w).size, 0, 'nothing served');
  t.equal(await w.get('web', 'default', 'httproutes'), undefined, 'the route is gone: our finalizer went');
  t.match((await w.get('gw', 'default', 'gateways'))?.status?.listeners, [{ name: 'http', attachedRoutes: 0 }], 'the listener counts no route');
});

t.test('an audit event about the HTTPRoute runs that route, not another', async (t) => {
  const w = await setUp(t);
  await w.create(simple());
  await w.create(
    httpRoute('other')
      .parent('gw')
      .rule({ path: '/other', backends: [backend('web', 8080)] })
      .build(),
  );
  await w.tick();
  t.same([...served(w).keys()].sort(), ['/app', '/other']);
  await w.updateSpec('web', (spec) => ({ ...spec, rules: [{ matches: [{ path: { type: 'PathPrefix', value: '/v2' } }], backendRefs: [backend('web', 8080)] }] }), 'default', 'httproutes');
  await w.updateSpec('other', (spec) => ({ ...spec, rules: [{ matches: [{ path: { type: 'PathPrefix', value: '/other2' } }], backendRefs: [backend('web', 8080)] }] }), 'default', 'httproutes');
  const res = await w.audit(auditEventList({ resource: 'httproutes', apiGroup: 'gateway.networking.k8s.io', version: 'v1', name: 'web' }));
  t.equal(res.statusCode, 200);
  t.ok(res.body.report, 'the event started a run');
  const report = res.body.report as RunReport;
  t.match(routeReport(report), { action: 'UPDATE', result: 'synced' });
  t.notOk(
    report.objects.some((o) => o.kind === 'HTTPRoute' && o.name === 'other'),
    'the other route is not in that run',
  );
  t.same([...served(w).keys()].sort(), ['/other', '/v2'], 'the named route’s new path served; the other route as it was');
});

t.test('a PathPrefix upstream’s CEL rules refuse, on a server that does not run them: UnsupportedValue naming the field, nothing served', async (t) => {
  const w = await setUp(t);
  // upstream: "value must be an absolute path and start with '/'", "must not contain '//'"; 1.20 ignores x-kubernetes-validations
  for (const [name, path] of [
    ['relative', 'app'],
    ['doubled', '/a//b'],
  ] as const)
    await w.create(
      httpRoute(name)
        .parent('gw')
        .rule({ path, backends: [backend('web', 8080)] })
        .build(),
    );
  const report = await w.tick();
  for (const name of ['relative', 'doubled']) {
    t.match(routeReport(report, name), { result: 'invalid', code: 'ROUTE_UNSUPPORTED' }, `${name}: invalid`);
    t.same(await generated(w, name), [], `${name}: no ApiDefinition`);
    t.match(
      condition((await ourParent(w, name))?.conditions, 'Accepted'),
      { status: 'False', reason: 'UnsupportedValue', message: /spec\.rules\[0\]\.matches\[0\]\.path/ },
      `${name}: the parent names the path`,
    );
  }
  t.same([...served(w).keys()], [], 'neither path is served');
});

t.test('HTTPRouteTimeoutRequest: the ApiDefinition with its enforced timeouts is accepted by the schema and served; the Host goes upstream as sent', async (t) => {
  const w = await setUp(t);
  await w.create(
    httpRoute('web')
      .parent('gw')
      .rule({ path: '/slow', backends: [backend('web', 8080)], timeouts: { request: '1m', backendRequest: '20s' } })
      .build(),
  );
  const report = await w.tick();
  t.match(routeReport(report), { result: 'synced' });
  t.same(refused(w), [], 'the API server refused nothing');
  const [api] = await generated(w);
  const stored = (((api?.spec?.version_data as Json | undefined)?.versions as Json | undefined)?.Default as Json | undefined)?.extended_paths as Json | undefined;
  t.equal((stored?.hard_timeouts as Json[] | undefined)?.length, 9, 'stored as written: one enforced timeout per method');
  const version = ((served(w).get('/slow')?.version_data as Json | undefined)?.versions as Json | undefined)?.Default as Json | undefined;
  t.match(version, { use_extended_paths: true, extended_paths: { hard_timeouts: [{ path: '.*', method: 'GET', timeout: 20 }] } }, 'the shorter timeout, on every path');
  t.match(served(w).get('/slow'), { proxy: { preserve_host_header: true } });
});

t.test(
  'an HTTPS listener in the Gateway’s namespace serves a route of another: its ApiDefinition names the Secret with its namespace, the schema keeps it, the certificate is uploaded and served, no Secret copied',
  async (t) => {
    const w = await setUp(t);
    await w.kube.put({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'infra' } });
    await w.kube.put(secret('edge-tls').inNamespace('infra').tls(PEM.server, PEM.serverKey).build());
    await w.kube.put(
      gateway('edge', 'tyk', [listener('https', 443, 'HTTPS', { hostname: 'secure.example.com', from: 'All', certificateRefs: [{ group: '', kind: 'Secret', name: 'edge-tls' }] })], 'infra'),
    );
    await w.create(
      httpRoute('web')
        .parent('edge', { namespace: 'infra' })
        .rule({ path: '/secure', backends: [backend('web', 8080)] })
        .build(),
    );
    const report = await w.tick();
    t.same(report.errors, []);
    t.match(routeReport(report), { result: 'synced' });
    t.same(refused(w), [], 'the API server refused nothing');
    const [api] = await generated(w);
    t.same(api?.spec?.certificate_secret_names, ['infra/edge-tls'], 'stored as written');
    t.match(reported(report, api?.metadata.name ?? '', 'ApiDefinition'), { result: 'synced' });
    const id = certId(PEM.server);
    t.ok(w.tyk.certs().get(id)?.hasPrivate, 'the certificate is in the gateway’s store, with its key');
    t.match(served(w).get('/secure'), { protocol: 'https', domain: 'secure.example.com', certificates: [id] });
    t.same(
      (await w.kube.listObjects('secrets', 'default')).map((s) => s.metadata.name),
      [],
      'no Secret in the route’s namespace',
    );
  },
);
