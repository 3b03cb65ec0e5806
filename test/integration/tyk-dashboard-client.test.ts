/**
 * TykDashboardClient (lib/gateway/tyk-dashboard.ts) against the loopback Dashboard fake, over
 * real HTTP: every Gateway method for APIs, policies and Tyk OAS APIs, paging, adoption, id
 * mapping, objects changed behind the client's back, error mapping and ping, and the
 * certificate store (upload once per certificate in the key's org, every page of ids, has,
 * remove, errors without key material); all of it against each documented way a Dashboard
 * answers (DASHBOARD_VARIANTS), and which answers mean "absent".
 */
import { readFileSync } from 'node:fs';
import t, { type Test as TapTest } from 'tap';
import { certificateId } from '../../lib/gateway/certificates.js';
import { TykDashboardClient, type TykDashboardOptions } from '../../lib/gateway/tyk-dashboard.js';
import type { JsonObject } from '../../lib/gateway/types.js';
import { GatewayApiError, GatewayRejectedError, GatewayUnavailableError, InvalidSpecError } from '../../lib/platform/errors.js';
import { undiciTransports } from '../../lib/platform/http-undici.js';
import { DASHBOARD_VARIANTS, type FakeTykDashboard, type FakeTykDashboardOptions, startFakeTykDashboard } from '../fakes/tyk-dashboard.js';

/** The clients here send over undici's pooled client, as full runs do (the fast tier's contract tests use Node's own). */
const UNDICI = undiciTransports();

const SECRET = 'dashboard-user-key-0123456789abcdef';

const TLS = new URL('../fixtures/tls/', import.meta.url);
const pemFile = (name: string) => readFileSync(new URL(name, TLS), 'utf8');
const SERVER = pemFile('server.pem');
const SERVER_KEY = pemFile('server-key.pem');
const CLIENT = pemFile('client.pem');
const CLIENT_KEY = pemFile('client-key.pem');
const CA = pemFile('ca.pem');
const STRANGER = pemFile('stranger.pem');
const EXPIRED = pemFile('expired.pem');
const OTHER_ORG = '5e9d9544a1dcd60001d0ffff';
/** The base64 lines of a PEM: none may appear in an error. */
const pemLines = (pem: string) => pem.split('\n').filter((line) => line.length >= 16 && !line.startsWith('-----'));

interface Test {
  teardown(fn: () => unknown): void;
}

interface Setup {
  d: FakeTykDashboard;
  client: TykDashboardClient;
  fresh(options?: Partial<TykDashboardOptions>): TykDashboardClient;
}

async function setupOn(tt: Test, options: FakeTykDashboardOptions = {}): Promise<Setup> {
  const d = await startFakeTykDashboard({ secret: SECRET, ...options });
  tt.teardown(() => d.close());
  const fresh = (extra: Partial<TykDashboardOptions> = {}): TykDashboardClient => {
    const c = new TykDashboardClient({ transport: UNDICI, name: 'default', url: `${d.url}/`, secret: SECRET, timeoutMs: 2000, ...extra });
    tt.teardown(() => c.close());
    return c;
  };
  return { d, client: fresh(), fresh };
}

function api(name: string, extra: JsonObject = {}): JsonObject {
  return {
    name,
    use_keyless: true,
    active: true,
    proxy: { listen_path: `/${name}/`, target_url: 'http://httpbin.org', strip_listen_path: true },
    version_data: { not_versioned: true, default_version: 'Default', versions: { Default: { name: 'Default' } } },
    ...extra,
  };
}

function policy(name: string, extra: JsonObject = {}): JsonObject {
  return { name, active: true, rate: 10, per: 60, access_rights: { a1: { api_id: 'a1', api_name: 'a1', versions: ['Default'] } }, ...extra };
}

/** Asserts that p rejects with an instance of cls, with this status and a message matching. */
async function fails(tt: TapTest, p: Promise<unknown>, cls: abstract new (...args: any[]) => Error, want: { status?: number; message?: RegExp } = {}, what = 'fails'): Promise<void> {
  const err: unknown = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  tt.ok(err instanceof cls, `${what}: ${cls.name}`);
  if (want.status !== undefined) tt.equal((err as { status?: number } | undefined)?.status, want.status, `${what}: status ${want.status}`);
  if (want.message !== undefined) tt.match((err as Error | undefined)?.message, want.message, `${what}: message`);
}

async function rawPost(d: FakeTykDashboard, path: string, body: unknown): Promise<any> {
  const res = await fetch(d.url + path, { method: 'POST', headers: { authorization: d.secret }, body: JSON.stringify(body) });
  if (res.status !== 200) throw new Error(`raw POST ${path}: ${res.status}`);
  return res.json();
}

function oasApi(name: string, info: JsonObject = {}): JsonObject {
  return {
    openapi: '3.0.3',
    info: { title: name, version: '1.0.0' },
    paths: {},
    'x-tyk-api-gateway': {
      info: { name, state: { active: true }, ...info },
      upstream: { url: 'http://httpbin.org' },
      server: { listenPath: { value: `/${name}/`, strip: true } },
    },
  };
}

const calls = (d: FakeTykDashboard) => d.calls.map((c) => `${c.method} ${c.path} ${c.status}`);

async function rawGet(d: FakeTykDashboard, path: string): Promise<any> {
  const res = await fetch(d.url + path, { headers: { authorization: d.secret } });
  return res.json();
}

function midOf(d: FakeTykDashboard, id: string): string {
  for (const [mid, p] of d.policies()) if (p.id === id) return mid;
  throw new Error(`no policy ${id}`);
}

for (const variant of DASHBOARD_VARIANTS) {
  t.test(`against a Dashboard: ${variant.name}`, async (t) => {
    const setup = (tt: Test, options: FakeTykDashboardOptions = {}): Promise<Setup> => setupOn(tt, { ...variant.options, ...options });

    t.test('APIs: upsert creates then updates in place; get and list unwrap; remove is idempotent', async (tt) => {
      const { d, client } = await setup(tt);
      tt.equal(client.reloadRequired, false);
      tt.equal(client.name, 'default');
      tt.equal(client.url, `${d.url}/`, 'the URL, without credentials');

      await client.upsert('api', 'ZGVmYXVsdC9odHRwYmlu', api('httpbin', { id: 'someone-elses-internal-id', api_id: 'ignored' }));
      tt.equal(d.count('POST', '/api/apis'), 1);
      tt.equal(d.writes(), 1, 'a create is one write');
      tt.same([...d.apis().keys()], ['ZGVmYXVsdC9odHRwYmlu'], 'under our api_id, whatever the body said');
      tt.same(d.calls[0]?.body, { api_definition: { ...api('httpbin'), api_id: 'ZGVmYXVsdC9odHRwYmlu' } }, 'the wrapper, without an internal id');

      const got = await client.get('api', 'ZGVmYXVsdC9odHRwYmlu');
      tt.match(got, { api_id: 'ZGVmYXVsdC9odHRwYmlu', name: 'httpbin', enable_jwt: false, proxy: { listen_path: '/httpbin/' } });
      const internal = got?.id as string;
      tt.match(internal, /^[0-9a-f]{24}$/, 'the unwrapped api_definition, with the internal id');
      tt.notOk(got && 'api_definition' in got, 'unwrapped');

      d.resetCalls();
      await client.upsert('api', 'ZGVmYXVsdC9odHRwYmlu', api('httpbin', { name: 'renamed' }));
      tt.same(
        d.calls.map((c) => `${c.method} ${c.path}`),
        [`PUT /api/apis/${internal}`],
        'a known API is updated with one PUT by internal id',
      );
      tt.equal((d.calls[0]?.body as any)?.api_definition.id, internal, 'carrying the internal id');
      tt.equal(d.apis().get('ZGVmYXVsdC9odHRwYmlu')?.name, 'renamed');
      tt.equal(d.apis().get('ZGVmYXVsdC9odHRwYmlu')?.id, internal, 'the same API');

      await client.upsert('api', 'second', api('second'));
      const all = await client.list('api');
      tt.same([...all.keys()].sort(), ['ZGVmYXVsdC9odHRwYmlu', 'second']);
      tt.equal(all.get('second')?.name, 'second');
      tt.equal(all.get('second')?.api_id, 'second', 'list values are unwrapped definitions');

      tt.equal(await client.get('api', 'never-made'), null, 'the Dashboard’s answer for an unknown id is null');
      tt.equal(await client.get('api', internal), null, 'an internal id is not one of our ids');

      d.resetCalls();
      await client.remove('api', 'ZGVmYXVsdC9odHRwYmlu');
      tt.same([...d.apis().keys()], ['second']);
      tt.equal(d.count('DELETE', `/api/apis/${internal}`), 1, 'deleted by its internal id after a read');
      d.resetCalls();
      await client.remove('api', 'ZGVmYXVsdC9odHRwYmlu');
      tt.equal(d.writes(), 0, 'removing what is gone is done, without a DELETE');

      d.resetCalls();
      await client.reload();
      tt.equal(d.calls.length, 0, 'reload is a no-op');
    });

    t.test('OAS APIs: PUT when it is there, else POST; read with the Dashboard’s additions; listed with the APIs; removed', async (tt) => {
      const { d, client } = await setup(tt, { pageSize: 2 });
      tt.equal(await client.get('oas', 'o1'), null, 'absent: null');
      d.resetCalls();
      await client.upsert('oas', 'o1', oasApi('one', { id: 'not-ours', dbId: '66570989d98dd00001da17f1' }));
      tt.same(calls(d), ['PUT /api/apis/oas/o1 404', 'POST /api/apis/oas 200'], 'new: the documented absent, then a create');
      tt.same((d.calls[1]?.body as any)?.['x-tyk-api-gateway']?.info, { id: 'o1', name: 'one', state: { active: true } }, 'our id; no dbId (the Dashboard’s)');
      const got = await client.get('oas', 'o1');
      tt.match(got, { 'x-tyk-api-gateway': { info: { id: 'o1', dbId: /^[0-9a-f]{24}$/, orgId: d.orgId, name: 'one' } } }, 'visible at once, with the Dashboard’s ids and org');

      d.resetCalls();
      await client.upsert('oas', 'o1', oasApi('one', { name: 'renamed' }));
      tt.same(calls(d), ['PUT /api/apis/oas/o1 200'], 'there: one PUT');
      tt.match(d.oasApis().get('o1'), { 'x-tyk-api-gateway': { info: { name: 'renamed' } } });

      await client.upsert('api', 'classic', api('classic'));
      await client.upsert('oas', 'o2', oasApi('two'));
      d.resetCalls();
      const all = await client.list('oas');
      tt.same([...all.keys()], ['o1', 'o2'], 'only the OAS APIs, by their id');
      tt.same(all.get('o1'), await client.get('oas', 'o1'), 'the documents as get answers them');
      tt.same(calls(d).slice(0, 2), ['GET /api/apis 200', 'GET /api/apis 200'], 'from the API list, page by page, without a read per API');
      tt.match((await client.list('api')).get('o1'), { api_id: 'o1', is_oas: true }, 'its Classic form is among the APIs');

      d.resetCalls();
      await client.remove('oas', 'o1');
      tt.same(calls(d), ['GET /api/apis/oas/o1 200', 'DELETE /api/apis/oas/o1 200'], 'read, then deleted');
      tt.equal(await client.get('oas', 'o1'), null);
      d.resetCalls();
      await client.remove('oas', 'o1');
      tt.equal(d.writes(), 0, 'removing what is gone: no DELETE');
    });

    t.test('OAS APIs: a list item without its document is read by id', async (tt) => {
      const { d, client } = await setup(tt);
      await client.upsert('oas', 'o1', oasApi('one'));
      const listed = await rawGet(d, '/api/apis?p=1');
      for (const w of listed.apis) delete w.oas;
      d.inject({ method: 'GET', path: '/api/apis', status: 200, body: listed });
      d.resetCalls();
      tt.same([...(await client.list('oas')).keys()], ['o1']);
      tt.same(calls(d), ['GET /api/apis 200', 'GET /api/apis/oas/o1 200']);
    });

    t.test('OAS APIs: refusals are GatewayRejectedError; an id a Classic API has is never taken', async (tt) => {
      const { d, client } = await setup(tt);
      await fails(tt, client.upsert('oas', 'o1', { openapi: '3.0.3', info: { title: 't', version: '1' }, paths: {} }), GatewayRejectedError, {
        status: 400,
        message: /create OAS API o1: rejected by the Dashboard: The payload should contain x-tyk-api-gateway\./,
      });
      await client.upsert('oas', 'o1', oasApi('one'));
      await client.upsert('oas', 'o2', oasApi('two'));
      await fails(
        tt,
        client.upsert('oas', 'o2', { ...oasApi('two'), 'x-tyk-api-gateway': (oasApi('one') as any)['x-tyk-api-gateway'] }),
        GatewayRejectedError,
        {
          status: 403,
          message: /update OAS API o2: rejected by the Dashboard: Found API with same url\./,
        },
        'another API’s listen path',
      );

      await client.upsert('api', 'shared', api('classic'));
      d.resetCalls();
      await fails(tt, client.upsert('oas', 'shared', oasApi('shared')), GatewayApiError, { status: 409, message: /has an API under this id that is not a Tyk OAS API/ });
      tt.same(calls(d), ['PUT /api/apis/oas/shared 404', 'POST /api/apis/oas 409', 'PUT /api/apis/oas/shared 404']);
      tt.equal(await client.get('oas', 'shared'), null, 'the OAS route does not see it');
      await client.remove('oas', 'shared');
      tt.match(d.apis().get('shared'), { name: 'classic', is_oas: false }, 'the Classic API is untouched');

      d.inject({ method: 'DELETE', path: '/api/apis/oas/o2', status: 500 });
      await fails(tt, client.remove('oas', 'o2'), GatewayApiError, { status: 500 }, 'a failed delete of what is still there stands');
      tt.ok(d.oasApis().has('o2'));
    });

    t.test('OAS APIs: a create whose PUT missed it (made meanwhile) is adopted by one more PUT', async (tt) => {
      const { d, client } = await setup(tt);
      await client.upsert('oas', 'o1', oasApi('one'));
      d.inject({ method: 'PUT', path: '/api/apis/oas/o1', status: 404, body: { Status: 'Error', Message: 'API definition does not exist', Meta: null } });
      d.resetCalls();
      await client.upsert('oas', 'o1', oasApi('one', { name: 'again' }));
      tt.same(calls(d), ['PUT /api/apis/oas/o1 404', 'POST /api/apis/oas 409', 'PUT /api/apis/oas/o1 200']);
      tt.equal(d.oasApis().size, 1, 'never duplicated');
    });

    t.test('OAS APIs: a Dashboard that gives the API its own id keeps no copy; a proxy’s page and a wrong key are errors', async (tt) => {
      const { d, client, fresh } = await setup(tt, { ignoreApiIdOnCreate: true });
      await fails(tt, client.upsert('oas', 'o1', oasApi('one')), GatewayApiError, { status: 409, message: /gave the new API the id [0-9a-f]{32} instead of ours; the copy was deleted/ });
      tt.equal(d.oasApis().size, 0);
      d.inject({ method: 'GET', path: '/api/apis/oas/o1', status: 404, body: '<html>not found</html>' });
      await fails(tt, client.get('oas', 'o1'), GatewayApiError, { status: 404 }, 'a proxy’s 404 is no "absent"');
      const wrong = fresh({ secret: 'not-the-key' });
      await fails(tt, wrong.get('oas', 'o1'), GatewayApiError, { status: 401, message: /check TYK_AUTH/ });
      const err = await wrong.list('oas').catch((e: unknown) => e);
      tt.ok(err instanceof GatewayApiError);
      tt.notMatch(String((err as Error).message), 'not-the-key', 'no key in the error');
    });

    t.test('list follows every page; a failed page fails the list; a changing list is re-read', async (tt) => {
      const { d, client, fresh } = await setup(tt, { pageSize: 3 });
      for (let i = 0; i < 8; i++) await client.upsert('api', `api-${i}`, api(`api${i}`));
      for (let i = 0; i < 5; i++) await client.upsert('policy', `pol-${i}`, policy(`pol${i}`));

      d.resetCalls();
      const apis = await client.list('api');
      tt.equal(apis.size, 8, 'all 8 APIs over 3 pages');
      tt.same([...apis.keys()], ['api-0', 'api-1', 'api-2', 'api-3', 'api-4', 'api-5', 'api-6', 'api-7'], 'oldest first');
      tt.same(
        d.calls.map((c) => c.query.p),
        ['1', '2', '3'],
      );
      tt.equal(d.calls[0]?.query.sort, 'created_at');
      const policies = await client.list('policy');
      tt.equal(policies.size, 5, 'all 5 policies over 2 pages');
      tt.equal(d.count('GET', '/api/portal/policies'), 2);

      d.inject({ method: 'GET', path: '/api/apis', match: (c) => c.query.p === '2', status: 500 });
      await fails(tt, fresh().list('api'), GatewayApiError, { status: 500, message: /page 2/ }, 'never partial');

      d.inject({ method: 'GET', path: '/api/portal/policies', match: (c) => c.query.p === '2', status: 200, body: { Data: [], Pages: 4 } });
      d.resetCalls();
      tt.equal((await client.list('policy')).size, 5, 'the page count changed: read again from page 1');
      tt.same(
        d.calls.map((c) => c.query.p),
        ['1', '2', '1', '2'],
      );

      d.inject({ method: 'GET', path: '/api/portal/policies', match: (c) => c.query.p === '2', status: 200, body: { Data: [], Pages: 4 }, times: Infinity });
      await tt.rejects(client.list('policy'), /kept changing/);
      d.clearFaults();

      d.inject({ method: 'GET', path: '/api/apis', status: 200, body: { apis: 'nope', pages: 1 } });
      await tt.rejects(client.list('api'), /something other than a page of APIs/);
      d.inject({ method: 'GET', path: '/api/portal/policies', status: 200, body: { Pages: 0 } });
      await tt.rejects(client.list('policy'), /something other than a page of policies/, 'a page without its list field is no empty page');
      d.inject({ method: 'GET', path: '/api/apis', status: 200, body: { apis: [{ api_definition: { name: 'no id' } }], pages: 1 } });
      await tt.rejects(client.list('api'), /has no api_definition.api_id/);
      d.inject({ method: 'GET', path: '/api/portal/policies', status: 200, body: { Data: [{ id: 'x' }], Pages: 1 } });
      await tt.rejects(client.list('policy'), /has no _id/);

      const empty = await setup(tt);
      tt.same(await empty.client.list('api'), new Map(), 'an empty Dashboard (apis: null, pages: 0)');
      tt.same(await empty.client.list('policy'), new Map());
    });

    t.test('409 on create: an API the Dashboard already has is adopted, never duplicated', async (tt) => {
      const { d, client } = await setup(tt);
      const made = await rawPost(d, '/api/apis', { api_definition: { ...api('old'), api_id: 'ZGVmYXVsdC9odHRwYmlu' } });
      d.resetCalls();
      await client.upsert('api', 'ZGVmYXVsdC9odHRwYmlu', api('httpbin'));
      tt.same(
        d.calls.map((c) => `${c.method} ${c.path} ${c.status}`),
        ['POST /api/apis 409', 'GET /api/apis/ZGVmYXVsdC9odHRwYmlu 200', `PUT /api/apis/${made.Meta} 200`],
      );
      tt.equal(d.apis().size, 1, 'one API');
      tt.match(d.apis().get('ZGVmYXVsdC9odHRwYmlu'), { name: 'httpbin', id: made.Meta });

      d.inject({ method: 'POST', path: '/api/apis', status: 409, body: { Status: 'Error', Message: 'Found API with the same ID', Meta: null } });
      await fails(tt, client.upsert('api', 'phantom', api('phantom')), GatewayApiError, { status: 409, message: /no API under it/ });
    });

    t.test('an API deleted or renamed behind the client’s back is recreated', async (tt) => {
      const { d, client } = await setup(tt);
      await client.upsert('api', 'a1', api('a1'));
      const first = d.apis().get('a1')?.id;
      d.removeApi('a1');
      d.resetCalls();
      await client.upsert('api', 'a1', api('a1'));
      tt.same(
        d.calls.map((c) => `${c.method} ${c.status}`),
        ['PUT 404', 'POST 200'],
      );
      tt.ok(d.apis().has('a1'));
      tt.not(d.apis().get('a1')?.id, first, 'a new API');

      d.editApi('a1', (a) => {
        a.api_id = 'renamed-by-someone';
      });
      tt.equal(await client.get('api', 'a1'), null);
      await client.upsert('api', 'a1', api('a1'));
      tt.same([...d.apis().keys()].sort(), ['a1', 'renamed-by-someone'], 'ours is recreated; theirs is untouched');
    });

    t.test('a Dashboard that generates api_ids: ours is put on by internal id, or the copy is removed', async (tt) => {
      const onPrem = await setup(tt, { ignoreApiIdOnCreate: true });
      onPrem.d.resetCalls();
      await onPrem.client.upsert('api', 'ours', api('ours'));
      tt.same([...onPrem.d.apis().keys()], ['ours'], 'the API carries our api_id');
      tt.same(
        onPrem.d.calls.map((c) => c.method),
        ['POST', 'PUT', 'GET'],
      );
      onPrem.d.resetCalls();
      await onPrem.client.upsert('api', 'ours', api('ours', { name: 'v2' }));
      tt.same(
        onPrem.d.calls.map((c) => c.method),
        ['PUT'],
        'then updated like any other',
      );

      const cloud = await setup(tt, { ignoreApiIdOnCreate: true, immutableApiId: true });
      const err = await cloud.client.upsert('api', 'ours', api('ours')).then(
        () => undefined,
        (e: unknown) => e,
      );
      tt.ok(err instanceof GatewayApiError, 'a GatewayApiError');
      tt.match((err as Error).message, /would not take ours.*copy was deleted/);
      tt.equal(cloud.d.apis().size, 0, 'no stray copy left behind');

      // A create answer with Meta but no ID: the client reads the new API back by its internal id.
      const terse = await setup(tt);
      const made = await rawPost(terse.d, '/api/apis', { api_definition: { ...api('x'), api_id: 'x' } });
      terse.d.inject({ method: 'POST', path: '/api/apis', status: 200, body: { Status: 'OK', Message: 'API created', Meta: made.Meta } });
      terse.d.resetCalls();
      await terse.client.upsert('api', 'x', api('x'));
      tt.same(
        terse.d.calls.map((c) => `${c.method} ${c.path}`),
        ['POST /api/apis', `GET /api/apis/${made.Meta}`],
      );
      terse.d.resetCalls();
      await terse.client.upsert('api', 'x', api('x', { name: 'x2' }));
      tt.same(
        terse.d.calls.map((c) => `${c.method} ${c.path}`),
        [`PUT /api/apis/${made.Meta}`],
        'the internal id was learned',
      );

      // A Dashboard that answers a create without any id, and has nothing under ours.
      const quiet = await setup(tt);
      quiet.d.inject({ method: 'POST', path: '/api/apis', status: 200, body: { Status: 'OK', Message: 'API created', Meta: null } });
      await tt.rejects(quiet.client.upsert('api', 'x', api('x')), /answered without the new API's id/);
    });

    t.test('policies: our id is the id field; _id is learned, found by listing, and exposed in bodies', async (tt) => {
      const { d, client, fresh } = await setup(tt);
      d.resetCalls();
      await client.upsert('policy', 'cG9saWN5', policy('gold', { _id: '000000000000000000000000', id: 'ignored' }));
      tt.same(
        d.calls.map((c) => `${c.method} ${c.path}`),
        ['GET /api/portal/policies', 'POST /api/portal/policies'],
        'a miss lists first',
      );
      tt.same(d.calls[1]?.body, { ...policy('gold'), id: 'cG9saWN5' }, 'POSTed with our id and no _id');
      const mid = midOf(d, 'cG9saWN5');

      d.resetCalls();
      const got = await client.get('policy', 'cG9saWN5');
      tt.match(got, { id: 'cG9saWN5', _id: mid, name: 'gold', rate: 10 });
      tt.same(
        d.calls.map((c) => `${c.method} ${c.path}`),
        [`GET /api/portal/policies/${mid}`],
        'the _id from the create answer',
      );

      d.resetCalls();
      await client.upsert('policy', 'cG9saWN5', policy('gold', { rate: 20 }));
      tt.same(
        d.calls.map((c) => `${c.method} ${c.path}`),
        [`PUT /api/portal/policies/${mid}`],
      );
      tt.match(d.calls[0]?.body, { id: 'cG9saWN5', _id: mid, rate: 20 });
      tt.equal(d.policies().get(mid)?.rate, 20);

      // A fresh client knows nothing: it lists to find the _id, once.
      const other = fresh();
      d.resetCalls();
      tt.match(await other.get('policy', 'cG9saWN5'), { _id: mid, rate: 20 });
      tt.same(
        d.calls.map((c) => `${c.method} ${c.path}`),
        ['GET /api/portal/policies'],
      );
      d.resetCalls();
      await other.upsert('policy', 'cG9saWN5', policy('gold', { rate: 30 }));
      tt.same(
        d.calls.map((c) => `${c.method} ${c.path}`),
        [`PUT /api/portal/policies/${mid}`],
        'learned from the list',
      );
      tt.equal(d.policies().size, 1, 'never duplicated');
      const fresher = fresh();
      await fresher.upsert('policy', 'cG9saWN5', policy('gold', { rate: 40 }));
      tt.equal(d.policies().size, 1, 'a fresh client updates, never duplicates');
      tt.equal(d.policies().get(mid)?.rate, 40);

      // Policies without an id field (made in the UI) are keyed by _id.
      const made = await rawPost(d, '/api/portal/policies', policy('from the UI'));
      const all = await client.list('policy');
      tt.same([...all.keys()].sort(), ['cG9saWN5', made.Message].sort());
      tt.equal(all.get('cG9saWN5')?._id, mid, 'list bodies carry _id');
      tt.match(await fresh().get('policy', made.Message), { name: 'from the UI', id: '' });

      tt.equal(await client.get('policy', 'never-made'), null);

      d.resetCalls();
      await client.remove('policy', 'cG9saWN5');
      tt.equal(d.policies().has(mid), false);
      tt.equal(d.count('DELETE', `/api/portal/policies/${mid}`), 1);
      d.resetCalls();
      await client.remove('policy', 'cG9saWN5');
      tt.equal(d.writes(), 0, 'removing what is gone is done');
      tt.equal(d.policies().size, 1, 'the UI policy is untouched');
    });

    t.test('a fresh complete list is trusted to say a policy id is absent (listFreshMs)', async (tt) => {
      const { d, client, fresh } = await setup(tt, { pageSize: 2 });
      for (let i = 0; i < 3; i++) await rawPost(d, '/api/portal/policies', { ...policy(`old${i}`), id: `old-${i}` });
      await client.list('policy');
      d.resetCalls();
      tt.equal(await client.get('policy', 'new-0'), null, 'absent per the list just made');
      for (let i = 0; i < 3; i++) await client.upsert('policy', `new-${i}`, policy(`new${i}`));
      await client.upsert('policy', 'old-1', policy('old1', { rate: 3 }));
      tt.same(
        d.calls.map((c) => c.method),
        ['POST', 'POST', 'POST', 'PUT'],
        'no list per create',
      );
      tt.equal(d.policies().size, 6);

      // Made meanwhile (say, by a POST whose answer was lost): the refused POST finds it and updates it.
      const lost = (await rawPost(d, '/api/portal/policies', { ...policy('lost'), id: 'lost' })).Message;
      d.inject({ method: 'POST', path: '/api/portal/policies', status: 400, body: { Status: 'Error', Message: 'This policy name has already been used. Enter a unique policy name.', Meta: null } });
      d.resetCalls();
      await client.upsert('policy', 'lost', policy('lost', { rate: 42 }));
      tt.same(
        d.calls.map((c) => `${c.method} ${c.status}`),
        ['POST 400', 'GET 200', 'GET 200', 'GET 200', 'GET 200', `PUT 200`],
      );
      tt.equal(d.policies().get(lost)?.rate, 42);
      tt.equal(d.policies().size, 7, 'not duplicated');

      const strict = fresh({ listFreshMs: 0 });
      await strict.list('policy');
      d.resetCalls();
      await strict.upsert('policy', 'new-3', policy('new3'));
      tt.same(
        d.calls.map((c) => `${c.method} ${c.query.p ?? ''}`),
        ['GET 1', 'GET 2', 'GET 3', 'GET 4', 'POST '],
        'listFreshMs 0: a miss always lists (7 policies, 4 pages)',
      );
    });

    t.test('a policy deleted or re-keyed behind the client’s back', async (tt) => {
      const { d, client } = await setup(tt);
      await client.upsert('policy', 'p1', policy('one'));
      const mid = midOf(d, 'p1');
      d.removePolicy(mid);
      tt.equal(await client.get('policy', 'p1'), null, 'get → null');

      await client.upsert('policy', 'p1', policy('one'));
      const recreated = midOf(d, 'p1');
      tt.not(recreated, mid, 'upsert recreates');
      d.removePolicy(recreated);
      d.resetCalls();
      await client.upsert('policy', 'p1', policy('one'));
      tt.same(
        d.calls.map((c) => `${c.method} ${c.status}`),
        ['PUT 404', 'GET 200', 'POST 200'],
        'a stale _id: PUT 404, look again, create',
      );
      tt.equal(d.policies().size, 1);

      // Recreated elsewhere by someone else under the same id: the stale _id is dropped, the new one found.
      const current = midOf(d, 'p1');
      d.removePolicy(current);
      const theirs = (await rawPost(d, '/api/portal/policies', { ...policy('one'), id: 'p1' })).Message;
      await client.upsert('policy', 'p1', policy('one', { rate: 77 }));
      tt.same([...d.policies().keys()], [theirs]);
      tt.equal(d.policies().get(theirs)?.rate, 77);

      // Someone changed the id field of "our" policy: it is no longer ours.
      d.editPolicy(theirs, (p) => {
        p.id = 'somebody-else';
      });
      tt.equal(await client.get('policy', 'p1'), null);
      await client.remove('policy', 'p1');
      tt.equal(d.policies().has(theirs), true, 'not deleted: not ours any more');
    });

    t.test('two policies with the same id: the oldest is ours', async (tt) => {
      const { d, client } = await setup(tt);
      const older = (await rawPost(d, '/api/portal/policies', { ...policy('older'), id: 'dup' })).Message;
      await rawPost(d, '/api/portal/policies', { ...policy('newer'), id: 'dup' });
      const all = await client.list('policy');
      tt.equal(all.size, 1);
      tt.equal(all.get('dup')?._id, older);
      await client.upsert('policy', 'dup', policy('older', { rate: 5 }));
      tt.equal(d.policies().get(older)?.rate, 5);
    });

    t.test('errors: 401/403 name TYK_AUTH without the key; 400 is rejected with the message; 5xx; transport', async (tt) => {
      const { d, client, fresh } = await setup(tt);
      const wrong = fresh({ secret: 'wrong-key-do-not-print' });
      const err401 = await wrong.list('api').catch((e: unknown) => e);
      tt.ok(err401 instanceof GatewayApiError);
      tt.equal((err401 as GatewayApiError).status, 401);
      tt.match((err401 as Error).message, /401 Not authorised \(check TYK_AUTH\)/);
      const printed = JSON.stringify({ m: (err401 as Error).message, c: (err401 as GatewayApiError).context, s: (err401 as Error).stack });
      tt.notOk(printed.includes('wrong-key-do-not-print'), 'the key is nowhere in the error');
      await tt.rejects(wrong.upsert('policy', 'p', policy('p')), /check TYK_AUTH/);

      d.inject({ method: 'PUT', status: 403, body: { Status: 'Error', Message: 'access denied: You do not have permission to access /api/apis/{apiId}', Meta: null } });
      await client.upsert('api', 'a', api('a'));
      await fails(tt, client.upsert('api', 'a', api('a')), GatewayApiError, { status: 403, message: /access denied.*check TYK_AUTH/ });

      const badIp = await client.upsert('api', 'b', api('b', { enable_ip_whitelisting: true, allowed_ips: ['300.1.1.1'] })).catch((e: unknown) => e);
      tt.ok(badIp instanceof GatewayRejectedError, '400 → GatewayRejectedError');
      tt.equal((badIp as GatewayRejectedError).status, 400);
      tt.match((badIp as Error).message, /rejected by the Dashboard: Validation of API Definition failed\. Reason: invalid IP\/CIDR "300\.1\.1\.1"/);

      await client.upsert('policy', 'p1', policy('taken'));
      const taken = await client.upsert('policy', 'p2', policy('taken')).catch((e: unknown) => e);
      tt.ok(taken instanceof GatewayRejectedError);
      tt.match((taken as Error).message, /This policy name has already been used/);
      const malformed = await client.upsert('policy', 'p3', policy('p3', { rate: 'fast' })).catch((e: unknown) => e);
      tt.ok(malformed instanceof GatewayRejectedError, 'the 403 "Request body malformed." is a rejection, not an auth problem');
      tt.equal((malformed as GatewayRejectedError).status, 403);

      d.inject({ method: 'GET', path: '/api/apis/a', status: 500 });
      await fails(tt, client.get('api', 'a'), GatewayApiError, { status: 500, message: /500 injected fault/ });
      d.inject({ method: 'GET', path: '/api/apis/a', status: 404, body: '<html>not here</html>' });
      await fails(tt, client.get('api', 'a'), GatewayApiError, { status: 404, message: /not here/ }, 'a proxy’s 404 is not "absent"');
      d.inject({ status: 500, body: { Status: 'Error', Message: `db error near ${SECRET}`, Meta: null } });
      const echoed = await client.get('api', 'a').catch((e: unknown) => e);
      tt.notOk((echoed as Error).message.includes(SECRET), 'a key echoed by the server is masked');
      tt.match((echoed as Error).message, /db error near \*\*\*/);

      d.inject({ path: '/api/apis/a', drop: true, times: 2 });
      await fails(tt, client.get('api', 'a'), GatewayUnavailableError, { message: /dashboard default/ }, 'dropped (also on the retry)');
      d.inject({ path: '/api/portal/policies', hang: true });
      const slow = fresh({ timeoutMs: 150 });
      await fails(tt, slow.list('policy'), GatewayUnavailableError, { message: /timed out/ }, 'hung');
      tt.equal((await client.get('api', 'a')) !== null, true, 'the client works on after errors');
    });

    t.test('remove: a failed delete is done only when a read confirms the object is gone', async (tt) => {
      const { d, client } = await setup(tt);
      await client.upsert('api', 'a', api('a'));
      await client.upsert('policy', 'p', policy('p'));
      d.inject({ method: 'DELETE', status: 500 });
      await fails(tt, client.remove('api', 'a'), GatewayApiError, { status: 500 });
      tt.ok(d.apis().has('a'), 'still there: the error stands');

      d.inject({ method: 'DELETE', path: /^\/api\/apis\//, status: 500, match: () => d.removeApi('a') });
      await client.remove('api', 'a');
      tt.equal(d.apis().size, 0, 'gone despite the 500: done');
      const mid = midOf(d, 'p');
      d.inject({ method: 'DELETE', path: /^\/api\/portal\/policies\//, status: 503 });
      await fails(tt, client.remove('policy', 'p'), GatewayApiError, { status: 503 });
      tt.ok(d.policies().has(mid), 'still there: the error stands');
      d.inject({ method: 'DELETE', path: /^\/api\/portal\/policies\//, status: 500, match: () => d.removePolicy(mid) });
      await client.remove('policy', 'p');
      tt.equal(d.policies().size, 0);
    });

    t.test('ping', async (tt) => {
      const { d, client, fresh } = await setup(tt);
      await client.upsert('api', 'a', api('a'));
      d.resetCalls();
      await client.ping();
      tt.equal(d.calls.length, 1, 'one call');
      tt.match(d.calls[0], { method: 'GET', path: '/api/apis', query: { p: '1', q: 'gateway-reconciler-readiness-probe' }, status: 200 });

      await fails(tt, fresh({ secret: 'nope' }).ping(), GatewayApiError, { status: 401, message: /TYK_AUTH/ });
      d.inject({ path: '/api/apis', status: 200, body: '<html>login</html>' });
      await tt.rejects(client.ping(), /not a Tyk Dashboard API list/);
      d.inject({ path: '/api/apis', status: 502 });
      await fails(tt, client.ping(), GatewayApiError, { status: 502 });

      const gone = await startFakeTykDashboard({ secret: SECRET });
      await gone.close();
      const nowhere = fresh({ url: gone.url });
      await fails(tt, nowhere.ping(), GatewayUnavailableError, {}, 'nobody listening');
    });

    t.test('certificates: upload once per certificate in the key’s org (orgId ignored), list every page, has, remove; absent is fine', async (tt) => {
      const { d, client } = await setup(tt, { pageSize: 3 });
      const id = certificateId(SERVER, d.orgId);
      tt.equal(await client.hasCertificate(id), false);
      tt.same(await client.listCertificates(), [], 'none');

      tt.strictSame(await client.uploadCertificate(SERVER + SERVER_KEY, 'not-the-keys-org'), { id, created: true }, 'the id in the key’s org, whatever orgId says');
      tt.strictSame(await client.uploadCertificate(SERVER + SERVER_KEY), { id, created: false }, 'again: the same id, not created by this upload');
      tt.strictSame(await client.uploadCertificate(SERVER), { id, created: false }, 'without its key too');
      tt.equal(d.certs().size, 1, 'stored once');
      tt.equal(d.certs().get(id)?.hasPrivate, true, 'with the key the first upload carried');
      tt.equal(await client.hasCertificate(id), true);

      const others = [CA, CLIENT_KEY + CLIENT, STRANGER];
      const ids = [id];
      for (const pem of others) ids.push((await client.uploadCertificate(pem)).id);
      tt.same(ids.slice(1), [certificateId(CA, d.orgId), certificateId(CLIENT, d.orgId), certificateId(STRANGER, d.orgId)], 'each named by its leaf');
      d.storeCert(CA, OTHER_ORG);
      d.resetCalls();
      tt.same(await client.listCertificates('ignored'), ids, 'every page, only the key’s org');
      tt.same(
        d.calls.map((c) => `${c.method} ${c.path} ${c.query.p}`),
        ['GET /api/certs 1', 'GET /api/certs 2'],
        'two pages of three',
      );

      await client.removeCertificate(id, 'ignored');
      tt.notOk(d.certs().has(id), 'removed');
      await client.removeCertificate(id);
      tt.equal(await client.hasCertificate(id), false, 'removing again is fine');
      tt.same(await client.listCertificates(), ids.slice(1));
      tt.equal(d.writes(), 0, 'no API or policy writes');
    });

    t.test('a policy is found by its Dashboard _id too (adopting with spec.id = _id)', async (t) => {
      const dash = await startFakeTykDashboard(variant.options);
      t.teardown(() => dash.close());
      const seed = await fetch(`${dash.url}/api/portal/policies`, {
        method: 'POST',
        headers: { authorization: dash.secret, 'content-type': 'application/json' },
        body: JSON.stringify({ id: 'someone-elses-id', name: 'legacy', active: true }),
      });
      t.equal(seed.status, 200);
      const [mid] = [...dash.policies().keys()];
      const client = new TykDashboardClient({ transport: UNDICI, name: 'pro', url: dash.url, secret: dash.secret });
      t.teardown(() => client.close());
      t.match(await client.get('policy', mid as string), { _id: mid, name: 'legacy' });
      await client.upsert('policy', mid as string, { name: 'legacy', active: true, rate: 5 });
      t.equal(dash.policies().size, 1, 'updated in place, not duplicated');
      t.match(dash.policies().get(mid as string), { rate: 5, id: mid });
    });
  });
}

t.test('absent is exactly the documented answer for an unknown id, per call; any other answer is an error', async (tt) => {
  const { d, client } = await setupOn(tt);
  const e = (message: string) => ({ Status: 'Error', Message: message, Meta: null });
  await client.upsert('api', 'a', api('a'));
  await client.upsert('policy', 'p', policy('p'));
  const mid = midOf(d, 'p');

  // GET /api/apis/{id}: 400 or 404 "Could not retrieve API detail"
  for (const [status, message] of [
    [400, 'Could not retrieve API detail'],
    [404, 'Could not retrieve API detail'],
    [400, 'could not retrieve api detail.'],
  ] as const) {
    d.inject({ method: 'GET', path: '/api/apis/a', status, body: e(message) });
    tt.equal(await client.get('api', 'a'), null, `GET ${status} "${message}": absent`);
  }
  for (const [status, body, cls] of [
    [400, e('Could not retrieve APIs.'), GatewayApiError],
    [400, e('version name header should be set with base API ID'), GatewayApiError],
    [404, e('Not found'), GatewayApiError],
    [404, { Status: 'OK', Message: 'Could not retrieve API detail', Meta: null }, GatewayApiError],
    [500, e('Could not retrieve API detail'), GatewayApiError],
  ] as const) {
    d.inject({ method: 'GET', path: '/api/apis/a', status, body });
    await fails(tt, client.get('api', 'a'), cls, { status }, `GET ${status} ${JSON.stringify(body)}: an error, not absent`);
  }
  d.inject({ method: 'GET', path: '/api/apis/a', status: 400, body: e('Could not retrieve APIs.') });
  const read400 = await client.get('api', 'a').catch((x: unknown) => x);
  tt.notOk(read400 instanceof GatewayRejectedError, 'a read’s 400 is not a rejection of a spec');

  // PUT: 404 "API definition does not exist" → create instead; another 404 → error
  tt.ok(await client.get('api', 'a'), 'a read learns the internal id again (an absent answer forgot it)');
  d.inject({ method: 'PUT', path: /^\/api\/apis\//, status: 404, body: e('API definition does not exist') });
  d.resetCalls();
  d.removeApi('a');
  await client.upsert('api', 'a', api('a'));
  tt.same(
    d.calls.map((c) => `${c.method} ${c.status}`),
    ['PUT 404', 'POST 200'],
    'PUT 404 "API definition does not exist": created',
  );
  d.inject({ method: 'PUT', path: /^\/api\/apis\//, status: 404, body: e('Not found') });
  await fails(tt, client.upsert('api', 'a', api('a')), GatewayApiError, { status: 404 }, 'PUT 404 with another message');

  // DELETE: 404 "Could not retrieve API detail" → done; 400 "Could not delete the API" → an error (not a rejection)
  d.inject({ method: 'DELETE', path: /^\/api\/apis\//, status: 400, body: e('Could not delete the API') });
  const refused = await client.remove('api', 'a').catch((x: unknown) => x);
  tt.ok(refused instanceof GatewayApiError && !(refused instanceof GatewayRejectedError), 'DELETE 400: GatewayApiError');
  tt.ok(d.apis().has('a'), 'still there');
  d.inject({ method: 'DELETE', path: /^\/api\/apis\//, status: 404, body: e('Could not retrieve API detail') });
  await client.remove('api', 'a');
  d.inject({ method: 'DELETE', path: /^\/api\/apis\//, status: 404, body: e('Not found') });
  await fails(tt, client.remove('api', 'a'), GatewayApiError, { status: 404 }, 'DELETE 404 with another message');

  // policies: GET/PUT 404 "Could not retrieve portal object.", DELETE 404 "Could not retrieve object for deletion"
  d.inject({ method: 'GET', path: `/api/portal/policies/${mid}`, status: 400, body: e('Invalid policy ID.') });
  await fails(tt, client.get('policy', 'p'), GatewayApiError, { status: 400 }, 'GET policy 400 "Invalid policy ID.": not absent');
  d.inject({ method: 'GET', path: `/api/portal/policies/${mid}`, status: 404, body: e('Not found') });
  await fails(tt, client.get('policy', 'p'), GatewayApiError, { status: 404 }, 'GET policy 404 with another message');
  d.inject({ method: 'PUT', path: `/api/portal/policies/${mid}`, status: 404, body: e('Could not retrieve portal object.') });
  d.resetCalls();
  await client.upsert('policy', 'p', policy('p', { rate: 3 }));
  tt.same(
    d.calls.map((c) => `${c.method} ${c.status}`),
    ['PUT 404', 'GET 200', 'PUT 200'],
    'PUT 404: looked up again, found, updated',
  );
  d.inject({ method: 'DELETE', path: `/api/portal/policies/${mid}`, status: 404, body: e('Could not retrieve portal object.') });
  await fails(tt, client.remove('policy', 'p'), GatewayApiError, { status: 404 }, 'DELETE policy 404 with GET’s message');
  d.inject({ method: 'DELETE', path: `/api/portal/policies/${mid}`, status: 404, body: e('Could not retrieve object for deletion') });
  await client.remove('policy', 'p');
  tt.ok(d.policies().has(mid), 'taken as already gone (the fault answered instead of the Dashboard)');
});

t.test('a policy read by _id whose body lacks _id (the swagger’s GET example) keeps the _id it was read by', async (tt) => {
  const { d, client } = await setupOn(tt);
  await client.upsert('policy', 'p', policy('p'));
  const mid = midOf(d, 'p');
  const { _id: _dropped, ...without } = d.policies().get(mid) as Record<string, unknown>;
  d.inject({ method: 'GET', path: `/api/portal/policies/${mid}`, status: 200, body: without });
  tt.match(await client.get('policy', 'p'), { _id: mid, id: 'p', name: 'p' });
  d.inject({ method: 'GET', path: `/api/portal/policies/${mid}`, status: 200, body: without });
  await client.remove('policy', 'p');
  tt.equal(d.policies().size, 0, 'and is deleted by it');
});

t.test('a fresh list answers for our ids, but a Dashboard _id is read directly (the policy may be younger than the list)', async (tt) => {
  const { d, client } = await setupOn(tt);
  await client.list('policy');
  const made = await rawPost(d, '/api/portal/policies', policy('made just now'));
  d.resetCalls();
  tt.equal(await client.get('policy', 'bm90LWFuLW9iamVjdC1pZA'), null, 'absent per the fresh list');
  tt.equal(d.calls.length, 0, 'without a call');
  tt.match(await client.get('policy', made.Message), { _id: made.Message, name: 'made just now' });
  tt.same(
    d.calls.map((c) => `${c.method} ${c.path}`),
    [`GET /api/portal/policies/${made.Message}`],
    'one GET by _id',
  );
  tt.equal(await client.get('policy', '66570989d98dd00001da17f1'), null, 'an unknown _id is absent');
  d.resetCalls();
  await client.upsert('policy', made.Message, policy('made just now', { rate: 9 }));
  tt.same(
    d.calls.map((c) => `${c.method} ${c.path}`),
    [`PUT /api/portal/policies/${made.Message}`],
    'adopted in place',
  );
  tt.equal(d.policies().size, 1);
});

t.test('certificate uploads: the id of a repeat from the Dashboard’s words, else from the list; refusals; no PEM in any error', async (tt) => {
  const { d, client, fresh } = await setupOn(tt);
  const e = (message: string) => ({ Status: 'Error', Message: message, Meta: null });
  const id = certificateId(SERVER, d.orgId);
  await client.uploadCertificate(SERVER);

  d.resetCalls();
  d.inject({ method: 'POST', path: '/api/certs', status: 400, body: e(`Could not create certificate.Certificate with ${id} id already exists`) });
  tt.strictSame(await client.uploadCertificate(SERVER), { id, created: false }, 'newer Tyk’s words, another 4xx: the id it names');
  d.inject({ method: 'POST', path: '/api/certs', status: 404, body: e('Could not create certificate.Certificate with 5e9d9... ID already exists.') });
  tt.strictSame(await client.uploadCertificate(SERVER), { id, created: false }, 'an id cut short (as in the swagger’s example): the listed one');
  d.inject({ method: 'POST', path: '/api/certs', status: 200, body: { status: 'ok', message: 'Certificate added.' } });
  tt.strictSame(await client.uploadCertificate(SERVER), { id, created: true }, 'a success without an id: the listed one');
  tt.same(
    d.calls.map((c) => `${c.method} ${c.path} ${c.status}`),
    ['POST /api/certs 400', 'POST /api/certs 404', 'GET /api/certs 200', 'POST /api/certs 200', 'GET /api/certs 200'],
    'a list only when the answer does not name the id',
  );
  d.inject({ method: 'POST', path: '/api/certs', status: 200, body: { status: 'ok' } });
  await fails(tt, client.uploadCertificate(CA), GatewayApiError, { message: /took the certificate but does not list it/ }, 'a success for a certificate not listed');
  d.inject({ method: 'POST', path: '/api/certs', status: 404, body: '<html>Certificate with x ID already exists</html>' });
  await fails(tt, client.uploadCertificate(SERVER), GatewayApiError, { status: 404 }, 'a proxy page is not the Dashboard saying so');

  const before = d.count('POST', '/api/certs');
  const noCert = await client.uploadCertificate(SERVER_KEY).catch((x: unknown) => x);
  tt.ok(noCert instanceof InvalidSpecError, 'a key without a certificate: an invalid spec');
  tt.equal(d.count('POST', '/api/certs'), before, 'nothing sent');
  const leaks: [string, unknown, string][] = [['a key alone', noCert, SERVER_KEY]];

  const expired = await client.uploadCertificate(EXPIRED).catch((x: unknown) => x);
  tt.ok(expired instanceof GatewayRejectedError, 'what the Dashboard refuses: rejected');
  tt.equal((expired as GatewayRejectedError).status, 404);
  tt.match((expired as Error).message, /rejected by the Dashboard: Could not create certificate\.certificate is expired/);
  const mismatch = await client.uploadCertificate(CLIENT + SERVER_KEY).catch((x: unknown) => x);
  tt.ok(mismatch instanceof GatewayRejectedError);
  tt.match((mismatch as Error).message, /private key does not match public key/);
  leaks.push(['a key that does not match', mismatch, SERVER_KEY]);

  d.inject({ method: 'POST', path: '/api/certs', status: 500, body: e(`could not store ${CLIENT + CLIENT_KEY}`) });
  const echoed = await client.uploadCertificate(CLIENT + CLIENT_KEY).catch((x: unknown) => x);
  tt.ok(echoed instanceof GatewayApiError && !(echoed instanceof GatewayRejectedError), '5xx: GatewayApiError');
  tt.match((echoed as Error).message, /500 could not store \[PEM\]/);
  leaks.push(['an answer echoing the PEM', echoed, CLIENT + CLIENT_KEY]);
  const base64 = pemLines(CLIENT_KEY).join('');
  const rewrapped = `-----BEGIN PRIVATE KEY-----\n${base64.match(/.{1,76}/g)?.join('\n')}\n-----END PRIVATE KEY-----`;
  d.inject({ method: 'POST', path: '/api/certs', status: 500, body: e(`the key, as Go re-encodes it: ${rewrapped}`) });
  const reencoded = await client.uploadCertificate(CLIENT + CLIENT_KEY).catch((x: unknown) => x);
  tt.match((reencoded as Error).message, /re-encodes it: \[PEM\]$/);
  leaks.push(['an answer quoting the key wrapped otherwise', reencoded, rewrapped]);
  const keyLine = pemLines(CLIENT_KEY)[1] ?? '';
  d.inject({ method: 'POST', path: '/api/certs', status: 502, body: `<html>bad request near ${keyLine}</html>` });
  const cut = await client.uploadCertificate(CLIENT + CLIENT_KEY).catch((x: unknown) => x);
  tt.equal((cut as GatewayApiError).status, 502);
  leaks.push(['a page quoting a line of the key', cut, CLIENT_KEY]);

  const wrong = fresh({ secret: 'wrong-key-do-not-print' });
  const denied = await wrong.uploadCertificate(CLIENT + CLIENT_KEY).catch((x: unknown) => x);
  tt.ok(denied instanceof GatewayApiError && !(denied instanceof GatewayRejectedError), 'a wrong key is no rejection of the certificate');
  tt.match((denied as Error).message, /401 Not authorised \(check TYK_AUTH\)/);
  tt.notMatch((denied as Error).message, 'wrong-key-do-not-print');
  leaks.push(['a wrong key', denied, CLIENT_KEY]);

  d.inject({ method: 'POST', path: '/api/certs', drop: true, times: 2 });
  const dropped = await client.uploadCertificate(CLIENT + CLIENT_KEY).catch((x: unknown) => x);
  tt.ok(dropped instanceof GatewayUnavailableError, 'a dropped connection (also on the retry): unavailable');
  tt.match((dropped as Error).message, /dashboard default/);
  leaks.push(['a dropped connection', dropped, CLIENT_KEY]);

  for (const [what, err, pem] of leaks) {
    const printed = JSON.stringify({ m: (err as Error).message, c: (err as GatewayApiError).context, s: (err as Error).stack });
    tt.notMatch(printed, /-----BEGIN|PRIVATE KEY/, `${what}: no PEM block in the error`);
    tt.same(
      pemLines(pem).filter((line) => printed.includes(line)),
      [],
      `${what}: no line of the PEM in the error`,
    );
  }
  tt.equal(d.certs().size, 1, 'only the first certificate was ever stored');
});

t.test('certificates: has, remove and list answer errors as errors: another org’s id, a proxy’s 404, 5xx, a failed page, the network', async (tt) => {
  const { d, client, fresh } = await setupOn(tt, { pageSize: 1 });
  const e = (message: string) => ({ Status: 'Error', Message: message, Meta: null });
  const { id } = await client.uploadCertificate(SERVER);
  await client.uploadCertificate(CA);
  const theirs = d.storeCert(CLIENT, OTHER_ORG);

  await fails(tt, client.hasCertificate(theirs), GatewayApiError, { status: 400, message: /non-owned certificate/ }, 'another org’s id is not "absent"');
  await fails(tt, client.removeCertificate(theirs), GatewayApiError, { status: 400, message: /non-owned certificate/ }, 'nor removed');
  tt.ok(d.certs().has(theirs), 'theirs stays');
  d.inject({ method: 'GET', path: `/api/certs/${id}`, status: 404, body: '<html>not here</html>' });
  await fails(tt, client.hasCertificate(id), GatewayApiError, { status: 404, message: /not here/ }, 'a proxy’s 404 is not "absent"');
  d.inject({ method: 'GET', path: `/api/certs/${id}`, status: 404, body: e('Could not retrieve certificate details.') });
  await fails(tt, client.hasCertificate(id), GatewayApiError, { status: 404 }, 'another message is not "absent"');
  d.inject({ method: 'GET', path: `/api/certs/${id}`, status: 200, body: '<html>login</html>' });
  await fails(tt, client.hasCertificate(id), GatewayApiError, { message: /not this certificate's metadata/ }, 'a 200 that is not the metadata');
  d.inject({ method: 'GET', path: `/api/certs/${id}`, status: 500 });
  await fails(tt, client.hasCertificate(id), GatewayApiError, { status: 500, message: /500 injected fault/ });
  d.inject({ method: 'GET', path: `/api/certs/${id}`, hang: true });
  await fails(tt, fresh({ timeoutMs: 150 }).hasCertificate(id), GatewayUnavailableError, { message: /timed out/ }, 'hung');

  d.inject({ method: 'DELETE', path: `/api/certs/${id}`, status: 500 });
  await fails(tt, client.removeCertificate(id), GatewayApiError, { status: 500 }, 'a failed delete of a certificate still there');
  tt.ok(d.certs().has(id), 'the error stands');
  await client.removeCertificate(id);
  d.inject({ method: 'DELETE', path: `/api/certs/${id}`, status: 503 });
  await client.removeCertificate(id);
  tt.pass('a failed delete of a certificate a read confirms gone: done');
  d.inject({ method: 'DELETE', path: `/api/certs/${id}`, status: 404, body: e('Not found') });
  await fails(tt, client.removeCertificate(id), GatewayApiError, { status: 404 }, 'DELETE 404 with another message');

  const { id: stranger } = await client.uploadCertificate(STRANGER);
  d.inject({ method: 'GET', path: '/api/certs', status: 503, afterCalls: 1 });
  await fails(tt, client.listCertificates(), GatewayApiError, { status: 503, message: /list certificates \(page 2\)/ }, 'a failed page fails the list');
  d.inject({ method: 'GET', path: '/api/certs', status: 200, body: { certs: [7], pages: 1 } });
  await fails(tt, client.listCertificates(), GatewayApiError, { message: /not a certificate id/ });
  d.inject({ method: 'GET', path: '/api/certs', status: 200, body: { cert_basics: [], pages: 1 } });
  await fails(tt, client.listCertificates(), GatewayApiError, { message: /something other than a page of certificates/ }, 'not a list of ids');
  d.inject({ method: 'GET', path: '/api/certs', drop: true, times: 2 });
  await fails(tt, client.listCertificates(), GatewayUnavailableError, {}, 'dropped');
  tt.same(await client.listCertificates(), [certificateId(CA, d.orgId), stranger], 'the client works on after errors');
});
