/**
 * delete-limit.ts: which decisions are gateway deletions, and a phase over what is left of
 * MAX_DELETES_PER_RUN holding each of them (and nothing else) with the numbers named.
 */
import t from 'tap';
import type { Planned } from '../../lib/engine/apply.js';
import { decide } from '../../lib/engine/decide.js';
import { isGatewayDeletion, limitDeletions } from '../../lib/engine/delete-limit.js';
import { apiDefinition } from '../fixtures/builders.js';
import { at, desired, loaded, quietOf } from '../fixtures/loaded.js';

const obj = apiDefinition('httpbin').withFinalizer().deleting().build();
const deleting = (): Planned => {
  const l = loaded({ obj, desired: desired({ deleting: true }) });
  return { loaded: l, decision: decide(l, at()) };
};
const gone = (): Planned => {
  const l = loaded({ obj, desired: desired({ deleting: true }), observed: undefined, observedBody: null });
  return { loaded: l, decision: decide(l, at()) };
};
const unchanged = (): Planned => {
  const l = loaded();
  return { loaded: l, decision: decide(l, at()) };
};

t.test('a gateway deletion is a decided DELETE the gateway still has', async (t) => {
  t.equal(isGatewayDeletion(deleting().decision), true);
  t.equal(gone().decision.action, 'DELETE');
  t.equal(isGatewayDeletion(gone().decision), false, 'already gone from the gateway: no DELETE sent');
  t.equal(isGatewayDeletion(unchanged().decision), false);
});

t.test('within the limit, or with no limit, nothing changes', async (t) => {
  const planned = [deleting(), deleting(), unchanged()];
  const r = limitDeletions(planned, { max: 2, used: 0 });
  t.same(r, { planned, deletions: 2, held: false });
  t.same(limitDeletions(planned, { max: 0, used: 99 }), { planned, deletions: 2, held: false }, '0: no limit');
});

t.test('over what is left: every deletion of the phase is held, nothing else', async (t) => {
  const planned = [deleting(), unchanged(), gone(), deleting()];
  const r = limitDeletions(planned, { max: 3, used: 2 });
  t.equal(r.held, true);
  t.equal(r.deletions, 2);
  t.same(r.planned[1], planned[1], 'other decisions untouched');
  t.same(r.planned[2], planned[2], 'a deletion the gateway no longer has is not held');
  for (const i of [0, 3]) {
    const decision = r.planned[i]?.decision;
    t.match(decision, { action: 'DELETE', reason: 'deleted in cluster', what: 'quiet', hold: 'delete-limit', patchStatus: false, outcome: { result: 'held' } });
    if (!decision) continue;
    const d = quietOf(decision);
    t.notOk('write' in d, 'nothing to write');
    t.notOk('next' in d, 'no record a write would lead to');
    t.equal(d.outcome.error, 'deletion held: this run would delete 4 objects from the gateway, more than MAX_DELETES_PER_RUN=3; raise the limit (0 turns it off) or delete fewer at a time');
  }
});
