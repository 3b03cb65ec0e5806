/**
 * How Ingresses enter a run: every event format takes a networking.k8s.io Ingress (and only
 * that group's) into the scope's `cluster`; its status subresource and other groups' kinds of
 * that name are ignored; folding counts Ingresses too. And the settings: INGRESS_CLASS (Tyk
 * Operator's WATCH_INGRESS_CLASS as a fallback) and the ingress listen ports, validated.
 */
import t from 'tap';
import { parseAuditEventList } from '../../lib/events/audit.js';
import { cloudEventItems, parseCloudEvents } from '../../lib/events/cloudevents.js';
import { collect } from '../../lib/events/refs.js';
import { parseWatchEvents } from '../../lib/events/watch.js';
import { loadConfig } from '../../lib/platform/config.js';
import { auditEventList } from '../fixtures/audit.js';
import { ingress } from '../fixtures/builders.js';
import { configProblems, MINIMAL_ENV } from '../fixtures/config.js';

const ING = { resource: 'ingresses', apiGroup: 'networking.k8s.io', version: 'v1' };
const names = (refs: readonly { namespace: string; name: string }[] | undefined) => (refs ?? []).map((r) => `${r.namespace}/${r.name}`).sort();

t.test('audit: Ingress writes of networking.k8s.io only; not its status', async (t) => {
  const list = auditEventList(
    { ...ING, name: 'web' },
    { ...ING, name: 'shop', namespace: 'team' },
    { ...ING, name: 'web' },
    { resource: 'ingresses', apiGroup: 'extensions', name: 'old' },
    { resource: 'ingresses', apiGroup: 'tyk.tyk.io', name: 'x' },
  );
  const r = collect(parseAuditEventList(JSON.stringify(list)));
  t.same(names(r.scope.cluster), ['default/web', 'team/shop'], 'duplicates coalesce');
  t.same(r.scope.refs, [], 'no custom resource ref');
  t.equal(r.accepted, 3);
  t.same(r.ignored, { 'kind not reconciled': 2 }, 'extensions/v1beta1 and a tyk.tyk.io kind of that name are not ours');
  const status = auditEventList({ ...ING, name: 'web' });
  (status.items[0] as { objectRef: Record<string, unknown> }).objectRef.subresource = 'status';
  t.same(collect(parseAuditEventList(JSON.stringify(status))).ignored, { 'status subresource': 1 }, "a load balancer's status write runs nothing");
  const all = auditEventList({ ...ING, name: 'web', verb: 'deletecollection' });
  t.same(collect(parseAuditEventList(JSON.stringify(all))).scope.namespaces, ['default'], 'deletecollection: the namespace');
});

t.test('watch and Argo Events: a networking.k8s.io/v1 Ingress object', async (t) => {
  const obj = ingress('web').withClass('tyk').build();
  const r = collect(
    parseWatchEvents(
      JSON.stringify([
        { type: 'MODIFIED', object: obj },
        { type: 'ADDED', object: { ...obj, apiVersion: 'extensions/v1beta1' } },
        { type: 'ADDED', object: { ...obj, apiVersion: 'tyk.tyk.io/v1alpha1' } },
        { type: 'UPDATE', group: 'networking.k8s.io', version: 'v1', resource: 'ingresses', body: ingress('argo').build() },
        { type: 'UPDATE', group: 'extensions', version: 'v1beta1', resource: 'ingresses', body: { ...obj, apiVersion: 'extensions/v1beta1' } },
      ]),
    ),
  );
  t.same(names(r.scope.cluster), ['default/argo', 'default/web']);
  t.same(r.ignored, { 'kind not reconciled': 3 });
  t.throws(() => parseWatchEvents(JSON.stringify({ type: 'ADDED', object: { ...obj, metadata: { name: 'x' } } })), /name and namespace are required/);
});

t.test('CloudEvents: Knative references, objects and subjects', async (t) => {
  const ref = { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', name: 'web', namespace: 'default' };
  const binary = cloudEventItems(parseCloudEvents({ headers: { 'ce-specversion': '1.0', 'ce-id': '1', 'ce-source': 's', 'ce-type': 'dev.knative.apiserver.ref.update' }, body: JSON.stringify(ref) }));
  t.same(names(collect(binary).scope.cluster), ['default/web']);
  const subject = cloudEventItems([{ id: '2', source: 's', type: 't', subject: '/apis/networking.k8s.io/v1/namespaces/team/ingresses/shop', data: undefined }]);
  t.same(names(collect(subject).scope.cluster), ['team/shop']);
  const foreign = cloudEventItems([{ id: '3', source: 's', type: 't', subject: '/apis/tyk.tyk.io/v1alpha1/namespaces/team/ingresses/shop', data: undefined }]);
  t.same(collect(foreign).ignored, { 'kind not reconciled': 1 });
});

t.test('folding counts Ingresses with the other objects', async (t) => {
  const list = auditEventList({ ...ING, name: 'a' }, { ...ING, name: 'b', namespace: 'x' }, { resource: 'apidefinitions', apiGroup: 'tyk.tyk.io', name: 'c', namespace: 'x' });
  const folded = collect(parseAuditEventList(JSON.stringify(list)), { maxRefs: 2 });
  t.equal(folded.folded, 'namespaces');
  t.same([...(folded.scope.namespaces ?? [])].sort(), ['default', 'x'], 'three objects over two namespaces: two namespace-wide runs');
  t.same(folded.scope.cluster, undefined);
  const fits = collect(parseAuditEventList(JSON.stringify(list)), { maxRefs: 3 });
  t.same([names(fits.scope.cluster), names(fits.scope.refs)], [['default/a', 'x/b'], ['x/c']]);
});

t.test('settings: INGRESS_CLASS, WATCH_INGRESS_CLASS, the listen ports', async (t) => {
  const base = MINIMAL_ENV;
  const problems = configProblems;
  t.same(loadConfig(base).ingress, { className: 'tyk', httpPort: 0, httpsPort: 8443 }, "Tyk Operator's defaults");
  t.equal(loadConfig({ ...base, INGRESS_CLASS: 'internal' }).ingress.className, 'internal');
  t.equal(loadConfig({ ...base, WATCH_INGRESS_CLASS: 'legacy' }).ingress.className, 'legacy', "Tyk Operator's name, when INGRESS_CLASS is unset");
  t.equal(loadConfig({ ...base, INGRESS_CLASS: 'new', WATCH_INGRESS_CLASS: 'legacy' }).ingress.className, 'new', 'INGRESS_CLASS wins');
  t.same(problems({ ...base, INGRESS_CLASS: 'two words' }), [`INGRESS_CLASS: must be an ingress class name (letters, digits, '-', '_', '.', '/'; at most 253), got "two words"`]);
  t.match(problems({ ...base, WATCH_INGRESS_CLASS: '-x' }), [/^WATCH_INGRESS_CLASS: must be an ingress class name/], 'the setting named is the one given');
  t.same(loadConfig({ ...base, TYK_HTTP_INGRESS_PORT: '8080', TYK_HTTPS_INGRESS_PORT: '443' }).ingress, { className: 'tyk', httpPort: 8080, httpsPort: 443 });
  t.same(problems({ ...base, TYK_HTTPS_INGRESS_PORT: '0' }), ['TYK_HTTPS_INGRESS_PORT: must be a whole number from 1 to 65535, got "0"']);
});
