/**
 * The Tyk fakes against the published contracts: the Tyk Dashboard and Tyk Gateway swagger
 * files in $TYK_REFERENCE_DIR (outside the repository: `npm run test:compat -- <folder>`).
 *
 * For every operation our clients use (and the fakes model), every status the swagger
 * documents is either produced by the fake, with the documented body (error bodies exactly;
 * success bodies with the same fields, ids matched by form), or listed here as reachable only
 * by fault injection, with the reason. Nothing documented is left unaccounted for, and the
 * fakes answer nothing undocumented on these operations except where the header of each fake
 * says why (the "absent" variants, a missing route). Success bodies carry no field the
 * schema lacks, and echo every field of the model. The Dashboard client's "absent" answers are
 * the swagger's. Every documented operation of the Dashboard's certificate store is either
 * modelled (as above) or listed as not modelled, and then the fake answers it 501. The classic
 * portal's catalogue and documentation routes, which only tyk-dashboard-sdk-swagger.yml
 * describes, are held to that file the same way.
 */
import { createHash, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Ajv, type ValidateFunction } from 'ajv';
import yaml from 'js-yaml';
import t, { type Test } from 'tap';
import { ABSENT_ANSWERS } from '../../lib/gateway/tyk-dashboard.js';
import { type FakeTykDashboard, type FakeTykDashboardOptions, startFakeTykDashboard } from '../fakes/tyk-dashboard.js';
import { type FakeTykGateway, type FakeTykOptions, startFakeTykGateway } from '../fakes/tyk-gateway.js';
import { referencePath } from './reference.js';

const DASHBOARD_FILE = referencePath('tyk-dashboard-swagger.yml');
const GATEWAY_FILE = referencePath('tyk-gateway-swagger.yml');

type Obj = Record<string, any>;

interface Res {
  status: number;
  body: any;
}

/** One documented answer the fake produces: how to provoke it. */
interface Scenario<F> {
  op: string;
  status: number;
  /** what the test checks beyond "same as the example" (e.g. the fake's own message) */
  note?: string;
  /** the body differs from the example only in its message: the status's other documented reason */
  otherMessage?: string;
  /** which of the documented examples (by name) the body is checked against; default the first */
  example?: string;
  /** the example's values are placeholders (why): only its fields are checked */
  placeholders?: string;
  run(fake: F): Promise<Res>;
}

function load(file: string): Obj {
  return yaml.load(readFileSync(file, 'utf8')) as Obj;
}

function deref(doc: Obj, v: any): any {
  if (v && typeof v === 'object' && typeof v.$ref === 'string' && v.$ref.startsWith('#/')) {
    return deref(
      doc,
      v.$ref
        .slice(2)
        .split('/')
        .reduce((o: any, k: string) => o?.[k], doc),
    );
  }
  return v;
}

function operation(doc: Obj, op: string): Obj {
  const [method = '', path = ''] = op.split(' ');
  const o = doc.paths?.[path]?.[method.toLowerCase()];
  if (!o) throw new Error(`the swagger has no ${op}`);
  return o;
}

function documentedStatuses(doc: Obj, op: string): number[] {
  return Object.keys(operation(doc, op).responses ?? {})
    .map(Number)
    .sort((a, b) => a - b);
}

/** The example body of a documented answer (inline, or the named example: by default the first). */
function example(doc: Obj, op: string, status: number, name?: string): any {
  const content = deref(doc, operation(doc, op).responses?.[String(status)])?.content?.['application/json'];
  if (!content) return undefined;
  if (content.example !== undefined) return content.example;
  const named = content.examples ?? {};
  return deref(doc, name === undefined ? Object.values(named)[0] : named[name])?.value;
}

/**
 * Every documented status of each operation is produced by a scenario (or is the auth answer
 * every operation gives), or listed as injected-only, and nothing is both.
 */
function accountedFor<F>(tt: Test, doc: Obj, ops: readonly string[], scenarios: readonly Scenario<F>[], injectedOnly: Record<string, Record<number, string>>, authStatus: number): void {
  for (const op of ops) {
    const produced = new Set([...scenarios.filter((s) => s.op === op).map((s) => s.status), authStatus]);
    const injected = Object.keys(injectedOnly[op] ?? {}).map(Number);
    tt.same(
      [...new Set([...produced, ...injected])].sort((a, b) => a - b),
      documentedStatuses(doc, op),
      `${op}: accounted for`,
    );
    tt.same(
      injected.filter((s) => produced.has(s)),
      [],
      `${op}: nothing listed twice`,
    );
  }
}

/** A produced answer against its scenario's documented example. */
function checkScenario<F>(tt: Test, doc: Obj, s: Scenario<F>, res: Res): void {
  const what = `${s.op} ${s.status}${s.note ? ` (${s.note})` : ''}`;
  tt.equal(res.status, s.status, `${what}: status`);
  const expected = example(doc, s.op, s.status, s.example);
  if (s.example !== undefined) tt.not(expected, undefined, `${what}: the swagger has the example ${s.example}`);
  if (s.placeholders === undefined) return conforms(tt, res.body, expected, what, s.otherMessage);
  tt.same(Object.keys(res.body ?? {}).sort(), Object.keys(expected).sort(), `${what}: the documented fields (${s.placeholders})`);
  for (const k of Object.keys(expected)) tt.equal(typeof res.body?.[k], typeof expected[k], `${what}: ${k} is a ${typeof expected[k]}`);
}

function schemaProps(doc: Obj, name: string): string[] {
  return Object.keys(doc.components.schemas[name].properties ?? {}).sort();
}

/** The example request body of an operation (JSON). */
function requestExample(doc: Obj, op: string): any {
  return structuredClone(operation(doc, op).requestBody?.content?.['application/json']?.example);
}

/**
 * An OpenAPI 3.0 schema of the swagger as JSON Schema for ajv: refs into #/definitions,
 * `nullable` as a null type, annotations dropped; `closed` adds `additionalProperties: false`
 * wherever properties are listed, so a field the schema lacks fails.
 */
function toJsonSchema(v: any, closed: boolean): any {
  if (Array.isArray(v)) return v.map((x) => toJsonSchema(x, closed));
  if (!v || typeof v !== 'object') return v;
  const out: Obj = {};
  for (const [k, x] of Object.entries(v)) {
    if (k === 'example' || k === 'description' || k === 'nullable' || k.startsWith('x-')) continue;
    if (k === '$ref' && typeof x === 'string') out.$ref = x.replace('#/components/schemas/', '#/definitions/');
    else if (k === 'properties') out.properties = Object.fromEntries(Object.entries(x as Obj).map(([p, s]) => [p, toJsonSchema(s, closed)]));
    else out[k] = toJsonSchema(x, closed);
  }
  if (v.nullable === true && typeof out.type === 'string') out.type = [out.type, 'null'];
  if (closed && out.properties && out.additionalProperties === undefined) out.additionalProperties = false;
  return out;
}

/** Validates against the swagger's schema `name` (closed: no field it lacks). */
function swaggerSchema(doc: Obj, name: string): ValidateFunction {
  const ajv = new Ajv({ allErrors: true, strict: false, validateFormats: false });
  return ajv.compile({ $ref: `#/definitions/${name}`, definitions: toJsonSchema(doc.components.schemas, true) });
}

/** An object id, an API id, or a certificate id (an org id and a SHA-256: 88 hex digits). */
const ID_LIKE = /^([0-9a-f]{24,32}|[0-9a-f]{88})$/i;

/**
 * A produced body against the documented example: a list or a model (a definition, a policy,
 * a list wrapper) has every field of the example; an ApiResponse / ApiStatusMessage /
 * ApiModifyKeySuccess is `sameAs` it.
 */
function conforms(tt: Test, actual: any, expected: any, what: string, otherMessage?: string): void {
  if (Array.isArray(expected)) {
    tt.ok(Array.isArray(actual) && actual.length > 0, `${what}: a list`);
    sameFields(tt, actual?.[0], expected[0], `${what}: an item`);
  } else if (expected && typeof expected === 'object' && !('Status' in expected) && !('status' in expected)) {
    sameFields(tt, actual, expected, what);
    for (const [k, v] of Object.entries(expected)) {
      if (Array.isArray(v) && typeof v[0] === 'object' && v[0] !== null) sameFields(tt, actual?.[k]?.[0], v[0], `${what}: an item of ${k}`);
    }
  } else sameAs(tt, actual, expected, what, otherMessage);
}

/** Same fields; error bodies exactly; in success bodies, ids matched by form, all else equal. */
function sameAs(tt: Test, actual: any, expected: any, what: string, otherMessage?: string): void {
  if (expected === undefined) {
    tt.pass(`${what}: no example body`);
    return;
  }
  const isError = expected.Status === 'Error' || expected.status === 'error';
  if (isError) {
    const want = otherMessage === undefined ? expected : { ...expected, [expected.Status ? 'Message' : 'message']: otherMessage };
    tt.same(actual, want, `${what}: the documented error body${otherMessage === undefined ? '' : ' (another documented reason for it)'}`);
    return;
  }
  tt.same(Object.keys(actual ?? {}).sort(), Object.keys(expected).sort(), `${what}: the documented fields`);
  for (const [k, v] of Object.entries(expected)) {
    if (typeof v === 'string' && ID_LIKE.test(v)) tt.match(actual?.[k], /^\S+$/, `${what}: ${k} is an id`);
    else if (typeof v === 'object' && v !== null) tt.equal(typeof actual?.[k], 'object', `${what}: ${k}`);
    else tt.same(actual?.[k], v, `${what}: ${k}`);
  }
}

/** A certificate the fakes' stores take, and its id in the org the swagger's examples use (the Dashboard fake's key's org). */
const CERT_PEM = readFileSync(new URL('../fixtures/tls/server.pem', import.meta.url), 'utf8');
const CERT_ORG = '5e9d9544a1dcd60001d0ed20';
const CERT_ID = CERT_ORG + createHash('sha256').update(new X509Certificate(CERT_PEM).raw).digest('hex');
const EXPIRED_PEM = readFileSync(new URL('../fixtures/tls/expired.pem', import.meta.url), 'utf8');

// ─────────────────────────────── the Dashboard ───────────────────────────────

const KEY = 'compat-dashboard-key';

async function dcall(d: FakeTykDashboard, method: string, path: string, body?: unknown, auth = true): Promise<Res> {
  const init: RequestInit = { method, headers: auth ? { authorization: d.secret } : {} };
  if (body !== undefined) init.body = typeof body === 'string' ? body : JSON.stringify(body);
  const res = await fetch(d.url + path, init);
  const text = await res.text();
  return { status: res.status, body: text === '' ? undefined : JSON.parse(text) };
}

const wrap = (def: Obj) => ({ api_definition: def });
const apiDef = (apiId: string) => ({ api_id: apiId, name: apiId, proxy: { listen_path: `/${apiId}/`, target_url: 'http://x' } });
const pol = (name: string) => ({ id: name, name, active: true });

async function withApi(d: FakeTykDashboard, apiId = 'known'): Promise<string> {
  return (await dcall(d, 'POST', '/api/apis', wrap(apiDef(apiId)))).body.Meta as string;
}

async function withPolicy(d: FakeTykDashboard, name = 'known'): Promise<string> {
  return (await dcall(d, 'POST', '/api/portal/policies', pol(name))).body.Message as string;
}

const UNKNOWN_MID = '66570989d98dd00001da17f1';

let dashboardDoc: Obj | undefined;
/** The swagger's own example body of an OAS write, under `id` (none: the Dashboard's). */
function doas(id?: string, op = 'POST /api/apis/oas'): Obj {
  dashboardDoc ??= load(DASHBOARD_FILE);
  const body = requestExample(dashboardDoc, op);
  if (id !== undefined) body['x-tyk-api-gateway'].info.id = id;
  return body;
}

async function withOas(d: FakeTykDashboard, id = 'known'): Promise<string> {
  return (await dcall(d, 'POST', '/api/apis/oas', doas(id))).body.ID as string;
}
/** POST /api/certs: the PEM as a multipart file under `field` (the swagger's FormDataFile: `file`). */
async function dupload(d: FakeTykDashboard, pem: string, field = 'file'): Promise<Res> {
  const boundary = 'compat-boundary-0123456789';
  const body = `--${boundary}\r\nContent-Disposition: form-data; name="${field}"; filename="cert.pem"\r\n\r\n${pem}\r\n--${boundary}--\r\n`;
  const res = await fetch(`${d.url}/api/certs`, { method: 'POST', headers: { authorization: d.secret, 'content-type': `multipart/form-data; boundary=${boundary}` }, body });
  return { status: res.status, body: await res.json() };
}

const withDashCert = (d: FakeTykDashboard) => dupload(d, CERT_PEM);
const OTHER_ORG_CERT = `5e9d9544a1dcd60001d0ffff${CERT_ID.slice(CERT_ORG.length)}`;

const DASHBOARD: Scenario<FakeTykDashboard>[] = [
  { op: 'GET /api/apis', status: 200, run: async (d) => (await withApi(d), dcall(d, 'GET', '/api/apis?p=1')) },
  { op: 'POST /api/apis', status: 200, run: (d) => dcall(d, 'POST', '/api/apis', wrap(apiDef('b84fe1a04e5648927971c0557971565c'))) },
  { op: 'POST /api/apis', status: 400, run: (d) => dcall(d, 'POST', '/api/apis?base_api_id=663a4ed9b6be920001b191ae', wrap(apiDef('v2'))) },
  { op: 'POST /api/apis', status: 400, otherMessage: 'Malformed API data', note: 'a body the model cannot decode', run: (d) => dcall(d, 'POST', '/api/apis', '{') },
  { op: 'POST /api/apis', status: 409, run: async (d) => (await withApi(d), dcall(d, 'POST', '/api/apis', wrap(apiDef('known')))) },
  { op: 'GET /api/apis/{apiId}', status: 200, run: async (d) => (await withApi(d), dcall(d, 'GET', '/api/apis/known')) },
  { op: 'GET /api/apis/{apiId}', status: 400, run: (d) => dcall(d, 'GET', '/api/apis/unknown') },
  { op: 'PUT /api/apis/{apiId}', status: 200, run: async (d) => (await withApi(d), dcall(d, 'PUT', '/api/apis/known', wrap(apiDef('known')))) },
  { op: 'PUT /api/apis/{apiId}', status: 400, run: async (d) => (await withApi(d), dcall(d, 'PUT', '/api/apis/known', wrap({ ...apiDef('known'), id: UNKNOWN_MID }))) },
  { op: 'PUT /api/apis/{apiId}', status: 404, run: (d) => dcall(d, 'PUT', '/api/apis/unknown', wrap(apiDef('unknown'))) },
  { op: 'DELETE /api/apis/{apiId}', status: 200, run: async (d) => (await withApi(d), dcall(d, 'DELETE', '/api/apis/known')) },
  { op: 'DELETE /api/apis/{apiId}', status: 404, run: (d) => dcall(d, 'DELETE', '/api/apis/unknown') },
  { op: 'GET /api/portal/policies', status: 200, run: async (d) => (await withPolicy(d), dcall(d, 'GET', '/api/portal/policies?p=1')) },
  { op: 'POST /api/portal/policies', status: 200, run: (d) => dcall(d, 'POST', '/api/portal/policies', pol('new')) },
  { op: 'POST /api/portal/policies', status: 400, run: async (d) => (await withPolicy(d), dcall(d, 'POST', '/api/portal/policies', { ...pol('other'), name: 'known' })) },
  { op: 'POST /api/portal/policies', status: 403, run: (d) => dcall(d, 'POST', '/api/portal/policies', '{') },
  { op: 'GET /api/portal/policies/{id}', status: 200, run: async (d) => dcall(d, 'GET', `/api/portal/policies/${await withPolicy(d)}`) },
  { op: 'GET /api/portal/policies/{id}', status: 400, run: (d) => dcall(d, 'GET', '/api/portal/policies/not-an-object-id') },
  { op: 'GET /api/portal/policies/{id}', status: 404, run: (d) => dcall(d, 'GET', `/api/portal/policies/${UNKNOWN_MID}`) },
  { op: 'PUT /api/portal/policies/{id}', status: 200, run: async (d) => dcall(d, 'PUT', `/api/portal/policies/${await withPolicy(d)}`, pol('known')) },
  { op: 'PUT /api/portal/policies/{id}', status: 400, run: async (d) => dcall(d, 'PUT', `/api/portal/policies/${await withPolicy(d)}`, { ...pol('known'), _id: UNKNOWN_MID }) },
  { op: 'PUT /api/portal/policies/{id}', status: 403, run: async (d) => dcall(d, 'PUT', `/api/portal/policies/${await withPolicy(d)}`, '{') },
  { op: 'PUT /api/portal/policies/{id}', status: 404, run: (d) => dcall(d, 'PUT', `/api/portal/policies/${UNKNOWN_MID}`, pol('x')) },
  { op: 'DELETE /api/portal/policies/{id}', status: 200, run: async (d) => dcall(d, 'DELETE', `/api/portal/policies/${await withPolicy(d)}`) },
  { op: 'DELETE /api/portal/policies/{id}', status: 400, run: (d) => dcall(d, 'DELETE', '/api/portal/policies/not-an-object-id') },
  { op: 'DELETE /api/portal/policies/{id}', status: 404, run: (d) => dcall(d, 'DELETE', `/api/portal/policies/${UNKNOWN_MID}`) },
  { op: 'POST /api/apis/oas', status: 200, run: (d) => dcall(d, 'POST', '/api/apis/oas', doas('4c1c0d8fc885401053ddac4e39ef676b')) },
  { op: 'POST /api/apis/oas', status: 400, run: (d) => dcall(d, 'POST', '/api/apis/oas', '{') },
  {
    op: 'POST /api/apis/oas',
    status: 400,
    otherMessage: 'The payload should contain x-tyk-api-gateway.',
    note: 'no x-tyk-api-gateway (PUT’s documented reason)',
    run: (d) => dcall(d, 'POST', '/api/apis/oas', { ...doas(), 'x-tyk-api-gateway': undefined }),
  },
  { op: 'POST /api/apis/oas', status: 409, run: async (d) => (await withOas(d), dcall(d, 'POST', '/api/apis/oas', doas('known'))) },
  { op: 'GET /api/apis/oas/{apiId}', status: 200, run: async (d) => (await withOas(d), dcall(d, 'GET', '/api/apis/oas/known')) },
  { op: 'GET /api/apis/oas/{apiId}', status: 400, run: (d) => dcall(d, 'GET', '/api/apis/oas/unknown') },
  { op: 'PUT /api/apis/oas/{apiId}', status: 200, run: async (d) => (await withOas(d), dcall(d, 'PUT', '/api/apis/oas/known', doas('known', 'PUT /api/apis/oas/{apiId}'))) },
  {
    op: 'PUT /api/apis/oas/{apiId}',
    status: 400,
    run: async (d) => (await withOas(d), dcall(d, 'PUT', '/api/apis/oas/known', { ...doas(), 'x-tyk-api-gateway': undefined })),
  },
  {
    op: 'PUT /api/apis/oas/{apiId}',
    status: 400,
    otherMessage: 'Invalid `ID` value',
    note: 'another info.id (PATCH’s documented reason)',
    run: async (d) => (await withOas(d), dcall(d, 'PUT', '/api/apis/oas/known', doas('other'))),
  },
  {
    op: 'PUT /api/apis/oas/{apiId}',
    status: 403,
    run: async (d) => {
      await withOas(d);
      await dcall(d, 'POST', '/api/apis/oas', doas('other', 'PUT /api/apis/oas/{apiId}'));
      return dcall(d, 'PUT', '/api/apis/oas/known', doas('known', 'PUT /api/apis/oas/{apiId}'));
    },
  },
  { op: 'PUT /api/apis/oas/{apiId}', status: 404, run: (d) => dcall(d, 'PUT', '/api/apis/oas/unknown', doas('unknown')) },
  { op: 'DELETE /api/apis/oas/{apiId}', status: 200, run: async (d) => (await withOas(d), dcall(d, 'DELETE', '/api/apis/oas/known')) },
  { op: 'DELETE /api/apis/oas/{apiId}', status: 404, run: (d) => dcall(d, 'DELETE', '/api/apis/oas/unknown') },
  { op: 'GET /api/certs', status: 200, note: 'mode=detailed', example: 'detailed_mode', run: async (d) => (await withDashCert(d), dcall(d, 'GET', '/api/certs?mode=detailed')) },
  { op: 'GET /api/certs', status: 200, note: 'ids', example: 'empty_mode', run: async (d) => (await withDashCert(d), dcall(d, 'GET', '/api/certs?p=1')) },
  { op: 'POST /api/certs', status: 200, run: (d) => withDashCert(d) },
  {
    op: 'POST /api/certs',
    status: 404,
    note: 'the same certificate again',
    otherMessage: `Could not create certificate.Certificate with ${CERT_ID} ID already exists.`,
    run: async (d) => (await withDashCert(d), withDashCert(d)),
  },
  { op: 'POST /api/certs', status: 404, note: 'an expired certificate', otherMessage: 'Could not create certificate.certificate is expired', run: (d) => dupload(d, EXPIRED_PEM) },
  { op: 'POST /api/certs', status: 500, note: 'the PEM under another field', run: (d) => dupload(d, CERT_PEM, 'cert') },
  { op: 'GET /api/certs/{certId}', status: 200, run: async (d) => (await withDashCert(d), dcall(d, 'GET', `/api/certs/${CERT_ID}`)) },
  { op: 'GET /api/certs/{certId}', status: 400, note: 'another org’s id', run: (d) => dcall(d, 'GET', `/api/certs/${OTHER_ORG_CERT}`) },
  { op: 'GET /api/certs/{certId}', status: 404, run: (d) => dcall(d, 'GET', `/api/certs/${CERT_ID}`) },
  {
    op: 'DELETE /api/certs/{certId}',
    status: 200,
    placeholders: 'the example says message: "message", status: "status"',
    run: async (d) => (await withDashCert(d), dcall(d, 'DELETE', `/api/certs/${CERT_ID}`)),
  },
  { op: 'DELETE /api/certs/{certId}', status: 400, note: 'another org’s id', run: (d) => dcall(d, 'DELETE', `/api/certs/${OTHER_ORG_CERT}`) },
  { op: 'DELETE /api/certs/{certId}', status: 404, note: 'unknownCertDelete 404, the default', run: (d) => dcall(d, 'DELETE', `/api/certs/${CERT_ID}`) },
];

/** Documented answers the Dashboard fake gives only through fault injection, and why. */
const DASHBOARD_INJECTED: Record<string, Record<number, string>> = {
  'GET /api/apis': { 400: 'a failed database read', 403: 'user permissions are not modelled', 500: 'a server failure' },
  'POST /api/apis': { 403: 'user permissions are not modelled' },
  'GET /api/apis/{apiId}': { 403: 'user permissions are not modelled', 500: 'a server failure' },
  'PUT /api/apis/{apiId}': { 403: 'user permissions are not modelled', 500: 'a server failure' },
  'DELETE /api/apis/{apiId}': { 400: 'a failed database delete', 403: 'user permissions are not modelled' },
  'GET /api/portal/policies': { 403: 'user permissions are not modelled', 404: 'a failed database read', 500: 'a server failure' },
  'POST /api/portal/policies': { 500: 'a server failure' },
  'GET /api/portal/policies/{id}': { 403: 'user permissions are not modelled', 500: 'a server failure' },
  'PUT /api/portal/policies/{id}': { 500: 'a server failure' },
  'DELETE /api/portal/policies/{id}': { 403: 'user permissions are not modelled', 500: 'a server failure' },
  'POST /api/apis/oas': { 403: 'user permissions are not modelled', 500: 'a failure of the schema validator itself' },
  'GET /api/apis/oas/{apiId}': { 403: 'user permissions are not modelled', 500: 'a server failure' },
  'PUT /api/apis/oas/{apiId}': { 500: 'a failure of the schema validator itself' },
  'DELETE /api/apis/oas/{apiId}': { 400: 'a failed database delete', 403: 'user permissions are not modelled' },
  'GET /api/certs': { 400: 'a failed read of the certificate store', 403: 'user permissions are not modelled', 500: 'a list that cannot be marshalled' },
  'POST /api/certs': { 403: 'user permissions are not modelled' },
  'GET /api/certs/{certId}': { 403: 'user permissions are not modelled' },
  'DELETE /api/certs/{certId}': { 403: 'user permissions are not modelled' },
};

/** Documented certificate operations the Dashboard fake does not model (it answers them 501), and why. */
const DASHBOARD_UNMODELLED: Record<string, { why: string; path: string }> = {
  'GET /api/certs/details': { why: 'full details lists: the client lists ids', path: '/api/certs/details' },
  'GET /api/certs/{certId}/apis': { why: 'which APIs use a certificate: not tracked', path: `/api/certs/${CERT_ID}/apis` },
  'GET /api/certs/dependencies/{certId}': { why: 'certificate dependencies: not tracked', path: `/api/certs/dependencies/${CERT_ID}` },
  'DELETE /api/certs/dependencies/{certId}': { why: 'certificate dependencies: not tracked', path: `/api/certs/dependencies/${CERT_ID}` },
};

const UNAUTHORISED_PROBES: Record<string, [string, string, unknown?]> = {
  'GET /api/apis': ['GET', '/api/apis'],
  'POST /api/apis': ['POST', '/api/apis', wrap(apiDef('x'))],
  'GET /api/apis/{apiId}': ['GET', '/api/apis/x'],
  'PUT /api/apis/{apiId}': ['PUT', '/api/apis/x', wrap(apiDef('x'))],
  'DELETE /api/apis/{apiId}': ['DELETE', '/api/apis/x'],
  'GET /api/portal/policies': ['GET', '/api/portal/policies'],
  'POST /api/portal/policies': ['POST', '/api/portal/policies', pol('x')],
  'GET /api/portal/policies/{id}': ['GET', `/api/portal/policies/${UNKNOWN_MID}`],
  'PUT /api/portal/policies/{id}': ['PUT', `/api/portal/policies/${UNKNOWN_MID}`, pol('x')],
  'DELETE /api/portal/policies/{id}': ['DELETE', `/api/portal/policies/${UNKNOWN_MID}`],
  'POST /api/apis/oas': ['POST', '/api/apis/oas', { openapi: '3.0.3' }],
  'GET /api/apis/oas/{apiId}': ['GET', '/api/apis/oas/x'],
  'PUT /api/apis/oas/{apiId}': ['PUT', '/api/apis/oas/x', { openapi: '3.0.3' }],
  'DELETE /api/apis/oas/{apiId}': ['DELETE', '/api/apis/oas/x'],
  'GET /api/certs': ['GET', '/api/certs'],
  'POST /api/certs': ['POST', '/api/certs', 'not multipart'],
  'GET /api/certs/{certId}': ['GET', `/api/certs/${CERT_ID}`],
  'DELETE /api/certs/{certId}': ['DELETE', `/api/certs/${CERT_ID}`],
};

async function dashboard(tt: Test, options: FakeTykDashboardOptions = {}): Promise<FakeTykDashboard> {
  const d = await startFakeTykDashboard({ secret: KEY, ...options });
  tt.teardown(() => d.close());
  return d;
}

t.test('the Tyk Dashboard fake against tyk-dashboard-swagger.yml', async (t) => {
  const doc = load(DASHBOARD_FILE);
  const ops = Object.keys(UNAUTHORISED_PROBES);

  t.test('every documented status of every operation is produced, or listed as injected-only', async (tt) => {
    accountedFor(tt, doc, ops, DASHBOARD, DASHBOARD_INJECTED, 401);
  });

  t.test('each produced answer has the documented status and body', async (tt) => {
    for (const s of DASHBOARD) checkScenario(tt, doc, s, await s.run(await dashboard(tt)));
  });

  t.test('401 on every operation, with the documented body', async (tt) => {
    const d = await dashboard(tt);
    for (const [op, [method, path, body]] of Object.entries(UNAUTHORISED_PROBES)) {
      const res = await dcall(d, method, path, body, false);
      tt.equal(res.status, 401, `${op}: 401`);
      sameAs(tt, res.body, example(doc, op, 401), `${op} 401`);
    }
  });

  t.test('an unknown API id: GET’s documented 400, or (unknownApi 404) DELETE’s 404 with the same body', async (tt) => {
    const d = await dashboard(tt, { unknownApi: '404' });
    const res = await dcall(d, 'GET', '/api/apis/unknown');
    tt.equal(res.status, 404);
    tt.same(res.body, example(doc, 'DELETE /api/apis/{apiId}', 404), 'DELETE’s documented 404 body');
    tt.same(res.body, example(doc, 'GET /api/apis/{apiId}', 400), 'the same body as GET’s documented 400');
  });

  t.test('the certificate store: every documented operation modelled or listed as not modelled (and then 501)', async (tt) => {
    const documented = Object.entries(doc.paths as Obj)
      .filter(([path]) => path === '/api/certs' || path.startsWith('/api/certs/'))
      .flatMap(([path, item]) => Object.keys(item as Obj).map((method) => `${method.toUpperCase()} ${path}`))
      .sort();
    const modelled = ops.filter((op) => op.includes('/api/certs'));
    tt.same([...modelled, ...Object.keys(DASHBOARD_UNMODELLED)].sort(), documented, 'every operation accounted for, once');
    const d = await dashboard(tt);
    for (const [op, { why, path }] of Object.entries(DASHBOARD_UNMODELLED)) {
      const res = await dcall(d, op.split(' ')[0] ?? '', path);
      tt.equal(res.status, 501, `${op}: 501 (${why})`);
      tt.match(res.body, { Status: 'Error', Message: /^not modelled by the fake: /, Meta: null }, `${op}: an ApiResponse`);
    }
  });

  t.test('certificate bodies: no field the schema lacks, every field of the model', async (tt) => {
    const d = await dashboard(tt);
    const added = (await withDashCert(d)).body;
    tt.same(Object.keys(added).sort(), schemaProps(doc, 'APICertificateStatusMessage'), 'upload: APICertificateStatusMessage');
    tt.same(Object.keys((await dcall(d, 'GET', '/api/certs')).body).sort(), schemaProps(doc, 'CertificateList'), 'list: CertificateList');
    const detailed = (await dcall(d, 'GET', '/api/certs?mode=detailed')).body;
    tt.same(Object.keys(detailed).sort(), schemaProps(doc, 'CertificateBasics'), 'detailed list: CertificateBasics');
    tt.same(Object.keys(detailed.cert_basics[0]).sort(), schemaProps(doc, 'CertsCertificateBasics'), 'an item: CertsCertificateBasics');
    tt.same(Object.keys((await dcall(d, 'GET', `/api/certs/${CERT_ID}`)).body).sort(), schemaProps(doc, 'CertsCertificateMeta'), 'one: CertsCertificateMeta');
    tt.same(Object.keys((await dcall(d, 'DELETE', `/api/certs/${CERT_ID}`)).body).sort(), schemaProps(doc, 'ApiStatusMessage'), 'delete: ApiStatusMessage');
    const lax = await dashboard(tt, { unknownCertDelete: '200' });
    const gone = await dcall(lax, 'DELETE', `/api/certs/${CERT_ID}`);
    tt.equal(gone.status, 200, 'unknownCertDelete 200: an unknown certificate’s delete succeeds');
    tt.same(Object.keys(gone.body).sort(), schemaProps(doc, 'ApiStatusMessage'));
  });

  t.test('success bodies: no field the schema lacks, every field of the model', async (tt) => {
    const d = await dashboard(tt);
    await withApi(d);
    const mid = await withPolicy(d);
    const wrapper = (await dcall(d, 'GET', '/api/apis/known')).body;
    const wrapperProps = schemaProps(doc, 'ApiDefinitionWrapper');
    tt.same(
      Object.keys(wrapper).filter((k) => !wrapperProps.includes(k)),
      [],
      'ApiDefinitionWrapper: no unknown field',
    );
    tt.same(
      wrapperProps.filter((k) => !(k in wrapper)),
      ['oas'],
      'every wrapper field but oas (Classic APIs only)',
    );
    tt.same(Object.keys(wrapper.api_definition).sort(), schemaProps(doc, 'APIDefinition'), 'api_definition: the APIDefinition fields');
    const listed = (await dcall(d, 'GET', '/api/apis?p=1')).body;
    tt.same(Object.keys(listed).sort(), schemaProps(doc, 'ApiDefinitionsResponse'));
    const policy = (await dcall(d, 'GET', `/api/portal/policies/${mid}`)).body;
    tt.same(Object.keys(policy).sort(), schemaProps(doc, 'Policy'), 'Policy: its fields');
    tt.same(Object.keys(policy.access_rights ?? {}).length, 0);
    await dcall(d, 'PUT', `/api/portal/policies/${mid}`, { ...pol('known'), access_rights: { a: { api_id: 'a' } } });
    const right = (await dcall(d, 'GET', `/api/portal/policies/${mid}`)).body.access_rights.a;
    tt.same(Object.keys(right).sort(), schemaProps(doc, 'AccessDefinition'), 'AccessDefinition: its fields');
    tt.same(Object.keys((await dcall(d, 'GET', '/api/portal/policies')).body).sort(), schemaProps(doc, 'ReturnDataStruct'));
  });

  t.test('Tyk OAS APIs: x-tyk-api-gateway as XTykAPIGateway has it (no field it lacks); the Classic form’s wrapper carries oas', async (tt) => {
    const d = await dashboard(tt);
    await withOas(d);
    const one = (await dcall(d, 'GET', '/api/apis/oas/known')).body;
    const vendor = swaggerSchema(doc, 'XTykAPIGateway');
    tt.ok(vendor(one['x-tyk-api-gateway']), JSON.stringify(vendor.errors));
    tt.match(one['x-tyk-api-gateway'].info, { id: 'known', dbId: /^[0-9a-f]{24}$/, orgId: d.orgId }, 'the Dashboard’s additions');
    const { 'x-tyk-api-gateway': _ext, ...rest } = one;
    const { 'x-tyk-api-gateway': _sent, ...sent } = doas('known');
    tt.same(rest, sent, 'the document’s own fields as sent');
    const wrapper = (await dcall(d, 'GET', '/api/apis/known')).body;
    tt.same(Object.keys(wrapper).sort(), schemaProps(doc, 'ApiDefinitionWrapper'), 'every wrapper field, oas too');
    tt.same(wrapper.oas, one);
    tt.same(Object.keys(wrapper.api_definition).sort(), schemaProps(doc, 'APIDefinition'), 'its Classic form is an APIDefinition');
    tt.equal(wrapper.api_definition.is_oas, true);
  });

  t.test('the client takes as "absent" exactly the documented answers for an unknown id', async (tt) => {
    const pairs: [keyof typeof ABSENT_ANSWERS, string, number[]][] = [
      ['getApi', 'GET /api/apis/{apiId}', [400]],
      ['putApi', 'PUT /api/apis/{apiId}', [404]],
      ['deleteApi', 'DELETE /api/apis/{apiId}', [404]],
      ['getPolicy', 'GET /api/portal/policies/{id}', [404]],
      ['putPolicy', 'PUT /api/portal/policies/{id}', [404]],
      ['deletePolicy', 'DELETE /api/portal/policies/{id}', [404]],
      ['getOas', 'GET /api/apis/oas/{apiId}', [400]],
      ['putOas', 'PUT /api/apis/oas/{apiId}', [404]],
      ['deleteOas', 'DELETE /api/apis/oas/{apiId}', [404]],
      ['getCertificate', 'GET /api/certs/{certId}', [404]],
      ['deleteCertificate', 'DELETE /api/certs/{certId}', [404]],
    ];
    for (const [key, op, statuses] of pairs) {
      const answer = ABSENT_ANSWERS[key];
      for (const status of statuses) {
        tt.ok((answer.statuses as readonly number[]).includes(status), `${key}: ${status} is absent`);
        tt.equal(example(doc, op, status)?.Message, answer.message, `${key}: the documented message`);
      }
    }
    tt.same(ABSENT_ANSWERS.getApi.statuses, [400, 404], 'GET of an API: the documented 400, and the 404 its DELETE documents with the same message');
    tt.same(ABSENT_ANSWERS.getOas.statuses, [400, 404], 'GET of an OAS API: the same');
    tt.equal(example(doc, 'DELETE /api/apis/oas/{apiId}', 404)?.Message, ABSENT_ANSWERS.getOas.message);
    tt.equal(example(doc, 'DELETE /api/apis/{apiId}', 404)?.Message, ABSENT_ANSWERS.getApi.message);
    tt.same(ABSENT_ANSWERS.getCertificate.statuses, [404], 'a certificate of another org (400 "non-owned") is not absent');
  });
});

// ─────────────────── the Dashboard's classic portal (the SDK swagger) ───────────────────

const PORTAL_SDK_FILE = referencePath('tyk-dashboard-sdk-swagger.yml');

let portalDoc: Obj | undefined;
/** The SDK swagger's own example request body of `op`. */
function portalRequest(op: string): Obj {
  portalDoc ??= load(PORTAL_SDK_FILE);
  return requestExample(portalDoc, op);
}

/** The organisation's catalogue, created from the swagger's own example; its id. */
async function withCatalogue(d: FakeTykDashboard): Promise<string> {
  return (await dcall(d, 'POST', '/api/portal/catalogue', portalRequest('POST /api/portal/catalogue'))).body.Message as string;
}

async function withDocumentation(d: FakeTykDashboard): Promise<string> {
  await withCatalogue(d);
  return (await dcall(d, 'POST', '/api/portal/documentation', portalRequest('POST /api/portal/documentation'))).body.Message as string;
}

const NO_POLICY_ENTRY = { apis: [{ name: 'Swagger Petstore', show: true }] };

/** Scenarios with the fake options they need (the SDK's catalogue list shape for its GET). */
const PORTAL: (Scenario<FakeTykDashboard> & { options?: FakeTykDashboardOptions })[] = [
  {
    op: 'GET /api/portal/catalogue',
    status: 200,
    note: 'catalogueAnswer list, the schema’s shape',
    options: { catalogueAnswer: 'list' },
    run: async (d) => (await withCatalogue(d), dcall(d, 'GET', '/api/portal/catalogue')),
  },
  { op: 'POST /api/portal/catalogue', status: 200, run: (d) => dcall(d, 'POST', '/api/portal/catalogue', portalRequest('POST /api/portal/catalogue')) },
  { op: 'POST /api/portal/catalogue', status: 400, note: 'an entry without a policy_id', run: (d) => dcall(d, 'POST', '/api/portal/catalogue', NO_POLICY_ENTRY) },
  { op: 'POST /api/portal/catalogue', status: 403, note: 'a body the model cannot decode', run: (d) => dcall(d, 'POST', '/api/portal/catalogue', '{') },
  {
    op: 'PUT /api/portal/catalogue',
    status: 200,
    run: async (d) => dcall(d, 'PUT', '/api/portal/catalogue', { ...portalRequest('PUT /api/portal/catalogue'), id: await withCatalogue(d) }),
  },
  {
    op: 'PUT /api/portal/catalogue',
    status: 400,
    note: 'an entry without a policy_id',
    run: async (d) => dcall(d, 'PUT', '/api/portal/catalogue', { ...NO_POLICY_ENTRY, id: await withCatalogue(d) }),
  },
  { op: 'PUT /api/portal/catalogue', status: 403, note: 'a body the model cannot decode', run: async (d) => (await withCatalogue(d), dcall(d, 'PUT', '/api/portal/catalogue', '{')) },
  {
    op: 'POST /api/portal/documentation',
    status: 200,
    run: async (d) => (await withCatalogue(d), dcall(d, 'POST', '/api/portal/documentation', portalRequest('POST /api/portal/documentation'))),
  },
  {
    op: 'POST /api/portal/documentation',
    status: 403,
    note: 'a body the model cannot decode',
    run: async (d) => (await withCatalogue(d), dcall(d, 'POST', '/api/portal/documentation', '{')),
  },
  {
    op: 'POST /api/portal/documentation',
    status: 403,
    otherMessage: 'Could not retrieve portal object.',
    note: 'no catalogue added yet (the other documented reason)',
    run: (d) => dcall(d, 'POST', '/api/portal/documentation', portalRequest('POST /api/portal/documentation')),
  },
  { op: 'DELETE /api/portal/documentation/{id}', status: 200, run: async (d) => dcall(d, 'DELETE', `/api/portal/documentation/${await withDocumentation(d)}`) },
  { op: 'DELETE /api/portal/documentation/{id}', status: 400, run: (d) => dcall(d, 'DELETE', '/api/portal/documentation/not-an-object-id') },
  { op: 'DELETE /api/portal/documentation/{id}', status: 404, run: (d) => dcall(d, 'DELETE', `/api/portal/documentation/${UNKNOWN_MID}`) },
];

/** Documented portal answers the Dashboard fake gives only through fault injection, and why. */
const PORTAL_INJECTED: Record<string, Record<number, string>> = {
  'GET /api/portal/catalogue': { 403: 'user permissions are not modelled', 500: 'a catalogue that cannot be marshalled' },
  'POST /api/portal/catalogue': { 500: 'a failed database write' },
  'PUT /api/portal/catalogue': { 500: 'a failed database write' },
  'POST /api/portal/documentation': { 500: 'a failed database write' },
  'DELETE /api/portal/documentation/{id}': { 403: 'one organisation is modelled: nothing is another’s', 500: 'a failed database delete' },
};

const PORTAL_UNAUTHORISED_PROBES: Record<string, [string, string, unknown?]> = {
  'GET /api/portal/catalogue': ['GET', '/api/portal/catalogue'],
  'POST /api/portal/catalogue': ['POST', '/api/portal/catalogue', { apis: [] }],
  'PUT /api/portal/catalogue': ['PUT', '/api/portal/catalogue', { id: UNKNOWN_MID, apis: [] }],
  'POST /api/portal/documentation': ['POST', '/api/portal/documentation', { api_id: '', doc_type: 'swagger_custom_url', documentation: 'https://x' }],
  'DELETE /api/portal/documentation/{id}': ['DELETE', `/api/portal/documentation/${UNKNOWN_MID}`],
};

t.test('the Dashboard fake’s classic portal against tyk-dashboard-sdk-swagger.yml', async (t) => {
  const doc = load(PORTAL_SDK_FILE);
  const ops = Object.keys(PORTAL_UNAUTHORISED_PROBES);

  t.test('every documented operation of the classic portal’s catalogue and documentation is modelled', async (tt) => {
    const documented = Object.entries(doc.paths as Obj)
      .filter(([path]) => path === '/api/portal/catalogue' || path.startsWith('/api/portal/documentation'))
      .flatMap(([path, item]) => Object.keys(item as Obj).map((method) => `${method.toUpperCase()} ${path}`))
      .sort();
    tt.same([...ops].sort(), documented);
  });

  t.test('every documented status of every operation is produced, or listed as injected-only', async (tt) => {
    accountedFor(tt, doc, ops, PORTAL, PORTAL_INJECTED, 401);
  });

  t.test('each produced answer has the documented status and body', async (tt) => {
    for (const s of PORTAL) checkScenario(tt, doc, s, await s.run(await dashboard(tt, s.options)));
  });

  t.test('401 on every operation, with the documented body', async (tt) => {
    const d = await dashboard(tt);
    for (const [op, [method, path, body]] of Object.entries(PORTAL_UNAUTHORISED_PROBES)) {
      const res = await dcall(d, method, path, body, false);
      tt.equal(res.status, 401, `${op}: 401`);
      sameAs(tt, res.body, example(doc, op, 401), `${op} 401`);
    }
  });

  t.test('the catalogue: the ApiCatalogue schema (no field it lacks), one object by default and the list’s item with catalogueAnswer list', async (tt) => {
    const catalogue = swaggerSchema(doc, 'ApiCatalogue');
    const d = await dashboard(tt);
    await withCatalogue(d);
    const one = (await dcall(d, 'GET', '/api/portal/catalogue')).body;
    tt.ok(catalogue(one), `one object: ${JSON.stringify(catalogue.errors)}`);
    tt.same(Object.keys(one).sort(), schemaProps(doc, 'ApiCatalogue'), 'every field of the model');
    tt.same(Object.keys(one.apis[0]).sort(), schemaProps(doc, 'APIDescription'), 'an entry: every field of APIDescription');
    const listed = await dashboard(tt, { catalogueAnswer: 'list' });
    await withCatalogue(listed);
    const list = (await dcall(listed, 'GET', '/api/portal/catalogue')).body;
    tt.ok(Array.isArray(list) && list.length === 1, 'a list of one');
    tt.ok(catalogue(list[0]), `its item: ${JSON.stringify(catalogue.errors)}`);
    tt.notOk(catalogue({ ...one, made_up: true }), 'the closed schema refuses a field it lacks');
  });

  t.test('undocumented, as the fake’s header says why: the catalogue’s 404 before one exists (observed), and the client takes only that as absent', async (tt) => {
    const d = await dashboard(tt);
    const res = await dcall(d, 'GET', '/api/portal/catalogue');
    tt.equal(res.status, 404);
    tt.match(res.body, { Status: 'Error', Message: /./, Meta: null }, 'in the Dashboard’s ApiError shape');
    tt.notOk(documentedStatuses(doc, 'GET /api/portal/catalogue').includes(404), 'the swagger leaves it out');
  });
});

// ─────────────────────────────── the Gateway ───────────────────────────────

const SECRET = 'compat-gateway-secret';

async function gcall(gw: FakeTykGateway, method: string, path: string, body?: unknown, auth = true): Promise<Res> {
  const init: RequestInit = { method, headers: auth ? { 'x-tyk-authorization': gw.secret } : {} };
  if (body !== undefined) init.body = typeof body === 'string' ? body : JSON.stringify(body);
  const res = await fetch(gw.url + path, init);
  const text = await res.text();
  return { status: res.status, body: text === '' ? undefined : JSON.parse(text) };
}

const withCert = async (gw: FakeTykGateway) => gcall(gw, 'POST', `/tyk/certs?org_id=${CERT_ORG}`, CERT_PEM);

const gapi = (apiId: string) => ({ api_id: apiId, name: apiId, use_keyless: true, proxy: { listen_path: `/${apiId}/`, target_url: 'http://x' } });
const gpol = (id: string) => ({ id, name: id, active: true });

let gatewayDoc: Obj | undefined;
/** The swagger's own example body of POST /tyk/apis/oas, under `id` (none: the gateway's). */
function goas(id?: string): Obj {
  gatewayDoc ??= load(GATEWAY_FILE);
  const body = requestExample(gatewayDoc, 'POST /tyk/apis/oas');
  if (id !== undefined) body['x-tyk-api-gateway'].info.id = id;
  return body;
}

async function loadedOas(gw: FakeTykGateway, id: string): Promise<void> {
  await gcall(gw, 'POST', '/tyk/apis/oas', goas(id));
  gw.reloadNow();
}

async function loaded(gw: FakeTykGateway, kind: 'api' | 'policy', id: string): Promise<void> {
  await gcall(gw, 'POST', kind === 'api' ? '/tyk/apis' : '/tyk/policies', kind === 'api' ? gapi(id) : gpol(id));
  gw.reloadNow();
}

const GATEWAY: (Scenario<FakeTykGateway> & { options?: FakeTykOptions })[] = [
  { op: 'GET /tyk/apis', status: 200, run: async (gw) => (await loaded(gw, 'api', 'b84fe1a04e5648927971c0557971565c'), gcall(gw, 'GET', '/tyk/apis')) },
  { op: 'POST /tyk/apis', status: 200, run: (gw) => gcall(gw, 'POST', '/tyk/apis', gapi('b84fe1a04e5648927971c0557971565c')) },
  { op: 'POST /tyk/apis', status: 400, run: (gw) => gcall(gw, 'POST', '/tyk/apis', '{') },
  { op: 'GET /tyk/apis/{apiID}', status: 200, run: async (gw) => (await loaded(gw, 'api', 'a1'), gcall(gw, 'GET', '/tyk/apis/a1')) },
  { op: 'GET /tyk/apis/{apiID}', status: 404, run: (gw) => gcall(gw, 'GET', '/tyk/apis/unknown') },
  { op: 'PUT /tyk/apis/{apiID}', status: 200, run: async (gw) => (await loaded(gw, 'api', 'a1'), gcall(gw, 'PUT', '/tyk/apis/a1', gapi('a1'))) },
  { op: 'PUT /tyk/apis/{apiID}', status: 400, run: async (gw) => (await loaded(gw, 'api', 'a1'), gcall(gw, 'PUT', '/tyk/apis/a1', '{')) },
  { op: 'PUT /tyk/apis/{apiID}', status: 404, run: (gw) => gcall(gw, 'PUT', '/tyk/apis/unknown', gapi('unknown')) },
  { op: 'DELETE /tyk/apis/{apiID}', status: 200, run: async (gw) => (await loaded(gw, 'api', 'a1'), gcall(gw, 'DELETE', '/tyk/apis/a1')) },
  { op: 'DELETE /tyk/apis/{apiID}', status: 404, run: (gw) => gcall(gw, 'DELETE', '/tyk/apis/unknown') },
  { op: 'DELETE /tyk/apis/{apiID}', status: 500, note: 'an older gateway (legacyDelete)', options: { legacyDelete: true }, run: (gw) => gcall(gw, 'DELETE', '/tyk/apis/unknown') },
  { op: 'GET /tyk/policies', status: 200, run: async (gw) => (await loaded(gw, 'policy', 'p1'), gcall(gw, 'GET', '/tyk/policies')) },
  { op: 'POST /tyk/policies', status: 200, run: (gw) => gcall(gw, 'POST', '/tyk/policies', gpol('5ead7120575961000181867e')) },
  { op: 'POST /tyk/policies', status: 400, run: (gw) => gcall(gw, 'POST', '/tyk/policies', '{') },
  { op: 'POST /tyk/policies', status: 500, note: 'policySource service', options: { policySource: 'service' }, run: (gw) => gcall(gw, 'POST', '/tyk/policies', gpol('p1')) },
  { op: 'GET /tyk/policies/{polID}', status: 200, run: async (gw) => (await loaded(gw, 'policy', 'p1'), gcall(gw, 'GET', '/tyk/policies/p1')) },
  { op: 'GET /tyk/policies/{polID}', status: 404, run: (gw) => gcall(gw, 'GET', '/tyk/policies/unknown') },
  { op: 'PUT /tyk/policies/{polID}', status: 200, run: async (gw) => (await loaded(gw, 'policy', 'p1'), gcall(gw, 'PUT', '/tyk/policies/p1', gpol('p1'))) },
  { op: 'PUT /tyk/policies/{polID}', status: 400, run: (gw) => gcall(gw, 'PUT', '/tyk/policies/p1', '{') },
  { op: 'DELETE /tyk/policies/{polID}', status: 200, run: async (gw) => (await loaded(gw, 'policy', 'p1'), gcall(gw, 'DELETE', '/tyk/policies/p1')) },
  { op: 'DELETE /tyk/policies/{polID}', status: 500, run: (gw) => gcall(gw, 'DELETE', '/tyk/policies/unknown') },
  { op: 'GET /tyk/reload', status: 200, run: (gw) => gcall(gw, 'GET', '/tyk/reload') },
  { op: 'GET /tyk/reload/group', status: 200, run: (gw) => gcall(gw, 'GET', '/tyk/reload/group') },
  { op: 'GET /tyk/certs', status: 200, run: async (gw) => (await withCert(gw), gcall(gw, 'GET', `/tyk/certs?org_id=${CERT_ORG}`)) },
  { op: 'POST /tyk/certs', status: 200, run: (gw) => withCert(gw) },
  {
    op: 'POST /tyk/certs',
    status: 403,
    note: 'the same certificate again',
    otherMessage: `Certificate with ${CERT_ID} ID already exists.`,
    run: async (gw) => (await withCert(gw), withCert(gw)),
  },
  { op: 'GET /tyk/certs/{certID}', status: 200, run: async (gw) => (await withCert(gw), gcall(gw, 'GET', `/tyk/certs/${CERT_ID}`)) },
  { op: 'GET /tyk/certs/{certID}', status: 404, run: (gw) => gcall(gw, 'GET', `/tyk/certs/${CERT_ID}`) },
  { op: 'DELETE /tyk/certs/{certID}', status: 200, run: async (gw) => (await withCert(gw), gcall(gw, 'DELETE', `/tyk/certs/${CERT_ID}?org_id=${CERT_ORG}`)) },
  { op: 'GET /tyk/apis/oas', status: 200, run: async (gw) => (await loadedOas(gw, 'o1'), gcall(gw, 'GET', '/tyk/apis/oas')) },
  { op: 'POST /tyk/apis/oas', status: 200, run: (gw) => gcall(gw, 'POST', '/tyk/apis/oas', goas()) },
  { op: 'POST /tyk/apis/oas', status: 400, run: (gw) => gcall(gw, 'POST', '/tyk/apis/oas', { ...goas(), 'x-tyk-api-gateway': undefined }) },
  { op: 'POST /tyk/apis/oas', status: 400, otherMessage: 'request malformed', note: 'a body that is not JSON', run: (gw) => gcall(gw, 'POST', '/tyk/apis/oas', '{') },
  {
    op: 'POST /tyk/apis/oas',
    status: 400,
    otherMessage: 'x-tyk-api-gateway.info: name is required',
    note: 'a schema problem',
    run: (gw) => {
      const body = goas();
      delete body['x-tyk-api-gateway'].info.name;
      return gcall(gw, 'POST', '/tyk/apis/oas', body);
    },
  },
  { op: 'GET /tyk/apis/oas/{apiID}', status: 200, run: async (gw) => (await loadedOas(gw, 'o1'), gcall(gw, 'GET', '/tyk/apis/oas/o1')) },
  { op: 'GET /tyk/apis/oas/{apiID}', status: 400, run: async (gw) => (await loaded(gw, 'api', 'a1'), gcall(gw, 'GET', '/tyk/apis/oas/a1')) },
  { op: 'GET /tyk/apis/oas/{apiID}', status: 404, run: (gw) => gcall(gw, 'GET', '/tyk/apis/oas/unknown') },
  { op: 'PUT /tyk/apis/oas/{apiID}', status: 200, run: async (gw) => (await loadedOas(gw, 'o1'), gcall(gw, 'PUT', '/tyk/apis/oas/o1', goas('o1'))) },
  { op: 'PUT /tyk/apis/oas/{apiID}', status: 400, run: async (gw) => (await loadedOas(gw, 'o1'), gcall(gw, 'PUT', '/tyk/apis/oas/o1', goas('o2'))) },
  {
    op: 'PUT /tyk/apis/oas/{apiID}',
    status: 400,
    otherMessage: 'the supplied API definition is in OAS format, please use the Tyk classic format for this API',
    note: 'a Classic API',
    run: async (gw) => (await loaded(gw, 'api', 'a1'), gcall(gw, 'PUT', '/tyk/apis/oas/a1', goas('a1'))),
  },
  { op: 'PUT /tyk/apis/oas/{apiID}', status: 404, run: (gw) => gcall(gw, 'PUT', '/tyk/apis/oas/unknown', goas('unknown')) },
  {
    op: 'DELETE /tyk/apis/oas/{apiID}',
    status: 200,
    run: async (gw) => (await loadedOas(gw, '1bd5c61b0e694082902cf15ddcc9e6a7'), gcall(gw, 'DELETE', '/tyk/apis/oas/1bd5c61b0e694082902cf15ddcc9e6a7')),
  },
  { op: 'DELETE /tyk/apis/oas/{apiID}', status: 404, run: (gw) => gcall(gw, 'DELETE', '/tyk/apis/oas/unknown') },
  {
    op: 'DELETE /tyk/apis/oas/{apiID}',
    status: 500,
    note: 'loaded, its OAS file gone',
    run: async (gw) => (await loadedOas(gw, 'o1'), gw.removeFile('oas', 'o1'), gcall(gw, 'DELETE', '/tyk/apis/oas/o1')),
  },
];

/** Documented answers the Gateway fake gives only through fault injection (or not at all), and why. */
const GATEWAY_INJECTED: Record<string, Record<number, string>> = {
  'POST /tyk/apis': { 500: 'a failed file write' },
  'PUT /tyk/apis/{apiID}': { 500: 'a failed file write' },
  'PUT /tyk/policies/{polID}': { 500: 'a failed file write' },
  'DELETE /tyk/policies/{polID}': { 400: 'an empty polID: /tyk/policies/ is the collection route, never this one' },
  'POST /tyk/certs': { 405: 'a request body that cannot be read (the connection dropped mid-body)' },
  'POST /tyk/apis/oas': { 500: 'a failed file write' },
  'PUT /tyk/apis/oas/{apiID}': { 500: 'a failed file write' },
  'DELETE /tyk/apis/oas/{apiID}': { 400: 'an empty apiID: /tyk/apis/oas/ is the collection route, never this one' },
};

const FORBIDDEN_PROBES: Record<string, [string, string, unknown?]> = {
  'GET /tyk/apis': ['GET', '/tyk/apis'],
  'POST /tyk/apis': ['POST', '/tyk/apis', gapi('x')],
  'GET /tyk/apis/{apiID}': ['GET', '/tyk/apis/x'],
  'PUT /tyk/apis/{apiID}': ['PUT', '/tyk/apis/x', gapi('x')],
  'DELETE /tyk/apis/{apiID}': ['DELETE', '/tyk/apis/x'],
  'GET /tyk/policies': ['GET', '/tyk/policies'],
  'POST /tyk/policies': ['POST', '/tyk/policies', gpol('x')],
  'GET /tyk/policies/{polID}': ['GET', '/tyk/policies/x'],
  'PUT /tyk/policies/{polID}': ['PUT', '/tyk/policies/x', gpol('x')],
  'DELETE /tyk/policies/{polID}': ['DELETE', '/tyk/policies/x'],
  'GET /tyk/reload': ['GET', '/tyk/reload'],
  'GET /tyk/reload/group': ['GET', '/tyk/reload/group'],
  'GET /tyk/certs': ['GET', '/tyk/certs'],
  'POST /tyk/certs': ['POST', '/tyk/certs', CERT_PEM],
  'GET /tyk/certs/{certID}': ['GET', `/tyk/certs/${CERT_ID}`],
  'DELETE /tyk/certs/{certID}': ['DELETE', `/tyk/certs/${CERT_ID}`],
  'GET /tyk/apis/oas': ['GET', '/tyk/apis/oas'],
  'POST /tyk/apis/oas': ['POST', '/tyk/apis/oas', { openapi: '3.0.3' }],
  'GET /tyk/apis/oas/{apiID}': ['GET', '/tyk/apis/oas/x'],
  'PUT /tyk/apis/oas/{apiID}': ['PUT', '/tyk/apis/oas/x', { openapi: '3.0.3' }],
  'DELETE /tyk/apis/oas/{apiID}': ['DELETE', '/tyk/apis/oas/x'],
};

async function gateway(tt: Test, options: FakeTykOptions = {}): Promise<FakeTykGateway> {
  const gw = await startFakeTykGateway({ secret: SECRET, reloadDelayMs: 1, ...options });
  tt.teardown(() => gw.close());
  return gw;
}

t.test('the Tyk Gateway fake against tyk-gateway-swagger.yml', async (t) => {
  const doc = load(GATEWAY_FILE);
  const ops = Object.keys(FORBIDDEN_PROBES);

  t.test('every documented status of every operation is produced, or listed as injected-only', async (tt) => {
    accountedFor(tt, doc, ops, GATEWAY, GATEWAY_INJECTED, 403);
  });

  t.test('each produced answer has the documented status and body', async (tt) => {
    for (const s of GATEWAY) checkScenario(tt, doc, s, await s.run(await gateway(tt, s.options)));
  });

  t.test('403 on every operation, with the documented body', async (tt) => {
    const gw = await gateway(tt);
    for (const [op, [method, path, body]] of Object.entries(FORBIDDEN_PROBES)) {
      const res = await gcall(gw, method, path, body, false);
      tt.equal(res.status, 403, `${op}: 403`);
      // POST /tyk/certs documents its other 403 (a certificate already there); the auth answer is every route's
      const other = op === 'POST /tyk/certs' ? example(doc, 'GET /tyk/certs', 403)?.message : undefined;
      sameAs(tt, res.body, example(doc, op, 403), `${op} 403`, other);
    }
  });

  t.test('success bodies echo every field of the model', async (tt) => {
    const gw = await gateway(tt);
    await loaded(gw, 'api', 'a1');
    await gcall(gw, 'POST', '/tyk/policies', { ...gpol('p1'), access_rights: { a1: { api_id: 'a1' } } });
    gw.reloadNow();
    tt.same(Object.keys((await gcall(gw, 'GET', '/tyk/apis/a1')).body).sort(), schemaProps(doc, 'APIDefinition'), 'APIDefinition');
    const policy = (await gcall(gw, 'GET', '/tyk/policies/p1')).body;
    tt.same(Object.keys(policy).sort(), schemaProps(doc, 'Policy'), 'Policy');
    tt.same(Object.keys(policy.access_rights.a1).sort(), schemaProps(doc, 'AccessDefinition'), 'AccessDefinition');
  });

  t.test('Tyk OAS reads: x-tyk-api-gateway as the XTykAPIGateway schema has it (no field it lacks), the rest as sent', async (tt) => {
    const gw = await gateway(tt);
    await loadedOas(gw, 'o1');
    const one = (await gcall(gw, 'GET', '/tyk/apis/oas/o1')).body;
    const listed = (await gcall(gw, 'GET', '/tyk/apis/oas')).body;
    // the document's other half is the OpenAPI 3.0 schema the swagger names by URL (not here)
    const vendor = swaggerSchema(doc, 'XTykAPIGateway');
    for (const [what, body] of [
      ['GET one', one],
      ['GET list: an item', listed[0]],
    ] as const) {
      tt.ok(vendor(body['x-tyk-api-gateway']), `${what}: ${JSON.stringify(vendor.errors)}`);
      tt.match(body['x-tyk-api-gateway'].info, { id: 'o1', dbId: /^[0-9a-f]{24}$/ }, `${what}: the gateway’s additions`);
      const { servers: _servers, 'x-tyk-api-gateway': _ext, ...rest } = body;
      const { servers: _sent, 'x-tyk-api-gateway': _sentExt, ...sent } = goas('o1');
      tt.same(rest, sent, `${what}: the document’s own fields as sent`);
    }
    tt.notOk(vendor({ info: { made_up: true } }), 'the closed schema refuses a field it lacks');
    tt.same(listed, [one], 'the list holds what GET answers');
    const forms = (await gcall(gw, 'GET', '/tyk/apis/o1')).body;
    tt.same(Object.keys(forms).sort(), schemaProps(doc, 'APIDefinition'), 'its Classic form is an APIDefinition');
    tt.equal(forms.is_oas, true);
  });
});

/** A model body against an example of it: every field of the example is there (what else it has, the schema tests check). */
function sameFields(tt: Test, actual: any, expected: any, what: string): void {
  const missing = Object.keys(expected ?? {}).filter((k) => !(k in (actual ?? {})));
  tt.same(missing, [], `${what}: every field of the example`);
}
