/**
 * TykGatewayClient (lib/gateway/tyk-ce.ts) against the loopback Tyk Gateway fake, over real
 * HTTP: every Gateway method for APIs, policies and Tyk OAS APIs, the documented answers for
 * what the gateway does not have (404, and older gateways' 500 "Delete failed" settled by a
 * GET), a gateway that predates the policy and OAS APIs (Tyk Gateway 3.1), a gateway whose
 * policies come from a Dashboard, an OAS id a Classic API has, and error mapping.
 */
import { readFileSync } from 'node:fs';
import t, { type Test as TapTest } from 'tap';
import { certificateId } from '../../lib/gateway/certificates.js';
import { TykGatewayClient, type TykGatewayOptions } from '../../lib/gateway/tyk-ce.js';
import type { JsonObject } from '../../lib/gateway/types.js';
import { errorCode, GatewayApiError, GatewayRejectedError, GatewayResponseTooLargeError, GatewayUnavailableError, GatewayUnsupportedError, InvalidSpecError } from '../../lib/platform/errors.js';
import { undiciTransports } from '../../lib/platform/http-undici.js';
import { type FakeTykGateway, type FakeTykOptions, startFakeTykGateway } from '../fakes/tyk-gateway.js';
import { PEM } from '../fixtures/pem.js';

/** The clients here send over undici's pooled client, as full runs do (the fast tier's contract tests use Node's own). */
const UNDICI = undiciTransports();

interface Test {
  teardown(fn: () => unknown): void;
}

async function setup(tt: Test, options: FakeTykOptions = {}, extra: Partial<TykGatewayOptions> = {}): Promise<{ gw: FakeTykGateway; client: TykGatewayClient }> {
  const gw = await startFakeTykGateway({ secret: 'ce-secret-0123456789', reloadDelayMs: 1, ...options });
  tt.teardown(() => gw.close());
  const client = new TykGatewayClient({ transport: UNDICI, name: 'default', url: gw.url, secret: gw.secret, timeoutMs: 2000, ...extra });
  tt.teardown(() => client.close());
  return { gw, client };
}

function api(name: string): JsonObject {
  return {
    name,
    use_keyless: true,
    active: true,
    proxy: { listen_path: `/${name}/`, target_url: 'http://httpbin.org', strip_listen_path: true },
    version_data: { not_versioned: true, default_version: 'Default', versions: { Default: { name: 'Default' } } },
  };
}

function policy(name: string): JsonObject {
  return { name, active: true, rate: 10, per: 60, access_rights: { a1: { api_id: 'a1', api_name: 'a1', versions: ['Default'] } } };
}

async function caught(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => undefined,
    (e: unknown) => e,
  );
}

async function fails(tt: TapTest, p: Promise<unknown>, cls: abstract new (...args: any[]) => Error, message: RegExp, what: string): Promise<void> {
  const err = await caught(p);
  tt.ok(err instanceof cls, `${what}: ${cls.name}`);
  tt.match((err as Error | undefined)?.message, message, `${what}: message`);
}

async function reloaded(client: TykGatewayClient, gw: FakeTykGateway): Promise<void> {
  await client.reload();
  await gw.waitForReloads();
}

t.test('APIs and policies: upsert, reload, get, list, remove; absent is null; remove is idempotent', async (tt) => {
  const { gw, client } = await setup(tt);
  tt.equal(client.reloadRequired, true);
  for (const kind of ['api', 'policy'] as const) {
    const body = kind === 'api' ? api('a') : policy('p');
    await client.upsert(kind, 'one', body);
    tt.equal(await client.get(kind, 'one'), null, `${kind}: invisible before a reload`);
    await reloaded(client, gw);
    tt.match(await client.get(kind, 'one'), { ...(kind === 'api' ? { api_id: 'one' } : { id: 'one' }), name: body.name }, `${kind}: visible after`);
    tt.same([...(await client.list(kind)).keys()], ['one'], `${kind}: listed`);
    await client.remove(kind, 'one');
    await reloaded(client, gw);
    tt.equal(await client.get(kind, 'one'), null, `${kind}: removed`);
    gw.resetCalls();
    await client.remove(kind, 'one');
    tt.same(
      gw.calls.map((c) => `${c.method} ${c.status}`),
      kind === 'api' ? ['DELETE 404'] : ['DELETE 500', 'GET 404'],
      kind === 'api' ? 'an API it lacks: 404 is done' : 'a policy it lacks: 500 "Delete failed" (no 404 documented), done once a GET confirms',
    );
  }
});

t.test('older gateways: DELETE of an API they lack is 500 "Delete failed", done once a GET confirms; a 500 for what is there stands', async (tt) => {
  const { gw, client } = await setup(tt, { legacyDelete: true });
  gw.resetCalls();
  await client.remove('api', 'never');
  tt.same(
    gw.calls.map((c) => `${c.method} ${c.path} ${c.status}`),
    ['DELETE /tyk/apis/never 500', 'GET /tyk/apis/never 404'],
  );

  await client.upsert('api', 'kept', api('kept'));
  await reloaded(client, gw);
  gw.removeFile('api', 'kept');
  await fails(tt, client.remove('api', 'kept'), GatewayApiError, /delete API kept: 500 Delete failed/, 'still loaded');
  tt.ok(gw.loaded('api').has('kept'), 'nothing claimed done');
});

t.test('a 404 that is not Tyk’s JSON (a proxy’s page) is an error, never "absent"', async (tt) => {
  const { gw, client } = await setup(tt);
  gw.inject({ method: 'GET', path: '/tyk/apis/a', status: 404, body: '<html>not here</html>' });
  await fails(tt, client.get('api', 'a'), GatewayApiError, /404 <html>not here/, 'a proxy 404');
  gw.inject({ method: 'DELETE', path: '/tyk/apis/a', status: 404, body: '<html>not here</html>' });
  await fails(tt, client.remove('api', 'a'), GatewayApiError, /delete API a: 404/, 'a proxy 404 on DELETE');
  gw.inject({ method: 'POST', path: '/tyk/apis', status: 400, body: { status: 'error', message: 'Request malformed' } });
  await fails(tt, client.upsert('api', 'a', api('a')), GatewayRejectedError, /rejected by the gateway: Request malformed/, 'a 400');
  const wrong = new TykGatewayClient({ transport: UNDICI, name: 'x', url: gw.url, secret: 'wrong', timeoutMs: 2000 });
  tt.teardown(() => wrong.close());
  await fails(tt, wrong.list('api'), GatewayApiError, /403 .*check TYK_AUTH/, 'a wrong secret');
});

t.test('Tyk Gateway 3.1: no /tyk/policies: every policy call is a clear GatewayUnsupportedError, never "absent" or "deleted"; APIs work', async (tt) => {
  const { gw, client } = await setup(tt, { version: '3.1' });
  const why =
    /gateway default has no \/tyk\/policies API: it answered "404 page not found" \(a Tyk Gateway older than its policy API, such as 3\.1: SecurityPolicies need a newer gateway, or the Tyk Dashboard \(TYK_MODE=pro\)\)/;
  await fails(tt, client.list('policy'), GatewayUnsupportedError, why, 'list');
  await fails(tt, client.get('policy', 'p1'), GatewayUnsupportedError, why, 'get');
  await fails(tt, client.upsert('policy', 'p1', policy('p')), GatewayUnsupportedError, why, 'upsert');
  gw.resetCalls();
  await fails(tt, client.remove('policy', 'p1'), GatewayUnsupportedError, why, 'remove');
  tt.same(
    gw.calls.map((c) => `${c.method} ${c.status}`),
    ['DELETE 404'],
    'no GET settles it as deleted',
  );
  const err = (await caught(client.get('policy', 'p1'))) as GatewayUnsupportedError;
  tt.equal(err.code, 'GATEWAY_UNSUPPORTED');
  tt.equal(err.status, 404);
  tt.notOk(JSON.stringify({ m: err.message, c: err.context }).includes(gw.secret), 'no secret in the error');

  await client.upsert('api', 'a1', api('a1'));
  await reloaded(client, gw);
  tt.match(await client.get('api', 'a1'), { api_id: 'a1' }, 'APIs keep working');
  tt.equal(await client.get('api', 'never'), null);
  await client.ping();
  gw.resetCalls();
  await client.remove('api', 'never');
  tt.same(
    gw.calls.map((c) => `${c.method} ${c.status}`),
    ['DELETE 500', 'GET 404'],
    'the old DELETE of what it lacks',
  );
});

t.test('a gateway whose policies come from a Dashboard: policy writes are GatewayUnsupportedError; reads work', async (tt) => {
  const { gw, client } = await setup(tt, { policySource: 'service' });
  const why =
    /takes its policies from a Dashboard \(policy_source "service"\) and refuses policy writes: Due to enabled service policy source, please use the Dashboard API\. Manage SecurityPolicies through the Dashboard \(TYK_MODE=pro\)/;
  await fails(tt, client.upsert('policy', 'p1', policy('p')), GatewayUnsupportedError, why, 'upsert');
  gw.resetCalls();
  await fails(tt, client.remove('policy', 'p1'), GatewayUnsupportedError, why, 'remove');
  tt.same(
    gw.calls.map((c) => c.method),
    ['DELETE'],
    'a refused delete is never settled by a GET',
  );
  tt.equal(await client.get('policy', 'p1'), null, 'reads as usual');
  tt.same(await client.list('policy'), new Map());
  gw.inject({ method: 'POST', path: '/tyk/apis', status: 500, body: { status: 'error', message: 'Due to enabled service policy source, please use the Dashboard API.' } });
  await fails(tt, client.upsert('api', 'a', api('a')), GatewayApiError, /500 Due to enabled service/, 'only policies are refused for it');
});

t.test('an unknown route elsewhere: unsupported, naming no kind', async (tt) => {
  const { gw, client } = await setup(tt);
  gw.inject({ path: '/tyk/reload/group', status: 404, body: '404 page not found\n', headers: { 'Content-Type': 'text/plain; charset=utf-8' } });
  await fails(tt, client.reload(), GatewayUnsupportedError, /reload: gateway default has no such route: it answered "404 page not found"$/, 'reload');
});

t.test('the certificate store: upload once per certificate, the id known before, absent is fine, no key in any error', async (tt) => {
  const { gw, client } = await setup(tt);
  const tls = new URL('../fixtures/tls/', import.meta.url);
  const cert = readFileSync(new URL('server.pem', tls), 'utf8');
  const key = readFileSync(new URL('server-key.pem', tls), 'utf8');
  const org = '5e9d9544a1dcd60001d0ed20';
  const id = certificateId(cert, org);
  tt.match(id, /^5e9d9544a1dcd60001d0ed20[0-9a-f]{64}$/, 'the org id and a SHA-256');

  tt.equal(await client.hasCertificate(id), false);
  tt.strictSame(await client.uploadCertificate(cert + key, org), { id, created: true }, 'the gateway gives the id computed before');
  tt.strictSame(await client.uploadCertificate(cert + key, org), { id, created: false }, 'again: "already exists" counts as uploaded, not by us');
  tt.equal(gw.certs().size, 1);
  tt.equal(gw.certs().get(id)?.hasPrivate, true, 'the key went with it');
  tt.equal(await client.hasCertificate(id), true);
  tt.same(await client.listCertificates(org), [id]);
  tt.same(await client.listCertificates('another-org'), []);

  await client.removeCertificate(id, org);
  await client.removeCertificate(id, org);
  tt.equal(gw.certs().size, 0, 'removed; removing again is fine');

  // a PEM with a key and no certificate: refused before any call, and the key is not quoted
  const before = gw.count('POST', '/tyk/certs');
  const err = await client.uploadCertificate(key, org).catch((e: unknown) => e);
  tt.ok(err instanceof InvalidSpecError, 'an invalid spec, not a gateway error');
  tt.notMatch(String((err as Error).message), /PRIVATE KEY|MII/, 'no key material in the error');
  tt.equal(gw.count('POST', '/tyk/certs'), before, 'nothing sent');

  // the gateway refusing what it cannot decode, and a wrong secret: told apart
  gw.inject({ method: 'POST', path: '/tyk/certs', status: 403, body: { status: 'error', message: 'Failed to decode certificate' } });
  await tt.rejects(client.uploadCertificate(cert, org), GatewayRejectedError);
  const wrong = new TykGatewayClient({ transport: UNDICI, name: 'default', url: gw.url, secret: 'not-the-secret-0123', timeoutMs: 2000 });
  tt.teardown(() => wrong.close());
  const denied = await wrong.uploadCertificate(cert, org).catch((e: unknown) => e);
  tt.ok(denied instanceof GatewayApiError && !(denied instanceof GatewayRejectedError), 'a wrong secret is no rejection of the certificate');
  tt.match((denied as Error).message, /check TYK_AUTH/);
  tt.notMatch((denied as Error).message, 'not-the-secret', 'no secret in the error');
});

// ── Tyk OAS APIs ──

function oasApi(name: string, extra: JsonObject = {}): JsonObject {
  return {
    openapi: '3.0.3',
    info: { title: name, version: '1.0.0' },
    paths: {},
    servers: [{ url: 'https://upstream.example.com' }],
    'x-tyk-api-gateway': {
      info: { name, state: { active: true }, ...extra },
      upstream: { url: 'http://httpbin.org' },
      server: { listenPath: { value: `/${name}/`, strip: true } },
    },
  };
}

const calls = (gw: FakeTykGateway) => gw.calls.map((c) => `${c.method} ${c.path} ${c.status}`);

t.test('OAS APIs: created by POST when not loaded, updated by PUT when loaded; read with the gateway’s additions; removed', async (tt) => {
  const { gw, client } = await setup(tt);
  tt.equal(await client.get('oas', 'petstore'), null, 'absent: null');
  tt.same(await client.list('oas'), new Map());

  gw.resetCalls();
  await client.upsert('oas', 'petstore', oasApi('petstore', { id: 'someone-elses' }));
  tt.same(calls(gw), ['PUT /tyk/apis/oas/petstore 404', 'POST /tyk/apis/oas 200'], 'not loaded: the PUT finds nothing, the POST writes it');
  tt.match(gw.calls[1]?.body, { 'x-tyk-api-gateway': { info: { id: 'petstore' } } }, 'under our id, whatever the body said');
  tt.equal(await client.get('oas', 'petstore'), null, 'invisible before a reload');
  await client.upsert('oas', 'petstore', oasApi('petstore'));
  tt.equal(gw.files('oas').size, 1, 'a second write before the reload: the same API');

  await reloaded(client, gw);
  const got = await client.get('oas', 'petstore');
  tt.match(got, { openapi: '3.0.3', 'x-tyk-api-gateway': { info: { id: 'petstore', dbId: /^[0-9a-f]{24}$/, name: 'petstore' } } });
  tt.same(got?.servers, [{ url: 'http://127.0.0.1:8080/petstore' }, { url: '/petstore' }, { url: 'https://upstream.example.com' }], 'the servers the gateway adds');
  tt.same([...(await client.list('oas')).keys()], ['petstore']);
  tt.same((await client.list('oas')).get('petstore'), got, 'the list holds what get answers');
  tt.match((await client.list('api')).get('petstore'), { api_id: 'petstore', is_oas: true }, 'its Classic form is an API too');

  gw.resetCalls();
  await client.upsert('oas', 'petstore', { ...oasApi('petstore'), info: { title: 'v2', version: '2.0.0' } });
  tt.same(calls(gw), ['PUT /tyk/apis/oas/petstore 200'], 'loaded: one PUT');
  await reloaded(client, gw);
  tt.match(await client.get('oas', 'petstore'), { info: { title: 'v2' } }, 'updated');

  gw.resetCalls();
  await client.remove('oas', 'petstore');
  tt.same(calls(gw), ['GET /tyk/apis/oas/petstore 200', 'DELETE /tyk/apis/oas/petstore 200'], 'looked at, then deleted');
  tt.equal(gw.files('oas').size + gw.files('api').size, 0, 'both files gone');
  await reloaded(client, gw);
  tt.equal(await client.get('oas', 'petstore'), null);
  tt.equal(await client.get('api', 'petstore'), null, 'both forms');
  gw.resetCalls();
  await client.remove('oas', 'petstore');
  tt.same(calls(gw), ['GET /tyk/apis/oas/petstore 404'], 'removing what is gone: no DELETE');
});

t.test('OAS APIs: what the gateway refuses is GatewayRejectedError, and nothing is written', async (tt) => {
  const { gw, client } = await setup(tt);
  gw.resetCalls();
  await fails(
    tt,
    client.upsert('oas', 'o1', { openapi: '3.0.3', info: { title: 't', version: '1' }, paths: {} }),
    GatewayRejectedError,
    /update OAS API o1: rejected by the gateway: the payload should contain x-tyk-api-gateway/,
    'no extension',
  );
  tt.same(calls(gw), ['PUT /tyk/apis/oas/o1 400'], 'refused by the PUT: no POST');
  const nameless = oasApi('x');
  delete ((nameless['x-tyk-api-gateway'] as JsonObject).info as JsonObject).name;
  await fails(tt, client.upsert('oas', 'o1', nameless), GatewayRejectedError, /x-tyk-api-gateway\.info: name is required/, 'a schema problem');
  tt.equal(gw.files('oas').size + gw.files('api').size, 0);
});

t.test('OAS APIs: an id a Tyk Classic API has is never read as absent, overwritten or deleted', async (tt) => {
  const { gw, client } = await setup(tt);
  await client.upsert('api', 'shared', api('classic'));
  await reloaded(client, gw);
  const why = /gateway default has a Tyk Classic API under the id shared/;
  await fails(tt, client.get('oas', 'shared'), GatewayApiError, why, 'get');
  gw.resetCalls();
  await fails(tt, client.upsert('oas', 'shared', oasApi('oas')), GatewayApiError, why, 'upsert');
  tt.same(calls(gw), ['PUT /tyk/apis/oas/shared 400'], 'no POST over it');
  gw.resetCalls();
  await fails(tt, client.remove('oas', 'shared'), GatewayApiError, why, 'remove');
  tt.same(calls(gw), ['GET /tyk/apis/oas/shared 400'], 'no DELETE (which would delete the Classic API)');
  const err = await caught(client.get('oas', 'shared'));
  tt.notOk(err instanceof GatewayRejectedError, 'not a refusal of the spec');
  tt.equal(gw.files('api').get('shared')?.is_oas, false, 'the Classic API is untouched');
});

t.test('OAS APIs on Tyk Gateway 3.1: every call is a GatewayUnsupportedError saying Tyk Gateway 5.x is needed; nothing written', async (tt) => {
  const { gw, client } = await setup(tt, { version: '3.1' });
  const why = /gateway default has no \/tyk\/apis\/oas API: .*\(a Tyk Gateway older than its OAS API, such as 3\.1: Tyk OAS APIs need Tyk Gateway 5\.x, or the Tyk Dashboard \(TYK_MODE=pro\)\)/;
  gw.resetCalls();
  await fails(tt, client.list('oas'), GatewayUnsupportedError, why, 'list (the gateway’s JSON 404 from its Classic route)');
  tt.match(((await caught(client.list('oas'))) as Error).message, /it answered "404 API not found\."/);
  await fails(tt, client.get('oas', 'o1'), GatewayUnsupportedError, why, 'get');
  await fails(tt, client.upsert('oas', 'o1', oasApi('o1')), GatewayUnsupportedError, why, 'upsert');
  await fails(tt, client.remove('oas', 'o1'), GatewayUnsupportedError, why, 'remove');
  tt.notOk(
    gw.calls.some((c) => c.method === 'POST' || c.method === 'DELETE'),
    'no write reached the gateway (its POST /tyk/apis/oas is a Classic write)',
  );
  tt.equal(gw.files('api').size, 0);
  const err = (await caught(client.get('oas', 'o1'))) as GatewayUnsupportedError;
  tt.equal(err.code, 'GATEWAY_UNSUPPORTED');
  tt.equal(err.status, 404);
});

t.test('OAS APIs: error classes', async (tt) => {
  const { gw, client } = await setup(tt);
  gw.inject({ method: 'GET', path: '/tyk/apis/oas/o1', status: 404, body: '<html>not here</html>' });
  await fails(tt, client.get('oas', 'o1'), GatewayApiError, /get OAS API o1: 404 <html>not here/, 'a proxy’s 404 is no "absent"');
  gw.inject({ method: 'GET', path: '/tyk/apis/oas', status: 500 });
  await fails(tt, client.list('oas'), GatewayApiError, /list OAS APIs: 500 injected fault/, 'a 500');
  gw.inject({ method: 'GET', path: '/tyk/apis/oas', status: 200, body: [{ openapi: '3.0.3' }] });
  await fails(tt, client.list('oas'), GatewayApiError, /an item has no x-tyk-api-gateway\.info\.id/, 'an item without its id');
  // the list is read as it arrives: a fault in its content is the gateway's answer, not a transport failure
  gw.inject({ method: 'GET', path: '/tyk/apis', status: 200, body: '[{"api_id":"a"},{"api_id":' });
  await fails(tt, client.list('api'), GatewayApiError, /list APIs: the list ends early/, 'a list cut short');
  gw.inject({ method: 'GET', path: '/tyk/apis', status: 200, body: '{"status":"ok"}' });
  await fails(tt, client.list('api'), GatewayApiError, /list APIs: the body is not a JSON array/, 'something other than a list');
  gw.inject({ method: 'GET', path: '/tyk/apis', status: 200, body: 'null' });
  tt.equal((await client.list('api')).size, 0, 'null is no APIs');
  const visited: string[] = [];
  gw.inject({ method: 'GET', path: '/tyk/apis', status: 200, body: [{ api_id: 'a', name: 'A' }, { api_id: 'b' }] });
  tt.equal((await client.list('api', (id, item) => visited.push(`${id}:${String(item.body().name)}`))).size, 0, 'visited, not kept');
  tt.same(visited, ['a:A', 'b:undefined']);
  gw.inject({ method: 'PUT', path: '/tyk/apis/oas/o1', drop: true, times: 2 });
  await fails(tt, client.upsert('oas', 'o1', oasApi('o1')), GatewayUnavailableError, /gateway default/, 'a dropped connection');
  const wrong = new TykGatewayClient({ transport: UNDICI, name: 'x', url: gw.url, secret: 'not-the-secret', timeoutMs: 2000 });
  tt.teardown(() => wrong.close());
  await fails(tt, wrong.upsert('oas', 'o1', oasApi('o1')), GatewayApiError, /403 .*check TYK_AUTH/, 'a wrong secret');

  await client.upsert('oas', 'kept', oasApi('kept'));
  await reloaded(client, gw);
  gw.removeFile('oas', 'kept');
  await fails(tt, client.remove('oas', 'kept'), GatewayApiError, /delete OAS API kept: 500 Delete failed/, 'loaded, a file gone: the 500 stands');
});

t.test('GATEWAY_MAX_RESPONSE_BYTES: a list or a read longer than the limit is refused, naming the setting, never the secret', async (t) => {
  const { gw, client } = await setup(t);
  for (let i = 0; i < 20; i++) await client.upsert('api', `big-${i}`, api(`big-${i}`));
  gw.reloadNow();
  const small = new TykGatewayClient({ transport: UNDICI, name: 'default', url: gw.url, secret: gw.secret, timeoutMs: 2000, maxResponseBytes: 8_192 });
  t.teardown(() => small.close());
  const listed = await small.list('api').then(
    () => undefined,
    (e: unknown) => e,
  );
  t.ok(listed instanceof GatewayResponseTooLargeError, 'the list is refused');
  t.equal(errorCode(listed), 'GATEWAY_RESPONSE_TOO_LARGE');
  t.match((listed as Error).message, /^gateway default: GET .*\/tyk\/apis: the answer is (more than )?\d+ bytes, above the limit of 8192 bytes \(GATEWAY_MAX_RESPONSE_BYTES\)$/);
  t.notMatch((listed as Error).message, gw.secret);
  t.ok(await small.get('api', 'big-0'), 'one API, under the limit, is read');
  t.equal((await client.list('api')).size, 20, 'without the limit, the same list is read');
});

t.test("reload 'node': GET /tyk/reload reloads the gateway reached, not through the group's channel; the default is the group's", async (tt) => {
  // a gateway that has not joined its reload channel yet loses group reloads (shared/design.md)
  const { gw, client } = await setup(tt, { joinDelayMs: 60_000 }, { reload: 'node' });
  await client.upsert('api', 'a1', api('a1'));
  await client.reload();
  await gw.waitForReloads();
  tt.same(
    gw.calls.filter((c) => c.path.startsWith('/tyk/reload')).map((c) => `${c.method} ${c.path} ${c.status}`),
    ['GET /tyk/reload 200'],
    'one node reload, nothing to the group',
  );
  tt.ok(await client.get('api', 'a1'), 'the write is loaded: the node reload did not need the channel');

  const group = new TykGatewayClient({ transport: UNDICI, name: 'default', url: gw.url, secret: gw.secret, timeoutMs: 2000 });
  tt.teardown(() => group.close());
  await group.upsert('api', 'a2', api('a2'));
  await reloaded(group, gw);
  tt.equal(gw.count('GET', '/tyk/reload/group'), 1, 'by default: the group reload');
  tt.equal(await group.get('api', 'a2'), null, 'lost by a gateway that has not joined the channel');

  gw.inject({ method: 'GET', path: '/tyk/reload', status: 403, body: { status: 'error', message: 'Attempted administrative access with invalid or missing key!' } });
  await fails(tt, client.reload(), GatewayApiError, /^reload: 403 Attempted administrative access .*\(check TYK_AUTH\)$/, 'a refused node reload');
});

t.test('TLS: a gateway reached at its address is verified against tlsServerName, not the address; a wrong name is refused', async (tt) => {
  const gw = await startFakeTykGateway({ secret: 'ce-secret-0123456789', reloadDelayMs: 1, tls: { cert: PEM.gateway, key: PEM.gatewayKey } });
  tt.teardown(() => gw.close());
  tt.match(gw.url, /^https:\/\/127\.0\.0\.1:\d+$/, 'served over HTTPS at an address');
  const client = (extra: Partial<TykGatewayOptions>): TykGatewayClient => {
    const c = new TykGatewayClient({ transport: UNDICI, name: 'tyk-gateway-0', url: gw.url, secret: gw.secret, timeoutMs: 2000, ...extra });
    tt.teardown(() => c.close());
    return c;
  };

  const named = client({ ca: PEM.gateway, tlsServerName: 'tyk-gateway.tyk.svc', reload: 'node' });
  await named.ping();
  await named.upsert('api', 'a1', api('a1'));
  await named.reload();
  await gw.waitForReloads();
  tt.ok(await named.get('api', 'a1'), 'verified by the name its certificate holds: every call goes through');

  await fails(tt, client({ ca: PEM.gateway }).ping(), GatewayUnavailableError, /IP: 127\.0\.0\.1 is not in the cert's list/, 'without the name: checked against the address, refused');
  await fails(
    tt,
    client({ ca: PEM.gateway, tlsServerName: 'tyk-gateway.other.svc' }).ping(),
    GatewayUnavailableError,
    /tyk-gateway\.other\.svc.*is not in the cert's altnames/,
    'a name the certificate does not hold: refused',
  );
  await fails(tt, client({ tlsServerName: 'tyk-gateway.tyk.svc' }).ping(), GatewayUnavailableError, /self[- ]signed|unable to (get|verify)/i, 'the right name, a CA not trusted: refused');
  await client({ insecureSkipVerify: true, tlsServerName: 'tyk-gateway.other.svc' }).ping();
  tt.pass('TYK_TLS_INSECURE_SKIP_VERIFY: no check, whatever the name');
  const byAddress = client({ ca: PEM.gateway, tlsServerName: '[::1]' });
  await fails(tt, byAddress.ping(), GatewayUnavailableError, /IP: ::1 is not in the cert's list/, 'an address as the name: checked against the certificate’s addresses');
  const writes = gw.calls.filter((c) => c.method !== 'GET').length;
  tt.equal(writes, 1, 'the refused clients sent nothing');
});
