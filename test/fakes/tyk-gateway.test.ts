import t from 'tap';
import { type FakeTykGateway, type FakeTykOptions, type JsonObject, startFakeTykGateway } from './tyk-gateway.js';

interface Res {
  status: number;
  body: any;
  contentType: string | null;
}

interface Test {
  teardown(fn: () => unknown): void;
}

async function start(tt: Test, options: FakeTykOptions = {}): Promise<FakeTykGateway> {
  const gw = await startFakeTykGateway({ secret: 's3cret', ...options });
  tt.teardown(() => gw.close());
  return gw;
}

async function call(gw: FakeTykGateway, method: string, path: string, body?: unknown, headers: Record<string, string> = { 'x-tyk-authorization': gw.secret }): Promise<Res> {
  const init: RequestInit = { method, headers: { ...headers } };
  if (body !== undefined) init.body = typeof body === 'string' ? body : JSON.stringify(body);
  const res = await fetch(gw.url + path, init);
  const text = await res.text();
  return { status: res.status, body: text === '' ? undefined : JSON.parse(text), contentType: res.headers.get('content-type') };
}

function httpbin(apiId = 'httpbin', listenPath = '/httpbin/'): JsonObject {
  return {
    api_id: apiId,
    name: 'httpbin',
    org_id: 'org1',
    use_keyless: true,
    active: true,
    proxy: { listen_path: listenPath, target_url: 'http://httpbin.org', strip_listen_path: true },
    version_data: { not_versioned: true, default_version: 'Default', versions: { Default: { name: 'Default' } } },
    x_not_a_tyk_field: 'dropped',
  };
}

async function createLoaded(gw: FakeTykGateway, def: JsonObject, path = '/tyk/apis'): Promise<void> {
  const res = await call(gw, 'POST', path, def);
  if (res.status !== 200) throw new Error(`create failed: ${res.status}`);
  gw.reloadNow();
}

const OK_RELOAD = { status: 'ok', message: '' };

t.test('auth: a missing or wrong secret is 403 with the real message', async (tt) => {
  const gw = await start(tt);
  const forbidden = { status: 'error', message: 'Attempted administrative access with invalid or missing key!' };
  const none = await call(gw, 'GET', '/tyk/apis', undefined, {});
  tt.equal(none.status, 403);
  tt.same(none.body, forbidden);
  tt.match(none.contentType, /^application\/json/);
  const wrong = await call(gw, 'GET', '/tyk/reload/group', undefined, { 'x-tyk-authorization': 'nope' });
  tt.equal(wrong.status, 403);
  tt.equal(gw.reloads.requested, 0, 'a forbidden reload is not a reload');
  const right = await call(gw, 'GET', '/tyk/apis');
  tt.equal(right.status, 200);
  tt.same(right.body, []);
});

t.test('unsupported methods are 405', async (tt) => {
  const gw = await start(tt);
  const res = await call(gw, 'PATCH', '/tyk/apis/x', {});
  tt.equal(res.status, 405);
  tt.same(res.body, { status: 'error', message: 'Method not supported' });
  tt.equal((await call(gw, 'POST', '/tyk/reload/group')).status, 405);
});

t.test('POST is invisible until a reload, then GET echoes the full model', async (tt) => {
  const gw = await start(tt, { reloadDelayMs: 150 });
  const created = await call(gw, 'POST', '/tyk/apis', { ...httpbin(), enable_jwt: null, auth: null, slug: null });
  tt.equal(created.status, 200);
  tt.same(created.body, { key: 'httpbin', status: 'ok', action: 'added' });
  tt.same((await call(gw, 'GET', '/tyk/apis/httpbin')).body, { status: 'error', message: 'API not found.' }, 'GET’s message, as the swagger gives it');
  tt.equal((await call(gw, 'GET', '/tyk/apis/httpbin')).status, 404);
  tt.same((await call(gw, 'GET', '/tyk/apis')).body, []);
  tt.ok(gw.files('api').has('httpbin'), 'the file is written');
  tt.equal(gw.loaded('api').size, 0, 'nothing loaded yet');

  tt.same((await call(gw, 'GET', '/tyk/reload/group')).body, OK_RELOAD);
  tt.equal((await call(gw, 'GET', '/tyk/apis/httpbin')).status, 404, 'the reload takes effect later');
  tt.same(gw.reloads, { requested: 1, applied: 0, dropped: 0 });
  await gw.waitForReloads();
  tt.same(gw.reloads, { requested: 1, applied: 1, dropped: 0 });

  const got = await call(gw, 'GET', '/tyk/apis/httpbin');
  tt.equal(got.status, 200);
  const api = got.body;
  tt.equal(api.name, 'httpbin');
  tt.equal(api.use_keyless, true);
  tt.same(api.proxy.listen_path, '/httpbin/');
  tt.equal(api.proxy.target_url, 'http://httpbin.org');
  tt.equal(api.proxy.strip_listen_path, true);
  tt.equal(api.proxy.preserve_host_header, false, 'nested default filled');
  tt.equal(api.proxy.service_discovery.use_discovery_service, false, 'deep default filled');
  tt.equal(api.proxy.target_list, null);
  tt.equal(api.use_oauth2, false);
  tt.equal(api.enable_jwt, false);
  tt.equal(api.auth.auth_header_name, '', 'null for a struct keeps its zero value');
  tt.equal(api.enable_jwt, false, 'null for a bool is false');
  tt.equal(api.slug, '', 'null for a string is empty');
  tt.equal(api.CORS.enable, false);
  tt.equal(api.tags, null);
  tt.equal(api.listen_port, 0);
  tt.equal(api.version_data.versions.Default.name, 'Default');
  tt.equal(api.version_data.versions.Default.use_extended_paths, false, 'map entries filled too');
  tt.same(api.version_data.versions.Default.paths, { ignored: null, white_list: null, black_list: null });
  tt.notOk('x_not_a_tyk_field' in api, 'fields unknown to the model are dropped');
  tt.ok(Object.keys(api).length > 80, 'every field of the model is echoed');
  tt.match(api.id, /^[0-9a-f]{24}$/);
  tt.equal(gw.files('api').get('httpbin')?.x_not_a_tyk_field, 'dropped', 'the file keeps what was sent');

  const list = await call(gw, 'GET', '/tyk/apis');
  tt.equal(list.body.length, 1);
  tt.same(list.body[0], api);

  await call(gw, 'GET', '/tyk/reload/group');
  await gw.waitForReloads();
  tt.equal((await call(gw, 'GET', '/tyk/apis/httpbin')).body.id, api.id, 'id stable across reloads');
});

t.test('POST without api_id generates one; POST is an upsert', async (tt) => {
  const gw = await start(tt);
  const generated = await call(gw, 'POST', '/tyk/apis', { ...httpbin(), api_id: '' });
  tt.equal(generated.status, 200);
  tt.match(generated.body.key, /^[0-9a-f]{32}$/);
  tt.equal(gw.files('api').get(generated.body.key)?.api_id, generated.body.key, 'file carries the generated id');

  await createLoaded(gw, httpbin());
  const again = await call(gw, 'POST', '/tyk/apis', { ...httpbin(), name: 'renamed' });
  tt.same(again.body, { key: 'httpbin', status: 'ok', action: 'added' });
  tt.equal(gw.files('api').get('httpbin')?.name, 'renamed', 'file overwritten');
  tt.equal((await call(gw, 'GET', '/tyk/apis/httpbin')).body.name, 'httpbin', 'loaded copy unchanged');
  await call(gw, 'GET', '/tyk/reload/group');
  await gw.waitForReloads();
  tt.equal((await call(gw, 'GET', '/tyk/apis/httpbin')).body.name, 'renamed');
  tt.equal(gw.loaded('api').size, 2);
});

t.test('bad bodies: malformed JSON, wrong types, failed validation', async (tt) => {
  const gw = await start(tt);
  const malformed = { status: 'error', message: 'Request malformed' };
  for (const body of ['{', '[1]', '"x"', JSON.stringify({ name: 5 }), JSON.stringify({ proxy: { strip_listen_path: 'yes' } })]) {
    const res = await call(gw, 'POST', '/tyk/apis', body);
    tt.equal(res.status, 400, body);
    tt.same(res.body, malformed, body);
  }
  const versions = await call(gw, 'POST', '/tyk/apis', { version_data: { versions: { Default: { name: 7 } } } });
  tt.same(versions.body, malformed, 'map entries are type-checked');

  const ip = await call(gw, 'POST', '/tyk/apis', { ...httpbin(), enable_ip_whitelisting: true, allowed_ips: ['10.0.0.0/8', 'nope'] });
  tt.equal(ip.status, 400);
  tt.same(ip.body, { status: 'error', message: 'Validation of API Definition failed. Reason: invalid IP/CIDR "nope".' });
  const lb = await call(gw, 'POST', '/tyk/apis', { ...httpbin(), proxy: { listen_path: '/x/', enable_load_balancing: true } });
  tt.match(lb.body.message, /^Validation of API Definition failed\. Reason: all load balancing targets have weight 0/);
  const auth = await call(gw, 'POST', '/tyk/apis', {
    ...httpbin(),
    use_standard_auth: true,
    auth_configs: { authToken: { disable_header: true } },
  });
  tt.match(auth.body.message, /all auth sources are disabled for authToken/);
  const timeout = await call(gw, 'POST', '/tyk/apis', {
    version_data: { versions: { Default: { extended_paths: { hard_timeouts: [{ path: '/', timeout: -1 }] } } } },
  });
  tt.match(timeout.body.message, /Reason: invalid timeout value\.$/);
  const dup = await call(gw, 'POST', '/tyk/apis', {
    graphql: { engine: { data_sources: [{ name: 'A' }, { name: ' a ' }] } },
  });
  tt.match(dup.body.message, /duplicate data source names are not allowed/);
  const fine = await call(gw, 'POST', '/tyk/apis', { ...httpbin(), enable_ip_whitelisting: true, allowed_ips: ['10.0.0.1', '::1/128'] });
  tt.equal(fine.status, 200, 'valid IPs and CIDRs pass');
  tt.same([...gw.files('api').keys()], ['httpbin'], 'rejected bodies write nothing');
});

t.test('PUT needs a loaded API and a matching api_id', async (tt) => {
  const gw = await start(tt);
  await call(gw, 'POST', '/tyk/apis', httpbin());
  const notLoaded = await call(gw, 'PUT', '/tyk/apis/httpbin', httpbin());
  tt.equal(notLoaded.status, 404, 'a file alone is not enough');
  tt.same(notLoaded.body, { status: 'error', message: 'API not found' });

  gw.reloadNow();
  const mismatch = await call(gw, 'PUT', '/tyk/apis/httpbin', httpbin('other'));
  tt.equal(mismatch.status, 400);
  tt.same(mismatch.body, {
    status: 'error',
    message: 'Request APIID does not match that in Definition! For Update operations these must match.',
  });
  const noId = await call(gw, 'PUT', '/tyk/apis/httpbin', { ...httpbin(), api_id: undefined });
  tt.equal(noId.status, 400, 'body without api_id does not match either');

  const ok = await call(gw, 'PUT', '/tyk/apis/httpbin', { ...httpbin(), name: 'v2' });
  tt.same(ok.body, { key: 'httpbin', status: 'ok', action: 'modified' });
  tt.equal(gw.files('api').get('httpbin')?.name, 'v2');
  tt.equal(gw.loaded('api').get('httpbin')?.name, 'httpbin', 'loaded until reload');
  gw.reloadNow();
  tt.equal((await call(gw, 'GET', '/tyk/apis/httpbin')).body.name, 'v2');
});

t.test('DELETE lifecycle (newer gateways)', async (tt) => {
  const gw = await start(tt);
  await createLoaded(gw, httpbin());
  const del = await call(gw, 'DELETE', '/tyk/apis/httpbin');
  tt.equal(del.status, 200);
  tt.same(del.body, { key: 'httpbin', status: 'ok', action: 'deleted' });
  tt.equal(gw.files('api').has('httpbin'), false, 'file removed');
  tt.equal((await call(gw, 'GET', '/tyk/apis/httpbin')).status, 200, 'still loaded until reload');

  const again = await call(gw, 'DELETE', '/tyk/apis/httpbin');
  tt.equal(again.status, 500);
  tt.same(again.body, { status: 'error', message: 'Delete failed' });

  await call(gw, 'GET', '/tyk/reload/group');
  await gw.waitForReloads();
  tt.equal((await call(gw, 'GET', '/tyk/apis/httpbin')).status, 404);
  const gone = await call(gw, 'DELETE', '/tyk/apis/httpbin');
  tt.equal(gone.status, 404);
  tt.same(gone.body, { status: 'error', message: 'API not found' });

  await call(gw, 'POST', '/tyk/apis', httpbin('fresh'));
  tt.equal((await call(gw, 'DELETE', '/tyk/apis/fresh')).status, 404, 'written but not loaded is not found');
  tt.ok(gw.files('api').has('fresh'), 'and its file stays');
});

t.test('DELETE on older gateways (legacyDelete) only looks at the file', async (tt) => {
  const gw = await start(tt, { legacyDelete: true });
  const missing = await call(gw, 'DELETE', '/tyk/apis/never');
  tt.equal(missing.status, 500);
  tt.same(missing.body, { status: 'error', message: 'Delete failed' });
  await call(gw, 'POST', '/tyk/apis', httpbin());
  tt.equal((await call(gw, 'DELETE', '/tyk/apis/httpbin')).status, 200, 'file present, not loaded: deleted');
  tt.equal(gw.files('api').size, 0);
  const pol = await call(gw, 'DELETE', '/tyk/policies/never');
  tt.equal(pol.status, 500, 'policies too');
});

t.test('listen path collisions rename as processSpec does', async (tt) => {
  const gw = await start(tt);
  await createLoaded(gw, httpbin('aaa', '/httpbin/'));
  await call(gw, 'POST', '/tyk/apis', httpbin('bbb', '/httpbin/'));
  gw.reloadNow();
  tt.equal((gw.loaded('api').get('aaa')?.proxy as JsonObject | undefined)?.listen_path, '/httpbin/', 'the already-loaded API keeps its path');
  const b = (await call(gw, 'GET', '/tyk/apis/bbb')).body;
  tt.equal(b.proxy.listen_path, '/httpbin/-bbb');
  tt.equal((gw.files('api').get('bbb')?.proxy as JsonObject | undefined)?.listen_path, '/httpbin/', 'the file is not changed');
  gw.reloadNow();
  tt.equal((await call(gw, 'GET', '/tyk/apis/bbb')).body.proxy.listen_path, '/httpbin/-bbb', 'stable over reloads');
  tt.equal((await call(gw, 'GET', '/tyk/apis/aaa')).body.proxy.listen_path, '/httpbin/');

  await call(gw, 'POST', '/tyk/apis', httpbin('ccc', '/same'));
  await call(gw, 'POST', '/tyk/apis', httpbin('ddd', '/same'));
  await call(gw, 'POST', '/tyk/apis', { ...httpbin('eee', '/same'), domain: 'other.example' });
  gw.reloadNow();
  const loaded = gw.loaded('api');
  const lp = (id: string): unknown => (loaded.get(id)?.proxy as JsonObject | undefined)?.listen_path;
  tt.equal(lp('ccc'), '/same-ccc', 'two new APIs in one reload are both renamed');
  tt.equal(lp('ddd'), '/same-ddd');
  tt.equal(lp('eee'), '/same', 'another domain does not collide');
});

t.test('joinDelayMs: group reloads after a (re)start are lost while answering ok', async (tt) => {
  const gw = await start(tt, { joinDelayMs: 150 });
  await call(gw, 'POST', '/tyk/apis', httpbin());
  const res = await call(gw, 'GET', '/tyk/reload/group');
  tt.equal(res.status, 200);
  tt.same(res.body, OK_RELOAD);
  await gw.waitForReloads();
  await new Promise((r) => setTimeout(r, 20));
  tt.equal((await call(gw, 'GET', '/tyk/apis/httpbin')).status, 404, 'lost');
  tt.same(gw.reloads, { requested: 1, applied: 0, dropped: 1 });

  await call(gw, 'GET', '/tyk/reload');
  await gw.waitForReloads();
  tt.equal((await call(gw, 'GET', '/tyk/apis/httpbin')).status, 200, 'a local reload does not use the channel');

  await new Promise((r) => setTimeout(r, 160));
  await call(gw, 'PUT', '/tyk/apis/httpbin', { ...httpbin(), name: 'v2' });
  await call(gw, 'GET', '/tyk/reload/group');
  await gw.waitForReloads();
  tt.equal((await call(gw, 'GET', '/tyk/apis/httpbin')).body.name, 'v2', 'joined: group reloads apply');

  gw.restart({ keepFiles: true });
  await call(gw, 'GET', '/tyk/reload/group');
  tt.equal(gw.reloads.dropped, 2, 'restart reopens the join window');
});

t.test('dropReloads(n) loses the next n reloads', async (tt) => {
  const gw = await start(tt);
  await call(gw, 'POST', '/tyk/apis', httpbin());
  gw.dropReloads(2);
  tt.same((await call(gw, 'GET', '/tyk/reload/group')).body, OK_RELOAD);
  tt.same((await call(gw, 'GET', '/tyk/reload')).body, OK_RELOAD);
  await gw.waitForReloads();
  tt.equal((await call(gw, 'GET', '/tyk/apis/httpbin')).status, 404);
  await call(gw, 'GET', '/tyk/reload/group');
  await gw.waitForReloads();
  tt.equal((await call(gw, 'GET', '/tyk/apis/httpbin')).status, 200);
  tt.same(gw.reloads, { requested: 3, applied: 1, dropped: 2 });
});

t.test('/tyk/reload?block=true applies before answering', async (tt) => {
  const gw = await start(tt, { reloadDelayMs: 60 });
  await call(gw, 'POST', '/tyk/apis', httpbin());
  const res = await call(gw, 'GET', '/tyk/reload?block=true');
  tt.same(res.body, OK_RELOAD);
  tt.equal((await call(gw, 'GET', '/tyk/apis/httpbin')).status, 200);
  tt.equal(gw.reloads.applied, 1);
});

t.test('restart loses state', async (tt) => {
  const gw = await start(tt, { reloadDelayMs: 50 });
  await createLoaded(gw, httpbin());
  const id = gw.loaded('api').get('httpbin')?.id;
  await call(gw, 'POST', '/tyk/apis', httpbin('queued'));
  await call(gw, 'GET', '/tyk/reload/group');

  gw.restart({ keepFiles: true });
  tt.equal((await call(gw, 'GET', '/tyk/apis/httpbin')).body.id, id, 'kept files are loaded at start, same id');
  tt.ok(gw.loaded('api').has('queued'));

  gw.restart();
  await gw.waitForReloads();
  tt.equal(gw.reloads.applied, 0, 'a queued reload dies with the process');
  tt.equal((await call(gw, 'GET', '/tyk/apis/httpbin')).status, 404);
  tt.same((await call(gw, 'GET', '/tyk/apis')).body, []);
  tt.equal(gw.files('api').size, 0);
  await call(gw, 'GET', '/tyk/reload');
  await gw.waitForReloads();
  tt.equal((await call(gw, 'GET', '/tyk/apis/httpbin')).status, 404, 'nothing to reload from');
});

t.test('policies: lifecycle and echo', async (tt) => {
  const gw = await start(tt);
  const pol = {
    id: 'pol1',
    name: 'gold',
    rate: 100,
    per: 1,
    active: true,
    access_rights: { httpbin: { api_id: 'httpbin', api_name: 'httpbin', versions: ['Default'] } },
    access_rights_array: 'operator-only field',
  };
  const created = await call(gw, 'POST', '/tyk/policies', pol);
  tt.same(created.body, { key: 'pol1', status: 'ok', action: 'added' });
  const missing = await call(gw, 'GET', '/tyk/policies/pol1');
  tt.equal(missing.status, 404);
  tt.same(missing.body, { status: 'error', message: 'Policy not found' });
  await call(gw, 'GET', '/tyk/reload/group');
  await gw.waitForReloads();
  const got = (await call(gw, 'GET', '/tyk/policies/pol1')).body;
  tt.equal(got.name, 'gold');
  tt.equal(got.rate, 100);
  tt.equal(got.active, true);
  tt.equal(got.quota_max, 0);
  tt.equal(got.hmac_enabled, false);
  tt.equal(got.is_inactive, false);
  tt.same(got.partitions, { quota: false, rate_limit: false, complexity: false, per_api: false, acl: false });
  tt.same(got.access_rights.httpbin.versions, ['Default']);
  tt.equal(got.access_rights.httpbin.limit.rate, 0, 'access right entries filled');
  tt.equal(got.access_rights.httpbin.allowed_urls, null);
  tt.notOk('access_rights_array' in got);
  tt.same((await call(gw, 'GET', '/tyk/policies')).body, [got]);

  const mismatch = await call(gw, 'PUT', '/tyk/policies/pol1', { ...pol, id: 'pol2' });
  tt.equal(mismatch.status, 400);
  tt.equal(mismatch.body.message, 'Request ID does not match that in policy! For Update operations these must match.');
  const put = await call(gw, 'PUT', '/tyk/policies/pol1', { ...pol, rate: 5 });
  tt.same(put.body, { key: 'pol1', status: 'ok', action: 'modified' });
  tt.equal(gw.loaded('policy').get('pol1')?.rate, 100, 'not visible before reload');

  tt.equal((await call(gw, 'DELETE', '/tyk/policies/pol1')).status, 200);
  tt.same((await call(gw, 'DELETE', '/tyk/policies/pol1')).body, { status: 'error', message: 'Delete failed' });
  gw.reloadNow();
  tt.equal((await call(gw, 'GET', '/tyk/policies/pol1')).status, 404);
  const unknown = await call(gw, 'DELETE', '/tyk/policies/pol1');
  tt.same(unknown, { status: 500, body: { status: 'error', message: 'Delete failed' }, contentType: 'application/json' }, 'a policy DELETE has no 404 (the swagger): 500');

  const generated = await call(gw, 'POST', '/tyk/policies', { name: 'no id' });
  tt.match(generated.body.key, /^[0-9a-f]{24}$/);
  tt.equal((await call(gw, 'POST', '/tyk/policies', { rate: 'fast' })).status, 400, 'type-checked');
});

t.test('back-door edits and removals', async (tt) => {
  const gw = await start(tt);
  await createLoaded(gw, httpbin());
  gw.editLoaded('api', 'httpbin', (api) => {
    api.name = 'edited on the gateway';
  });
  tt.equal((await call(gw, 'GET', '/tyk/apis/httpbin')).body.name, 'edited on the gateway');
  gw.reloadNow();
  tt.equal((await call(gw, 'GET', '/tyk/apis/httpbin')).body.name, 'httpbin', 'reload reads the file again');

  gw.editFile('api', 'httpbin', (api) => ({ ...api, name: 'file edit' }));
  gw.reloadNow();
  tt.equal((await call(gw, 'GET', '/tyk/apis/httpbin')).body.name, 'file edit');
  gw.editFile('api', 'httpbin', (api) => {
    api.name = 'file edited in place';
  });
  tt.equal((await call(gw, 'GET', '/tyk/apis/httpbin')).body.name, 'file edit', 'a file edit waits for a reload');
  gw.reloadNow();
  tt.equal((await call(gw, 'GET', '/tyk/apis/httpbin')).body.name, 'file edited in place', 'the next reload loads the edited file');
  gw.editLoaded('api', 'httpbin', (api) => {
    api.name = 'loaded edit';
  });
  gw.reloadNow();
  tt.same(
    (await call(gw, 'GET', '/tyk/apis')).body.map((a: JsonObject) => a.name),
    ['file edited in place'],
    'a reload of an unchanged file loads it as the file says, not as the last loaded edit left it',
  );

  tt.equal(gw.removeLoaded('api', 'httpbin'), true);
  tt.equal((await call(gw, 'GET', '/tyk/apis/httpbin')).status, 404);
  gw.reloadNow();
  tt.equal((await call(gw, 'GET', '/tyk/apis/httpbin')).status, 200, 'the file brings it back');
  tt.equal(gw.removeFile('api', 'httpbin'), true);
  gw.reloadNow();
  tt.equal((await call(gw, 'GET', '/tyk/apis/httpbin')).status, 404);
  tt.throws(() => gw.editLoaded('api', 'httpbin', () => undefined));

  const copy = gw.files('api');
  copy.set('x', {});
  tt.equal(gw.files('api').has('x'), false, 'files() is a copy');
});

t.test('call counting and writes()', async (tt) => {
  const gw = await start(tt);
  await call(gw, 'POST', '/tyk/apis', httpbin());
  await call(gw, 'GET', '/tyk/reload/group');
  await call(gw, 'GET', '/tyk/reload?block=true');
  await call(gw, 'GET', '/tyk/apis/httpbin');
  await call(gw, 'PUT', '/tyk/apis/httpbin', httpbin());
  await call(gw, 'DELETE', '/tyk/policies/none');
  await call(gw, 'POST', '/tyk/policies', { id: 'p' });
  await call(gw, 'GET', '/tyk/apis', undefined, {});
  await gw.waitForReloads();

  tt.same(gw.calls[1], { method: 'GET', path: '/tyk/reload/group', query: {}, status: 200 });
  tt.same(gw.calls[2], { method: 'GET', path: '/tyk/reload', query: { block: 'true' }, status: 200 });
  tt.same(gw.calls[0]?.body, httpbin(), 'the parsed request body is recorded');
  tt.equal(gw.count('*', '/tyk/reload'), 1);
  tt.equal(gw.calls[5]?.status, 500, 'DELETE of an unknown policy');
  tt.equal(gw.calls[7]?.status, 403);
  tt.equal(gw.calls.length, 8);
  tt.equal(gw.count('GET'), 4);
  tt.equal(gw.count('get', /^\/tyk\/apis/), 2);
  tt.equal(gw.count(undefined, /^\/tyk\/reload/), 2);
  tt.equal(gw.count('PUT', '/tyk/apis/httpbin'), 1);
  tt.equal(gw.writes(), 4, 'POST, PUT, DELETE and POST; reloads and GETs are not writes');
  gw.resetCalls();
  tt.equal(gw.calls.length, 0);
  tt.equal(gw.writes(), 0);
});

const PLAIN_404 = { status: 404, text: '404 page not found\n', contentType: 'text/plain; charset=utf-8' };

async function raw(
  gw: FakeTykGateway,
  method: string,
  path: string,
  headers: Record<string, string> = { 'x-tyk-authorization': gw.secret },
): Promise<{ status: number; text: string; contentType: string | null }> {
  const res = await fetch(gw.url + path, { method, headers });
  return { status: res.status, text: await res.text(), contentType: res.headers.get('content-type') };
}

t.test('a /tyk/ path without a route: Go’s plain-text 404, before auth', async (tt) => {
  const gw = await start(tt);
  tt.same(await raw(gw, 'GET', '/tyk/nothing'), PLAIN_404);
  tt.same(await raw(gw, 'GET', '/tyk/nothing', {}), PLAIN_404, 'without a key too');
  tt.same(await raw(gw, 'GET', '/tyk/apis/a/b/c'), PLAIN_404);
  tt.equal((await raw(gw, 'GET', '/tyk/nothing')).contentType, 'text/plain; charset=utf-8');
});

t.test('every route the client uses: documented statuses and bodies (current gateway)', async (tt) => {
  const gw = await start(tt);
  const err = (message: string) => ({ status: 'error', message });
  const forbidden = err('Attempted administrative access with invalid or missing key!');
  for (const [method, path] of [
    ['GET', '/tyk/apis'],
    ['POST', '/tyk/apis'],
    ['GET', '/tyk/apis/x'],
    ['PUT', '/tyk/apis/x'],
    ['DELETE', '/tyk/apis/x'],
    ['GET', '/tyk/policies'],
    ['POST', '/tyk/policies'],
    ['GET', '/tyk/policies/x'],
    ['PUT', '/tyk/policies/x'],
    ['DELETE', '/tyk/policies/x'],
    ['GET', '/tyk/reload'],
    ['GET', '/tyk/reload/group'],
  ] as const) {
    tt.same(await call(gw, method, path, undefined, {}), { status: 403, body: forbidden, contentType: 'application/json' }, `${method} ${path}: 403`);
  }
  tt.same(gw.writes(), 6, 'forbidden calls are counted, but change nothing');
  tt.equal(gw.files('api').size + gw.files('policy').size, 0);

  // /tyk/apis and /tyk/apis/{apiID}
  tt.same((await call(gw, 'GET', '/tyk/apis')).body, [], 'GET: a list of definitions');
  tt.same((await call(gw, 'POST', '/tyk/apis', httpbin())).body, { key: 'httpbin', status: 'ok', action: 'added' }, 'POST 200');
  tt.same((await call(gw, 'POST', '/tyk/apis', '{')).body, err('Request malformed'), 'POST 400');
  tt.same((await call(gw, 'GET', '/tyk/apis/httpbin')).body, err('API not found.'), 'GET 404 (not loaded yet)');
  tt.same((await call(gw, 'PUT', '/tyk/apis/httpbin', httpbin())).body, err('API not found'), 'PUT 404');
  gw.reloadNow();
  tt.equal((await call(gw, 'GET', '/tyk/apis/httpbin')).body.api_id, 'httpbin', 'GET 200: the definition');
  tt.same((await call(gw, 'PUT', '/tyk/apis/httpbin', httpbin())).body, { key: 'httpbin', status: 'ok', action: 'modified' }, 'PUT 200');
  tt.same((await call(gw, 'PUT', '/tyk/apis/httpbin', '{')).body, err('Request malformed'), 'PUT 400');
  tt.same((await call(gw, 'DELETE', '/tyk/apis/httpbin')).body, { key: 'httpbin', status: 'ok', action: 'deleted' }, 'DELETE 200');
  tt.same((await call(gw, 'DELETE', '/tyk/apis/httpbin')).body, err('Delete failed'), 'DELETE 500 (loaded, file gone)');
  gw.reloadNow();
  tt.same(await call(gw, 'DELETE', '/tyk/apis/httpbin'), { status: 404, body: err('API not found'), contentType: 'application/json' }, 'DELETE 404');

  // /tyk/policies and /tyk/policies/{polID}
  tt.same((await call(gw, 'GET', '/tyk/policies')).body, [], 'GET: a list of policies');
  tt.same((await call(gw, 'POST', '/tyk/policies', { id: 'p1', name: 'p' })).body, { key: 'p1', status: 'ok', action: 'added' }, 'POST 200');
  tt.same((await call(gw, 'POST', '/tyk/policies', '[')).body, err('Request malformed'), 'POST 400');
  tt.same(await call(gw, 'GET', '/tyk/policies/p1'), { status: 404, body: err('Policy not found'), contentType: 'application/json' }, 'GET 404');
  tt.same((await call(gw, 'PUT', '/tyk/policies/p1', { id: 'p1', name: 'p2' })).body, { key: 'p1', status: 'ok', action: 'modified' }, 'PUT 200');
  tt.same((await call(gw, 'PUT', '/tyk/policies/p1', '{')).body, err('Request malformed'), 'PUT 400');
  gw.reloadNow();
  tt.equal((await call(gw, 'GET', '/tyk/policies/p1')).body.name, 'p2', 'GET 200: the policy');
  tt.same((await call(gw, 'DELETE', '/tyk/policies/p1')).body, { key: 'p1', status: 'ok', action: 'deleted' }, 'DELETE 200');
  tt.same(await call(gw, 'DELETE', '/tyk/policies/p1'), { status: 500, body: err('Delete failed'), contentType: 'application/json' }, 'DELETE 500');

  // reloads
  tt.same(await call(gw, 'GET', '/tyk/reload'), { status: 200, body: { status: 'ok', message: '' }, contentType: 'application/json' });
  tt.same(await call(gw, 'GET', '/tyk/reload/group'), { status: 200, body: { status: 'ok', message: '' }, contentType: 'application/json' });
});

t.test('the OAS routes on a current gateway with Classic APIs only', async (tt) => {
  const gw = await start(tt);
  await createLoaded(gw, httpbin());
  tt.same(await call(gw, 'GET', '/tyk/apis/oas'), { status: 200, body: [], contentType: 'application/json' }, 'no OAS APIs');
  const classic = await call(gw, 'GET', '/tyk/apis/oas/httpbin');
  tt.same(classic, { status: 400, body: { status: 'error', message: 'the requested API definition is in Tyk classic format, please use old API endpoint' }, contentType: 'application/json' });
  tt.same((await call(gw, 'GET', '/tyk/apis/oas/nope')).body, { status: 'error', message: 'API not found' }, 'an unknown id: 404');
  tt.equal((await call(gw, 'GET', '/tyk/apis/oas', undefined, {})).status, 403, 'behind auth');
  tt.equal((await call(gw, 'POST', '/tyk/apis/oas', {}, {})).status, 403, 'writes too');
});

t.test('version 3.1: no policy or OAS routes (plain-text 404, before auth); APIs and reloads as before; legacy DELETE', async (tt) => {
  const gw = await start(tt, { version: '3.1' });
  for (const [method, path] of [
    ['GET', '/tyk/policies'],
    ['POST', '/tyk/policies'],
    ['GET', '/tyk/policies/p1'],
    ['PUT', '/tyk/policies/p1'],
    ['DELETE', '/tyk/policies/p1'],
    ['GET', '/tyk/apis/oas/httpbin'],
    ['PUT', '/tyk/apis/oas/httpbin'],
    ['DELETE', '/tyk/apis/oas/httpbin'],
  ] as const) {
    tt.same(await raw(gw, method, path), PLAIN_404, `${method} ${path}`);
    tt.same(await raw(gw, method, path, {}), PLAIN_404, `${method} ${path}, without a key`);
  }
  tt.equal(gw.files('policy').size, 0, 'nothing written');
  tt.same((await call(gw, 'POST', '/tyk/apis', httpbin())).body, { key: 'httpbin', status: 'ok', action: 'added' });
  tt.same((await call(gw, 'GET', '/tyk/reload/group')).body, { status: 'ok', message: '' });
  await gw.waitForReloads();
  tt.equal((await call(gw, 'GET', '/tyk/apis/httpbin')).status, 200);
  tt.equal((await call(gw, 'GET', '/tyk/apis', undefined, {})).status, 403, 'API routes keep their auth');
  const missing = await call(gw, 'DELETE', '/tyk/apis/never');
  tt.same(missing, { status: 500, body: { status: 'error', message: 'Delete failed' }, contentType: 'application/json' }, 'an old gateway’s DELETE of what it lacks');

  const newer = await start(tt, { version: '3.1', legacyDelete: false });
  tt.equal((await call(newer, 'DELETE', '/tyk/apis/never')).status, 404, 'legacyDelete can still be set apart');
});

t.test('policySource service: policy writes refused with the documented 500; reads as usual', async (tt) => {
  const gw = await start(tt, { policySource: 'service' });
  const refused = { status: 500, body: { status: 'error', message: 'Due to enabled service policy source, please use the Dashboard API.' }, contentType: 'application/json' };
  tt.same(await call(gw, 'POST', '/tyk/policies', { id: 'p1', name: 'p' }), refused, 'POST');
  tt.same(await call(gw, 'PUT', '/tyk/policies/p1', { id: 'p1', name: 'p' }), refused, 'PUT');
  tt.same(await call(gw, 'DELETE', '/tyk/policies/p1'), refused, 'DELETE');
  tt.equal(gw.files('policy').size, 0);
  tt.same((await call(gw, 'GET', '/tyk/policies')).body, []);
  tt.equal((await call(gw, 'GET', '/tyk/policies/p1')).status, 404);
  tt.equal((await call(gw, 'POST', '/tyk/apis', httpbin())).status, 200, 'APIs are written as usual');
  tt.equal((await call(gw, 'POST', '/tyk/policies', { id: 'p1' }, {})).status, 403, 'auth first');
});
