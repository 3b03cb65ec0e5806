/**
 * Events about SubGraphs and SuperGraphs, in every format: each is a dependency (the APIs whose
 * records use it run, through the store's uses index) and an object of ours (its own finalizer
 * and status), and a run's scope names it among the held objects. Core kinds keep their group.
 */
import t from 'tap';
import { parseAuditEventList } from '../../lib/events/audit.js';
import { cloudEventItems, parseCloudEvents } from '../../lib/events/cloudevents.js';
import { resolveDependents } from '../../lib/events/dependents.js';
import { collect, findDependencyKind } from '../../lib/events/refs.js';
import { parseWatchEvents } from '../../lib/events/watch.js';
import { MemoryStore } from '../../lib/store/memory.js';
import { auditEventList } from '../fixtures/audit.js';
import { recordFor, subGraph } from '../fixtures/builders.js';

t.test('findDependencyKind: by Kind or plural, in its own API group only', async (t) => {
  t.equal(findDependencyKind('subgraphs', 'tyk.tyk.io'), 'SubGraph');
  t.equal(findDependencyKind('SuperGraph', 'tyk.tyk.io'), 'SuperGraph');
  t.equal(findDependencyKind('secrets'), 'Secret');
  t.equal(findDependencyKind('subgraphs'), undefined, 'not a core kind');
  t.equal(findDependencyKind('secrets', 'tyk.tyk.io'), undefined, 'not a tyk.tyk.io kind');
  t.equal(findDependencyKind('apidefinitions', 'tyk.tyk.io'), undefined, 'an API is an object, not a dependency');
});

t.test('each format names a SubGraph or SuperGraph as a dependency', async (t) => {
  t.match(parseAuditEventList(JSON.stringify(auditEventList({ resource: 'subgraphs', apiGroup: 'tyk.tyk.io', name: 'users', namespace: 'team' }))), [
    { dependency: { kind: 'SubGraph', namespace: 'team', name: 'users' }, id: /^audit / },
  ]);
  const audited = parseAuditEventList(JSON.stringify(auditEventList({ resource: 'supergraphs', apiGroup: 'tyk.tyk.io', name: 'social' })));
  t.match(audited, [{ dependency: { kind: 'SuperGraph', namespace: 'default', name: 'social' } }]);
  const status = auditEventList({ resource: 'subgraphs', apiGroup: 'tyk.tyk.io', name: 'users' });
  (status.items[0]!.objectRef as Record<string, unknown>).subresource = 'status';
  t.match(parseAuditEventList(JSON.stringify(status)), [{ ignored: 'status subresource' }], 'our own status patches are not taken');
  t.match(parseWatchEvents(JSON.stringify({ type: 'MODIFIED', object: subGraph('users').build() })), [{ dependency: { kind: 'SubGraph', namespace: 'default', name: 'users' } }]);
  const argo = {
    type: 'UPDATE',
    group: 'tyk.tyk.io',
    version: 'v1alpha1',
    resource: 'supergraphs',
    body: { apiVersion: 'tyk.tyk.io/v1alpha1', kind: 'SuperGraph', metadata: { name: 'social', namespace: 'default' } },
  };
  t.match(parseWatchEvents(JSON.stringify(argo)), [{ dependency: { kind: 'SuperGraph', name: 'social' } }], 'an Argo Events resource event');
  const reference = parseCloudEvents({
    headers: { 'ce-specversion': '1.0', 'ce-id': '1', 'ce-source': 'src', 'ce-type': 'dev.knative.apiserver.ref.update', 'content-type': 'application/json' },
    body: JSON.stringify({ apiVersion: 'tyk.tyk.io/v1alpha1', kind: 'SubGraph', name: 'users', namespace: 'default' }),
  });
  t.match(cloudEventItems(reference), [{ dependency: { kind: 'SubGraph', name: 'users' }, id: 'ce src 1' }], 'a Knative reference');
  const bySubject = parseCloudEvents({
    headers: { 'ce-specversion': '1.0', 'ce-id': '2', 'ce-source': 'src', 'ce-type': 'x', 'ce-subject': '/apis/tyk.tyk.io/v1alpha1/namespaces/default/subgraphs/users' },
    body: '',
  });
  t.match(cloudEventItems(bySubject), [{ dependency: { kind: 'SubGraph', namespace: 'default', name: 'users' } }], 'by the subject alone');
});

t.test('a graph event runs the graph itself and every object whose record uses it; the scope holds it as a held object', async (t) => {
  const store = new MemoryStore();
  await store.putRecord({ ...recordFor('ApiDefinition', 'social').build(), uses: ['SuperGraph/default/social', 'SubGraph/default/users'] });
  await store.putRecord({ ...recordFor('ApiDefinition', 'users-api').build(), uses: ['SubGraph/default/users'] });
  await store.putRecord({ ...recordFor('ApiDefinition', 'other').build(), uses: ['SubGraph/default/posts'] });
  const items = await resolveDependents(store, [
    { id: 'a', dependency: { kind: 'SubGraph', namespace: 'default', name: 'users' } },
    { id: 'b', dependency: { kind: 'SuperGraph', namespace: 'default', name: 'lonely' } },
  ]);
  t.same(
    items,
    [
      { id: 'a', object: { kind: 'SubGraph', namespace: 'default', name: 'users' } },
      { id: 'a', object: { kind: 'ApiDefinition', namespace: 'default', name: 'social' } },
      { id: 'a', object: { kind: 'ApiDefinition', namespace: 'default', name: 'users-api' } },
      { id: 'b', object: { kind: 'SuperGraph', namespace: 'default', name: 'lonely' } },
    ],
    'a graph no record uses is still looked at itself (its finalizer), never "no resource uses it"',
  );
  const intake = collect(items);
  t.same(
    intake.scope.refs?.map((r) => `${r.kind.kind}/${r.name}`),
    ['ApiDefinition/social', 'ApiDefinition/users-api'],
  );
  t.same(
    intake.scope.cluster?.map((r) => `${r.kind.kind}/${r.namespace}/${r.name}`),
    ['SubGraph/default/users', 'SuperGraph/default/lonely'],
  );
  t.equal(intake.accepted, 4);
  t.notOk('cluster' in collect([{ object: { kind: 'ApiDefinition', namespace: 'default', name: 'x' } }]).scope, 'no cluster key when none is named');
  const folded = collect(items, { maxRefs: 3 });
  t.same(folded.scope, { refs: [], namespaces: ['default'] }, 'held objects count toward WEBHOOK_MAX_REFS and fold into their namespaces');
  t.equal(folded.folded, 'namespaces');
  const secret = await resolveDependents(store, [{ dependency: { kind: 'Secret', namespace: 'default', name: 'tls' } }]);
  t.same(secret, [{ ignored: 'no resource uses it' }], 'a Secret no record uses is still ignored');
});
