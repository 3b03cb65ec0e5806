import t from 'tap';
import { parseAuditEventList } from '../../lib/events/audit.js';
import { collect } from '../../lib/events/refs.js';
import { parseWatchEvents } from '../../lib/events/watch.js';
import { BadRequestError } from '../../lib/platform/errors.js';
import { apiDefinition } from '../fixtures/builders.js';

const api = (name: string, ns = 'default') => apiDefinition(name).inNamespace(ns).build();
const names = (refs: readonly { namespace: string; name: string }[] | undefined) => (refs ?? []).map((r) => `${r.namespace}/${r.name}`).sort();

t.test('watch: single, array, and newline-delimited; duplicates coalesce', async (t) => {
  const one = collect(parseWatchEvents(JSON.stringify({ type: 'ADDED', object: api('a') })));
  t.same(names(one.scope.refs), ['default/a']);
  const arr = collect(
    parseWatchEvents(
      JSON.stringify([
        { type: 'ADDED', object: api('a') },
        { type: 'MODIFIED', object: api('a') },
        { type: 'DELETED', object: api('b', 'x') },
      ]),
    ),
  );
  t.same(names(arr.scope.refs), ['default/a', 'x/b']);
  t.equal(arr.accepted, 3);
  const nd = collect(
    parseWatchEvents(
      `${[
        { type: 'ADDED', object: api('a') },
        { type: 'BOOKMARK', object: { metadata: { resourceVersion: '5' } } },
        { type: 'MODIFIED', object: api('c') },
      ]
        .map((e) => JSON.stringify(e))
        .join('\n')}\n`,
    ),
  );
  t.same(names(nd.scope.refs), ['default/a', 'default/c']);
  t.same(nd.ignored, { bookmark: 1 });
});

t.test('watch: other kinds and errors are counted, not taken', async (t) => {
  const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'default' } };
  const r = collect(
    parseWatchEvents(
      JSON.stringify([
        { type: 'ADDED', object: pod },
        { type: 'ERROR', object: { kind: 'Status', code: 410 } },
      ]),
    ),
  );
  t.same(r.scope.refs, []);
  t.same(r.ignored, { 'kind not reconciled': 2 - 1, 'watch error': 1 });
  // a tyk.tyk.io kind this version does not reconcile (a made-up one: every Tyk Operator kind is taken or planned)
  const future = { apiVersion: 'tyk.tyk.io/v1alpha1', kind: 'TykFutureKind', metadata: { name: 'p', namespace: 'default' } };
  t.same(collect(parseWatchEvents(JSON.stringify({ type: 'ADDED', object: future }))).ignored, { 'kind not reconciled': 1 });
  // the developer portal's kinds are taken
  const portal = { apiVersion: 'tyk.tyk.io/v1alpha1', kind: 'PortalConfig', metadata: { name: 'p', namespace: 'default' } };
  t.match(collect(parseWatchEvents(JSON.stringify({ type: 'ADDED', object: portal }))).scope.refs, [{ kind: { kind: 'PortalConfig' }, namespace: 'default', name: 'p' }]);
});

t.test('watch: malformed bodies are 400s that say what is wrong', async (t) => {
  const bad = (body: string, re: RegExp) => t.throws(() => parseWatchEvents(body), { name: BadRequestError.name, message: re });
  bad('', /empty body/);
  bad('{"type":"ADDED"}\nnot json', /line 2 is not JSON/);
  bad(JSON.stringify({ type: 'NOPE', object: {} }), /not a WatchEvent/);
  bad(JSON.stringify({ type: 'ADDED' }), /event 1: a ADDED event needs an object with apiVersion, kind and metadata/);
  bad(JSON.stringify({ type: 'MODIFIED', object: { metadata: { name: 'x' } } }), /a MODIFIED event needs an object/);
  bad(JSON.stringify({ type: 'ADDED', object: { apiVersion: 'tyk.tyk.io/v1alpha1', kind: 'ApiDefinition', metadata: { name: 'x' } } }), /name and namespace are required/);
  bad('[1]', /event 1: not a WatchEvent/);
});

function auditEvent(over: Record<string, unknown> = {}, ref: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    level: 'Metadata',
    auditID: 'id-1',
    stage: 'ResponseComplete',
    requestURI: '/apis/tyk.tyk.io/v1alpha1/namespaces/default/apidefinitions/httpbin',
    verb: 'update',
    user: { username: 'kubernetes-admin' },
    objectRef: { resource: 'apidefinitions', namespace: 'default', name: 'httpbin', apiGroup: 'tyk.tyk.io', apiVersion: 'v1alpha1', ...ref },
    responseStatus: { metadata: {}, code: 200 },
    ...over,
  };
}
const eventList = (items: unknown[]) => JSON.stringify({ kind: 'EventList', apiVersion: 'audit.k8s.io/v1', metadata: {}, items });

t.test('audit: takes completed writes of tyk.tyk.io resources', async (t) => {
  const r = collect(parseAuditEventList(eventList([auditEvent(), auditEvent({ verb: 'delete' }, { name: 'other' }), auditEvent({ auditID: 'x' })])));
  t.same(names(r.scope.refs), ['default/httpbin', 'default/other']);
  t.equal(r.accepted, 3);
  const portal = collect(
    parseAuditEventList(eventList(['apidescriptions', 'portalapicatalogues', 'portalconfigs'].map((resource, i) => auditEvent({ auditID: `p${i}` }, { resource, name: `n${i}` })))),
  );
  t.same(
    portal.scope.refs?.map((r) => `${r.kind.kind}/${r.name}`),
    ['APIDescription/n0', 'PortalAPICatalogue/n1', 'PortalConfig/n2'],
    "the developer portal's kinds are taken too",
  );
});

t.test('audit: skips what must not trigger a run, counting why', async (t) => {
  const r = collect(
    parseAuditEventList(
      eventList([
        auditEvent({ stage: 'RequestReceived' }),
        auditEvent({}, { subresource: 'status' }),
        auditEvent({ responseStatus: { code: 409 } }),
        auditEvent({ requestURI: '/apis/tyk.tyk.io/v1alpha1/namespaces/default/apidefinitions/httpbin?dryRun=All' }),
        auditEvent({ verb: 'get' }),
        auditEvent({}, { apiGroup: '', resource: 'pods' }),
        auditEvent({}, { resource: 'tykfuturekinds' }),
        auditEvent({}, { namespace: undefined }),
      ]),
    ),
  );
  t.same(r.scope.refs, []);
  t.same(r.ignored, {
    'stage not ResponseComplete': 1,
    'status subresource': 1,
    'request failed': 1,
    'dry run': 1,
    'read-only verb': 1,
    'kind not reconciled': 2,
    'no namespace': 1,
  });
});

t.test('audit: a create without a name takes it from responseObject, else covers the namespace', async (t) => {
  const withBody = auditEvent({ verb: 'create', responseObject: { metadata: { name: 'fromresp', namespace: 'default' } } }, { name: undefined });
  t.same(names(collect(parseAuditEventList(eventList([withBody]))).scope.refs), ['default/fromresp']);
  const bare = collect(parseAuditEventList(eventList([auditEvent({ verb: 'create' }, { name: undefined, namespace: 'team' })])));
  t.same(bare.scope.namespaces, ['team']);
  const coll = collect(parseAuditEventList(eventList([auditEvent({ verb: 'deletecollection' }, { name: undefined }), auditEvent()])));
  t.same(coll.scope.namespaces, ['default']);
  t.same(coll.scope.refs, [], 'refs inside a namespace-wide run are folded into it');
});

t.test('audit: malformed bodies are 400s that say what is wrong', async (t) => {
  const bad = (body: string, re: RegExp) => t.throws(() => parseAuditEventList(body), { name: BadRequestError.name, message: re });
  bad('nope', /not JSON/);
  bad('{}', /EventList with items/);
  bad(JSON.stringify({ kind: 'EventList', apiVersion: 'v1', items: [] }), /apiVersion audit.k8s.io/);
  bad(eventList([5]), /items\[0\]/);
});
