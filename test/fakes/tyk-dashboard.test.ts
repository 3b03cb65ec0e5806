import t from 'tap';
import { DASHBOARD_VARIANTS, type FakeTykDashboard, type FakeTykDashboardOptions, type JsonObject, startFakeTykDashboard } from './tyk-dashboard.js';

interface Res {
  status: number;
  body: any;
  contentType: string | null;
}

interface Test {
  teardown(fn: () => unknown): void;
}

async function start(tt: Test, options: FakeTykDashboardOptions = {}): Promise<FakeTykDashboard> {
  const d = await startFakeTykDashboard({ secret: 'dash-key', ...options });
  tt.teardown(() => d.close());
  return d;
}

async function call(d: FakeTykDashboard, method: string, path: string, body?: unknown, headers: Record<string, string> = { authorization: d.secret }): Promise<Res> {
  const init: RequestInit = { method, headers: { ...headers } };
  if (body !== undefined) init.body = typeof body === 'string' ? body : JSON.stringify(body);
  const res = await fetch(d.url + path, init);
  const text = await res.text();
  return { status: res.status, body: text === '' ? undefined : JSON.parse(text), contentType: res.headers.get('content-type') };
}

function httpbin(apiId = 'httpbin', name = 'httpbin'): JsonObject {
  return {
    api_id: apiId,
    name,
    org_id: 'not-the-users-org',
    use_keyless: true,
    active: true,
    proxy: { listen_path: `/${name}/`, target_url: 'http://httpbin.org', strip_listen_path: true },
    version_data: { not_versioned: true, default_version: 'Default', versions: { Default: { name: 'Default' } } },
    x_not_a_tyk_field: 'dropped',
  };
}

function wrap(def: JsonObject): JsonObject {
  return { api_definition: def };
}

function policy(id: string, name = `policy ${id}`): JsonObject {
  return {
    id,
    name,
    active: true,
    rate: 10,
    per: 60,
    access_rights: { httpbin: { api_id: 'httpbin', api_name: 'httpbin', versions: ['Default'] } },
    x_unknown: 1,
  };
}

async function createApi(d: FakeTykDashboard, def: JsonObject): Promise<string> {
  const res = await call(d, 'POST', '/api/apis', wrap(def));
  if (res.status !== 200) throw new Error(`create failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.Meta as string;
}

async function createPolicy(d: FakeTykDashboard, body: JsonObject): Promise<string> {
  const res = await call(d, 'POST', '/api/portal/policies', body);
  if (res.status !== 200) throw new Error(`create failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.Message as string;
}

const OBJECT_ID = /^[0-9a-f]{24}$/;
const NOT_AUTHORISED = { Status: 'Error', Message: 'Not authorised', Meta: null };
const NO_API = { Status: 'Error', Message: 'Could not retrieve API detail', Meta: null };

t.test('auth: a missing, wrong or Bearer-prefixed key is 401 with an ApiResponse', async (tt) => {
  const d = await start(tt);
  const attempts: Record<string, string>[] = [{}, { authorization: 'nope' }, { authorization: `Bearer ${d.secret}` }];
  for (const headers of attempts) {
    const res = await call(d, 'GET', '/api/apis', undefined, headers);
    tt.equal(res.status, 401);
    tt.same(res.body, NOT_AUTHORISED);
    tt.match(res.contentType, /^application\/json/);
  }
  const denied = await call(d, 'POST', '/api/portal/policies', policy('p'), { authorization: 'nope' });
  tt.equal(denied.status, 401);
  tt.equal(d.policies().size, 0, 'an unauthorised write is not made');
  const right = await call(d, 'GET', '/api/apis');
  tt.equal(right.status, 200);
  tt.same(right.body, { apis: null, pages: 0 }, 'an empty list: null apis, no pages');
  tt.same((await call(d, 'GET', '/api/portal/policies')).body, { Data: null, Pages: 0 });
});

t.test('unknown routes are 404 and unsupported methods 405, as ApiResponses', async (tt) => {
  const d = await start(tt);
  tt.same(await call(d, 'GET', '/api/nothing'), { status: 404, body: { Status: 'Error', Message: 'Not found', Meta: null }, contentType: 'application/json' });
  tt.equal((await call(d, 'GET', '/tyk/apis')).status, 404);
  tt.same((await call(d, 'PATCH', '/api/apis/x', {})).body, { Status: 'Error', Message: 'Method not allowed', Meta: null });
  tt.equal((await call(d, 'DELETE', '/api/apis')).status, 405);
  tt.equal((await call(d, 'PUT', '/api/portal/policies')).status, 405);
  tt.equal((await call(d, 'POST', '/api/portal/policies/66570989d98dd00001da17f1', {})).status, 405);
});

t.test('POST /api/apis stores the wrapped definition; GET answers the wrapper with the full model', async (tt) => {
  const d = await start(tt, { orgId: 'org-of-the-key' });
  const created = await call(d, 'POST', '/api/apis', wrap({ ...httpbin(), id: 'chosen-by-me' }));
  tt.equal(created.status, 200);
  tt.match(created.body, { Status: 'OK', Message: 'API created', ID: 'httpbin' });
  const internal = created.body.Meta as string;
  tt.match(internal, OBJECT_ID, 'Meta is the internal 24-hex id');

  const got = await call(d, 'GET', '/api/apis/httpbin');
  tt.equal(got.status, 200, 'visible at once: no reload');
  const def = got.body.api_definition;
  tt.equal(def.api_id, 'httpbin');
  tt.equal(def.id, internal, 'the internal id is the Dashboard’s, not the body’s');
  tt.equal(def.org_id, 'org-of-the-key', 'org_id is the key’s organisation');
  tt.equal(def.name, 'httpbin');
  tt.same(def.proxy.listen_path, '/httpbin/');
  tt.equal(def.proxy.preserve_host_header, false, 'nested defaults filled');
  tt.equal(def.enable_jwt, false, 'top-level defaults filled');
  tt.equal(def.allowed_ips, null);
  tt.equal(def.version_data.versions.Default.use_extended_paths, false, 'version entries filled');
  tt.equal(def.version_data.versions.Default.name, 'Default');
  tt.notOk('x_not_a_tyk_field' in def, 'unknown top-level fields are dropped');
  tt.ok(Object.keys(def).length >= 90, 'every field of the model is present');
  tt.match(got.body, { is_site: false, sort_by: 0, categories: [], api_model: {} });
  tt.equal(typeof got.body.created_at, 'string');

  const byInternal = await call(d, 'GET', `/api/apis/${internal}`);
  tt.same(byInternal.body, got.body, '{apiId} may be the internal id too');
  tt.same(d.apis().get('httpbin'), def, 'apis() holds what GET shows');

  const generated = await call(d, 'POST', '/api/apis', wrap({ name: 'anon', proxy: { listen_path: '/anon/' } }));
  tt.equal(generated.status, 200);
  tt.match(generated.body.ID, /^[0-9a-f]{32}$/, 'an empty api_id is generated: 32 hex');
  tt.equal((await call(d, 'GET', `/api/apis/${generated.body.ID}`)).body.api_definition.name, 'anon');
  tt.not(generated.body.Meta, internal);
});

t.test('POST /api/apis with an api_id in use is 409 and changes nothing', async (tt) => {
  const d = await start(tt);
  await createApi(d, httpbin());
  const dup = await call(d, 'POST', '/api/apis', wrap({ ...httpbin(), name: 'impostor' }));
  tt.equal(dup.status, 409);
  tt.same(dup.body, { Status: 'Error', Message: 'Found API with the same ID', Meta: null });
  tt.equal(d.apis().size, 1);
  tt.equal(d.apis().get('httpbin')?.name, 'httpbin');
});

t.test('bad API bodies are 400 and store nothing', async (tt) => {
  const d = await start(tt);
  const malformed = { Status: 'Error', Message: 'Malformed API data', Meta: null };
  tt.same(await call(d, 'POST', '/api/apis', '{"api_definition":'), { status: 400, body: malformed, contentType: 'application/json' });
  tt.same((await call(d, 'POST', '/api/apis', httpbin())).body, malformed, 'a bare definition (no wrapper) is refused');
  tt.same((await call(d, 'POST', '/api/apis', wrap({ ...httpbin(), use_keyless: 'yes' }))).body, malformed, 'wrong JSON type');
  tt.equal((await call(d, 'POST', '/api/apis', wrap({ ...httpbin(), proxy: { listen_path: 7 } }))).status, 400, 'nested wrong type');
  const badIp = await call(d, 'POST', '/api/apis', wrap({ ...httpbin(), enable_ip_whitelisting: true, allowed_ips: ['10.0.0.0/8', 'not-an-ip'] }));
  tt.equal(badIp.status, 400);
  tt.equal(badIp.body.Message, 'Validation of API Definition failed. Reason: invalid IP/CIDR "not-an-ip".');
  tt.equal((await call(d, 'POST', '/api/apis', wrap({ ...httpbin(), enable_ip_whitelisting: false, allowed_ips: ['nope'] }))).status, 200, 'a disabled list is not checked');
  tt.equal(d.apis().size, 1);
});

t.test('PUT /api/apis/{apiId}: update in place, 404 when missing, id rules', async (tt) => {
  const d = await start(tt);
  const internal = await createApi(d, httpbin());
  const before = await call(d, 'GET', '/api/apis/httpbin');

  const missing = await call(d, 'PUT', '/api/apis/nope', wrap(httpbin('nope')));
  tt.equal(missing.status, 404);
  tt.same(missing.body, { Status: 'Error', Message: 'API definition does not exist', Meta: null });
  tt.equal(d.apis().has('nope'), false, 'PUT does not create');

  const updated = await call(d, 'PUT', '/api/apis/httpbin', wrap({ ...httpbin(), name: 'renamed', use_keyless: false }));
  tt.same(updated, { status: 200, body: { Status: 'OK', Message: 'API updated', Meta: null }, contentType: 'application/json' });
  const after = await call(d, 'GET', '/api/apis/httpbin');
  tt.equal(after.body.api_definition.name, 'renamed');
  tt.equal(after.body.api_definition.use_keyless, false);
  tt.equal(after.body.api_definition.id, internal, 'the internal id stays');
  tt.equal(after.body.created_at, before.body.created_at, 'created_at stays');

  const noApiId = { ...httpbin(), api_id: '', name: 'kept id' };
  tt.equal((await call(d, 'PUT', `/api/apis/${internal}`, wrap(noApiId))).status, 200, 'by internal id, empty api_id');
  tt.equal(d.apis().get('httpbin')?.name, 'kept id', 'an empty api_id keeps the stored one');

  const wrongId = await call(d, 'PUT', '/api/apis/httpbin', wrap({ ...httpbin(), id: '000000000000000000000000' }));
  tt.equal(wrongId.status, 400);
  tt.equal(wrongId.body.Message, 'Invalid `ID` value');
  tt.equal((await call(d, 'PUT', '/api/apis/httpbin', wrap({ ...httpbin(), id: internal }))).status, 200, 'the right internal id is fine');

  await createApi(d, httpbin('other', 'other'));
  const clash = await call(d, 'PUT', '/api/apis/httpbin', wrap(httpbin('other')));
  tt.equal(clash.status, 400);
  tt.equal(clash.body.Message, 'Found API with the same ID');

  tt.equal((await call(d, 'PUT', '/api/apis/httpbin', wrap(httpbin('moved')))).status, 200, 'api_id can change (on-premise)');
  tt.same([...d.apis().keys()].sort(), ['moved', 'other']);
  tt.same((await call(d, 'GET', '/api/apis/httpbin')).body, NO_API, 'the old api_id is unknown now');
  tt.equal((await call(d, 'GET', '/api/apis/moved')).body.api_definition.id, internal);
  tt.equal((await call(d, 'PUT', '/api/apis/moved', '{')).status, 400, 'malformed');
});

t.test('options: ignoreApiIdOnCreate and immutableApiId', async (tt) => {
  const d = await start(tt, { ignoreApiIdOnCreate: true, immutableApiId: true });
  const created = await call(d, 'POST', '/api/apis', wrap(httpbin()));
  tt.equal(created.status, 200);
  const generated = created.body.ID as string;
  tt.not(generated, 'httpbin', 'the api_id is generated regardless');
  tt.same([...d.apis().keys()], [generated]);
  tt.equal((await call(d, 'PUT', `/api/apis/${created.body.Meta}`, wrap(httpbin()))).status, 200);
  tt.same([...d.apis().keys()], [generated], 'and cannot be changed afterwards');
});

t.test('DELETE /api/apis/{apiId}', async (tt) => {
  const d = await start(tt);
  const internal = await createApi(d, httpbin());
  await createApi(d, httpbin('two', 'two'));
  tt.same(await call(d, 'DELETE', '/api/apis/httpbin'), { status: 200, body: { Status: 'OK', Message: 'API deleted', Meta: null }, contentType: 'application/json' });
  const gone = await call(d, 'GET', '/api/apis/httpbin');
  tt.same(gone, { status: 400, body: NO_API, contentType: 'application/json' }, 'GET of an unknown id: the swagger’s 400');
  tt.equal((await call(d, 'GET', `/api/apis/${internal}`)).status, 400, 'gone by internal id too');
  tt.same(await call(d, 'DELETE', '/api/apis/httpbin'), { status: 404, body: NO_API, contentType: 'application/json' }, 'DELETE of an unknown id: 404');
  tt.same([...d.apis().keys()], ['two'], 'the other one stays');
  const twoInternal = (await call(d, 'GET', '/api/apis/two')).body.api_definition.id;
  tt.equal((await call(d, 'DELETE', `/api/apis/${twoInternal}`)).status, 200, 'delete by internal id');
  tt.equal(d.apis().size, 0);
  tt.equal((await call(d, 'POST', '/api/apis', wrap(httpbin()))).status, 200, 'a deleted api_id can be reused');
});

t.test('GET /api/apis pages: 1-based p, pages count, p<0 for all, sort and q', async (tt) => {
  const d = await start(tt, { pageSize: 3 });
  const names = ['a', 'b', 'c', 'd', 'e', 'f', 'g'];
  for (const n of names) {
    await createApi(d, httpbin(`id-${n}`, n));
    await new Promise((r) => setTimeout(r, 2));
  }
  const ids = (r: Res): string[] => (r.body.apis ?? []).map((w: any) => w.api_definition.api_id as string);

  const p1 = await call(d, 'GET', '/api/apis?p=1');
  tt.equal(p1.body.pages, 3);
  tt.same(ids(p1), ['id-g', 'id-f', 'id-e'], 'newest first by default');
  tt.ok(p1.body.apis[0].api_definition.enable_jwt === false, 'list items are full wrappers');
  tt.same(ids(await call(d, 'GET', '/api/apis?p=2')), ['id-d', 'id-c', 'id-b']);
  tt.same(ids(await call(d, 'GET', '/api/apis?p=3')), ['id-a']);
  const past = await call(d, 'GET', '/api/apis?p=4');
  tt.same(past.body, { apis: null, pages: 3 }, 'past the end: no items, same page count');
  tt.same(ids(await call(d, 'GET', '/api/apis')), ['id-g', 'id-f', 'id-e'], 'no p: the first page');
  tt.same(ids(await call(d, 'GET', '/api/apis?p=0')), ['id-g', 'id-f', 'id-e'], 'p=0: the first page');
  const all = await call(d, 'GET', '/api/apis?p=-1');
  tt.equal(all.body.pages, 1);
  tt.same(ids(all).length, 7, 'p<0: everything');

  tt.same(ids(await call(d, 'GET', '/api/apis?p=1&sort=created_at')), ['id-a', 'id-b', 'id-c'], 'oldest first');
  await call(d, 'PUT', '/api/apis/id-a', wrap({ ...httpbin('id-a', 'zz') }));
  tt.same(ids(await call(d, 'GET', '/api/apis?p=1&sort=-name')), ['id-a', 'id-g', 'id-f'], 'by name, descending');
  tt.same(ids(await call(d, 'GET', '/api/apis?p=1&sort=-updated_at')).slice(0, 1), ['id-a'], 'by updated_at');
  const q = await call(d, 'GET', '/api/apis?p=1&q=ZZ');
  tt.same(ids(q), ['id-a'], 'q: case-insensitive name match');
  tt.equal(q.body.pages, 1);
  tt.same((await call(d, 'GET', '/api/apis?q=nothing-like-it')).body, { apis: null, pages: 0 });
});

t.test('policies: create, get, update, delete, with _id as the path id', async (tt) => {
  const d = await start(tt, { orgId: 'org-of-the-key' });
  const created = await call(d, 'POST', '/api/portal/policies', { ...policy('our-id'), _id: '111111111111111111111111' });
  tt.equal(created.status, 200);
  tt.equal(created.body.Status, 'OK');
  tt.equal(created.body.Meta, null);
  const mid = created.body.Message as string;
  tt.match(mid, OBJECT_ID, 'the new _id is in Message');
  tt.not(mid, '111111111111111111111111', 'the Dashboard assigns _id');

  const got = await call(d, 'GET', `/api/portal/policies/${mid}`);
  tt.equal(got.status, 200);
  tt.match(got.body, { _id: mid, id: 'our-id', name: 'policy our-id', org_id: 'org-of-the-key', rate: 10, per: 60, active: true });
  tt.equal(got.body.quota_max, 0, 'defaults filled');
  tt.same(got.body.partitions, { acl: false, complexity: false, per_api: false, quota: false, rate_limit: false });
  tt.equal(got.body.access_rights.httpbin.allowance_scope, '', 'access_rights entries filled');
  tt.same(got.body.access_rights.httpbin.versions, ['Default']);
  tt.notOk('x_unknown' in got.body, 'unknown top-level fields dropped');
  tt.ok(Date.parse(got.body.date_created) > 0, 'date_created set');
  tt.match(got.body.last_updated, /^\d{10}$/, 'last_updated: unix seconds');
  tt.same(d.policies().get(mid), got.body);

  const bad = await call(d, 'GET', '/api/portal/policies/our-id');
  tt.same(bad.body, { Status: 'Error', Message: 'Invalid policy ID.', Meta: null }, 'our id is not a path id');
  tt.equal(bad.status, 400);
  const missing = await call(d, 'GET', '/api/portal/policies/66570989d98dd00001da17f1');
  tt.same(missing, { status: 404, body: { Status: 'Error', Message: 'Could not retrieve portal object.', Meta: null }, contentType: 'application/json' });

  const upd = await call(d, 'PUT', `/api/portal/policies/${mid}`, { ...policy('our-id'), _id: mid, rate: 99 });
  tt.same(upd.body, { Status: 'OK', Message: 'Data updated', Meta: null });
  const after = await call(d, 'GET', `/api/portal/policies/${mid}`);
  tt.equal(after.body.rate, 99);
  tt.equal(after.body.date_created, got.body.date_created, 'date_created stays');
  tt.equal((await call(d, 'PUT', `/api/portal/policies/${mid}`, { ...policy('our-id'), rate: 5 })).status, 200, 'without _id');
  tt.equal(d.policies().get(mid)?.rate, 5);
  const wrongMid = await call(d, 'PUT', `/api/portal/policies/${mid}`, { ...policy('our-id'), _id: '66570989d98dd00001da17f1' });
  tt.same(wrongMid.body, { Status: 'Error', Message: 'Invalid policy ID.', Meta: null });
  tt.equal((await call(d, 'PUT', '/api/portal/policies/66570989d98dd00001da17f1', policy('x'))).status, 404, 'PUT does not create');

  const del = await call(d, 'DELETE', `/api/portal/policies/${mid}`);
  tt.same(del.body, { Status: 'OK', Message: 'Data deleted', Meta: null });
  tt.equal((await call(d, 'GET', `/api/portal/policies/${mid}`)).status, 404);
  const again = await call(d, 'DELETE', `/api/portal/policies/${mid}`);
  tt.same(again, { status: 404, body: { Status: 'Error', Message: 'Could not retrieve object for deletion', Meta: null }, contentType: 'application/json' });
  tt.equal((await call(d, 'DELETE', '/api/portal/policies/not-hex')).status, 400);
});

t.test('policies: unique names (400), malformed bodies (403), ids as plain fields', async (tt) => {
  const d = await start(tt);
  const first = await createPolicy(d, policy('a', 'shared name'));
  const dup = await call(d, 'POST', '/api/portal/policies', policy('b', 'shared name'));
  tt.equal(dup.status, 400);
  tt.same(dup.body, { Status: 'Error', Message: 'This policy name has already been used. Enter a unique policy name.', Meta: null });
  const second = await createPolicy(d, policy('b'));
  tt.equal((await call(d, 'PUT', `/api/portal/policies/${second}`, policy('b', 'shared name'))).status, 400, 'on PUT too');
  tt.equal((await call(d, 'PUT', `/api/portal/policies/${first}`, policy('a', 'shared name'))).status, 200, 'its own name is fine');

  const malformed = { Status: 'Error', Message: 'Request body malformed.', Meta: null };
  tt.same(await call(d, 'POST', '/api/portal/policies', '{nope'), { status: 403, body: malformed, contentType: 'application/json' });
  tt.same((await call(d, 'POST', '/api/portal/policies', { ...policy('c'), rate: 'fast' })).body, malformed, 'wrong type');
  tt.equal((await call(d, 'PUT', `/api/portal/policies/${first}`, '[]')).status, 403);

  const twin = await createPolicy(d, policy('a', 'another name'));
  tt.not(twin, first, 'a second policy with the same id field is stored (nothing refuses it)');
  const noId = await createPolicy(d, { name: 'no id' });
  tt.equal(d.policies().get(noId)?.id, '', 'no id field: empty');
  tt.equal(d.policies().size, 4);
});

t.test('GET /api/portal/policies pages with Data and Pages; active filter', async (tt) => {
  const d = await start(tt, { pageSize: 2 });
  const mids: string[] = [];
  for (const n of ['p1', 'p2', 'p3', 'p4', 'p5']) mids.push(await createPolicy(d, { ...policy(n), active: n !== 'p2' }));
  const idsOf = (r: Res): string[] => (r.body.Data ?? []).map((p: any) => p.id as string);
  const page1 = await call(d, 'GET', '/api/portal/policies?p=1');
  tt.equal(page1.body.Pages, 3);
  tt.same(idsOf(page1), ['p1', 'p2'], 'creation order');
  tt.equal(page1.body.Data[0]._id, mids[0]);
  tt.same(idsOf(await call(d, 'GET', '/api/portal/policies?p=3')), ['p5']);
  tt.same((await call(d, 'GET', '/api/portal/policies?p=9')).body, { Data: null, Pages: 3 });
  tt.same(idsOf(await call(d, 'GET', '/api/portal/policies?p=-1')), ['p1', 'p2', 'p3', 'p4', 'p5']);
  const active = await call(d, 'GET', '/api/portal/policies?p=-1&active=true');
  tt.same(idsOf(active), ['p1', 'p3', 'p4', 'p5']);
});

t.test('the test side: copies, edits, removals, wipe', async (tt) => {
  const d = await start(tt);
  await createApi(d, httpbin());
  const mid = await createPolicy(d, policy('pol'));

  const copy = d.apis();
  (copy.get('httpbin') as JsonObject).name = 'changed in the copy';
  tt.equal(d.apis().get('httpbin')?.name, 'httpbin', 'apis() is a copy');
  const pcopy = d.policies();
  (pcopy.get(mid) as JsonObject).rate = 1234;
  tt.equal(d.policies().get(mid)?.rate, 10, 'policies() is a copy');

  d.editApi('httpbin', (a) => {
    a.name = 'edited behind the back';
  });
  tt.equal((await call(d, 'GET', '/api/apis/httpbin')).body.api_definition.name, 'edited behind the back');
  d.editApi('httpbin', (a) => ({ ...a, api_id: 'renamed-behind' }));
  tt.equal((await call(d, 'GET', '/api/apis/renamed-behind')).status, 200, 'a replacement with a new api_id is indexed');
  tt.equal((await call(d, 'GET', '/api/apis/httpbin')).status, 400);
  d.editPolicy(mid, (p) => {
    p.rate = 1;
  });
  tt.equal((await call(d, 'GET', `/api/portal/policies/${mid}`)).body.rate, 1);
  tt.throws(() => d.editApi('nope', () => undefined), /no API nope/);
  tt.throws(() => d.editPolicy('nope', () => undefined), /no policy nope/);

  tt.equal(d.removeApi('renamed-behind'), true);
  tt.equal(d.removeApi('renamed-behind'), false);
  tt.equal((await call(d, 'GET', '/api/apis/renamed-behind')).status, 400);
  tt.equal(d.removePolicy(mid), true);
  tt.equal((await call(d, 'GET', `/api/portal/policies/${mid}`)).status, 404);

  await createApi(d, httpbin());
  await createPolicy(d, policy('pol'));
  d.wipe();
  tt.equal(d.apis().size, 0);
  tt.equal(d.policies().size, 0);
  tt.same((await call(d, 'GET', '/api/apis')).body, { apis: null, pages: 0 });
  tt.equal((await call(d, 'POST', '/api/apis', wrap(httpbin()))).status, 200, 'the old api_id is free after a wipe');
});

t.test('call counting and writes()', async (tt) => {
  const d = await start(tt);
  const internal = await createApi(d, httpbin());
  await call(d, 'GET', '/api/apis?p=2');
  await call(d, 'PUT', '/api/apis/httpbin', wrap(httpbin()));
  const mid = await createPolicy(d, policy('p'));
  await call(d, 'GET', `/api/portal/policies/${mid}`);
  await call(d, 'DELETE', `/api/portal/policies/${mid}`);
  await call(d, 'DELETE', '/api/apis/missing');
  await call(d, 'GET', '/api/apis', undefined, {});

  tt.same(d.calls[0]?.body, wrap(httpbin()), 'the parsed request body is recorded');
  tt.same(d.calls[1], { method: 'GET', path: '/api/apis', query: { p: '2' }, status: 200 });
  tt.equal(d.calls[6]?.status, 404);
  tt.equal(d.calls[7]?.status, 401);
  tt.equal(d.calls.length, 8);
  tt.equal(d.count('GET'), 3);
  tt.equal(d.count('get', /^\/api\/apis/), 2);
  tt.equal(d.count('*', /^\/api\/portal\/policies/), 3);
  tt.equal(d.count('PUT', '/api/apis/httpbin'), 1);
  tt.equal(d.count(undefined, `/api/apis/${internal}`), 0);
  tt.equal(d.writes(), 5, 'two POSTs, a PUT, two DELETEs; GETs are not writes');
  d.resetCalls();
  tt.equal(d.calls.length, 0);
  tt.equal(d.writes(), 0);
});

t.test('unknownApi: GET of an id the Dashboard does not have is 400 (documented) or 404, same message; PUT and DELETE 404', async (tt) => {
  for (const [option, status] of [
    [undefined, 400],
    ['400', 400],
    ['404', 404],
  ] as const) {
    const d = await start(tt, option === undefined ? {} : { unknownApi: option });
    const what = `unknownApi ${option ?? '(default)'}`;
    const internal = await createApi(d, httpbin());
    tt.same(await call(d, 'GET', '/api/apis/nope'), { status, body: NO_API, contentType: 'application/json' }, `${what}: GET by api_id`);
    tt.same((await call(d, 'GET', '/api/apis/000000000000000000000000')).status, status, `${what}: GET by an internal id`);
    tt.same(await call(d, 'DELETE', '/api/apis/nope'), { status: 404, body: NO_API, contentType: 'application/json' }, `${what}: DELETE`);
    const put = await call(d, 'PUT', '/api/apis/nope', wrap(httpbin('nope')));
    tt.same(put, { status: 404, body: { Status: 'Error', Message: 'API definition does not exist', Meta: null }, contentType: 'application/json' }, `${what}: PUT`);
    tt.equal((await call(d, 'GET', `/api/apis/${internal}`)).status, 200, `${what}: a known API is found`);
    tt.equal((await call(d, 'GET', '/api/apis/nope', undefined, {})).status, 401, `${what}: auth comes first`);
  }
});

t.test('policyPathId: _id only (400 for anything else), or _id else the policy’s own id', async (tt) => {
  const strict = await start(tt);
  const mid = await createPolicy(strict, policy('our-id'));
  tt.same((await call(strict, 'GET', '/api/portal/policies/our-id')).body, { Status: 'Error', Message: 'Invalid policy ID.', Meta: null });
  tt.equal((await call(strict, 'PUT', '/api/portal/policies/our-id', policy('our-id'))).status, 400);
  tt.equal((await call(strict, 'DELETE', '/api/portal/policies/our-id')).status, 400);
  tt.equal(strict.policies().size, 1, 'nothing deleted by our id');
  tt.equal((await call(strict, 'GET', `/api/portal/policies/${mid}`)).status, 200);

  const d = await start(tt, { policyPathId: '_id-or-id' });
  const first = await createPolicy(d, policy('our-id', 'first'));
  const second = await createPolicy(d, policy('our-id', 'second'));
  const byId = await call(d, 'GET', '/api/portal/policies/our-id');
  tt.equal(byId.status, 200, 'found by its id field');
  tt.match(byId.body, { _id: first, id: 'our-id', name: 'first' }, 'the oldest with that id');
  tt.match((await call(d, 'GET', `/api/portal/policies/${second}`)).body, { _id: second, name: 'second' }, 'and by _id');
  const missing = await call(d, 'GET', '/api/portal/policies/not-hex-and-nobody');
  tt.same(missing, { status: 404, body: { Status: 'Error', Message: 'Could not retrieve portal object.', Meta: null }, contentType: 'application/json' }, 'no id is invalid: unknown is 404');
  tt.equal((await call(d, 'GET', '/api/portal/policies/66570989d98dd00001da17f1')).status, 404);

  const put = await call(d, 'PUT', '/api/portal/policies/our-id', { ...policy('our-id', 'first'), rate: 7 });
  tt.same(put.body, { Status: 'OK', Message: 'Data updated', Meta: null });
  tt.equal(d.policies().get(first)?.rate, 7, 'PUT by id updates the policy it names');
  tt.equal(d.policies().get(first)?._id, first, 'which keeps its _id');
  const wrongMid = await call(d, 'PUT', '/api/portal/policies/our-id', { ...policy('our-id', 'first'), _id: second });
  tt.same(wrongMid, { status: 400, body: { Status: 'Error', Message: 'Invalid policy ID.', Meta: null }, contentType: 'application/json' }, 'a body _id of another policy');
  tt.equal((await call(d, 'PUT', '/api/portal/policies/nobody', policy('nobody'))).status, 404, 'PUT does not create');

  tt.same((await call(d, 'DELETE', '/api/portal/policies/our-id')).body, { Status: 'OK', Message: 'Data deleted', Meta: null });
  tt.same([...d.policies().keys()], [second], 'the oldest went');
  tt.same(await call(d, 'DELETE', '/api/portal/policies/nobody'), {
    status: 404,
    body: { Status: 'Error', Message: 'Could not retrieve object for deletion', Meta: null },
    contentType: 'application/json',
  });
  const noId = await createPolicy(d, { name: 'no id field' });
  tt.equal((await call(d, 'GET', `/api/portal/policies/${noId}`)).status, 200);
});

t.test('emptyList: a page without items is null (default) or []', async (tt) => {
  const nulls = await start(tt);
  tt.same((await call(nulls, 'GET', '/api/apis?p=1')).body, { apis: null, pages: 0 });
  tt.same((await call(nulls, 'GET', '/api/portal/policies?p=1')).body, { Data: null, Pages: 0 });
  const arrays = await start(tt, { emptyList: '[]' });
  tt.same((await call(arrays, 'GET', '/api/apis?p=1')).body, { apis: [], pages: 0 });
  tt.same((await call(arrays, 'GET', '/api/portal/policies')).body, { Data: [], Pages: 0 });
  await createApi(arrays, httpbin());
  await createPolicy(arrays, policy('p'));
  tt.same((await call(arrays, 'GET', '/api/apis?p=2')).body, { apis: [], pages: 1 }, 'past the end too');
  tt.same((await call(arrays, 'GET', '/api/portal/policies?p=2')).body, { Data: [], Pages: 1 });
  tt.equal((await call(arrays, 'GET', '/api/apis?p=1')).body.apis.length, 1);
});

t.test('DASHBOARD_VARIANTS: the first is the defaults; every value of every option appears', async (tt) => {
  tt.same(DASHBOARD_VARIANTS[0]?.options, {});
  const seen = new Map<string, Set<string>>();
  for (const v of DASHBOARD_VARIANTS) {
    for (const [k, val] of Object.entries(v.options)) seen.set(k, new Set([...(seen.get(k) ?? []), String(val)]));
  }
  tt.same([...(seen.get('unknownApi') ?? [])], ['404'], 'the default 400 in the first');
  tt.same([...(seen.get('policyPathId') ?? [])], ['_id-or-id']);
  tt.same([...(seen.get('emptyList') ?? [])], ['[]']);
  tt.same([...(seen.get('certUploadField') ?? [])], ['cert'], 'the swagger’s file field in the first');
  tt.same([...(seen.get('unknownCertDelete') ?? [])], ['200'], 'the documented 404 in the first');
  tt.same([...(seen.get('catalogueAnswer') ?? [])], ['list'], 'the catalogue as one object in the first');
  tt.equal(new Set(DASHBOARD_VARIANTS.map((v) => v.name)).size, DASHBOARD_VARIANTS.length, 'names are unique');
  for (const v of DASHBOARD_VARIANTS) {
    const d = await start(tt, v.options);
    tt.equal((await call(d, 'GET', '/api/apis')).status, 200, `${v.name}: starts and answers`);
  }
});

t.test('every route the client uses: documented statuses and body shapes', async (tt) => {
  const d = await start(tt);
  const ok = (message: string, meta: unknown = null) => ({ Status: 'OK', Message: message, Meta: meta });
  const err = (message: string) => ({ Status: 'Error', Message: message, Meta: null });
  const apiWrapperKeys = ['api_definition', 'api_model', 'categories', 'created_at', 'hook_references', 'is_site', 'sort_by', 'updated_at', 'user_group_owners', 'user_owners'];

  // /api/apis
  const list = await call(d, 'GET', '/api/apis?p=1&sort=created_at');
  tt.same(Object.keys(list.body).sort(), ['apis', 'pages'], 'GET /api/apis: ApiDefinitionsResponse');
  const created = await call(d, 'POST', '/api/apis', wrap(httpbin()));
  tt.same(Object.keys(created.body).sort(), ['ID', 'Message', 'Meta', 'Status'], 'POST /api/apis 200: ApiResponse with ID');
  tt.match(created.body, { Status: 'OK', Message: 'API created', ID: 'httpbin', Meta: OBJECT_ID });
  tt.same((await call(d, 'POST', '/api/apis', wrap(httpbin()))).body, err('Found API with the same ID'), 'POST 409');
  tt.equal((await call(d, 'POST', '/api/apis', '{')).status, 400, 'POST 400');
  tt.same((await call(d, 'GET', '/api/apis', undefined, {})).body, NOT_AUTHORISED, '401');
  const listed = await call(d, 'GET', '/api/apis?p=1');
  tt.same(Object.keys(listed.body.apis[0]).sort(), apiWrapperKeys, 'list items are ApiDefinitionWrappers');

  // /api/apis/{apiId}
  const one = await call(d, 'GET', '/api/apis/httpbin');
  tt.same(Object.keys(one.body).sort(), apiWrapperKeys, 'GET one: ApiDefinitionWrapper');
  tt.same(await call(d, 'GET', '/api/apis/none'), { status: 400, body: NO_API, contentType: 'application/json' }, 'GET unknown: 400');
  tt.same((await call(d, 'PUT', '/api/apis/httpbin', wrap(httpbin()))).body, ok('API updated'), 'PUT 200');
  tt.same((await call(d, 'PUT', '/api/apis/httpbin', wrap({ ...httpbin(), id: '000000000000000000000000' }))).body, err('Invalid `ID` value'), 'PUT 400');
  tt.same((await call(d, 'PUT', '/api/apis/none', wrap(httpbin('none')))).body, err('API definition does not exist'), 'PUT 404');
  tt.same((await call(d, 'DELETE', '/api/apis/httpbin')).body, ok('API deleted'), 'DELETE 200');
  tt.same((await call(d, 'DELETE', '/api/apis/httpbin')).body, NO_API, 'DELETE 404');

  // /api/portal/policies
  tt.same(Object.keys((await call(d, 'GET', '/api/portal/policies?p=1')).body).sort(), ['Data', 'Pages'], 'GET policies: ReturnDataStruct');
  const pol = await call(d, 'POST', '/api/portal/policies', policy('p'));
  tt.same(Object.keys(pol.body).sort(), ['Message', 'Meta', 'Status'], 'POST policy 200: ApiResponse');
  tt.match(pol.body, { Status: 'OK', Message: OBJECT_ID, Meta: null }, 'the new _id in Message');
  const mid = pol.body.Message as string;
  tt.same((await call(d, 'POST', '/api/portal/policies', policy('q', 'policy p'))).body, err('This policy name has already been used. Enter a unique policy name.'), 'POST 400');
  tt.same((await call(d, 'POST', '/api/portal/policies', '[')).body, err('Request body malformed.'), 'POST 403');

  // /api/portal/policies/{id}
  const got = await call(d, 'GET', `/api/portal/policies/${mid}`);
  tt.match(got.body, { _id: mid, id: 'p', name: 'policy p' }, 'GET one: Policy, with _id and id');
  tt.same((await call(d, 'GET', '/api/portal/policies/x')).body, err('Invalid policy ID.'), 'GET 400');
  tt.same((await call(d, 'GET', '/api/portal/policies/66570989d98dd00001da17f1')).body, err('Could not retrieve portal object.'), 'GET 404');
  tt.same((await call(d, 'PUT', `/api/portal/policies/${mid}`, policy('p'))).body, ok('Data updated'), 'PUT 200');
  tt.same((await call(d, 'PUT', `/api/portal/policies/${mid}`, { ...policy('p'), _id: '66570989d98dd00001da17f1' })).body, err('Invalid policy ID.'), 'PUT 400');
  tt.same((await call(d, 'PUT', `/api/portal/policies/${mid}`, '{')).body, err('Request body malformed.'), 'PUT 403');
  tt.same((await call(d, 'PUT', '/api/portal/policies/66570989d98dd00001da17f1', policy('z'))).body, err('Could not retrieve portal object.'), 'PUT 404');
  tt.same((await call(d, 'DELETE', '/api/portal/policies/x')).body, err('Invalid policy ID.'), 'DELETE 400');
  tt.same((await call(d, 'DELETE', `/api/portal/policies/${mid}`)).body, ok('Data deleted'), 'DELETE 200');
  tt.same((await call(d, 'DELETE', `/api/portal/policies/${mid}`)).body, err('Could not retrieve object for deletion'), 'DELETE 404');
});

t.test('documented query parameters the fake does not model are refused (501), never ignored; versions: the documented 400', async (tt) => {
  const d = await start(tt);
  const noVersionName = await call(d, 'POST', '/api/apis?base_api_id=663a4ed9b6be920001b191ae', wrap(httpbin()));
  tt.same(noVersionName, { status: 400, body: { Status: 'Error', Message: 'version name header should be set with base API ID', Meta: null }, contentType: 'application/json' });
  const version = await call(d, 'POST', '/api/apis?base_api_id=663a4ed9b6be920001b191ae&new_version_name=v2', wrap(httpbin()));
  tt.equal(version.status, 501);
  tt.match(version.body, { Status: 'Error', Message: /not modelled by the fake: API versions/ });
  tt.equal((await call(d, 'POST', '/api/apis?set_default=true', wrap(httpbin()))).status, 501);
  tt.equal(d.apis().size, 0, 'nothing created');
  const filtered = await call(d, 'GET', '/api/apis?p=1&api_type=rest&category=x');
  tt.same(filtered.body, { Status: 'Error', Message: 'not modelled by the fake: api_type, category', Meta: null });
  tt.equal(filtered.status, 501);
  tt.equal((await call(d, 'GET', '/api/apis?p=1&sort=name&q=x')).status, 200, 'the modelled ones are applied');
});
