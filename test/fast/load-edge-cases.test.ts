/**
 * Edge cases of the load stage (lib/engine/load.ts), each pinned by what a run reports or
 * writes: what is not read at all (an object that is nowhere, a record key that names no
 * object), a policy spec that cannot be sent, jwt_default_policies naming policies across
 * namespaces, an API deletion held while the policies cannot be listed, and a Dashboard
 * policy's status id restored from what the Dashboard reports.
 */
import t from 'tap';
import { API_DEFINITION } from '../../lib/kinds/api-definition/kind.js';
import { SECURITY_POLICY } from '../../lib/kinds/security-policy/kind.js';
import { apiDefinition, defaultIdOf, FINALIZER, recordFor, securityPolicy } from '../fixtures/builders.js';
import type { MemoryTykDashboard, MemoryTykGateway } from '../memory/gateway.js';
import { kubeFailure } from '../memory/kube.js';
import { FastWorld, reported } from './world.js';

t.test('an object that is nowhere (no resource, no record) is not looked up on any gateway', async (t) => {
  const w = new FastWorld();
  const report = await w.runFor(API_DEFINITION, 'ghost');
  t.match(reported(report, 'ghost'), { action: 'NOOP', reason: 'not managed', result: 'skipped' });
  t.equal(w.gateway.count('get') + w.gateway.count('list'), 0);
});

t.test('an object of an unwatched namespace is not looked up on any gateway', async (t) => {
  const w = new FastWorld({ namespaces: ['default'] });
  const report = await w.runFor(API_DEFINITION, 'x', 'watch', 'elsewhere');
  t.match(reported(report, 'x', 'ApiDefinition', 'elsewhere'), { reason: 'not watched', result: 'skipped' });
  t.equal(w.gateway.count('get') + w.gateway.count('list'), 0);
});

t.test('a record key that names no object is ignored', async (t) => {
  const w = new FastWorld();
  await w.putRecord({ ...recordFor('ApiDefinition', 'x').build(), key: 'ApiDefinition/malformed' });
  const report = await w.run();
  t.same(report.objects, []);
  t.equal(w.kube.count('get'), 0);
});

t.test('a failed listing of all namespaces names no namespace', async (t) => {
  const w = new FastWorld();
  w.kube.inject({ op: 'list', kind: 'ApiDefinition', error: () => kubeFailure({ status: 500 }, 'list apidefinitions') });
  const report = await w.run();
  t.same(
    report.errors.map((e) => e.stage),
    ['list apidefinitions'],
  );
});

t.test('a policy whose access rights name another kind is invalid, and nothing is sent', async (t) => {
  const w = new FastWorld();
  w.apply(
    securityPolicy('p')
      .patchSpec({ access_rights_array: [{ name: 'x', namespace: 'default', kind: 'Widget', versions: ['Default'] }] })
      .build(),
  );
  const report = await w.run();
  t.match(reported(report, 'p', 'SecurityPolicy'), {
    action: 'NOOP',
    reason: 'invalid spec',
    result: 'invalid',
    error: 'access_rights_array entry x is a Widget; a policy grants ApiDefinitions and TykOasApiDefinitions',
  });
  t.equal(w.gateway.writes(), 0);
  t.match(await w.record(SECURITY_POLICY, 'p'), { result: 'invalid' });
});

t.test('jwt_default_policies: a policy is found by namespace and name', async (t) => {
  const w = new FastWorld();
  w.put(securityPolicy('p').withId('wrong').build());
  w.put(securityPolicy('p').inNamespace('team-b').withId('right').build());
  w.apply(
    apiDefinition('a')
      .patchSpec({ jwt_default_policies: ['team-b/p'] })
      .build(),
  );
  const report = await w.runFor(API_DEFINITION, 'a');
  t.match(reported(report, 'a'), { result: 'synced' });
  t.same((w.gateway as MemoryTykGateway).loaded('api').get(defaultIdOf('a'))?.jwt_default_policies, ['right']);
});

t.test('an API deletion is held while the SecurityPolicies cannot be listed', async (t) => {
  const w = new FastWorld();
  w.apply(apiDefinition('a').build());
  await w.run();
  w.delete(API_DEFINITION, 'a');
  w.kube.inject({ op: 'list', kind: 'SecurityPolicy', error: () => kubeFailure({ unavailable: true }, 'list securitypolicies'), times: Infinity });
  w.resetCounts();
  const report = await w.run();
  t.match(reported(report, 'a'), { action: 'WAIT', reason: 'referenced by policies', result: 'waiting', error: 'deletion held: the SecurityPolicies referencing it could not be listed' });
  t.equal(w.gateway.writes(), 0);
  t.ok((w.gateway as MemoryTykGateway).loaded('api').has(defaultIdOf('a')));
  t.same(w.api('a')?.metadata.finalizers, [FINALIZER]);
});

t.test("Dashboard: a policy's lost status.pol_id is restored from the Dashboard's _id", async (t) => {
  const w = new FastWorld({ mode: 'pro' });
  w.apply(securityPolicy('p').build());
  await w.run();
  const [mid] = [...(w.gateway as MemoryTykDashboard).policies().keys()];
  t.equal(w.policy('p')?.status?.pol_id, mid);
  const p = w.policy('p');
  if (p) w.put({ ...p, status: { ...p.status, pol_id: 'lost' } });
  const report = await w.run();
  t.match(reported(report, 'p', 'SecurityPolicy'), { action: 'NOOP', result: 'unchanged' });
  t.equal(w.policy('p')?.status?.pol_id, mid);
});

t.test('Tyk Gateway: a policy keeps the id its status names when its spec pins none', async (t) => {
  const w = new FastWorld();
  w.put(securityPolicy('p').withStatus({ pol_id: 'from-status' }).build());
  const report = await w.run();
  t.match(reported(report, 'p', 'SecurityPolicy'), { action: 'CREATE', result: 'synced', id: 'from-status' });
  t.ok((w.gateway as MemoryTykGateway).loaded('policy').has('from-status'));
});

t.test("Tyk Dashboard: an API's pinned api_id is its id there", async (t) => {
  const w = new FastWorld({ mode: 'pro' });
  w.apply(apiDefinition('a').withApiId('pinned-a').build());
  const report = await w.run();
  t.match(reported(report, 'a'), { action: 'CREATE', result: 'synced', id: 'pinned-a' });
  t.ok((w.gateway as MemoryTykDashboard).apis().has('pinned-a'));
});
