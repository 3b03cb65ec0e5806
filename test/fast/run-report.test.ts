/**
 * What a Run answers and logs as a whole (lib/engine/run-context.ts): its id, trigger,
 * start and duration, counts per result, objects in a stable order, run-level errors, the
 * gateway counters; the policy list read once per run, per watched namespace.
 */
import t from 'tap';
import { API_DEFINITION } from '../../lib/kinds/api-definition/kind.js';
import { apiDefinition, securityPolicy } from '../fixtures/builders.js';
import { kubeFailure } from '../memory/kube.js';
import { FastWorld, reported } from './world.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

t.test('a report names its run, trigger, start and duration, and counts results', async (t) => {
  const w = new FastWorld();
  w.apply(apiDefinition('a').build());
  w.apply(apiDefinition('b').unsupported().build());
  w.clock.advance(1234);
  const start = w.clock.now();
  const report = await w.run({ trigger: 'watch' });
  t.match(report.runId, UUID);
  t.equal(report.trigger, 'watch');
  t.equal(report.dryRun, false, 'not a dry run unless asked');
  t.equal(report.startedAt, new Date(start).toISOString());
  t.equal(report.durationMs, w.clock.now() - start);
  t.equal(report.durationMs, 250);
  t.same(report.counts, { synced: 1, invalid: 1 });
  t.same(report.gateway, { writes: 1, reloads: 1 });
  t.same(report.errors, []);
  const again = await w.run();
  t.not(again.runId, report.runId, 'each run has its own id');
  t.same(again.counts, { unchanged: 1, invalid: 1 });
});

t.test('objects are reported in kind, namespace, name order', async (t) => {
  const w = new FastWorld();
  w.apply(apiDefinition('zz').build());
  await w.run();
  w.apply(securityPolicy('a').build());
  w.apply(apiDefinition('z').build());
  w.apply(apiDefinition('b').inNamespace('ns2').build());
  w.apply(apiDefinition('m').inNamespace('ns1').build());
  w.apply(apiDefinition('c').inNamespace('ns1').build());
  const report = await w.run();
  t.same(
    report.objects.map((o) => `${o.kind}/${o.namespace}/${o.name}`),
    ['ApiDefinition/default/z', 'ApiDefinition/default/zz', 'ApiDefinition/ns1/c', 'ApiDefinition/ns1/m', 'ApiDefinition/ns2/b', 'SecurityPolicy/default/a'],
  );
});

t.test('an object report names the gateway only when one was decided', async (t) => {
  const w = new FastWorld();
  w.apply(apiDefinition('a').build());
  const report = await w.runFor(API_DEFINITION, 'nothing');
  t.notOk('gateway' in reported(report, 'nothing'), 'a ref with nothing behind it has no gateway');
  t.match(reported(await w.runFor(API_DEFINITION, 'a'), 'a'), { gateway: 'default' });
});

t.test('every log line of a run carries its id and trigger; the run ends with a summary', async (t) => {
  const w = new FastWorld();
  w.apply(apiDefinition('a').build());
  const report = await w.run({ trigger: 'audit' });
  const mine = w.log.entries.filter((e) => e.runId === report.runId);
  t.ok(mine.length > 0);
  t.ok(
    mine.every((e) => e.trigger === 'audit'),
    'trigger on every line',
  );
  t.match(
    w.log.entries.filter((e) => e.msg === 'run finished'),
    [{ level: 'info', runId: report.runId, counts: { synced: 1 }, writes: 1, reloads: 1, errors: 0, durationMs: 250 }],
  );
});

t.test('the policies are listed once per run, per watched namespace', async (t) => {
  const w = new FastWorld({ namespaces: ['x', 'y'] });
  w.apply(securityPolicy('p').inNamespace('x').granting('a').build());
  w.apply(securityPolicy('q').inNamespace('y').build());
  w.apply(apiDefinition('a').inNamespace('x').build());
  const report = await w.run();
  t.same(report.counts, { synced: 3 });
  t.same(
    w.kube.faults.calls.filter((c) => c.op === 'list' && c.kind === 'SecurityPolicy').map((c) => c.namespace),
    ['x', 'y', 'x', 'y'],
    'once for the references (x, y), once for the policy phase',
  );
  t.same(w.get(API_DEFINITION, 'a', 'x')?.status?.linked_by_policies, [{ namespace: 'x', name: 'p' }]);
});

t.test('all namespaces: the policies are listed cluster-wide', async (t) => {
  const w = new FastWorld();
  w.apply(securityPolicy('p').inNamespace('x').build());
  await w.runFor(API_DEFINITION, 'nothing');
  t.same(
    w.kube.faults.calls.filter((c) => c.op === 'list' && c.kind === 'SecurityPolicy').map((c) => c.namespace ?? 'ALL'),
    ['ALL'],
  );
});

t.test('a failed policy list is a run error, logged; deletions of ApiDefinitions are held', async (t) => {
  const w = new FastWorld({ namespaces: ['default', 'other'] });
  w.apply(apiDefinition('a').build());
  await w.run();
  w.delete(API_DEFINITION, 'a');
  w.kube.inject({ op: 'list', kind: 'SecurityPolicy', match: (c) => c.namespace === 'other', times: Infinity, error: () => kubeFailure({ unavailable: true }, 'list securitypolicies') });
  const report = await w.runFor(API_DEFINITION, 'a');
  t.same(report.errors, [{ stage: 'list securitypolicies', code: 'KUBE_UNAVAILABLE', message: report.errors[0]?.message }]);
  t.match(report.errors[0]?.message, /list securitypolicies/);
  t.notMatch(reported(report, 'a'), { result: 'deleted' });
  t.equal(w.gateway.count('remove'), 0, 'nothing deleted');
  t.match(
    w.log.entries.filter((e) => e.msg === 'run stage failed'),
    [{ level: 'warn', stage: 'list securitypolicies', code: 'KUBE_UNAVAILABLE', err: /list securitypolicies/ }],
  );
});

t.test('a dry run says so', async (t) => {
  const w = new FastWorld();
  t.equal((await w.run({ dryRun: true })).dryRun, true);
  t.equal((await w.run({ dryRun: false })).dryRun, false);
});
