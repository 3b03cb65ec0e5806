/**
 * The gateway fake's certificate store (/tyk/certs) answers as the gateway swagger documents:
 * ids from the org and the certificate's SHA-256, one id per certificate, 403 for a repeat or
 * a body without a certificate, lists per org, metadata by id, deletes, and no reload needed;
 * and its certificate manager refuses what Tyk's does (expired, malformed, a key that does not
 * match, two keys), with Tyk's messages.
 */
import { createHash, createPublicKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import t from 'tap';
import { startFakeTykGateway } from './tyk-gateway.js';

const TLS = new URL('../fixtures/tls/', import.meta.url);
const SERVER = readFileSync(new URL('server.pem', TLS), 'utf8');
const SERVER_KEY = readFileSync(new URL('server-key.pem', TLS), 'utf8');
const CA = readFileSync(new URL('ca.pem', TLS), 'utf8');
const CLIENT = readFileSync(new URL('client.pem', TLS), 'utf8');
const CLIENT_KEY = readFileSync(new URL('client-key.pem', TLS), 'utf8');
const EXPIRED = readFileSync(new URL('expired.pem', TLS), 'utf8');
const fingerprint = (pem: string) => createHash('sha256').update(new X509Certificate(pem).raw).digest('hex');

t.test('/tyk/certs: upload, list, read, delete', async (t) => {
  const gw = await startFakeTykGateway({ secret: 's3cret' });
  t.teardown(() => gw.close());
  const call = async (method: string, path: string, body?: string, secret = gw.secret) => {
    const res = await fetch(gw.url + path, { method, headers: { 'x-tyk-authorization': secret, 'content-type': 'text/plain' }, ...(body === undefined ? {} : { body }) });
    return { status: res.status, body: (await res.json()) as any };
  };

  t.match(await call('GET', '/tyk/certs', undefined, 'wrong'), { status: 403, body: { status: 'error', message: /administrative access/ } });

  const added = await call('POST', '/tyk/certs?org_id=org1', SERVER + SERVER_KEY);
  const id = `org1${fingerprint(SERVER)}`;
  t.same(added, { status: 200, body: { id, status: 'ok', message: 'Certificate added' } }, 'id: the org and the SHA-256 of the certificate');
  t.match(await call('POST', '/tyk/certs?org_id=org1', SERVER), { status: 403, body: { message: `Certificate with ${id} ID already exists.` } }, 'one id per certificate, key or not');
  t.match(await call('POST', '/tyk/certs?org_id=org1', 'not a pem'), { status: 403, body: { status: 'error' } });
  const ca = await call('POST', '/tyk/certs?org_id=org2', CA);
  t.equal(ca.body.id, `org2${fingerprint(CA)}`);

  t.same((await call('GET', '/tyk/certs?org_id=org1')).body, { certs: [id] }, 'listed per org');
  t.equal((await call('GET', '/tyk/certs')).body.certs.length, 2, 'all without org_id');
  t.match((await call('GET', '/tyk/certs?org_id=org2&mode=detailed')).body, { certs: [{ id: ca.body.id, is_ca: true, has_private: false, not_before: /Z$/ }] });

  const meta = await call('GET', `/tyk/certs/${id}`);
  t.match(meta, { status: 200, body: { id, fingerprint: fingerprint(SERVER), has_private: true, is_ca: false, dns_names: ['localhost'], subject: { CommonName: String } } });
  t.notMatch(JSON.stringify(meta.body), 'PRIVATE KEY', 'the key is never echoed');
  t.equal((await call('GET', `/tyk/certs/${id},${ca.body.id}`)).body.length, 2, 'a list of ids answers an array');
  t.match(await call('GET', '/tyk/certs/org1nothere'), { status: 404, body: { message: 'Certificate with given SHA256 fingerprint not found.' } });
  t.match(await call('PUT', `/tyk/certs/${id}`, SERVER), { status: 405 });

  gw.restart();
  t.equal(gw.certs().size, 2, 'certificates live in Redis: a restart keeps them');
  t.same(await call('DELETE', `/tyk/certs/${id}?org_id=org1`), { status: 200, body: { status: 'ok', message: 'removed' } });
  t.same(await call('DELETE', `/tyk/certs/${id}?org_id=org1`), { status: 200, body: { status: 'ok', message: 'removed' } }, 'present or not');
  t.same([...gw.certs().keys()], [ca.body.id]);
  t.equal(gw.count('POST', '/tyk/certs'), 4);
  t.equal(gw.writes(), 0, 'certificates are not API or policy writes');
});

t.test('/tyk/certs: the certificate manager refuses what Tyk refuses, 403 with its message; the key may come first', async (t) => {
  const gw = await startFakeTykGateway({ secret: 's3cret' });
  t.teardown(() => gw.close());
  const post = async (pem: string) => {
    const res = await fetch(`${gw.url}/tyk/certs?org_id=org1`, { method: 'POST', headers: { 'x-tyk-authorization': gw.secret }, body: pem });
    return { status: res.status, body: (await res.json()) as any };
  };
  const publicKey = createPublicKey(SERVER_KEY).export({ type: 'spki', format: 'pem' }).toString();
  const refused: [string, string, string][] = [
    ['no PEM at all', 'not a pem', 'Failed to decode certificate. It should be PEM encoded.'],
    ['an expired certificate', EXPIRED, 'certificate is expired'],
    ['an expired certificate after the leaf', SERVER + EXPIRED, 'certificate is expired'],
    ['a certificate block that does not parse', '-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n', 'x509: malformed certificate'],
    ['another certificate’s key', SERVER + CLIENT_KEY, 'tls: private key does not match public key'],
    ['a key block that does not parse', `${SERVER}-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n`, 'tls: failed to parse private key'],
    ['two keys', SERVER + SERVER_KEY + SERVER_KEY, 'Found multiple private keys'],
    ['a public key with a certificate', SERVER + publicKey, "Public keys can't be combined with certificates"],
  ];
  for (const [what, pem, message] of refused) t.same(await post(pem), { status: 403, body: { status: 'error', message } }, what);
  t.match(await post(publicKey), { status: 501, body: { message: /^not modelled by the fake: public keys/ } }, 'a public key alone: not modelled');
  t.equal(gw.certs().size, 0, 'nothing stored');
  t.same(await post(CLIENT_KEY + CLIENT), { status: 200, body: { id: `org1${fingerprint(CLIENT)}`, status: 'ok', message: 'Certificate added' } }, 'key first');
  t.equal(gw.certs().get(`org1${fingerprint(CLIENT)}`)?.hasPrivate, true);
});
