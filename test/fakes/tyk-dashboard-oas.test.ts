/**
 * The Dashboard fake's Tyk OAS APIs (/api/apis/oas and /api/apis/oas/{apiId}) over HTTP:
 * writes visible at once, reads with the Dashboard's additions, the documented answers and
 * refusals, the Classic form under /api/apis, and the test controls.
 */
import t from 'tap';
import { type FakeTykDashboard, type FakeTykDashboardOptions, type JsonObject, startFakeTykDashboard } from './tyk-dashboard.js';

interface Res {
  status: number;
  body: any;
}

interface Test {
  teardown(fn: () => unknown): void;
}

async function start(tt: Test, options: FakeTykDashboardOptions = {}): Promise<FakeTykDashboard> {
  const d = await startFakeTykDashboard({ secret: 'dash-key', ...options });
  tt.teardown(() => d.close());
  return d;
}

async function call(d: FakeTykDashboard, method: string, path: string, body?: unknown, auth = true): Promise<Res> {
  const init: RequestInit = { method, headers: auth ? { authorization: d.secret } : {} };
  if (body !== undefined) init.body = typeof body === 'string' ? body : JSON.stringify(body);
  const res = await fetch(d.url + path, init);
  const text = await res.text();
  return { status: res.status, body: text === '' ? undefined : JSON.parse(text) };
}

function oas(id: string | undefined, listenPath = '/petstore/', info: JsonObject = {}): JsonObject {
  return {
    openapi: '3.0.3',
    info: { title: 'Petstore', version: '1.0.0' },
    paths: {},
    'x-tyk-api-gateway': {
      info: { ...(id === undefined ? {} : { id }), name: 'Petstore', state: { active: true }, ...info },
      upstream: { url: 'https://petstore.swagger.io/v2' },
      server: { listenPath: { value: listenPath, strip: true } },
    },
  };
}

const error = (message: string) => ({ Status: 'Error', Message: message, Meta: null });
const okay = (message: string) => ({ Status: 'OK', Message: message, Meta: null });

t.test('POST: visible at once, with the Dashboard’s ids and org; the Classic form under /api/apis carries the document', async (tt) => {
  const d = await start(tt, { pageSize: 2 });
  const created = await call(d, 'POST', '/api/apis/oas', oas('petstore'));
  tt.equal(created.status, 200);
  tt.match(created.body, { Status: 'OK', Message: 'API created', ID: 'petstore', Meta: /^[0-9a-f]{24}$/ });
  const internal = created.body.Meta as string;

  const got = await call(d, 'GET', '/api/apis/oas/petstore');
  tt.equal(got.status, 200);
  tt.same(got.body['x-tyk-api-gateway'].info, { id: 'petstore', dbId: internal, orgId: d.orgId, name: 'Petstore', state: { active: true } });
  tt.same(got.body.paths, {}, 'the rest as sent');
  tt.notOk('servers' in got.body, 'no servers made up');
  tt.same(d.oasApis().get('petstore'), got.body, 'the test side sees what GET answers');

  const classic = (await call(d, 'GET', '/api/apis/petstore')).body;
  tt.match(classic.api_definition, { api_id: 'petstore', id: internal, org_id: d.orgId, is_oas: true, name: 'Petstore', proxy: { listen_path: '/petstore/' } });
  tt.same(classic.oas, got.body, 'the wrapper carries the document');
  tt.same(d.apis().get('petstore')?.is_oas, true);

  await call(d, 'POST', '/api/apis', { api_definition: { api_id: 'classic', name: 'c', proxy: { listen_path: '/c/', target_url: 'http://x' } } });
  await call(d, 'POST', '/api/apis/oas', oas('second', '/second/'));
  const page1 = (await call(d, 'GET', '/api/apis?p=1&sort=created_at')).body;
  const page2 = (await call(d, 'GET', '/api/apis?p=2&sort=created_at')).body;
  tt.equal(page1.pages, 2, 'OAS and Classic APIs page together');
  tt.same(
    [...page1.apis, ...page2.apis].map((w: any) => [w.api_definition.api_id, w.api_definition.is_oas, 'oas' in w]),
    [
      ['petstore', true, true],
      ['classic', false, false],
      ['second', true, true],
    ],
  );
});

t.test('POST: the id generated when absent; an id any API has is 409; ignoreApiIdOnCreate generates one anyway', async (tt) => {
  const d = await start(tt);
  const generated = await call(d, 'POST', '/api/apis/oas', oas(undefined));
  tt.match(generated.body.ID, /^[0-9a-f]{32}$/);
  tt.equal((await call(d, 'GET', `/api/apis/oas/${generated.body.ID}`)).body['x-tyk-api-gateway'].info.id, generated.body.ID);
  await call(d, 'POST', '/api/apis/oas', oas('petstore', '/a/'));
  tt.same(await call(d, 'POST', '/api/apis/oas', oas('petstore', '/b/')), { status: 409, body: error('Found API with the same ID.') });
  await call(d, 'POST', '/api/apis', { api_definition: { api_id: 'classic', name: 'c' } });
  tt.same(await call(d, 'POST', '/api/apis/oas', oas('classic', '/c/')), { status: 409, body: error('Found API with the same ID.') }, 'a Classic API’s id too');
  tt.equal(d.oasApis().size, 2);

  const other = await start(tt, { ignoreApiIdOnCreate: true });
  const made = await call(other, 'POST', '/api/apis/oas', oas('mine'));
  tt.not(made.body.ID, 'mine');
  tt.same([...other.oasApis().keys()], [made.body.ID]);
});

t.test('bodies refused with 400, in the documented words; nothing stored', async (tt) => {
  const d = await start(tt);
  const cases: [string, unknown, string][] = [
    ['not JSON', '{', "Couldn't read body."],
    ['not an object', '"x"', "Couldn't read body."],
    ['no x-tyk-api-gateway', { openapi: '3.0.3', info: { title: 't', version: '1' }, paths: {} }, 'The payload should contain x-tyk-api-gateway.'],
    ['a schema problem', { ...oas('x'), paths: undefined }, '(root): paths is required'],
  ];
  for (const [what, body, message] of cases) tt.same(await call(d, 'POST', '/api/apis/oas', body), { status: 400, body: error(message) }, what);
  tt.equal(d.apis().size, 0);
  await call(d, 'POST', '/api/apis/oas', oas('petstore'));
  for (const [what, body, message] of cases) tt.same(await call(d, 'PUT', '/api/apis/oas/petstore', body), { status: 400, body: error(message) }, `PUT: ${what}`);
});

t.test('PUT: replaces an OAS API under its id; wrong ids, another API’s listen path and unknown APIs refused as documented', async (tt) => {
  const d = await start(tt);
  const internal = (await call(d, 'POST', '/api/apis/oas', oas('petstore'))).body.Meta as string;
  await call(d, 'POST', '/api/apis/oas', oas('taken', '/taken/'));
  await call(d, 'POST', '/api/apis', { api_definition: { api_id: 'classic', name: 'c', proxy: { listen_path: '/c/', target_url: 'http://x' } } });

  tt.same(await call(d, 'PUT', '/api/apis/oas/unknown', oas('unknown')), { status: 404, body: error('API definition does not exist') });
  tt.same(await call(d, 'PUT', '/api/apis/oas/classic', oas('classic')), { status: 404, body: error('API definition does not exist') }, 'a Classic API is none of these');
  tt.same(await call(d, 'PUT', `/api/apis/oas/${internal}`, oas(undefined)), { status: 404, body: error('API definition does not exist') }, 'the path takes the public id only');
  tt.same(await call(d, 'PUT', '/api/apis/oas/petstore', oas('other')), { status: 400, body: error('Invalid `ID` value') }, 'another info.id');
  tt.same(await call(d, 'PUT', '/api/apis/oas/petstore', oas(undefined, '/p/', { dbId: '66570989d98dd00001da17f1' })), { status: 400, body: error('Invalid `ID` value') }, 'another dbId');
  tt.same(await call(d, 'PUT', '/api/apis/oas/petstore', oas('petstore', '/taken/')), { status: 403, body: error('Found API with same url.') }, 'another OAS API’s listen path');
  tt.same(await call(d, 'PUT', '/api/apis/oas/petstore', oas('petstore', '/c/')), { status: 403, body: error('Found API with same url.') }, 'a Classic API’s');

  tt.same(await call(d, 'PUT', '/api/apis/oas/petstore', oas(undefined, '/v2/', { dbId: internal })), { status: 200, body: okay('API updated.') }, 'no id: the path’s');
  const after = (await call(d, 'GET', '/api/apis/oas/petstore')).body;
  tt.equal(after['x-tyk-api-gateway'].server.listenPath.value, '/v2/', 'at once');
  tt.equal(after['x-tyk-api-gateway'].info.id, 'petstore');
  tt.equal(d.apis().get('petstore')?.id, internal, 'the same API');
  tt.match(d.apis().get('petstore'), { proxy: { listen_path: '/v2/' } }, 'its Classic form follows');
  tt.equal((await call(d, 'PUT', '/api/apis/oas/petstore', oas('petstore', '/v2/'))).status, 200, 'its own listen path is no conflict');
});

t.test('GET and DELETE: unknown, Classic and internal ids are not found, with the documented answers', async (tt) => {
  for (const [unknownApi, status] of [
    ['400', 400],
    ['404', 404],
  ] as const) {
    const d = await start(tt, { unknownApi });
    const internal = (await call(d, 'POST', '/api/apis/oas', oas('petstore'))).body.Meta as string;
    await call(d, 'POST', '/api/apis', { api_definition: { api_id: 'classic', name: 'c' } });
    for (const id of ['unknown', 'classic', internal]) {
      tt.same(await call(d, 'GET', `/api/apis/oas/${id}`), { status, body: error('Could not retrieve API detail.') }, `unknownApi ${unknownApi}: GET ${id}`);
      tt.same(await call(d, 'DELETE', `/api/apis/oas/${id}`), { status: 404, body: error('Could not retrieve API detail.') }, `DELETE ${id}`);
    }
    tt.ok(d.apis().has('classic'), 'the Classic API is kept');
    tt.same(await call(d, 'DELETE', '/api/apis/oas/petstore'), { status: 200, body: okay('API deleted.') });
    tt.equal((await call(d, 'GET', '/api/apis/oas/petstore')).status, status, 'gone');
    tt.equal(d.apis().has('petstore'), false, 'from both forms');
  }
});

t.test('the Classic routes and an OAS API: PUT refused, DELETE deletes, a Classic write is always Classic', async (tt) => {
  const d = await start(tt);
  await call(d, 'POST', '/api/apis/oas', oas('petstore'));
  const classic = { api_definition: { api_id: 'petstore', name: 'classic', is_oas: true } };
  tt.same(await call(d, 'PUT', '/api/apis/petstore', classic), { status: 400, body: error('this API endpoint only supports Tyk Classic APIs; please use the appropriate Tyk OAS API endpoint') });
  tt.same(await call(d, 'DELETE', '/api/apis/petstore'), { status: 200, body: { Status: 'OK', Message: 'API deleted', Meta: null } });
  tt.equal(d.oasApis().size, 0);
  await call(d, 'POST', '/api/apis', classic);
  tt.equal(d.apis().get('petstore')?.is_oas, false, 'is_oas is the Dashboard’s to say');
  tt.equal((await call(d, 'GET', '/api/apis/oas/petstore')).status, 400);
});

t.test('editOas: an edit on the Dashboard, both forms follow; faults, calls and writes as for the other routes', async (tt) => {
  const d = await start(tt);
  await call(d, 'POST', '/api/apis/oas', oas('petstore'));
  d.editOas('petstore', (doc) => {
    (doc['x-tyk-api-gateway'] as any).info.name = 'Edited';
  });
  tt.equal((await call(d, 'GET', '/api/apis/oas/petstore')).body['x-tyk-api-gateway'].info.name, 'Edited');
  tt.equal(d.apis().get('petstore')?.name, 'Edited');
  tt.throws(() => d.editOas('nope', () => undefined), /no OAS API nope/);

  d.resetCalls();
  d.inject({ method: 'PUT', path: '/api/apis/oas/petstore', status: 500 });
  tt.same(await call(d, 'PUT', '/api/apis/oas/petstore', oas('petstore')), { status: 500, body: error('injected fault') });
  await call(d, 'DELETE', '/api/apis/oas/petstore');
  tt.equal(d.writes(), 2);
  tt.same(
    d.calls.map((c) => `${c.method} ${c.path} ${c.status}`),
    ['PUT /api/apis/oas/petstore 500', 'DELETE /api/apis/oas/petstore 200'],
  );
});

t.test('what the swagger does not document is 405; what the fake does not model 501; every route needs the key', async (tt) => {
  const d = await start(tt);
  tt.same(await call(d, 'GET', '/api/apis/oas'), { status: 405, body: error('Method not allowed') }, 'no documented list');
  tt.same(await call(d, 'POST', '/api/apis/oas/x', oas('x')), { status: 405, body: error('Method not allowed') });
  tt.same(await call(d, 'POST', '/api/apis/oas?templateID=t1', oas('x')), { status: 501, body: error('not modelled by the fake: templateID') });
  tt.same(await call(d, 'DELETE', '/api/apis/oas/x?purge=true'), { status: 501, body: error('not modelled by the fake: purge') });
  tt.equal((await call(d, 'PATCH', '/api/apis/oas/x', oas('x'))).status, 501);
  for (const path of ['/api/apis/oas/dry-run', '/api/apis/oas/import', '/api/apis/oas/x/urls', '/api/apis/oas/x/export', '/api/apis/oas/a/rebase/b']) {
    tt.equal((await call(d, 'GET', path)).status, 501, path);
  }
  for (const [method, path] of [
    ['POST', '/api/apis/oas'],
    ['GET', '/api/apis/oas/x'],
    ['PUT', '/api/apis/oas/x'],
    ['DELETE', '/api/apis/oas/x'],
  ] as const) {
    tt.same(await call(d, method, path, undefined, false), { status: 401, body: error('Not authorised') }, `${method} ${path}`);
  }
});
