/**
 * TYK_MODE=pro: the same guarantees against the Tyk Dashboard as against the Tyk Gateway —
 * exactly one write per change, silent steady state, drift restored, deletion, dry run — plus
 * policies under the Dashboard's own _id. Every test runs against each documented way a
 * Dashboard answers (DASHBOARD_VARIANTS: an unknown API id answered 400 or 404, policy paths by
 * _id or also by id, empty lists null or []), including runs scoped to one object, which see
 * the Dashboard's answer for an id it does not have.
 */
import t from 'tap';
import type { RunReport } from '../../lib/engine/run.js';
import type { KubeObject } from '../../lib/kube/types.js';
import { DASHBOARD_VARIANTS, type FakeTykDashboard, type FakeTykDashboardOptions } from '../fakes/tyk-dashboard.js';
import { apiDefinition } from '../fixtures/builders.js';
import { startWorld, type World } from '../harness/world.js';

const idOf = (name: string, ns = 'default') => Buffer.from(`${ns}/${name}`).toString('base64url');
const OBJECT_ID = /^[0-9a-f]{24}$/;

type ProWorld = World & { dash: FakeTykDashboard };

async function proWorld(t: { teardown(fn: () => unknown): void }, dashboard: FakeTykDashboardOptions, env: Record<string, string> = {}): Promise<ProWorld> {
  const w = await startWorld({ mode: 'pro', dashboard, env });
  t.teardown(() => w.close());
  return Object.assign(w, { dash: w.dashboard! });
}

function obj(report: RunReport, name: string, kind = 'ApiDefinition') {
  const o = report.objects.find((x) => x.name === name && x.kind === kind);
  if (!o) throw new Error(`no report for ${name}: ${JSON.stringify(report.objects)}`);
  return o;
}

function securityPolicy(name: string, apis: string[], extra: Record<string, unknown> = {}): KubeObject {
  return {
    apiVersion: 'tyk.tyk.io/v1alpha1',
    kind: 'SecurityPolicy',
    metadata: { name, namespace: 'default' },
    spec: { name, state: 'active', active: true, access_rights_array: apis.map((a) => ({ name: a, namespace: 'default', versions: ['Default'] })), ...extra },
  };
}

/** A run scoped to one object, as POST /resync {kind, namespace, name} starts it. */
async function resyncOne(w: World, name: string, kind = 'ApiDefinition'): Promise<RunReport> {
  const res = await w.resync({ kind, namespace: 'default', name });
  if (res.statusCode !== 200) throw new Error(`resync answered ${res.statusCode}: ${JSON.stringify(res.body)}`);
  return res.body;
}

/** What the Dashboard holds, as a client that is not ours would create it. */
async function seed(d: FakeTykDashboard, path: '/api/apis' | '/api/portal/policies', body: unknown): Promise<{ Meta: string | null; Message: string }> {
  const res = await fetch(d.url + path, { method: 'POST', headers: { authorization: d.secret }, body: JSON.stringify(body) });
  if (res.status !== 200) throw new Error(`seed ${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as { Meta: string | null; Message: string };
}

function midOf(d: FakeTykDashboard, id: string): string {
  for (const [mid, p] of d.policies()) if (p.id === id) return mid;
  throw new Error(`no policy ${id}`);
}

for (const variant of DASHBOARD_VARIANTS) {
  const unknownStatus = variant.options.unknownApi === '404' ? 404 : 400;

  t.test(`pro mode against a Dashboard: ${variant.name}`, async (t) => {
    const world = (tt: { teardown(fn: () => unknown): void }) => proWorld(tt, variant.options);

    t.test('an ApiDefinition new to the Dashboard is created by a run scoped to it (resync or watch event)', async (t) => {
      const w = await world(t);
      await w.create(apiDefinition('first').build());
      const viaResync = await resyncOne(w, 'first');
      t.match(obj(viaResync, 'first'), { action: 'CREATE', reason: 'created in cluster', result: 'synced', id: idOf('first') });
      t.equal(viaResync.objects.length, 1, 'that object only');
      t.equal(w.dash.calls.find((c) => c.method === 'GET' && c.path === `/api/apis/${idOf('first')}`)?.status, unknownStatus, `the Dashboard answered the unknown id with ${unknownStatus}`);
      t.match(w.dash.apis().get(idOf('first')), { api_id: idOf('first'), name: 'first', org_id: w.dash.orgId });
      t.match((await w.get('first'))?.status, { api_id: idOf('first'), latestTransaction: { status: 'Successful' } });
      t.ok((await w.get('first'))?.metadata.finalizers?.includes('finalizers.tyk.io/apidefinition'), 'finalizer added');

      await w.create(apiDefinition('second').build());
      const viaWatch = await w.announce('ADDED', 'second');
      t.match(obj(viaWatch, 'second'), { action: 'CREATE', result: 'synced' });
      t.ok(w.dash.apis().has(idOf('second')), 'created by a watch event naming it');

      await w.create(apiDefinition('third').build());
      const anyKind = await w.resync({ namespace: 'default', name: 'third' });
      t.match(obj(anyKind.body, 'third'), { action: 'CREATE', result: 'synced' }, 'resync without a kind');
      t.equal(w.dash.apis().size, 3, 'one API each, no duplicates');

      w.dash.resetCalls();
      w.resetCounts();
      t.match(obj(await resyncOne(w, 'first'), 'first'), { action: 'NOOP', reason: 'unchanged', result: 'unchanged' });
      t.equal(w.dash.writes(), 0, 'the same run again writes nothing');
      t.equal(w.statusPatches(), 0);
    });

    t.test('created, one write per change, silent steady state', async (t) => {
      const w = await world(t);
      await w.create(apiDefinition('httpbin').build());
      const created = await w.announce('ADDED', 'httpbin');
      t.match(obj(created, 'httpbin'), { action: 'CREATE', result: 'synced', id: idOf('httpbin') });
      t.equal(created.gateway.reloads, 0, 'the Dashboard needs no reload');

      w.dash.resetCalls();
      await w.updateSpec('httpbin', (s) => ({ ...s, name: 'renamed' }));
      t.match(obj(await w.announce('MODIFIED', 'httpbin'), 'httpbin'), { reason: 'spec changed', result: 'synced' });
      t.equal(w.dash.writes(), 1, 'exactly one write');
      t.equal(w.dash.apis().get(idOf('httpbin'))?.name, 'renamed');
      w.dash.resetCalls();
      await w.announce('MODIFIED', 'httpbin');
      t.equal(w.dash.writes(), 0, 'the same event again writes nothing');
      w.resetCounts();
      for (let i = 0; i < 10; i++) await w.tick();
      t.equal(w.dash.writes(), 0, 'ten ticks, no write');
      t.equal(w.statusPatches(), 0, 'ten ticks, no status patch');
    });

    t.test('adopted: an API and a policy the Dashboard already has under our ids are updated in place by scoped runs', async (t) => {
      // a migration from Tyk Operator: a policy made elsewhere is adopted under the id its resource names
      const w = await proWorld(t, variant.options, { ADOPT_NAMESPACES: '*' });
      const made = await seed(w.dash, '/api/apis', { api_definition: { name: 'made by tyk operator', api_id: idOf('a'), proxy: { listen_path: '/old/' } } });
      const theirs = await seed(w.dash, '/api/portal/policies', { id: idOf('p'), name: 'made by tyk operator', active: true });
      await w.create(apiDefinition('a').build());
      const api = await resyncOne(w, 'a');
      t.match(obj(api, 'a'), { action: 'UPDATE', reason: 'adopted from gateway', result: 'synced' });
      t.equal(w.dash.apis().size, 1, 'not duplicated');
      t.match(w.dash.apis().get(idOf('a')), { id: made.Meta, name: 'a', proxy: { listen_path: '/a' } }, 'the same API, now ours');

      await w.create(securityPolicy('p', ['a']));
      const pol = await resyncOne(w, 'p', 'SecurityPolicy');
      t.match(obj(pol, 'p', 'SecurityPolicy'), { action: 'UPDATE', reason: 'adopted from gateway', result: 'synced' });
      t.same([...w.dash.policies().keys()], [theirs.Message], 'not duplicated');
      t.match(w.dash.policies().get(theirs.Message), { id: idOf('p'), name: 'p', access_rights: { [idOf('a')]: { api_id: idOf('a') } } });
      t.match((await w.get('p', 'default', 'SecurityPolicy'))?.status, { pol_id: theirs.Message });

      // Tyk Operator's way to adopt a policy made elsewhere: spec.id set to its _id
      const ui = await seed(w.dash, '/api/portal/policies', { name: 'made in the UI', active: true });
      await w.create(securityPolicy('ui', ['a'], { id: ui.Message, name: 'made in the UI' }));
      t.match(obj(await resyncOne(w, 'ui', 'SecurityPolicy'), 'ui', 'SecurityPolicy'), { action: 'UPDATE', reason: 'adopted from gateway', result: 'synced' });
      t.equal(w.dash.policies().size, 2, 'not duplicated');
      t.match((await w.get('ui', 'default', 'SecurityPolicy'))?.status, { pol_id: ui.Message });

      w.dash.resetCalls();
      w.resetCounts();
      await w.tick();
      t.equal(w.dash.writes(), 0, 'then silent');
      t.equal(w.statusPatches(), 0);
    });

    t.test('drift, deletion behind our back and a lost database are restored', async (t) => {
      const w = await world(t);
      for (const n of ['a', 'b', 'c']) await w.create(apiDefinition(n).build());
      await w.tick();
      w.dash.resetCalls();
      w.dash.editApi(idOf('a'), (api) => {
        api.name = 'edited behind our back';
      });
      t.match(obj(await w.tick(), 'a'), { reason: 'drifted on gateway', result: 'synced' });
      t.equal(w.dash.writes(), 1);
      t.match(w.dash.apis().get(idOf('a')), { name: 'a' });
      w.dash.resetCalls();
      w.dash.removeApi(idOf('b'));
      t.match(obj(await resyncOne(w, 'b'), 'b'), { reason: 'missing on gateway', result: 'synced' }, 'found missing by a scoped run');
      t.equal(w.dash.writes(), 1);
      w.dash.wipe();
      w.dash.resetCalls();
      const back = await w.tick();
      t.equal(w.dash.apis().size, 3);
      t.equal(w.dash.writes(), 3, 'one write each');
      t.same(Object.values(back.counts), [3]);
    });

    t.test('deletion, and deletion of what is already gone', async (t) => {
      const w = await world(t);
      await w.create(apiDefinition('a').build());
      await w.create(apiDefinition('b').build());
      await w.tick();
      await w.delete('a');
      t.match(obj(await w.announce('MODIFIED', 'a'), 'a'), { action: 'DELETE', result: 'deleted' });
      t.notOk(w.dash.apis().has(idOf('a')));
      t.equal(await w.get('a'), undefined);
      w.dash.removeApi(idOf('b'));
      await w.delete('b');
      t.match(obj(await w.announce('MODIFIED', 'b'), 'b'), { reason: 'already gone', result: 'deleted' });
      t.equal(await w.get('b'), undefined);
      t.equal(w.dash.count('DELETE'), 1, 'nothing deleted for what was gone');
    });

    t.test('dry run writes nothing', async (t) => {
      const w = await world(t);
      await w.create(apiDefinition('a').build());
      w.dash.resetCalls();
      const res = await w.resync({ dryRun: true });
      t.match(res.body.objects, [{ name: 'a', action: 'CREATE', result: 'planned' }]);
      t.equal(w.dash.writes(), 0);
    });

    t.test('a SecurityPolicy: created by a scoped run with its _id in status.pol_id, updated in place, drift and loss restored, deleted', async (t) => {
      const w = await world(t);
      await w.create(apiDefinition('a').build());
      await w.tick();
      await w.create(securityPolicy('p', ['a']));
      const created = await resyncOne(w, 'p', 'SecurityPolicy');
      t.match(obj(created, 'p', 'SecurityPolicy'), { action: 'CREATE', result: 'synced', id: idOf('p') });
      const mid = midOf(w.dash, idOf('p'));
      t.match(mid, OBJECT_ID);
      t.match(w.dash.policies().get(mid), { id: idOf('p'), access_rights: { [idOf('a')]: { api_id: idOf('a') } } });
      t.match((await w.get('p', 'default', 'SecurityPolicy'))?.status, { pol_id: mid, linked_apis: [{ name: 'a', namespace: 'default' }] }, 'status.pol_id is the Dashboard’s _id');

      w.dash.resetCalls();
      w.resetCounts();
      for (let i = 0; i < 3; i++) await w.tick();
      t.equal(w.dash.writes(), 0, 'silent');
      t.equal(w.statusPatches(), 0);

      await w.updateSpec('p', (s) => ({ ...s, rate: 100, per: 60 }), 'default', 'SecurityPolicy');
      t.match(obj(await resyncOne(w, 'p', 'SecurityPolicy'), 'p', 'SecurityPolicy'), { action: 'UPDATE', reason: 'spec changed', result: 'synced' });
      t.equal(w.dash.writes(), 1, 'an edit is one write, in place');
      t.same([...w.dash.policies().keys()], [mid]);
      t.match(w.dash.policies().get(mid), { rate: 100 });

      w.dash.editPolicy(mid, (p) => {
        p.rate = 1;
      });
      w.dash.resetCalls();
      t.match(obj(await w.tick(), 'p', 'SecurityPolicy'), { reason: 'drifted on gateway', result: 'synced' });
      t.equal(w.dash.writes(), 1);
      t.match(w.dash.policies().get(mid), { rate: 100 });

      w.dash.removePolicy(mid);
      w.dash.resetCalls();
      t.match(obj(await resyncOne(w, 'p', 'SecurityPolicy'), 'p', 'SecurityPolicy'), { action: 'CREATE', reason: 'missing on gateway', result: 'synced' });
      t.equal(w.dash.writes(), 1);
      const recreated = midOf(w.dash, idOf('p'));
      t.not(recreated, mid);
      t.match((await w.get('p', 'default', 'SecurityPolicy'))?.status, { pol_id: recreated }, 'the new _id in status');

      await w.delete('p', 'default', 'SecurityPolicy');
      w.dash.resetCalls();
      t.match(obj(await resyncOne(w, 'p', 'SecurityPolicy'), 'p', 'SecurityPolicy'), { action: 'DELETE', result: 'deleted' });
      t.equal(w.dash.policies().size, 0);
      t.same(
        w.dash.calls.filter((c) => c.method === 'DELETE').map((c) => c.path),
        [`/api/portal/policies/${recreated}`],
        'deleted by its _id',
      );
      t.equal(await w.get('p', 'default', 'SecurityPolicy'), undefined, 'finalizer removed, object gone');

      await w.delete('a');
      t.match(obj(await resyncOne(w, 'a'), 'a'), { action: 'DELETE', result: 'deleted' }, 'its API goes too, once nothing references it');
      t.equal(w.dash.apis().size, 0);
    });
  });
}
