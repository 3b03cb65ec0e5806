/**
 * One owner per gateway object (lib/engine/owners.ts) and decide()'s use of it: refusals
 * before any write (IdClaimed, AdoptionNotPermitted, ListenPathClash), the contest over a
 * phase's objects (oldest first, stable), deletions that leave what is not ours, claims and
 * releases carried in the decision, and a claim lost to a concurrent run.
 */
import t from 'tap';
import { conditionsFor } from '../../lib/engine/conditions.js';
import { decide, recordAfter } from '../../lib/engine/decide.js';
import { outcomeEvent } from '../../lib/engine/outcome-events.js';
import { type Contestant, contest, hasOwners, olderFirst, ownerKey, recordedHere, refusalOf } from '../../lib/engine/owners.js';
import { API_DEFINITION } from '../../lib/kinds/api-definition/kind.js';
import { SECURITY_POLICY } from '../../lib/kinds/security-policy/kind.js';
import { TYK_OAS_API_DEFINITION } from '../../lib/kinds/tyk-oas-api-definition/kind.js';
import type { KubeObject } from '../../lib/kube/types.js';
import { OwnershipError } from '../../lib/platform/errors.js';
import type { SyncRecord } from '../../lib/store/types.js';
import { apiDefinition, defaultIdOf, recordFor } from '../fixtures/builders.js';
import { at, desired, ID, loaded, quietOf, removeOf, upsertOf } from '../fixtures/loaded.js';

const OTHER = defaultIdOf('payments', 'team-b');
const teamB = { ref: 'ApiDefinition/team-b/payments', uid: 'uid-b' };
const self = { ref: 'ApiDefinition/default/httpbin', uid: 'uid-self' };

function made(name: string, namespace: string, created: string | undefined, uid: string, listenPath = `/${name}`, domain?: string): KubeObject {
  const o = apiDefinition(name)
    .inNamespace(namespace)
    .patchSpec({ proxy: { target_url: 'http://x', listen_path: listenPath }, ...(domain ? { domain } : {}) })
    .build();
  return { ...o, metadata: { ...o.metadata, uid, ...(created ? { creationTimestamp: created } : {}) } };
}

function contestant(o: KubeObject, over: Partial<Contestant> = {}): Contestant {
  const ns = o.metadata.namespace ?? '';
  const spec = o.spec as { proxy: { listen_path: string }; domain?: string };
  return {
    key: `ApiDefinition/${ns}/${o.metadata.name}`,
    kind: API_DEFINITION,
    obj: o,
    gateway: 'default',
    id: defaultIdOf(o.metadata.name, ns),
    owner: null,
    body: { proxy: { listen_path: spec.proxy.listen_path }, ...(spec.domain ? { domain: spec.domain } : {}) },
    ...over,
  };
}

t.test('owner keys: per gateway, APIs of both kinds in one id space, policies apart', async (t) => {
  t.equal(ownerKey('default', API_DEFINITION, 'x'), 'default/api/x');
  t.equal(ownerKey('default', TYK_OAS_API_DEFINITION, 'x'), 'default/api/x', 'an OAS API and a classic one share ids on Tyk');
  t.equal(ownerKey('context:ns/eu', SECURITY_POLICY, 'x'), 'context:ns/eu/policy/x');
  t.ok(hasOwners(API_DEFINITION) && hasOwners(TYK_OAS_API_DEFINITION) && hasOwners(SECURITY_POLICY));
});

t.test('recordedHere: no record is no claim', async (t) => {
  t.equal(recordedHere({ record: null, gateway: 'default', id: ID }), false);
  const ours = recordFor('ApiDefinition', 'httpbin').synced('d1', 'o1').build();
  t.equal(recordedHere({ record: ours, gateway: 'default', id: ours.id }), true);
});

t.test('refusalOf: owned by another, unowned and not adoptable, or free', async (t) => {
  const obj = apiDefinition('httpbin').build();
  const base = { kind: API_DEFINITION, key: 'ApiDefinition/default/httpbin', obj, record: null, gateway: 'default', present: true };
  t.match(refusalOf({ ...base, id: OTHER, owner: teamB }, undefined), { reason: 'IdClaimed', message: /owned by another resource/ });
  t.match(
    refusalOf({ ...base, id: OTHER, owner: { ref: 'ApiDefinition/default/older', uid: 'u' } }, undefined),
    { message: /owned by ApiDefinition\/default\/older/ },
    'an owner in its own namespace is named',
  );
  t.equal(refusalOf({ ...base, id: OTHER, owner: { ...self, uid: 'recreated' } }, undefined), undefined, 'its own (by name): free');
  t.match(refusalOf({ ...base, id: OTHER, owner: null }, undefined), { reason: 'AdoptionNotPermitted', message: /ADOPT_NAMESPACES/ });
  t.match(refusalOf({ ...base, id: OTHER, owner: null }, ['other']), { reason: 'AdoptionNotPermitted' }, 'another namespace listed');
  t.equal(refusalOf({ ...base, id: OTHER, owner: null }, ['default']), undefined, 'its namespace listed');
  t.equal(refusalOf({ ...base, id: OTHER, owner: null }, ['*']), undefined, '* lists every namespace');
  t.equal(refusalOf({ ...base, id: ID, owner: null }, undefined), undefined, 'its default id is adopted');
  t.equal(refusalOf({ ...base, id: OTHER, owner: null, present: false }, undefined), undefined, 'nothing on the gateway: a create');
  const ours = recordFor('ApiDefinition', 'httpbin').synced('d1', 'o1').build();
  t.equal(refusalOf({ ...base, id: ours.id, owner: null, record: ours }, undefined), undefined, 'our record says we wrote it');
  t.match(
    refusalOf({ ...base, id: OTHER, owner: null, record: { ...ours, id: OTHER, gateway: 'context:x/y' } }, undefined),
    { reason: 'AdoptionNotPermitted' },
    'a record of another gateway is no claim here',
  );
  t.match(refusalOf({ ...base, id: OTHER, owner: null, record: { ...ours, id: OTHER, refusal: 'IdClaimed' } }, undefined), { reason: 'AdoptionNotPermitted' }, 'a record of a refusal is no claim');
  t.match(refusalOf({ ...base, id: OTHER, owner: null, record: ours }, undefined), { reason: 'AdoptionNotPermitted' }, 'a record of another id is no claim on this one');
  const unowned = { ...API_DEFINITION, ownerSpace: undefined } as typeof API_DEFINITION;
  t.equal(refusalOf({ ...base, kind: unowned, id: OTHER, owner: teamB }, undefined), undefined, 'a kind whose ids have no owners: nothing is refused');
  t.equal(refusalOf({ ...base, kind: { ...API_DEFINITION, kind: 'Other' } as typeof API_DEFINITION, id: '', owner: null }, undefined), undefined, 'no id: nothing to own');
});

t.test('olderFirst: creationTimestamp, then uid; an object without a timestamp is the youngest', async (t) => {
  const a = made('a', 'ns', '2026-01-01T00:00:00Z', 'u2');
  const b = made('b', 'ns', '2026-01-01T00:00:01Z', 'u1');
  const c = made('c', 'ns', '2026-01-01T00:00:00Z', 'u1');
  const d = made('d', 'ns', undefined, 'u0');
  t.same(
    [b, d, a, c].sort(olderFirst).map((o) => o.metadata.name),
    ['c', 'a', 'b', 'd'],
  );
  t.equal(olderFirst(a, a), 0);
  t.equal(olderFirst(a, c), 1, 'the same second: the higher uid is the younger, whichever side it is on');
  t.equal(olderFirst(c, a), -1);
});

t.test('contest: one id, several resources: the store owner keeps it, else the oldest, the same on every run', async (t) => {
  const older = made('payments', 'team-b', '2026-01-01T00:00:00Z', 'uid-b');
  const younger = made('steal', 'team-a', '2026-01-02T00:00:00Z', 'uid-a');
  const sameSecond = made('thief', 'team-a', '2026-01-01T00:00:00Z', 'uid-0');
  const contestants = [contestant(younger, { id: OTHER }), contestant(older)];
  const refused = contest(contestants);
  t.same([...refused.keys()], ['ApiDefinition/team-a/steal']);
  t.match(refused.get('ApiDefinition/team-a/steal'), { reason: 'IdClaimed', message: /owned by another resource/ });
  t.same([...contest([...contestants].reverse()).keys()], ['ApiDefinition/team-a/steal'], 'whatever the order');
  const tie = contest([contestant(older), contestant(sameSecond, { id: OTHER })]);
  t.same([...tie.keys()], ['ApiDefinition/team-b/payments'], 'a tie on the timestamp: the lowest uid keeps it');
  const stored = contest([
    contestant(older, { owner: { ref: 'ApiDefinition/team-a/steal', uid: 'uid-a' } }),
    contestant(younger, { id: OTHER, owner: { ref: 'ApiDefinition/team-a/steal', uid: 'uid-a' } }),
  ]);
  t.same([...stored.keys()], ['ApiDefinition/team-b/payments'], 'the owner the store names keeps it, young or not');
  t.equal(contest([contestant(older), contestant(younger, { gateway: 'context:x/y', id: OTHER })]).size, 0, 'on different gateways: no contest');
  const unowned = { ...API_DEFINITION, ownerSpace: undefined, route: undefined } as typeof API_DEFINITION;
  t.equal(contest([contestant(older, { kind: unowned }), contestant(younger, { kind: unowned, id: OTHER })]).size, 0, 'a kind whose ids have no owners: no contest');
  t.equal(contest([contestant(older, { id: '' }), contestant(younger, { id: '' })]).size, 0, 'no id: no contest');
});

t.test('contest: one domain and listen path: the younger is refused, naming its own field', async (t) => {
  const older = made('shop', 'team-b', '2026-01-01T00:00:00Z', 'u1', '/shop', 'shop.example.com');
  const younger = made('shop', 'team-a', '2026-01-02T00:00:00Z', 'u2', '/shop', 'shop.example.com');
  const sibling = made('shop2', 'team-b', '2026-01-03T00:00:00Z', 'u3', '/shop', 'shop.example.com');
  const refused = contest([contestant(younger), contestant(older), contestant(sibling)]);
  t.match(refused.get('ApiDefinition/team-a/shop'), {
    reason: 'ListenPathClash',
    message: /^spec\.proxy\.listen_path \/shop on domain shop\.example\.com is already served on gateway default by an older resource/,
  });
  t.match(refused.get('ApiDefinition/team-b/shop2'), { message: /by ApiDefinition\/team-b\/shop;/ }, 'an older one of its own namespace is named');
  t.notOk(refused.has('ApiDefinition/team-b/shop'), 'the older keeps serving');
  const otherDomain = made('shop', 'team-c', '2026-01-04T00:00:00Z', 'u4', '/shop', 'other.example.com');
  const noDomain = made('shop', 'team-d', '2026-01-05T00:00:00Z', 'u5', '/shop');
  t.equal(contest([contestant(older), contestant(otherDomain), contestant(noDomain)]).size, 0, 'another domain (or none) is another route');
  const loser = made('loser', 'team-e', '2026-01-06T00:00:00Z', 'u6', '/shop', 'shop.example.com');
  const byId = contest([contestant(older), contestant(loser, { id: defaultIdOf('shop', 'team-b') })]);
  t.match(byId.get('ApiDefinition/team-e/loser'), { reason: 'IdClaimed' }, 'refused for its id, not also for its path');
  const oas = contestant(younger, { kind: TYK_OAS_API_DEFINITION, key: 'TykOasApiDefinition/team-a/shop', id: 'oas-id' });
  t.equal(contest([contestant(older), oas]).size, 0, 'listen paths are compared among ApiDefinitions');
  t.equal(contest([contestant(older), contestant(younger, { body: { proxy: {} } }), contestant(younger, { key: 'k', id: 'k', body: undefined })]).size, 0, 'no listen path: nothing to clash');
  // a kind's route may answer an empty path: it serves no route either
  const emptyPath = { ...API_DEFINITION, route: () => ({ field: 'spec.path', path: '', domain: '' }) } as typeof API_DEFINITION;
  t.equal(contest([contestant(older, { kind: emptyPath }), contestant(younger, { kind: emptyPath })]).size, 0, 'an empty path: nothing to clash');
});

t.test('decide: a write refused by ownership is Failed with the reason, saved once, no write, no claim', async (t) => {
  const fresh = loaded({ record: null, desired: desired({ id: OTHER }), owner: teamB });
  const d = decide(fresh, at());
  t.match(d, {
    action: 'NOOP',
    reason: 'IdClaimed',
    id: OTHER,
    patchStatus: true,
    what: 'quiet',
    outcome: { result: 'failed', code: 'ID_CLAIMED', save: { result: 'failed', refusal: 'IdClaimed', id: '', failures: 0 } },
  });
  t.notOk('write' in d, 'no write');
  t.equal(quietOf(d).reclaim, undefined, 'no claim');
  const again = decide(loaded({ record: quietOf(d).outcome.save ?? null, desired: desired({ id: OTHER }), owner: teamB }), at());
  t.equal(quietOf(again).outcome.save, undefined, 'the same refusal is not saved again');
  t.equal(again.patchStatus, true);
  const synced = recordFor('ApiDefinition', 'httpbin').synced('d1', 'o1').build();
  const moved = decide(loaded({ desired: desired({ id: OTHER, hash: 'd2' }), owner: teamB }), at());
  t.match(quietOf(moved).outcome.save, { id: synced.id, gateway: synced.gateway, refusal: 'IdClaimed' }, 'a synced record keeps the id it wrote');
  const contested = decide(loaded({ desired: desired({ hash: 'd2' }), refusal: { reason: 'ListenPathClash', message: 'spec.proxy.listen_path /x is taken' } }), at());
  t.match(decide(loaded({ refusal: { reason: 'ListenPathClash', message: 'taken' } }), at()), { reason: 'unchanged' }, 'what an earlier run wrote stays until it writes again');
  t.match(contested, { reason: 'ListenPathClash', what: 'quiet', outcome: { result: 'failed', code: 'LISTEN_PATH_CLASH', error: 'spec.proxy.listen_path /x is taken' } });
  const adoption = decide(loaded({ record: null, desired: desired({ id: OTHER }), owner: null }), at());
  t.match(adoption, { reason: 'AdoptionNotPermitted', what: 'quiet', outcome: { code: 'ADOPTION_NOT_PERMITTED' } });
  t.match(decide(loaded({ record: null, desired: desired({ id: OTHER }), owner: null }), at({ adopt: ['*'] })), { action: 'UPDATE', reason: 'adopted from gateway' });
  const gone = decide(loaded({ obj: null, record: null, desired: desired({ id: OTHER }), owner: teamB }), at());
  t.equal(quietOf(gone).outcome.save, undefined, 'nothing saved without a resource');
});

t.test('decide: a write claims the id for the resource; an unchanged object claims a missing owner once', async (t) => {
  const create = decide(loaded({ record: null, observed: undefined, observedBody: null, owner: null }), at());
  t.match(create, { action: 'CREATE', what: 'upsert', claim: { key: `default/api/${ID}`, as: { ref: 'ApiDefinition/default/httpbin' } } });
  const steady = decide(loaded({ owner: null }), at());
  t.match(steady, { action: 'NOOP', reason: 'unchanged', what: 'quiet', reclaim: { key: `default/api/${ID}`, as: { ref: 'ApiDefinition/default/httpbin' } } });
  t.equal(quietOf(decide(loaded({ owner: self }), at())).reclaim, undefined, 'already owned: nothing to claim');
  t.equal(quietOf(decide(loaded({ owner: null, refusal: { reason: 'IdClaimed', message: 'older wins' } }), at())).reclaim, undefined, 'the loser of a contest leaves the claim to the winner');
  t.equal(quietOf(decide(loaded(), at())).reclaim, undefined, 'owner not read: nothing');
});

t.test('decide: a deletion removes only what the resource owns; its finalizer goes either way', async (t) => {
  const deleting = { desired: desired({ deleting: true }) };
  const ours = decide(loaded({ ...deleting, owner: self }), at());
  t.match(ours, { action: 'DELETE', reason: 'deleted in cluster', what: 'remove', write: { present: true, removeFinalizer: true }, release: `default/api/${ID}` });
  const recorded = decide(loaded({ ...deleting, owner: null }), at());
  t.match(recorded, { what: 'remove', write: { present: true }, release: `default/api/${ID}` }, 'no owner entry, our record: ours');
  const theirs = decide(loaded({ ...deleting, desired: desired({ deleting: true, id: OTHER }), record: null, owner: teamB }), at());
  t.match(theirs, { action: 'DELETE', reason: 'not owned', what: 'remove', write: { present: false, removeFinalizer: true } });
  t.equal(removeOf(theirs).release, undefined, 'nothing to release');
  const nobody = decide(loaded({ ...deleting, desired: desired({ deleting: true, id: OTHER }), record: null, owner: null }), at());
  t.match(nobody, { reason: 'not owned', what: 'remove', write: { present: false } }, 'no owner, no record: not ours');
  t.equal(removeOf(nobody).release, undefined);
  const vanished = decide(loaded({ obj: null, desired: undefined, owner: teamB }), at());
  t.match(vanished, { action: 'DELETE', reason: 'not owned', what: 'remove', write: { present: false, removeFinalizer: false } });
});

t.test('recordAfter: a claim lost to a concurrent run is a refusal, not a failure to back off from', async (t) => {
  const l = loaded({ record: null, owner: null, observed: undefined, observedBody: null });
  const d = upsertOf(decide(l, at()));
  const after = recordAfter(d, l, { failed: new OwnershipError('ID_CLAIMED', 'the id is owned by another resource') });
  t.match(after, { result: 'failed', record: { refusal: 'IdClaimed', id: '', failures: 0, error: /owned by another resource/ } });
  t.equal(after.record?.retryAt, undefined);
  const synced = loaded({ owner: null, desired: desired({ hash: 'd2' }) });
  const kept = recordAfter(upsertOf(decide(synced, at())), synced, { failed: new OwnershipError('ID_CLAIMED', 'taken') });
  t.match(kept.record, { id: ID, refusal: 'IdClaimed' }, 'the id it wrote before is kept');
});

t.test('conditions and Events carry the refusal', async (t) => {
  const refused: SyncRecord = { ...recordFor('ApiDefinition', 'httpbin').build(), result: 'failed', refusal: 'IdClaimed', error: 'owned by another resource', failures: 0 };
  const conditions = conditionsFor(refused, { generation: 1, deleting: false }, undefined, '2026-01-01T00:00:00Z');
  t.match(conditions, [
    { type: 'Ready', status: 'False', reason: 'IdClaimed', message: 'owned by another resource' },
    { type: 'Synced', status: 'False', reason: 'IdClaimed' },
  ]);
  const deleting = conditionsFor(refused, { generation: 1, deleting: true }, undefined, '2026-01-01T00:00:00Z');
  t.match(deleting[0], { reason: 'Deleting' });
  t.match(outcomeEvent({ result: 'failed', reason: 'IdClaimed', action: 'NOOP', id: OTHER, error: 'owned by another resource', after: refused }), {
    type: 'Warning',
    reason: 'IdClaimed',
    message: 'owned by another resource',
  });
  t.match(outcomeEvent({ result: 'failed', reason: 'retrying after failure', action: 'UPDATE', id: ID, error: 'x', after: { result: 'failed', error: 'x' } }), { reason: 'SyncFailed' });
});
