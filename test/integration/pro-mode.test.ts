/**
 * TYK_MODE=pro: the same guarantees against the Tyk Dashboard as against the Tyk Gateway —
 * exactly one write per change, silent steady state, drift restored, deletion, dry run — plus
 * policies under the Dashboard's own _id.
 */
import t from 'tap';
import type { RunReport } from '../../lib/reconcile/run.js';
import { apiDefinition } from '../fixtures/builders.js';
import type { FakeTykDashboard } from '../fakes/tyk-dashboard.js';
import { startWorld, type World } from '../harness/world.js';

const idOf = (name: string, ns = 'default') => Buffer.from(`${ns}/${name}`).toString('base64url');

async function world(t: { teardown(fn: () => unknown): void }): Promise<World & { dash: FakeTykDashboard }> {
  const w = await startWorld({ mode: 'pro' });
  t.teardown(() => w.close());
  return Object.assign(w, { dash: w.dashboard! });
}

function obj(report: RunReport, name: string, kind = 'ApiDefinition') {
  const o = report.objects.find((x) => x.name === name && x.kind === kind);
  if (!o) throw new Error(`no report for ${name}: ${JSON.stringify(report.objects)}`);
  return o;
}

t.test('pro: created, one write per change, silent steady state', async (t) => {
  const w = await world(t);
  await w.create(apiDefinition('httpbin').build());
  const created = await w.announce('ADDED', 'httpbin');
  t.match(obj(created, 'httpbin'), { action: 'CREATE', result: 'synced', id: idOf('httpbin') });
  t.match(w.dash.apis().get(idOf('httpbin')), { api_id: idOf('httpbin'), name: 'httpbin', org_id: w.dash.orgId });
  t.equal(created.gateway.reloads, 0, 'the Dashboard needs no reload');
  t.match((await w.get('httpbin'))?.status, { api_id: idOf('httpbin'), latestTransaction: { status: 'Successful' } });

  w.dash.resetCalls();
  await w.updateSpec('httpbin', (s) => ({ ...s, name: 'renamed' }));
  t.match(obj(await w.announce('MODIFIED', 'httpbin'), 'httpbin'), { reason: 'spec changed', result: 'synced' });
  t.equal(w.dash.writes(), 1, 'exactly one write');
  w.dash.resetCalls();
  await w.announce('MODIFIED', 'httpbin');
  t.equal(w.dash.writes(), 0, 'the same event again writes nothing');
  w.resetCounts();
  for (let i = 0; i < 10; i++) await w.tick();
  t.equal(w.dash.writes(), 0, 'ten ticks, no write');
  t.equal(w.statusPatches(), 0, 'ten ticks, no status patch');
});

t.test('pro: drift, deletion behind our back and a lost database are restored', async (t) => {
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
  t.match(obj(await w.tick(), 'b'), { reason: 'missing on gateway', result: 'synced' });
  t.equal(w.dash.writes(), 1);
  w.dash.wipe();
  w.dash.resetCalls();
  const back = await w.tick();
  t.equal(w.dash.apis().size, 3);
  t.equal(w.dash.writes(), 3, 'one write each');
  t.same(Object.values(back.counts), [3]);
});

t.test('pro: deletion, and deletion of what is already gone', async (t) => {
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
});

t.test('pro: dry run writes nothing', async (t) => {
  const w = await world(t);
  await w.create(apiDefinition('a').build());
  w.dash.resetCalls();
  const res = await w.resync({ dryRun: true });
  t.match(res.body.objects, [{ name: 'a', action: 'CREATE', result: 'planned' }]);
  t.equal(w.dash.writes(), 0);
});

t.test('pro: a policy is kept under the Dashboard _id, found again by our id, and silent after', async (t) => {
  const w = await world(t);
  await w.create(apiDefinition('a').build());
  await w.create({ apiVersion: 'tyk.tyk.io/v1alpha1', kind: 'SecurityPolicy', metadata: { name: 'p', namespace: 'default' }, spec: { name: 'p', state: 'active', active: true, access_rights_array: [{ name: 'a', versions: ['Default'] }] } });
  const report = await w.tick();
  t.match(obj(report, 'p', 'SecurityPolicy'), { result: 'synced', id: idOf('p') });
  const [stored] = [...w.dash.policies().values()];
  t.match(stored, { id: idOf('p'), access_rights: { [idOf('a')]: { api_id: idOf('a') } } });
  t.match((await w.get('p', 'default', 'SecurityPolicy'))?.status, { pol_id: stored?._id, linked_apis: [{ name: 'a', namespace: 'default' }] });
  w.dash.resetCalls();
  w.resetCounts();
  for (let i = 0; i < 3; i++) await w.tick();
  t.equal(w.dash.writes(), 0);
  t.equal(w.statusPatches(), 0);
  await w.updateSpec('p', (s) => ({ ...s, rate: 100, per: 60 }), 'default', 'SecurityPolicy');
  await w.tick();
  t.equal(w.dash.writes(), 1, 'an edit is one write, in place');
  t.equal(w.dash.policies().size, 1);
  t.match(w.dash.policies().get(stored?._id as string), { rate: 100 });
});
