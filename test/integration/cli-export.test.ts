/**
 * `gateway-reconciler export` end to end: a hand-managed Tyk Gateway (APIs and policies written
 * through its own API, as curl would, under ids of its own), `export` run in process through
 * the command line's main(), its YAML applied to an EMPTY cluster with an EMPTY store (a
 * second world, on the same gateway, with the ADOPT_NAMESPACES the export asked for), then
 * runs of the reconciler: every resource adopts its object (nothing created beside it, nothing
 * refused); the first run writes each object once (the engine writes what it adopts without a
 * record of its own) with what the gateway already held, so the gateway holds the same objects
 * afterwards; the run after makes no write. The same against a Tyk Dashboard, and from a Tyk
 * Gateway 3.1.
 * Also: the exported spec builds, through our payload code, a body the gateway already agrees
 * with on every field it names (the engine's managed hash of the gateway's echo is the body's).
 */
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadAllYaml } from '@kubernetes/client-node';
import t from 'tap';
import { request } from 'undici';
import { main } from '../../lib/cli/main.js';
import { hashOf, managedHash } from '../../lib/engine/hash.js';
import type { JsonObject } from '../../lib/gateway/types.js';
import { apiDefinitionPayload } from '../../lib/kinds/api-definition/payload.js';
import { securityPolicyPayload } from '../../lib/kinds/security-policy/payload.js';
import type { KubeObject } from '../../lib/kube/types.js';
import { oasDocument } from '../fixtures/builders.js';
import { type World, worldFor } from '../harness/world.js';

const NS = 'imported';

/** A Tyk Gateway's own API, as a person with curl uses it. */
async function tykCall(w: World, method: 'POST' | 'GET', path: string, body?: unknown): Promise<unknown> {
  const res = await request(`${w.tyk.url}${path}`, {
    method,
    headers: { 'x-tyk-authorization': w.tyk.secret, 'content-type': 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.body.text();
  if (res.statusCode >= 300) throw new Error(`${method} ${path}: ${res.statusCode} ${text}`);
  return JSON.parse(text);
}

const ORDERS = 'a1f0c2d3e4b5a6978899aabbccddeeff';
const ORDERS_COPY = '0f1e2d3c4b5a69788796a5b4c3d2e1f0';
const USERS = '5f0e4b1c2d3a4e5f60718293a4b5c6d7';
const PETSTORE = '9c8b7a6f5e4d3c2b1a0f9e8d7c6b5a49';
const GOLD = '64b0f1c2d3e4f5a6b7c8d9e0';
const PARTNER = '64b0f1c2d3e4f5a6b7c8d9e1';
const PETS = '64b0f1c2d3e4f5a6b7c8d9e2';

/** What a team built by hand: three Classic APIs (two of the same name), one Tyk OAS API, two policies (one granting an API the gateway no longer has). */
async function handManagedGateway(w: World): Promise<void> {
  const version = { not_versioned: true, default_version: 'Default', versions: { Default: { name: 'Default', use_extended_paths: true } } };
  await tykCall(w, 'POST', '/tyk/apis', {
    api_id: ORDERS,
    name: 'Orders API',
    use_keyless: true,
    active: true,
    protocol: 'http',
    tags: ['shop', 'orders'],
    enable_context_vars: true,
    proxy: { listen_path: '/orders/', target_url: 'http://orders.shop.svc:8080', strip_listen_path: true },
    version_data: version,
  });
  await tykCall(w, 'POST', '/tyk/apis', {
    api_id: ORDERS_COPY,
    name: 'Orders API',
    use_keyless: true,
    active: false,
    proxy: { listen_path: '/orders-old/', target_url: 'http://orders-old.shop.svc:8080' },
    version_data: version,
  });
  await tykCall(w, 'POST', '/tyk/apis', {
    api_id: USERS,
    name: 'Users (v2)',
    use_keyless: false,
    use_standard_auth: true,
    auth: { auth_header_name: 'Authorization' },
    active: true,
    proxy: { listen_path: '/users/', target_url: 'http://users.svc:8080', strip_listen_path: true },
    version_data: version,
    global_rate_limit: { rate: 100, per: 60 },
  });
  await tykCall(w, 'POST', '/tyk/apis/oas', oasDocument('Petstore', { id: PETSTORE, listenPath: '/petstore/' }));
  await tykCall(w, 'POST', '/tyk/policies', {
    id: GOLD,
    name: 'Gold plan',
    active: true,
    state: 'active',
    rate: 1000,
    per: 60,
    quota_max: -1,
    access_rights: {
      [ORDERS]: { api_id: ORDERS, api_name: 'Orders API', versions: ['Default'] },
      [USERS]: { api_id: USERS, api_name: 'Users (v2)', versions: ['Default'], allowed_urls: [{ url: '/users/me', methods: ['GET'] }] },
    },
  });
  await tykCall(w, 'POST', '/tyk/policies', {
    id: PETS,
    name: 'Pets',
    active: true,
    state: 'active',
    access_rights: { [PETSTORE]: { api_id: PETSTORE, api_name: 'Petstore', versions: ['Default'] } },
  });
  await tykCall(w, 'POST', '/tyk/policies', {
    id: PARTNER,
    name: 'Partner',
    active: true,
    state: 'draft',
    access_rights: { gone0000000000000000000000000000: { api_id: 'gone0000000000000000000000000000', api_name: 'Retired', versions: ['Default'] } },
  });
  w.tyk.reloadNow();
}

/** main() with the output captured. */
async function exportCli(args: string[], env: Record<string, string>): Promise<{ code: number; out: string[]; err: string[] }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(['export', ...args], { out: (l) => out.push(l), err: (l) => err.push(l), env });
  return { code, out, err };
}

function byKindName(objects: readonly KubeObject[]): Map<string, KubeObject> {
  return new Map(objects.map((o) => [`${o.kind}/${o.metadata.name}`, o]));
}

/** Plain objects (loadAllYaml makes a ConfigMap a V1ConfigMap). */
function plain(o: unknown): KubeObject {
  return JSON.parse(JSON.stringify(o)) as KubeObject;
}

t.test('export from a hand-managed Tyk Gateway, then import into an empty cluster and store: adopted as it is, then silent', async (t) => {
  const w1 = await worldFor(t);
  await handManagedGateway(w1);
  const env = { TYK_URL: w1.tyk.url, TYK_AUTH: w1.tyk.secret };

  const { code, out, err } = await exportCli(['--namespace', NS], env);
  t.equal(code, 0, `export succeeds: ${err.join(' | ')}`);
  t.notOk(err.join('\n').includes(w1.tyk.secret), 'the secret is never printed');
  t.ok(
    err.some(
      (l) => l === `export: the import needs ADOPT_NAMESPACES=${NS} (or a list holding ${NS}, or *) on the reconciler: these resources adopt gateway objects under ids other than their default ones`,
    ),
    'it says what setting the import needs',
  );
  t.ok(
    err.includes('export: Partner: access_rights: the API gone0000000000000000000000000000 is not among the exported APIs; kept under its raw id in spec.access_rights'),
    'a grant of an API not exported is kept under its id, and said',
  );
  t.ok(
    err.some((l) => l.startsWith('export: reading ')),
    'progress on stderr',
  );
  const objects = (loadAllYaml(out.join('\n')) as unknown[]).map(plain);
  const found = byKindName(objects);
  t.same(
    [...found.keys()].sort(),
    [
      'ApiDefinition/orders-api',
      'ApiDefinition/orders-api-2',
      'ApiDefinition/users-v2',
      'ConfigMap/petstore',
      'SecurityPolicy/gold-plan',
      'SecurityPolicy/partner',
      'SecurityPolicy/pets',
      'TykOasApiDefinition/petstore',
    ],
    'one resource per API and policy, named from their names, unique',
  );
  for (const o of objects) t.equal(o.metadata.namespace, NS, `${o.kind}/${o.metadata.name} goes to the namespace asked`);
  // the two APIs named "Orders API" are taken in the order of their ids
  t.equal(found.get('ApiDefinition/orders-api')?.spec?.api_id, ORDERS_COPY, 'the first of two same names keeps it');
  const orders = found.get('ApiDefinition/orders-api-2') as KubeObject;
  t.equal(orders.spec?.api_id, ORDERS, 'the API id is pinned');
  t.notOk('id' in (orders.spec ?? {}), 'the id the gateway made up is left out');
  t.notOk('use_basic_auth' in (orders.spec ?? {}), 'the zero values the gateway echoes are left out');
  const gold = found.get('SecurityPolicy/gold-plan') as KubeObject;
  t.equal(gold.spec?.id, GOLD, 'the policy id is pinned');
  t.same(
    gold.spec?.access_rights_array,
    [
      { name: 'users-v2', namespace: NS, versions: ['Default'], allowed_urls: [{ url: '/users/me', methods: ['GET'] }] },
      { name: 'orders-api-2', namespace: NS, versions: ['Default'] },
    ],
    'the grants name the exported APIs by resource (in the order of their ids)',
  );

  // the exported specs build, through our payload code, what the gateway already holds
  const echo = { api: w1.tyk.loaded('api'), policy: w1.tyk.loaded('policy'), oas: w1.tyk.loaded('oas') };
  for (const o of objects.filter((x) => x.kind === 'ApiDefinition')) {
    const built = apiDefinitionPayload(o, o.spec?.api_id as string, undefined);
    if (!built.ok) throw new Error(built.reason);
    t.equal(managedHash(echo.api.get(o.spec?.api_id as string), built.body), `m:${hashOf(built.body)}`, `${o.metadata.name}: the gateway agrees with every field the body names`);
  }
  const partner = found.get('SecurityPolicy/partner') as KubeObject;
  const partnerBody = securityPolicyPayload(partner, PARTNER, undefined, () => ({ ok: false, why: 'none' }));
  if (!('ok' in partnerBody) || !partnerBody.ok) throw new Error('the partner policy did not build');
  t.equal(managedHash(echo.policy.get(PARTNER), partnerBody.body), `m:${hashOf(partnerBody.body)}`, 'partner: the gateway agrees with every field the body names');
  const before = { api: structuredClone([...echo.api]), policy: structuredClone([...echo.policy]), oas: structuredClone([...echo.oas]) };

  // an empty cluster and an empty store, on the same gateway, with the setting the export asked for
  const w2 = await worldFor(t, { env: { ...env, ADOPT_NAMESPACES: NS } });
  for (const o of [...objects].sort((a, b) => Number(b.kind === 'ConfigMap') - Number(a.kind === 'ConfigMap'))) await w2.create(o);
  w1.tyk.resetCalls();
  const first = await w2.tick();
  const ours = first.objects.filter((o) => o.namespace === NS);
  t.equal(ours.length, 7, 'every custom resource was looked at');
  // the gateway holds exactly what each resource would send: adopted as it is, nothing written
  for (const o of ours) t.match(o, { action: 'NOOP', result: 'synced', reason: 'adopted from gateway' }, `${o.kind}/${o.name} adopted its object as it is, refused nothing, created nothing`);
  t.equal(w1.tyk.count('DELETE'), 0, 'nothing deleted');
  const after = { api: [...w1.tyk.loaded('api')], policy: [...w1.tyk.loaded('policy')], oas: [...w1.tyk.loaded('oas')] };
  t.same(after, before, 'the gateway holds the same objects, field for field, after the import’s first run: no object added, none changed');
  t.equal(w1.tyk.writes(), 0, 'the import’s first run makes no gateway write');

  w1.tyk.resetCalls();
  const second = await w2.tick();
  t.equal(w1.tyk.writes(), 0, 'the next run makes no gateway write');
  for (const o of second.objects.filter((x) => x.namespace === NS)) t.match(o, { action: 'NOOP', reason: 'unchanged', result: 'unchanged' }, `${o.kind}/${o.name} unchanged`);
});

t.test('export --out writes one file per resource, named <kind>-<name>.yaml, with the notes as comments', async (t) => {
  const w = await worldFor(t);
  await handManagedGateway(w);
  const dir = await mkdtemp(join(tmpdir(), 'gr-export-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const { code, out, err } = await exportCli(['--out', join(dir, 'x')], { TYK_URL: w.tyk.url, TYK_AUTH: w.tyk.secret });
  t.equal(code, 0, err.join(' | '));
  t.same(out, [], 'nothing on stdout');
  const files = (await readdir(join(dir, 'x'))).sort();
  t.same(files, [
    'apidefinition-orders-api-2.yaml',
    'apidefinition-orders-api.yaml',
    'apidefinition-users-v2.yaml',
    'configmap-petstore.yaml',
    'securitypolicy-gold-plan.yaml',
    'securitypolicy-partner.yaml',
    'securitypolicy-pets.yaml',
    'tykoasapidefinition-petstore.yaml',
  ]);
  const partner = await readFile(join(dir, 'x', 'securitypolicy-partner.yaml'), 'utf8');
  t.match(partner, /^# export: access_rights: the API gone0+ is not among the exported APIs/, 'the note is a comment at the top');
  const [doc] = loadAllYaml(partner) as JsonObject[];
  t.match(doc, { kind: 'SecurityPolicy', metadata: { name: 'partner', namespace: 'default' }, spec: { id: PARTNER } });
});

t.test('export: a gateway that refuses the secret fails with one line, exit 1, no secret', async (t) => {
  const w = await worldFor(t);
  const { code, out, err } = await exportCli([], { TYK_URL: w.tyk.url, TYK_AUTH: 'wrong-secret-value' });
  t.equal(code, 1);
  t.same(out, []);
  const last = err.at(-1) ?? '';
  t.match(last, /^gateway-reconciler export: /);
  t.notMatch(err.join('\n'), /wrong-secret-value/);
});

/** The Dashboard's own API, as a person with curl uses it. */
async function dashboardCall(w: World, path: string, body: unknown): Promise<unknown> {
  const dashboard = w.dashboard;
  if (!dashboard) throw new Error('not a pro world');
  const res = await request(`${dashboard.url}${path}`, { method: 'POST', headers: { authorization: dashboard.secret, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await res.body.text();
  if (res.statusCode >= 300) throw new Error(`POST ${path}: ${res.statusCode} ${text}`);
  return JSON.parse(text);
}

t.test('TYK_MODE=pro: export from a hand-managed Tyk Dashboard, import into an empty cluster and store, then silent', async (t) => {
  const w1 = await worldFor(t, { mode: 'pro' });
  const dashboard = w1.dashboard;
  if (!dashboard) throw new Error('no Dashboard');
  const version = { not_versioned: true, default_version: 'Default', versions: { Default: { name: 'Default' } } };
  await dashboardCall(w1, '/api/apis', {
    api_definition: {
      api_id: ORDERS,
      name: 'Orders API',
      use_keyless: true,
      active: true,
      proxy: { listen_path: '/orders/', target_url: 'http://orders:8080', strip_listen_path: true },
      version_data: version,
    },
  });
  await dashboardCall(w1, '/api/apis/oas', oasDocument('Petstore', { id: PETSTORE, listenPath: '/petstore/' }));
  // made in the Dashboard's UI: no id of its own, only the Dashboard's _id
  await dashboardCall(w1, '/api/portal/policies', {
    name: 'Gold plan',
    active: true,
    state: 'active',
    rate: 100,
    per: 1,
    access_rights: {
      [ORDERS]: { api_id: ORDERS, api_name: 'Orders API', versions: ['Default'] },
      [PETSTORE]: { api_id: PETSTORE, api_name: 'Petstore', versions: ['Default'] },
    },
  });
  const mid = [...dashboard.policies().keys()][0] as string;
  const env = { TYK_MODE: 'pro', TYK_URL: dashboard.url, TYK_AUTH: dashboard.secret, TYK_ORG: dashboard.orgId };

  const { code, out, err } = await exportCli(['--namespace', NS], env);
  t.equal(code, 0, err.join(' | '));
  t.ok(
    err.includes(`export: Gold plan: id: the policy has no id of its own; the import sets it to ${mid} (its Dashboard _id), as Tyk Operator adopts a Dashboard policy`),
    'a policy without an id of its own is pinned by its _id, and said',
  );
  const objects = (loadAllYaml(out.join('\n')) as unknown[]).map(plain);
  const found = byKindName(objects);
  t.same([...found.keys()].sort(), ['ApiDefinition/orders-api', 'ConfigMap/petstore', 'SecurityPolicy/gold-plan', 'TykOasApiDefinition/petstore']);
  const gold = found.get('SecurityPolicy/gold-plan') as KubeObject;
  t.equal(gold.spec?.id, mid, 'spec.id is the Dashboard’s _id');
  for (const owned of ['_id', 'date_created', 'last_updated']) t.notOk(owned in (gold.spec ?? {}), `the Dashboard's ${owned} is left out`);
  t.same(
    gold.spec?.access_rights_array,
    [
      { name: 'petstore', namespace: NS, kind: 'TykOasApiDefinition', versions: ['Default'] },
      { name: 'orders-api', namespace: NS, versions: ['Default'] },
    ],
    'granted by resource',
  );
  const apisBefore = structuredClone([...dashboard.apis()]);
  const oasBefore = structuredClone([...dashboard.oasApis()]);
  const policyBefore = structuredClone(dashboard.policies().get(mid));

  const w2 = await worldFor(t, { mode: 'pro', env: { ...env, ADOPT_NAMESPACES: NS } });
  for (const o of [...objects].sort((a, b) => Number(b.kind === 'ConfigMap') - Number(a.kind === 'ConfigMap'))) await w2.create(o);
  dashboard.resetCalls();
  const first = await w2.tick();
  const ours = first.objects.filter((o) => o.namespace === NS);
  t.equal(ours.length, 3);
  for (const o of ours) t.match(o, { result: 'synced', reason: 'adopted from gateway' }, `${o.kind}/${o.name} adopted its object`);
  t.same(
    ours.filter((o) => o.action !== 'NOOP').map((o) => `${o.kind}/${o.name}`),
    ['SecurityPolicy/gold-plan'],
    'the APIs adopted as they are; the policy written once, to carry the id the import pins (it had none of its own)',
  );
  t.equal(dashboard.count('DELETE'), 0, 'nothing deleted');
  t.equal(dashboard.writes(), 1, 'that one write, no more');
  t.same([...dashboard.apis()], apisBefore, 'the APIs are as they were');
  t.same([...dashboard.oasApis()], oasBefore, 'the OAS APIs are as they were');
  t.equal(dashboard.policies().size, 1, 'no policy added');
  const { id: _newId, last_updated: _u1, ...policyAfter } = dashboard.policies().get(mid) ?? {};
  const { id: _oldId, last_updated: _u2, ...policyWas } = policyBefore ?? {};
  t.same(policyAfter, policyWas, 'the policy is as it was, but for the id it now carries (and the Dashboard’s last_updated)');
  t.equal(dashboard.policies().get(mid)?.id, mid);

  dashboard.resetCalls();
  const second = await w2.tick();
  t.equal(dashboard.writes(), 0, 'the next run makes no Dashboard write');
  for (const o of second.objects.filter((x) => x.namespace === NS)) t.match(o, { action: 'NOOP', reason: 'unchanged' }, `${o.kind}/${o.name} unchanged`);
});

t.test('export from a Tyk Gateway 3.1 (no OAS or policy API): its Classic APIs, and one line for each API it lacks', async (t) => {
  const w = await worldFor(t, { tyk: { version: '3.1' } });
  await tykCall(w, 'POST', '/tyk/apis', {
    api_id: ORDERS,
    name: 'Orders API',
    use_keyless: true,
    active: true,
    proxy: { listen_path: '/orders/', target_url: 'http://orders:8080' },
    version_data: { not_versioned: true, default_version: 'Default', versions: { Default: { name: 'Default' } } },
  });
  w.tyk.reloadNow();
  const { code, out, err } = await exportCli([], { TYK_URL: w.tyk.url, TYK_AUTH: w.tyk.secret });
  t.equal(code, 0, err.join(' | '));
  t.ok(
    err.some((l) => l.startsWith('export: no Tyk OAS APIs exported: ')),
    'the OAS API it lacks is said',
  );
  t.ok(
    err.some((l) => l.startsWith('export: no policies exported: ')),
    'the policy API it lacks is said',
  );
  const objects = (loadAllYaml(out.join('\n')) as unknown[]).map(plain);
  t.same(
    objects.map((o) => `${o.kind}/${o.metadata.name}/${String(o.spec?.api_id)}`),
    [`ApiDefinition/orders-api/${ORDERS}`],
  );
});
