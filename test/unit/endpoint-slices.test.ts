/**
 * The default gateway's replicas from its Service's EndpointSlices (lib/gateway/endpoint-slices.ts),
 * over MemoryKube: the label selector and namespace, v1 then v1beta1 (a 1.20 server answers
 * 404 for v1) and the version remembered, ready endpoints only, the port by name, number or
 * alone, IPv6 in brackets, FQDN, pod names, one replica per pod across slices, a stable order,
 * and failures thrown, never an empty list.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import t from 'tap';
import { discoverReplicas, EndpointSliceDiscovery, type GatewayService, replicasOf } from '../../lib/gateway/endpoint-slices.js';
import { KubeClient } from '../../lib/kube/client.js';
import { ENDPOINT_SLICE, ENDPOINT_SLICE_V1BETA1 } from '../../lib/kube/kinds.js';
import type { KubeObject } from '../../lib/kube/types.js';
import { GatewayUnavailableError, KubeApiError, KubeUnavailableError } from '../../lib/platform/errors.js';
import { type ResourceType, startFakeKubeApiServer } from '../fakes/kube-apiserver.js';
import { FakeClock } from '../harness/clock.js';
import { kubeFailure, MemoryKube } from '../memory/kube.js';

interface EndpointInput {
  addresses: string[];
  ready?: boolean | null;
  pod?: string;
}

const GW: GatewayService = { namespace: 'tyk', name: 'gateway' };

function slice(name: string, endpoints: EndpointInput[], options: { service?: string; namespace?: string; addressType?: string; ports?: unknown[]; version?: 'v1' | 'v1beta1' } = {}): KubeObject {
  return {
    apiVersion: `discovery.k8s.io/${options.version ?? 'v1'}`,
    kind: 'EndpointSlice',
    metadata: {
      name,
      namespace: options.namespace ?? 'tyk',
      labels: { 'kubernetes.io/service-name': options.service ?? 'gateway', 'endpointslice.kubernetes.io/managed-by': 'endpointslice-controller.k8s.io' },
    },
    addressType: options.addressType ?? 'IPv4',
    endpoints: endpoints.map((e) => ({
      addresses: e.addresses,
      ...(e.ready === undefined ? {} : { conditions: { ready: e.ready } }),
      ...(e.pod ? { targetRef: { kind: 'Pod', namespace: options.namespace ?? 'tyk', name: e.pod, uid: `uid-${e.pod}` } } : {}),
    })),
    ports: options.ports ?? [{ name: 'http', port: 8080, protocol: 'TCP' }],
  };
}

const cluster = (options: { unserved?: 'v1' | 'v1beta1' } = {}) =>
  new MemoryKube({ clock: new FakeClock(), ...(options.unserved ? { unserved: [options.unserved === 'v1' ? ENDPOINT_SLICE : ENDPOINT_SLICE_V1BETA1] } : {}) });

t.test("the ready endpoints of the Service's slices in its namespace, one replica each, named by pod, in a stable order", async (t) => {
  const kube = cluster();
  kube.put(
    slice('gateway-abcde', [
      { addresses: ['10.0.0.9'], pod: 'gw-2' },
      { addresses: ['10.0.0.7'], pod: 'gw-1', ready: true },
      { addresses: ['10.0.0.8'], pod: 'gw-3', ready: false },
    ]),
  );
  kube.put(slice('gateway-fghij', [{ addresses: ['10.0.1.4'], pod: 'gw-0', ready: null }]));
  // another Service's slice in the namespace, and the same Service name in another namespace
  kube.put(slice('dashboard-xyz', [{ addresses: ['10.0.0.50'], pod: 'dash-1' }], { service: 'dashboard' }));
  kube.put(slice('gateway-elsewhere', [{ addresses: ['10.9.9.9'], pod: 'other-1' }], { namespace: 'other' }));

  const replicas = await discoverReplicas(kube, GW, 'http');
  t.same(
    replicas,
    [
      { name: 'gw-0', url: 'http://10.0.1.4:8080' },
      { name: 'gw-1', url: 'http://10.0.0.7:8080' },
      { name: 'gw-2', url: 'http://10.0.0.9:8080' },
    ],
    'ready (true, absent, null) only, across slices, sorted by name; not-ready, other Services and other namespaces left out',
  );
  t.equal(kube.count('list', 'EndpointSlice'), 1, 'one LIST');
  t.same(
    await discoverReplicas(kube, GW, 'https'),
    replicas.map((r) => ({ ...r, url: r.url.replace('http:', 'https:') })),
    'the scheme as asked',
  );
});

t.test('kube-apiserver 1.20: v1 answers 404, v1beta1 is asked, and asked first from then on', async (t) => {
  const kube = cluster({ unserved: 'v1' });
  t.throws(() => kube.put(slice('gateway-a', [], { version: 'v1' })), /unknown kind/, 'the fake itself serves no v1 here');
  kube.put(slice('gateway-a', [{ addresses: ['10.0.0.7'], pod: 'gw-1' }], { version: 'v1beta1' }));
  const discovery = new EndpointSliceDiscovery(kube, GW, 'http');
  t.equal(discovery.version, 'v1', 'v1 first');
  t.same(await discovery.discover(), [{ name: 'gw-1', url: 'http://10.0.0.7:8080' }]);
  t.equal(kube.count('list', 'EndpointSlice'), 2, 'v1 (404), then v1beta1');
  t.equal(discovery.version, 'v1beta1', 'remembered');
  kube.resetCalls();
  t.same(await discovery.discover(), [{ name: 'gw-1', url: 'http://10.0.0.7:8080' }]);
  t.equal(kube.count('list', 'EndpointSlice'), 1, 'the next discovery asks v1beta1 alone');

  // a cluster with v1 only (1.25+): v1 answers at once
  const newer = cluster({ unserved: 'v1beta1' });
  newer.put(slice('gateway-a', [{ addresses: ['10.0.0.7'], pod: 'gw-1' }]));
  const d2 = new EndpointSliceDiscovery(newer, GW, 'http');
  t.same(await d2.discover(), [{ name: 'gw-1', url: 'http://10.0.0.7:8080' }]);
  t.equal(newer.count('list', 'EndpointSlice'), 1, 'one LIST');
  t.equal(d2.version, 'v1');
});

t.test('a remembered version that starts answering 404 (the cluster upgraded past it): the other is asked', async (t) => {
  const kube = cluster({ unserved: 'v1' });
  kube.put(slice('gateway-a', [{ addresses: ['10.0.0.7'], pod: 'gw-1' }], { version: 'v1beta1' }));
  const discovery = new EndpointSliceDiscovery(kube, GW, 'http');
  await discovery.discover();
  t.equal(discovery.version, 'v1beta1');
  // the cluster upgraded under the running process: v1 only
  kube.unserved = [ENDPOINT_SLICE_V1BETA1];
  kube.put(slice('gateway-a', [{ addresses: ['10.0.0.8'], pod: 'gw-1' }]));
  kube.resetCalls();
  t.same(await discovery.discover(), [{ name: 'gw-1', url: 'http://10.0.0.8:8080' }]);
  t.equal(kube.count('list', 'EndpointSlice'), 2, 'v1beta1 (404), then v1');
  t.equal(discovery.version, 'v1');
});

t.test('failures throw; nothing ready is an empty list', async (t) => {
  const kube = cluster();
  t.same(await discoverReplicas(kube, GW, 'http'), [], 'no slice: no replica');
  kube.put(slice('gateway-a', [{ addresses: ['10.0.0.7'], pod: 'gw-1', ready: false }]));
  t.same(await discoverReplicas(kube, GW, 'http'), [], 'none ready: no replica');

  kube.put(slice('gateway-b', [{ addresses: ['10.0.0.8'], pod: 'gw-2' }]));
  kube.inject({ op: 'list', kind: 'EndpointSlice', error: () => kubeFailure({ status: 403 }, 'list endpointslices "tyk"') });
  const refused = await discoverReplicas(kube, GW, 'http').then(
    () => undefined,
    (err: unknown) => err,
  );
  t.ok(refused instanceof KubeApiError && refused.status === 403, 'a 403 (RBAC) is thrown, not read as no replicas, nor answered by v1beta1');
  kube.inject({ op: 'list', kind: 'EndpointSlice', error: () => kubeFailure({ unavailable: true }, 'list endpointslices "tyk"') });
  await t.rejects(discoverReplicas(kube, GW, 'http'), KubeUnavailableError, 'an unreachable API server is thrown');
  t.same(await discoverReplicas(kube, GW, 'http'), [{ name: 'gw-2', url: 'http://10.0.0.8:8080' }], 'and answered again once it is back');

  const neither = new MemoryKube({ clock: new FakeClock(), unserved: [ENDPOINT_SLICE, ENDPOINT_SLICE_V1BETA1] });
  await t.rejects(
    discoverReplicas(neither, GW, 'http'),
    { status: 404, message: /TYK_GATEWAY_SERVICE tyk\/gateway: the API server serves no EndpointSlices/ },
    'both versions 404: thrown, naming the setting',
  );
});

t.test('the port: by name, by number, the only one; several and none named, or none matching, throw naming the setting', async (t) => {
  const ports = [
    { name: 'http', port: 8080, protocol: 'TCP' },
    { name: 'control', port: 9696, protocol: 'TCP' },
    { name: 'metrics', port: 9090, protocol: 'UDP' },
  ];
  const slices = [slice('gateway-a', [{ addresses: ['10.0.0.7'], pod: 'gw-1' }], { ports })];
  t.same(replicasOf(slices, { ...GW, port: 'control' }, 'http'), [{ name: 'gw-1', url: 'http://10.0.0.7:9696' }], 'by name');
  t.same(replicasOf(slices, { ...GW, port: 8080 }, 'http'), [{ name: 'gw-1', url: 'http://10.0.0.7:8080' }], 'by number (the endpoints’ port)');
  t.throws(() => replicasOf(slices, { ...GW, port: 'metrics' }, 'http'), GatewayUnavailableError, 'a UDP port is not a gateway port');
  t.throws(
    () => replicasOf(slices, GW, 'http'),
    { message: /^TYK_GATEWAY_SERVICE tyk\/gateway: EndpointSlice gateway-a lists several ports \(http \(8080\), control \(9696\)\): name one/ },
    'several, none named',
  );
  t.throws(() => replicasOf(slices, { ...GW, port: 'admin' }, 'http'), {
    message: /^TYK_GATEWAY_SERVICE tyk\/gateway:admin: EndpointSlice gateway-a has no TCP port named admin \(its ports: http \(8080\), control \(9696\)\)/,
  });
  t.throws(() => replicasOf(slices, { ...GW, port: 8443 }, 'http'), { message: /has no TCP port numbered 8443/ });
  const single = [slice('gateway-a', [{ addresses: ['10.0.0.7'], pod: 'gw-1' }], { ports: [{ port: 8080 }] })];
  t.same(replicasOf(single, GW, 'http'), [{ name: 'gw-1', url: 'http://10.0.0.7:8080' }], 'the only port (unnamed, protocol defaulted to TCP)');
  const noneReady = [slice('gateway-a', [{ addresses: ['10.0.0.7'], pod: 'gw-1', ready: false }], { ports })];
  t.same(replicasOf(noneReady, GW, 'http'), [], 'a slice with nothing ready needs no port');
});

t.test('IPv6 in brackets, FQDN as a host name, no targetRef named by address, a pod in two slices once', async (t) => {
  const v6 = slice('gateway-v6', [{ addresses: ['FD00::7'], pod: 'gw-1' }, { addresses: ['fd00::9'] }], { addressType: 'IPv6' });
  const v4 = slice('gateway-v4', [{ addresses: ['10.0.0.7'], pod: 'gw-1' }]);
  const fqdn = slice('gateway-ext', [{ addresses: ['Gw-2.Example.COM.'] }], { addressType: 'FQDN' });
  t.same(
    replicasOf([v6, v4, fqdn], GW, 'https'),
    [
      { name: 'fd00::9', url: 'https://[fd00::9]:8080' },
      { name: 'gw-1', url: 'https://10.0.0.7:8080' },
      { name: 'gw-2.example.com', url: 'https://gw-2.example.com:8080' },
    ],
    'dual stack: the pod once, at its IPv4 address; an endpoint without a pod by its address',
  );
  t.same(replicasOf([v6], GW, 'http'), [
    { name: 'fd00::9', url: 'http://[fd00::9]:8080' },
    { name: 'gw-1', url: 'http://[fd00::7]:8080' },
  ]);
  // the same address in two slices (a slice being replaced): once
  const again = [slice('gateway-a', [{ addresses: ['10.0.0.7'] }]), slice('gateway-b', [{ addresses: ['10.0.0.7'] }, { addresses: ['10.0.0.6'] }])];
  t.same(replicasOf(again, GW, 'http'), [
    { name: '10.0.0.6', url: 'http://10.0.0.6:8080' },
    { name: '10.0.0.7', url: 'http://10.0.0.7:8080' },
  ]);
  // an endpoint's addresses are one backend: its first valid one
  t.same(replicasOf([slice('gateway-a', [{ addresses: ['not-an-ip', '10.0.0.3', '10.0.0.4'], pod: 'gw-1' }])], GW, 'http'), [{ name: 'gw-1', url: 'http://10.0.0.3:8080' }]);
  // what does not fit the slice's addressType, and unknown address types, are left out
  t.same(replicasOf([slice('gateway-a', [{ addresses: ['fd00::1'] }]), slice('gateway-b', [{ addresses: ['x'] }], { addressType: 'Unix' })], GW, 'http'), []);
  t.same(replicasOf([slice('gateway-a', [{ addresses: ['bad host/x'] }], { addressType: 'FQDN' })], GW, 'http'), [], 'an FQDN that is no host name');
  // a targetRef that is not a Pod does not name the replica
  const node = slice('gateway-a', [{ addresses: ['10.0.0.7'] }]);
  (node.endpoints as Record<string, unknown>[])[0]!.targetRef = { kind: 'Node', name: 'worker-1' };
  t.same(replicasOf([node], GW, 'http'), [{ name: '10.0.0.7', url: 'http://10.0.0.7:8080' }]);
});

/** The built-in EndpointSlice as the loopback API server serves it, in one version. */
const endpointSliceType = (version: 'v1' | 'v1beta1'): ResourceType => ({ group: 'discovery.k8s.io', version, kind: 'EndpointSlice', plural: 'endpointslices', builtin: true });

t.test('over HTTP: KubeClient lists endpointslices in the namespace by label; a 1.20 server answers 404 for v1, then v1beta1 answers', async (t) => {
  for (const version of ['v1beta1', 'v1'] as const) {
    const fake = await startFakeKubeApiServer({ crds: [], resources: [endpointSliceType(version)] });
    t.teardown(() => fake.close());
    const dir = await mkdtemp(join(tmpdir(), 'gr-slices-'));
    t.teardown(() => rm(dir, { recursive: true, force: true }));
    const kc = new KubeConfig();
    kc.loadFromFile(await fake.writeKubeconfig(dir));
    const client = new KubeClient(kc, { timeoutMs: 5_000, instance: 'slices' });
    t.teardown(() => client.close());
    fake.put(
      slice(
        'gateway-a',
        [
          { addresses: ['10.0.0.7'], pod: 'gw-1' },
          { addresses: ['10.0.0.8'], pod: 'gw-2', ready: false },
        ],
        { version },
      ),
    );
    fake.put(slice('dashboard-a', [{ addresses: ['10.0.0.50'], pod: 'dash-1' }], { version, service: 'dashboard' }));

    const discovery = new EndpointSliceDiscovery(client, { ...GW, port: 'http' }, 'https');
    t.same(await discovery.discover(), [{ name: 'gw-1', url: 'https://10.0.0.7:8080' }], `${version}: the ready endpoint of the Service's slice`);
    const lists = fake.calls.filter((c) => c.path.includes('/endpointslices')).map((c) => `${c.method} ${c.path}?labelSelector=${c.query.labelSelector} → ${c.status}`);
    const v1 = 'GET /apis/discovery.k8s.io/v1/namespaces/tyk/endpointslices?labelSelector=kubernetes.io/service-name=gateway';
    const v1beta1 = 'GET /apis/discovery.k8s.io/v1beta1/namespaces/tyk/endpointslices?labelSelector=kubernetes.io/service-name=gateway';
    t.same(lists, version === 'v1' ? [`${v1} → 200`] : [`${v1} → 404`, `${v1beta1} → 200`], `${version}: the calls made`);
  }
});
