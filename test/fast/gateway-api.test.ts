/**
 * Gateway API through whole Runs in process (test/fast/world.ts, MemoryKube): a GatewayClass of
 * ours is accepted and another controller's is never written; an HTTPRoute attached to a
 * Gateway of ours becomes an ApiDefinition in the cluster that reaches the gateway in the same
 * run; the route's parents and the Gateway's listeners say so; a steady state writes nothing;
 * what Tyk cannot serve is not half-served; deletion, release and dry runs.
 */
import t from 'tap';
import type { RunReport } from '../../lib/engine/types.js';
import { certificateId } from '../../lib/gateway/certificates.js';
import { API_DEFINITION } from '../../lib/kinds/api-definition/kind.js';
import { GATEWAY, GATEWAY_CLASS, HTTP_ROUTE, ROUTE_LABEL } from '../../lib/kinds/gateway-api/kinds.js';
import { SECRET, SERVICE } from '../../lib/kube/kinds.js';
import { REFERENCE_GRANT_V1BETA1 } from '../../lib/kube/reference-grants.js';
import type { KubeObject } from '../../lib/kube/types.js';
import { apiDefinition, defaultIdOf, operatorContext, secret } from '../fixtures/builders.js';
import { backend, gateway, gatewayClass, httpRoute, listener, service } from '../fixtures/gateway-api.js';
import { PEM } from '../fixtures/pem.js';
import { MemoryCertificates } from '../memory/certificates.js';
import type { MemoryTykGateway } from '../memory/gateway.js';
import { kubeFailure } from '../memory/kube.js';
import { FastWorld, reported } from './world.js';

type Json = Record<string, unknown>;

/** A cluster with our class `tyk`, a Gateway `gw` with one HTTP listener, and a Service `web`. */
function world(): FastWorld {
  const w = new FastWorld({ settings: { kindSettings: { gatewayApi: { controllerName: 'tyk.io/gateway-reconciler', addresses: ['203.0.113.7'] } } } });
  w.put(gatewayClass('tyk'));
  w.put(gateway('gw', 'tyk', [listener('http', 80)]));
  w.put(service('web', [8080]));
  return w;
}

const simple = () =>
  httpRoute('web')
    .parent('gw')
    .rule({ path: '/app', backends: [backend('web', 8080)] })
    .build();

const generated = (w: FastWorld, name = 'web', namespace = 'default') => w.kube.objects(API_DEFINITION, namespace).filter((o) => o.metadata.labels?.[ROUTE_LABEL] === name);
const routeReport = (r: RunReport, name = 'web') => reported(r, name, 'HTTPRoute');
/** The APIs the Tyk Gateway serves, by listen path. */
function served(w: FastWorld): Map<string, Json> {
  const out = new Map<string, Json>();
  for (const api of (w.gateway as MemoryTykGateway).loaded('api').values()) out.set(String((api.proxy as Json).listen_path), api);
  return out;
}
function conditionsOf(o: KubeObject | undefined): Json[] {
  return (o?.status?.conditions ?? []) as Json[];
}
function condition(list: readonly Json[], type: string): Json | undefined {
  return list.find((c) => c.type === type);
}
/** The conditions of the Gateway gw's first listener. */
function firstListenerConditions(w: FastWorld): Json[] {
  const listeners = (w.get(GATEWAY, 'gw')?.status?.listeners ?? []) as Json[];
  return (listeners[0]?.conditions ?? []) as Json[];
}
function ourParent(route: KubeObject | undefined): Json | undefined {
  return ((route?.status?.parents ?? []) as Json[]).find((p) => p.controllerName === 'tyk.io/gateway-reconciler');
}

t.test('HTTPRouteSimpleSameNamespace: one route, one ApiDefinition, served in the same run; statuses of class, Gateway and route', async (t) => {
  const w = world();
  w.apply(simple());
  const report = await w.run();
  t.match(routeReport(report), { action: 'CREATE', result: 'synced' });
  const [api] = generated(w);
  t.ok(api, 'an ApiDefinition labelled for the route');
  t.match(api?.metadata.ownerReferences, [{ kind: 'HTTPRoute', name: 'web', controller: true }], 'controlled by the route');
  t.same(w.get(HTTP_ROUTE, 'web')?.metadata.finalizers, [HTTP_ROUTE.finalizer], 'our finalizer on the route');
  const app = served(w).get('/app');
  t.match(app, { proxy: { target_url: 'http://web.default.svc:8080', strip_listen_path: false }, use_keyless: true }, 'the gateway serves /app from the Service, the path unchanged');
  t.match(reported(report, api?.metadata.name ?? '', 'ApiDefinition'), { result: 'synced' }, 'sent by the ApiDefinition phase of the same run');

  const parent = ourParent(w.get(HTTP_ROUTE, 'web'));
  t.match(parent, { parentRef: { name: 'gw' } });
  t.match(condition(parent?.conditions as Json[], 'Accepted'), { status: 'True', reason: 'Accepted' });
  t.match(condition(parent?.conditions as Json[], 'ResolvedRefs'), { status: 'True', reason: 'ResolvedRefs' });

  const gw = w.get(GATEWAY, 'gw');
  t.match(condition(conditionsOf(gw), 'Accepted'), { status: 'True' });
  t.match(condition(conditionsOf(gw), 'Programmed'), { status: 'True' });
  t.match(gw?.status?.listeners, [{ name: 'http', attachedRoutes: 1, supportedKinds: [{ kind: 'HTTPRoute' }] }], 'one route attached to the listener');
  t.match(gw?.status?.addresses, [{ type: 'IPAddress', value: '203.0.113.7' }], 'the address from GATEWAY_ADDRESSES');
  t.match(condition(conditionsOf(w.get(GATEWAY_CLASS, 'tyk', '')), 'Accepted'), { status: 'True', reason: 'Accepted' });
});

t.test('HTTPRouteTimeoutRequest: the gateway enforces the timeout on every method and path; a change follows; Host goes upstream as sent', async (t) => {
  const w = world();
  const timed = (request: string) =>
    httpRoute('web')
      .parent('gw')
      .rule({ path: '/app', backends: [backend('web', 8080)], timeouts: { request } })
      .build();
  w.apply(timed('10s'));
  t.match(routeReport(await w.run()), { result: 'synced' });
  const timeouts = () => {
    const version = ((served(w).get('/app')?.version_data as Json | undefined)?.versions as Json | undefined)?.Default as Json | undefined;
    return ((version?.extended_paths as Json | undefined)?.hard_timeouts ?? []) as Json[];
  };
  t.equal(timeouts().length, 9, 'one entry per method');
  t.ok(
    timeouts().every((h) => h.path === '.*' && h.timeout === 10),
    'every path, 10 seconds',
  );
  t.match(served(w).get('/app'), { proxy: { preserve_host_header: true } }, 'the backend sees the client’s Host');
  const before = w.gateway.writes();
  w.apply(timed('3s'));
  await w.run();
  t.ok(
    timeouts().every((h) => h.timeout === 3),
    'the new timeout served',
  );
  t.equal(w.gateway.writes() - before, 1, 'one gateway write for the change');
  w.apply(timed('250ms'));
  const report = await w.run();
  t.match(routeReport(report), { result: 'invalid' });
  t.match(ourParent(w.get(HTTP_ROUTE, 'web'))?.conditions, [{ type: 'Accepted', status: 'False', reason: 'UnsupportedValue', message: /timeouts\.request: 250ms is not whole seconds/ }]);
  t.equal(served(w).get('/app'), undefined, 'a timeout Tyk cannot keep: not served at all');
});

t.test('a GatewayClass of another controller, its Gateways and their routes are never written', async (t) => {
  const w = world();
  w.put(gatewayClass('other', 'example.com/other'));
  w.put(gateway('theirs', 'other', [listener('http', 80)]));
  w.apply(
    httpRoute('elsewhere')
      .parent('theirs')
      .rule({ path: '/x', backends: [backend('web', 8080)] })
      .build(),
  );
  const report = await w.run();
  t.notOk(
    report.objects.some((o) => o.name === 'elsewhere' || o.name === 'theirs' || o.name === 'other'),
    'none of them reported',
  );
  t.same(w.get(GATEWAY_CLASS, 'other', '')?.status, undefined);
  t.same(w.get(GATEWAY, 'theirs')?.status, undefined);
  t.same(w.get(HTTP_ROUTE, 'elsewhere')?.status, undefined);
  t.same(w.get(HTTP_ROUTE, 'elsewhere')?.metadata.finalizers, undefined);
  t.same(generated(w, 'elsewhere'), []);
});

t.test('a steady state: ten runs write nothing to the gateway and patch no status', async (t) => {
  const w = world();
  w.apply(simple());
  await w.run();
  w.resetCounts();
  for (let i = 0; i < 10; i++) await w.run();
  t.equal(w.gateway.writes(), 0, 'no gateway write');
  t.equal(w.kube.count('patchStatus'), 0, 'no status patch');
  t.equal(w.kube.count('createObject') + w.kube.count('replaceObject') + w.kube.count('deleteObject'), 0, 'no ApiDefinition written');
});

t.test('HTTPRouteObservedGenerationBump: a change of the route: the ApiDefinition follows, the old path goes, observedGeneration follows', async (t) => {
  const w = world();
  w.apply(simple());
  await w.run();
  w.updateSpec(HTTP_ROUTE, 'web', (spec) => ({ ...spec, rules: [{ matches: [{ path: { type: 'PathPrefix', value: '/v2' } }], backendRefs: [backend('web', 8080)] }] }));
  const report = await w.run();
  t.match(routeReport(report), { action: 'UPDATE', result: 'synced' });
  t.same([...served(w).keys()], ['/v2'], 'only the new path is served');
  t.equal(generated(w).length, 1);
  t.equal(
    ourParent(w.get(HTTP_ROUTE, 'web'))?.conditions && (condition(ourParent(w.get(HTTP_ROUTE, 'web'))?.conditions as Json[], 'Accepted')?.observedGeneration as number) > 1,
    true,
    'observedGeneration follows the route',
  );
});

t.test('what Tyk cannot serve: nothing of the route is served; its parent says UnsupportedValue, naming the field', async (t) => {
  const w = world();
  w.apply(
    httpRoute('web')
      .parent('gw')
      .rule({ path: '/ok', backends: [backend('web', 8080)] })
      .rule({ matches: [{ path: { type: 'PathPrefix', value: '/h' }, headers: [{ name: 'version', value: 'two' }] }], backends: [backend('web', 8080)] })
      .build(),
  );
  const report = await w.run();
  t.match(routeReport(report), { result: 'invalid', code: 'ROUTE_UNSUPPORTED', error: /spec\.rules\[1\]\.matches\[0\]\.headers/ });
  t.same(generated(w), [], 'not half-served: no ApiDefinition, not even for the rule Tyk could serve');
  t.equal(served(w).size, 0);
  t.match(condition(ourParent(w.get(HTTP_ROUTE, 'web'))?.conditions as Json[], 'Accepted'), { status: 'False', reason: 'UnsupportedValue', message: /headers/ });
  t.ok(
    w.kube.eventsAbout('HTTPRoute', 'web').some((e) => e.type === 'Warning' && e.reason === 'Invalid'),
    'a Warning Event kubectl describe shows',
  );
});

t.test('HTTPRouteInvalidNonExistentBackendRef: ResolvedRefs False BackendNotFound; the route waits; the Service appearing serves it', async (t) => {
  const w = world();
  w.apply(
    httpRoute('web')
      .parent('gw')
      .rule({ path: '/app', backends: [backend('missing', 8080)] })
      .build(),
  );
  const first = await w.run();
  t.match(routeReport(first), { result: 'waiting', code: 'ROUTE_BACKEND' });
  t.match(condition(ourParent(w.get(HTTP_ROUTE, 'web'))?.conditions as Json[], 'ResolvedRefs'), { status: 'False', reason: 'BackendNotFound' });
  t.match(condition(ourParent(w.get(HTTP_ROUTE, 'web'))?.conditions as Json[], 'Accepted'), { status: 'True' }, 'still accepted');
  t.equal(served(w).size, 0, 'nothing served without a backend');
  t.match(w.get(GATEWAY, 'gw')?.status?.listeners, [{ attachedRoutes: 1 }], 'an attached route with unresolved refs still counts');
  w.put(service('missing', [8080]));
  const second = await w.run();
  t.match(routeReport(second), { result: 'synced' });
  t.ok(served(w).has('/app'));
  t.match(condition(ourParent(w.get(HTTP_ROUTE, 'web'))?.conditions as Json[], 'ResolvedRefs'), { status: 'True' });
});

t.test('HTTPRouteInvalidCrossNamespaceBackendRef and HTTPRouteReferenceGrant: a Service of another namespace needs a grant, and is not read before', async (t) => {
  const w = world();
  w.put(service('shared', [80], 'backends'));
  w.apply(
    httpRoute('web')
      .parent('gw')
      .rule({ path: '/s', backends: [backend('shared', 80, { namespace: 'backends' })] })
      .build(),
  );
  w.resetCounts();
  await w.run();
  t.match(condition(ourParent(w.get(HTTP_ROUTE, 'web'))?.conditions as Json[], 'ResolvedRefs'), { status: 'False', reason: 'RefNotPermitted' });
  t.equal(w.kube.count('get', SERVICE.kind), 0, 'the Service was not read');
  t.equal(served(w).size, 0);
  w.put({
    apiVersion: 'gateway.networking.k8s.io/v1beta1',
    kind: 'ReferenceGrant',
    metadata: { name: 'routes', namespace: 'backends' },
    spec: { from: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', namespace: 'default' }], to: [{ group: '', kind: 'Service' }] },
  });
  await w.run();
  t.match(served(w).get('/s'), { proxy: { target_url: 'http://shared.backends.svc:80' } });
  t.match(condition(ourParent(w.get(HTTP_ROUTE, 'web'))?.conditions as Json[], 'ResolvedRefs'), { status: 'True' });
});

t.test('deleting the route removes what it made, from the cluster and the gateway, then our finalizer', async (t) => {
  const w = world();
  w.apply(simple());
  await w.run();
  w.delete(HTTP_ROUTE, 'web');
  const report = await w.run();
  t.match(routeReport(report), { action: 'DELETE', result: 'deleted' });
  t.equal(w.get(HTTP_ROUTE, 'web'), undefined, 'gone once our finalizer went');
  t.equal(served(w).size, 0, 'the gateway no longer serves it');
  t.match(w.get(GATEWAY, 'gw')?.status?.listeners, [{ attachedRoutes: 0 }]);
});

t.test('a route moved to another controller’s Gateway is released: what it made goes, our parent entry goes, theirs is left', async (t) => {
  const w = world();
  w.apply(simple());
  await w.run();
  w.put(gatewayClass('other', 'example.com/other'));
  w.put(gateway('theirs', 'other', [listener('http', 80)]));
  const current = w.get(HTTP_ROUTE, 'web') as KubeObject;
  const theirParent = { parentRef: { name: 'theirs' }, controllerName: 'example.com/other', conditions: [] };
  w.put({ ...current, spec: { ...current.spec, parentRefs: [{ name: 'theirs' }] }, status: { parents: [...((current.status?.parents ?? []) as Json[]), theirParent] } });
  const report = await w.run();
  t.match(routeReport(report), { action: 'DELETE', reason: 'parent changed', result: 'deleted' });
  t.same(generated(w), []);
  t.equal(served(w).size, 0);
  t.same(w.get(HTTP_ROUTE, 'web')?.status?.parents, [theirParent], 'only the other controller’s entry is left');
  t.same(w.get(HTTP_ROUTE, 'web')?.metadata.finalizers ?? [], [], 'our finalizer removed');
});

t.test('a dry run plans and writes nothing', async (t) => {
  const w = world();
  w.apply(simple());
  const dry = await w.run({ dryRun: true });
  t.match(routeReport(dry), { action: 'CREATE', result: 'planned' });
  t.same(generated(w), []);
  t.equal(w.kube.count('patchStatus'), 0, 'no status patched');
  t.same(w.get(HTTP_ROUTE, 'web')?.metadata.finalizers, undefined);
  t.equal(w.gateway.writes(), 0);
});

t.test('a cluster without Gateway API: a full run asks for GatewayClasses once, reports nothing of it, and carries on', async (t) => {
  const w = new FastWorld();
  w.kube.unserved = [GATEWAY_CLASS, GATEWAY, HTTP_ROUTE];
  const report = await w.run();
  t.same(report.errors, [], 'no run error');
  t.same(
    report.objects.filter((o) => ['HTTPRoute', 'Gateway', 'GatewayClass'].includes(o.kind)),
    [],
  );
  t.equal(w.kube.count('list', 'GatewayClass'), 1, 'one LIST of GatewayClasses');
  t.equal(w.kube.count('list', 'Gateway') + w.kube.count('list', 'HTTPRoute'), 0, 'no Gateway or HTTPRoute listed without a class of ours');
});

t.test('our GatewayClass deleted: the routes we served are released, found through their records', async (t) => {
  const w = world();
  w.apply(simple());
  await w.run();
  t.equal(generated(w).length, 1);
  w.remove(GATEWAY_CLASS, 'tyk', '');
  w.resetCounts();
  const report = await w.run();
  t.match(routeReport(report), { action: 'DELETE', reason: 'parent changed', result: 'deleted' });
  t.same(generated(w), [], 'what it made is gone');
  t.equal(served(w).size, 0);
  t.equal(w.kube.count('list', 'HTTPRoute'), 0, 'routes were not listed: the record named this one');
  t.equal(ourParent(w.get(HTTP_ROUTE, 'web')), undefined, 'our parent entry is gone');
});

t.test('GatewayObservedGenerationBump and GatewayClassObservedGenerationBump: a new generation is observed, a steady one patches nothing', async (t) => {
  const w = world();
  await w.run();
  const generationOf = (conditions: readonly Json[]) => conditions.map((c) => c.observedGeneration);
  const gw = w.get(GATEWAY, 'gw') as KubeObject;
  const before = gw.metadata.generation as number;
  t.same(generationOf(conditionsOf(gw)), [before, before], 'the Gateway conditions observe its generation');
  w.apply({ ...gw, spec: { ...gw.spec, listeners: [listener('http', 80), listener('other', 8080)] } });
  await w.run();
  const bumped = w.get(GATEWAY, 'gw') as KubeObject;
  t.ok((bumped.metadata.generation as number) > before, 'a new generation');
  t.same(generationOf(conditionsOf(bumped)), [bumped.metadata.generation, bumped.metadata.generation], 'observed');
  t.match(bumped.status?.listeners, [{ name: 'http' }, { name: 'other', attachedRoutes: 0 }], 'the new listener listed');

  const gc = w.get(GATEWAY_CLASS, 'tyk', '') as KubeObject;
  w.apply({ ...gc, spec: { ...gc.spec, description: 'the Tyk gateway' } });
  await w.run();
  const classNow = w.get(GATEWAY_CLASS, 'tyk', '') as KubeObject;
  t.ok((classNow.metadata.generation as number) > (gc.metadata.generation as number));
  t.equal(condition(conditionsOf(classNow), 'Accepted')?.observedGeneration, classNow.metadata.generation, 'the class observes its new generation');
  w.resetCounts();
  await w.run();
  t.equal(w.kube.count('patchStatus'), 0, 'then nothing more');
});

t.test('the pause annotation holds a route: reported as paused, nothing written; unpaused, it is served', async (t) => {
  const w = world();
  const route = simple();
  w.apply({ ...route, metadata: { ...route.metadata, annotations: { 'tyk.tyk.io/reconcile-paused': 'true' } } });
  const paused = await w.run();
  t.match(routeReport(paused), { action: 'CREATE', result: 'paused', error: /paused by the annotation tyk\.tyk\.io\/reconcile-paused; held: CREATE/ });
  t.same(generated(w), []);
  t.same(w.get(HTTP_ROUTE, 'web')?.metadata.finalizers, undefined);
  t.equal(w.get(HTTP_ROUTE, 'web')?.status, undefined, 'no status patched');
  t.ok(w.kube.eventsAbout('HTTPRoute', 'web').some((e) => e.reason === 'ReconcilePaused'));
  w.apply(simple());
  t.match(routeReport(await w.run()), { action: 'CREATE', result: 'synced' });
  t.ok(served(w).has('/app'));
});

t.test('a Gateway stands for the OperatorContext its infrastructure.parametersRef names; a class can name one for all its Gateways', async (t) => {
  const w = world();
  const other = w.addGateway('http://gw2:8080', { secret: 's2' }) as MemoryTykGateway;
  w.apply(operatorContext('staging').ce('http://gw2:8080', 's2').build());
  const gw = w.get(GATEWAY, 'gw') as KubeObject;
  w.apply({ ...gw, spec: { ...gw.spec, infrastructure: { parametersRef: { group: 'tyk.tyk.io', kind: 'OperatorContext', name: 'staging' } } } });
  w.apply(simple());
  const report = await w.run();
  t.match(routeReport(report), { result: 'synced' });
  const [api] = generated(w);
  t.match(api?.spec?.contextRef, { name: 'staging', namespace: 'default' }, 'its ApiDefinition names the context');
  t.match(reported(report, api?.metadata.name ?? '', 'ApiDefinition'), { result: 'synced', gateway: 'context:default/staging' });
  t.equal(served(w).size, 0, 'nothing on the default gateway');
  t.ok(
    [...other.loaded('api').values()].some((a) => (a.proxy as Json).listen_path === '/app'),
    'served by the context’s gateway',
  );

  // the parametersRef taken away: back to the default gateway (a new ApiDefinition, the old one deleted from the other gateway)
  w.apply({ ...gw, spec: { ...gw.spec } });
  await w.run();
  t.ok(served(w).has('/app'), 'on the default gateway again');
  t.notOk(
    [...other.loaded('api').values()].some((a) => (a.proxy as Json).listen_path === '/app'),
    'gone from the context’s gateway',
  );
});

t.test('parameters that are not an existing OperatorContext: the class or Gateway is not accepted (InvalidParameters), its routes are Pending and not served', async (t) => {
  const w = world();
  const gw = w.get(GATEWAY, 'gw') as KubeObject;
  w.apply({ ...gw, spec: { ...gw.spec, infrastructure: { parametersRef: { group: 'tyk.tyk.io', kind: 'OperatorContext', name: 'missing' } } } });
  w.apply(simple());
  const report = await w.run();
  t.match(condition(conditionsOf(w.get(GATEWAY, 'gw')), 'Accepted'), { status: 'False', reason: 'InvalidParameters', message: /OperatorContext default\/missing does not exist/ });
  t.match(condition(conditionsOf(w.get(GATEWAY, 'gw')), 'Programmed'), { status: 'False' });
  t.match(condition(ourParent(w.get(HTTP_ROUTE, 'web'))?.conditions as Json[], 'Accepted'), { status: 'False', reason: 'Pending', message: /is not accepted/ });
  t.same(generated(w), []);
  t.equal(served(w).size, 0);
  t.equal(report.errors.length, 0);

  const gc = w.get(GATEWAY_CLASS, 'tyk', '') as KubeObject;
  w.apply({ ...gc, spec: { ...gc.spec, parametersRef: { group: '', kind: 'ConfigMap', name: 'params', namespace: 'default' } } });
  w.apply({ ...gw, spec: { ...gw.spec } });
  await w.run();
  t.match(condition(conditionsOf(w.get(GATEWAY_CLASS, 'tyk', '')), 'Accepted'), { status: 'False', reason: 'InvalidParameters', message: /only an OperatorContext of tyk\.tyk\.io/ });
  t.match(condition(conditionsOf(w.get(GATEWAY, 'gw')), 'Accepted'), { status: 'False', reason: 'InvalidParameters', message: /its GatewayClass's spec\.parametersRef/ });
  t.equal(served(w).size, 0);
});

t.test('an HTTPS listener: its TLS Secret served as the routes’ certificate; a missing one is InvalidCertificateRef and serves nothing', async (t) => {
  const w = world();
  const gw = w.get(GATEWAY, 'gw') as KubeObject;
  w.apply({ ...gw, spec: { ...gw.spec, listeners: [listener('https', 443, 'HTTPS', { hostname: 'secure.example.com', certificateRefs: [{ group: '', kind: 'Secret', name: 'tls' }] })] } });
  w.apply(simple());
  await w.run();
  t.match(w.get(GATEWAY, 'gw')?.status?.listeners, [{ name: 'https', attachedRoutes: 1 }]);
  t.match(condition(firstListenerConditions(w), 'ResolvedRefs'), { status: 'False', reason: 'InvalidCertificateRef' });
  t.same(generated(w), [], 'no certificate: nothing served on the listener');
  t.match(condition(ourParent(w.get(HTTP_ROUTE, 'web'))?.conditions as Json[], 'Accepted'), { status: 'True' }, 'the route is attached all the same');

  w.put(secret('tls').tls(PEM.server, PEM.serverKey).build());
  await w.run();
  t.match(condition(firstListenerConditions(w), 'ResolvedRefs'), { status: 'True' });
  const [api] = generated(w);
  t.match(api?.spec, { protocol: 'https', certificate_secret_names: ['tls'], domain: 'secure.example.com' }, 'served over TLS with the listener’s certificate, as an ApiDefinition naming it');
});

/**
 * The usual shape: a Gateway `edge` in `infra` with an HTTPS listener for every namespace and its
 * certificate Secret `tls` beside it; the route `web` and its Service in `default`.
 */
function edgeWorld(certificateRefs: readonly Json[] = [{ group: '', kind: 'Secret', name: 'tls' }]): { w: FastWorld; certs: MemoryCertificates } {
  const certs = new MemoryCertificates();
  const w = new FastWorld({ certificates: certs, settings: { kindSettings: { gatewayApi: { controllerName: 'tyk.io/gateway-reconciler', addresses: [] } } } });
  w.put(gatewayClass('tyk'));
  w.put(gateway('edge', 'tyk', [listener('https', 443, 'HTTPS', { hostname: 'secure.example.com', from: 'All', certificateRefs })], 'infra'));
  w.put(secret('tls').inNamespace('infra').tls(PEM.server, PEM.serverKey).build());
  w.put(service('web', [8080]));
  w.apply(
    httpRoute('web')
      .parent('edge', { namespace: 'infra' })
      .rule({ path: '/app', backends: [backend('web', 8080)] })
      .build(),
  );
  return { w, certs };
}

t.test('an HTTPS listener serves the routes of other namespaces with its certificate; the key stays out of their namespace', async (t) => {
  const { w, certs } = edgeWorld();
  const report = await w.run();
  t.match(routeReport(report), { result: 'synced' });
  const [api] = generated(w);
  t.match(api?.spec, { protocol: 'https', domain: 'secure.example.com', certificate_secret_names: ['infra/tls'] }, 'the route’s ApiDefinition names the listener’s Secret with its namespace');
  t.match(reported(report, api?.metadata.name ?? '', 'ApiDefinition'), { result: 'synced' });
  const id = certificateId(PEM.server);
  t.same([...certs.certs.keys()], [id], 'the certificate uploaded to the gateway’s store');
  t.match(served(w).get('/app'), { protocol: 'https', certificates: [id] }, 'the gateway serves the route over TLS with it');
  t.same(w.kube.objects(SECRET, 'default'), [], 'no Secret copied into the route’s namespace');
  const next = await w.run();
  t.equal(next.gateway.writes, 0, 'a steady state writes nothing');
  t.equal(certs.uploads, 1, 'uploaded once');
});

t.test('a listener certificate granted from a third namespace serves routes of any namespace; the grant withdrawn, the listener and the routes lose it', async (t) => {
  const { w, certs } = edgeWorld([{ group: '', kind: 'Secret', name: 'wildcard', namespace: 'certs' }]);
  w.put(secret('wildcard').inNamespace('certs').tls(PEM.server, PEM.serverKey).build());
  const grant: KubeObject = {
    apiVersion: 'gateway.networking.k8s.io/v1beta1',
    kind: 'ReferenceGrant',
    metadata: { name: 'edge-certs', namespace: 'certs' },
    spec: { from: [{ group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: 'infra' }], to: [{ group: '', kind: 'Secret', name: 'wildcard' }] },
  };
  w.put(grant);
  await w.run();
  t.match(generated(w)[0]?.spec, { certificate_secret_names: ['certs/wildcard'] });
  t.match(served(w).get('/app'), { protocol: 'https', certificates: [certificateId(PEM.server)] });
  t.equal(certs.uploads, 1);
  w.remove(REFERENCE_GRANT_V1BETA1, 'edge-certs', 'certs');
  await w.run();
  const https = ((w.get(GATEWAY, 'edge', 'infra')?.status?.listeners ?? []) as Json[])[0];
  t.match(condition((https?.conditions ?? []) as Json[], 'ResolvedRefs'), { status: 'False', reason: 'RefNotPermitted' }, 'the listener says the grant is gone');
  t.same(generated(w), [], 'the route is no longer served on it');
  t.equal(served(w).get('/app'), undefined);
});

t.test('a Secret of another namespace named by an ApiDefinition no route made, in another field, or not its listener’s, is RefNotPermitted; nothing of it is read or uploaded', async (t) => {
  const { w, certs } = edgeWorld();
  await w.run();
  const uploads = certs.uploads;
  w.put(secret('other').inNamespace('infra').tls(PEM.client, PEM.clientKey).build());
  w.apply(
    apiDefinition('sneaky')
      .patchSpec({ certificate_secret_names: ['infra/tls'] })
      .build(),
  );
  w.apply(
    apiDefinition('client')
      .patchSpec({ client_certificate_refs: ['infra/tls'] })
      .build(),
  );
  // the route's own ApiDefinition, edited by hand to name a Secret its listener does not hold
  const [mine] = generated(w);
  if (!mine) throw new Error('no generated ApiDefinition');
  w.apply({ ...mine, spec: { ...mine.spec, certificate_secret_names: ['infra/other'] } });
  w.resetCounts();
  const sneaky = await w.runFor(API_DEFINITION, 'sneaky');
  t.match(reported(sneaky, 'sneaky'), {
    result: 'failed',
    code: 'REF_NOT_PERMITTED',
    error: /certificate_secret_names: Secret infra\/tls is in another namespace; only the ApiDefinitions an HTTPRoute makes may name one/,
  });
  const client = await w.runFor(API_DEFINITION, 'client');
  t.match(reported(client, 'client'), { result: 'failed', code: 'REF_NOT_PERMITTED', error: /client_certificate_refs: Secret infra\/tls is in another namespace/ });
  t.equal(w.kube.count('get', SECRET.kind), 0, 'no Secret was read for them');
  const edited = await w.runFor(API_DEFINITION, mine.metadata.name);
  t.match(reported(edited, mine.metadata.name), {
    result: 'failed',
    code: 'REF_NOT_PERMITTED',
    error: /Secret infra\/other is in another namespace and is not the certificate of an HTTPS listener HTTPRoute default\/web is attached to/,
  });
  t.equal(w.kube.count('get', SECRET.kind), 1, 'only the listener’s own Secret, read to evaluate the Gateway');
  t.equal(certs.uploads, uploads, 'nothing uploaded');
  t.equal(await w.gateway.get('api', defaultIdOf('sneaky')), null, 'nothing sent');
  // the next run of the route undoes the edit, and the listener’s certificate is served again
  await w.run();
  t.match(generated(w)[0]?.spec, { certificate_secret_names: ['infra/tls'] });
});

t.test('the Gateway API side unreadable: the route’s ApiDefinition is not decided, and what the gateway serves stays', async (t) => {
  const { w } = edgeWorld();
  await w.run();
  const [mine] = generated(w);
  if (!mine) throw new Error('no generated ApiDefinition');
  w.kube.inject({ op: 'list', kind: 'GatewayClass', times: Infinity, error: () => kubeFailure({ status: 500 }, 'list gatewayclasses') });
  const report = await w.runFor(API_DEFINITION, mine.metadata.name);
  t.match(reported(report, mine.metadata.name), { action: 'NOOP', reason: 'read failed', code: 'KUBE_API_ERROR' }, 'a read that failed, not a refusal');
  t.match(served(w).get('/app'), { protocol: 'https' }, 'still served');
});

t.test('a foreign Secret named by an ApiDefinition claiming a route of another uid, or a route that does not exist: refused', async (t) => {
  const { w } = edgeWorld();
  await w.run();
  const [mine] = generated(w);
  if (!mine) throw new Error('no generated ApiDefinition');
  const forged: KubeObject = {
    ...mine,
    metadata: {
      name: 'forged',
      namespace: 'default',
      labels: { [ROUTE_LABEL]: 'web' },
      ownerReferences: [{ apiVersion: 'gateway.networking.k8s.io/v1', kind: 'HTTPRoute', name: 'web', uid: 'not-the-route', controller: true }],
    },
  };
  w.apply(forged);
  const report = await w.runFor(API_DEFINITION, 'forged');
  t.match(reported(report, 'forged'), { result: 'failed', code: 'REF_NOT_PERMITTED', error: /not controlled by HTTPRoute default\/web/ });
  const orphan: KubeObject = { ...forged, metadata: { ...forged.metadata, name: 'orphan', labels: { [ROUTE_LABEL]: 'gone' }, ownerReferences: [] } };
  w.apply(orphan);
  t.match(reported(await w.runFor(API_DEFINITION, 'orphan'), 'orphan'), { result: 'failed', code: 'REF_NOT_PERMITTED', error: /HTTPRoute default\/gone does not exist/ });
});

t.test('GatewayClasses our RBAC may not list: Gateway API is not served, said in the log, and the run goes on without an error', async (t) => {
  const w = world();
  w.apply(simple());
  w.kube.inject({ op: 'list', kind: 'GatewayClass', times: Infinity, error: () => kubeFailure({ status: 403 }, 'list gatewayclasses') });
  const report = await w.run();
  t.same(report.errors, []);
  t.same(generated(w), []);
  t.ok(w.log.entries.some((e) => /GatewayClasses may not be listed/.test(String(e.msg))));
});
