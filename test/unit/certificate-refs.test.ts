/**
 * resolveCertificates (lib/kinds/shared/certificate-refs.ts): Secret references become the
 * store's ids in the fields Tyk reads, merged over the spec's own; what to upload, once per
 * certificate; the uses the record indexes; a content hash that moves with the Secret; a
 * missing Secret waits, a bad one is invalid, named; no key material in anything printable.
 */
import { inspect } from 'node:util';
import t from 'tap';
import { foreignSecretsOf, resolveCertificates, SecretText, secretKey, secretNamesOf } from '../../lib/kinds/shared/certificate-refs.js';
import type { KubeObject } from '../../lib/kube/types.js';
import { secret } from '../fixtures/builders.js';
import { certId, PEM } from '../fixtures/pem.js';

/** A lookup by "namespace/name" over Secrets of any namespace (the tests below that care about namespaces use `secretsAt`). */
const secrets = (...list: KubeObject[]) => {
  const byName = new Map(list.map((s) => [s.metadata.name, s]));
  return (key: string) => byName.get(key.slice(key.indexOf('/') + 1)) ?? null;
};
/** A lookup that answers only the exact "namespace/name" keys given, and records what it was asked. */
const secretsAt = (entries: Record<string, KubeObject>) => {
  const asked: string[] = [];
  const lookup = (key: string) => {
    asked.push(key);
    return entries[key] ?? null;
  };
  return { lookup, asked };
};
const serverTls = secret('server-tls').tls(PEM.server, PEM.serverKey).build();
const clientCert = secret('client-cert').tls(PEM.client).build();

t.test('secretNamesOf: every Secret a spec names, once, in order', async (t) => {
  t.strictSame(
    secretNamesOf({
      certificate_secret_names: ['a', 'b'],
      client_certificate_refs: ['c', 'a'],
      upstream_certificate_refs: { '*': 'd', 'x.example': '' },
      pinned_public_keys_refs: { '*': 'e' },
      certificates: ['not-a-secret'],
    }),
    ['a', 'b', 'c', 'd', 'e'],
  );
  t.strictSame(secretNamesOf(undefined), []);
  t.strictSame(secretNamesOf({ certificate_secret_names: 'a', upstream_certificate_refs: ['x'] }), [], 'wrong shapes name nothing');
});

t.test('each reference becomes the id in the field Tyk reads, over the ids the spec gives', async (t) => {
  const spec = {
    certificate_secret_names: ['server-tls'],
    client_certificate_refs: ['client-cert'],
    client_certificates: ['given-id'],
    upstream_certificate_refs: { '*': 'server-tls' },
    upstream_certificates: { 'other.example': 'kept' },
    pinned_public_keys_refs: { 'api.example': 'client-cert' },
  };
  const r = resolveCertificates(spec, 'team', secrets(serverTls, clientCert), 'org1', 'default');
  if (!r.ok) throw new Error('not ok');
  const server = certId(PEM.server, 'org1');
  const client = certId(PEM.client, 'org1');
  t.strictSame(r.fields, {
    certificates: [server],
    client_certificates: ['given-id', client],
    upstream_certificates: { 'other.example': 'kept', '*': server },
    pinned_public_keys: { 'api.example': client },
  });
  t.strictSame(
    r.uploads.map((u) => [u.id, u.secret]),
    [
      [server, 'team/server-tls'],
      [client, 'team/client-cert'],
    ],
    'one upload per certificate, however often it is named',
  );
  t.match(r.uploads[0]?.pem.reveal(), /BEGIN CERTIFICATE[\s\S]+PRIVATE KEY/, 'the certificate with its key');
  t.notMatch(r.uploads[1]?.pem.reveal(), /PRIVATE KEY/, 'a certificate without a key is sent alone');
  t.strictSame(r.uses, ['Secret/team/server-tls', 'Secret/team/client-cert', `Certificate/default/${server}`, `Certificate/default/${client}`]);
});

t.test('the content hash moves with any byte of a Secret, and only then', async (t) => {
  const spec = { certificate_secret_names: ['s'] };
  const hash = (s: KubeObject) => {
    const r = resolveCertificates(spec, 'ns', secrets(s), '', 'default');
    return r.ok ? r.contentHash : 'not ok';
  };
  const a = hash(secret('s').tls(PEM.server, PEM.serverKey).build());
  t.equal(hash(secret('s').tls(PEM.server, PEM.serverKey).build()), a, 'the same content, the same hash');
  t.not(hash(secret('s').tls(PEM.server, PEM.clientKey).build()), a, 'another key (same certificate, same id) is a change');
  t.not(hash(secret('s').tls(PEM.stranger, PEM.strangerKey).build()), a);
});

t.test('a missing Secret waits; a Secret without what is needed is invalid, named, quoting nothing', async (t) => {
  const waiting = resolveCertificates({ upstream_certificate_refs: { '*': 'gone' } }, 'ns', secrets(), '', 'default');
  t.strictSame(waiting, { ok: false, waiting: 'Secret ns/gone does not exist', uses: ['Secret/ns/gone'] });
  const noCrt = resolveCertificates({ certificate_secret_names: ['x'] }, 'ns', secrets(secret('x').withData({ 'ca.crt': PEM.ca }).build()), '', 'default');
  t.match(noCrt, { ok: false, invalid: 'Secret ns/x has no tls.crt' });
  const garbage = resolveCertificates({ client_certificate_refs: ['x'] }, 'ns', secrets(secret('x').tls(PEM.serverKey).build()), '', 'default');
  t.match(garbage, { ok: false, invalid: /^Secret ns\/x: tls\.crt: no PEM certificate block/ });
  t.notMatch(JSON.stringify(garbage), /PRIVATE|MII/, 'the key is not quoted');
  const serverNoKey = resolveCertificates({ certificate_secret_names: ['c'] }, 'ns', secrets(secret('c').tls(PEM.client).build()), '', 'default');
  t.match(serverNoKey, { ok: false, invalid: 'certificate_secret_names: Secret ns/c has no tls.key' });
  const upstreamNoKey = resolveCertificates({ upstream_certificate_refs: { '*': 'c' } }, 'ns', secrets(secret('c').tls(PEM.client).build()), '', 'default');
  t.match(upstreamNoKey, { ok: false, invalid: 'upstream_certificate_refs.*: Secret ns/c has no tls.key' });
  const nothing = resolveCertificates({ name: 'x' }, 'ns', secrets(), '', 'default');
  t.strictSame(nothing, { ok: true, fields: {}, uploads: [], contentHash: nothing.ok ? nothing.contentHash : '', uses: [] }, 'no references, nothing to do');
});

t.test('one certificate named with and without its key is uploaded with it', async (t) => {
  const withKey = secret('with-key').tls(PEM.client, PEM.clientKey).build();
  const r = resolveCertificates({ client_certificate_refs: ['client-cert'], upstream_certificate_refs: { '*': 'with-key' } }, 'ns', secrets(clientCert, withKey), '', 'default');
  if (!r.ok) throw new Error('not ok');
  t.equal(r.uploads.length, 1);
  t.match(r.uploads[0]?.pem.reveal(), /PRIVATE KEY/);
  t.equal(r.uploads[0]?.secret, 'ns/with-key');
});

t.test('SecretText never prints its text', async (t) => {
  const text = new SecretText(PEM.serverKey);
  const shown = [JSON.stringify({ text }), String(text), `${text}`, inspect({ text }, { depth: 5 }), inspect(text)];
  for (const s of shown) t.notMatch(s, /PRIVATE|MII/, s);
  t.equal(text.reveal(), PEM.serverKey);
});

t.test('names with a namespace: looked up there, named so in uses, messages and uploads; foreignSecretsOf finds them', async (t) => {
  const { lookup, asked } = secretsAt({ 'team/own': serverTls, 'infra/gateway-tls': serverTls });
  const r = resolveCertificates({ certificate_secret_names: ['own', 'infra/gateway-tls'] }, 'team', lookup, 'org1', 'default');
  t.same(asked, ['team/own', 'infra/gateway-tls'], 'a plain name in the object’s namespace, a qualified one in its own');
  if (!r.ok) throw new Error('not ok');
  t.same(r.fields, { certificates: [certId(PEM.server, 'org1')] }, 'the same certificate twice is one id');
  t.same(
    r.uses.filter((u) => u.startsWith('Secret/')),
    ['Secret/team/own', 'Secret/infra/gateway-tls'],
  );
  t.same(
    r.uploads.map((u) => u.secret),
    ['team/own'],
    'one upload for the one certificate',
  );
  const missing = resolveCertificates({ certificate_secret_names: ['infra/gone'] }, 'team', secretsAt({}).lookup, '', 'default');
  t.match(missing, { ok: false, waiting: 'Secret infra/gone does not exist', uses: ['Secret/infra/gone'] });
  t.equal(secretKey('x', 'ns'), 'ns/x');
  t.equal(secretKey('other/x', 'ns'), 'other/x');
  t.same(
    foreignSecretsOf({ certificate_secret_names: ['a', 'ns/b', 'infra/c'], client_certificate_refs: ['far/d'], upstream_certificate_refs: { '*': 'up/e' } }, 'ns'),
    [
      { field: 'certificate_secret_names', key: 'infra/c' },
      { field: 'client_certificate_refs', key: 'far/d' },
      { field: 'upstream_certificate_refs.*', key: 'up/e' },
    ],
    'the fields and keys of Secrets of other namespaces; its own namespace written out is its own',
  );
  t.same(foreignSecretsOf(undefined, 'ns'), []);
});
