/**
 * The developer portal through TykDashboardClient (lib/gateway/tyk-dashboard-portal.ts) against
 * the loopback Dashboard fake, over real HTTP: catalogue slices by policy id (read, written in
 * place, other entries kept as they are, released and taken-over entries dropped, one write
 * each), documentation uploaded with its entry and deleted when replaced (and when the write
 * fails), a fresh organisation (the catalogue made before any documentation; made again when it
 * goes away mid-write), 403s that refuse the request rather than the key, the catalogue answered
 * as a list, a catalogue created by someone else meanwhile, what counts as absent, the configuration
 * (POST, then PUT with the Dashboard's id; deletion sends nothing), descriptions (nothing sent);
 * and the Tyk Gateway client refusing every portal kind without a call.
 */
import t, { type Test } from 'tap';
import { catalogueId, PORTAL_CONFIGURATION_ID } from '../../lib/gateway/portal.js';
import { TykGatewayClient } from '../../lib/gateway/tyk-ce.js';
import { TykDashboardClient } from '../../lib/gateway/tyk-dashboard.js';
import type { JsonObject } from '../../lib/gateway/types.js';
import { GatewayApiError, GatewayRejectedError, GatewayUnsupportedError } from '../../lib/platform/errors.js';
import { undiciTransports } from '../../lib/platform/http-undici.js';
import { type FakeTykDashboard, startFakeTykDashboard } from '../fakes/tyk-dashboard.js';
import { startFakeTykGateway } from '../fakes/tyk-gateway.js';

/** The clients here send over undici's pooled client, as full runs do (the fast tier's contract tests use Node's own). */
const UNDICI = undiciTransports();

const SECRET = 'dashboard-user-key-0123456789abcdef';
type Entry = Record<string, unknown>;

async function setup(t: Test): Promise<{ d: FakeTykDashboard; client: TykDashboardClient }> {
  const d = await startFakeTykDashboard({ secret: SECRET });
  t.teardown(() => d.close());
  const client = new TykDashboardClient({ transport: UNDICI, name: 'default', url: d.url, secret: SECRET, timeoutMs: 2000 });
  t.teardown(() => client.close());
  return { d, client };
}

/** The catalogue as someone else (the UI, Tyk Operator) would write it: created, or replaced when there is one. */
async function seed(d: FakeTykDashboard, apis: Entry[]): Promise<string> {
  const headers = { authorization: d.secret };
  const res = await fetch(`${d.url}/api/portal/catalogue`, { method: 'POST', headers, body: JSON.stringify({ apis }) });
  if (res.ok) return ((await res.json()) as { Message: string }).Message;
  const current = (await (await fetch(`${d.url}/api/portal/catalogue`, { headers })).json()) as { id: string };
  await fetch(`${d.url}/api/portal/catalogue`, { method: 'PUT', headers, body: JSON.stringify({ ...current, apis }) });
  return current.id;
}

/** Documentation as someone else would upload it (the organisation needs a catalogue first: one is made). */
async function upload(d: FakeTykDashboard, text: string): Promise<string> {
  if (d.catalogue() === undefined) await seed(d, []);
  const res = await fetch(`${d.url}/api/portal/documentation`, {
    method: 'POST',
    headers: { authorization: d.secret },
    body: JSON.stringify({ api_id: 'x', doc_type: 'swagger_custom_url', documentation: text }),
  });
  return ((await res.json()) as { Message: string }).Message;
}

const policyIds = (d: FakeTykDashboard): unknown[] => ((d.catalogue()?.apis ?? []) as Entry[]).map((e) => e.policy_id);
const entry = (d: FakeTykDashboard, pid: string): Entry | undefined => ((d.catalogue()?.apis ?? []) as Entry[]).find((e) => e.policy_id === pid);

t.test('catalogue slices: absent until written, the entries under their policy ids, one read for a list', async (t) => {
  const { d, client } = await setup(t);
  t.equal(await client.get('portal-catalogue', catalogueId(['p1'])), null, 'no catalogue: absent');
  t.equal(await client.get('portal-catalogue', catalogueId([])), null, 'not even an empty slice');
  await client.upsert('portal-catalogue', catalogueId(['p1']), { apis: [{ name: 'One', policy_id: 'p1', show: true }] });
  t.equal(d.count('POST', '/api/portal/catalogue'), 1, 'the organisation had none: created');
  const id = d.catalogue()?.id;
  t.match(await client.get('portal-catalogue', catalogueId(['p1'])), { id, apis: [{ name: 'One', policy_id: 'p1', show: true, documentation: '' }] });
  t.equal(await client.get('portal-catalogue', catalogueId(['p2'])), null, 'a slice without any of its entries is absent');
  t.strictSame(await client.get('portal-catalogue', catalogueId([])), { id, apis: [] }, 'the empty slice of an existing catalogue');
  d.resetCalls();
  const all = await client.list('portal-catalogue');
  t.match(all.get(catalogueId(['p1'])), { id, apis: [{ policy_id: 'p1' }] });
  t.equal(all.get(catalogueId(['p9'])), undefined);
  t.ok(all.has(catalogueId(['p1', 'p9'])), 'a slice with some of its entries is there');
  t.equal(d.count('GET', '/api/portal/catalogue'), 1, 'one read answers every slice');
});

t.test('an upsert writes its entries in place, keeps every other entry, drops released and taken-over ones: one PUT', async (t) => {
  const { d, client } = await setup(t);
  const old = await upload(d, 'https://old/spec.json');
  const alias = await upload(d, 'https://alias/spec.json');
  await seed(d, [
    { name: 'by hand', policy_id: 'other', documentation: '' },
    { name: 'old mine', policy_id: 'p1', documentation: old },
    { name: "Tyk Operator's", policy_id: 'own-id-of-p1', documentation: alias },
    { name: 'released', policy_id: 'gone', documentation: '' },
  ]);
  d.resetCalls();
  await client.upsert('portal-catalogue', catalogueId(['p1', 'p2']), {
    apis: [
      { name: 'mine', policy_id: 'p1', docs: { doc_type: 'swagger_custom_url', documentation: 'https://new/spec.json' } },
      { name: 'new', policy_id: 'p2' },
    ],
    release: ['gone'],
    replaces: ['own-id-of-p1'],
  });
  t.strictSame(policyIds(d), ['other', 'p1', 'p2'], 'in place, new ones last, released and taken over dropped');
  t.match(entry(d, 'other'), { name: 'by hand' }, 'not ours: as it was');
  const doc = String(entry(d, 'p1')?.documentation);
  t.strictSame(d.documentation().get(doc), { api_id: 'p1', doc_type: 'swagger_custom_url', documentation: 'https://new/spec.json' }, 'its documentation uploaded, filed under its policy');
  t.notOk(d.documentation().has(old), 'the documentation it replaced is deleted');
  t.notOk(d.documentation().has(alias), 'so is that of the entry it took over');
  t.equal(d.count('PUT', '/api/portal/catalogue'), 1, 'one catalogue write');
  t.equal(d.count('POST', '/api/portal/catalogue'), 0);
});

t.test('a failed catalogue write deletes the documentation it uploaded; a refused one is GatewayRejectedError', async (t) => {
  const { d, client } = await setup(t);
  await seed(d, []);
  d.inject({ method: 'PUT', path: '/api/portal/catalogue', status: 500 });
  const failed = await client
    .upsert('portal-catalogue', catalogueId(['p1']), { apis: [{ policy_id: 'p1', docs: { doc_type: 'swagger_custom_url', documentation: 'https://x' } }] })
    .catch((e: unknown) => e);
  t.type(failed, GatewayApiError);
  t.equal(d.documentation().size, 0, 'nothing left behind');
  t.strictSame(policyIds(d), [], 'and no entry');
  const refused = await client.upsert('portal-catalogue', catalogueId(['p1']), { apis: [{ policy_id: 'p1', show: 'yes' }] }).catch((e: unknown) => e);
  t.type(refused, GatewayRejectedError, 'the Dashboard refused what we sent');
  t.notMatch(String((refused as Error).message), SECRET, 'the key is never in an error');
});

t.test('a fresh organisation: an empty catalogue first, then the documentation, then the entries; one upsert', async (t) => {
  const { d, client } = await setup(t);
  const docs = { doc_type: 'swagger_custom_url', documentation: 'https://x/spec.json' };
  await client.upsert('portal-catalogue', catalogueId(['p1', 'p2']), {
    apis: [
      { name: 'documented', policy_id: 'p1', show: true, docs },
      { name: 'plain', policy_id: 'p2' },
    ],
    email: 'owner@example.com',
  });
  const writes = d.calls.filter((c) => c.method !== 'GET').map((c) => `${c.method} ${c.path} ${c.status}`);
  t.strictSame(writes, ['POST /api/portal/catalogue 200', 'POST /api/portal/documentation 200', 'PUT /api/portal/catalogue 200'], 'the catalogue exists before any documentation is sent');
  t.strictSame(policyIds(d), ['p1', 'p2'], 'then completed');
  const doc = String(entry(d, 'p1')?.documentation);
  t.strictSame(d.documentation().get(doc), { api_id: 'p1', ...docs }, 'the entry points at its documentation');
  t.match(d.catalogue(), { email: 'owner@example.com' });
  t.equal(d.calls.filter((c) => c.status === 403).length, 0, 'the Dashboard refused nothing');

  // without documentation, the fresh organisation's catalogue is one POST, as before
  d.wipe();
  d.resetCalls();
  await client.upsert('portal-catalogue', catalogueId(['p2']), { apis: [{ name: 'plain', policy_id: 'p2' }] });
  t.strictSame(
    d.calls.filter((c) => c.method !== 'GET').map((c) => `${c.method} ${c.path}`),
    ['POST /api/portal/catalogue'],
  );
});

t.test('the catalogue removed between the read and the upload: made again, the upload sent once more, in the same upsert', async (t) => {
  const { d, client } = await setup(t);
  await seed(d, [{ name: 'theirs', policy_id: 'x' }]);
  let removed = false;
  // someone removes the organisation's catalogue just before our upload reaches the Dashboard
  d.inject({
    method: 'POST',
    path: '/api/portal/documentation',
    match: () => {
      if (!removed) {
        removed = true;
        d.wipe();
      }
      return false;
    },
  });
  d.resetCalls();
  await client.upsert('portal-catalogue', catalogueId(['p1']), { apis: [{ name: 'mine', policy_id: 'p1', docs: { doc_type: 'swagger_custom_url', documentation: 'https://x' } }] });
  t.ok(removed, 'the catalogue went away mid-write');
  t.strictSame(
    d.calls.filter((c) => c.method !== 'GET').map((c) => `${c.method} ${c.path} ${c.status}`),
    ['POST /api/portal/documentation 403', 'POST /api/portal/catalogue 200', 'POST /api/portal/documentation 200', 'PUT /api/portal/catalogue 200'],
    'refused once (no catalogue), the catalogue made, the upload again, the entries put',
  );
  t.strictSame(policyIds(d), ['p1'], 'ours is there (theirs went with the catalogue)');
  t.ok(d.documentation().has(String(entry(d, 'p1')?.documentation)), 'with its documentation');
});

t.test('a 403 that does not refuse the key is not reported as a TYK_AUTH problem; one that does is', async (t) => {
  const { d, client } = await setup(t);
  await seed(d, []);
  const malformed = { Status: 'Error', Message: 'Request body malformed', Meta: null };
  d.inject({ method: 'POST', path: '/api/portal/documentation', status: 403, body: malformed });
  const refused = await client
    .upsert('portal-catalogue', catalogueId(['p1']), { apis: [{ policy_id: 'p1', docs: { doc_type: 'swagger_custom_url', documentation: 'https://x' } }] })
    .catch((e: unknown) => e);
  t.type(refused, GatewayRejectedError, 'the Dashboard refused what we sent (it has a catalogue, so it is not that)');
  t.match(String((refused as Error).message), /Request body malformed/);
  t.notMatch(String((refused as Error).message), /TYK_AUTH/, 'the key is not blamed');
  t.equal(d.count('POST', '/api/portal/documentation'), 1, 'not sent again: the catalogue was there');
  t.strictSame(policyIds(d), [], 'nothing written');

  d.inject({
    method: 'POST',
    path: '/api/portal/documentation',
    status: 403,
    body: { Status: 'Error', Message: 'access denied: You do not have permission to access /api/portal/documentation', Meta: null },
  });
  const denied = await client
    .upsert('portal-catalogue', catalogueId(['p1']), { apis: [{ policy_id: 'p1', docs: { doc_type: 'swagger_custom_url', documentation: 'https://x' } }] })
    .catch((e: unknown) => e);
  t.type(denied, GatewayApiError);
  t.match(String((denied as Error).message), /403 access denied.*\(check TYK_AUTH\)/, 'a refused permission names the key');

  const wrongKey = new TykDashboardClient({ transport: UNDICI, name: 'default', url: d.url, secret: 'not-the-key-0123456789', timeoutMs: 2000 });
  t.teardown(() => wrongKey.close());
  const unauthorised = await wrongKey.get('portal-catalogue', catalogueId(['p1'])).catch((e: unknown) => e);
  t.match(String((unauthorised as Error).message), /401 Not authorised \(check TYK_AUTH\)/, 'a 401 names the key');
});

t.test("a catalogue answered as a list of one (the SDK swagger's schema) reads and writes the same", async (t) => {
  const d = await startFakeTykDashboard({ secret: SECRET, catalogueAnswer: 'list' });
  t.teardown(() => d.close());
  const client = new TykDashboardClient({ transport: UNDICI, name: 'default', url: d.url, secret: SECRET, timeoutMs: 2000 });
  t.teardown(() => client.close());
  t.equal(await client.get('portal-catalogue', catalogueId(['p1'])), null, 'none: absent');
  await client.upsert('portal-catalogue', catalogueId(['p1']), { apis: [{ name: 'One', policy_id: 'p1', docs: { doc_type: 'swagger_custom_url', documentation: 'https://x' } }] });
  const id = d.catalogue()?.id;
  t.match(await client.get('portal-catalogue', catalogueId(['p1'])), { id, apis: [{ name: 'One', policy_id: 'p1', documentation: /^[0-9a-f]{24}$/ }] });
  await client.upsert('portal-catalogue', catalogueId(['p2']), { apis: [{ name: 'Two', policy_id: 'p2' }] });
  t.strictSame(policyIds(d), ['p1', 'p2'], 'the second write PUTs over the listed catalogue');
  t.equal(d.count('PUT', '/api/portal/catalogue'), 2);
});

t.test('a catalogue created meanwhile is written over, not duplicated; a proxy 404 is not "absent"', async (t) => {
  const { d, client } = await setup(t);
  await seed(d, [{ name: 'someone else', policy_id: 'x' }]);
  // the read says "none" (the catalogue was created right after it): the POST is refused, then read again and PUT
  d.inject({ method: 'GET', path: '/api/portal/catalogue', status: 404, body: { Status: 'Error', Message: 'Could not retrieve catalogue', Meta: null } });
  await client.upsert('portal-catalogue', catalogueId(['p1']), { apis: [{ name: 'mine', policy_id: 'p1' }] });
  t.strictSame(policyIds(d), ['x', 'p1'], 'ours added to the one that exists, theirs kept');
  t.equal(d.count('POST', '/api/portal/catalogue'), 2, "the seed's, and our refused one");
  t.equal(d.count('PUT', '/api/portal/catalogue'), 1);
  d.inject({ method: 'GET', path: '/api/portal/catalogue', status: 404, body: '404 page not found' });
  const err = await client.get('portal-catalogue', catalogueId(['p1'])).catch((e: unknown) => e);
  t.type(err, GatewayApiError, "a 404 without the Dashboard's error shape is an error");
  d.inject({ method: 'GET', path: '/api/portal/configuration', status: 404, body: '<html>not found</html>' });
  t.type(await client.get('portal-configuration', PORTAL_CONFIGURATION_ID).catch((e: unknown) => e), GatewayApiError);
});

t.test('remove drops only the slice’s entries and their documentation; nothing to drop, nothing written', async (t) => {
  const { d, client } = await setup(t);
  const doc = await upload(d, 'https://x');
  await seed(d, [{ policy_id: 'keep' }, { policy_id: 'p1', documentation: doc }]);
  d.resetCalls();
  await client.remove('portal-catalogue', catalogueId(['p9']));
  t.equal(d.portalWrites(), 0, 'none of its entries: no write');
  d.inject({ method: 'DELETE', path: /^\/api\/portal\/documentation\//, status: 500 });
  await client.remove('portal-catalogue', catalogueId(['p1']));
  t.strictSame(policyIds(d), ['keep']);
  t.equal(d.count('DELETE', `/api/portal/documentation/${doc}`), 1, 'its documentation deleted (a failure there is left alone)');
  d.wipe();
  await client.remove('portal-catalogue', catalogueId(['keep']));
  t.pass('no catalogue: nothing to remove');
});

t.test('two slices written at once lose neither', async (t) => {
  const { d, client } = await setup(t);
  await seed(d, []);
  await Promise.all([
    client.upsert('portal-catalogue', catalogueId(['a']), { apis: [{ policy_id: 'a' }] }),
    client.upsert('portal-catalogue', catalogueId(['b']), { apis: [{ policy_id: 'b' }] }),
    client.upsert('portal-catalogue', catalogueId(['c']), { apis: [{ policy_id: 'c' }] }),
  ]);
  t.strictSame([...policyIds(d)].sort(), ['a', 'b', 'c']);
});

t.test('the configuration: created, then updated under the Dashboard’s id; a removal sends nothing', async (t) => {
  const { d, client } = await setup(t);
  t.equal(await client.get('portal-configuration', PORTAL_CONFIGURATION_ID), null);
  t.strictSame([...(await client.list('portal-configuration')).keys()], [], 'none listed');
  await client.upsert('portal-configuration', PORTAL_CONFIGURATION_ID, { require_key_approval: true, id: 'not ours to choose' } as JsonObject);
  const id = d.configuration()?.id;
  t.match(d.configuration(), { id: /^[0-9a-f]{24}$/, require_key_approval: true });
  await client.upsert('portal-configuration', PORTAL_CONFIGURATION_ID, { disable_signup: true });
  t.match(d.configuration(), { id, disable_signup: true, require_key_approval: false }, 'the same configuration, replaced');
  t.equal(d.count('PUT', '/api/portal/configuration'), 1);
  t.match(await client.get('portal-configuration', PORTAL_CONFIGURATION_ID), { id, disable_signup: true });
  d.resetCalls();
  await client.remove('portal-configuration', PORTAL_CONFIGURATION_ID);
  t.equal(d.calls.length, 0, 'no call: the API has no DELETE for it');
  t.ok(d.configuration(), 'it stays');
});

t.test('descriptions have nothing of their own on the Dashboard: every id reads as {}, writes send nothing', async (t) => {
  const { d, client } = await setup(t);
  t.strictSame(await client.get('portal-description', 'any'), {});
  t.strictSame((await client.list('portal-description')).get('whatever'), {});
  await client.upsert('portal-description', 'any', { name: 'x' });
  await client.remove('portal-description', 'any');
  t.equal(d.calls.length, 0, 'no call at all');
});

t.test('a Tyk Gateway refuses every portal kind, saying the portal needs a Dashboard, without a call', async (t) => {
  const gw = await startFakeTykGateway();
  t.teardown(() => gw.close());
  const client = new TykGatewayClient({ transport: UNDICI, name: 'default', url: gw.url, secret: gw.secret, timeoutMs: 2000 });
  t.teardown(() => client.close());
  for (const kind of ['portal-description', 'portal-catalogue', 'portal-configuration'] as const) {
    for (const call of [() => client.list(kind), () => client.get(kind, 'x'), () => client.upsert(kind, 'x', {}), () => client.remove(kind, 'x')]) {
      const err = await call().catch((e: unknown) => e);
      t.type(err, GatewayUnsupportedError, kind);
      t.match((err as Error).message, /needs the Tyk Dashboard's developer portal: gateway default is a Tyk Gateway/);
    }
  }
  t.equal(gw.count('*', /./), 0, 'nothing sent');
});
