/**
 * The Ingress phase's edges, through whole Runs in process (test/fast/world.ts, MemoryKube):
 * dry runs and stops write nothing; a lock another run holds defers, a dirty mark runs again;
 * a failed write (finalizer, create, update, delete, finalizer removal) is reported, told and
 * retried by the next run, deleting nothing more; a create that races another run's is adopted,
 * one that races something else's is not; templates' finalizers and holds; scopes (namespaces,
 * WATCH_NAMESPACE, a 404 with a record, generated ApiDefinitions whose Ingress vanished).
 */
import t from 'tap';
import { runReconcile } from '../../lib/engine/run.js';
import type { RunReport } from '../../lib/engine/types.js';
import { API_DEFINITION } from '../../lib/kinds/api-definition/kind.js';
import { shortHash } from '../../lib/kinds/ingress/apis.js';
import { INGRESS, TEMPLATE_FINALIZER } from '../../lib/kinds/ingress/kind.js';
import type { KubeObject } from '../../lib/kube/types.js';
import { KubeConflictError } from '../../lib/platform/errors.js';
import { apiDefinition, INGRESS_FINALIZER, ingress } from '../fixtures/builders.js';
import { kubeFailure } from '../memory/kube.js';
import { FastWorld, reported } from './world.js';

const A = `default-web-${shortHash('/a')}`;
const B = `default-web-${shortHash('/b')}`;
const tpl = (name = 'tpl', active = true) =>
  apiDefinition(name)
    .template()
    .withSpec({ name, protocol: 'http', use_keyless: true, active, proxy: { target_url: 'http://example.com' } })
    .build();
const web = () => ingress('web').withClass('tyk').withTemplate('tpl').withRule('', '/a', 'web', 80);

function world(options: ConstructorParameters<typeof FastWorld>[0] = {}): FastWorld {
  const w = new FastWorld(options);
  w.apply(tpl());
  return w;
}

const generated = (w: FastWorld, name = 'web', namespace = 'default') => w.kube.objects(API_DEFINITION, namespace).filter((o) => o.metadata.labels?.['tyk.io/ingress'] === name);
const ingressReport = (r: RunReport, name = 'web', namespace = 'default') => reported(r, name, 'Ingress', namespace);
/** The paths of an Ingress's first rule. */
const pathsOf = (o: KubeObject): unknown[] => ((o.spec?.rules ?? []) as { http: { paths: unknown[] } }[])[0]?.http.paths ?? [];
const removeSecondPath = (o: KubeObject): KubeObject => ({ ...o, spec: { ...o.spec, rules: [{ http: { paths: pathsOf(o).slice(0, 1) } }] } });

t.test('a dry run plans and writes nothing; a stopping process defers', async (t) => {
  const w = world();
  w.apply(web().build());
  const dry = await w.run({ dryRun: true });
  t.match(ingressReport(dry), { action: 'CREATE', result: 'planned' });
  t.same(generated(w), []);
  t.same(w.get(INGRESS, 'web')?.metadata.finalizers, undefined, 'no finalizer');
  t.equal(await w.record(API_DEFINITION, 'x'), null);
  const stopping = await runReconcile({ ...w.deps, stop: { deadline: 0 } }, { trigger: 'schedule', scope: { all: true } });
  t.match(ingressReport(stopping), { result: 'deferred', reason: 'shutting down' });
  t.same(generated(w), []);
});

t.test('a lock another run holds defers; a dirty mark meanwhile runs it again', async (t) => {
  const w = world();
  w.apply(web().build());
  await w.store.lock('Ingress/default/web', 'other-run', 60_000);
  t.match(ingressReport(await w.run()), { result: 'deferred' });
  t.same(generated(w), [], 'the holder takes it up');
  await w.store.forceRelease('Ingress/default/web', 'other-run');

  // while the first pass creates, the Ingress gains a path and another run marks it dirty
  w.kube.inject({
    op: 'createObject',
    hook: async () => {
      const cur = w.get(INGRESS, 'web') as KubeObject;
      w.apply({
        ...cur,
        spec: {
          ...cur.spec,
          rules: [
            {
              http: {
                paths: [...pathsOf(cur), { path: '/b', pathType: 'Prefix', backend: { service: { name: 'web', port: { number: 80 } } } }],
              },
            },
          ],
        },
      });
      await w.store.lock('Ingress/default/web', 'late-event', 60_000);
    },
  });
  const report = await w.run();
  t.same(
    generated(w)
      .map((o) => o.metadata.name)
      .sort(),
    [A, B].sort(),
    'the second pass saw the new path',
  );
  t.match(ingressReport(report), { result: 'synced' });
  t.notOk(await w.locked('Ingress/default/web'), 'released');
});

t.test('a failed finalizer patch writes nothing else; the next run does it', async (t) => {
  const w = world();
  w.apply(web().build());
  w.kube.inject({ op: 'addFinalizer', kind: 'Ingress', error: () => kubeFailure({ status: 500 }, 'update finalizers of ingresses "web"') });
  const failed = await w.run();
  t.match(ingressReport(failed), { result: 'failed', reason: 'spec changed', error: /500/ });
  t.same(generated(w), [], 'nothing created without the finalizer');
  t.ok(
    w.kube.eventsAbout('Ingress', 'web').some((e) => e.type === 'Warning' && e.reason === 'SyncFailed'),
    'told',
  );
  t.match(ingressReport(await w.run()), { result: 'synced' });
  t.equal(generated(w).length, 1);
});

t.test('a create that races another run of ours is adopted; one that races something else is not overwritten', async (t) => {
  const w = world();
  w.apply(web().withRule('', '/b', 'web', 80).build());
  const labelled = (name: string, labels: Record<string, string>) => ({ ...apiDefinition(name).build(), metadata: { name, namespace: 'default', labels } });
  w.kube.inject({
    op: 'createObject',
    match: (c) => c.name === A,
    hook: () => {
      w.put(labelled(A, { 'tyk.io/ingress': 'web' }));
    },
    error: () => new KubeConflictError(409, `create apidefinitions "${A}": 409 already exists`, { context: { reason: 'AlreadyExists' } }),
  });
  w.kube.inject({
    op: 'createObject',
    match: (c) => c.name === B,
    hook: () => {
      w.put(labelled(B, { team: 'someone-else' }));
    },
    error: () => new KubeConflictError(409, `create apidefinitions "${B}": 409 already exists`, { context: { reason: 'AlreadyExists' } }),
  });
  const raced = await w.run();
  t.match(ingressReport(raced), { result: 'failed', code: 'INGRESS_NAME_TAKEN', error: new RegExp(`ApiDefinition default/${B} exists`) });
  t.same(w.api(B)?.metadata.labels, { team: 'someone-else' }, 'the other object is not written');
  const next = await w.run();
  t.match(w.api(A)?.metadata.ownerReferences, [{ kind: 'Ingress', name: 'web', controller: true }], 'the next run takes ours over: one update');
  t.match(ingressReport(next), { result: 'failed', code: 'INGRESS_NAME_TAKEN' });
});

t.test('a failed update or delete is retried by the next run; nothing else is deleted meanwhile', async (t) => {
  const w = world();
  w.apply(web().withRule('', '/b', 'web', 80).build());
  await w.run();
  w.updateSpec(API_DEFINITION, 'tpl', (s) => ({ ...s, active: false }));
  w.kube.inject({ op: 'replaceObject', match: (c) => c.name === A, error: () => kubeFailure({ status: 409 }, `update apidefinitions "${A}"`) });
  const first = await w.run();
  t.match(ingressReport(first), { result: 'failed', error: /409/ });
  t.equal(w.api(A)?.spec?.active, true, 'A not written');
  t.equal(w.api(B)?.spec?.active, false, 'B written');
  t.match(ingressReport(await w.run()), { action: 'UPDATE', result: 'synced' });
  t.equal(w.api(A)?.spec?.active, false);

  w.apply(removeSecondPath(w.get(INGRESS, 'web') as KubeObject));
  w.kube.inject({ op: 'deleteObject', error: () => kubeFailure({ status: 503 }, `delete apidefinitions "${B}"`) });
  t.match(ingressReport(await w.run()), { result: 'failed', error: /503/ });
  t.ok(w.api(B), 'still there');
  t.match(ingressReport(await w.run()), { result: 'synced' });
  t.equal(w.api(B), undefined, 'deleted by the next run');
});

t.test('deleting: a failed delete or finalizer removal keeps the finalizer and the record, for the next run', async (t) => {
  const w = world();
  w.apply(web().build());
  await w.run();
  w.delete(INGRESS, 'web');
  w.kube.inject({ op: 'deleteObject', error: () => kubeFailure({ status: 500 }, `delete apidefinitions "${A}"`) });
  const failed = await w.run();
  t.match(ingressReport(failed), { action: 'DELETE', result: 'failed' });
  t.same(w.get(INGRESS, 'web')?.metadata.finalizers, [INGRESS_FINALIZER], 'the finalizer stays');
  t.ok(
    w.kube.eventsAbout('Ingress', 'web').some((e) => e.reason === 'DeleteFailed'),
    'told',
  );
  w.kube.inject({ op: 'removeFinalizer', kind: 'Ingress', error: () => kubeFailure({ status: 500 }, 'update finalizers of ingresses "web"') });
  t.match(ingressReport(await w.run()), { action: 'DELETE', result: 'failed' });
  t.ok(await w.memoryStore.getRecords(['Ingress/default/web']).then(([r]) => r), 'the record stays');
  t.match(ingressReport(await w.run()), { action: 'DELETE', result: 'deleted' });
  t.equal(w.get(INGRESS, 'web'), undefined);
  t.same(await w.memoryStore.getRecords(['Ingress/default/web']), [null], 'the record goes');
});

t.test('templates: finalizer on, off when no longer a template; a deletion held while named or when the Ingresses cannot be listed', async (t) => {
  const w = world();
  w.apply(web().build());
  await w.run();
  t.same(w.api('tpl')?.metadata.finalizers, [TEMPLATE_FINALIZER]);
  w.delete(API_DEFINITION, 'tpl');
  w.kube.inject({ op: 'list', kind: 'Ingress', match: (c) => c.namespace === 'default', error: () => kubeFailure({ status: 500 }, 'list ingresses') });
  const held = await w.run({ trigger: 'watch', scope: { refs: [{ kind: API_DEFINITION, namespace: 'default', name: 'tpl' }] } });
  t.match(reported(held, 'tpl'), { action: 'WAIT', result: 'waiting', error: /could not be listed/ });
  // the Ingress switches to another template: the old one is let go in the same run
  w.apply(tpl('tpl2'));
  w.apply(web().withTemplate('tpl2').build());
  const switched = await w.run({ trigger: 'watch', scope: { cluster: [{ kind: INGRESS, namespace: 'default', name: 'web' }] } });
  t.match(reported(switched, 'tpl'), { action: 'DELETE', result: 'deleted' }, 'released by the run that re-pointed the Ingress');
  t.equal(w.api('tpl'), undefined);
  // tpl2 gets its finalizer from the next run that looks at it; labelled no more, it loses it
  await w.run();
  const cur = w.api('tpl2') as KubeObject;
  t.same(cur.metadata.finalizers, [TEMPLATE_FINALIZER]);
  w.apply({ ...cur, metadata: { ...cur.metadata, labels: {} } });
  await w.run();
  t.notOk(w.api('tpl2')?.metadata.finalizers?.includes(TEMPLATE_FINALIZER), 'a plain API now: no template finalizer');
  t.match(ingressReport(await w.run()), { action: 'WAIT', error: 'ApiDefinition default/tpl2 is not labelled template: "true"' });
});

t.test('a template finalizer that cannot be changed is logged; its deletion reported failed', async (t) => {
  const w = world();
  w.kube.inject({ op: 'addFinalizer', kind: 'ApiDefinition', error: () => kubeFailure({ status: 500 }, 'update finalizers of apidefinitions "tpl"') });
  const report = await w.run();
  t.match(reported(report, 'tpl'), { result: 'skipped' });
  t.ok(
    w.log.entries.some((e) => e.msg === 'template finalizer not changed'),
    'logged',
  );
  await w.run();
  w.delete(API_DEFINITION, 'tpl');
  w.kube.inject({ op: 'removeFinalizer', kind: 'ApiDefinition', error: () => kubeFailure({ status: 500 }, 'update finalizers of apidefinitions "tpl"') });
  t.match(reported(await w.run(), 'tpl'), { action: 'DELETE', result: 'failed', error: /500/ });
  t.match(reported(await w.run(), 'tpl'), { action: 'DELETE', result: 'deleted' });
});

t.test('scopes: a namespace run, WATCH_NAMESPACE, a 404 with a record, ApiDefinitions whose Ingress vanished', async (t) => {
  const w = world({ namespaces: ['default', 'team'] });
  w.apply(web().build());
  w.apply(ingress('elsewhere').inNamespace('other').withClass('tyk').withRule('', '/x', 'x', 80).build());
  const ns = await w.run({ trigger: 'resync', scope: { namespaces: ['default', 'other'] } });
  t.match(ingressReport(ns), { result: 'synced' });
  t.equal(ns.objects.filter((o) => o.kind === 'Ingress').length, 1, 'an unwatched namespace is not looked at');
  w.resetCounts();
  const named = await w.run({ trigger: 'watch', scope: { cluster: [{ kind: INGRESS, namespace: 'other', name: 'elsewhere' }] } });
  t.equal(w.kube.count('get', 'Ingress'), 0, 'a named Ingress in an unwatched namespace is not read');
  t.same(
    named.objects.filter((o) => o.kind === 'Ingress'),
    [],
  );

  // removed outright (its finalizer stripped): a run naming it deletes what it generated
  w.remove(INGRESS, 'web');
  const gone = await w.run({ trigger: 'watch', scope: { cluster: [{ kind: INGRESS, namespace: 'default', name: 'web' }] } });
  t.match(ingressReport(gone), { action: 'DELETE', reason: 'deleted in cluster', result: 'deleted' });
  t.same(generated(w), []);

  // removed outright, with a record: the full run confirms it gone and deletes what it generated
  w.apply(ingress('team-web').inNamespace('team').withClass('tyk').withRule('', '/t', 't', 80).build());
  await w.run();
  w.remove(INGRESS, 'team-web', 'team');
  const swept = await w.run();
  t.match(ingressReport(swept, 'team-web', 'team'), { action: 'DELETE', result: 'deleted' });
  t.same(generated(w, 'team-web', 'team'), [], 'found by the full run and deleted');

  // without a record either (a cluster without garbage collection): found beside an Ingress of ours
  w.apply(web().build());
  w.apply(ingress('old').withClass('tyk').withRule('', '/o', 'o', 80).build());
  await w.run();
  await w.memoryStore.deleteRecord('Ingress/default/old');
  w.remove(INGRESS, 'old');
  const orphans = await w.run();
  t.match(ingressReport(orphans, 'old'), { action: 'DELETE', result: 'deleted' });
  t.same(generated(w, 'old'), []);
});

t.test('failed reads: the Ingress listing, a named Ingress, its ApiDefinitions; nothing is written or deleted', async (t) => {
  const w = world();
  w.apply(web().withRule('', '/b', 'web', 80).build());
  await w.run();
  w.apply(removeSecondPath(w.get(INGRESS, 'web') as KubeObject));
  w.resetCounts();
  w.kube.inject({ op: 'list', kind: 'Ingress', error: () => kubeFailure({ status: 500 }, 'list ingresses') });
  const unlisted = await w.run();
  t.match(unlisted.errors, [{ stage: 'list ingresses', code: 'KUBE_API_ERROR' }]);
  t.equal(w.kube.count('deleteObject'), 0, 'nothing deleted');
  t.equal(generated(w).length, 2);
  t.match(ingressReport(await w.run({ trigger: 'watch', scope: { cluster: [{ kind: INGRESS, namespace: 'default', name: 'web' }] } })), { result: 'synced' });
  t.equal(generated(w).length, 1, 'a run that can read deletes the removed path');

  w.kube.inject({ op: 'get', kind: 'Ingress', error: () => kubeFailure({ unavailable: true }, 'get ingresses "web"') });
  t.match(ingressReport(await w.run({ trigger: 'watch', scope: { cluster: [{ kind: INGRESS, namespace: 'default', name: 'web' }] } })), {
    result: 'failed',
    reason: 'read failed',
    code: 'KUBE_UNAVAILABLE',
  });
  w.kube.inject({ op: 'list', kind: 'ApiDefinition', match: (c) => c.namespace === 'default', error: () => kubeFailure({ status: 500 }, 'list apidefinitions') });
  t.match(ingressReport(await w.run({ trigger: 'watch', scope: { cluster: [{ kind: INGRESS, namespace: 'default', name: 'web' }] } })), { result: 'failed', reason: 'read failed' });
  t.equal(generated(w).length, 1);
});

t.test('refused paths are invalid and told; an ApiDefinition being deleted is made again once gone; an Event that fails is logged', async (t) => {
  const w = world();
  w.apply(web().withRule('', '/named', 'web', 'http').build());
  const report = await w.run();
  t.match(ingressReport(report), { result: 'invalid', code: 'INGRESS_INVALID', error: /names its port \(http\)/ });
  t.ok(
    w.kube.eventsAbout('Ingress', 'web').some((e) => e.type === 'Warning' && e.reason === 'Invalid'),
    'told',
  );
  t.equal(generated(w).length, 1, 'the valid path is generated');

  // the generated ApiDefinition is being deleted (by hand), its own finalizer holding it
  const a = w.api(A) as KubeObject;
  w.put({ ...a, metadata: { ...a.metadata, finalizers: ['example.com/hold'], deletionTimestamp: '2026-01-01T00:00:00Z' } });
  w.apply(web().build());
  t.match(ingressReport(await w.run({ trigger: 'watch', scope: { cluster: [{ kind: INGRESS, namespace: 'default', name: 'web' }] } })), {
    result: 'waiting',
    error: new RegExp(`ApiDefinition default/${A} is being deleted`),
  });
  w.remove(API_DEFINITION, A);
  w.kube.inject({ op: 'recordEvent', kind: 'Ingress', times: Infinity, error: () => kubeFailure({ status: 403 }, 'create events') });
  t.match(ingressReport(await w.run({ trigger: 'watch', scope: { cluster: [{ kind: INGRESS, namespace: 'default', name: 'web' }] } })), { action: 'UPDATE', result: 'synced' });
  t.ok(w.api(A), 'made again');
  t.ok(
    w.log.entries.some((e) => e.msg === 'event not recorded'),
    'the refused Event is logged',
  );
});

t.test('dirty marks keep coming: the passes are bounded, the lock released', async (t) => {
  const w = world({ settings: { maxDirtyPasses: 2 } });
  w.apply(web().build());
  w.kube.inject({
    op: 'get',
    kind: 'Ingress',
    times: Infinity,
    hook: async () => {
      await w.store.lock('Ingress/default/web', `event-${Math.random()}`, 60_000);
    },
  });
  const report = await w.run();
  t.match(ingressReport(report), { result: /^(synced|unchanged)$/ });
  t.equal(w.kube.count('get', 'Ingress'), 2, 'two passes, then the mark is left for the next run');
  t.equal(generated(w).length, 1);
});
