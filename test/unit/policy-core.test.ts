import t from 'tap';
import { plan } from '../../lib/engine/plan.js';
import { statusPatch } from '../../lib/engine/status.js';
import { SECURITY_POLICY } from '../../lib/kinds/security-policy/kind.js';
import { type ApiResolution, securityPolicyPayload } from '../../lib/kinds/security-policy/payload.js';
import { accessRefs, referencingPolicies } from '../../lib/kinds/shared/api-links.js';
import type { KubeObject } from '../../lib/kube/types.js';
import { record } from '../fixtures/builders.js';

function policy(name: string, entries: unknown[], extra: Record<string, unknown> = {}, ns = 'team'): KubeObject {
  return { apiVersion: 'tyk.tyk.io/v1alpha1', kind: 'SecurityPolicy', metadata: { name, namespace: ns }, spec: { name, active: true, state: 'active', access_rights_array: entries, ...extra } };
}

const known: Record<string, ApiResolution> = {
  'team/a': { ok: true, id: 'ID-A', name: 'API a' },
  'other/b': { ok: true, id: 'ID-B', name: 'API b' },
};
const resolve = (r: { namespace: string; name: string }): ApiResolution => known[`${r.namespace}/${r.name}`] ?? { ok: false, why: 'does not exist' };

t.test("references: namespace defaults to the policy's, kind to ApiDefinition; duplicates collapse; kinds that are not APIs are left out", async (t) => {
  const p = policy('p', [
    { name: 'a' },
    { name: 'b', namespace: 'other' },
    { name: 'a', namespace: 'team' },
    { name: 'x', kind: 'TykOasApiDefinition' },
    { name: 'a', kind: 'ApiDefinition' },
    { name: 'y', kind: 'SubGraph' },
    { namespace: 'n' },
    'junk',
  ]);
  t.same(accessRefs(p), [
    { kind: 'ApiDefinition', namespace: 'team', name: 'a' },
    { kind: 'ApiDefinition', namespace: 'other', name: 'b' },
    { kind: 'TykOasApiDefinition', namespace: 'team', name: 'x' },
  ]);
  t.same(accessRefs({ ...p, spec: {} }), []);
  const deleting = { ...policy('gone', [{ name: 'a' }]), metadata: { name: 'gone', namespace: 'team', deletionTimestamp: 'x' } };
  t.same(
    referencingPolicies({ kind: 'ApiDefinition', namespace: 'team', name: 'a' }, [policy('z', [{ name: 'a' }]), policy('y', [{ name: 'a' }]), deleting, policy('n', [{ name: 'b' }])]),
    [
      { namespace: 'team', name: 'y' },
      { namespace: 'team', name: 'z' },
    ],
    'sorted, live policies only',
  );
});

t.test("payload: access rights keyed by the APIs' gateway ids, operator-only fields dropped", async (t) => {
  const r = securityPolicyPayload(
    policy(
      'p',
      [
        { name: 'a', versions: ['v1'], allowed_urls: [{ url: '/x', methods: ['GET'] }] },
        { name: 'b', namespace: 'other' },
      ],
      { _id: 'mid', contextRef: { name: 'c' }, rate: 10 },
    ),
    'POL',
    'org1',
    resolve,
  );
  t.ok('ok' in r && r.ok);
  if (!('ok' in r) || !r.ok) return;
  t.same(r.body.access_rights, {
    'ID-A': { versions: ['v1'], allowed_urls: [{ url: '/x', methods: ['GET'] }], api_id: 'ID-A', api_name: 'API a' },
    'ID-B': { versions: ['Default'], api_id: 'ID-B', api_name: 'API b' },
  });
  t.match(r.body, { id: 'POL', org_id: 'org1', rate: 10, name: 'p' });
  for (const k of ['_id', 'contextRef', 'access_rights_array']) t.notOk(k in r.body, `${k} not sent`);
  t.same(
    r.links.map((l) => `${l.namespace}/${l.name}`),
    ['team/a', 'other/b'],
  );
});

t.test('payload: an unresolved reference makes the policy wait, naming every missing one', async (t) => {
  const r = securityPolicyPayload(policy('p', [{ name: 'a' }, { name: 'nope' }, { name: 'gone', namespace: 'x' }]), 'POL', undefined, resolve);
  t.same(r, {
    waiting: 'waiting for ApiDefinition team/nope does not exist; ApiDefinition x/gone does not exist',
    links: [
      { kind: 'ApiDefinition', namespace: 'team', name: 'a' },
      { kind: 'ApiDefinition', namespace: 'team', name: 'nope' },
      { kind: 'ApiDefinition', namespace: 'x', name: 'gone' },
    ],
  });
  t.same(securityPolicyPayload(policy('p', [{ name: 'o', kind: 'TykOasApiDefinition' }]), 'POL', undefined, resolve), {
    waiting: 'waiting for TykOasApiDefinition team/o does not exist',
    links: [{ kind: 'TykOasApiDefinition', namespace: 'team', name: 'o' }],
  });
  t.match(securityPolicyPayload(policy('p', [{ name: 'g', kind: 'SubGraph' }]), 'POL', undefined, resolve), {
    ok: false,
    reason: /entry g is a SubGraph; a policy grants ApiDefinitions and TykOasApiDefinitions/,
  });
  t.same(securityPolicyPayload({ ...policy('p', []), spec: undefined }, 'POL', undefined, resolve), { ok: false, reason: 'spec is missing' });
});

t.test('plan: WAIT while a dependency is missing; a resolved wait writes; deletion beats waiting', async (t) => {
  const d = { id: 'P', hash: 'h', generation: 1, deleting: false, hasFinalizer: true };
  t.same(plan({ ...d, waiting: 'for x' }, undefined, undefined), { action: 'WAIT', reason: 'waiting for dependency', id: 'P' });
  t.same(plan({ ...d, waiting: 'for x' }, { id: 'P', hash: 'o' }, record().withId('P').synced('h', 'o').build()).action, 'WAIT', 'what the gateway has is left alone');
  t.same(plan(d, undefined, { ...record().withId('P').build(), result: 'waiting' }), { action: 'CREATE', reason: 'dependency ready', id: 'P' });
  t.same(plan({ ...d, waiting: 'for x', deleting: true }, undefined, undefined).action, 'DELETE');
  t.same(plan(d, undefined, { ...record().withId('').synced('h', 'o').build(), result: 'failed' }).reason, 'missing on gateway', 'an empty recorded id is no id change');
});

t.test('status: links kept equal, empty lists equal no list, pruned transaction not re-patched', async (t) => {
  const rec = record().withId('P').synced('d', 'o').build();
  const links = [{ namespace: 'team', name: 'a' }];
  const cur = { pol_id: 'P', latestTransaction: { status: 'Successful', time: 'x' }, linked_apis: links };
  t.equal(statusPatch(SECURITY_POLICY, cur, rec, { linked_apis: links }), undefined);
  t.match(statusPatch(SECURITY_POLICY, cur, rec, { linked_apis: [] }), { linked_apis: null }, 'an emptied list is removed');
  t.equal(statusPatch(SECURITY_POLICY, { ...cur, linked_apis: undefined }, rec, { linked_apis: [] }), undefined, 'no list = empty list');
  const pruned = { pol_id: 'P', linked_apis: links };
  t.equal(statusPatch(SECURITY_POLICY, pruned, rec, { linked_apis: links }), undefined, 'a CRD that drops latestTransaction is not patched forever');
  t.ok(statusPatch(SECURITY_POLICY, { linked_apis: links }, rec, { linked_apis: links }), 'a first patch still happens');
  t.match(statusPatch(SECURITY_POLICY, cur, rec, { linked_apis: links }, 'MID'), { pol_id: 'MID' }, 'the Dashboard _id when given');
});
