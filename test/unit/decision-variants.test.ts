/**
 * Decision is one tagged union (`what`: quiet, upsert, remove), matched exhaustively: a switch
 * that leaves a variant out does not compile (`npx tsc`, through the @ts-expect-error below),
 * and at run time its default says so instead of treating the decision as another variant.
 */
import t from 'tap';
import { type Decision, decide, exhaustive, holdOf, isWrite } from '../../lib/engine/decide.js';
import { at, desired, ID, loaded } from '../fixtures/loaded.js';

/** Every variant, once: a variant added to Decision and not listed here fails to compile. */
const VARIANTS: Record<Decision['what'], string> = { quiet: 'writes nothing', upsert: 'sends a body', remove: 'removes the object' };

function says(d: Decision): string {
  switch (d.what) {
    case 'quiet':
      return `${VARIANTS.quiet}: ${d.outcome.result}`;
    case 'upsert':
      return `${VARIANTS.upsert}: ${d.action}`;
    case 'remove':
      return `${VARIANTS.remove}: ${d.write.present ? 'sent' : 'nothing to send'}`;
    default:
      return exhaustive(d);
  }
}

/** A switch without `remove`: the never check in its default refuses it at compile time. */
function withoutRemove(d: Decision): string {
  switch (d.what) {
    case 'quiet':
    case 'upsert':
      return d.what;
    default:
      // @ts-expect-error a removal reaches the default, so it is not `never`
      return exhaustive(d);
  }
}

const steady = decide(loaded(), at());
const drifted = decide(loaded({ observed: { id: ID, hash: 'o2' } }), at());
const deleting = decide(loaded({ desired: desired({ deleting: true }) }), at());

t.test('decide gives each variant, and a switch over them sees each', async (t) => {
  t.equal(says(steady), 'writes nothing: unchanged');
  t.equal(says(drifted), 'sends a body: UPDATE');
  t.equal(says(deleting), 'removes the object: sent');
});

t.test('isWrite and holdOf match every variant', async (t) => {
  t.same([steady, drifted, deleting].map(isWrite), [false, true, true]);
  const held = decide(loaded({ desired: desired({ deleting: true }), referencedBy: [{ namespace: 'default', name: 'p' }] }), at());
  t.same([held, steady, drifted, deleting].map(holdOf), ['policies', undefined, undefined, undefined]);
});

t.test('a variant a switch left out is not taken for another', async (t) => {
  t.equal(withoutRemove(steady), 'quiet');
  t.throws(() => withoutRemove(deleting), /a decision of no known variant/);
});
