/**
 * How Gateway API enters a run: every event format takes a gateway.networking.k8s.io HTTPRoute
 * (and only that group's) into the scope's `cluster`; a Gateway or GatewayClass makes the run a
 * full one (any route may attach to it); a Service or ReferenceGrant runs the routes whose
 * records use it; /resync names HTTPRoutes; GATEWAY_CONTROLLER_NAME and GATEWAY_ADDRESSES are
 * validated.
 */
import t from 'tap';
import { parseAuditEventList } from '../../lib/events/audit.js';
import { cloudEventItems } from '../../lib/events/cloudevents.js';
import { resolveDependents } from '../../lib/events/dependents.js';
import { collect } from '../../lib/events/refs.js';
import { parseWatchEvents } from '../../lib/events/watch.js';
import { loadConfig } from '../../lib/platform/config.js';
import { MemoryStore } from '../../lib/store/memory.js';
import type { SyncRecord } from '../../lib/store/types.js';
import { auditEventList } from '../fixtures/audit.js';
import { configProblems, MINIMAL_ENV } from '../fixtures/config.js';
import { gateway, gatewayClass, httpRoute, listener } from '../fixtures/gateway-api.js';

/** The record of an HTTPRoute we synced, using what `uses` names. */
const routeRecord = (name: string, uses: string[]): SyncRecord => ({
  key: `HTTPRoute/default/${name}`,
  id: '',
  generation: 1,
  desiredHash: 'h',
  observedHash: '',
  result: 'synced',
  failures: 0,
  time: '2026-11-29T00:00:00.000Z',
  uses,
});
const GW = { apiGroup: 'gateway.networking.k8s.io', version: 'v1' };
const names = (refs: readonly { namespace: string; name: string }[] | undefined) => (refs ?? []).map((r) => `${r.namespace}/${r.name}`).sort();

t.test('audit: HTTPRoute writes of gateway.networking.k8s.io only; Gateways and GatewayClasses run everything', async (t) => {
  const routes = collect(
    parseAuditEventList(
      JSON.stringify(
        auditEventList(
          { ...GW, resource: 'httproutes', name: 'web' },
          { ...GW, resource: 'httproutes', name: 'shop', namespace: 'team' },
          { resource: 'httproutes', apiGroup: 'tyk.tyk.io', name: 'x' },
        ),
      ),
    ),
  );
  t.same(names(routes.scope.cluster), ['default/web', 'team/shop']);
  t.same(
    routes.scope.cluster?.map((r) => r.kind.kind),
    ['HTTPRoute', 'HTTPRoute'],
  );
  t.same(routes.ignored, { 'kind not reconciled': 1 }, 'a tyk.tyk.io kind of that name is not one');
  const gw = collect(parseAuditEventList(JSON.stringify(auditEventList({ ...GW, resource: 'gateways', name: 'gw' }, { ...GW, resource: 'httproutes', name: 'web' }))));
  t.same(gw.scope, { all: true }, 'a Gateway changed: a full run');
  const classList = auditEventList({ ...GW, resource: 'gatewayclasses', name: 'tyk' });
  delete (classList.items[0] as { objectRef: Record<string, unknown> }).objectRef.namespace;
  t.same(collect(parseAuditEventList(JSON.stringify(classList))).scope, { all: true }, 'a GatewayClass (no namespace): a full run');
  const status = auditEventList({ ...GW, resource: 'gateways', name: 'gw' });
  (status.items[0] as { objectRef: Record<string, unknown> }).objectRef.subresource = 'status';
  t.same(collect(parseAuditEventList(JSON.stringify(status))).ignored, { 'status subresource': 1 }, 'our own status patch runs nothing');
});

t.test('watch, Argo Events and CloudEvents: HTTPRoute objects, Gateway references, subjects', async (t) => {
  const route = httpRoute('web').parent('gw').build();
  const watched = collect(
    parseWatchEvents(
      JSON.stringify([
        { type: 'MODIFIED', object: route },
        { type: 'ADDED', object: { ...route, apiVersion: 'tyk.tyk.io/v1alpha1' } },
        { type: 'UPDATE', group: 'gateway.networking.k8s.io', version: 'v1', resource: 'httproutes', body: httpRoute('argo').build() },
      ]),
    ),
  );
  t.same(names(watched.scope.cluster), ['default/argo', 'default/web']);
  t.same(watched.ignored, { 'kind not reconciled': 1 });
  t.same(collect(parseWatchEvents(JSON.stringify([{ type: 'MODIFIED', object: gateway('gw', 'tyk', [listener('http', 80)]) }]))).scope, { all: true });
  t.same(collect(parseWatchEvents(JSON.stringify([{ type: 'ADDED', object: gatewayClass('tyk') }]))).scope, { all: true }, 'a cluster-scoped GatewayClass needs no namespace');
  const subject = (s: string) => collect(cloudEventItems([{ id: s, source: 's', type: 't', subject: s, data: undefined }]));
  t.same(names(subject('/apis/gateway.networking.k8s.io/v1/namespaces/team/httproutes/shop').scope.cluster), ['team/shop']);
  t.same(subject('/apis/gateway.networking.k8s.io/v1/namespaces/team/gateways/gw').scope, { all: true });
  t.same(subject('/apis/gateway.networking.k8s.io/v1/gatewayclasses/tyk').scope, { all: true });
  t.same(subject('/apis/tyk.tyk.io/v1alpha1/namespaces/team/httproutes/x').ignored, { 'kind not reconciled': 1 });
  t.same(cloudEventItems([{ id: 'g', source: 's', type: 't', subject: '/apis/gateway.networking.k8s.io/v1beta1/namespaces/backends/referencegrants/routes', data: undefined }]), [
    { id: 'ce s g', dependency: { kind: 'ReferenceGrant', namespace: 'backends', name: 'routes' } },
  ]);
});

t.test('a Service or a ReferenceGrant runs the routes whose records use it', async (t) => {
  const store = new MemoryStore();
  await store.putRecord(routeRecord('web', ['Service/default/web', 'Service/backends/shared', 'ReferenceGrant/backends/*']));
  await store.putRecord(routeRecord('other', ['Service/default/other']));
  const audited = parseAuditEventList(
    JSON.stringify(
      auditEventList(
        { resource: 'services', name: 'web' },
        { ...GW, version: 'v1beta1', resource: 'referencegrants', name: 'any-grant', namespace: 'backends' },
        { resource: 'services', name: 'unused' },
      ),
    ),
  );
  const items = await resolveDependents(store, audited);
  const scope = collect(items).scope;
  t.same(
    scope.cluster?.map((r) => `${r.kind.kind}/${r.namespace}/${r.name}`),
    ['HTTPRoute/default/web'],
    'the route backed by the Service, and the one whose backend crosses into the grant’s namespace (whatever the grant is called)',
  );
  t.same(collect(items).ignored, { 'no resource uses it': 1 }, 'a Service no route uses runs nothing');
});

t.test('settings: GATEWAY_CONTROLLER_NAME, GATEWAY_ADDRESSES, GATEWAY_HTTP_PORT and GATEWAY_HTTPS_PORT', async (t) => {
  const base = MINIMAL_ENV;
  const problems = configProblems;
  t.same(loadConfig(base).gatewayApi, { controllerName: 'tyk.io/gateway-reconciler', addresses: [], httpPort: 0, httpsPort: 8443 });
  t.same(
    loadConfig({ ...base, GATEWAY_CONTROLLER_NAME: 'example.com/tyk', GATEWAY_ADDRESSES: '203.0.113.7, gw.example.com,2001:db8::1', GATEWAY_HTTP_PORT: '8081', GATEWAY_HTTPS_PORT: '0' }).gatewayApi,
    {
      controllerName: 'example.com/tyk',
      addresses: ['203.0.113.7', 'gw.example.com', '2001:db8::1'],
      httpPort: 8081,
      httpsPort: 0,
    },
  );
  t.same(problems({ ...base, GATEWAY_HTTPS_PORT: '70000' }), ['GATEWAY_HTTPS_PORT: must be a whole number from 0 to 65535, got "70000"']);
  t.same(problems({ ...base, GATEWAY_HTTP_PORT: 'http' }), ['GATEWAY_HTTP_PORT: must be a whole number from 0 to 65535, got "http"']);
  t.match(problems({ ...base, GATEWAY_CONTROLLER_NAME: 'no-slash' }), [/^GATEWAY_CONTROLLER_NAME: must be a domain-prefixed path/]);
  t.same(problems({ ...base, GATEWAY_ADDRESSES: 'ok.example.com,not an address' }), ['GATEWAY_ADDRESSES: "not an address" is not an IP address or a hostname']);
});
