/**
 * The life of an object through whole Runs, in process: each step with its exact gateway
 * writes and reloads (test/fast/world.ts: in-memory ports, MemoryStore, a stepping clock).
 */
import t from 'tap';
import type { JsonObject } from '../../lib/gateway/types.js';
import { API_DEFINITION } from '../../lib/kinds/api-definition/kind.js';
import { SECURITY_POLICY } from '../../lib/kinds/security-policy/kind.js';
import { OPERATOR_CONTEXT } from '../../lib/kube/kinds.js';
import { apiDefinition, defaultIdOf, FINALIZER, operatorContext, securityPolicy } from '../fixtures/builders.js';
import { type MemoryTykDashboard, MemoryTykGateway } from '../memory/gateway.js';
import { FastWorld, reported } from './world.js';

const HTTPBIN = defaultIdOf('httpbin');

function ce(w: FastWorld): MemoryTykGateway {
  if (!(w.gateway instanceof MemoryTykGateway)) throw new Error('not a Tyk Gateway');
  return w.gateway;
}

async function synced(names: string[]): Promise<FastWorld> {
  const w = new FastWorld();
  for (const n of names) w.apply(apiDefinition(n).build());
  await w.run();
  w.resetCounts();
  return w;
}

t.test('create: one write, one reload, finalizer, status and record; then a silent steady state', async (t) => {
  const w = new FastWorld();
  w.apply(apiDefinition('httpbin').build());
  const report = await w.run();
  t.match(reported(report, 'httpbin'), { action: 'CREATE', reason: 'created in cluster', result: 'synced', id: HTTPBIN, gateway: 'default' });
  t.same(report.gateway, { writes: 1, reloads: 1 });
  t.equal(w.gateway.count('upsert', 'api'), 1);
  t.match(ce(w).loaded('api').get(HTTPBIN), { api_id: HTTPBIN, name: 'httpbin', proxy: { listen_path: '/httpbin' } });
  t.same(w.api('httpbin')?.metadata.finalizers, [FINALIZER]);
  t.match(w.api('httpbin')?.status, { api_id: HTTPBIN, latestTransaction: { status: 'Successful' } });
  t.match(await w.record(API_DEFINITION, 'httpbin'), { result: 'synced', id: HTTPBIN, failures: 0, observedHash: /^m:[0-9a-f]{32}$/ });
  w.resetCounts();
  for (let i = 0; i < 3; i++) {
    const quiet = await w.run();
    t.match(reported(quiet, 'httpbin'), { action: 'NOOP', reason: 'unchanged', result: 'unchanged' });
    t.same(quiet.gateway, { writes: 0, reloads: 0 });
  }
  t.equal(w.kube.count('patchStatus') + w.kube.count('patchFinalizers') + w.kube.count('createEvent') + w.kube.count('patchEvent'), 0, 'no write to the cluster');
});

t.test('update: a spec change is one write and one reload', async (t) => {
  const w = await synced(['httpbin']);
  w.updateSpec(API_DEFINITION, 'httpbin', (s) => ({ ...s, proxy: { ...(s.proxy as JsonObject), target_url: 'http://example.com' } }));
  const report = await w.run();
  t.match(reported(report, 'httpbin'), { action: 'UPDATE', reason: 'spec changed', result: 'synced' });
  t.same(report.gateway, { writes: 1, reloads: 1 });
  t.match(ce(w).loaded('api').get(HTTPBIN), { proxy: { target_url: 'http://example.com' } });
  t.equal((await w.record(API_DEFINITION, 'httpbin'))?.generation, 2);
});

t.test('drift on the gateway is undone with one write', async (t) => {
  const w = await synced(['httpbin']);
  ce(w).tamper('api', HTTPBIN, (o) => {
    (o.proxy as JsonObject).target_url = 'http://evil.example';
  });
  const report = await w.run();
  t.match(reported(report, 'httpbin'), { action: 'UPDATE', reason: 'drifted on gateway', result: 'synced' });
  t.same(report.gateway, { writes: 1, reloads: 1 });
  t.match(ce(w).loaded('api').get(HTTPBIN), { proxy: { target_url: 'http://httpbin.org' } });
});

t.test('a gateway restart that lost everything is healed by one run: a write each, one reload', async (t) => {
  const w = await synced(['a', 'b', 'c']);
  ce(w).restart();
  const report = await w.run();
  for (const n of ['a', 'b', 'c']) t.match(reported(report, n), { action: 'CREATE', reason: 'missing on gateway', result: 'synced' });
  t.same(report.gateway, { writes: 3, reloads: 1 });
  t.equal(ce(w).loaded('api').size, 3);
});

t.test('delete with our finalizer: removed from the gateway, finalizer dropped, record gone', async (t) => {
  const w = await synced(['httpbin']);
  w.delete(API_DEFINITION, 'httpbin');
  t.ok(w.api('httpbin')?.metadata.deletionTimestamp, 'held by our finalizer');
  const report = await w.run();
  t.match(reported(report, 'httpbin'), { action: 'DELETE', reason: 'deleted in cluster', result: 'deleted' });
  t.same(report.gateway, { writes: 1, reloads: 1 });
  t.equal(w.gateway.count('remove', 'api'), 1);
  t.notOk(ce(w).loaded('api').has(HTTPBIN));
  t.equal(w.api('httpbin'), undefined, 'the last finalizer gone, the object is gone');
  t.equal(await w.record(API_DEFINITION, 'httpbin'), null);
  t.same((await w.run()).objects, [], 'nothing left to look at');
});

t.test('a deletion is held while a live policy references the API, and goes with the policy', async (t) => {
  const w = new FastWorld();
  w.apply(apiDefinition('httpbin').build());
  w.apply(securityPolicy('p').granting('httpbin').build());
  const first = await w.run();
  t.match(reported(first, 'p', 'SecurityPolicy'), { action: 'CREATE', result: 'synced' });
  t.same(first.gateway, { writes: 2, reloads: 2 }, 'API then policy, each phase settled');
  w.resetCounts();
  w.delete(API_DEFINITION, 'httpbin');
  const held = await w.run();
  t.match(reported(held, 'httpbin'), { action: 'WAIT', reason: 'referenced by policies', result: 'waiting', error: /still referenced by SecurityPolicy default\/p/ });
  t.same(held.gateway, { writes: 0, reloads: 0 });
  t.ok(ce(w).loaded('api').has(HTTPBIN), 'still on the gateway');
  t.match(w.api('httpbin'), { metadata: { deletionTimestamp: String, finalizers: [FINALIZER] }, status: { linked_by_policies: [{ namespace: 'default', name: 'p' }] } });
  w.delete(SECURITY_POLICY, 'p');
  const both = await w.run();
  t.match(reported(both, 'httpbin'), { action: 'DELETE', result: 'deleted' });
  t.match(reported(both, 'p', 'SecurityPolicy'), { action: 'DELETE', result: 'deleted' });
  t.same(both.gateway, { writes: 2, reloads: 2 });
  t.equal(w.api('httpbin'), undefined);
  t.equal(w.policy('p'), undefined);
});

t.test('an invalid spec is recorded and reported, nothing sent; unchanged, it is not patched again', async (t) => {
  const w = new FastWorld();
  w.apply(apiDefinition('bad').unsupported().build());
  const report = await w.run();
  t.match(reported(report, 'bad'), { action: 'NOOP', reason: 'invalid spec', result: 'invalid', error: /unsupported: graphql\.graph_ref/ });
  t.same(report.gateway, { writes: 0, reloads: 0 });
  t.match(await w.record(API_DEFINITION, 'bad'), { result: 'invalid', error: /unsupported/ });
  t.match(w.api('bad')?.status, { latestTransaction: { status: 'Failed', error: /unsupported/ } });
  w.resetCounts();
  const again = await w.run();
  t.match(reported(again, 'bad'), { reason: 'invalid spec unchanged', result: 'invalid' });
  t.equal(w.kube.count('patchStatus'), 0, 'no status patch');
  t.equal(w.gateway.writes(), 0);
});

t.test('a contextRef moved to another gateway: written there, removed here; two writes', async (t) => {
  const w = await synced(['httpbin']);
  const other = w.addGateway('http://gw2:8080', { secret: 's2' });
  w.apply(operatorContext('ctx').ce('http://gw2:8080', 's2').build());
  w.updateSpec(API_DEFINITION, 'httpbin', (s) => ({ ...s, contextRef: { name: 'ctx' } }));
  const report = await w.run();
  t.match(reported(report, 'httpbin'), { reason: 'moved to another gateway', result: 'synced', gateway: 'context:default/ctx' });
  t.same(report.gateway, { writes: 2, reloads: 2 }, 'one upsert there, one remove here, a reload each');
  t.equal(other.count('upsert', 'api'), 1);
  t.equal(w.gateway.count('remove', 'api'), 1);
  t.ok(other instanceof MemoryTykGateway && other.loaded('api').has(HTTPBIN));
  t.notOk(ce(w).loaded('api').has(HTTPBIN));
  t.equal((await w.record(API_DEFINITION, 'httpbin'))?.gateway, 'context:default/ctx');
  t.ok(w.get(OPERATOR_CONTEXT, 'ctx'));
});

t.test('a context whose gateway cannot be reached fails the object only', async (t) => {
  const w = new FastWorld();
  w.apply(operatorContext('ctx').ce('http://nowhere:8080', 's').build());
  w.apply(apiDefinition('far').inContext('ctx').build());
  w.apply(apiDefinition('near').build());
  const report = await w.run();
  t.match(reported(report, 'near'), { result: 'synced' });
  t.match(reported(report, 'far'), { result: 'failed', code: 'GATEWAY_UNAVAILABLE' });
  t.equal(w.gateway.count('upsert', 'api'), 1);
});

t.test('an id change writes the new id and retires the old one: two writes, one reload', async (t) => {
  const w = await synced(['httpbin']);
  w.updateSpec(API_DEFINITION, 'httpbin', (s) => ({ ...s, api_id: 'new-id' }));
  const report = await w.run();
  t.match(reported(report, 'httpbin'), { reason: 'id changed', result: 'synced', id: 'new-id' });
  t.same(report.gateway, { writes: 2, reloads: 1 });
  t.same([...ce(w).loaded('api').keys()], ['new-id']);
  t.equal(w.api('httpbin')?.status?.api_id, 'new-id');
});

t.test("pro: a Dashboard needs no reload; a policy's status names its _id", async (t) => {
  const w = new FastWorld({ mode: 'pro' });
  w.apply(apiDefinition('httpbin').build());
  w.apply(securityPolicy('p').granting('httpbin').build());
  const report = await w.run();
  t.match(reported(report, 'httpbin'), { result: 'synced' });
  t.match(reported(report, 'p', 'SecurityPolicy'), { result: 'synced' });
  t.same(report.gateway, { writes: 2, reloads: 0 });
  const dash = w.gateway as MemoryTykDashboard;
  const [mid] = [...dash.policies().keys()];
  t.equal(w.policy('p')?.status?.pol_id, mid, 'status.pol_id is the Dashboard _id');
  t.match(dash.apis().get(HTTPBIN), { org_id: dash.orgId });
  w.resetCounts();
  t.same((await w.run()).gateway, { writes: 0, reloads: 0 }, 'steady');
});
