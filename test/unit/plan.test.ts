import t from 'tap';
import { type DesiredState, type ObservedState, plan } from '../../lib/engine/plan.js';
import { record } from '../fixtures/builders.js';

const ID = 'ZGVmYXVsdC9odHRwYmlu';
const desired = (over: Partial<DesiredState> = {}): DesiredState => ({ id: ID, hash: 'd1', generation: 1, deleting: false, hasFinalizer: true, ...over });
const observed = (hash = 'o1', id = ID): ObservedState => ({ id, hash });

t.test('creates what the cluster declares and the gateway lacks', async (t) => {
  t.same(plan(desired(), undefined, undefined), { action: 'CREATE', reason: 'created in cluster', id: ID });
  t.same(plan(desired(), undefined, record().build()), { action: 'CREATE', reason: 'missing on gateway', id: ID });
});

t.test('adopts an object already on the gateway under our id (update in place)', async (t) => {
  t.same(plan(desired(), observed(), undefined), { action: 'UPDATE', reason: 'adopted from gateway', id: ID });
});

t.test('steady state is a NOOP', async (t) => {
  t.same(plan(desired(), observed('o1'), record().synced('d1', 'o1').build()), { action: 'NOOP', reason: 'unchanged', id: ID });
});

t.test('a spec change is an UPDATE; a gateway-side change is drift', async (t) => {
  t.equal(plan(desired({ hash: 'd2' }), observed('o1'), record().synced('d1', 'o1').build()).reason, 'spec changed');
  const drift = plan(desired(), observed('o2'), record().synced('d1', 'o1').build());
  t.same([drift.action, drift.reason], ['UPDATE', 'drifted on gateway']);
});

t.test('an id change writes the new id and retires the old', async (t) => {
  const p = plan(desired({ id: 'new' }), undefined, record().withId('old').build());
  t.same(p, { action: 'CREATE', reason: 'id changed', id: 'new', retireId: 'old' });
});

t.test('deletion needs a claim: our finalizer, or a record of a vanished resource', async (t) => {
  t.same(plan(desired({ deleting: true }), observed(), record().build()), { action: 'DELETE', reason: 'deleted in cluster', id: ID });
  t.same(plan(desired({ deleting: true }), undefined, undefined), { action: 'DELETE', reason: 'already gone', id: ID });
  t.same(plan(desired({ deleting: true, hasFinalizer: false }), observed(), record().build()).action, 'NOOP');
  t.same(plan(undefined, observed(), record().build()), { action: 'DELETE', reason: 'deleted in cluster', id: ID });
  t.same(plan(undefined, undefined, record().build()), { action: 'DELETE', reason: 'already gone', id: ID });
  t.same(plan(undefined, observed(), undefined), { action: 'NOOP', reason: 'not managed', id: ID }, 'never touches what we never managed');
});

t.test('failures: transient ones retry, invalid specs wait for a spec change', async (t) => {
  t.equal(plan(desired(), observed(), record().failed('boom').build()).reason, 'retrying after failure');
  t.equal(plan(desired(), observed(), record().invalid('bad').build()).action, 'NOOP');
  t.equal(plan(desired(), undefined, record().invalid('bad').build()).reason, 'invalid spec unchanged', 'even when missing on the gateway');
  t.equal(plan(desired({ hash: 'd2' }), observed(), record().invalid('bad').build()).reason, 'spec changed');
  t.same(plan(desired({ invalid: 'unsupported' }), undefined, undefined), { action: 'NOOP', reason: 'invalid spec', id: ID });
  const known = record().invalid('unsupported').build();
  t.equal(plan(desired({ invalid: 'unsupported' }), undefined, known).reason, 'invalid spec unchanged');
});

t.test('a write that never became visible is written again', async (t) => {
  t.same(plan(desired(), observed(), record().pending().build()).reason, 'not yet visible on gateway');
  t.same(plan(desired(), undefined, record().pending().build()).action, 'CREATE');
});

t.test('diverged (the gateway renamed something) stays quiet until something changes', async (t) => {
  t.equal(plan(desired(), observed('o1'), record().synced('d1', 'o1').diverged('renamed').build()).action, 'NOOP');
  t.equal(plan(desired(), observed('o9'), record().synced('d1', 'o1').diverged('renamed').build()).reason, 'drifted on gateway');
});

t.test('an invalid spec that changed is tried again; one that did not stays quiet', async (t) => {
  const known = record().invalid('bad').build();
  t.same(plan(desired({ invalid: 'bad', hash: known.desiredHash }), undefined, known).reason, 'invalid spec unchanged');
  t.same(plan(desired({ invalid: 'bad', hash: 'other' }), undefined, known).reason, 'invalid spec', 'a new invalid spec is recorded anew');
});

t.test('a policy waiting for its API is a WAIT, and is written once the dependency is ready', async (t) => {
  t.same(plan(desired({ waiting: 'ApiDefinition default/a is not synced yet' }), observed(), record().synced('d1', 'o1').build()), {
    action: 'WAIT',
    reason: 'waiting for dependency',
    id: ID,
  });
  t.same(plan(desired(), observed('o1'), record().synced('d1', 'o1').waiting('was waiting').build()), { action: 'UPDATE', reason: 'dependency ready', id: ID });
});

t.test('a record from before the id was known ("") is no id change', async (t) => {
  t.same(plan(desired(), observed('o1'), record().synced('d1', 'o1').withId('').build()), { action: 'NOOP', reason: 'unchanged', id: ID });
});

t.test('nothing desired, observed or recorded: not ours, and no id', async (t) => {
  t.same(plan(undefined, undefined, undefined), { action: 'NOOP', reason: 'not managed', id: '' });
});
