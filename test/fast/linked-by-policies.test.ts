/**
 * After the policy phase, ApiDefinitions the API phase did not look at get
 * `status.linked_by_policies` brought up to date (lib/engine/run.ts, refreshLinks): only
 * watched ones, only synced ones, only when the list changes; a failed read or patch is
 * logged (a failed patch also told as an Event) and ends nothing.
 */
import t from 'tap';
import { API_DEFINITION } from '../../lib/kinds/api-definition/kind.js';
import { SECURITY_POLICY } from '../../lib/kinds/security-policy/kind.js';
import { apiDefinition, securityPolicy } from '../fixtures/builders.js';
import { kubeFailure } from '../memory/kube.js';
import { FastWorld, reported } from './world.js';

const P = [{ namespace: 'default', name: 'p' }];
const patchesOf = (w: FastWorld, name: string) => w.kube.faults.calls.filter((c) => c.op === 'patchStatus' && c.kind === 'ApiDefinition' && c.name === name).length;

/** a and b synced, p granting a. */
async function granted(): Promise<FastWorld> {
  const w = new FastWorld();
  w.apply(apiDefinition('a').build());
  w.apply(apiDefinition('b').build());
  w.apply(securityPolicy('p').granting('a').build());
  await w.run();
  w.resetCounts();
  return w;
}

t.test('a policy that now grants b: b and a (from the record of what p granted) are refreshed', async (t) => {
  const w = await granted();
  w.apply(securityPolicy('p').granting('b').build());
  const report = await w.runFor(SECURITY_POLICY, 'p');
  t.match(reported(report, 'p', 'SecurityPolicy'), { result: 'synced' });
  t.same(w.api('b')?.status?.linked_by_policies, P);
  t.equal(w.api('a')?.status?.linked_by_policies, undefined, 'null in the patch: the field is gone');
  t.equal(patchesOf(w, 'a'), 1);
  t.equal(patchesOf(w, 'b'), 1);
});

t.test('a policy change that keeps its grants patches no ApiDefinition', async (t) => {
  const w = await granted();
  w.apply(securityPolicy('p').granting('a').patchSpec({ name: 'renamed policy' }).build());
  const report = await w.runFor(SECURITY_POLICY, 'p');
  t.match(reported(report, 'p', 'SecurityPolicy'), { action: 'UPDATE', result: 'synced' });
  t.equal(patchesOf(w, 'a'), 0);
  t.same(w.api('a')?.status?.linked_by_policies, P);
});

t.test('an ApiDefinition never synced (no api_id in its status) is not patched', async (t) => {
  const w = await granted();
  w.put(apiDefinition('c').withStatus({}).build());
  w.kube.inject({ op: 'get', kind: 'ApiDefinition', times: Infinity, match: (c) => c.name === 'c', hook: () => {} });
  w.apply(securityPolicy('p').granting('a', 'c').build());
  await w.runFor(SECURITY_POLICY, 'p');
  t.equal(patchesOf(w, 'c'), 0);
  t.same(w.api('c')?.status, {});
});

t.test('an ApiDefinition in a namespace not watched is not read', async (t) => {
  const w = new FastWorld({ namespaces: ['default'] });
  w.apply(apiDefinition('a').build());
  w.apply(securityPolicy('p').granting('a').build());
  await w.run();
  w.put(apiDefinition('c').inNamespace('other').withStatus({ api_id: 'c-id' }).build());
  w.resetCounts();
  w.apply(securityPolicy('p').granting('a', 'other/c').build());
  await w.runFor(SECURITY_POLICY, 'p');
  t.equal(w.kube.faults.calls.filter((c) => c.op === 'get' && c.namespace === 'other').length, 0);
  t.same(w.get(API_DEFINITION, 'c', 'other')?.status, { api_id: 'c-id' });
});

t.test('a failed read of the ApiDefinition is logged; the run goes on', async (t) => {
  const w = await granted();
  w.apply(securityPolicy('p').granting('b').build());
  w.kube.inject({ op: 'get', kind: 'ApiDefinition', match: (c) => c.name === 'b', afterCalls: 1, times: Infinity, error: () => kubeFailure({ status: 500 }, 'get b') });
  const report = await w.runFor(SECURITY_POLICY, 'p');
  t.match(reported(report, 'p', 'SecurityPolicy'), { result: 'synced' });
  t.equal(w.api('b')?.status?.linked_by_policies, undefined);
  t.equal(w.api('a')?.status?.linked_by_policies, undefined, 'a is still refreshed');
  t.match(
    w.log.entries.filter((e) => e.msg === 'could not update linked_by_policies'),
    [{ level: 'warn', api: 'default/b' }],
  );
});

t.test('a refused status patch is logged and told as an Event on the ApiDefinition', async (t) => {
  const w = await granted();
  w.apply(securityPolicy('p').granting('a', 'b').build());
  w.kube.inject({ op: 'patchStatus', kind: 'ApiDefinition', match: (c) => c.name === 'b', error: () => kubeFailure({ status: 422 }, 'patch status of b') });
  const report = await w.runFor(SECURITY_POLICY, 'p');
  t.match(reported(report, 'p', 'SecurityPolicy'), { result: 'synced' });
  t.equal(w.api('b')?.status?.linked_by_policies, undefined);
  t.match(
    w.kube.eventsAbout('ApiDefinition', 'b').filter((e) => e.reason === 'StatusPatchFailed'),
    [{ type: 'Warning', message: /^status not saved: .*422/ }],
  );
  t.match(
    w.log.entries.filter((e) => e.msg === 'status patch failed'),
    [{ level: 'warn', key: 'ApiDefinition/default/b', status: 422 }],
  );
});

t.test('an Event that cannot be recorded either is logged', async (t) => {
  const w = await granted();
  w.apply(securityPolicy('p').granting('a', 'b').build());
  w.kube.inject({ op: 'patchStatus', kind: 'ApiDefinition', match: (c) => c.name === 'b', error: () => kubeFailure({ status: 422 }, 'patch status of b') });
  w.kube.inject({ op: 'recordEvent', times: Infinity, error: () => kubeFailure({ status: 500 }, 'record event') });
  const report = await w.runFor(SECURITY_POLICY, 'p');
  t.match(reported(report, 'p', 'SecurityPolicy'), { result: 'synced' });
  t.match(
    w.log.entries.filter((e) => e.msg === 'event not recorded' && e.api === 'default/b'),
    [{ level: 'warn' }],
  );
});

t.test('when the policies cannot be listed, links are left alone and the run says why', async (t) => {
  const w = await granted();
  w.apply(securityPolicy('p').granting('b').build());
  w.kube.inject({ op: 'list', kind: 'SecurityPolicy', error: () => kubeFailure({ unavailable: true }, 'list securitypolicies') });
  const report = await w.runFor(SECURITY_POLICY, 'p');
  t.match(report.errors, [{ stage: 'list securitypolicies', code: 'KUBE_UNAVAILABLE' }]);
  t.equal(patchesOf(w, 'a') + patchesOf(w, 'b'), 0);
  t.same(w.api('a')?.status?.linked_by_policies, P);
});
