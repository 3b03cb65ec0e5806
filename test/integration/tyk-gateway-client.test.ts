/**
 * TykGatewayClient (lib/gateway/tyk-ce.ts) against the loopback Tyk Gateway fake, over real
 * HTTP: every Gateway method for APIs and policies, the documented answers for what the gateway
 * does not have (404, and older gateways' 500 "Delete failed" settled by a GET), a gateway that
 * predates the policy API (Tyk Gateway 3.1), a gateway whose policies come from a Dashboard,
 * and error mapping.
 */
import { readFileSync } from 'node:fs';
import t, { type Test as TapTest } from 'tap';
import { GatewayApiError, GatewayRejectedError, GatewayUnsupportedError, InvalidSpecError } from '../../lib/errors.js';
import { certificateId } from '../../lib/gateway/certificates.js';
import { TykGatewayClient, type TykGatewayOptions } from '../../lib/gateway/tyk-ce.js';
import type { JsonObject } from '../../lib/gateway/types.js';
import { type FakeTykGateway, type FakeTykOptions, startFakeTykGateway } from '../fakes/tyk-gateway.js';

interface Test {
  teardown(fn: () => unknown): void;
}

async function setup(tt: Test, options: FakeTykOptions = {}, extra: Partial<TykGatewayOptions> = {}): Promise<{ gw: FakeTykGateway; client: TykGatewayClient }> {
  const gw = await startFakeTykGateway({ secret: 'ce-secret-0123456789', reloadDelayMs: 1, ...options });
  tt.teardown(() => gw.close());
  const client = new TykGatewayClient({ name: 'default', url: gw.url, secret: gw.secret, timeoutMs: 2000, ...extra });
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
  const wrong = new TykGatewayClient({ name: 'x', url: gw.url, secret: 'wrong', timeoutMs: 2000 });
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
  const wrong = new TykGatewayClient({ name: 'default', url: gw.url, secret: 'not-the-secret-0123', timeoutMs: 2000 });
  tt.teardown(() => wrong.close());
  const denied = await wrong.uploadCertificate(cert, org).catch((e: unknown) => e);
  tt.ok(denied instanceof GatewayApiError && !(denied instanceof GatewayRejectedError), 'a wrong secret is no rejection of the certificate');
  tt.match((denied as Error).message, /check TYK_AUTH/);
  tt.notMatch((denied as Error).message, 'not-the-secret', 'no secret in the error');
});
