/**
 * The state table of plan() at the edges of its rules (test/unit/plan.test.ts states them):
 * which record fields each row looks at, and which it does not.
 */
import t from 'tap';
import { type DesiredState, type ObservedState, plan } from '../../lib/engine/plan.js';
import { record } from '../fixtures/builders.js';

const ID = 'ZGVmYXVsdC9odHRwYmlu';
const desired = (over: Partial<DesiredState> = {}): DesiredState => ({ id: ID, hash: 'd1', generation: 1, deleting: false, hasFinalizer: true, ...over });
const observed = (hash = 'o1', id = ID): ObservedState => ({ id, hash });

t.test('an invalid spec is known only when the record says invalid for the same spec', async (t) => {
  const failedSameHash = record().synced('bad', 'o1').failed('boom').build();
  t.equal(plan(desired({ invalid: 'x', hash: 'bad' }), observed(), failedSameHash).reason, 'invalid spec', 'a failure is no verdict on the spec');
  const invalidSameHash = record().synced('bad', 'o1').invalid('x').build();
  t.same(plan(desired({ invalid: 'x', hash: 'bad' }), observed(), invalidSameHash), { action: 'NOOP', reason: 'invalid spec unchanged', id: ID });
});

t.test('a deletion applies to the desired id; a vanished object to the recorded one', async (t) => {
  t.same(plan(desired({ deleting: true, id: 'now' }), undefined, record().withId('then').build()), { action: 'DELETE', reason: 'already gone', id: 'now' });
  t.same(plan(desired({ deleting: true, hasFinalizer: false, id: 'now' }), undefined, undefined), { action: 'NOOP', reason: 'not managed', id: 'now' });
  t.same(plan(undefined, observed('o1', 'seen'), record().withId('then').build()), { action: 'DELETE', reason: 'deleted in cluster', id: 'then' });
});

t.test('a deletion comes before an invalid spec or a wait', async (t) => {
  t.equal(plan(desired({ deleting: true, invalid: 'x' }), observed(), record().build()).action, 'DELETE');
  t.equal(plan(desired({ deleting: true, waiting: 'x' }), observed(), record().build()).action, 'DELETE');
  t.equal(plan(desired({ invalid: 'x', waiting: 'y' }), observed(), record().build()).action, 'NOOP', 'an invalid spec waits for nothing');
});

t.test('the first write: created, or adopted when the gateway has it', async (t) => {
  t.same(plan(desired(), undefined, undefined), { action: 'CREATE', reason: 'created in cluster', id: ID });
  t.same(plan(desired({ id: 'x' }), observed('o1', 'x'), undefined), { action: 'UPDATE', reason: 'adopted from gateway', id: 'x' });
});

t.test('an id change is a write whatever else the record says', async (t) => {
  t.same(plan(desired({ id: 'new' }), observed('o1', 'new'), record().withId('old').build()), { action: 'UPDATE', reason: 'id changed', id: 'new', retireId: 'old' });
  t.same(plan(desired({ id: 'new' }), undefined, record().withId('old').invalid('bad').build()), { action: 'CREATE', reason: 'id changed', id: 'new', retireId: 'old' });
});

t.test('a dependency that became ready: written, created when the gateway lacks it', async (t) => {
  t.same(plan(desired(), undefined, record().synced('d1', 'o1').waiting('w').build()), { action: 'CREATE', reason: 'dependency ready', id: ID });
  t.same(plan(desired({ hash: 'd2' }), observed(), record().synced('d1', 'o1').waiting('w').build()), { action: 'UPDATE', reason: 'dependency ready', id: ID });
});

t.test('a spec change: created when the gateway lacks it', async (t) => {
  t.same(plan(desired({ hash: 'd2' }), undefined, record().synced('d1', 'o1').build()), { action: 'CREATE', reason: 'spec changed', id: ID });
  t.same(plan(desired({ hash: 'd2' }), observed(), record().synced('d1', 'o1').build()), { action: 'UPDATE', reason: 'spec changed', id: ID });
});

t.test('the gateway lost it: created again, even after a failure or a pending write', async (t) => {
  t.same(plan(desired(), undefined, record().synced('d1', 'o1').failed('boom').build()), { action: 'CREATE', reason: 'missing on gateway', id: ID });
  t.same(plan(desired(), undefined, record().synced('d1', 'o1').pending().build()), { action: 'CREATE', reason: 'missing on gateway', id: ID });
  t.same(plan(desired(), undefined, record().synced('d1', 'o1').build()), { action: 'CREATE', reason: 'missing on gateway', id: ID });
});

t.test('retries and re-writes are updates in place, drift or not', async (t) => {
  t.same(plan(desired(), observed('o1'), record().synced('d1', 'o1').failed('boom').build()), { action: 'UPDATE', reason: 'retrying after failure', id: ID });
  t.same(plan(desired(), observed('o9'), record().synced('d1', 'o1').failed('boom').build()), { action: 'UPDATE', reason: 'retrying after failure', id: ID });
  t.same(plan(desired(), observed('o9'), record().synced('d1', 'o1').pending().build()), { action: 'UPDATE', reason: 'not yet visible on gateway', id: ID });
  t.same(plan(desired(), observed('o2'), record().synced('d1', 'o1').build()), { action: 'UPDATE', reason: 'drifted on gateway', id: ID });
});
