/**
 * The developer portal's desired states (lib/kinds/portal/payload.ts), pure: a catalogue
 * entry from a description (fields, policy, documentation, base64 for swagger), a catalogue's
 * inline fields under its description's (Tyk Operator's merge), ownership among our catalogues
 * (the oldest wins, the younger is invalid naming it, releases and deletions spare what others
 * hold), the hash that leaves out what depends on the record, and one configuration per gateway.
 */
import t from 'tap';
import { catalogueEntryIds, catalogueId } from '../../lib/gateway/portal.js';
import { catalogueDesired, configurationDesired, declaredEntries, descriptionDesired, entryOf, type OtherCatalogue, olderFirst, type ResolvePolicy } from '../../lib/kinds/portal/payload.js';
import type { KubeObject } from '../../lib/kube/types.js';

const resolve: ResolvePolicy = (ref) => (ref.name === 'missing' ? { ok: false, why: 'does not exist' } : { ok: true, id: `mid-${ref.name}`, ownId: `own-${ref.name}` });

function obj(kind: string, name: string, spec: Record<string, unknown>, extra: Partial<KubeObject['metadata']> = {}): KubeObject {
  return { apiVersion: 'tyk.tyk.io/v1alpha1', kind, metadata: { name, namespace: 'default', ...extra }, spec };
}

t.test('catalogue ids: the policy ids, sorted and encoded, read back', async (t) => {
  t.equal(catalogueId(['b', 'a', 'b']), 'catalogue:a,b', 'order and repeats do not matter');
  t.equal(catalogueId([]), 'catalogue:');
  t.strictSame(catalogueEntryIds(catalogueId(['x,y', 'z'])), ['x,y', 'z'], 'a comma in an id survives');
  t.strictSame(catalogueEntryIds('catalogue:'), []);
  t.equal(catalogueEntryIds('ZGVmYXVsdC9h'), undefined, 'not a catalogue id');
});

t.test('an entry: the fields it sets, its policy by Dashboard id, its documentation', async (t) => {
  const r = entryOf(
    {
      name: 'A',
      show: true,
      auth_type: 'keyless',
      fields: { tier: 'gold' },
      contextRef: { name: 'ctx' },
      policyRef: { name: 'p' },
      docs: { doc_type: 'swagger_custom_url', documentation: 'https://x' },
    },
    'default',
    resolve,
    'here',
  );
  t.strictSame(r, {
    ok: true,
    entry: { name: 'A', show: true, auth_type: 'keyless', fields: { tier: 'gold' }, version: 'v2', policy_id: 'mid-p', docs: { doc_type: 'swagger_custom_url', documentation: 'https://x' } },
    policyId: 'mid-p',
    aliases: ['own-p'],
  });
  t.match(entryOf({ policy_id: 'literal' }, 'default', resolve, 'here'), { ok: true, policyId: 'literal', aliases: [], entry: { policy_id: 'literal', version: 'v2' } }, 'a policy_id as given');
  t.match(entryOf({ name: 'A' }, 'default', resolve, 'apis[0]'), { ok: false, invalid: 'apis[0]: neither policyRef nor policy_id names the SecurityPolicy it publishes' });
  t.match(entryOf({ policyRef: { name: 'missing', namespace: 'team' } }, 'default', resolve, 'here'), { ok: false, waiting: 'here: waiting for SecurityPolicy team/missing, which does not exist' });
  t.match(entryOf({ policy_id: 'p', docs: { doc_type: 'swagger', documentation: ' ' } }, 'default', resolve, 'here'), { ok: false, invalid: 'here: docs.documentation is empty' });
});

t.test('swagger documentation goes base64, as the Dashboard takes it; what is base64 already stays', async (t) => {
  const doc = '{"swagger": "2.0", "info": {"title": "x"}}';
  const b64 = Buffer.from(doc).toString('base64');
  const of = (documentation: string, doc_type = 'swagger') => {
    const r = entryOf({ policy_id: 'p', docs: { doc_type, documentation } }, 'default', resolve, 'here');
    return r.ok ? (r.entry.docs as { documentation: string }).documentation : undefined;
  };
  t.equal(of(doc), b64, 'a document is encoded');
  t.equal(of(b64), b64, 'base64 is sent as it is');
  t.equal(of(`${b64.slice(0, 8)}\n${b64.slice(8)}`), b64, 'wrapped base64 too');
  t.equal(of('https://x/spec.json', 'swagger_custom_url'), 'https://x/spec.json', 'a URL as it is');
  t.equal(of('type Query { a: Int }', 'graphql'), 'type Query { a: Int }', 'graphql as it is');
});

t.test("a catalogue's entries: its inline fields under its description's (what the description sets wins)", async (t) => {
  const desc = obj('APIDescription', 'd', { name: 'From description', show: false, long_description: '', policyRef: { name: 'p' }, contextRef: { name: 'elsewhere' } });
  const cat = obj('PortalAPICatalogue', 'c', {
    apis: [
      { apiDescriptionRef: { name: 'd' }, name: 'Inline', show: true, short_description: 'kept' },
      { name: 'Second', policy_id: 'a-literal' },
    ],
  });
  const r = declaredEntries(cat, (ref) => (ref.name === 'd' ? desc : null), resolve);
  t.strictSame(
    r,
    {
      ok: true,
      entries: [
        { name: 'Second', version: 'v2', policy_id: 'a-literal' },
        { name: 'From description', show: true, short_description: 'kept', version: 'v2', policy_id: 'mid-p' },
      ],
      aliases: ['own-p'],
    },
    "sorted by policy id; false and '' in the description do not override (Go's omitempty), its contextRef is not an entry field",
  );
  t.match(
    declaredEntries(obj('PortalAPICatalogue', 'c', { apis: [{ apiDescriptionRef: { name: 'gone' } }, { policyRef: { name: 'missing' } }] }), () => null, resolve),
    { ok: false, waiting: 'waiting for APIDescription default/gone, which does not exist; apis[1]: waiting for SecurityPolicy default/missing, which does not exist' },
    'every missing reference named',
  );
  t.match(
    declaredEntries(obj('PortalAPICatalogue', 'c', { apis: [{ policy_id: 'x' }, { policy_id: 'x' }] }), () => null, resolve),
    { ok: false, invalid: /publishes policy x again/ },
  );
  t.match(
    declaredEntries(obj('PortalAPICatalogue', 'c', { apis: ['x'] }), () => null, resolve),
    { ok: false, invalid: 'apis[0] is not an object' },
  );
});

t.test('ownership: the oldest catalogue declaring an entry owns it; the younger is invalid, naming it', async (t) => {
  const cat = obj('PortalAPICatalogue', 'young', { apis: [] });
  const declared = { ok: true as const, entries: [{ policy_id: 'p1' }, { policy_id: 'p2' }], aliases: [] };
  const older: OtherCatalogue = { key: 'default/old', before: true, declares: new Set(['p2']), holds: new Set(['p2']) };
  const r = catalogueDesired(cat, declared, [older], ['p1', 'p2'], undefined);
  t.match(
    r,
    { id: catalogueId(['p1']), invalid: "PortalAPICatalogue default/old already publishes policy p2 in this organisation's catalogue: each entry belongs to one PortalAPICatalogue" },
    'it keeps what it owned but the taken entry',
  );
  t.equal(r.body, undefined, 'nothing is sent');
  const gone = catalogueDesired(cat, declared, [], ['p1', 'p2'], undefined);
  t.not(gone.hash, r.hash, 'the owner is in the hash: when it goes, that is a change');
  const younger: OtherCatalogue = { key: 'default/younger', before: false, declares: new Set(['p2']), holds: new Set(['p2']) };
  t.match(catalogueDesired(cat, declared, [younger], [], undefined), { id: catalogueId(['p1', 'p2']), body: { apis: declared.entries } }, 'a younger one declaring it does not take it');
});

t.test('releases and deletions spare what other catalogues hold; the hash leaves the release out', async (t) => {
  const cat = obj('PortalAPICatalogue', 'c', { email: 'owner@example.com' });
  const declared = { ok: true as const, entries: [{ policy_id: 'p1' }], aliases: ['own-p1', 'held-alias'] };
  const other: OtherCatalogue = { key: 'default/other', before: false, declares: new Set(['p3']), holds: new Set(['p3', 'held-alias']) };
  const r = catalogueDesired(cat, declared, [other], ['p1', 'p2', 'p3'], 'org');
  t.strictSame(
    r.body,
    { apis: [{ policy_id: 'p1' }], replaces: ['own-p1'], email: 'owner@example.com', org_id: 'org', release: ['p2'] },
    'p2 released, p3 (held by another) kept; an alias another holds is not taken over',
  );
  const after = catalogueDesired(cat, declared, [other], ['p1'], 'org');
  t.equal(after.hash, r.hash, 'after the release is written the hash is the same: no second write');
  t.equal(after.body?.release, undefined);
  const deleting = obj('PortalAPICatalogue', 'c', {}, { deletionTimestamp: '2026-01-01T00:00:00Z' });
  t.strictSame(catalogueDesired(deleting, declared, [other], ['p1', 'p3'], 'org'), { id: catalogueId(['p1']) }, 'a deletion removes what it owns but others hold');
  t.strictSame(catalogueDesired(cat, { ok: false, waiting: 'waiting for x' }, [], ['p1'], 'org'), { id: catalogueId(['p1']), waiting: 'waiting for x' }, 'one that cannot be built keeps what it owns');
});

t.test('APIDescriptions: valid or not, and nothing else in their hash', async (t) => {
  const d = descriptionDesired(obj('APIDescription', 'd', { name: 'A', policyRef: { name: 'p' } }), 'id', resolve);
  const edited = descriptionDesired(obj('APIDescription', 'd', { name: 'B', policyRef: { name: 'p' } }), 'id', resolve);
  t.match(d, { id: 'id', body: { name: 'A', policy_id: 'mid-p' } });
  t.equal(d.hash, edited.hash, 'an edit is the catalogues’ to write, not the description’s');
  t.match(descriptionDesired(obj('APIDescription', 'd', { policyRef: { name: 'missing' } }), 'id', resolve), { id: 'id', waiting: /SecurityPolicy default\/missing/ });
  t.strictSame(descriptionDesired(obj('APIDescription', 'd', {}, { deletionTimestamp: 'x' }), 'id', resolve), { id: 'id' });
});

t.test('PortalConfig: its spec without what is not configuration; a second is invalid, naming the first', async (t) => {
  const c = obj('PortalConfig', 'c', { require_key_approval: true, contextRef: { name: 'ctx' }, id: 'x', org_id: 'y' });
  t.strictSame(configurationDesired(c, undefined), { id: 'configuration', body: { require_key_approval: true } });
  t.match(configurationDesired(c, 'default/first'), { id: 'configuration', invalid: /PortalConfig default\/first already configures/ });
  t.not(configurationDesired(c, 'default/first').hash, configurationDesired(c, 'default/other').hash, 'the owner is in the hash');
  const a = obj('PortalConfig', 'a', {}, { creationTimestamp: '2026-01-02T00:00:00Z' });
  const b = obj('PortalConfig', 'b', {}, { creationTimestamp: '2026-01-01T00:00:00Z' });
  const b2 = obj('PortalConfig', 'b2', {}, { creationTimestamp: '2026-01-01T00:00:00Z' });
  t.strictSame(
    [a, b2, b].sort(olderFirst).map((o) => o.metadata.name),
    ['b', 'b2', 'a'],
    'oldest first, then by name',
  );
});
