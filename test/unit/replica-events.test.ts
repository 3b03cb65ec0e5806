/**
 * How a change of the gateway's replicas enters a run: an EndpointSlice write (audit webhook,
 * watch and Argo Events objects, CloudEvents) of the Service TYK_GATEWAY_SERVICE names makes
 * the run a full one, so a replica that joined gets every object from it; another Service's
 * slices, or any slice without the setting, run nothing.
 */
import t from 'tap';
import { parseAuditEventList } from '../../lib/events/audit.js';
import { cloudEventItems } from '../../lib/events/cloudevents.js';
import { collect, endpointsOf } from '../../lib/events/refs.js';
import { parseWatchEvents } from '../../lib/events/watch.js';
import { auditEventList } from '../fixtures/audit.js';

const GATEWAY = { namespace: 'tyk', name: 'gateway-svc-tyk-oss' };
const SLICES = { resource: 'endpointslices', apiGroup: 'discovery.k8s.io', version: 'v1' };

/** An EndpointSlice as the endpoints controller writes it for `service`. */
function slice(service: string, name = `${service}-x7k2p`, namespace = 'tyk') {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name, namespace, labels: { 'kubernetes.io/service-name': service } },
    addressType: 'IPv4',
    endpoints: [{ addresses: ['10.0.0.7'], conditions: { ready: true } }],
    ports: [{ name: 'http', port: 8080 }],
  };
}

t.test("audit: the gateway Service's slices make a full run; another Service's, or any without the setting, nothing", async (t) => {
  const list = auditEventList(
    { ...SLICES, name: 'gateway-svc-tyk-oss-x7k2p', namespace: 'tyk' },
    { ...SLICES, name: 'redis-abcde', namespace: 'tyk' },
    { ...SLICES, name: 'gateway-svc-tyk-oss-q9', namespace: 'other' },
  );
  const items = parseAuditEventList(JSON.stringify(list));
  const ours = collect(items, { gatewayService: GATEWAY });
  t.same(ours.scope, { all: true });
  t.equal(ours.accepted, 1);
  t.same(ours.ignored, { 'not the gateway Service': 2 }, 'by name (audit events at the Metadata level carry no labels) and by namespace');
  t.same(collect(items).ignored, { 'not the gateway Service': 3 }, 'without TYK_GATEWAY_SERVICE no slice is ours');
  t.same(collect(items).scope, { refs: [], namespaces: [] });
  const nameless = auditEventList({ ...SLICES, name: '', namespace: 'tyk', verb: 'deletecollection' });
  t.same(collect(parseAuditEventList(JSON.stringify(nameless)), { gatewayService: GATEWAY }).scope, { all: true }, 'a deletecollection in its namespace may be its slices');
});

t.test('watch and Argo Events: the slice’s Service label decides', async (t) => {
  const items = parseWatchEvents(
    JSON.stringify([
      { type: 'MODIFIED', object: slice('redis', 'gateway-svc-tyk-oss-looks-like-it') },
      { type: 'DELETED', object: slice('gateway-svc-tyk-oss') },
      { type: 'UPDATE', group: 'discovery.k8s.io', version: 'v1', resource: 'endpointslices', body: slice('gateway-svc-tyk-oss', 'renamed') },
    ]),
  );
  const r = collect(items, { gatewayService: GATEWAY });
  t.same(r.scope, { all: true });
  t.equal(r.accepted, 2, 'the label wins over the name');
  t.same(r.ignored, { 'not the gateway Service': 1 });
  t.same(collect(items.slice(0, 1), { gatewayService: GATEWAY }).scope, { refs: [], namespaces: [] });
});

t.test('CloudEvents: a Knative subject naming a slice of the Service', async (t) => {
  const subject = cloudEventItems([{ id: '1', source: 's', type: 't', subject: '/apis/discovery.k8s.io/v1/namespaces/tyk/endpointslices/gateway-svc-tyk-oss-abc', data: undefined }]);
  t.same(collect(subject, { gatewayService: GATEWAY }).scope, { all: true });
  const other = cloudEventItems([{ id: '2', source: 's', type: 't', subject: '/apis/discovery.k8s.io/v1/namespaces/tyk/endpointslices/dashboard-abc', data: undefined }]);
  t.same(collect(other, { gatewayService: GATEWAY }).ignored, { 'not the gateway Service': 1 });
});

t.test('endpointsOf: namespace, then label, then the controller’s name', async (t) => {
  t.ok(endpointsOf({ namespace: 'tyk', service: 'gateway-svc-tyk-oss' }, GATEWAY));
  t.notOk(endpointsOf({ namespace: 'tyk', service: 'gateway' }, GATEWAY));
  t.notOk(endpointsOf({ namespace: 'default', service: 'gateway-svc-tyk-oss' }, GATEWAY));
  t.ok(endpointsOf({ namespace: 'tyk', slice: 'gateway-svc-tyk-oss-12345' }, GATEWAY));
  t.notOk(endpointsOf({ namespace: 'tyk', slice: 'gateway-svc-tyk-oss' }, GATEWAY), 'the controller always adds a suffix');
  t.ok(endpointsOf({ namespace: 'tyk' }, GATEWAY), 'nameless (a deletecollection): may be');
});
