/**
 * The namespaced install at work: the service with WATCH_NAMESPACE from
 * deploy/kubernetes-namespaced syncs what its namespaces hold, through the webhooks, the
 * schedule and /resync, without one refused API-server call and without a call outside them.
 *
 * On the real tier (npm run test:real) the overlay's RBAC replaces the base's for the duration
 * of the test: its ClusterRole (cluster-scoped kinds only: selfsubjectreviews, GatewayClasses, …) in place of the base's, its Roles and
 * RoleBindings in the watched namespaces, so the real RBAC authorizer decides each call: a 403
 * fails the test. The base's ClusterRole is put back, and the Roles removed, when it ends. On the
 * fake API server (no authorizer) the same scenario checks the calls' namespaces and outcomes.
 */
import { fileURLToPath } from 'node:url';
import t from 'tap';
import type { KubeObject } from '../../lib/kube/types.js';
import { configMap, oasDocument, tykOasApi } from '../fixtures/builders.js';
import { ensureNamespace, realTier } from '../harness/cluster.js';
import { identity, renderKustomization } from '../harness/kustomize.js';
import type { Obj } from '../harness/manifests.js';
import { AdminClient, applyDocs, realApiServerFromEnv } from '../harness/real-apiserver.js';
import { reported, startWorld } from '../harness/world.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const OVERLAY = renderKustomization(ROOT, 'deploy/kubernetes-namespaced');
const BASE = renderKustomization(ROOT, 'deploy/kubernetes');
const RBAC_KINDS = new Set(['ClusterRole', 'Role', 'RoleBinding']);
type Doc = Parameters<typeof applyDocs>[1][number];

const configMapData = (objects: Obj[]) => (objects.find((o) => o.kind === 'ConfigMap')?.data ?? {}) as Record<string, string>;
const WATCHED = String(configMapData(OVERLAY).WATCH_NAMESPACE).split(',');

/** On the real server: the overlay's RBAC in place of the base's until the test ends. */
async function installOverlayRbac(t: { teardown(fn: () => unknown): void }): Promise<void> {
  const info = realApiServerFromEnv();
  if (!info) return;
  const admin = new AdminClient(info);
  const rbac = OVERLAY.filter((o) => RBAC_KINDS.has(String(o.kind))) as unknown as Doc[];
  t.teardown(async () => {
    try {
      // the overlay's own Roles go; the base's (the gateway namespace's, kept by the overlay) stay
      const base = new Set(BASE.map(identity));
      for (const o of rbac.filter((d) => (d.kind === 'Role' || d.kind === 'RoleBinding') && !base.has(identity(d as unknown as Obj)))) {
        const plural = o.kind === 'Role' ? 'roles' : 'rolebindings';
        await admin.must('DELETE', `/apis/rbac.authorization.k8s.io/v1/namespaces/${o.metadata.namespace}/${plural}/${o.metadata.name}`, undefined, [404]);
      }
      await applyDocs(admin, BASE.filter((o) => o.kind === 'ClusterRole') as unknown as Doc[]);
    } finally {
      await admin.close();
    }
  });
  for (const ns of WATCHED) await admin.must('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }, [409]);
  await applyDocs(admin, rbac);
}

t.test('with the namespaced install, every call the service makes is allowed, and none leaves the watched namespaces', async (t) => {
  await installOverlayRbac(t);
  const [A, B] = WATCHED as [string, string];
  const w = await startWorld({ env: { WATCH_NAMESPACE: WATCHED.join(',') } });
  t.teardown(() => w.close());
  for (const ns of [A, B, 'team-c']) await ensureNamespace(w.kube, ns);
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  const api = (name: string, namespace: string, extra: Record<string, unknown> = {}): KubeObject => ({
    apiVersion: 'tyk.tyk.io/v1alpha1',
    kind: 'ApiDefinition',
    metadata: { name, namespace },
    spec: { name, protocol: 'http', active: true, use_keyless: true, proxy: { target_url: 'http://httpbin.org', listen_path: `/${namespace}-${name}`, strip_listen_path: true }, ...extra },
  });

  await w.create(api('httpbin', A));
  await w.create({
    apiVersion: 'tyk.tyk.io/v1alpha1',
    kind: 'SecurityPolicy',
    metadata: { name: 'gold', namespace: A },
    spec: { name: 'gold', state: 'active', active: true, access_rights_array: [{ name: 'httpbin', namespace: A, versions: ['Default'] }] },
  });
  await w.create(
    configMap('petstore')
      .inNamespace(A)
      .withOas(oasDocument('petstore', { listenPath: '/petstore-ns' }))
      .build(),
  );
  await w.create(tykOasApi('petstore').inNamespace(A).build());
  await w.create({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'staging-gateway', namespace: B }, data: { TYK_MODE: b64('ce'), TYK_URL: b64(w.tyk.url), TYK_AUTH: b64(w.tyk.secret) } });
  await w.create({ apiVersion: 'tyk.tyk.io/v1alpha1', kind: 'OperatorContext', metadata: { name: 'staging', namespace: B }, spec: { secretRef: { name: 'staging-gateway', namespace: B } } });
  await w.create(api('orders', B, { contextRef: { name: 'staging', namespace: B } }));
  await w.create(api('elsewhere', 'team-c'));
  w.resetCounts();

  const watched = await w.announce('ADDED', 'httpbin', A);
  t.match(reported(watched, 'httpbin'), { result: 'synced' }, 'a watch event: synced');
  const tick = await w.tick();
  t.match(reported(tick, 'orders'), { result: 'synced', gateway: `context:${B}/staging` }, 'a tick: through the OperatorContext and its Secret');
  t.match(reported(tick, 'petstore', 'TykOasApiDefinition'), { result: 'synced' }, 'the OAS API from its ConfigMap');
  t.match(reported(tick, 'gold', 'SecurityPolicy'), { result: /^(synced|unchanged)$/ }, 'the policy');
  t.notOk(
    tick.objects.some((o) => o.namespace === 'team-c'),
    'the unwatched namespace is not in a full run',
  );
  t.equal((await w.resync({ namespace: B })).statusCode, 200, 'a resync of a namespace');
  t.equal((await w.inject('GET', '/readyz')).statusCode, 200, '/readyz');
  await w.delete('gold', A, 'SecurityPolicy');
  t.match(reported(await w.tick(), 'gold', 'SecurityPolicy'), { result: 'deleted' }, 'a deletion: its finalizer removed');
  await w.delete('httpbin', A);
  t.match(reported(await w.tick(), 'httpbin'), { result: 'deleted' }, 'then the API it held');

  const refused = w.kube.calls.filter((c) => c.status >= 400 && !(c.status === 404 || (c.status === 409 && /\/events$/.test(c.path))));
  t.same(
    refused.map((c) => `${c.method} ${c.path} → ${c.status}`),
    [],
    `no call refused${realTier() ? ' by the real RBAC authorizer' : ''}`,
  );
  // cluster-scoped resources have no namespace to stay in: who we are, GatewayClasses (one LIST per full run)
  const clusterScoped = (path: string) => /selfsubjectreviews|\/apis\/gateway\.networking\.k8s\.io\/v1\/gatewayclasses$/.test(path);
  const outside = w.kube.calls.filter((c) => !/\/namespaces\/(team-a|team-b)\//.test(c.path) && !clusterScoped(c.path));
  t.same(
    outside.map((c) => `${c.method} ${c.path}`),
    [],
    'every call is within a watched namespace, or of a cluster-scoped kind',
  );
  t.ok(w.gatewayApi(Buffer.from(`${B}/orders`).toString('base64url')), 'the API is on the gateway');
});
