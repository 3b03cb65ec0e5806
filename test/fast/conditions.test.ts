/**
 * status.conditions (Ready, Synced) and status.observedGeneration through whole Runs:
 * what each outcome says, transition times that move only on a transition, a steady state
 * that patches nothing, and a CRD that prunes them (Tyk Operator's) patched once, not forever.
 */
import t from 'tap';
import { API_DEFINITION } from '../../lib/kinds/api-definition/kind.js';
import { SECURITY_POLICY } from '../../lib/kinds/security-policy/kind.js';
import { apiDefinition, conditionOf, securityPolicy } from '../fixtures/builders.js';
import { gatewayFailure } from '../memory/gateway.js';
import { FastWorld } from './world.js';

/** Tyk Operator's CRDs: the status fields they keep. */
const TYK_OPERATOR_STATUS = {
  ApiDefinition: ['api_id', 'latestCRDSpecHash', 'latestTransaction', 'latestTykSpecHash', 'linked_by_apis', 'linked_by_policies', 'linked_to_apis'],
  SecurityPolicy: ['latestCRDSpecHash', 'latestTykSpecHash', 'linked_apis', 'pol_id'],
};

t.test('a synced API is Ready and Synced, at the generation it was synced from', async (t) => {
  const w = new FastWorld();
  w.apply(apiDefinition('a').build());
  const at = new Date(w.clock.now()).toISOString();
  await w.run();
  const api = w.api('a');
  t.same(conditionOf(api, 'Ready'), { type: 'Ready', status: 'True', reason: 'Available', message: 'the gateway serves the current spec', lastTransitionTime: at, observedGeneration: 1 });
  t.same(conditionOf(api, 'Synced'), {
    type: 'Synced',
    status: 'True',
    reason: 'ReconcileSuccess',
    message: 'the last write was accepted by the gateway',
    lastTransitionTime: at,
    observedGeneration: 1,
  });
  t.equal(api?.status?.observedGeneration, 1);

  w.clock.advance(60_000);
  w.resetCounts();
  await w.run();
  await w.run();
  t.equal(w.kube.count('patchStatus'), 0, 'a steady state patches nothing');

  w.updateSpec(API_DEFINITION, 'a', (s) => ({ ...s, active: false }));
  await w.run();
  const after = w.api('a');
  t.equal(after?.status?.observedGeneration, 2, 'the new generation is observed');
  t.match(conditionOf(after, 'Ready'), { status: 'True', observedGeneration: 2, lastTransitionTime: at }, 'still Ready: no transition, the time stays');
});

t.test('a spec the gateway rejects: Synced=False with its message, and back to True once fixed', async (t) => {
  const w = new FastWorld();
  w.apply(apiDefinition('a').build());
  w.gateway.inject({ op: 'upsert', error: () => gatewayFailure({ status: 400 }, 'POST /tyk/apis') });
  const failedAt = new Date(w.clock.now()).toISOString();
  await w.run();
  const api = w.api('a');
  t.match(conditionOf(api, 'Synced'), { status: 'False', reason: 'Invalid', message: /rejected by the gateway: injected fault/, lastTransitionTime: failedAt });
  t.match(conditionOf(api, 'Ready'), { status: 'False', reason: 'Invalid', message: /rejected by the gateway/ });

  w.clock.advance(60_000);
  w.updateSpec(API_DEFINITION, 'a', (s) => ({ ...s, active: false }));
  const fixedAt = new Date(w.clock.now()).toISOString();
  await w.run();
  t.match(conditionOf(w.api('a'), 'Synced'), { status: 'True', reason: 'ReconcileSuccess', lastTransitionTime: fixedAt, observedGeneration: 2 });
  t.match(conditionOf(w.api('a'), 'Ready'), { status: 'True', reason: 'Available', lastTransitionTime: fixedAt });
});

t.test('a failure that changes its message keeps the transition time; the gateway down says ReconcileError', async (t) => {
  const w = new FastWorld();
  w.apply(apiDefinition('a').build());
  w.gateway.inject({ op: 'upsert', times: 1, error: () => gatewayFailure({ status: 500 }, 'first') });
  const at = new Date(w.clock.now()).toISOString();
  await w.run();
  t.match(conditionOf(w.api('a'), 'Synced'), { status: 'False', reason: 'ReconcileError', message: /first: 500/, lastTransitionTime: at });
  t.match(conditionOf(w.api('a'), 'Ready'), { status: 'False', reason: 'NotSynced' });
  w.clock.advance(60_000);
  w.gateway.inject({ op: 'upsert', times: 1, error: () => gatewayFailure({ status: 503 }, 'second') });
  await w.run({ trigger: 'resync' });
  t.match(conditionOf(w.api('a'), 'Synced'), { status: 'False', message: /second: 503/, lastTransitionTime: at }, 'same status: the time stays');
});

t.test('written but not visible: Synced, not Ready', async (t) => {
  const w = new FastWorld({ settings: { settle: { budgetMs: 1_000, initialDelayMs: 250, maxDelayMs: 500, reloadEveryMs: 3_000 } } });
  w.apply(apiDefinition('a').build());
  if (!('dropReloads' in w.gateway)) throw new Error('a Tyk Gateway');
  w.gateway.dropReloads(10);
  await w.run();
  t.match(conditionOf(w.api('a'), 'Synced'), { status: 'True', reason: 'ReconcileSuccess' });
  t.match(conditionOf(w.api('a'), 'Ready'), { status: 'False', reason: 'NotVisible', message: /not yet visible/ });
});

t.test('a policy waiting for its API: Synced=False Waiting, naming it', async (t) => {
  const w = new FastWorld();
  w.apply(securityPolicy('p').granting('missing').build());
  await w.run();
  const p = w.policy('p');
  t.match(conditionOf(p, 'Synced'), { status: 'False', reason: 'Waiting', message: /missing/ });
  t.match(conditionOf(p, 'Ready'), { status: 'False', reason: 'Waiting' });
  t.equal(p?.status?.observedGeneration, 1);
});

t.test('a deletion held by a policy: Ready=False Deleting, Synced=False DeletionHeld', async (t) => {
  const w = new FastWorld();
  w.apply(apiDefinition('a').build());
  w.apply(securityPolicy('p').granting('a').build());
  await w.run();
  w.delete(API_DEFINITION, 'a');
  await w.run();
  t.match(conditionOf(w.api('a'), 'Synced'), { status: 'False', reason: 'DeletionHeld', message: /default\/p/ });
  t.match(conditionOf(w.api('a'), 'Ready'), { status: 'False', reason: 'Deleting', message: /default\/p/ });
});

t.test('conditions of other types are kept; ours are added to a status Tyk Operator wrote, once', async (t) => {
  const w = new FastWorld();
  const theirs = { type: 'Audited', status: 'True', reason: 'ByHand', message: 'checked', lastTransitionTime: '2026-01-01T00:00:00.000Z' };
  w.put(
    apiDefinition('a')
      .withFinalizer()
      .atGeneration(3)
      .withStatus({ api_id: 'ZGVmYXVsdC9h', latestTransaction: { status: 'Successful', time: '2025-01-01T00:00:00Z' }, conditions: [theirs] })
      .build(),
  );
  await w.run();
  const api = w.api('a');
  t.same(
    ((api?.status?.conditions ?? []) as { type: string }[]).map((c) => c.type),
    ['Ready', 'Synced', 'Audited'],
  );
  t.same(conditionOf(api, 'Audited'), theirs, 'untouched');
  t.equal(api?.status?.observedGeneration, 3);
  w.resetCounts();
  await w.run();
  t.equal(w.kube.count('patchStatus'), 0, 'then silent');
});

t.test("a CRD that prunes conditions (Tyk Operator's) is patched once to learn it, then never for them", async (t) => {
  const w = new FastWorld({ statusFields: TYK_OPERATOR_STATUS });
  w.apply(apiDefinition('a').build());
  w.apply(securityPolicy('p').granting('a').build());
  // Tyk Operator synced this one: its status has no conditions, and none can be added
  w.put(
    apiDefinition('old')
      .withFinalizer()
      .withStatus({ api_id: 'ZGVmYXVsdC9vbGQ', latestTransaction: { status: 'Successful', time: '2025-01-01T00:00:00Z' } })
      .build(),
  );
  await w.run();
  t.notOk(w.api('a')?.status?.conditions, 'pruned');
  t.match(w.api('a')?.status, { api_id: 'ZGVmYXVsdC9h', latestTransaction: { status: 'Successful' } });
  t.match(await w.record(API_DEFINITION, 'a'), { conditionsPruned: true });
  t.match(await w.record(API_DEFINITION, 'old'), { conditionsPruned: true });
  t.match(await w.record(SECURITY_POLICY, 'p'), { conditionsPruned: true });
  w.resetCounts();
  for (let i = 0; i < 3; i++) await w.run();
  t.equal(w.kube.count('patchStatus'), 0, 'no patch in a loop');

  // a new generation written looks once more (a CRD upgraded to ours would be noticed), then quiet
  w.updateSpec(API_DEFINITION, 'old', (s) => ({ ...s, active: false }));
  w.resetCounts();
  await w.run();
  await w.run();
  t.equal(w.kube.count('patchStatus', 'ApiDefinition'), 1, 'one look per spec change');

  // they still ride along with a real change, and a failure is still told in latestTransaction
  w.gateway.inject({ op: 'upsert', error: () => gatewayFailure({ status: 400 }, 'POST /tyk/apis') });
  w.updateSpec(API_DEFINITION, 'a', (s) => ({ ...s, active: false }));
  await w.run();
  t.match(w.api('a')?.status?.latestTransaction, { status: 'Failed', error: /rejected/ });
  t.match(await w.record(API_DEFINITION, 'a'), { result: 'invalid', conditionsPruned: true }, 'the record keeps what it learnt');
});

t.test('a CRD upgraded to keep conditions is noticed with the next change', async (t) => {
  const w = new FastWorld({ statusFields: TYK_OPERATOR_STATUS });
  w.apply(apiDefinition('a').build());
  await w.run();
  t.match(await w.record(API_DEFINITION, 'a'), { conditionsPruned: true });
  w.kube.statusFields = {}; // the CRD replaced by ours: it keeps every field
  await w.run();
  t.notOk(w.api('a')?.status?.conditions, 'nothing changed: no patch for conditions alone');
  w.updateSpec(API_DEFINITION, 'a', (s) => ({ ...s, active: false }));
  await w.run();
  t.match(conditionOf(w.api('a'), 'Ready'), { status: 'True', observedGeneration: 2 });
  t.notOk((await w.record(API_DEFINITION, 'a'))?.conditionsPruned, 'forgotten once they are kept');
});
