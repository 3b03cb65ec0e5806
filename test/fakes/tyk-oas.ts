/**
 * The Tyk OAS API model the Tyk fakes share (the gateway's /tyk/apis/oas, the Dashboard's
 * /api/apis/oas): reading a request body as a Tyk OAS document, the Tyk Classic definition the
 * gateway derives from it, and what a read adds to it. Pure; no I/O. Built from the gateway
 * swagger (5.14: the OAS routes, the TykVendorExtension schemas) and the Tyk OAS document
 * schema it names; the messages are the gateway's.
 *
 * - `readOasBody(raw)`: the body as the gateway's OAS routes take it. Not JSON, or JSON that is
 *   not an object → 'malformed'; no `x-tyk-api-gateway` object → 'no-extension' (each fake says
 *   these in its own documented words); then the schema problems, one per line in the words of
 *   the gateway's JSON-schema validator (`<field path>: <problem>`, "(root)" for the top), as a
 *   400 message → 'invalid'. An `openapi` version with no schema (not 3.0.x or 3.1.x) is
 *   refused alone, as the gateway does, with `Schema not found for version "<v>"` (or
 *   `Malformed version: <v>` when it is no version at all).
 *   Checked: openapi (required; a 3.0.x / 3.1.x version), info (required; title, version),
 *   paths (required object), and in the extension: info (required; name matching `\S+`, state
 *   with a boolean active; id a string), upstream (required; url or loadBalancing), server
 *   (required; listenPath with a `value` matching `\S+`, strip a boolean). Types are checked
 *   where these name one.
 * - `classicOf(doc)`: the Tyk Classic fields the document maps to (api_id ← info.id, id ←
 *   info.dbId, org_id ← info.orgId, name, expiration, active, internal, proxy.listen_path,
 *   proxy.strip_listen_path, proxy.target_url, domain ← server.customDomain, use_keyless ←
 *   not server.authentication.enabled), with `is_oas: true` and the version data every Tyk OAS
 *   API gets (not versioned, one version "" using extended paths). Each fake fills the rest.
 * - `filledOas(doc, classic)`: the document a read answers: the stored one with the extension's
 *   info (id, dbId, orgId, name, expiration, state) and listen path taken from the Classic
 *   definition it was loaded as (so a listen path the gateway renamed shows renamed); empty
 *   dbId, orgId, expiration and a false state.internal are left out, as Tyk omits them.
 * - `withServers(doc, host, previous?)`: the `servers` the gateway (5.11 and later) writes:
 *   first the ones it generates from the listen path (`http://<host><path>` and the relative
 *   `<path>`, the path cleaned of its trailing slash; the custom domain instead of both when
 *   one is enabled), then the document's own, without duplicates (compared without a trailing
 *   slash) and without those generated for `previous` (the definition being replaced).
 * - `withoutExtension(doc)`: the document without `x-tyk-api-gateway` (`mode=public`).
 * - `oasId(doc)` and `withOasId(doc, id)`: read and set `x-tyk-api-gateway.info.id`.
 *
 * Leaves out: the rest of the OpenAPI schema (operations, components, security schemes: the
 * gateway validates the whole document), YAML bodies (the gateway takes them too), the
 * extension's other fields (kept as sent, never mapped), versioning and tag-based servers.
 */

export type Json = null | boolean | number | string | Json[] | JsonObject;
export interface JsonObject {
  [key: string]: Json;
}

export const TYK_EXTENSION = 'x-tyk-api-gateway';

export type OasBody = { ok: true; doc: JsonObject } | { ok: false; reason: 'malformed' | 'no-extension' } | { ok: false; reason: 'invalid'; message: string };

function isObject(v: Json | undefined): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function obj(v: Json | undefined): JsonObject {
  return isObject(v) ? v : {};
}

function str(v: Json | undefined): string {
  return typeof v === 'string' ? v : '';
}

export function readOasBody(raw: string): OasBody {
  let parsed: Json;
  try {
    parsed = JSON.parse(raw) as Json;
  } catch {
    return { ok: false, reason: 'malformed' };
  }
  if (!isObject(parsed)) return { ok: false, reason: 'malformed' };
  if (!isObject(parsed[TYK_EXTENSION])) return { ok: false, reason: 'no-extension' };
  const problems = oasProblems(parsed);
  return problems.length === 0 ? { ok: true, doc: parsed } : { ok: false, reason: 'invalid', message: problems.join('\n') };
}

// ---------------------------------------------------------------------------
// Validation, in the validator's words.

/** gojsonschema's name for a JSON value's type. */
function jsonType(v: Json): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

type Expected = 'string' | 'boolean' | 'object';

/** Collects problems at field paths, as the validator words them. */
class Problems {
  readonly list: string[] = [];

  /** `field` of the object at `at` must be there; returns it (undefined when missing). */
  required(at: string, holder: JsonObject, field: string): Json | undefined {
    if (holder[field] === undefined) this.list.push(`${at}: ${field} is required`);
    return holder[field];
  }

  /** v, when present, must be of this type; returns whether it is. */
  typed(path: string, v: Json | undefined, want: Expected): boolean {
    if (v === undefined) return false;
    const given = jsonType(v);
    if (given === want) return true;
    this.list.push(`${path}: Invalid type. Expected: ${want}, given: ${given}`);
    return false;
  }

  /** A required string matching `pattern`. */
  text(at: string, holder: JsonObject, field: string, pattern?: RegExp): void {
    const v = this.required(at, holder, field);
    const path = `${at === '(root)' ? '' : `${at}.`}${field}`;
    if (this.typed(path, v, 'string') && pattern && !pattern.test(str(v))) this.list.push(`${path}: Does not match pattern '${pattern.source}'`);
  }

  /** A required object; returns it ({} when missing or not one). */
  object(at: string, holder: JsonObject, field: string): JsonObject {
    const v = this.required(at, holder, field);
    const path = `${at === '(root)' ? '' : `${at}.`}${field}`;
    return this.typed(path, v, 'object') ? obj(v) : {};
  }
}

const OPENAPI_PATTERNS: Record<string, RegExp> = { '3.0': /^3\.0\.\d(-.+)?$/, '3.1': /^3\.1\.\d+(-.+)?$/ };
const NOT_BLANK = /\S+/;

/** The version refusal the gateway answers before any schema check, if any. */
function unknownVersion(v: Json | undefined): string | undefined {
  if (typeof v !== 'string' || v === '') return undefined;
  const m = /^v?(\d+)(?:\.(\d+))?(?:\.\d+)?(?:[-+].*)?$/.exec(v);
  if (!m) return `Malformed version: ${v}`;
  return `${m[1]}.${m[2] ?? '0'}` in OPENAPI_PATTERNS ? undefined : `Schema not found for version "${v}"`;
}

export function oasProblems(doc: JsonObject): string[] {
  const refused = unknownVersion(doc.openapi);
  if (refused !== undefined) return [refused];
  const p = new Problems();
  const version = p.required('(root)', doc, 'openapi');
  if (p.typed('openapi', version, 'string')) {
    const pattern = OPENAPI_PATTERNS[str(version).slice(0, 3)] ?? (OPENAPI_PATTERNS['3.0'] as RegExp);
    if (!pattern.test(str(version))) p.list.push(`openapi: Does not match pattern '${pattern.source}'`);
  }
  const info = p.object('(root)', doc, 'info');
  if (isObject(doc.info)) {
    p.text('info', info, 'title');
    p.text('info', info, 'version');
  }
  p.object('(root)', doc, 'paths');
  extensionProblems(p, obj(doc[TYK_EXTENSION]));
  return p.list;
}

const EXTENSION_PARTS: readonly [string, (p: Problems, v: Json) => void][] = [
  ['info', infoProblems],
  ['upstream', upstreamProblems],
  ['server', serverProblems],
];

function extensionProblems(p: Problems, ext: JsonObject): void {
  for (const [field, check] of EXTENSION_PARTS) {
    const v = p.required(TYK_EXTENSION, ext, field);
    if (v !== undefined) check(p, v);
  }
}

function infoProblems(p: Problems, v: Json): void {
  const at = `${TYK_EXTENSION}.info`;
  if (!p.typed(at, v, 'object')) return;
  const info = obj(v);
  p.text(at, info, 'name', NOT_BLANK);
  p.typed(`${at}.id`, info.id, 'string');
  const state = p.object(at, info, 'state');
  if (isObject(info.state)) p.typed(`${at}.state.active`, p.required(`${at}.state`, state, 'active'), 'boolean');
}

function upstreamProblems(p: Problems, v: Json): void {
  const at = `${TYK_EXTENSION}.upstream`;
  if (!p.typed(at, v, 'object')) return;
  const upstream = obj(v);
  if (upstream.url === undefined && upstream.loadBalancing === undefined) {
    p.list.push(`${at}: Must validate at least one schema (anyOf)`, `${at}: url is required`);
  }
  p.typed(`${at}.url`, upstream.url, 'string');
}

function serverProblems(p: Problems, v: Json): void {
  const at = `${TYK_EXTENSION}.server`;
  if (!p.typed(at, v, 'object')) return;
  const listenPath = p.object(at, obj(v), 'listenPath');
  if (!isObject(obj(v).listenPath)) return;
  p.text(`${at}.listenPath`, listenPath, 'value', NOT_BLANK);
  p.typed(`${at}.listenPath.strip`, listenPath.strip, 'boolean');
}

// ---------------------------------------------------------------------------
// The Classic definition, and what a read adds.

function extension(doc: JsonObject): { info: JsonObject; state: JsonObject; server: JsonObject; listenPath: JsonObject; upstream: JsonObject } {
  const ext = obj(doc[TYK_EXTENSION]);
  const info = obj(ext.info);
  const server = obj(ext.server);
  return { info, state: obj(info.state), server, listenPath: obj(server.listenPath), upstream: obj(ext.upstream) };
}

export function oasId(doc: JsonObject): string {
  return str(extension(doc).info.id);
}

/** A copy of a checked document (it has the extension) whose `info.id` is id. */
export function withOasId(doc: JsonObject, id: string): JsonObject {
  const out = structuredClone(doc);
  const ext = obj(out[TYK_EXTENSION]);
  ext.info = { ...obj(ext.info), id };
  out[TYK_EXTENSION] = ext;
  return out;
}

export function classicOf(doc: JsonObject): JsonObject {
  const { info, state, server, listenPath, upstream } = extension(doc);
  const domain = obj(server.customDomain);
  return {
    api_id: str(info.id),
    id: str(info.dbId),
    org_id: str(info.orgId),
    name: str(info.name),
    expiration: str(info.expiration),
    active: state.active === true,
    internal: state.internal === true,
    use_keyless: obj(server.authentication).enabled !== true,
    proxy: { listen_path: str(listenPath.value), strip_listen_path: listenPath.strip === true, target_url: str(upstream.url) },
    domain: str(domain.name),
    domain_disabled: domain.enabled !== true,
    is_oas: true,
    version_data: { not_versioned: true, default_version: '', versions: { '': { use_extended_paths: true } } },
  };
}

/** Sets `key` to `v`, or removes it when v is empty (Go's omitempty). */
function setOrOmit(o: JsonObject, key: string, v: string | boolean): void {
  if (v === '' || v === false) delete o[key];
  else o[key] = v;
}

export function filledOas(doc: JsonObject, classic: JsonObject): JsonObject {
  const out = structuredClone(doc);
  const ext = obj(out[TYK_EXTENSION]);
  out[TYK_EXTENSION] = ext;
  const info: JsonObject = { ...obj(ext.info), id: str(classic.api_id), name: str(classic.name) };
  setOrOmit(info, 'dbId', str(classic.id));
  setOrOmit(info, 'orgId', str(classic.org_id));
  setOrOmit(info, 'expiration', str(classic.expiration));
  const state: JsonObject = { ...obj(info.state), active: classic.active === true };
  setOrOmit(state, 'internal', classic.internal === true);
  info.state = state;
  ext.info = info;
  const server = obj(ext.server);
  server.listenPath = { ...obj(server.listenPath), value: str(obj(classic.proxy).listen_path) };
  ext.server = server;
  return out;
}

export function withoutExtension(doc: JsonObject): JsonObject {
  const out = structuredClone(doc);
  delete out[TYK_EXTENSION];
  return out;
}

// ---------------------------------------------------------------------------
// Servers.

/** A listen path as the gateway puts it in a URL: leading slash, no trailing one, no doubled ones. */
function cleanPath(path: string): string {
  const joined = `/${path}`.replace(/\/+/g, '/');
  return joined.length > 1 ? joined.replace(/\/$/, '') : joined;
}

/** What the gateway generates for a document's listen path on `host`. */
export function generatedServers(doc: JsonObject, host: string): string[] {
  const { server, listenPath } = extension(doc);
  const path = cleanPath(str(listenPath.value));
  const domain = obj(server.customDomain);
  if (domain.enabled === true && str(domain.name) !== '') return [`http://${str(domain.name).replace(/\/$/, '')}${path}`];
  return [`http://${host}${path}`, path];
}

function normalUrl(url: string): string {
  return url.length > 1 ? url.replace(/\/+$/, '') : url;
}

export function withServers(doc: JsonObject, host: string, previous?: JsonObject): JsonObject {
  const generated = generatedServers(doc, host);
  const stale = new Set((previous === undefined ? [] : generatedServers(previous, host)).map(normalUrl));
  const seen = new Set(generated.map(normalUrl));
  const own = (Array.isArray(doc.servers) ? doc.servers : []).filter((s) => {
    const url = normalUrl(str(obj(s).url));
    if (stale.has(url) || seen.has(url)) return false;
    seen.add(url);
    return true;
  });
  return { ...structuredClone(doc), servers: [...generated.map((url) => ({ url })), ...structuredClone(own)] };
}
