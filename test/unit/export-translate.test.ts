/**
 * The export's pure parts (lib/export): names (DNS-1123, unique), ids pinned, what the gateway
 * adds left out, a policy's grants by resource or by raw id, the notes for what cannot be
 * expressed, the ADOPT_NAMESPACES verdict, the YAML documents and file names, and the
 * command's arguments. Exactness: the exported spec builds, through our payload code, a body
 * whose managed hash over the gateway's echo is its own hash (the gateway agrees with every
 * field it names).
 */
import { loadAllYaml } from '@kubernetes/client-node';
import t from 'tap';
import { parseExportArgs } from '../../lib/cli/export.js';
import { UsageError } from '../../lib/cli/io.js';
import { main } from '../../lib/cli/main.js';
import { hashOf, managedHash } from '../../lib/engine/hash.js';
import { defaultId } from '../../lib/engine/ids.js';
import { dnsName, NameSet } from '../../lib/export/names.js';
import { type Exported, exportResources, type GatewayContents, OAS_KEY, withoutZeros } from '../../lib/export/translate.js';
import { documentOf, fileName, multiDocument } from '../../lib/export/yaml.js';
import type { JsonObject } from '../../lib/gateway/types.js';
import { apiDefinitionPayload } from '../../lib/kinds/api-definition/payload.js';
import { securityPolicyPayload } from '../../lib/kinds/security-policy/payload.js';
import { configMapRefOf, oasDocumentOf, oasIdOf, tykOasPayload } from '../../lib/kinds/tyk-oas-api-definition/payload.js';
import type { KubeObject } from '../../lib/kube/types.js';
import { oasDocument } from '../fixtures/builders.js';

/** A Classic API as the gateway's list echoes it: what was stored over Go zero values, and an id it made up. */
function echoedApi(stored: JsonObject): JsonObject {
  return {
    id: '65f0c1d2e3f4a5b6c7d8e9f0',
    name: '',
    api_id: '',
    org_id: '',
    use_keyless: false,
    use_basic_auth: false,
    active: false,
    is_oas: false,
    enable_jwt: false,
    jwt_default_policies: null,
    tags: [],
    certificates: null,
    proxy: { listen_path: '', target_url: '', strip_listen_path: false, preserve_host_header: false, transport: { ssl_ciphers: null, ssl_min_version: 0, proxy_url: '' } },
    auth_configs: { authToken: { auth_header_name: '', use_param: false } },
    version_data: { not_versioned: false, default_version: '', versions: {} },
    ...stored,
  };
}

function echoedPolicy(stored: JsonObject): JsonObject {
  return { _id: '', id: '', name: '', org_id: '', rate: 0, per: 0, quota_max: 0, active: false, state: '', tags: null, access_rights: {}, partitions: { quota: false, rate_limit: false }, ...stored };
}

const VERSIONED = { not_versioned: true, default_version: 'Default', versions: { Default: { name: 'Default' } } };

function contents(parts: Partial<Record<keyof GatewayContents, Record<string, JsonObject>>>): GatewayContents {
  return {
    apis: new Map(Object.entries(parts.apis ?? {})),
    oas: new Map(Object.entries(parts.oas ?? {})),
    policies: new Map(Object.entries(parts.policies ?? {})),
  };
}

function find(resources: readonly Exported[], kind: string, name: string): Exported {
  const r = resources.find((x) => x.object.kind === kind && x.object.metadata.name === name);
  if (!r) throw new Error(`no ${kind}/${name} among ${resources.map((x) => `${x.object.kind}/${x.object.metadata.name}`).join(', ')}`);
  return r;
}

t.test('dnsName: a DNS-1123 label from any name', async (t) => {
  t.equal(dnsName('Orders API', 'api'), 'orders-api');
  t.equal(dnsName('  Users (v2) ', 'api'), 'users-v2');
  t.equal(dnsName('Café Ünïcode', 'api'), 'cafe-unicode', 'accents folded');
  t.equal(dnsName('a.b_c', 'api'), 'a-b-c', 'dots and underscores become dashes (a label)');
  t.equal(dnsName('---', 'api'), 'api', 'nothing usable: the fallback');
  t.equal(dnsName('', 'policy'), 'policy');
  const long = dnsName(`${'x'.repeat(62)}-y`, 'api');
  t.equal(long, 'x'.repeat(62), 'at most 63 characters, never ending in a dash');
  t.match(dnsName('Ünicode 日本語 API', 'api'), /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
});

t.test('NameSet: unique names, suffixed within 63 characters', async (t) => {
  const names = new NameSet();
  t.equal(names.take('Orders', 'api'), 'orders');
  t.equal(names.take('orders', 'api'), 'orders-2');
  t.equal(names.take('ORDERS!', 'api'), 'orders-3');
  t.equal(names.take('', 'api'), 'api');
  t.equal(names.take('', 'api'), 'api-2');
  const long = 'z'.repeat(63);
  t.equal(names.take(long, 'api'), long);
  const second = names.take(long, 'api');
  t.equal(second, `${'z'.repeat(61)}-2`);
  t.ok(second.length <= 63);
});

t.test('withoutZeros: what the echo fills with Go zero values is left out; array items keep their number', async (t) => {
  t.same(withoutZeros({ a: '', b: 0, c: false, d: null, e: [], f: {}, g: { h: '' }, keep: 1, t: true, s: 'x' }), { keep: 1, t: true, s: 'x' });
  t.same(withoutZeros({ list: [{ url: '/a', methods: [], x: 0 }, 'b', 0] }), { list: [{ url: '/a' }, 'b', 0] }, 'items stripped, never dropped');
  t.same(withoutZeros({ list: [{ a: '', b: 0 }] }), { list: [{ a: '', b: 0 }] }, 'an item left empty stays whole (an empty object sent would be compared whole)');
  t.equal(withoutZeros({ a: { b: { c: '' } } }), undefined);
  t.equal(withoutZeros(-1), -1, 'a negative number (quota_max -1: unlimited) is not zero');
});

t.test('a Classic API: api_id pinned, the gateway’s own id and zero values left out, and the payload builds what it holds', async (t) => {
  const id = 'a1f0c2d3e4b5a6978899aabbccddeeff';
  const stored = {
    api_id: id,
    name: 'Orders API',
    use_keyless: true,
    active: true,
    tags: ['shop'],
    proxy: { listen_path: '/orders/', target_url: 'http://orders', strip_listen_path: true },
    version_data: VERSIONED,
  };
  const echo = echoedApi(stored);
  const result = exportResources(contents({ apis: { [id]: echo } }), { namespace: 'shop' });
  const api = find(result.resources, 'ApiDefinition', 'orders-api');
  t.same(api.object, { apiVersion: 'tyk.tyk.io/v1alpha1', kind: 'ApiDefinition', metadata: { name: 'orders-api', namespace: 'shop' }, spec: stored });
  t.equal(api.id, id);
  t.same(result.notes, [], 'nothing to say');
  t.equal(result.needsAdoptNamespace, true, 'an id other than base64url(shop/orders-api): ADOPT_NAMESPACES');
  const built = apiDefinitionPayload(api.object, id, undefined);
  if (!built.ok) throw new Error(built.reason);
  t.equal(managedHash(echo, built.body), `m:${hashOf(built.body)}`, 'the gateway agrees with every field of the body');
});

t.test('an API under its default id needs no ADOPT_NAMESPACES', async (t) => {
  const id = defaultId('team', 'httpbin');
  const result = exportResources(contents({ apis: { [id]: echoedApi({ api_id: id, name: 'httpbin', version_data: VERSIONED }) } }), { namespace: 'team' });
  t.equal(result.needsAdoptNamespace, false);
  const other = exportResources(contents({ apis: { [id]: echoedApi({ api_id: id, name: 'httpbin', version_data: VERSIONED }) } }), { namespace: 'elsewhere' });
  t.equal(other.needsAdoptNamespace, true, 'the same object exported to another namespace is adopted under another id than its default');
});

t.test('a Tyk OAS API (its Classic form skipped): a ConfigMap with the document, its id in it, dbId left out; the payload builds what it holds', async (t) => {
  const id = '9c8b7a6f5e4d3c2b1a0f9e8d7c6b5a49';
  const doc = oasDocument('Petstore', { id, listenPath: '/petstore/' });
  const ext = doc['x-tyk-api-gateway'] as JsonObject;
  const echo = { ...doc, servers: [{ url: 'http://127.0.0.1:8080/petstore/' }], 'x-tyk-api-gateway': { ...ext, info: { ...(ext.info as JsonObject), dbId: '65f0c1d2e3f4a5b6c7d8e9f1' } } };
  const result = exportResources(contents({ apis: { [id]: echoedApi({ api_id: id, name: 'Petstore', is_oas: true }) }, oas: { [id]: echo } }), { namespace: 'pets' });
  t.same(
    result.resources.map((r) => `${r.object.kind}/${r.object.metadata.name}`),
    ['ConfigMap/petstore', 'TykOasApiDefinition/petstore'],
    'the Classic form of an OAS API is not exported twice',
  );
  const cm = find(result.resources, 'ConfigMap', 'petstore').object;
  const api = find(result.resources, 'TykOasApiDefinition', 'petstore');
  t.same(api.object.spec, { tykOAS: { configmapRef: { name: 'petstore', namespace: 'pets', keyName: OAS_KEY } } });
  const ref = configMapRefOf(api.object);
  if ('invalid' in ref) throw new Error(ref.invalid);
  const read = oasDocumentOf(ref, cm);
  if (!read.ok) throw new Error('waiting' in read ? read.waiting : read.invalid);
  t.notOk('dbId' in ((read.doc['x-tyk-api-gateway'] as JsonObject).info as JsonObject), 'the Dashboard’s and gateway’s own dbId left out');
  t.equal(oasIdOf(read.doc, api.object), id, 'the id is pinned in the document');
  const built = tykOasPayload(api.object, read.doc, id);
  if (!built.ok) throw new Error('not built');
  t.equal(managedHash(echo, built.body), `m:${hashOf(built.body)}`, 'the gateway agrees with every field of the body');
});

t.test('a policy: spec.id pinned, grants by resource where the API is exported, by raw id where not, and notes', async (t) => {
  const orders = 'a1f0c2d3e4b5a6978899aabbccddeeff';
  const pets = '9c8b7a6f5e4d3c2b1a0f9e8d7c6b5a49';
  const pol = '64b0f1c2d3e4f5a6b7c8d9e0';
  const access = (id: string, name: string, versions: string[]) => ({ api_id: id, api_name: name, versions, allowed_urls: null, limit: { rate: 0, per: 0 } });
  const echo = echoedPolicy({
    _id: pol,
    id: pol,
    name: 'Gold plan',
    active: true,
    state: 'active',
    quota_max: -1,
    access_rights: { [orders]: access(orders, 'Orders', ['Default']), [pets]: access(pets, 'Petstore', ['Default']), gone: access('gone', 'Retired', []) },
  });
  const result = exportResources(
    contents({
      apis: { [orders]: echoedApi({ api_id: orders, name: 'Orders API', version_data: VERSIONED }) },
      oas: { [pets]: oasDocument('Petstore', { id: pets }) },
      policies: { [pol]: echo },
    }),
    { namespace: 'shop' },
  );
  const policy = find(result.resources, 'SecurityPolicy', 'gold-plan');
  t.equal(policy.object.spec?.id, pol);
  t.notOk('_id' in (policy.object.spec ?? {}));
  t.same(
    policy.object.spec?.access_rights_array,
    [
      { name: 'petstore', namespace: 'shop', kind: 'TykOasApiDefinition', versions: ['Default'] },
      { name: 'orders-api', namespace: 'shop', versions: ['Default'] },
    ],
    'in the order of their ids',
  );
  t.same(policy.object.spec?.access_rights, { gone: { api_id: 'gone', api_name: 'Retired' } }, 'kept under its raw id');
  t.same(
    result.notes.filter((n) => n.subject === 'Gold plan').map((n) => n.what),
    [
      `access_rights[${orders}].api_name: "Orders" becomes "Orders API" (the name of the ApiDefinition it names) on import`,
      'access_rights: the API gone is not among the exported APIs; kept under its raw id in spec.access_rights',
    ],
    'what the import changes is said; the OAS grant names the document’s name, so nothing to say',
  );
  t.same(policy.notes, [
    `access_rights[${orders}].api_name: "Orders" becomes "Orders API" (the name of the ApiDefinition it names) on import`,
    'access_rights: the API gone is not among the exported APIs; kept under its raw id in spec.access_rights',
  ]);
  // the import resolves each API to its id and name: the body then differs from the echo only where a note says
  const names: Record<string, { id: string; name: string }> = { 'orders-api': { id: orders, name: 'Orders' }, petstore: { id: pets, name: 'Petstore' } };
  const built = securityPolicyPayload(policy.object, pol, undefined, (ref) => ({ ok: true, ...(names[ref.name] as { id: string; name: string }) }));
  if (!('ok' in built) || !built.ok) throw new Error('not built');
  t.equal(managedHash(echo, built.body), `m:${hashOf(built.body)}`, 'with the names the gateway holds, the body is what it holds');
});

t.test('what cannot be expressed exactly is said: certificate ids, no versions, another org, a value the CRD refuses', async (t) => {
  const id = 'c0ffee00c0ffee00c0ffee00c0ffee00';
  const echo = echoedApi({ api_id: id, name: 'Legacy', org_id: 'org-a', certificates: ['org-a0123abcd'], active: 'yes', proxy: { listen_path: 7, target_url: 'http://x' } });
  const result = exportResources(contents({ apis: { [id]: echo }, policies: { p1: echoedPolicy({ id: 'p1', name: 'Bad state', state: 'paused' }) } }), { namespace: 'default', orgId: 'org-b' });
  t.same(
    result.notes.map((n) => `${n.subject}: ${n.what}`),
    [
      "Legacy: certificates: kept as the gateway's certificate ids; no Secret of the cluster holds them (certificate_secret_names and the *_refs fields name Secrets instead)",
      'Legacy: version_data: the gateway holds no versions; the import adds the unversioned "Default" version (without one, Tyk answers 403 to every call)',
      'Legacy: org_id: org-a becomes org-b (TYK_ORG) on import',
      'Legacy: active: "yes" is not what the ApiDefinition CRD allows (a boolean); left out',
      'Legacy: proxy.listen_path: 7 is not a string, as the ApiDefinition CRD requires; left out',
      'Bad state: state: "paused" is not what the SecurityPolicy CRD allows (active, draft, deny); left out',
    ],
  );
  const api = find(result.resources, 'ApiDefinition', 'legacy');
  t.same(api.object.spec?.certificates, ['org-a0123abcd'], 'kept');
  t.notOk('active' in (api.object.spec ?? {}), 'left out');
  t.same(api.object.spec?.proxy, { target_url: 'http://x' });
  t.notOk('state' in (find(result.resources, 'SecurityPolicy', 'bad-state').object.spec ?? {}));
});

t.test('the same gateway exports the same names, whatever order its lists come in', async (t) => {
  const a = echoedApi({ api_id: 'b', name: 'Same', version_data: VERSIONED });
  const b = echoedApi({ api_id: 'a', name: 'Same', version_data: VERSIONED });
  const one = exportResources(contents({ apis: { b: a, a: b } }), { namespace: 'default' });
  const two = exportResources(contents({ apis: { a: b, b: a } }), { namespace: 'default' });
  const named = (r: ReturnType<typeof exportResources>) => r.resources.map((x) => `${x.object.metadata.name}=${x.id}`);
  t.same(named(one), ['same=a', 'same-2=b']);
  t.same(named(two), named(one));
});

t.test('YAML: notes as comments, <kind>-<name>.yaml, documents that load back as written', async (t) => {
  const result = exportResources(contents({ apis: { x: echoedApi({ api_id: 'x', name: 'X', certificates: ['c1'], version_data: VERSIONED }) }, oas: { o: oasDocument('O', { id: 'o' }) } }), {
    namespace: 'default',
  });
  const api = find(result.resources, 'ApiDefinition', 'x');
  t.equal(fileName(api), 'apidefinition-x.yaml');
  t.equal(fileName(find(result.resources, 'ConfigMap', 'o')), 'configmap-o.yaml');
  t.match(documentOf(api), /^# export: certificates: kept as the gateway's certificate ids/);
  const loaded = (loadAllYaml(multiDocument(result.resources)) as unknown[]).map((o) => JSON.parse(JSON.stringify(o)) as KubeObject);
  t.same(
    loaded,
    result.resources.map((r) => r.object),
    'what loads back is what was exported',
  );
});

t.test('arguments: --namespace, --out, = forms; a bad one is a UsageError naming it', async (t) => {
  t.same(parseExportArgs([]), { namespace: 'default' });
  t.same(parseExportArgs(['--namespace', 'team-a', '--out', 'dir']), { namespace: 'team-a', out: 'dir' });
  t.same(parseExportArgs(['--namespace=team-b', '-o', 'x/y']), { namespace: 'team-b', out: 'x/y' });
  t.same(parseExportArgs(['-n', 'c']), { namespace: 'c' });
  const bad: [string[], RegExp][] = [
    [['--namespace'], /--namespace needs a value/],
    [['--namespace', '--out', 'x'], /--namespace needs a value/],
    [['--namespace', 'Team_A'], /--namespace "Team_A" is not a valid namespace name/],
    [['--namespace', 'x'.repeat(64)], /is not a valid namespace name/],
    [['--out='], /--out needs a directory/],
    [['--verbose'], /unknown argument "--verbose"/],
    [['extra'], /unknown argument "extra"/],
  ];
  for (const [args, message] of bad) t.throws(() => parseExportArgs(args), message, args.join(' '));
  t.throws(() => parseExportArgs(['--bogus']), UsageError);
});

t.test('the command through main(): --help, a bad argument (exit 2), a missing setting (exit 1), one line each, no stack', async (t) => {
  const run = async (argv: string[], env: Record<string, string> = {}) => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await main(argv, { out: (l) => out.push(l), err: (l) => err.push(l), env });
    return { code, out, err };
  };
  const help = await run(['export', '--help']);
  t.equal(help.code, 0);
  t.match(help.out.join('\n'), /--namespace NS[\s\S]*--out DIR[\s\S]*Examples:[\s\S]*ADOPT_NAMESPACES/);
  const listed = await run(['--help']);
  t.match(listed.out.join('\n'), /export\s+write the resources that adopt what a gateway already serves/);
  const bad = await run(['export', '--namespace', 'Bad_Name']);
  t.same(bad, { code: 2, out: [], err: [`gateway-reconciler export: --namespace "Bad_Name" is not a valid namespace name (lower-case letters, digits and '-')`] });
  const unset = await run(['export'], { TYK_AUTH: 'a-secret-value-1234', HTTP_TIMEOUT_MS: '5' });
  t.equal(unset.code, 1);
  t.equal(unset.err.length, 1, 'one line');
  t.match(unset.err[0], /^gateway-reconciler export: TYK_URL: is required.*; HTTP_TIMEOUT_MS: must be milliseconds from 100 to 120000, got "5"$/);
  t.notMatch(unset.err[0] as string, /a-secret-value-1234|\n|at /, 'no secret, no stack');
});
