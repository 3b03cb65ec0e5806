/**
 * An OperatorContext that names a Service (`spec.env.service`, mode ce): its gateway is the
 * Service's ready endpoints, each written and reloaded on its own. The Service is a reference
 * like the others (another namespace's needs a ReferenceGrant to kind Service), each endpoint's
 * address passes the URL rules (a loopback one is never reached), and the key of a context's
 * Secret goes to a Service only when the Secret names it.
 */
import t from 'tap';
import type { KubeObject } from '../../lib/kube/types.js';
import { apiDefinition, operatorContext, secret } from '../fixtures/builders.js';
import type { MemoryTykGateway } from '../memory/gateway.js';
import { FastWorld, reported } from './world.js';

/** An EndpointSlice of `service` in `namespace`, one ready endpoint per address, port `http` 8080. */
function slice(namespace: string, service: string, addresses: string[]): KubeObject {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: `${service}-abcde`, namespace, labels: { 'kubernetes.io/service-name': service } },
    addressType: 'IPv4',
    endpoints: addresses.map((a, i) => ({ addresses: [a], conditions: { ready: true }, targetRef: { kind: 'Pod', namespace, name: `${service}-${i}` } })),
    ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
  };
}

function grant(namespace: string, fromNamespace: string, service: string): KubeObject {
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'ReferenceGrant',
    metadata: { name: `from-${fromNamespace}`, namespace },
    spec: { from: [{ group: 'tyk.tyk.io', kind: 'OperatorContext', namespace: fromNamespace }], to: [{ group: '', kind: 'Service', name: service }] },
  };
}

/** A world with two gateway replicas at 10.0.0.1 and 10.0.0.2 (key s3cret), and an ApiDefinition in team-a using context `ctx`. */
function world() {
  const w = new FastWorld();
  const replicas = ['10.0.0.1', '10.0.0.2'].map((a) => w.addGateway(`http://${a}:8080`, { secret: 's3cret' }) as MemoryTykGateway);
  w.apply(apiDefinition('httpbin').inNamespace('team-a').inContext('ctx').build());
  return { w, replicas };
}

t.test("a context naming its namespace's Service: each replica written and reloaded on its own", async (t) => {
  const { w, replicas } = world();
  w.put(slice('team-a', 'gw', ['10.0.0.1', '10.0.0.2']));
  w.apply(operatorContext('ctx').ce('http://gw.team-a.svc:8080', 's3cret').env({ service: 'team-a/gw:http' }).inNamespace('team-a').build());
  const report = await w.run();
  t.match(reported(report, 'httpbin', 'ApiDefinition', 'team-a'), { result: 'synced', gateway: 'context:team-a/ctx' });
  for (const r of replicas) {
    t.equal(r.loaded('api').size, 1, `${r.name}: written`);
    t.equal(r.reloads.requested, 1, `${r.name}: reloaded once`);
  }
});

t.test("another namespace's Service needs a ReferenceGrant there", async (t) => {
  const { w, replicas } = world();
  w.put(slice('tyk', 'gw', ['10.0.0.1', '10.0.0.2']));
  w.apply(operatorContext('ctx').ce('http://gw.tyk.svc:8080', 's3cret').env({ service: 'tyk/gw:http' }).inNamespace('team-a').build());
  const refused = await w.run();
  t.match(reported(refused, 'httpbin', 'ApiDefinition', 'team-a'), { result: 'failed', code: 'REF_NOT_PERMITTED', error: /spec\.env\.service/ });
  t.equal(replicas[0]?.count('list'), 0, 'not a call to any replica');
  w.put(grant('tyk', 'team-a', 'gw'));
  const granted = await w.run({ trigger: 'resync' });
  t.match(reported(granted, 'httpbin', 'ApiDefinition', 'team-a'), { result: 'synced' });
  t.equal(replicas[1]?.loaded('api').size, 1);
});

t.test("an endpoint's address passes the URL rules: a loopback one is never reached", async (t) => {
  const { w, replicas } = world();
  w.put(slice('team-a', 'gw', ['10.0.0.1', '127.0.0.1']));
  w.apply(operatorContext('ctx').ce('http://gw.team-a.svc:8080', 's3cret').env({ service: 'team-a/gw:http' }).inNamespace('team-a').build());
  const report = await w.run();
  t.match(reported(report, 'httpbin', 'ApiDefinition', 'team-a'), { result: 'synced' }, 'the permitted replica is served');
  t.equal(replicas[0]?.loaded('api').size, 1);
  const only = world();
  only.w.put(slice('team-a', 'gw', ['127.0.0.1']));
  only.w.apply(operatorContext('ctx').ce('http://gw.team-a.svc:8080', 's3cret').env({ service: 'team-a/gw:http' }).inNamespace('team-a').build());
  const none = await only.w.run();
  t.match(reported(none, 'httpbin', 'ApiDefinition', 'team-a'), { result: 'failed', error: /no endpoint of Service team-a\/gw may be reached: gw-0 .*loopback/ });
});

t.test("a context's Secret key goes to a Service only when the Secret names it", async (t) => {
  const { w } = world();
  w.put(slice('team-a', 'gw', ['10.0.0.1', '10.0.0.2']));
  w.apply(secret('tyk').inNamespace('team-a').withData({ TYK_MODE: 'ce', TYK_URL: 'http://gw.team-a.svc:8080', TYK_AUTH: 's3cret' }).build());
  w.apply(operatorContext('ctx').fromSecret('tyk').env({ service: 'team-a/gw:http' }).inNamespace('team-a').build());
  const report = await w.run();
  t.match(reported(report, 'httpbin', 'ApiDefinition', 'team-a'), { result: 'failed', code: 'URL_NOT_PERMITTED', error: /spec\.env\.service may not send the TYK_AUTH of its Secret elsewhere/ });
  w.apply(secret('tyk').inNamespace('team-a').withData({ TYK_MODE: 'ce', TYK_URL: 'http://gw.team-a.svc:8080', TYK_AUTH: 's3cret', TYK_GATEWAY_SERVICE: 'team-a/gw:http' }).build());
  w.apply(operatorContext('ctx').fromSecret('tyk').inNamespace('team-a').build());
  const named = await w.run({ trigger: 'resync' });
  t.match(reported(named, 'httpbin', 'ApiDefinition', 'team-a'), { result: 'synced' }, 'the Secret names the Service itself');
});
