/**
 * The Tyk Gateway fake's Tyk OAS APIs (/tyk/apis/oas and /tyk/apis/oas/{apiID}) over HTTP:
 * writes invisible until a reload, reads with the gateway's additions, the documented
 * refusals, the Classic view of an OAS API, deletes of both views, restarts, faults, and a
 * gateway that predates the OAS API.
 */
import t from 'tap';
import { type FakeTykGateway, type FakeTykOptions, type JsonObject, startFakeTykGateway } from './tyk-gateway.js';

interface Res {
  status: number;
  body: any;
}

interface Test {
  teardown(fn: () => unknown): void;
}

async function start(tt: Test, options: FakeTykOptions = {}): Promise<FakeTykGateway> {
  const gw = await startFakeTykGateway({ secret: 's3cret', reloadDelayMs: 1, ...options });
  tt.teardown(() => gw.close());
  return gw;
}

async function call(gw: FakeTykGateway, method: string, path: string, body?: unknown, auth = true): Promise<Res> {
  const init: RequestInit = { method, headers: auth ? { 'x-tyk-authorization': gw.secret } : {} };
  if (body !== undefined) init.body = typeof body === 'string' ? body : JSON.stringify(body);
  const res = await fetch(gw.url + path, init);
  const text = await res.text();
  return { status: res.status, body: text === '' ? undefined : JSON.parse(text) };
}

/** A Tyk OAS document (the petstore sample's shape); `id` undefined leaves info.id out. */
function oas(id: string | undefined, listenPath = '/petstore/', extra: JsonObject = {}): JsonObject {
  return {
    openapi: '3.0.3',
    info: { title: 'Petstore', version: '1.0.0' },
    servers: [{ url: 'https://petstore.example.com/v2' }],
    paths: { '/pets': { get: { operationId: 'listPets', responses: { '200': { description: 'pets' } } } } },
    'x-tyk-api-gateway': {
      info: { ...(id === undefined ? {} : { id }), name: 'Petstore', state: { active: true } },
      upstream: { url: 'https://petstore.swagger.io/v2' },
      server: { listenPath: { value: listenPath, strip: true } },
    },
    ...extra,
  };
}

const err = (message: string) => ({ status: 'error', message });

async function reloaded(gw: FakeTykGateway): Promise<void> {
  await call(gw, 'GET', '/tyk/reload/group');
  await gw.waitForReloads();
}

t.test('POST: written to the app path, invisible until a reload; then read with the gateway’s additions', async (tt) => {
  const gw = await start(tt);
  const created = await call(gw, 'POST', '/tyk/apis/oas', oas('petstore'));
  tt.same(created, { status: 200, body: { key: 'petstore', status: 'ok', action: 'added' } });
  tt.same(await call(gw, 'GET', '/tyk/apis/oas/petstore'), { status: 404, body: err('API not found') }, 'not loaded yet');
  tt.same((await call(gw, 'GET', '/tyk/apis/oas')).body, []);
  tt.same((await call(gw, 'GET', '/tyk/apis')).body, [], 'nor in the Classic list');
  tt.ok(gw.files('oas').has('petstore'), 'the OAS file is written');
  tt.equal(gw.files('api').get('petstore')?.is_oas, true, 'and the Classic one, marked is_oas');

  await reloaded(gw);
  const got = await call(gw, 'GET', '/tyk/apis/oas/petstore');
  tt.equal(got.status, 200);
  const doc = got.body;
  const classic = (await call(gw, 'GET', '/tyk/apis/petstore')).body;
  tt.match(classic.id, /^[0-9a-f]{24}$/, 'the loaded Classic form has its 24-hex id');
  tt.same(doc['x-tyk-api-gateway'].info, { id: 'petstore', dbId: classic.id, name: 'Petstore', state: { active: true } }, 'info: the id, and the dbId; no empty orgId');
  tt.same(
    doc.servers,
    [{ url: 'http://127.0.0.1:8080/petstore' }, { url: '/petstore' }, { url: 'https://petstore.example.com/v2' }],
    'the servers the gateway generates from the listen path come first, then the document’s own',
  );
  tt.same(doc.paths, oas('petstore').paths, 'the rest as sent');
  tt.same(doc['x-tyk-api-gateway'].server, { listenPath: { value: '/petstore/', strip: true } });
  tt.same((await call(gw, 'GET', '/tyk/apis/oas')).body, [doc], 'listed');
  tt.notOk('x-tyk-api-gateway' in (await call(gw, 'GET', '/tyk/apis/oas/petstore?mode=public')).body, 'mode=public: without the extension');
  tt.notOk('x-tyk-api-gateway' in (await call(gw, 'GET', '/tyk/apis/oas?mode=public')).body[0], 'in lists too');
  tt.same(gw.loaded('oas').get('petstore'), doc, 'the test side sees what GET answers');

  tt.match(classic, {
    api_id: 'petstore',
    name: 'Petstore',
    active: true,
    use_keyless: true,
    is_oas: true,
    proxy: { listen_path: '/petstore/', strip_listen_path: true, target_url: 'https://petstore.swagger.io/v2' },
    version_data: { not_versioned: true, default_version: '', versions: { '': { use_extended_paths: true } } },
  });
  tt.ok(Object.keys(classic).length > 80, 'the Classic form is the full model');
  tt.same(
    (await call(gw, 'GET', '/tyk/apis')).body.map((a: any) => a.api_id),
    ['petstore'],
    'GET /tyk/apis lists it, in its Classic form',
  );
});

t.test('POST without info.id: the gateway generates one; POST of an id it has overwrites it, as Tyk 5.x does', async (tt) => {
  const gw = await start(tt, { serverHost: 'gw.example.com' });
  const generated = await call(gw, 'POST', '/tyk/apis/oas', oas(undefined));
  tt.equal(generated.status, 200);
  const id = generated.body.key as string;
  tt.match(id, /^[0-9a-f]{32}$/);
  tt.equal((gw.files('oas').get(id)?.['x-tyk-api-gateway'] as any)?.info.id, id, 'the document carries it');
  tt.same(gw.files('oas').get(id)?.servers, [{ url: 'http://gw.example.com/petstore' }, { url: '/petstore' }, { url: 'https://petstore.example.com/v2' }], 'on serverHost');

  await call(gw, 'POST', '/tyk/apis/oas', oas('same'));
  await reloaded(gw);
  const again = await call(gw, 'POST', '/tyk/apis/oas', oas('same', '/renamed/'));
  tt.same(again.body, { key: 'same', status: 'ok', action: 'added' }, 'no refusal: the swagger documents none, and Tyk writes the file over');
  await reloaded(gw);
  tt.equal((await call(gw, 'GET', '/tyk/apis/oas/same')).body['x-tyk-api-gateway'].server.listenPath.value, '/renamed/');
});

t.test('bodies the gateway refuses, with its messages; nothing is written', async (tt) => {
  const gw = await start(tt);
  const noName = oas('x');
  (noName['x-tyk-api-gateway'] as any).info = { name: ' ', state: {} };
  const cases: [string, unknown, string][] = [
    ['not JSON', '{', 'request malformed'],
    ['not an object', '[1]', 'request malformed'],
    ['no x-tyk-api-gateway', { ...oas('x'), 'x-tyk-api-gateway': undefined }, 'the payload should contain x-tyk-api-gateway'],
    ['x-tyk-api-gateway not an object', { ...oas('x'), 'x-tyk-api-gateway': 'yes' }, 'the payload should contain x-tyk-api-gateway'],
    ['a version with no schema', { ...oas('x'), openapi: '2.0' }, 'Schema not found for version "2.0"'],
    ['no version at all', { ...oas('x'), openapi: 'latest' }, 'Malformed version: latest'],
    ['no openapi, info or paths', { 'x-tyk-api-gateway': (oas('x') as any)['x-tyk-api-gateway'] }, '(root): openapi is required\n(root): info is required\n(root): paths is required'],
    ['a 3.0 version without its patch', { ...oas('x'), openapi: '3.0' }, "openapi: Does not match pattern '^3\\.0\\.\\d(-.+)?$'"],
    ['info without title', { ...oas('x'), info: { version: 1 } }, 'info: title is required\ninfo.version: Invalid type. Expected: string, given: integer'],
    ['a blank name, state without active', noName, "x-tyk-api-gateway.info.name: Does not match pattern '\\S+'\nx-tyk-api-gateway.info.state: active is required"],
    ['no upstream, server or info', { ...oas('x'), 'x-tyk-api-gateway': {} }, 'x-tyk-api-gateway: info is required\nx-tyk-api-gateway: upstream is required\nx-tyk-api-gateway: server is required'],
    [
      'an upstream without url, a listen path without value',
      { ...oas('x'), 'x-tyk-api-gateway': { info: { name: 'n', state: { active: 'yes' } }, upstream: {}, server: { listenPath: { strip: 1 } } } },
      [
        'x-tyk-api-gateway.info.state.active: Invalid type. Expected: boolean, given: string',
        'x-tyk-api-gateway.upstream: Must validate at least one schema (anyOf)',
        'x-tyk-api-gateway.upstream: url is required',
        'x-tyk-api-gateway.server.listenPath: value is required',
        'x-tyk-api-gateway.server.listenPath.strip: Invalid type. Expected: boolean, given: integer',
      ].join('\n'),
    ],
  ];
  for (const [what, body, message] of cases) {
    tt.same(await call(gw, 'POST', '/tyk/apis/oas', body), { status: 400, body: err(message) }, `POST: ${what}`);
  }
  tt.equal(gw.files('oas').size + gw.files('api').size, 0, 'nothing written');
  await call(gw, 'POST', '/tyk/apis/oas', oas('known'));
  gw.reloadNow();
  tt.same(await call(gw, 'PUT', '/tyk/apis/oas/known', '{'), { status: 400, body: err('request malformed') }, 'PUT checks the body first');
  tt.same(await call(gw, 'PUT', '/tyk/apis/oas/unknown', { openapi: '3.0.3' }), { status: 400, body: err('the payload should contain x-tyk-api-gateway') }, 'before it looks for the API');
});

t.test('PUT: only a loaded OAS API, only under its own id; replaces the servers it had generated; invisible until a reload', async (tt) => {
  const gw = await start(tt);
  tt.same(await call(gw, 'PUT', '/tyk/apis/oas/petstore', oas('petstore')), { status: 404, body: err('API not found') }, 'not loaded');
  await call(gw, 'POST', '/tyk/apis', { api_id: 'classic', name: 'c', proxy: { listen_path: '/c/', target_url: 'http://x' } });
  await call(gw, 'POST', '/tyk/apis/oas', oas('petstore'));
  tt.same(await call(gw, 'PUT', '/tyk/apis/oas/petstore', oas('petstore')), { status: 404, body: err('API not found') }, 'written, not loaded: still 404');
  await reloaded(gw);

  tt.same(
    await call(gw, 'PUT', '/tyk/apis/oas/classic', oas('classic')),
    { status: 400, body: err('the supplied API definition is in OAS format, please use the Tyk classic format for this API') },
    'a Classic API',
  );
  const mismatch = err('Request APIID does not match that in Definition! For Update operations these must match.');
  tt.same(await call(gw, 'PUT', '/tyk/apis/oas/petstore', oas('other')), { status: 400, body: mismatch }, 'another id in the body');
  tt.same(await call(gw, 'PUT', '/tyk/apis/oas/petstore', oas(undefined)), { status: 400, body: mismatch }, 'no id in the body');

  const loaded = (await call(gw, 'GET', '/tyk/apis/oas/petstore')).body;
  const update = { ...oas('petstore', '/v2/'), servers: loaded.servers };
  tt.same(await call(gw, 'PUT', '/tyk/apis/oas/petstore', update), { status: 200, body: { key: 'petstore', status: 'ok', action: 'modified' } });
  tt.equal((await call(gw, 'GET', '/tyk/apis/oas/petstore')).body['x-tyk-api-gateway'].server.listenPath.value, '/petstore/', 'the old one until a reload');
  await reloaded(gw);
  const after = (await call(gw, 'GET', '/tyk/apis/oas/petstore')).body;
  tt.same(
    after.servers,
    [{ url: 'http://127.0.0.1:8080/v2' }, { url: '/v2' }, { url: 'https://petstore.example.com/v2' }],
    'the servers generated for the old listen path are gone, the document’s own kept',
  );
  tt.equal((await call(gw, 'GET', '/tyk/apis/petstore')).body.proxy.listen_path, '/v2/', 'the Classic form follows');
});

t.test('DELETE removes both views, through either route; what is not loaded is 404; a missing file is 500', async (tt) => {
  const gw = await start(tt);
  for (const route of ['/tyk/apis/oas', '/tyk/apis']) {
    await call(gw, 'POST', '/tyk/apis/oas', oas('petstore'));
    await reloaded(gw);
    tt.same(await call(gw, 'DELETE', `${route}/petstore`), { status: 200, body: { key: 'petstore', status: 'ok', action: 'deleted' } }, `${route}/{id}`);
    tt.equal(gw.files('oas').size + gw.files('api').size, 0, 'both files gone');
    tt.equal((await call(gw, 'GET', '/tyk/apis/oas/petstore')).status, 200, 'still loaded until a reload');
    await reloaded(gw);
    tt.equal((await call(gw, 'GET', '/tyk/apis/oas/petstore')).status, 404);
    tt.equal((await call(gw, 'GET', '/tyk/apis/petstore')).status, 404);
  }
  tt.same(await call(gw, 'DELETE', '/tyk/apis/oas/petstore'), { status: 404, body: err('API not found') }, 'not loaded');

  await call(gw, 'POST', '/tyk/apis/oas', oas('petstore'));
  await reloaded(gw);
  gw.removeFile('oas', 'petstore');
  tt.same(await call(gw, 'DELETE', '/tyk/apis/oas/petstore'), { status: 500, body: err('Delete failed') }, 'its OAS file is gone');
  tt.ok(gw.files('api').has('petstore'), 'nothing deleted');
});

t.test('the Classic routes and an OAS API: PUT refused; a Classic POST of its id makes it Classic again', async (tt) => {
  const gw = await start(tt);
  await call(gw, 'POST', '/tyk/apis/oas', oas('petstore'));
  await reloaded(gw);
  const classic = { api_id: 'petstore', name: 'classic now', proxy: { listen_path: '/p/', target_url: 'http://x' }, is_oas: true };
  tt.same(await call(gw, 'PUT', '/tyk/apis/petstore', classic), { status: 400, body: err('this API endpoint only supports Tyk Classic APIs; please use the appropriate Tyk OAS API endpoint') });
  tt.equal((await call(gw, 'POST', '/tyk/apis', classic)).status, 200);
  await reloaded(gw);
  tt.equal((await call(gw, 'GET', '/tyk/apis/petstore')).body.is_oas, false, 'a Classic write makes a Classic API, whatever the body says');
  tt.equal((await call(gw, 'GET', '/tyk/apis/oas/petstore')).status, 400, 'no longer on the OAS route');
  tt.same((await call(gw, 'GET', '/tyk/apis/oas')).body, []);
  tt.ok(gw.files('oas').has('petstore'), 'its OAS file stays behind');
});

t.test('two APIs on one listen path: the OAS read shows the listen path the gateway renamed', async (tt) => {
  const gw = await start(tt);
  await call(gw, 'POST', '/tyk/apis/oas', oas('first'));
  await reloaded(gw);
  await call(gw, 'POST', '/tyk/apis/oas', oas('second'));
  await reloaded(gw);
  tt.equal((await call(gw, 'GET', '/tyk/apis/oas/first')).body['x-tyk-api-gateway'].server.listenPath.value, '/petstore/', 'loaded first: kept');
  tt.equal((await call(gw, 'GET', '/tyk/apis/oas/second')).body['x-tyk-api-gateway'].server.listenPath.value, '/petstore/-second', 'renamed as Tyk does');
});

t.test('restarts, lost reloads, faults and the call log, as for Classic APIs', async (tt) => {
  const gw = await start(tt);
  await call(gw, 'POST', '/tyk/apis/oas', oas('petstore'));
  gw.dropReloads(1);
  await reloaded(gw);
  tt.equal((await call(gw, 'GET', '/tyk/apis/oas/petstore')).status, 404, 'a lost reload loads nothing');
  await reloaded(gw);
  tt.equal((await call(gw, 'GET', '/tyk/apis/oas/petstore')).status, 200);

  gw.restart({ keepFiles: true });
  tt.equal((await call(gw, 'GET', '/tyk/apis/oas/petstore')).status, 200, 'a restart with its disk loads the files at start');
  gw.restart({ keepFiles: true, loadOnStart: false });
  tt.equal((await call(gw, 'GET', '/tyk/apis/oas/petstore')).status, 404);
  gw.restart();
  tt.equal(gw.files('oas').size, 0, 'a restart without its disk loses the files');

  gw.resetCalls();
  gw.inject({ method: 'POST', path: '/tyk/apis/oas', status: 500 });
  tt.same(await call(gw, 'POST', '/tyk/apis/oas', oas('x')), { status: 500, body: err('injected fault') });
  await call(gw, 'POST', '/tyk/apis/oas', oas('x'));
  await call(gw, 'GET', '/tyk/apis/oas/x');
  tt.equal(gw.count('POST', '/tyk/apis/oas'), 2);
  tt.equal(gw.writes(), 2, 'OAS writes count as writes');
  tt.same(
    gw.calls.map((c) => `${c.method} ${c.path} ${c.status}`),
    ['POST /tyk/apis/oas 500', 'POST /tyk/apis/oas 200', 'GET /tyk/apis/oas/x 404'],
  );
});

t.test('what the fake does not model answers 501; other methods 405; every route behind auth', async (tt) => {
  const gw = await start(tt);
  tt.equal((await call(gw, 'PATCH', '/tyk/apis/oas/x', oas('x'))).status, 501);
  tt.equal((await call(gw, 'GET', '/tyk/apis/oas/export')).status, 501);
  tt.equal((await call(gw, 'POST', '/tyk/apis/oas/import', oas(undefined))).status, 501);
  tt.equal((await call(gw, 'GET', '/tyk/apis/oas/x/versions')).status, 501);
  tt.same(await call(gw, 'POST', '/tyk/apis/oas?base_api_id=b1&new_version_name=v2', oas('x')), { status: 501, body: err('not modelled by the fake: base_api_id, new_version_name') });
  tt.same(await call(gw, 'DELETE', '/tyk/apis/oas'), { status: 405, body: err('Method not supported') });
  tt.same(await call(gw, 'POST', '/tyk/apis/oas/x', oas('x')), { status: 405, body: err('Method not supported') });
  for (const [method, path] of [
    ['GET', '/tyk/apis/oas'],
    ['POST', '/tyk/apis/oas'],
    ['GET', '/tyk/apis/oas/x'],
    ['PUT', '/tyk/apis/oas/x'],
    ['DELETE', '/tyk/apis/oas/x'],
  ] as const) {
    tt.equal((await call(gw, method, path, undefined, false)).status, 403, `${method} ${path}`);
  }
});

t.test('Tyk Gateway 3.1: /tyk/apis/oas is its Classic /tyk/apis/{apiID}; the item routes do not exist', async (tt) => {
  const gw = await start(tt, { version: '3.1' });
  tt.same(await call(gw, 'GET', '/tyk/apis/oas'), { status: 404, body: err('API not found.') }, 'Tyk’s JSON 404, not the router’s page');
  tt.same(
    await call(gw, 'POST', '/tyk/apis/oas', oas('petstore')),
    { status: 400, body: err('Request APIID does not match that in Definition! For Updtae operations these must match.') },
    'a write by path id, refused',
  );
  tt.equal(gw.files('api').size, 0, 'nothing written');
  const res = await fetch(`${gw.url}/tyk/apis/oas/petstore`, { headers: { 'x-tyk-authorization': gw.secret } });
  tt.same([res.status, await res.text()], [404, '404 page not found\n']);
});
