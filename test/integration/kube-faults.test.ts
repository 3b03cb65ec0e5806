/**
 * Faults of the API server, injected into the fake (so these tests run only against it, not in
 * the real-API-server tier): a list that fails midway, a policy listing that fails. Neither may
 * cause a gateway delete (never delete on doubt).
 */
import t from 'tap';
import type { RunReport } from '../../lib/engine/run.js';
import { apiDefinition } from '../fixtures/builders.js';
import { reported, worldFor } from '../harness/world.js';

const idOf = (name: string, ns = 'default') => Buffer.from(`${ns}/${name}`).toString('base64url');

const world = worldFor;

const obj = (report: RunReport, kind: string, name: string) => reported(report, name, kind);

t.test('when the API server list fails midway, nothing is deleted', async (t) => {
  // paginate: the fake serves pages of the client's size; the second page will fail
  const w = await world(t, { settings: { getThreshold: 20 }, kubePageSize: 1 });
  for (const n of ['a', 'b', 'c']) await w.create(apiDefinition(n).build());
  await w.tick();
  t.equal(w.tyk.loaded('api').size, 3);
  w.kube.fake.inject({ method: 'GET', path: /\/apidefinitions$/, afterCalls: 1, status: 500, body: { kind: 'Status', code: 500, message: 'etcdserver: request timed out' } });
  w.resetCounts();
  const report = await w.tick();
  t.equal(report.errors.length, 1);
  t.match(report.errors[0], { stage: 'list apidefinitions', code: 'KUBE_API_ERROR' });
  t.equal(w.tyk.count('DELETE'), 0, 'no delete');
  t.equal(w.tyk.loaded('api').size, 3);
});

t.test('410 Expired mid-pagination, again and again: the run reports it and deletes nothing; once the API server recovers, it converges', async (t) => {
  const w = await world(t, { settings: { getThreshold: 1 }, kubePageSize: 1 });
  for (const n of ['a', 'b', 'c']) await w.create(apiDefinition(n).build());
  await w.tick();
  await w.delete('c');
  // every page after the first answers 410 (the continue token outlived etcd's compaction): the
  // client restarts the list twice, then gives up
  const expired = { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'Expired', code: 410, message: 'The provided continue parameter is too old to display a consistent list result.' };
  w.kube.fake.inject({ method: 'GET', path: /\/apidefinitions$/, match: (call) => call.query.continue !== undefined, status: 410, body: expired, times: Infinity });
  w.resetCounts();
  const report = await w.tick();
  t.match(report.errors, [{ stage: 'list apidefinitions', message: /410/ }]);
  t.equal(w.tyk.count('DELETE'), 0, 'no delete on a partial list');
  t.equal(w.tyk.loaded('api').size, 3);
  w.kube.fake.clearFaults();
  const healed = await w.tick();
  t.match(obj(healed, 'ApiDefinition', 'c'), { action: 'DELETE', result: 'deleted' }, 'the deletion the user asked for happens once the list is whole');
  t.equal(w.tyk.loaded('api').size, 2);
});

t.test('a policy listing that fails holds every API deletion (never delete on doubt)', async (t) => {
  const w = await world(t);
  await w.create(apiDefinition('a').build());
  await w.tick();
  await w.delete('a');
  w.kube.fake.inject({ method: 'GET', path: /securitypolicies$/, status: 500, times: Infinity });
  const report = await w.announce('MODIFIED', 'a');
  t.match(obj(report, 'ApiDefinition', 'a'), { result: 'waiting', error: /could not be listed/ });
  t.ok(w.gatewayApi(idOf('a')));
  w.kube.fake.clearFaults();
  t.match(obj(await w.tick(), 'ApiDefinition', 'a'), { result: 'deleted' });
});
