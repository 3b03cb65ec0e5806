/**
 * The default gateway as its replicas (lib/gateway/replica-clients.ts): the Service's
 * EndpointSlices (MemoryKube) name two loopback Tyk Gateway fakes served over HTTPS with a
 * certificate for the name TYK_URL gives; each replica's client reaches its own fake at its
 * address, verified against TYK_URL's host, and reloads only that node; through ReplicaGateway
 * a write reaches both, each reloaded on its own; metrics count under the default gateway's name.
 */
import t from 'tap';
import type { GatewayService } from '../../lib/gateway/endpoint-slices.js';
import { replicaGateway } from '../../lib/gateway/replica-clients.js';
import { ReplicaGateway } from '../../lib/gateway/replicas.js';
import { ENDPOINT_SLICE } from '../../lib/kube/kinds.js';
import type { KubeObject } from '../../lib/kube/types.js';
import type { GatewayCallFigure } from '../../lib/metrics/catalogue.js';
import { GatewayUnavailableError } from '../../lib/platform/errors.js';
import { type FakeTykGateway, startFakeTykGateway } from '../fakes/tyk-gateway.js';
import { PEM } from '../fixtures/pem.js';
import { FakeClock } from '../harness/clock.js';
import { MemoryKube } from '../memory/kube.js';

const SECRET = 'ce-secret-0123456789';
const SERVICE: GatewayService = { namespace: 'tyk', name: 'gateway-svc', port: 'http' };

function slice(name: string, pod: string, port: number): KubeObject {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name, namespace: 'tyk', labels: { 'kubernetes.io/service-name': 'gateway-svc' } },
    addressType: 'IPv4',
    endpoints: [{ addresses: ['127.0.0.1'], conditions: { ready: true }, targetRef: { kind: 'Pod', namespace: 'tyk', name: pod } }],
    ports: [{ name: 'http', port, protocol: 'TCP' }],
  };
}

const portOf = (gw: FakeTykGateway): number => Number(new URL(gw.url).port);

const API = {
  name: 'a1',
  use_keyless: true,
  active: true,
  proxy: { listen_path: '/a1/', target_url: 'http://httpbin.org', strip_listen_path: true },
  version_data: { not_versioned: true, default_version: 'Default', versions: { Default: { name: 'Default' } } },
};

async function replicas(tt: { teardown(fn: () => unknown): void }): Promise<{ kube: MemoryKube; gws: FakeTykGateway[] }> {
  const gws = await Promise.all([0, 1].map(() => startFakeTykGateway({ secret: SECRET, reloadDelayMs: 1, joinDelayMs: 60_000, tls: { cert: PEM.gateway, key: PEM.gatewayKey } })));
  for (const gw of gws) tt.teardown(() => gw.close());
  const kube = new MemoryKube({ clock: new FakeClock() });
  gws.forEach((gw, i) => kube.put(slice(`gateway-svc-${i}`, `gw-${i}`, portOf(gw))));
  return { kube, gws };
}

t.test("each replica's client: its own address, TYK_AUTH, verified as TYK_URL's host, its own node's reload", async (tt) => {
  const { kube, gws } = await replicas(tt);
  const figures: GatewayCallFigure[] = [];
  const tyk = { mode: 'ce' as const, url: 'https://tyk-gateway.tyk.svc:8080', auth: SECRET, insecureSkipVerify: false };
  const pieces = replicaGateway(kube, tyk, SERVICE, { timeoutMs: 2000, ca: PEM.gateway, observe: (f) => figures.push(f) });

  const found = await pieces.discover();
  tt.same(
    found,
    gws.map((gw, i) => ({ name: `gw-${i}`, url: `https://127.0.0.1:${portOf(gw)}` })),
    "TYK_URL's scheme, each endpoint's address and port",
  );
  for (const replica of found) {
    const client = pieces.clientFor(replica);
    tt.teardown(() => client.close());
    tt.equal(client.name, `default/${replica.name}`, 'messages name the replica');
    await client.upsert('api', 'a1', API);
    await client.reload();
  }
  for (const [i, gw] of gws.entries()) {
    await gw.waitForReloads();
    tt.ok(gw.loaded('api').get('a1'), `gw-${i}: written and reloaded (a gateway that has not joined the group channel)`);
    tt.same(
      gw.calls.map((c) => `${c.method} ${c.path}`),
      ['POST /tyk/apis', 'GET /tyk/reload'],
      `gw-${i}: its own write and its own node reload, nothing to the group`,
    );
  }
  tt.ok(figures.length > 0 && figures.every((f) => f.gateway === 'default'), "metrics under the default gateway's name");

  // another host name in TYK_URL: the certificate does not hold it
  const misnamed = replicaGateway(kube, { ...tyk, url: 'https://tyk-gateway.other.svc:8080' }, SERVICE, { timeoutMs: 2000, ca: PEM.gateway });
  const [first] = await misnamed.discover();
  const misnamedClient = misnamed.clientFor(first!);
  tt.teardown(() => misnamedClient.close());
  const refused = await misnamedClient.ping().then(
    () => undefined,
    (e: unknown) => e,
  );
  tt.ok(refused instanceof GatewayUnavailableError && /tyk-gateway\.other\.svc/.test(refused.message), 'checked against the name TYK_URL gives: refused');
  tt.ok(refused instanceof Error && /gateway default\/gw-0/.test(refused.message), 'the error names the replica');
  // TYK_TLS_INSECURE_SKIP_VERIFY: no check
  const insecure = replicaGateway(kube, { ...tyk, url: 'https://tyk-gateway.other.svc:8080', insecureSkipVerify: true }, SERVICE, { timeoutMs: 2000 });
  const insecureClient = insecure.clientFor((await insecure.discover())[0]!);
  tt.teardown(() => insecureClient.close());
  await insecureClient.ping();
});

t.test('through ReplicaGateway: a write reaches every replica, each reloaded on its own node; a replica gone is left out', async (tt) => {
  const { kube, gws } = await replicas(tt);
  const tyk = { mode: 'ce' as const, url: 'https://tyk-gateway.tyk.svc', auth: SECRET, insecureSkipVerify: false };
  const pieces = replicaGateway(kube, tyk, SERVICE, { timeoutMs: 2000, ca: PEM.gateway });
  const gateway = new ReplicaGateway('default', pieces.discover, pieces.clientFor);
  tt.teardown(() => gateway.close());
  tt.same(await gateway.list('api'), new Map(), 'nothing yet');
  tt.same(gateway.replicaNames(), ['gw-0', 'gw-1']);
  await gateway.upsert('api', 'a1', API, { present: false });
  await gateway.reload();
  for (const [i, gw] of gws.entries()) {
    await gw.waitForReloads();
    tt.ok(gw.loaded('api').get('a1'), `gw-${i}: written and reloaded on its own`);
    tt.equal(gw.count('GET', '/tyk/reload'), 1, `gw-${i}: one node reload`);
    tt.equal(gw.count('GET', '/tyk/reload/group'), 0, `gw-${i}: no group reload`);
  }
  kube.remove(ENDPOINT_SLICE, 'gateway-svc-1', 'tyk');
  await gateway.list('api');
  tt.same(gateway.replicaNames(), ['gw-0'], 'gw-1 gone from the slices: gone from the gateway');
});

t.test('plain http: no TLS options, the same node reload', async (tt) => {
  const gw = await startFakeTykGateway({ secret: SECRET, reloadDelayMs: 1 });
  tt.teardown(() => gw.close());
  const kube = new MemoryKube({ clock: new FakeClock() });
  kube.put(slice('gateway-svc-0', 'gw-0', portOf(gw)));
  const pieces = replicaGateway(kube, { mode: 'ce', url: 'http://tyk-gateway.tyk.svc:8080', auth: SECRET, insecureSkipVerify: false }, { namespace: 'tyk', name: 'gateway-svc' }, { timeoutMs: 2000 });
  const [replica] = await pieces.discover();
  tt.same(replica, { name: 'gw-0', url: `http://127.0.0.1:${portOf(gw)}` }, 'the only port, without one in the setting');
  const client = pieces.clientFor(replica!);
  tt.teardown(() => client.close());
  await client.reload();
  tt.equal(gw.count('GET', '/tyk/reload'), 1);
});
