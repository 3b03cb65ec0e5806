/**
 * lib/kinds/tyk-oas-api-definition/payload.ts: the ConfigMap reference, the document read from it and the
 * refusals that name why, the id, what the resource sets over the document (clientCertificate,
 * versioning), and the status fields.
 */
import t from 'tap';
import { hashOf } from '../../lib/engine/hash.js';
import type { ApiRef } from '../../lib/kinds/shared/api-links.js';
import { configMapRefOf, oasDocumentOf, oasIdOf, oasStatusFields, tykOasPayload, versionRefsOf } from '../../lib/kinds/tyk-oas-api-definition/payload.js';
import type { KubeObject } from '../../lib/kube/types.js';
import { configMap, defaultIdOf, oasDocument, tykOasApi } from '../fixtures/builders.js';

const ref = (obj: KubeObject) => {
  const r = configMapRefOf(obj);
  if ('invalid' in r) throw new Error(r.invalid);
  return r;
};

t.test('the ConfigMap reference: its namespace defaults to the resource’s; name and keyName are needed', async (t) => {
  t.same(configMapRefOf(tykOasApi('a').inNamespace('team').fromConfigMap('cm', 'doc.json').build()), { namespace: 'team', name: 'cm', keyName: 'doc.json', use: 'ConfigMap/team/cm' });
  t.same(configMapRefOf(tykOasApi('a').fromConfigMap('cm', 'doc.json', 'shared').build()), { namespace: 'shared', name: 'cm', keyName: 'doc.json', use: 'ConfigMap/shared/cm' });
  const noKey = tykOasApi('a').build();
  noKey.spec = { tykOAS: { configmapRef: { name: 'cm' } } };
  t.same(configMapRefOf(noKey), { invalid: 'spec.tykOAS.configmapRef needs a name and a keyName' });
  t.same(configMapRefOf({ ...noKey, spec: {} }), { invalid: 'spec.tykOAS.configmapRef needs a name and a keyName' });
});

t.test('the document: read from data or binaryData, parsed; each refusal names the ConfigMap and key', async (t) => {
  const r = ref(tykOasApi('a').build());
  const doc = oasDocument('a');
  const text = JSON.stringify(doc);
  const read = oasDocumentOf(r, configMap('a').withText('oas.json', text).build());
  t.same(read, { ok: true, doc, contentHash: hashOf(text) });
  const binary = { ...configMap('a').build(), data: undefined, binaryData: { 'oas.json': Buffer.from(text).toString('base64') } };
  t.match(oasDocumentOf(r, binary), { ok: true, doc });
  t.same(oasDocumentOf(r, null), { ok: false, waiting: 'ConfigMap default/a does not exist' }, 'a ConfigMap not created yet is waited for, as a Secret is');
  t.same(oasDocumentOf(r, configMap('a').withText('other', text).build()), { ok: false, invalid: 'ConfigMap default/a has no key oas.json' });
  t.same(oasDocumentOf(r, configMap('a').withText('oas.json', '{"x": ').build()), { ok: false, invalid: 'ConfigMap default/a key oas.json is not valid JSON' });
  t.same(oasDocumentOf(r, configMap('a').withText('oas.json', '[1]').build()), { ok: false, invalid: 'ConfigMap default/a key oas.json is not a JSON object' });
  t.same(oasDocumentOf(r, configMap('a').withText('oas.json', '{"openapi":"3.0.3"}').build()), {
    ok: false,
    invalid: 'ConfigMap default/a key oas.json has no x-tyk-api-gateway object: a Tyk OAS API needs one',
  });
  const edited = oasDocumentOf(r, configMap('a').withText('oas.json', `${text} `).build());
  t.not(edited.ok && edited.contentHash, hashOf(text), 'the content hash follows the text');
});

t.test('the id: the document’s, else the status’s, else base64url of namespace/name', async (t) => {
  const obj = tykOasApi('a').build();
  t.equal(oasIdOf(oasDocument('a', { id: 'pinned' }), obj), 'pinned');
  t.equal(oasIdOf(oasDocument('a'), tykOasApi('a').withStatus({ id: 'tyk-operators' }).build()), 'tyk-operators');
  t.equal(oasIdOf(oasDocument('a'), obj), defaultIdOf('a'));
  t.equal(oasIdOf(undefined, obj), defaultIdOf('a'));
});

t.test('the payload: our id in info.id; the allowlist’s certificates added to the document’s; enabled set', async (t) => {
  const doc = oasDocument('a', { extra: { server: { listenPath: { value: '/a/' }, clientCertificate: { enabled: false, allowlist: ['existing'] } } } });
  const before = structuredClone(doc);
  const r = tykOasPayload(tykOasApi('a').allowingClients('s1').build(), doc, 'ID', { clientCertificates: ['c1', 'existing'] });
  t.match(r, { ok: true, body: { 'x-tyk-api-gateway': { info: { id: 'ID' }, server: { listenPath: { value: '/a/' }, clientCertificate: { enabled: true, allowlist: ['existing', 'c1'] } } } } });
  t.same(doc, before, 'the document given is not changed');
  const plain = tykOasPayload(tykOasApi('a').build(), oasDocument('a'), 'ID');
  t.match(plain, { ok: true });
  t.notOk(plain.ok && 'clientCertificate' in ((plain.body['x-tyk-api-gateway'] as { server: object }).server ?? {}), 'nothing set without spec.clientCertificate');
});

t.test('versioning: versions by their ids; a missing one makes it wait, named; an ApiDefinition is refused', async (t) => {
  const base = tykOasApi('base').versioned('v1', ['v2', 'v3']).build();
  t.same(
    versionRefsOf(base).map((v) => v.ref),
    [
      { kind: 'TykOasApiDefinition', namespace: 'default', name: 'v2' },
      { kind: 'TykOasApiDefinition', namespace: 'default', name: 'v3' },
    ],
  );
  const ids: Record<string, string> = { v2: 'ID2', v3: 'ID3' };
  const resolveVersion = (r: ApiRef) => (ids[r.name] ? { ok: true as const, id: ids[r.name] as string, name: r.name } : { ok: false as const, why: 'does not exist' });
  t.match(tykOasPayload(base, oasDocument('base'), 'B', { resolveVersion }), {
    ok: true,
    body: {
      'x-tyk-api-gateway': {
        info: {
          versioning: {
            enabled: true,
            name: 'v1',
            default: 'v1',
            location: 'header',
            key: 'x-api-version',
            versions: [
              { name: 'v2', id: 'ID2' },
              { name: 'v3', id: 'ID3' },
            ],
          },
        },
      },
    },
  });
  delete ids.v3;
  t.same(tykOasPayload(base, oasDocument('base'), 'B', { resolveVersion }), { ok: false, waiting: 'waiting for TykOasApiDefinition default/v3 does not exist' });
  t.same(tykOasPayload(base, oasDocument('base'), 'B'), {
    ok: false,
    waiting: 'waiting for TykOasApiDefinition default/v2 could not be read; TykOasApiDefinition default/v3 could not be read',
  });
  const classic = tykOasApi('base').build();
  classic.spec = { ...classic.spec, versioning: { enabled: true, versions: [{ name: 'old', tykOasApiDefinitionRef: { name: 'old', kind: 'ApiDefinition' } }] } };
  t.same(tykOasPayload(classic, oasDocument('base'), 'B', { resolveVersion }), {
    ok: false,
    invalid: "spec.versioning.versions: old names an ApiDefinition; a Tyk OAS API's versions are TykOasApiDefinitions",
  });
});

t.test('status fields: what the document sent says, and the hashes; absent ones are removed (null)', async (t) => {
  const obj = tykOasApi('a').build();
  const sent = oasDocument('a', { listenPath: '/a/', upstream: 'http://up', extra: { server: { listenPath: { value: '/a/' }, customDomain: { enabled: true, name: 'a.example' } } } });
  t.same(oasStatusFields(obj, sent, 'CM'), {
    name: 'a',
    listenPath: '/a/',
    targetURL: 'http://up',
    domain: 'a.example',
    enabled: true,
    latestConfigMapHash: 'CM',
    latestCRDSpecHash: hashOf(obj.spec),
    latestTykSpecHash: hashOf(sent),
  });
  t.same(oasStatusFields(obj, undefined, undefined), {
    name: null,
    listenPath: null,
    targetURL: null,
    domain: null,
    enabled: null,
    latestConfigMapHash: null,
    latestCRDSpecHash: hashOf(obj.spec),
    latestTykSpecHash: null,
  });
  t.match(oasStatusFields(obj, oasDocument('a', { active: false }), 'CM'), { enabled: false, domain: null });
});
