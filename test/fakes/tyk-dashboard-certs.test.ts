/**
 * The Dashboard fake's certificate store (/api/certs) answers as the Dashboard swagger
 * documents: uploads only as a multipart file (the documented field, or Tyk Operator's under
 * `certUploadField`), ids from the key's org and the leaf's SHA-256, 404 "Could not create
 * certificate." for a repeat and for what the certificate manager refuses, 500 for a request
 * without the file, org-scoped paged lists (ids, or basics with `mode=detailed` and `filter`),
 * metadata without keys, 400 for another org's ids, deletes (`unknownCertDelete`), 501 for the
 * routes it does not model, and the fake's auth, faults and call log on all of them.
 */
import { createHash, createPublicKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import t from 'tap';
import { type FakeTykDashboard, type FakeTykDashboardOptions, startFakeTykDashboard } from './tyk-dashboard.js';

const TLS = new URL('../fixtures/tls/', import.meta.url);
const read = (name: string) => readFileSync(new URL(name, TLS), 'utf8');
const SERVER = read('server.pem');
const SERVER_KEY = read('server-key.pem');
const CLIENT = read('client.pem');
const CLIENT_KEY = read('client-key.pem');
const CA = read('ca.pem');
const STRANGER = read('stranger.pem');
const EXPIRED = read('expired.pem');
const fingerprint = (pem: string) => createHash('sha256').update(new X509Certificate(pem).raw).digest('hex');

const OTHER_ORG = '5e9d9544a1dcd60001d0ffff';
const err = (message: string) => ({ Status: 'Error', Message: message, Meta: null });
const NO_FILE = err('Failed to read response body, body empty.');

interface Test {
  teardown(fn: () => unknown): void;
}

interface Res {
  status: number;
  body: any;
}

interface Part {
  name: string;
  /** absent: a plain form field, not a file */
  filename?: string;
  content: string;
}

const BOUNDARY = 'dashboard-certs-test-boundary';

function multipart(parts: Part[]): { body: string; contentType: string } {
  const body = parts
    .map((p) => {
      const disposition = `form-data; name="${p.name}"${p.filename === undefined ? '' : `; filename="${p.filename}"`}`;
      return `--${BOUNDARY}\r\nContent-Disposition: ${disposition}\r\nContent-Type: application/x-pem-file\r\n\r\n${p.content}\r\n`;
    })
    .join('');
  return { body: `${body}--${BOUNDARY}--\r\n`, contentType: `multipart/form-data; boundary=${BOUNDARY}` };
}

async function start(tt: Test, options: FakeTykDashboardOptions = {}): Promise<FakeTykDashboard> {
  const d = await startFakeTykDashboard({ secret: 'dash-key', ...options });
  tt.teardown(() => d.close());
  return d;
}

async function call(d: FakeTykDashboard, method: string, path: string, body?: string, headers: Record<string, string> = {}, auth = true): Promise<Res> {
  const res = await fetch(d.url + path, { method, headers: { ...(auth ? { authorization: d.secret } : {}), ...headers }, ...(body === undefined ? {} : { body }) });
  const text = await res.text();
  return { status: res.status, body: text === '' ? undefined : JSON.parse(text) };
}

/** POST /api/certs with these multipart parts. */
function upload(d: FakeTykDashboard, parts: Part[]): Promise<Res> {
  const { body, contentType } = multipart(parts);
  return call(d, 'POST', '/api/certs', body, { 'content-type': contentType });
}

/** POST /api/certs with the PEM as a file under `field` (the swagger's `file` by default). */
function uploadPem(d: FakeTykDashboard, pem: string, field = 'file'): Promise<Res> {
  return upload(d, [{ name: field, filename: 'cert.pem', content: pem }]);
}

t.test('POST /api/certs: a multipart file, the id from the key’s org and the leaf’s SHA-256, one id per certificate', async (tt) => {
  const d = await start(tt);
  const id = d.orgId + fingerprint(SERVER);
  tt.same(await uploadPem(d, SERVER + SERVER_KEY), { status: 200, body: { id, message: 'Certificate added.', status: 'ok' } });
  const stored = d.certs().get(id);
  tt.equal(stored?.orgId, d.orgId, 'in the key’s org');
  tt.equal(stored?.hasPrivate, true, 'with its key');
  tt.equal(stored?.pem, SERVER + SERVER_KEY, 'kept as sent');

  const again = await uploadPem(d, SERVER);
  tt.same(again, { status: 404, body: err(`Could not create certificate.Certificate with ${id} ID already exists.`) }, 'a repeat, key or not: the documented 404');
  tt.equal(d.certs().size, 1);
  tt.equal(d.certs().get(id)?.hasPrivate, true, 'the first upload stands');

  const keyFirst = await uploadPem(d, CLIENT_KEY + CLIENT);
  tt.equal(keyFirst.body.id, d.orgId + fingerprint(CLIENT), 'the key before the certificate (as Tyk Operator sends it) names the certificate');
  const chain = await uploadPem(d, STRANGER + CA);
  tt.equal(chain.body.id, d.orgId + fingerprint(STRANGER), 'a chain is named by its leaf');
  tt.equal(d.certs().get(chain.body.id)?.hasPrivate, false);
});

t.test('POST /api/certs without the documented file is 500 "body empty"; another field or part is not read', async (tt) => {
  const d = await start(tt);
  const refused: [string, Promise<Res>][] = [
    ['the PEM as text/plain (the gateway’s way)', call(d, 'POST', '/api/certs', SERVER, { 'content-type': 'text/plain' })],
    ['no body', call(d, 'POST', '/api/certs')],
    ['JSON', call(d, 'POST', '/api/certs', JSON.stringify({ file: SERVER }), { 'content-type': 'application/json' })],
    ['a url-encoded form', call(d, 'POST', '/api/certs', `file=${encodeURIComponent(SERVER)}`, { 'content-type': 'application/x-www-form-urlencoded' })],
    ['the file under cert (Tyk Operator’s field)', uploadPem(d, SERVER, 'cert')],
    ['file as a plain field, not a file', upload(d, [{ name: 'file', content: SERVER }])],
    ['an empty file', upload(d, [{ name: 'file', filename: 'cert.pem', content: '' }])],
    ['multipart without a boundary', call(d, 'POST', '/api/certs', multipart([{ name: 'file', filename: 'c.pem', content: SERVER }]).body, { 'content-type': 'multipart/form-data' })],
    ['a body that is not multipart', call(d, 'POST', '/api/certs', SERVER, { 'content-type': `multipart/form-data; boundary=${BOUNDARY}` })],
  ];
  for (const [what, res] of refused) tt.same(await res, { status: 500, body: NO_FILE }, what);
  tt.equal(d.certs().size, 0, 'nothing stored');

  const both = await upload(d, [
    { name: 'cert', filename: 'a.pem', content: SERVER },
    { name: 'note', content: 'a plain field' },
    { name: 'file', filename: 'b.pem', content: CA },
    { name: 'file', filename: 'c.pem', content: CLIENT },
  ]);
  tt.equal(both.status, 200);
  tt.same([...d.certs().keys()], [d.orgId + fingerprint(CA)], 'only the first file under `file` is read');
});

t.test('certUploadField cert: the upload is read from `cert`, and `file` alone is not', async (tt) => {
  const d = await start(tt, { certUploadField: 'cert' });
  tt.same(await uploadPem(d, SERVER), { status: 500, body: NO_FILE }, 'the swagger’s field is not read');
  const res = await uploadPem(d, SERVER, 'cert');
  tt.same(res, { status: 200, body: { id: d.orgId + fingerprint(SERVER), message: 'Certificate added.', status: 'ok' } });
  tt.equal(d.certs().size, 1);
});

t.test('POST /api/certs: what the certificate manager refuses is 404 "Could not create certificate." and its reason', async (tt) => {
  const d = await start(tt);
  const publicKey = createPublicKey(SERVER_KEY).export({ type: 'spki', format: 'pem' }).toString();
  const broken = '-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n';
  const refused: [string, string, string][] = [
    ['no PEM at all', 'not a certificate', 'Failed to decode certificate. It should be PEM encoded.'],
    ['a key alone', SERVER_KEY, 'Failed to decode certificate. It should be PEM encoded.'],
    ['an expired certificate', EXPIRED, 'certificate is expired'],
    ['an expired certificate in the chain', SERVER + EXPIRED, 'certificate is expired'],
    ['a certificate block that does not parse', broken, 'x509: malformed certificate'],
    ['another certificate’s key', SERVER + CLIENT_KEY, 'tls: private key does not match public key'],
    ['two keys', SERVER + SERVER_KEY + SERVER_KEY, 'Found multiple private keys'],
    ['a public key with a certificate', SERVER + publicKey, "Public keys can't be combined with certificates"],
  ];
  for (const [what, pem, reason] of refused) {
    tt.same(await uploadPem(d, pem), { status: 404, body: err(`Could not create certificate.${reason}`) }, what);
  }
  const pub = await uploadPem(d, publicKey);
  tt.equal(pub.status, 501, 'a public key alone: not modelled');
  tt.match(pub.body.Message, /^not modelled by the fake: public keys/);
  tt.equal(d.certs().size, 0, 'nothing stored');
});

t.test('GET /api/certs: the org’s ids, paged like every Dashboard list; mode=detailed lists basics, filtered by key', async (tt) => {
  const d = await start(tt, { pageSize: 2 });
  tt.same((await call(d, 'GET', '/api/certs')).body, { certs: null, pages: 0 }, 'none: null, no pages');
  const ids = [SERVER + SERVER_KEY, CA, CLIENT_KEY + CLIENT].map((pem) => d.storeCert(pem));
  d.storeCert(STRANGER, OTHER_ORG);

  tt.same((await call(d, 'GET', '/api/certs')).body, { certs: ids.slice(0, 2), pages: 2 }, 'page 1 by default; only the key’s org');
  tt.same((await call(d, 'GET', '/api/certs?p=2')).body, { certs: ids.slice(2), pages: 2 });
  tt.same((await call(d, 'GET', '/api/certs?p=3')).body, { certs: null, pages: 2 }, 'past the end');
  tt.same((await call(d, 'GET', '/api/certs?p=-1')).body, { certs: ids, pages: 1 }, 'p < 0: every item');
  tt.same((await call(d, 'GET', '/api/certs?filter=with_pk')).body, { certs: ids.slice(0, 2), pages: 2 }, 'filter applies only with mode=detailed');

  const detailed = await call(d, 'GET', '/api/certs?mode=detailed&p=-1');
  tt.same(Object.keys(detailed.body).sort(), ['cert_basics', 'pages']);
  tt.same(
    detailed.body.cert_basics.map((b: any) => b.id),
    ids,
  );
  tt.same(detailed.body.cert_basics[0], {
    id: ids[0],
    issuer_cn: 'gateway-reconciler test CA',
    subject_cn: 'localhost',
    dns_names: ['localhost'],
    has_private: true,
    is_ca: false,
    not_before: detailed.body.cert_basics[0].not_before,
    not_after: '2126-10-28T09:59:43Z',
  });
  tt.match(detailed.body.cert_basics[1], { id: ids[1], is_ca: true, has_private: false });
  tt.notMatch(JSON.stringify(detailed.body), 'PRIVATE KEY', 'no key in a list');
  const withKey = (await call(d, 'GET', '/api/certs?mode=detailed&p=-1&filter=with_pk')).body;
  tt.same(
    withKey.cert_basics.map((b: any) => b.id),
    [ids[0], ids[2]],
  );
  const withoutKey = (await call(d, 'GET', '/api/certs?mode=detailed&filter=without_pk')).body;
  tt.same(withoutKey, { cert_basics: [detailed.body.cert_basics[1]], pages: 1 }, 'paged after filtering');
  tt.same((await call(d, 'GET', '/api/certs?mode=detailed&filter=omit&p=2')).body.pages, 2, 'omit keeps all');

  const arrays = await start(tt, { emptyList: '[]' });
  tt.same((await call(arrays, 'GET', '/api/certs')).body, { certs: [], pages: 0 }, 'emptyList []');
  tt.same((await call(arrays, 'GET', '/api/certs?mode=detailed')).body, { cert_basics: [], pages: 0 });
});

t.test('GET /api/certs/{certId}: the metadata, never the key; unknown 404; another org’s 400', async (tt) => {
  const d = await start(tt);
  const id = d.storeCert(SERVER + SERVER_KEY);
  const meta = await call(d, 'GET', `/api/certs/${id}`);
  tt.equal(meta.status, 200);
  tt.same(Object.keys(meta.body).sort(), ['dns_names', 'fingerprint', 'has_private', 'id', 'is_ca', 'issuer', 'not_after', 'not_before', 'subject']);
  tt.match(meta.body, {
    id,
    fingerprint: fingerprint(SERVER),
    has_private: true,
    is_ca: false,
    dns_names: ['localhost'],
    subject: { CommonName: 'localhost' },
    issuer: { CommonName: 'gateway-reconciler test CA' },
  });
  tt.notMatch(JSON.stringify(meta.body), /PRIVATE KEY|MII/, 'the key is never echoed');

  const unknown = `${d.orgId}${'0'.repeat(64)}`;
  tt.same(await call(d, 'GET', `/api/certs/${unknown}`), { status: 404, body: err('Could not retrieve certificate details. Certificate with given SHA256 fingerprint not found.') });
  const theirs = d.storeCert(CA, OTHER_ORG);
  tt.same(await call(d, 'GET', `/api/certs/${theirs}`), { status: 400, body: err('Attempted access to non-owned certificate.') }, 'another org’s, stored or not');
  tt.same(await call(d, 'GET', `/api/certs/${fingerprint(SERVER)}`), { status: 400, body: err('Attempted access to non-owned certificate.') }, 'an id without our org');
});

t.test('DELETE /api/certs/{certId}: removed; unknown 404 (or 200 with unknownCertDelete); another org’s 400 and kept', async (tt) => {
  const d = await start(tt);
  const id = d.storeCert(SERVER);
  const theirs = d.storeCert(SERVER, OTHER_ORG);
  tt.same(await call(d, 'DELETE', `/api/certs/${theirs}`), { status: 400, body: err('Attempted access to non-owned certificate.') });
  tt.same(await call(d, 'DELETE', `/api/certs/${id}`), { status: 200, body: { status: 'ok', message: 'removed' } });
  tt.same([...d.certs().keys()], [theirs], 'ours gone, theirs kept');
  tt.same(await call(d, 'DELETE', `/api/certs/${id}`), { status: 404, body: err('Could not delete certificate.') }, 'again: the documented 404');
  tt.same(await uploadPem(d, SERVER), { status: 200, body: { id, message: 'Certificate added.', status: 'ok' } }, 'uploadable again once removed');

  const lax = await start(tt, { unknownCertDelete: '200' });
  tt.same(await call(lax, 'DELETE', `/api/certs/${id.replace(d.orgId, lax.orgId)}`), { status: 200, body: { status: 'ok', message: 'removed' } });
  tt.equal((await call(lax, 'DELETE', `/api/certs/${theirs}`)).status, 400, 'another org’s is still 400');
});

t.test('/api/certs: documented routes not modelled are 501; other methods 405; unknown paths 404', async (tt) => {
  const d = await start(tt);
  const id = d.storeCert(SERVER);
  const unmodelled: [string, string][] = [
    ['GET', '/api/certs/details'],
    ['GET', `/api/certs/${id}/apis`],
    ['GET', `/api/certs/dependencies/${id}`],
    ['DELETE', `/api/certs/dependencies/${id}`],
  ];
  for (const [method, path] of unmodelled) {
    const res = await call(d, method, path);
    tt.equal(res.status, 501, `${method} ${path}`);
    tt.match(res.body, { Status: 'Error', Message: /^not modelled by the fake: /, Meta: null });
  }
  tt.equal(d.certs().size, 1, 'the dependency delete deleted nothing');
  for (const [method, path] of [
    ['PUT', '/api/certs'],
    ['DELETE', '/api/certs'],
    ['PUT', `/api/certs/${id}`],
    ['POST', `/api/certs/${id}`],
    ['POST', '/api/certs/details'],
    ['POST', `/api/certs/${id}/apis`],
  ] as const) {
    tt.same(await call(d, method, path, ''), { status: 405, body: err('Method not allowed') }, `${method} ${path}`);
  }
  tt.same(await call(d, 'GET', `/api/certs/${id}/apis/more`), { status: 404, body: err('Not found') });
});

t.test('/api/certs: the key’s auth (401), fault injection, the call log; not API or policy writes; wipe keeps them', async (tt) => {
  const d = await start(tt);
  const { body, contentType } = multipart([{ name: 'file', filename: 'cert.pem', content: SERVER }]);
  for (const [method, path] of [
    ['GET', '/api/certs'],
    ['GET', `/api/certs/${d.orgId}${fingerprint(SERVER)}`],
    ['DELETE', `/api/certs/${d.orgId}${fingerprint(SERVER)}`],
    ['GET', '/api/certs/details'],
  ]) {
    tt.same(await call(d, method as string, path as string, undefined, {}, false), { status: 401, body: err('Not authorised') }, `${method} ${path}`);
  }
  tt.same(await call(d, 'POST', '/api/certs', body, { 'content-type': contentType }, false), { status: 401, body: err('Not authorised') });
  tt.equal(d.certs().size, 0, 'an unauthorised upload stores nothing');

  d.inject({ method: 'POST', path: '/api/certs', status: 503 });
  tt.same(await uploadPem(d, SERVER), { status: 503, body: err('injected fault') });
  tt.equal(d.certs().size, 0, 'a faulted upload does not happen');
  d.inject({ path: /^\/api\/certs\//, drop: true });
  await tt.rejects(call(d, 'GET', `/api/certs/${d.orgId}${fingerprint(SERVER)}`), 'dropped');
  tt.equal((await uploadPem(d, SERVER)).status, 200);

  tt.equal(d.count('POST', '/api/certs'), 3);
  tt.equal(d.count('*', /^\/api\/certs/), 8);
  tt.match(d.calls.at(-1), { method: 'POST', path: '/api/certs', status: 200, body: /name="file"/ });
  tt.equal(d.writes(), 0, 'certificates are not API or policy writes');
  d.wipe();
  tt.equal(d.certs().size, 1, 'certificates live in Redis: a fresh database keeps them');
});
