/**
 * OperatorContexts: resources go to the gateway their contextRef names (a second Tyk Gateway,
 * a Tyk Dashboard), move when it changes, and fail alone when their context is broken.
 */
import t from 'tap';
import type { RunReport } from '../../lib/engine/run.js';
import type { KubeObject } from '../../lib/kube/types.js';
import { DEFAULT_CRD_DIR } from '../fakes/crd-schema.js';
import { REFERENCE_GRANT_CRD } from '../fakes/kube-apiserver.js';
import { type FakeTykDashboard, startFakeTykDashboard } from '../fakes/tyk-dashboard.js';
import { type FakeTykGateway, startFakeTykGateway } from '../fakes/tyk-gateway.js';
import { apiDefinition } from '../fixtures/builders.js';
import { startWorld, type World } from '../harness/world.js';

const idOf = (name: string, ns = 'default') => Buffer.from(`${ns}/${name}`).toString('base64url');

interface Setup {
  w: World;
  ce2: FakeTykGateway;
  pro: FakeTykDashboard;
}

async function setup(t: { teardown(fn: () => unknown): void }): Promise<Setup> {
  // ReferenceGrants served; a grant's core group is "" (as kube-apiserver accepts it: scripts/kube-apiserver.sh)
  const w = await startWorld({ kube: { crds: [DEFAULT_CRD_DIR, REFERENCE_GRANT_CRD], emptyStringIsNull: false } });
  const ce2 = await startFakeTykGateway({ secret: 'second-gateway-secret' });
  const pro = await startFakeTykDashboard({ secret: 'dashboard-key-123' });
  t.teardown(async () => {
    await w.close();
    await Promise.all([ce2.close(), pro.close()]);
  });
  // a CE context with its connection in spec.env, a pro context with it in a Secret
  await w.create({
    apiVersion: 'tyk.tyk.io/v1alpha1',
    kind: 'OperatorContext',
    metadata: { name: 'ce2', namespace: 'default' },
    spec: { env: { mode: 'ce', url: ce2.url, auth: 'second-gateway-secret' } },
  });
  await w.create({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'dash-conf', namespace: 'tyk-system' },
    data: Object.fromEntries(Object.entries({ TYK_MODE: 'pro', TYK_URL: pro.url, TYK_AUTH: 'dashboard-key-123', TYK_ORG: pro.orgId }).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
  } as KubeObject);
  // the Secret is in another namespace: a ReferenceGrant there names it for the contexts of default
  await w.create({
    apiVersion: 'gateway.networking.k8s.io/v1beta1',
    kind: 'ReferenceGrant',
    metadata: { name: 'contexts-of-default', namespace: 'tyk-system' },
    spec: { from: [{ group: 'tyk.tyk.io', kind: 'OperatorContext', namespace: 'default' }], to: [{ group: '', kind: 'Secret', name: 'dash-conf' }] },
  });
  await w.create({ apiVersion: 'tyk.tyk.io/v1alpha1', kind: 'OperatorContext', metadata: { name: 'dash', namespace: 'default' }, spec: { secretRef: { name: 'dash-conf', namespace: 'tyk-system' } } });
  return { w, ce2, pro };
}

function obj(report: RunReport, kind: string, name: string) {
  const o = report.objects.find((x) => x.kind === kind && x.name === name);
  if (!o) throw new Error(`no report for ${kind} ${name}: ${JSON.stringify(report.objects)}`);
  return o;
}

const withContext = (name: string, context?: string) =>
  context
    ? apiDefinition(name)
        .patchSpec({ contextRef: { name: context, namespace: 'default' } })
        .build()
    : apiDefinition(name).build();

t.test('each context gets only its own resources; the default gateway the rest', async (t) => {
  const { w, ce2, pro } = await setup(t);
  await w.create(withContext('plain'));
  await w.create(withContext('on-ce2', 'ce2'));
  await w.create(withContext('on-dash', 'dash'));
  await w.create({
    apiVersion: 'tyk.tyk.io/v1alpha1',
    kind: 'SecurityPolicy',
    metadata: { name: 'dash-policy', namespace: 'default' },
    spec: { name: 'dash policy', state: 'active', active: true, contextRef: { name: 'dash' }, access_rights_array: [{ name: 'on-dash', namespace: 'default', versions: ['Default'] }] },
  });
  const report = await w.tick();
  t.match(obj(report, 'ApiDefinition', 'plain'), { gateway: 'default', result: 'synced' });
  t.match(obj(report, 'ApiDefinition', 'on-ce2'), { gateway: 'context:default/ce2', result: 'synced' });
  t.match(obj(report, 'ApiDefinition', 'on-dash'), { gateway: 'context:default/dash', result: 'synced' });
  t.match(obj(report, 'SecurityPolicy', 'dash-policy'), { gateway: 'context:default/dash', result: 'synced' });
  t.same([...w.tyk.loaded('api').keys()], [idOf('plain')]);
  t.same([...ce2.loaded('api').keys()], [idOf('on-ce2')]);
  t.same([...pro.apis().keys()], [idOf('on-dash')]);
  const [dashPolicy] = [...pro.policies().values()];
  t.match(dashPolicy, { id: idOf('dash-policy'), access_rights: { [idOf('on-dash')]: { api_id: idOf('on-dash') } } });
  t.match((await w.get('dash-policy', 'default', 'SecurityPolicy'))?.status, { pol_id: dashPolicy?._id }, 'pol_id is the Dashboard _id');
  t.equal(w.tyk.loaded('policy').size + ce2.loaded('policy').size, 0);
  t.notMatch(JSON.stringify(report), /dashboard-key-123|second-gateway-secret/, 'no secret in the report');

  ce2.resetCalls();
  pro.resetCalls();
  w.resetCounts();
  await w.tick();
  t.equal(w.tyk.writes() + ce2.writes() + pro.writes(), 0, 'steady state is silent on every gateway');
  t.equal(w.statusPatches(), 0);
});

t.test('a policy cannot link an API on another gateway: it waits, saying so', async (t) => {
  const { w } = await setup(t);
  await w.create(withContext('on-ce2', 'ce2'));
  await w.create({
    apiVersion: 'tyk.tyk.io/v1alpha1',
    kind: 'SecurityPolicy',
    metadata: { name: 'p', namespace: 'default' },
    spec: { name: 'p', state: 'active', active: true, access_rights_array: [{ name: 'on-ce2', namespace: 'default' }] },
  });
  const report = await w.tick();
  t.match(obj(report, 'SecurityPolicy', 'p'), { result: 'waiting', error: /on another gateway \(context:default\/ce2\)/ });
});

t.test('switching contextRef moves the resource: created on the new gateway, deleted from the old', async (t) => {
  const { w, ce2, pro } = await setup(t);
  await w.create(withContext('mover', 'ce2'));
  await w.tick();
  t.ok(ce2.loaded('api').has(idOf('mover')));
  await w.updateSpec('mover', (s) => ({ ...s, contextRef: { name: 'dash', namespace: 'default' } }));
  const moved = await w.announce('MODIFIED', 'mover');
  t.match(obj(moved, 'ApiDefinition', 'mover'), { reason: 'moved to another gateway', gateway: 'context:default/dash', result: 'synced' });
  t.ok(pro.apis().has(idOf('mover')), 'created on the new gateway');
  t.notOk(ce2.loaded('api').has(idOf('mover')), 'deleted from the old gateway');
  await w.updateSpec('mover', (s) => {
    const { contextRef: _drop, ...rest } = s;
    return rest;
  });
  await w.announce('MODIFIED', 'mover');
  t.ok(w.gatewayApi(idOf('mover')), 'and back to the default gateway');
  t.notOk(pro.apis().has(idOf('mover')));
  await w.delete('mover');
  const deleted = await w.announce('MODIFIED', 'mover');
  t.match(obj(deleted, 'ApiDefinition', 'mover'), { result: 'deleted' });
  t.equal(w.gatewayApi(idOf('mover')), undefined);
});

t.test('a missing context or an unreadable Secret fails only the resources that use it', async (t) => {
  const { w } = await setup(t);
  await w.create(withContext('fine'));
  await w.create(withContext('lost', 'nope'));
  await w.create({ apiVersion: 'tyk.tyk.io/v1alpha1', kind: 'OperatorContext', metadata: { name: 'nosecret', namespace: 'default' }, spec: { secretRef: { name: 'missing' } } });
  await w.create(withContext('orphaned', 'nosecret'));
  await w.create({ apiVersion: 'tyk.tyk.io/v1alpha1', kind: 'OperatorContext', metadata: { name: 'nourl', namespace: 'default' }, spec: { env: { url: ' ', auth: 'k' } } });
  await w.create(withContext('adrift', 'nourl'));
  const report = await w.tick();
  t.match(obj(report, 'ApiDefinition', 'adrift'), { result: 'failed', error: /^OperatorContext default\/nourl: spec\.env\.url \(or TYK_URL in its Secret\) is required/ });
  t.match(obj(report, 'ApiDefinition', 'fine'), { result: 'synced' });
  t.match(obj(report, 'ApiDefinition', 'lost'), { result: 'failed', reason: 'gateway unavailable', error: 'OperatorContext default/nope not found' });
  t.match(obj(report, 'ApiDefinition', 'orphaned'), { result: 'failed', error: 'OperatorContext default/nosecret: Secret default/missing not found' });
  t.match((await w.get('lost'))?.status, { latestTransaction: { status: 'Failed', error: 'OperatorContext default/nope not found' } });
  t.equal((await w.get('lost'))?.status?.api_id, Buffer.from('default/lost').toString('base64url'), 'an API id is known without its gateway (never sent as "")');
  w.resetCounts();
  await w.tick();
  t.equal(w.statusPatches(), 0, 'said once');
  await w.create({ apiVersion: 'tyk.tyk.io/v1alpha1', kind: 'OperatorContext', metadata: { name: 'nope', namespace: 'default' }, spec: { env: { url: w.tyk.url, auth: w.tyk.secret } } });
  const fixed = await w.tick();
  t.match(obj(fixed, 'ApiDefinition', 'lost'), { result: 'synced' }, 'retried as soon as the context exists');
});
