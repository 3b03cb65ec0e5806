/**
 * The Dashboard fake's classic developer portal routes (./tyk-dashboard-portal.ts) answer as
 * that file's header says, source by source: the catalogue (one per organisation, entries filled
 * with the model's zero values, unknown fields dropped, 404 before it exists, PUT only with its
 * id, an entry without a policy_id refused, one object or a list of one), documentation (refused
 * while the organisation has no catalogue, upload answers the new id in Message, base64 for
 * swagger, delete, 400 for an id that is not an object id, 404 for an unknown one), the
 * configuration (one per organisation), refusals (auth, malformed bodies, wrong methods), and the
 * fake's faults, call log and test controls on all of them.
 */
import t from 'tap';
import { type FakeTykDashboard, type FakeTykDashboardOptions, startFakeTykDashboard } from './tyk-dashboard.js';
import { invalidEntryMessage, PORTAL_MSG } from './tyk-dashboard-portal.js';

interface Res {
  status: number;
  body: any;
}

const err = (message: string) => ({ Status: 'Error', Message: message, Meta: null });
const OBJECT_ID = /^[0-9a-f]{24}$/;

async function start(tt: { teardown(fn: () => unknown): void }, options: FakeTykDashboardOptions = {}): Promise<FakeTykDashboard> {
  const d = await startFakeTykDashboard({ secret: 'dash-key', ...options });
  tt.teardown(() => d.close());
  return d;
}

async function call(d: FakeTykDashboard, method: string, path: string, body?: unknown, auth = d.secret): Promise<Res> {
  const res = await fetch(d.url + path, { method, headers: { authorization: auth }, ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }) });
  const text = await res.text();
  return { status: res.status, body: text === '' ? undefined : JSON.parse(text) };
}

t.test('the catalogue: 404 before it exists, one per organisation, entries filled, PUT with its id only', async (t) => {
  const d = await start(t);
  t.strictSame(await call(d, 'GET', '/api/portal/catalogue'), { status: 404, body: err(PORTAL_MSG.catalogueNotFound) }, 'an organisation without a catalogue');
  const created = await call(d, 'POST', '/api/portal/catalogue', { org_id: 'someone-else', apis: [{ name: 'A', policy_id: 'p1', show: true, docs: { doc_type: 'x' } }] });
  t.equal(created.status, 200);
  t.match(created.body, { Status: 'OK', Message: OBJECT_ID, Meta: null }, 'the new id in Message');
  const id = created.body.Message as string;
  const got = await call(d, 'GET', '/api/portal/catalogue/');
  t.equal(got.status, 200, 'a trailing slash (Tyk Operator uses one) is the same route');
  t.match(got.body, { id, org_id: d.orgId, email: '' }, "the key's organisation, whatever the body said");
  const entry = got.body.apis[0];
  t.match(entry, { name: 'A', policy_id: 'p1', show: true, api_id: '', documentation: '', version: '', is_keyless: false, fields: {}, auth_type: '' }, 'zero values filled');
  t.match(entry.config, { oauth_usage_limit: -1, mail_options: { email_copy: { welcome_email: { enabled: false } } } }, "the entry's config model too");
  t.notOk('docs' in entry, 'unknown fields dropped');
  t.strictSame(await call(d, 'POST', '/api/portal/catalogue', { apis: [] }), { status: 400, body: err(PORTAL_MSG.catalogueExists) }, 'a second create');
  t.strictSame(await call(d, 'PUT', '/api/portal/catalogue', { id: 'another', apis: [] }), { status: 400, body: err(PORTAL_MSG.badCatalogueId) }, 'another id');
  t.strictSame(await call(d, 'PUT', '/api/portal/catalogue', { ...got.body, email: 'owner@example.com', apis: [] }), { status: 200, body: { Status: 'OK', Message: 'Data updated', Meta: null } });
  t.match(d.catalogue(), { id, email: 'owner@example.com', apis: [] });
  t.equal(d.portalWrites(), 4, 'every POST and PUT is counted, refused or not');
  d.wipe();
  t.strictSame(await call(d, 'PUT', '/api/portal/catalogue', { id, apis: [] }), { status: 404, body: err(PORTAL_MSG.catalogueNotFound) }, 'a PUT when there is none');
});

t.test('refusals: auth, malformed bodies, wrong field types, other methods', async (t) => {
  const d = await start(t);
  t.strictSame(await call(d, 'GET', '/api/portal/catalogue', undefined, 'wrong'), { status: 401, body: err('Not authorised') });
  t.strictSame(await call(d, 'POST', '/api/portal/configuration', undefined, 'wrong'), { status: 401, body: err('Not authorised') });
  t.strictSame(await call(d, 'POST', '/api/portal/catalogue', '{ not json'), { status: 403, body: err(PORTAL_MSG.malformed) }, 'the documented 403 to a malformed body');
  t.strictSame(await call(d, 'POST', '/api/portal/catalogue', { apis: [{ show: 'yes' }] }), { status: 403, body: err(PORTAL_MSG.malformed) }, 'an entry field of the wrong type');
  t.strictSame(await call(d, 'POST', '/api/portal/catalogue', { apis: {} }), { status: 403, body: err(PORTAL_MSG.malformed) }, 'apis not a list');
  t.strictSame(
    await call(d, 'POST', '/api/portal/catalogue', { apis: [{ name: 'Petstore', show: true }] }),
    { status: 400, body: err(invalidEntryMessage('Petstore')) },
    'an entry without a policy_id: the documented validation 400',
  );
  t.strictSame(await call(d, 'POST', '/api/portal/configuration', { disable_signup: 'no' }), { status: 400, body: err(PORTAL_MSG.malformed) });
  t.strictSame(await call(d, 'POST', '/api/portal/documentation', []), { status: 403, body: err(PORTAL_MSG.malformed) });
  t.equal((await call(d, 'DELETE', '/api/portal/catalogue')).status, 405);
  t.equal((await call(d, 'GET', '/api/portal/documentation')).status, 405);
  t.equal((await call(d, 'GET', '/api/portal/documentation/abc')).status, 405, 'documentation cannot be read back');
  t.equal(d.catalogue(), undefined, 'nothing was stored');
});

t.test('documentation: refused until the organisation has a catalogue, then the new id in Message, base64 for swagger, deleted by id', async (t) => {
  const d = await start(t);
  const first = { api_id: 'p1', doc_type: 'swagger_custom_url', documentation: 'https://x/spec.json' };
  t.strictSame(await call(d, 'POST', '/api/portal/documentation', first), { status: 403, body: err(PORTAL_MSG.noCatalogueYet) }, 'a fresh organisation: no catalogue added yet');
  t.equal(d.documentation().size, 0, 'nothing stored');
  t.equal((await call(d, 'POST', '/api/portal/catalogue', { apis: [] })).status, 200, 'an empty catalogue');
  const swagger = Buffer.from('{"swagger":"2.0"}').toString('base64');
  const up = await call(d, 'POST', '/api/portal/documentation', { api_id: 'p1', doc_type: 'swagger', documentation: swagger });
  t.match(up, { status: 200, body: { Status: 'OK', Message: OBJECT_ID, Meta: null } });
  const url = await call(d, 'POST', '/api/portal/documentation', { api_id: 'p2', doc_type: 'swagger_custom_url', documentation: 'https://x/spec.json' });
  t.equal(url.status, 200, 'a URL as it is');
  t.strictSame(
    await call(d, 'POST', '/api/portal/documentation', { api_id: 'p1', doc_type: 'swagger', documentation: '{"swagger":"2.0"}' }),
    { status: 400, body: err(PORTAL_MSG.badDocumentation) },
    'swagger not base64',
  );
  t.strictSame(await call(d, 'POST', '/api/portal/documentation', { api_id: 'p1', doc_type: 'pdf', documentation: 'x' }), { status: 400, body: err(PORTAL_MSG.badDocumentation) }, 'an unknown type');
  t.strictSame([...d.documentation().keys()].sort(), [up.body.Message, url.body.Message].sort());
  t.strictSame(d.documentation().get(up.body.Message), { api_id: 'p1', doc_type: 'swagger', documentation: swagger });
  t.strictSame(await call(d, 'DELETE', `/api/portal/documentation/${up.body.Message}`), { status: 200, body: { Status: 'OK', Message: 'Data deleted', Meta: null } });
  t.strictSame(await call(d, 'DELETE', `/api/portal/documentation/${up.body.Message}`), { status: 404, body: err(PORTAL_MSG.documentationNotFound) }, 'gone');
  t.strictSame(await call(d, 'DELETE', '/api/portal/documentation/not-an-id'), { status: 400, body: err(PORTAL_MSG.badDocumentationId) }, 'not an object id');
  t.equal(d.documentation().size, 1);
  d.wipe();
  t.strictSame(await call(d, 'POST', '/api/portal/documentation', first), { status: 403, body: err(PORTAL_MSG.noCatalogueYet) }, 'wiped: a fresh organisation again');
});

t.test('catalogueAnswer list: GET answers the catalogue as a list of one; everything else the same', async (t) => {
  const d = await start(t, { catalogueAnswer: 'list' });
  t.strictSame(await call(d, 'GET', '/api/portal/catalogue'), { status: 404, body: err(PORTAL_MSG.catalogueNotFound) }, 'none: the same 404');
  const id = (await call(d, 'POST', '/api/portal/catalogue', { apis: [{ name: 'A', policy_id: 'p1' }] })).body.Message;
  const got = await call(d, 'GET', '/api/portal/catalogue');
  t.equal(got.status, 200);
  t.ok(Array.isArray(got.body) && got.body.length === 1, 'a list of one');
  t.match(got.body[0], { id, org_id: d.orgId, apis: [{ name: 'A', policy_id: 'p1', show: false }] });
  t.match(d.catalogue(), { id }, 'the test side sees the catalogue itself');
});

t.test('the configuration: 404 before it exists, one per organisation, filled, PUT with its id only', async (t) => {
  const d = await start(t);
  t.strictSame(await call(d, 'GET', '/api/portal/configuration'), { status: 404, body: err(PORTAL_MSG.configurationNotFound) });
  t.strictSame(await call(d, 'PUT', '/api/portal/configuration', { id: 'x' }), { status: 404, body: err(PORTAL_MSG.configurationNotFound) });
  const created = await call(d, 'POST', '/api/portal/configuration', { require_key_approval: true, unknown: 1 });
  t.match(created, { status: 200, body: { Status: 'OK', Message: OBJECT_ID } });
  const got = await call(d, 'GET', '/api/portal/configuration');
  t.match(got.body, { id: created.body.Message, org_id: d.orgId, require_key_approval: true, disable_signup: false, signup_fields: [], oauth_usage_limit: 0 });
  t.notOk('unknown' in got.body, 'unknown fields dropped');
  t.strictSame(await call(d, 'POST', '/api/portal/configuration', {}), { status: 400, body: err(PORTAL_MSG.configurationExists) });
  t.strictSame(await call(d, 'PUT', '/api/portal/configuration', { id: 'other' }), { status: 400, body: err(PORTAL_MSG.badConfigurationId) });
  t.equal((await call(d, 'PUT', '/api/portal/configuration', { id: created.body.Message, disable_login: true })).status, 200);
  t.match(d.configuration(), { disable_login: true, require_key_approval: false }, 'a PUT replaces the configuration');
});

t.test('test controls, faults and the call log work on the portal routes', async (t) => {
  const d = await start(t);
  await call(d, 'POST', '/api/portal/catalogue', {
    apis: [
      { name: 'A', policy_id: 'p1' },
      { name: 'B', policy_id: 'p2' },
    ],
  });
  d.editCatalogue((c) => {
    (c.apis as Record<string, unknown>[])[0]!.name = 'edited';
  });
  t.match(d.catalogue()?.apis, [{ name: 'edited' }, { name: 'B' }], 'an edit behind the client’s back');
  t.ok(d.removeCatalogueEntry('p2'));
  t.notOk(d.removeCatalogueEntry('p2'), 'nothing left to remove');
  t.match(d.catalogue()?.apis, [{ policy_id: 'p1' }]);
  const fault = d.inject({ method: 'GET', path: '/api/portal/catalogue', status: 503 });
  t.strictSame(await call(d, 'GET', '/api/portal/catalogue'), { status: 503, body: err('injected fault') }, 'an injected status, in the Dashboard’s error shape');
  t.equal(fault.fired, 1);
  t.equal((await call(d, 'GET', '/api/portal/catalogue')).status, 200, 'once');
  t.equal(d.count('GET', '/api/portal/catalogue'), 2);
  t.equal(d.writes(), 0, 'portal writes are not API or policy writes');
  t.equal(d.portalWrites(), 1);
  d.resetCalls();
  t.equal(d.portalWrites(), 0);
});
