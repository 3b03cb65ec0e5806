/**
 * How a SecurityPolicy sees the ApiDefinitions it references, and how an ApiDefinition names
 * the policies of its jwt_default_policies (lib/engine/load.ts, apiResolver and policyId).
 * A run for the policy alone reads each referenced API and its record once; the API resolves
 * only when it exists, is not being deleted, was synced and sits on the policy's gateway; the
 * policy waits otherwise, saying why in its report, record and status.
 */
import t from 'tap';
import type { JsonObject } from '../../lib/gateway/types.js';
import { API_DEFINITION } from '../../lib/kinds/api-definition/kind.js';
import { SECURITY_POLICY } from '../../lib/kinds/security-policy/kind.js';
import { GatewayUnavailableError } from '../../lib/platform/errors.js';
import { apiDefinition, defaultIdOf, operatorContext, recordFor, securityPolicy } from '../fixtures/builders.js';
import { type MemoryTykDashboard, MemoryTykGateway } from '../memory/gateway.js';
import { kubeFailure } from '../memory/kube.js';
import { FastWorld, reported } from './world.js';

function ce(w: FastWorld): MemoryTykGateway {
  if (!(w.gateway instanceof MemoryTykGateway)) throw new Error('not a Tyk Gateway');
  return w.gateway;
}

/** A run for policy p alone (the API phase looks at nothing). */
async function runP(w: FastWorld) {
  const report = await w.runFor(SECURITY_POLICY, 'p');
  t.notOk(
    report.objects.some((o) => o.kind === 'ApiDefinition'),
    'no API in this run',
  );
  return reported(report, 'p', 'SecurityPolicy');
}

t.test('a run for the policy alone reads its APIs once each, and links them under their recorded ids and names', async (t) => {
  const w = new FastWorld();
  w.apply(apiDefinition('a').patchSpec({ name: 'Pretty A' }).build());
  w.apply(apiDefinition('b').withApiId('pinned-b').build());
  await w.run();
  w.apply(securityPolicy('p').granting('a', 'b', 'a').build());
  w.resetCounts();
  const dry = await w.runFor(SECURITY_POLICY, 'p', 'watch', 'default', { dryRun: true });
  t.match(reported(dry, 'p', 'SecurityPolicy'), { action: 'CREATE', result: 'planned' });
  t.same(
    w.kube.faults.calls.filter((c) => c.op === 'get' && c.kind === 'ApiDefinition').map((c) => c.name),
    ['a', 'b'],
    'each API read once',
  );
  t.match(await runP(w), { action: 'CREATE', result: 'synced' });
  const body = ce(w).loaded('policy').get(defaultIdOf('p'));
  t.match(body?.access_rights, {
    [defaultIdOf('a')]: { api_id: defaultIdOf('a'), api_name: 'Pretty A' },
    'pinned-b': { api_id: 'pinned-b', api_name: 'b' },
  });
  t.same(w.policy('p')?.status?.linked_apis, [
    { namespace: 'default', name: 'a' },
    { namespace: 'default', name: 'b' },
  ]);
});

t.test("an API's name falls back to its metadata name when its spec has none", async (t) => {
  const w = new FastWorld();
  // a synced record, and a resource whose spec lost its name since
  w.put(
    apiDefinition('a')
      .withSpec({ proxy: { listen_path: '/a', target_url: 'http://a' } })
      .build(),
  );
  await w.putRecord(recordFor('ApiDefinition', 'a').onGateway('default').build());
  w.apply(securityPolicy('p').granting('a').build());
  t.match(await runP(w), { result: 'synced' });
  t.match(ce(w).loaded('policy').get(defaultIdOf('p'))?.access_rights, { [defaultIdOf('a')]: { api_name: 'a' } });
});

t.test('the policy waits, saying why, while an API it references cannot be used', async (t) => {
  const cases: { what: string; setup: (w: FastWorld) => Promise<void> | void; why: string }[] = [
    { what: 'missing', setup: () => {}, why: 'ApiDefinition default/a does not exist' },
    {
      what: 'unreadable',
      setup: (w) => {
        w.apply(apiDefinition('a').build());
        w.kube.inject({ op: 'get', kind: 'ApiDefinition', error: () => kubeFailure({ unavailable: true }, 'get apidefinitions "a"') });
      },
      why: 'ApiDefinition default/a could not be read',
    },
    {
      what: 'being deleted',
      setup: async (w) => {
        w.put(apiDefinition('a').withFinalizer().deleting().build());
        await w.putRecord(recordFor('ApiDefinition', 'a').onGateway('default').build());
      },
      why: 'ApiDefinition default/a is being deleted',
    },
    { what: 'never synced', setup: (w) => void w.apply(apiDefinition('a').build()), why: 'ApiDefinition default/a is not synced yet' },
    {
      what: 'failed',
      setup: async (w) => {
        w.apply(apiDefinition('a').build());
        await w.putRecord(recordFor('ApiDefinition', 'a').failed('boom').onGateway('default').build());
      },
      why: 'ApiDefinition default/a is not synced yet',
    },
    {
      what: 'on another gateway',
      setup: async (w) => {
        w.apply(apiDefinition('a').build());
        await w.putRecord(recordFor('ApiDefinition', 'a').onGateway('context:default/ctx').build());
      },
      why: 'ApiDefinition default/a is on another gateway (context:default/ctx)',
    },
  ];
  for (const c of cases) {
    t.test(c.what, async (t) => {
      const w = new FastWorld();
      await c.setup(w);
      w.apply(securityPolicy('p').granting('a').build());
      t.match(await runP(w), { action: 'WAIT', reason: 'waiting for dependency', result: 'waiting', error: `waiting for ${c.why}` });
      t.equal(w.gateway.writes(), 0, 'nothing sent');
      t.match(await w.record(SECURITY_POLICY, 'p'), { result: 'waiting', error: `waiting for ${c.why}` });
      t.match(w.policy('p')?.status, { latestTransaction: { status: 'Pending', error: `waiting for ${c.why}` }, linked_apis: [{ namespace: 'default', name: 'a' }] });
    });
  }
  t.end();
});

t.test('an API in an unwatched namespace does not exist for a policy, and is not read', async (t) => {
  // CROSS_NAMESPACE_REFS=allow: the reference itself is permitted, the namespace is not watched
  const w = new FastWorld({ namespaces: ['default'], crossNamespaceRefs: 'allow' });
  w.apply(apiDefinition('a').inNamespace('elsewhere').build());
  w.apply(securityPolicy('p').granting('elsewhere/a').build());
  w.resetCounts();
  t.match(await runP(w), { action: 'WAIT', error: 'waiting for ApiDefinition elsewhere/a does not exist' });
  t.equal(w.kube.count('get', 'ApiDefinition'), 0);
});

t.test('a synced or diverged API on the same gateway resolves; a record from before gateways were named is the default one', async (t) => {
  for (const rec of [recordFor('ApiDefinition', 'a').build(), recordFor('ApiDefinition', 'a').diverged('gateway changed what was sent').onGateway('default').build()]) {
    const w = new FastWorld();
    w.apply(apiDefinition('a').build());
    await w.putRecord(rec);
    w.apply(securityPolicy('p').granting('a').build());
    t.match(await runP(w), { action: 'CREATE', result: 'synced' }, `${rec.result}, gateway ${rec.gateway ?? '(none)'}`);
  }
});

t.test('a policy on a context gateway: an API recorded without a gateway is on the default one', async (t) => {
  const w = new FastWorld();
  w.addGateway('http://gw2:8080', { secret: 's2' });
  w.apply(operatorContext('ctx').ce('http://gw2:8080', 's2').build());
  w.apply(apiDefinition('a').build());
  await w.putRecord(recordFor('ApiDefinition', 'a').build());
  w.apply(securityPolicy('p').granting('a').inContext('ctx').build());
  t.match(await runP(w), { action: 'WAIT', error: 'waiting for ApiDefinition default/a is on another gateway (default)' });
});

t.test('jwt_default_policies: a "namespace/name" entry becomes the policy id the gateway knows', async (t) => {
  const jwt = (w: FastWorld) => (w.gateway instanceof MemoryTykGateway ? w.gateway.loaded('api') : (w.gateway as MemoryTykDashboard).apis()).get(defaultIdOf('a'))?.jwt_default_policies;
  const apiWith = (...entries: string[]) => apiDefinition('a').patchSpec({ jwt_default_policies: entries }).build();

  t.test('Tyk Gateway: the pinned spec.id first, then status.pol_id, then the default id', async (t) => {
    const w = new FastWorld();
    w.put(securityPolicy('pinned').withId('my-id').withStatus({ pol_id: 'stale' }).build());
    w.put(securityPolicy('recorded').withStatus({ pol_id: 'from-status' }).build());
    w.put(securityPolicy('plain').build());
    w.apply(apiWith('default/pinned', 'default/recorded', 'default/plain', 'other/absent', 'literal-id'));
    const report = await w.runFor(API_DEFINITION, 'a');
    t.match(reported(report, 'a'), { result: 'synced' });
    t.same(jwt(w), ['my-id', 'from-status', defaultIdOf('plain'), defaultIdOf('absent', 'other'), 'literal-id']);
  });
  t.test("Tyk Dashboard: status.pol_id (the Dashboard's _id) first, then spec.id, then the default id", async (t) => {
    const w = new FastWorld({ mode: 'pro' });
    w.put(securityPolicy('pinned').withId('my-id').withStatus({ pol_id: 'dash-id' }).build());
    w.put(securityPolicy('unsynced').withId('my-id2').build());
    w.put(securityPolicy('plain').build());
    w.apply(apiWith('default/pinned', 'default/unsynced', 'default/plain'));
    const report = await w.runFor(API_DEFINITION, 'a');
    t.match(reported(report, 'a'), { result: 'synced' });
    t.same(jwt(w), ['dash-id', 'my-id2', defaultIdOf('plain')]);
  });
  t.test('policies that could not be listed: the default id', async (t) => {
    const w = new FastWorld();
    w.put(securityPolicy('pinned').withId('my-id').build());
    w.kube.inject({ op: 'list', kind: 'SecurityPolicy', error: () => kubeFailure({ status: 500 }, 'list securitypolicies') });
    w.apply(apiWith('default/pinned'));
    const report = await w.runFor(API_DEFINITION, 'a');
    t.match(reported(report, 'a'), { result: 'synced' });
    t.same(jwt(w), [defaultIdOf('pinned')]);
  });
  t.end();
});

t.test('Tyk Dashboard: a policy goes under its pinned spec.id, else its default id', async (t) => {
  const w = new FastWorld({ mode: 'pro' });
  w.apply(securityPolicy('pinned').withId('my-policy').build());
  w.apply(securityPolicy('plain').build());
  const report = await w.run();
  t.match(reported(report, 'pinned', 'SecurityPolicy'), { action: 'CREATE', result: 'synced', id: 'my-policy' });
  t.match(reported(report, 'plain', 'SecurityPolicy'), { action: 'CREATE', result: 'synced', id: defaultIdOf('plain') });
  const ids = [...(w.gateway as MemoryTykDashboard).policies().values()].map((p: JsonObject) => p.id).sort();
  t.same(ids, ['my-policy', defaultIdOf('plain')].sort());
  w.resetCounts();
  const again = await w.run();
  t.match(reported(again, 'pinned', 'SecurityPolicy'), { action: 'NOOP', result: 'unchanged' });
  t.same(again.gateway, { writes: 0, reloads: 0 });
});

t.test('a gateway that cannot be read fails the policy read, not the API resolution', async (t) => {
  const w = new FastWorld();
  w.apply(apiDefinition('a').build());
  await w.run();
  w.apply(securityPolicy('p').granting('a').build());
  w.resetCounts();
  w.gateway.inject({ op: 'get', kind: 'policy', error: () => new GatewayUnavailableError('gateway default: GET /tyk/policies/p: ECONNRESET') });
  t.match(await runP(w), { action: 'NOOP', reason: 'read failed', result: 'failed', code: 'GATEWAY_UNAVAILABLE' });
  t.equal(w.gateway.writes(), 0);
});

t.test('an API the API phase of the run looked at is not read again for its policies', async (t) => {
  const w = new FastWorld();
  w.apply(apiDefinition('a').build());
  w.apply(securityPolicy('p').granting('a').build());
  await w.run();
  w.apply(securityPolicy('p').granting('a').patchSpec({ rate: 10 }).build());
  w.resetCounts();
  const report = await w.run({ dryRun: true });
  t.match(reported(report, 'p', 'SecurityPolicy'), { action: 'UPDATE', reason: 'spec changed', result: 'planned' });
  t.equal(w.kube.count('get', 'ApiDefinition'), 0);
});

t.test('a vanished policy references nothing: no API is read for it', async (t) => {
  const w = new FastWorld();
  w.apply(apiDefinition('a').build());
  w.apply(securityPolicy('p').granting('a').build());
  await w.run();
  w.remove(SECURITY_POLICY, 'p');
  w.resetCounts();
  const report = await w.runFor(SECURITY_POLICY, 'p');
  t.match(reported(report, 'p', 'SecurityPolicy'), { action: 'DELETE', result: 'deleted' });
  t.equal(w.kube.count('get', 'ApiDefinition'), 1, 'only to refresh the linked_by_policies of the API it linked');
  t.equal(w.api('a')?.status?.linked_by_policies, undefined);
});
