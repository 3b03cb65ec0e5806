/**
 * certificateId: the id Tyk gives a PEM, from the org and the certificate's SHA-256 (checked
 * against the fingerprint Node's X.509 parser reports), the same with or without the key or a
 * chain after it, and a clear error naming no key material for what holds no certificate.
 */
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import t from 'tap';
import { certificateId } from '../../lib/gateway/certificates.js';
import { InvalidSpecError } from '../../lib/platform/errors.js';

const tls = new URL('../fixtures/tls/', import.meta.url);
const read = (name: string) => readFileSync(new URL(name, tls), 'utf8');
const SERVER = read('server.pem');
const KEY = read('server-key.pem');
const CA = read('ca.pem');

t.test('certificateId', async (t) => {
  const fingerprint = new X509Certificate(SERVER).fingerprint256.replaceAll(':', '').toLowerCase();
  t.equal(certificateId(SERVER), fingerprint, 'the SHA-256 of the DER, as hex');
  t.equal(certificateId(SERVER, 'org1'), `org1${fingerprint}`, 'after the org id');
  t.equal(certificateId(SERVER + KEY, 'org1'), `org1${fingerprint}`, 'a key after it changes nothing');
  t.equal(certificateId(SERVER + CA, 'org1'), `org1${fingerprint}`, 'the leaf (first block) names a chain');
  t.not(certificateId(CA, 'org1'), certificateId(SERVER, 'org1'));
  t.throws(() => certificateId(KEY), InvalidSpecError, 'a key alone');
  t.throws(() => certificateId(''), { message: /no PEM certificate block/ });
  const garbage = '-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n';
  t.throws(() => certificateId(garbage), { message: /not a parsable X\.509 certificate/ });
  try {
    certificateId(KEY);
  } catch (err) {
    t.notMatch((err as Error).message, /MII|PRIVATE/, 'the error quotes nothing of the PEM');
  }
});
