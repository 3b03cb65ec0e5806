/**
 * The namespaced install (deploy/kubernetes-namespaced) against the code: rendered as
 * `kubectl apply -k` would (test/harness/kustomize.ts), it keeps deploy/kubernetes's objects,
 * manages the namespaces its ConfigMap names with a Role and RoleBinding in each of them, keeps
 * cluster-wide only what no Role can grant, and limits the pod's egress to DNS, the API server,
 * the gateway and Redis.
 *
 * Its RBAC is derived from the code, as test/unit/deploy.test.ts derives the ClusterRole's: a
 * scenario with WATCH_NAMESPACE from the overlay's ConfigMap makes every kind of call (watch and
 * audit webhooks, full and sharded ticks, /resync of a namespace and of one object, /readyz, a
 * restarted process, Ingresses, OperatorContexts and their Secrets, a Tyk OAS API and its
 * ConfigMap, GraphQL federation, the developer portal, deletions), and each call the fake API
 * server recorded must be allowed by the Role of its namespace, or, cluster-scoped, by the
 * ClusterRole; no call may list across namespaces or touch an unwatched one (but the list of
 * the gateway Service's EndpointSlices, TYK_GATEWAY_SERVICE, allowed by the base's Role in the
 * gateway's namespace); and every grant must be used by some call.
 */
import { fileURLToPath } from 'node:url';
import { KubeConfig } from '@kubernetes/client-node';
import t from 'tap';
import type { RunReport } from '../../lib/engine/run.js';
import { discoverReplicas } from '../../lib/gateway/endpoint-slices.js';
import { KubeClient } from '../../lib/kube/client.js';
import type { KubeObject } from '../../lib/kube/types.js';
import { loadConfig } from '../../lib/platform/config.js';
import { scheduledTick } from '../../lib/triggers/schedule.js';
import { DEFAULT_CRD_DIR } from '../fakes/crd-schema.js';
import { GATEWAY_API_CRDS } from '../fakes/kube-apiserver.js';
import { startFakeTykDashboard } from '../fakes/tyk-dashboard.js';
import { apiDefinition, apiDescription, configMap, ingress, oasDocument, portalCatalogue, portalConfig, subGraph, superGraph, tykOasApi } from '../fixtures/builders.js';
import { backend, gateway, gatewayClass, httpRoute, listener, service } from '../fixtures/gateway-api.js';
import { identity, renderKustomization } from '../harness/kustomize.js';
import { arr, at, describeRequest, isObj, type Obj, type PolicyRule, type RbacRequest, rbacRequest, ruleAllows, ruleGrants } from '../harness/manifests.js';
import { startWorld } from '../harness/world.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const OVERLAY = 'deploy/kubernetes-namespaced';
const BASE = renderKustomization(ROOT, 'deploy/kubernetes');
const RENDERED = renderKustomization(ROOT, OVERLAY);

const objects = (kind: string): Obj[] => RENDERED.filter((o) => o.kind === kind);
function one(kind: string, name?: string, from: Obj[] = RENDERED): Obj {
  const found = from.filter((o) => o.kind === kind && (name === undefined || at(o, 'metadata.name') === name));
  if (found.length !== 1) throw new Error(`expected one ${kind}${name ? ` ${name}` : ''}, found ${found.length}`);
  return found[0] as Obj;
}
const strings = (o: unknown): Record<string, string> => Object.fromEntries(Object.entries(isObj(o) ? o : {}).map(([k, v]) => [k, String(v)]));

const CONFIGMAP = one('ConfigMap');
const WATCHED = String(strings(CONFIGMAP.data).WATCH_NAMESPACE ?? '')
  .split(',')
  .map((s) => s.trim())
  .filter((s) => s !== '');
const SA = one('ServiceAccount');
/** The base's Role and RoleBinding letting the reconciler list the gateway Service's EndpointSlices (TYK_GATEWAY_SERVICE). */
const REPLICAS_RBAC = 'gateway-reconciler-replicas';
/** The gateway's namespace: the one TYK_URL's host names (<service>.<namespace>.svc), where that Role is. */
const GATEWAY_NAMESPACE = new URL(String(strings(CONFIGMAP.data).TYK_URL)).hostname.split('.')[1] as string;
/** The Roles of the watched namespaces (not the gateway namespace's). */
const watchedRoles = (): Obj[] => objects('Role').filter((r) => at(r, 'metadata.name') !== REPLICAS_RBAC);

/**
 * Grants of the Roles the code on its own may not exercise here: ReferenceGrants are read in a
 * namespace a reference from another namespace points into (CROSS_NAMESPACE_REFS=grant), and
 * this scenario's references all stay in their namespace.
 */
const MAY_BE_UNUSED = new Set(['gateway.networking.k8s.io referencegrants list']);

t.test('the namespaced overlay: the base install, confined to the namespaces WATCH_NAMESPACE names', async (t) => {
  t.same(WATCHED, ['team-a', 'team-b'], 'WATCH_NAMESPACE names the example namespaces');
  t.doesNotThrow(
    () => loadConfig({ ...strings(CONFIGMAP.data), TYK_AUTH: 'gateway-secret', WEBHOOK_TOKEN: 'w'.repeat(24), RESYNC_TOKEN: 'r'.repeat(24) }),
    'lib/platform/config.ts accepts its ConfigMap',
  );
  t.same(loadConfig({ ...strings(CONFIGMAP.data), TYK_AUTH: 'gateway-secret', WEBHOOK_TOKEN: 'w'.repeat(24), RESYNC_TOKEN: 'r'.repeat(24) }).watchNamespaces, WATCHED);

  // everything of deploy/kubernetes is kept, and only RBAC and the NetworkPolicy are added
  const base = new Set(BASE.map(identity));
  for (const id of base)
    t.ok(
      RENDERED.some((o) => identity(o) === id),
      `kept from deploy/kubernetes: ${id}`,
    );
  t.same([...new Set(RENDERED.filter((o) => !base.has(identity(o))).map((o) => String(o.kind)))].sort(), ['NetworkPolicy', 'Role', 'RoleBinding'], 'added: Roles, RoleBindings and the NetworkPolicy');
  t.same(one('Deployment'), one('Deployment', undefined, BASE), 'the same Deployment');

  // one Role and one RoleBinding per watched namespace, binding the base's ServiceAccount; and
  // the base's Role for the gateway's EndpointSlices (TYK_GATEWAY_SERVICE), in the gateway's namespace
  t.same(
    watchedRoles()
      .map((r) => at(r, 'metadata.namespace'))
      .sort(),
    [...WATCHED].sort(),
    'a Role in each watched namespace, none elsewhere',
  );
  t.same(
    objects('Role')
      .filter((r) => !watchedRoles().includes(r))
      .map((r) => `${String(at(r, 'metadata.namespace'))}/${String(at(r, 'metadata.name'))}`),
    [`${GATEWAY_NAMESPACE}/${REPLICAS_RBAC}`],
    "besides: the base's Role in the gateway's namespace, for its EndpointSlices",
  );
  const [first] = watchedRoles();
  for (const role of watchedRoles()) t.same(role.rules, first?.rules, `${String(at(role, 'metadata.namespace'))}: the same rules in each`);
  for (const ns of WATCHED) {
    const binding = objects('RoleBinding').find((b) => at(b, 'metadata.namespace') === ns);
    const role = objects('Role').find((r) => at(r, 'metadata.namespace') === ns);
    t.match(binding, { roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: at(role, 'metadata.name') } }, `${ns}: the binding grants its Role`);
    t.match(arr(binding?.subjects), [{ kind: 'ServiceAccount', name: at(SA, 'metadata.name'), namespace: at(SA, 'metadata.namespace') }], `${ns}: to the ServiceAccount`);
  }

  // cluster-wide: one ClusterRole with what a Role cannot grant
  const clusterRole = one('ClusterRole');
  t.same(
    clusterRole.rules,
    [
      { apiGroups: ['authentication.k8s.io'], resources: ['selfsubjectreviews'], verbs: ['create'] },
      { apiGroups: ['gateway.networking.k8s.io'], resources: ['gatewayclasses'], verbs: ['list'] },
      { apiGroups: ['gateway.networking.k8s.io'], resources: ['gatewayclasses/status'], verbs: ['patch'] },
      { apiGroups: [''], resources: ['namespaces'], verbs: ['list'] },
      { apiGroups: ['apiextensions.k8s.io'], resources: ['customresourcedefinitions'], resourceNames: ['gatewayclasses.gateway.networking.k8s.io'], verbs: ['get'] },
    ],
    'the ClusterRole keeps only cluster-scoped resources: selfsubjectreviews, GatewayClasses, Namespaces, the GatewayClass CRD',
  );
  t.match(one('ClusterRoleBinding'), { roleRef: { kind: 'ClusterRole', name: at(clusterRole, 'metadata.name') }, subjects: [{ kind: 'ServiceAccount', name: at(SA, 'metadata.name') }] });

  // egress: DNS, the API server, the gateway, Redis; nothing else
  const netpol = one('NetworkPolicy');
  const pod = one('Deployment');
  t.equal(at(netpol, 'metadata.namespace'), at(pod, 'metadata.namespace'), "in the reconciler's namespace");
  t.match(strings(at(pod, 'spec.template.metadata.labels')), strings(at(netpol, 'spec.podSelector.matchLabels')), "it selects the reconciler's pods");
  t.same(at(netpol, 'spec.policyTypes'), ['Egress'], 'it restricts egress');
  const egress = arr(at(netpol, 'spec.egress')) as Obj[];
  const ports = egress.map((e) => arr(e.ports).map((p) => `${String(at(p, 'protocol'))}/${String(at(p, 'port'))}`));
  t.same(ports, [['UDP/53', 'TCP/53'], ['TCP/6443'], ['TCP/8080'], ['TCP/6379']], 'four rules: DNS, the API server, the gateway, Redis');
  for (const e of egress) t.ok(arr(e.to).length > 0, 'each rule names where it may go (an empty `to` would allow anywhere)');
  t.match(
    at(egress[0], 'to'),
    [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } }, podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } } }],
    'DNS: the cluster resolver',
  );
  t.match(at(egress[1], 'to'), [{ ipBlock: { cidr: /^\d+\.\d+\.\d+\.\d+\/32$/ } }], 'the API server: an address block');
  const gatewayPort = Number(new URL(strings(CONFIGMAP.data).TYK_URL ?? '').port);
  t.equal(at(arr(egress[2]?.ports)[0], 'port'), gatewayPort, "the gateway rule's port is TYK_URL's");
});

/** The calls @kubernetes/client-node makes for the test's own setup (World.create/updateSpec/delete). */
function isTestClientCall(r: RbacRequest): boolean {
  return (
    r.kind === 'resource' &&
    ['tyk.tyk.io', 'networking.k8s.io', 'gateway.networking.k8s.io'].includes(r.req.apiGroup) &&
    ['create', 'get', 'update', 'delete'].includes(r.req.verb) &&
    r.req.subresource === undefined
  );
}

const reportOf = (report: RunReport | null | undefined, kind: string, name: string) => report?.objects.find((o) => o.kind === kind && o.name === name);

t.test('RBAC: the Roles allow every call the code makes in a watched namespace, the ClusterRole the rest, nothing unused, nothing elsewhere', async (t) => {
  const [A, B] = WATCHED as [string, string];
  const OTHER = 'team-c';
  // SHARD_SIZE 3: a scheduled tick below is sharded (the coordinator's calls, and the shards')
  // TYK_GATEWAY_SERVICE: the gateway's replicas from its Service's EndpointSlices in the gateway's namespace
  const gatewayService = { namespace: GATEWAY_NAMESPACE, name: 'gateway-svc-tyk-gateway', port: 'http' };
  const w = await startWorld({
    env: { WATCH_NAMESPACE: WATCHED.join(','), SHARD_SIZE: '3', TYK_GATEWAY_SERVICE: `${gatewayService.namespace}/${gatewayService.name}:${gatewayService.port}` },
    kube: { crds: [DEFAULT_CRD_DIR, GATEWAY_API_CRDS], resources: [{ group: 'discovery.k8s.io', version: 'v1', kind: 'EndpointSlice', plural: 'endpointslices', builtin: true }] },
  });
  t.teardown(() => w.close());
  const gatewayAt = new URL(w.tyk.url);
  await w.kube.put({
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: `${gatewayService.name}-x1y2z`, namespace: gatewayService.namespace, labels: { 'kubernetes.io/service-name': gatewayService.name } },
    addressType: 'IPv4',
    endpoints: [{ addresses: [gatewayAt.hostname], conditions: { ready: true }, targetRef: { kind: 'Pod', namespace: gatewayService.namespace, name: 'gateway-0' } }],
    ports: [{ name: gatewayService.port, port: Number(gatewayAt.port), protocol: 'TCP' }],
  });

  // calls the test itself makes (setup through @kubernetes/client-node) are told apart by when
  // they happen, as in deploy.test.ts: nothing of the service runs outside the awaited calls
  const testCalls = new Set<number>();
  const byTest = async <T>(action: () => Promise<T>): Promise<T> => {
    const from = w.kube.calls.length;
    try {
      return await action();
    } finally {
      for (let i = from; i < w.kube.calls.length; i++) testCalls.add(i);
    }
  };
  const api = (name: string, namespace: string, extra: Record<string, unknown> = {}): KubeObject => ({
    apiVersion: 'tyk.tyk.io/v1alpha1',
    kind: 'ApiDefinition',
    metadata: { name, namespace },
    spec: { name, protocol: 'http', active: true, use_keyless: true, proxy: { target_url: 'http://httpbin.org', listen_path: `/${namespace}-${name}`, strip_listen_path: true }, ...extra },
  });
  const policy = (name: string, apiName: string, namespace: string, extra: Record<string, unknown> = {}): KubeObject => ({
    apiVersion: 'tyk.tyk.io/v1alpha1',
    kind: 'SecurityPolicy',
    metadata: { name, namespace },
    spec: { name: `${name} policy`, state: 'active', active: true, access_rights_array: [{ name: apiName, namespace, versions: ['Default'] }], ...extra },
  });
  const b64 = (s: string): string => Buffer.from(s).toString('base64');

  // team-a: an API, a policy for it and one waiting for an API that does not exist, a Tyk OAS
  // API and its ConfigMap, GraphQL federation, an Ingress and its template, and the developer
  // portal through an OperatorContext (and its Secret) of the same namespace
  await byTest(() => w.create(api('httpbin', A)));
  await byTest(() => w.create(policy('httpbin', 'httpbin', A)));
  await byTest(() => w.create(policy('early', 'not-yet', A)));
  await byTest(() => w.create(configMap('petstore').inNamespace(A).withOas(oasDocument('petstore')).build()));
  await byTest(() => w.create(tykOasApi('petstore').inNamespace(A).build()));
  await byTest(() => w.create(subGraph('users').inNamespace(A).build()));
  await byTest(() => w.create(apiDefinition('users-api').inNamespace(A).servingSubGraph('users').build()));
  await byTest(() => w.create(superGraph('social').inNamespace(A).withSubgraphs('users').build()));
  await byTest(() => w.create(apiDefinition('social').inNamespace(A).ofSuperGraph('social').build()));
  const dashboard = await startFakeTykDashboard();
  t.teardown(() => dashboard.close());
  await byTest(() =>
    w.create({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'portal-dashboard', namespace: A },
      data: { TYK_MODE: b64('pro'), TYK_URL: b64(dashboard.url), TYK_AUTH: b64(dashboard.secret), TYK_ORG: b64(dashboard.orgId) },
    }),
  );
  await byTest(() =>
    w.create({ apiVersion: 'tyk.tyk.io/v1alpha1', kind: 'OperatorContext', metadata: { name: 'portal', namespace: A }, spec: { secretRef: { name: 'portal-dashboard', namespace: A } } }),
  );
  const inPortal = { contextRef: { name: 'portal', namespace: A } };
  await byTest(() => w.create(api('portal-api', A, inPortal)));
  await byTest(() => w.create(policy('portal-policy', 'portal-api', A, inPortal)));
  await byTest(() => w.create(apiDescription('portal-doc').inNamespace(A).withPolicy('portal-policy').inContext('portal', A).build()));
  await byTest(() => w.create(portalCatalogue('portal-catalogue').inNamespace(A).withDescriptions('portal-doc').inContext('portal', A).build()));
  await byTest(() => w.create(portalConfig('portal-config').inNamespace(A).inContext('portal', A).build()));
  // team-b: an API through an OperatorContext (and its Secret) of its own namespace
  await byTest(() =>
    w.create({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'staging-gateway', namespace: B }, data: { TYK_MODE: b64('ce'), TYK_URL: b64(w.tyk.url), TYK_AUTH: b64(w.tyk.secret) } }),
  );
  await byTest(() =>
    w.create({ apiVersion: 'tyk.tyk.io/v1alpha1', kind: 'OperatorContext', metadata: { name: 'staging', namespace: B }, spec: { secretRef: { name: 'staging-gateway', namespace: B } } }),
  );
  await byTest(() => w.create(api('orders', B, { contextRef: { name: 'staging', namespace: B } })));
  // a namespace nobody watches: its objects are never read
  await byTest(() => w.create(api('elsewhere', OTHER)));

  // a forwarded watch event (GET, finalizer and status PATCHes, Events)
  t.match(reportOf(await w.announce('ADDED', 'httpbin', A), 'ApiDefinition', 'httpbin'), { result: 'synced' }, 'watch event: synced');
  // an audit EventList (SelfSubjectReview, cluster-scoped), one event of an unwatched namespace among them
  const auditEvent = (resource: string, namespace: string, name: string, n: number) => ({
    level: 'Metadata',
    auditID: `deploy-namespaced-${n}`,
    stage: 'ResponseComplete',
    verb: 'create',
    requestURI: `/apis/tyk.tyk.io/v1alpha1/namespaces/${namespace}/${resource}`,
    user: { username: 'jane@example.com', groups: ['system:authenticated'] },
    objectRef: { resource, namespace, name, apiGroup: 'tyk.tyk.io', apiVersion: 'v1alpha1' },
    responseStatus: { metadata: {}, code: 201 },
  });
  const audited = await w.audit({
    kind: 'EventList',
    apiVersion: 'audit.k8s.io/v1',
    metadata: {},
    items: [
      auditEvent('apidefinitions', B, 'orders', 1),
      auditEvent('securitypolicies', A, 'httpbin', 2),
      auditEvent('tykoasapidefinitions', A, 'petstore', 3),
      auditEvent('apidefinitions', A, 'portal-api', 4),
      auditEvent('securitypolicies', A, 'portal-policy', 5),
      auditEvent('apidescriptions', A, 'portal-doc', 6),
      auditEvent('portalapicatalogues', A, 'portal-catalogue', 7),
      auditEvent('portalconfigs', A, 'portal-config', 8),
      auditEvent('apidefinitions', OTHER, 'elsewhere', 9),
    ],
  });
  t.equal(audited.statusCode, 200, 'audit webhook answered');
  t.match(reportOf(audited.body.report, 'ApiDefinition', 'orders'), { result: 'synced', gateway: `context:${B}/staging` }, 'synced through the OperatorContext');
  t.match(reportOf(audited.body.report, 'TykOasApiDefinition', 'petstore'), { result: 'synced' }, 'the OAS API synced from its ConfigMap');
  t.match(reportOf(audited.body.report, 'PortalConfig', 'portal-config'), { result: 'synced', gateway: `context:${A}/portal` }, 'the portal synced on the Dashboard');
  t.match(reportOf(audited.body.report, 'ApiDefinition', 'elsewhere'), { result: 'skipped', reason: 'not watched' }, 'the unwatched namespace is not looked at');

  // a full tick and a sharded one (metadata-only counts, the contexts listed, the shards' lists)
  const tick = await w.tick();
  t.match(reportOf(tick, 'SecurityPolicy', 'early'), { result: 'waiting' }, 'a policy waits for a missing API');
  t.match(reportOf(tick, 'ApiDefinition', 'social'), { result: 'synced' }, 'the supergraph API is composed');
  t.match(reportOf(tick, 'SubGraph', 'users'), { result: 'synced' }, 'the SubGraph gets its finalizer and status');
  t.equal(reportOf(tick, 'ApiDefinition', 'elsewhere'), undefined, 'a full run covers the watched namespaces only');
  t.match(await scheduledTick(w.svc), { sharded: { queued: false }, report: { errors: [] } }, 'a sharded tick, without a run-level error');

  // an Ingress of our class with its template: generated (POST), replaced (PUT), deleted (DELETE)
  await byTest(() =>
    w.create(
      apiDefinition('tpl')
        .inNamespace(A)
        .template()
        .withSpec({ name: 'tpl', protocol: 'http', use_keyless: true, active: true, proxy: { target_url: 'http://example.com' } })
        .build(),
    ),
  );
  await byTest(() => w.create(ingress('web').inNamespace(A).withClass('tyk').withTemplate('tpl').withRule('', '/web', 'web', 80).build()));
  t.match(reportOf(await w.tick(), 'Ingress', 'web'), { result: 'synced' }, 'an Ingress: its ApiDefinition generated');
  await byTest(() => w.updateSpec('tpl', (s) => ({ ...s, active: false }), A));
  const templated = await w.audit({ kind: 'EventList', apiVersion: 'audit.k8s.io/v1', metadata: {}, items: [auditEvent('apidefinitions', A, 'tpl', 10)] });
  t.match(reportOf(templated.body.report, 'Ingress', 'web'), { action: 'UPDATE', result: 'synced' }, 'the template edited: the generated ApiDefinition replaced');
  await byTest(() => w.delete('web', A, 'ingresses'));
  t.match(reportOf(await w.tick(), 'Ingress', 'web'), { result: 'deleted' }, 'the Ingress deleted: what it generated deleted');

  // Gateway API in team-a: our GatewayClass (cluster-scoped: listed, its status patched), a
  // Gateway taking routes from namespaces by label (the Namespaces listed), a Service, an
  // HTTPRoute: its ApiDefinition generated, finalizer, statuses; deleted: what it made deleted
  await w.kube.put(gatewayClass('tyk'));
  await w.kube.put({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: A, labels: { routes: 'yes' } } });
  await w.kube.put(gateway('gw', 'tyk', [listener('http', 80, 'HTTP', { from: 'Selector', matchLabels: { routes: 'yes' } })], A));
  await w.kube.put(service('web', [8080], A));
  await byTest(() =>
    w.create(
      httpRoute('web', A)
        .parent('gw')
        .rule({ path: '/routed', backends: [backend('web', 8080)] })
        .build(),
    ),
  );
  t.match(reportOf(await w.tick(), 'HTTPRoute', 'web'), { result: 'synced' }, 'an HTTPRoute: its ApiDefinition generated');
  await byTest(() => w.delete('web', A, 'httproutes'));
  t.match(reportOf(await w.tick(), 'HTTPRoute', 'web'), { result: 'deleted' }, 'the HTTPRoute deleted: what it generated deleted');

  // the default gateway's replicas: every run above listed them in the gateway's namespace; once more here, with the service's credentials
  const kc = new KubeConfig();
  kc.loadFromFile(w.kubeconfigPath);
  const asTheService = new KubeClient(kc, { timeoutMs: 5_000 });
  t.teardown(() => asTheService.close());
  t.same(await discoverReplicas(asTheService, gatewayService, 'http'), [{ name: 'gateway-0', url: w.tyk.url }], "the gateway's replicas");

  // /resync of a namespace, of an unwatched one, of one object; /readyz
  t.equal((await w.resync({ namespace: B })).statusCode, 200);
  t.same((await w.resync({ namespace: OTHER })).body.objects, [], 'a resync of an unwatched namespace looks at nothing');
  t.equal((await w.resync({ kind: 'SecurityPolicy', namespace: A, name: 'early' })).statusCode, 200);
  t.equal((await w.inject('GET', '/readyz')).statusCode, 200, '/readyz');

  // a new process says the same about the waiting policy (its Event: 409, read back, counted)
  await w.restartService();
  t.match(reportOf((await w.resync({ kind: 'SecurityPolicy', namespace: A, name: 'early' })).body, 'SecurityPolicy', 'early'), { result: 'waiting' });

  // deletions (finalizers removed)
  await byTest(() => w.delete('portal-catalogue', A, 'PortalAPICatalogue'));
  await byTest(() => w.delete('portal-doc', A, 'APIDescription'));
  await byTest(() => w.delete('portal-config', A, 'PortalConfig'));
  await byTest(() => w.delete('httpbin', A, 'SecurityPolicy'));
  const gone = await w.tick();
  t.match(reportOf(gone, 'PortalAPICatalogue', 'portal-catalogue'), { result: 'deleted' });
  t.match(reportOf(gone, 'SecurityPolicy', 'httpbin'), { result: 'deleted' });
  await byTest(() => w.delete('httpbin', A));
  t.match(reportOf(await w.tick(), 'ApiDefinition', 'httpbin'), { result: 'deleted' });

  // ── derive ──
  const all = w.kube.calls.map((c, i) => ({ call: c, index: i, request: rbacRequest(c.method, c.path, c.query) }));
  const byTheCode = all.filter((c) => !testCalls.has(c.index));
  for (const c of all.filter((c) => testCalls.has(c.index))) t.ok(isTestClientCall(c.request), `test-side call ${c.call.method} ${c.call.path} has the test client's shape`);
  const expectedRefusal = (c: { call: { method: string; path: string; status: number } }) =>
    c.call.status === 404 || (c.call.status === 409 && c.call.method === 'POST' && /\/events$/.test(c.call.path));
  for (const c of byTheCode) t.ok(c.call.status < 400 || expectedRefusal(c), `${c.call.method} ${c.call.path} → ${c.call.status}`);

  const requests = byTheCode.map((c) => c.request);
  const namespaced = requests.filter((r) => r.kind === 'resource' && r.req.namespace !== undefined);
  const rest = requests.filter((r) => !(r.kind === 'resource' && r.req.namespace !== undefined));
  t.comment(
    `API-server requests the code made (${byTheCode.length} calls):\n${[...new Set(requests.map((r) => `${describeRequest(r)} ${r.kind === 'resource' ? (r.req.namespace ?? '') : ''}`))].sort().join('\n')}`,
  );

  // nothing across namespaces, nothing in an unwatched one
  // cluster-scoped resources have no namespace to confine them to: who we are, GatewayClasses, Namespaces, the GatewayClass CRD
  const clusterScoped = (r: RbacRequest): boolean =>
    r.kind === 'resource' &&
    (r.req.apiGroup === 'authentication.k8s.io' ||
      (r.req.apiGroup === 'gateway.networking.k8s.io' && r.req.resource === 'gatewayclasses') ||
      (r.req.apiGroup === '' && r.req.resource === 'namespaces') ||
      (r.req.apiGroup === 'apiextensions.k8s.io' && r.req.resource === 'customresourcedefinitions'));
  t.same(rest.filter((r) => !clusterScoped(r)).map(describeRequest), [], 'no request spans all namespaces: every list is a list in one watched namespace');
  const isGatewaySlices = (r: RbacRequest): boolean => r.kind === 'resource' && r.req.namespace === GATEWAY_NAMESPACE && r.req.apiGroup === 'discovery.k8s.io' && r.req.resource === 'endpointslices';
  t.same(
    [...new Set(namespaced.filter((r) => !isGatewaySlices(r)).map((r) => (r.kind === 'resource' ? r.req.namespace : '')))].filter((ns) => !WATCHED.includes(ns ?? '')),
    [],
    "no request reaches another namespace, but the list of the gateway's EndpointSlices in its own",
  );
  t.ok(namespaced.some(isGatewaySlices), "the gateway's EndpointSlices are listed in its namespace");
  t.ok(
    requests.some((r) => r.kind === 'resource' && r.req.verb === 'list' && r.req.namespace === A),
    'full runs list per namespace',
  );

  // ── check against the overlay's Roles and ClusterRole ──
  const roleRules = (ns: string): PolicyRule[] =>
    objects('Role')
      .filter((r) => at(r, 'metadata.namespace') === ns)
      .flatMap((r) => arr(r.rules) as PolicyRule[]);
  const clusterRules = arr(one('ClusterRole').rules) as PolicyRule[];
  const distinct = new Map<string, RbacRequest>();
  for (const r of requests) distinct.set(`${describeRequest(r)} ${r.kind === 'resource' ? (r.req.namespace ?? '') : ''}`, r);
  for (const [text, r] of distinct) {
    const ns = r.kind === 'resource' ? r.req.namespace : undefined;
    const rules = ns === undefined ? clusterRules : roleRules(ns);
    t.ok(
      rules.some((rule) => ruleAllows(rule, r)),
      `allowed: ${text}`,
    );
  }
  const used = (rules: PolicyRule[], reqs: RbacRequest[]) =>
    rules
      .flatMap(ruleGrants)
      .filter(
        (g) =>
          !reqs.some(
            (r) => r.kind === 'resource' && r.req.apiGroup === g.apiGroup && r.req.verb === g.verb && (r.req.subresource ? `${r.req.resource}/${r.req.subresource}` : r.req.resource) === g.resource,
          ),
      )
      .map((g) => `${g.apiGroup === '' ? '""' : g.apiGroup} ${g.resource} ${g.verb}`);
  t.same(
    used(roleRules(A), namespaced).filter((g) => !MAY_BE_UNUSED.has(g)),
    [],
    'every grant of the Roles is used in a watched namespace (least privilege)',
  );
  t.same(used(clusterRules, rest), [], 'every grant of the ClusterRole is used');
  t.same(
    used(
      roleRules(GATEWAY_NAMESPACE),
      namespaced.filter((r) => r.kind === 'resource' && r.req.namespace === GATEWAY_NAMESPACE),
    ),
    [],
    "every grant of the gateway namespace's Role is used there",
  );
  const wildcards = [...clusterRules, ...WATCHED.flatMap(roleRules)].filter((r) => [...(r.apiGroups ?? []), ...(r.resources ?? []), ...(r.verbs ?? [])].includes('*'));
  t.same(wildcards, [], 'no wildcards');
});
