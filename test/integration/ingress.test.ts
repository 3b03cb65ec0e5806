/**
 * Ingresses of our class end to end, through HTTP, with real Redis, our real clients and the
 * loopback gateway fake, against the fake API server (or, in the real tier, a real one): each
 * rule path becomes an ApiDefinition owned by the Ingress, then an API on the gateway routed by
 * the rule's host and path; a removed path, an edited template, a deleted Ingress each cost one
 * write per affected object; other classes are never touched; a template's deletion waits while
 * it is named; events about an Ingress or its template run exactly that Ingress; a steady state
 * writes nothing anywhere. A failed read: ingress-faults.test.ts (fake API server only).
 */
import t from 'tap';
import { shortHash } from '../../lib/kinds/ingress/apis.js';
import type { KubeObject } from '../../lib/kube/types.js';
import { auditEventList } from '../fixtures/audit.js';
import { apiDefinition, defaultIdOf, INGRESS_FINALIZER, ingress } from '../fixtures/builders.js';
import { clusterWrites, firstRuleOnly, generated, ingressesIn, nameOf, ORDERS, outcomes, PATHONLY, setUp, TEMPLATE_FINALIZER, template, web } from '../fixtures/ingress-world.js';
import { worldFor } from '../harness/world.js';

t.test('an Ingress with two paths: two ApiDefinitions owned by it, two APIs routed by host and path; then silence', async (t) => {
  const w = await setUp(t);
  const first = await w.tick();
  t.same(first.errors, [], 'no run-level error');
  t.match(
    first.objects.find((o) => o.kind === 'Ingress'),
    { name: 'web', action: 'CREATE', reason: 'created in cluster', result: 'synced' },
  );
  for (const n of [ORDERS, PATHONLY])
    t.match(
      first.objects.find((o) => o.name === n && o.kind === 'ApiDefinition'),
      { action: 'CREATE', result: 'synced', id: defaultIdOf(n) },
      `${n} synced in the same run`,
    );
  t.match(
    first.objects.find((o) => o.name === 'tpl'),
    { action: 'NOOP', reason: 'template', result: 'skipped' },
    'the template is never sent',
  );

  const ing = await w.get('web', 'default', 'ingresses');
  t.same(ing?.metadata.finalizers, [INGRESS_FINALIZER], "Tyk Operator's Ingress finalizer");
  const made = await generated(w);
  t.same(made.map((o) => o.metadata.name).sort(), [ORDERS, PATHONLY].sort(), 'one ApiDefinition per path, named as Tyk Operator named them');
  for (const o of made) {
    t.same(
      o.metadata.ownerReferences,
      [{ apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', name: 'web', uid: ing?.metadata.uid, controller: true, blockOwnerDeletion: true }],
      `${o.metadata.name} is owned by the Ingress`,
    );
    t.match(o.metadata.labels, { 'tyk.io/ingress': 'web', 'tyk.io/apidefinition': /^[0-9a-f]{9}$/ });
    t.notOk(o.metadata.labels?.template, 'not a template itself');
  }
  const tpl = await w.get('tpl');
  t.ok(tpl?.metadata.finalizers?.includes(TEMPLATE_FINALIZER), 'the template gets its finalizer');
  t.equal(w.gatewayApi(defaultIdOf('tpl')), undefined, 'the template is not on the gateway');

  // requests routed by host and path: each rule has exactly one API with its domain and listen path
  const apis = [...w.tyk.loaded('api').values()];
  t.equal(apis.length, 2, 'two APIs on the gateway');
  t.match(w.gatewayApi(defaultIdOf(ORDERS)), {
    name: ORDERS,
    domain: 'shop.example',
    proxy: { listen_path: '/orders', target_url: 'http://orders.default.svc:8080', strip_listen_path: true },
    use_keyless: true,
  });
  t.match(w.gatewayApi(defaultIdOf(PATHONLY)), { name: PATHONLY, proxy: { listen_path: '/pathonly', target_url: 'http://web.default.svc:80' } });
  t.notOk(w.gatewayApi(defaultIdOf(PATHONLY))?.domain, 'a rule without a host matches any host');
  for (const [host, path] of [
    ['shop.example', '/orders'],
    ['', '/pathonly'],
  ] as const)
    t.equal(apis.filter((a) => (a.domain ?? '') === host && (a.proxy as { listen_path?: string }).listen_path === path).length, 1, `${host || '*'}${path} is served by one API`);

  w.resetCounts();
  for (let i = 0; i < 10; i++) await w.tick();
  t.equal(w.tyk.writes(), 0, 'ten ticks: no gateway write');
  t.equal(w.statusPatches(), 0, 'no status patch');
  t.equal(clusterWrites(w), 0, 'no API-server write to ApiDefinitions or Ingresses');
  t.equal(w.eventWrites().creates + w.eventWrites().patches, 0, 'no Event');
});

t.test('a path removed: its ApiDefinition and its API go, in the run its audit event starts, and only that Ingress runs', async (t) => {
  const w = await setUp(t);
  await w.create(ingress('other').withClass('tyk').withRule('', '/other', 'other', 80).build());
  await w.tick();
  w.resetCounts();
  await w.update('web', firstRuleOnly, 'default', 'ingresses');
  const res = await w.audit(auditEventList({ resource: 'ingresses', apiGroup: 'networking.k8s.io', version: 'v1', name: 'web' }));
  t.equal(res.statusCode, 200);
  t.same(ingressesIn(res.body.report), ['web'], 'the audit event runs that Ingress, not the other');
  t.same(outcomes(res.body.report), [`ApiDefinition/${PATHONLY}:DELETE:deleted`, 'Ingress/web:UPDATE:synced']);
  t.same(
    (await generated(w)).map((o) => o.metadata.name),
    [ORDERS],
  );
  t.equal(w.gatewayApi(defaultIdOf(PATHONLY)), undefined, 'its API is gone from the gateway');
  t.ok(w.gatewayApi(defaultIdOf(ORDERS)), 'the other path stays');
  t.equal(w.tyk.writes(), 1, 'one gateway write: the delete');
  t.equal(w.kube.count('DELETE', /\/apidefinitions\/[^/]+$/), 1, 'one API-server delete');
  t.equal(w.kube.count('PUT', /\/apidefinitions\/[^/]+$/), 0, 'the path that stays is not rewritten');
});

t.test('the template edited: each generated API written once, by the run its audit event starts, for the Ingresses naming it only', async (t) => {
  const w = await setUp(t);
  await w.create(template('tpl2'));
  await w.create(ingress('other').withClass('tyk').withTemplate('tpl2').withRule('', '/other', 'other', 80).build());
  await w.tick();
  await w.updateSpec('tpl', (s) => ({ ...s, proxy: { ...(s.proxy as object), strip_listen_path: false } }));
  w.resetCounts();
  const res = await w.audit(auditEventList({ resource: 'apidefinitions', apiGroup: 'tyk.tyk.io', name: 'tpl' }));
  t.same(ingressesIn(res.body.report), ['web'], 'the Ingress naming the template, not the one naming another');
  t.same(outcomes(res.body.report), [`ApiDefinition/${ORDERS}:UPDATE:synced`, `ApiDefinition/${PATHONLY}:UPDATE:synced`, 'ApiDefinition/tpl:NOOP:skipped', 'Ingress/web:UPDATE:synced'].sort());
  t.equal(w.tyk.writes(), 2, 'each generated API written once');
  t.equal(w.kube.count('PUT', /\/apidefinitions\/[^/]+$/), 2, 'each generated ApiDefinition updated once');
  for (const n of [ORDERS, PATHONLY]) t.match(w.gatewayApi(defaultIdOf(n)), { proxy: { strip_listen_path: false } });
  const events = await w.events('web', 'default', 'Ingress');
  t.ok(
    events.some((e) => e.type === 'Normal' && e.reason === 'Synced' && e.message.includes('updated')),
    'kubectl describe ingress says what was updated',
  );
  w.resetCounts();
  await w.tick();
  t.equal(w.tyk.writes() + clusterWrites(w), 0, 'then silent');
});

t.test('an Ingress of another class is never touched', async (t) => {
  const w = await worldFor(t);
  await w.create(template());
  await w.create(ingress('nginx-web').withClass('nginx').withTemplate('tpl').withRule('', '/n', 'web', 80).build());
  await w.create(ingress('classless').withRule('', '/c', 'web', 80).build());
  w.resetCounts();
  const report = await w.tick();
  t.same(ingressesIn(report), [], 'not in the report');
  t.same(await generated(w, 'nginx-web'), [], 'no ApiDefinition');
  t.same((await w.get('nginx-web', 'default', 'ingresses'))?.metadata.finalizers, undefined, 'no finalizer');
  t.equal(w.kube.count('*', /\/ingresses\/[^/]+$/), 0, 'not even read one by one');
  t.equal(clusterWrites(w), 1, 'the only write: the template’s finalizer');
  t.equal(w.tyk.loaded('api').size, 0);
  t.equal((await w.events('nginx-web', 'default', 'Ingress')).length, 0, 'no Event');

  // spec.ingressClassName works as the annotation does
  await w.create(ingress('by-field').withClassName('tyk').withRule('', '/f', 'web', 80).build());
  const byField = await w.tick();
  t.match(
    byField.objects.find((o) => o.kind === 'Ingress'),
    { name: 'by-field', result: 'synced' },
  );
  t.equal((await generated(w, 'by-field')).length, 1, 'keyless default template');
});

t.test('the Ingress deleted: what it generated goes, from the cluster and the gateway, then its finalizer; the template is released', async (t) => {
  const w = await setUp(t);
  await w.tick();
  await w.delete('tpl');
  const held = await w.tick();
  t.match(
    held.objects.find((o) => o.name === 'tpl'),
    { action: 'WAIT', reason: 'referenced by ingresses', result: 'waiting', error: /still named by Ingress default\/web/ },
  );
  const tpl = await w.get('tpl');
  t.ok(tpl?.metadata.deletionTimestamp, 'the template waits in Terminating');
  t.ok(
    (await w.events('tpl')).some((e) => e.type === 'Warning' && e.reason === 'DeletionHeld' && e.message.includes('default/web')),
    'kubectl describe says which Ingress holds it',
  );
  t.equal((await generated(w)).length, 2, 'nothing generated is deleted while the template is going');

  await w.delete('web', 'default', 'ingresses');
  w.resetCounts();
  const gone = await w.tick();
  t.match(
    gone.objects.find((o) => o.kind === 'Ingress'),
    { name: 'web', action: 'DELETE', reason: 'deleted in cluster', result: 'deleted' },
  );
  for (const n of [ORDERS, PATHONLY])
    t.match(
      gone.objects.find((o) => o.name === n),
      { action: 'DELETE', result: 'deleted' },
      `${n} deleted from the gateway in the same run`,
    );
  t.same(await generated(w), [], 'no generated ApiDefinition left');
  t.equal(w.tyk.loaded('api').size, 0, 'no API left on the gateway');
  t.equal(await w.get('web', 'default', 'ingresses'), undefined, 'the Ingress is gone: its finalizer was removed');
  t.equal(await w.get('tpl'), undefined, 'the template, named no more, is gone too');
});

t.test('a missing template: the Ingress waits, says so in an Event, and nothing it generated is deleted', async (t) => {
  const w = await setUp(t);
  await w.tick();
  await w.update('web', (o) => ({ ...o, metadata: { ...o.metadata, annotations: { ...o.metadata.annotations, 'tyk.io/template': 'nope' } } }), 'default', 'ingresses');
  w.resetCounts();
  const report = await w.tick();
  t.match(
    report.objects.find((o) => o.kind === 'Ingress'),
    { action: 'WAIT', result: 'waiting', code: 'INGRESS_TEMPLATE', error: 'template ApiDefinition default/nope does not exist' },
  );
  t.equal((await generated(w)).length, 2, 'what it generated stays');
  t.equal(w.tyk.writes(), 0);
  t.equal(clusterWrites(w), 0);
  t.ok(
    (await w.events('web', 'default', 'Ingress')).some((e) => e.type === 'Warning' && e.reason === 'Waiting' && e.message.includes('default/nope')),
    'kubectl describe ingress says what it waits for',
  );
  // the template created: its event runs the waiting Ingress, which takes it up
  await w.create(template('nope', false));
  const res = await w.audit(auditEventList({ resource: 'apidefinitions', apiGroup: 'tyk.tyk.io', name: 'nope', verb: 'create' }));
  t.match(
    res.body.report?.objects.find((o) => o.kind === 'Ingress'),
    { name: 'web', action: 'UPDATE', result: 'synced' },
  );
  t.match(w.gatewayApi(defaultIdOf(ORDERS)), { proxy: { strip_listen_path: false } }, 'from the new template');
});

t.test('a name held by an ApiDefinition that is not ours is never overwritten', async (t) => {
  const w = await worldFor(t);
  await w.create(template());
  await w.create(apiDefinition(ORDERS).build());
  await w.create(web().build());
  const report = await w.tick();
  t.match(
    report.objects.find((o) => o.kind === 'Ingress'),
    { result: 'failed', code: 'INGRESS_NAME_TAKEN', error: new RegExp(`ApiDefinition default/${ORDERS} exists without the label tyk.io/ingress: web`) },
  );
  t.equal((await w.get(ORDERS))?.metadata.labels, undefined, 'the other object is as it was');
  t.match((await w.get(ORDERS))?.spec, { proxy: { listen_path: `/${ORDERS}` } }, 'its spec too');
  t.ok(
    (await generated(w)).some((o) => o.metadata.name === PATHONLY),
    'the other path is generated',
  );
  t.ok(
    (await w.events('web', 'default', 'Ingress')).some((e) => e.type === 'Warning' && e.reason === 'SyncFailed' && e.message.includes(ORDERS)),
    'a Warning names the taken ApiDefinition',
  );
});

t.test('what Tyk Operator generated is adopted: same names, labels and finalizers; one update each, nothing duplicated', async (t) => {
  const w = await worldFor(t);
  await w.create(template());
  const ing = await w.create(web().withFinalizer().build());
  // as Tyk Operator left it: its target URL form (.svc.cluster.local), its labels and ownerReference
  const operatorMade = (host: string, path: string, service: string, port: number): KubeObject => ({
    apiVersion: 'tyk.tyk.io/v1alpha1',
    kind: 'ApiDefinition',
    metadata: {
      name: nameOf('web', host, path),
      namespace: 'default',
      labels: { 'tyk.io/ingress': 'web', 'tyk.io/apidefinition': shortHash(host + path) },
      ownerReferences: [{ apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', name: 'web', uid: ing.metadata.uid, controller: true, blockOwnerDeletion: true }],
    },
    spec: {
      name: nameOf('web', host, path),
      protocol: 'http',
      use_keyless: true,
      active: true,
      proxy: { target_url: `http://${service}.default.svc.cluster.local:${port}`, listen_path: path, strip_listen_path: true },
      ...(host ? { domain: host } : {}),
    },
  });
  await w.create(operatorMade('shop.example', '/orders', 'orders', 8080));
  await w.create(operatorMade('', '/pathonly', 'web', 80));
  w.resetCounts();
  const report = await w.tick();
  t.match(
    report.objects.find((o) => o.kind === 'Ingress'),
    { action: 'UPDATE', reason: 'spec changed', result: 'synced' },
  );
  t.equal(w.kube.count('POST', /\/apidefinitions$/), 0, 'nothing created: adopted');
  t.equal(w.kube.count('PUT', /\/apidefinitions\/[^/]+$/), 2, 'one update each: the target URL form');
  t.equal(w.kube.count('PATCH', /\/ingresses\/web$/), 0, "Tyk Operator's finalizer is ours already");
  t.same(
    (await generated(w)).map((o) => String((o.spec?.proxy as Record<string, unknown> | undefined)?.target_url)).sort(),
    ['http://orders.default.svc:8080', 'http://web.default.svc:80'],
    'the target URLs in the short form',
  );
  t.equal(w.tyk.loaded('api').size, 2, 'two APIs, no duplicate');
});

t.test('an Ingress moved to another class: what it generated goes, its finalizer too, and then it is left alone', async (t) => {
  const w = await setUp(t);
  await w.tick();
  await w.update('web', (o) => ({ ...o, metadata: { ...o.metadata, annotations: { ...o.metadata.annotations, 'kubernetes.io/ingress.class': 'nginx' } } }), 'default', 'ingresses');
  const moved = await w.tick();
  t.match(
    moved.objects.find((o) => o.kind === 'Ingress'),
    { action: 'DELETE', reason: 'ingress class changed', result: 'deleted' },
  );
  t.same(await generated(w), [], 'its ApiDefinitions are gone');
  t.equal(w.tyk.loaded('api').size, 0, 'and their APIs');
  const ing = await w.get('web', 'default', 'ingresses');
  t.ok(ing, 'the Ingress stays');
  t.same(ing?.metadata.finalizers ?? [], [], 'without our finalizer');
  w.resetCounts();
  const after = await w.tick();
  t.same(ingressesIn(after), [], 'not ours any more: not reported');
  t.equal(clusterWrites(w), 0, 'nor touched');
});

t.test('a generated ApiDefinition edited by hand is put back by the run its event starts', async (t) => {
  const w = await setUp(t);
  await w.tick();
  await w.updateSpec(ORDERS, (s) => ({ ...s, proxy: { ...(s.proxy as object), target_url: 'http://elsewhere.example' } }));
  w.resetCounts();
  const res = await w.audit(auditEventList({ resource: 'apidefinitions', apiGroup: 'tyk.tyk.io', name: ORDERS }));
  t.same(ingressesIn(res.body.report), ['web'], 'its Ingress runs (the records’ index)');
  t.equal(w.kube.count('PUT', /\/apidefinitions\/[^/]+$/), 1, 'one write puts it back');
  t.match((await w.get(ORDERS))?.spec, { proxy: { target_url: 'http://orders.default.svc:8080' } });
  t.match(w.gatewayApi(defaultIdOf(ORDERS)), { proxy: { target_url: 'http://orders.default.svc:8080' } }, 'the gateway never saw the edit');
  t.equal(w.tyk.writes(), 0);
});
