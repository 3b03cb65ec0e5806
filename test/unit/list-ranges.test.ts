/**
 * A range shard's listings (lib/scale/list-ranges.ts): a NameRange says to stop once a page
 * reaches its end with every name in order, once, and forgets what it saw when a listing begins
 * again; rangeListing hands a range's stopping point to the next range of the same tick, kind
 * and namespace only, each token taken once, at most MAX_TOKENS kept.
 */
import t from 'tap';
import { API_DEFINITION } from '../../lib/kinds/api-definition/kind.js';
import { SECURITY_POLICY } from '../../lib/kinds/security-policy/kind.js';
import { MAX_TOKENS, NameRange, rangeListing } from '../../lib/scale/list-ranges.js';
import type { Shard, ShardPart } from '../../lib/scale/shards.js';

const shard = (runId: string, part: ShardPart): Shard => ({ runId, index: 0, count: 2, part });

/** Pages of names through `range`: how many pages it read before it said to stop. */
function pagesRead(range: NameRange, pages: string[][]): number {
  range.begin();
  for (const [i, page] of pages.entries()) {
    for (const name of page) range.seen(name);
    if (range.reached()) return i + 1;
  }
  return pages.length;
}

t.test('a NameRange stops after the page that reaches its end, only with every name in order, and once', async (t) => {
  t.equal(pagesRead(new NameRange('e'), [['a', 'b'], ['c', 'd'], ['e', 'f'], ['g']]), 3);
  t.equal(pagesRead(new NameRange('d'), [['a', 'b'], ['c', 'd'], ['e']]), 2, 'its end itself reached');
  t.equal(pagesRead(new NameRange('b'), [['c', 'a'], ['d'], ['e']]), 3, 'a page out of order: read on to the end');
  t.equal(pagesRead(new NameRange(undefined), [['a'], ['z']]), 2, 'no end: every page');
  const once = new NameRange('b');
  once.begin();
  once.seen('c');
  t.ok(once.reached());
  once.seen('d');
  t.notOk(once.reached(), 'said once');
  t.equal(pagesRead(once, [['a', 'b'], ['c']]), 1, 'begun again: it forgot what it saw and that it said so');
});

t.test('rangeListing: a token goes to the next range of the same tick, kind and namespace, once', async (t) => {
  const handover = new Map<string, string>();
  t.equal(rangeListing(shard('tick-1', { namespaces: ['big'] }), API_DEFINITION, 'big', handover), undefined, 'a shard of whole namespaces: no range');
  t.equal(rangeListing(shard('tick-1', { namespace: 'big', to: 'm' }), API_DEFINITION, 'other', handover), undefined, 'another namespace: no range');
  const first = rangeListing(shard('tick-1', { namespace: 'big', to: 'm' }), API_DEFINITION, 'big', handover);
  t.equal(first?.startAt, undefined, 'the first range begins at the first page');
  first?.stoppedAt('token-at-m');
  t.equal(handover.size, 1);
  t.equal(rangeListing(shard('tick-2', { namespace: 'big', from: 'm' }), API_DEFINITION, 'big', handover)?.startAt, undefined, 'another tick');
  t.equal(rangeListing(shard('tick-1', { namespace: 'big', from: 'm' }), SECURITY_POLICY, 'big', handover)?.startAt, undefined, 'another kind');
  t.equal(rangeListing(shard('tick-1', { namespace: 'big', from: 'n' }), API_DEFINITION, 'big', handover)?.startAt, undefined, 'another range');
  t.equal(rangeListing(shard('tick-1', { namespace: 'big', from: 'm' }), API_DEFINITION, 'big', handover)?.startAt, 'token-at-m', 'its own');
  t.equal(handover.size, 0, 'taken');
  t.equal(rangeListing(shard('tick-1', { namespace: 'big', from: 'm' }), API_DEFINITION, 'big', handover)?.startAt, undefined, 'once');
  t.equal(rangeListing(shard('tick-1', { namespace: 'big', from: 'm' }), API_DEFINITION, 'big', undefined)?.startAt, undefined, 'no handover: from the first page');
});

t.test('rangeListing keeps at most MAX_TOKENS, the oldest going first', async (t) => {
  const handover = new Map<string, string>();
  for (let i = 0; i <= MAX_TOKENS; i++) rangeListing(shard(`tick-${i}`, { namespace: 'big', to: 'm' }), API_DEFINITION, 'big', handover)?.stoppedAt(`token-${i}`);
  t.equal(handover.size, MAX_TOKENS);
  t.equal(rangeListing(shard('tick-0', { namespace: 'big', from: 'm' }), API_DEFINITION, 'big', handover)?.startAt, undefined, 'the oldest is gone');
  t.equal(rangeListing(shard('tick-1', { namespace: 'big', from: 'm' }), API_DEFINITION, 'big', handover)?.startAt, 'token-1', 'the next is kept');
  t.equal(rangeListing(shard(`tick-${MAX_TOKENS}`, { namespace: 'big', from: 'm' }), API_DEFINITION, 'big', handover)?.startAt, `token-${MAX_TOKENS}`);
});

t.test('a token left again is the newest: the older ones go first', async (t) => {
  const handover = new Map<string, string>();
  const leave = (tick: string, token: string) => rangeListing(shard(tick, { namespace: 'big', to: 'm' }), API_DEFINITION, 'big', handover)?.stoppedAt(token);
  leave('tick-a', 'first');
  for (let i = 1; i < MAX_TOKENS; i++) leave(`tick-${i}`, `token-${i}`);
  leave('tick-a', 'again');
  leave('tick-new', 'newest');
  const take = (tick: string) => rangeListing(shard(tick, { namespace: 'big', from: 'm' }), API_DEFINITION, 'big', handover)?.startAt;
  t.equal(take('tick-a'), 'again', 'left again: kept, with its new token');
  t.equal(take('tick-1'), undefined, 'the oldest other went instead');
});
