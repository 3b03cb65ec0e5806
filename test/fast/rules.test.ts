/**
 * The reconcile rules a run must keep, each pinned by a whole Run in process
 * (test/fast/world.ts). Each test asserts something a bug in that rule would break.
 */
import t from 'tap';
import type { JsonObject } from '../../lib/gateway/types.js';
import { API_DEFINITION } from '../../lib/kinds/api-definition/kind.js';
import { SECURITY_POLICY } from '../../lib/kinds/security-policy/kind.js';
import { GatewayUnavailableError } from '../../lib/platform/errors.js';
import { apiDefinition, defaultIdOf, FINALIZER, securityPolicy } from '../fixtures/builders.js';
import type { MemoryTykGateway } from '../memory/gateway.js';
import { kubeFailure } from '../memory/kube.js';
import { FastWorld, reported } from './world.js';

const retarget = (url: string) => (s: Record<string, unknown>) => ({ ...s, proxy: { ...(s.proxy as JsonObject), target_url: url } });

function upsertsOf(w: FastWorld, id: string): number {
  return w.gateway.faults.calls.filter((c) => c.op === 'upsert' && c.id === id).length;
}

/** x synced, then its record says a write failed, retried no sooner than `retryInMs`. */
async function failedInBackoff(retryInMs: number): Promise<{ w: FastWorld; retryAt: number }> {
  const w = new FastWorld();
  w.apply(apiDefinition('x').build());
  await w.run();
  const retryAt = w.clock.now() + retryInMs;
  await w.editRecord(API_DEFINITION, 'x', (r) => ({ ...r, result: 'failed', failures: 1, retryAt, error: 'write API: 503 boom' }));
  w.resetCounts();
  return { w, retryAt };
}

t.test('backoff: a failed object is left alone until retryAt, except for a spec change or a resync', async (t) => {
  t.test('no spec change, scheduled: left alone, record kept', async (t) => {
    const { w, retryAt } = await failedInBackoff(60_000);
    const before = await w.record(API_DEFINITION, 'x');
    const report = await w.run();
    t.match(reported(report, 'x'), { result: 'backoff', error: 'write API: 503 boom' });
    t.equal(w.gateway.count('upsert'), 0, 'no write');
    t.same(await w.record(API_DEFINITION, 'x'), before, 'record unchanged');
    w.clock.set(retryAt);
    const later = await w.run();
    t.match(reported(later, 'x'), { action: 'UPDATE', reason: 'retrying after failure', result: 'synced' });
    t.equal(w.gateway.count('upsert'), 1, 'written once retryAt came');
  });
  t.test('a spec change is written at once', async (t) => {
    const { w } = await failedInBackoff(60_000);
    w.updateSpec(API_DEFINITION, 'x', retarget('http://example.com'));
    const report = await w.run();
    t.match(reported(report, 'x'), { action: 'UPDATE', reason: 'spec changed', result: 'synced' });
    t.equal(upsertsOf(w, defaultIdOf('x')), 1);
    t.match(await w.record(API_DEFINITION, 'x'), { result: 'synced', failures: 0 });
  });
  t.test('a resync is written at once', async (t) => {
    const { w } = await failedInBackoff(60_000);
    const report = await w.runFor(API_DEFINITION, 'x', 'resync');
    t.match(reported(report, 'x'), { result: 'synced' });
    t.equal(upsertsOf(w, defaultIdOf('x')), 1);
  });
  t.end();
});

t.test('a WAIT keeps the hashes of the last sync in the record', async (t) => {
  const w = new FastWorld();
  w.apply(apiDefinition('a').build());
  w.apply(securityPolicy('p').granting('a').build());
  await w.run();
  const last = await w.record(SECURITY_POLICY, 'p');
  t.match(last, { result: 'synced', desiredHash: /^[0-9a-f]{32}$/, observedHash: /^m:[0-9a-f]{32}$/ });
  w.apply(securityPolicy('p').granting('ghost').build());
  w.resetCounts();
  const report = await w.run();
  t.match(reported(report, 'p', 'SecurityPolicy'), { action: 'WAIT', result: 'waiting', error: /ghost/ });
  t.equal(w.gateway.writes(), 0, 'the policy on the gateway is left as it was');
  const waiting = await w.record(SECURITY_POLICY, 'p');
  t.match(waiting, { result: 'waiting', desiredHash: last?.desiredHash, observedHash: last?.observedHash });
  t.match(w.policy('p')?.status, { latestTransaction: { status: 'Pending', error: /ghost/ } });
});

t.test('a failed DELETE keeps desiredHash of the last sync in the record', async (t) => {
  const w = new FastWorld();
  w.apply(apiDefinition('a').build());
  await w.run();
  const last = await w.record(API_DEFINITION, 'a');
  w.delete(API_DEFINITION, 'a');
  w.updateSpec(API_DEFINITION, 'a', retarget('http://changed.example')); // a spec edited while terminating
  w.gateway.inject({ op: 'remove', kind: 'api', error: () => new GatewayUnavailableError('gateway default: DELETE /tyk/apis/x: ECONNRESET') });
  const report = await w.run();
  t.match(reported(report, 'a'), { action: 'DELETE', result: 'failed', code: 'GATEWAY_UNAVAILABLE' });
  const rec = await w.record(API_DEFINITION, 'a');
  t.match(rec, { result: 'failed', failures: 1, retryAt: Number });
  t.equal(rec?.desiredHash, last?.desiredHash, 'desiredHash of what the gateway last got');
  t.ok((w.gateway as MemoryTykGateway).loaded('api').has(defaultIdOf('a')), 'still on the gateway');
  t.same(w.api('a')?.metadata.finalizers, [FINALIZER], 'finalizer kept');
  w.clock.set((rec?.retryAt ?? 0) + 1);
  t.match(reported(await w.run(), 'a'), { action: 'DELETE', result: 'deleted' });
  t.equal(w.api('a'), undefined);
});

t.test('orphans are not loaded, let alone deleted, after an incomplete listing', async (t) => {
  const w = new FastWorld({ namespaces: ['team-a', 'team-b'] });
  w.apply(apiDefinition('a').inNamespace('team-a').build());
  w.apply(apiDefinition('b').inNamespace('team-b').build());
  await w.run();
  w.remove(API_DEFINITION, 'b', 'team-b'); // gone behind our back: only its record is left
  w.kube.inject({ op: 'list', kind: 'ApiDefinition', match: (c) => c.namespace === 'team-a', error: () => kubeFailure({ unavailable: true }, 'list apidefinitions "team-a"') });
  w.resetCounts();
  const report = await w.run();
  t.match(report.errors, [{ stage: 'list apidefinitions in team-a', code: 'KUBE_UNAVAILABLE' }]);
  t.notOk(
    report.objects.some((o) => o.name === 'b'),
    'the orphan is not looked at',
  );
  t.equal(w.kube.count('get', 'ApiDefinition'), 0, 'not even read');
  t.equal(w.gateway.count('remove'), 0, 'nothing deleted');
  t.ok((w.gateway as MemoryTykGateway).loaded('api').has(defaultIdOf('b', 'team-b')));
  t.ok(await w.record(API_DEFINITION, 'b', 'team-b'), 'record kept');
  const complete = await w.run();
  t.match(reported(complete, 'b', 'ApiDefinition', 'team-b'), { action: 'DELETE', result: 'deleted' });
  t.equal(w.gateway.count('remove'), 1, 'deleted once the listing is complete');
});

t.test('linked_by_policies: left alone when the policy phase is skipped, refreshed when a policy changes its access rights', async (t) => {
  const w = new FastWorld();
  w.apply(apiDefinition('a').build());
  w.apply(apiDefinition('b').build());
  w.apply(securityPolicy('p').granting('a').build());
  await w.run();
  const P = [{ namespace: 'default', name: 'p' }];
  t.same(w.api('a')?.status?.linked_by_policies, P);
  t.equal(w.api('b')?.status?.linked_by_policies, undefined);

  w.apply(securityPolicy('p').granting('b').build());
  w.resetCounts();
  const dry = await w.run({ dryRun: true });
  t.match(reported(dry, 'p', 'SecurityPolicy'), { action: 'UPDATE', result: 'planned' });
  t.equal(w.kube.count('patchStatus'), 0, 'a dry run patches no status');
  t.equal(w.api('b')?.status?.linked_by_policies, undefined);

  const onlyA = await w.runFor(API_DEFINITION, 'a');
  t.notOk(
    onlyA.objects.some((o) => o.kind === 'SecurityPolicy'),
    'no policy in scope: the policy phase is skipped',
  );
  t.equal(w.kube.faults.calls.filter((c) => c.op === 'patchStatus' && c.name === 'b').length, 0, 'b, not looked at, is not patched');
  t.equal(w.api('b')?.status?.linked_by_policies, undefined);
  t.same(w.policy('p')?.status?.linked_apis, [{ namespace: 'default', name: 'a' }], 'the policy itself untouched');

  const onlyP = await w.runFor(SECURITY_POLICY, 'p');
  t.match(reported(onlyP, 'p', 'SecurityPolicy'), { action: 'UPDATE', reason: 'spec changed', result: 'synced' });
  t.same(w.api('b')?.status?.linked_by_policies, P, 'b, now granted, is refreshed');
  t.equal(w.api('a')?.status?.linked_by_policies, undefined, 'a, no longer granted, says so');
});
