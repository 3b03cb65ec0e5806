/**
 * Loopback fake of the Tyk Gateway (open-source) control API, for tests.
 *
 * Models (the gateway swagger, 5.14, and Tyk's gateway/api.go, api_loader.go and
 * apidef/validator.go):
 * - `x-tyk-authorization` auth on every /tyk/ route (403 "Attempted administrative access with
 *   invalid or missing key!"), JSON error bodies `{"status":"error","message":...}`, 405 for
 *   unsupported methods. A /tyk/ path the gateway has no route for answers as Go's router
 *   does, before any auth: 404 `404 page not found` as text/plain.
 * - Successful writes answer ApiModifyKeySuccess `{"key":<id>,"status":"ok","action":
 *   "added"|"modified"|"deleted"}`; reloads `{"status":"ok","message":""}`.
 * - Not-found messages as the swagger gives them: GET /tyk/apis/{id} "API not found.", PUT and
 *   DELETE "API not found", GET /tyk/policies/{id} "Policy not found".
 * - Two layers: the app-path FILES (written by POST/PUT/DELETE) and the LOADED
 *   set (read by GET). Only a reload copies files → loaded, so writes are
 *   invisible to GET until a reload has been applied.
 * - POST /tyk/apis and /tyk/policies are upserts; an empty id is generated.
 *   PUT /tyk/apis/{id} needs the id to be loaded (404); PUT /tyk/policies/{id}
 *   does not (the real gateway writes the file regardless). Both need the body
 *   id to equal the path id (400).
 * - DELETE of an API: newer gateways answer 404 for an id that is not loaded and 500
 *   "Delete failed" when it is loaded but its file is gone; `legacyDelete` models older
 *   gateways, which only look at the file (500 when absent). DELETE of a policy only looks at
 *   the file on every gateway: the swagger documents 500 "Delete failed", no 404.
 * - `version: '3.1'`: a gateway from before the policy and OAS APIs: /tyk/policies,
 *   /tyk/policies/{id} and /tyk/apis/oas/{id} have no route (the plain-text 404 above, as Tyk
 *   Gateway 3.1 answers /tyk/policies; the OAS API arrived in the 5.x line), and DELETE is
 *   `legacyDelete` unless that says otherwise. /tyk/apis/oas itself is, to such a gateway, the
 *   Classic route /tyk/apis/{apiID} with the id "oas": GET answers 404 "API not found." (Tyk's
 *   JSON, not the router's page) and POST is 3.1's write by path id, refused with 400 "Request
 *   APIID does not match that in Definition! For Updtae operations these must match." (3.1's
 *   words) for any body without `api_id: "oas"`.
 * - Tyk OAS APIs (the default version, 'current'; the model in ./tyk-oas.ts), two files each
 *   as Tyk writes them: the Classic definition the document maps to (`is_oas: true`, layer
 *   'api') and the document itself (`<id>-oas.json`, layer 'oas'); reads show the loaded copies
 *   only, so like Classic APIs they are invisible until a reload.
 *   POST /tyk/apis/oas: the body is checked (./tyk-oas.ts) → 400 "request malformed", "the
 *   payload should contain x-tyk-api-gateway" or the schema problems; the id is
 *   `x-tyk-api-gateway.info.id`, generated (32 hex) when empty, and written into the document;
 *   `servers` are regenerated from the listen path on `serverHost` (./tyk-oas.ts). An id that
 *   exists is overwritten, as a Classic POST is: Tyk 5.x checks nothing there, and the swagger
 *   documents no refusal. → 200 ApiModifyKeySuccess "added". The versioning parameters
 *   (base_api_id, ...) answer 501 (not modelled).
 *   PUT /tyk/apis/oas/{id}: the body checked as for POST; an id that is not loaded → 404 "API
 *   not found"; a loaded Classic API → 400 "the supplied API definition is in OAS format,
 *   please use the Tyk classic format for this API" (Tyk's words for it); a body whose info.id
 *   is not the path's (also an empty one) → 400 "Request APIID does not match that in
 *   Definition! For Update operations these must match."; the servers the previous (loaded)
 *   definition had generated are replaced. → 200 "modified".
 *   GET /tyk/apis/oas lists the loaded OAS APIs; GET /tyk/apis/oas/{id} answers one, 404 "API
 *   not found" for an id not loaded, 400 "the requested API definition is in Tyk classic
 *   format, please use old API endpoint" for a Classic API; each read is the stored document
 *   filled from the Classic definition it was loaded as (./tyk-oas.ts: info.id, dbId — the
 *   24-hex `id` the fake gives loaded APIs —, orgId when set, name, state, the listen path as
 *   loaded, so a renamed one shows renamed); `mode=public` leaves `x-tyk-api-gateway` out.
 *   DELETE /tyk/apis/oas/{id} is DELETE /tyk/apis/{id} (one handler in Tyk): an OAS API needs
 *   both of its files (else 500 "Delete failed") and loses both.
 *   The Classic routes see an OAS API in its Classic form: GET /tyk/apis lists it, GET
 *   /tyk/apis/{id} answers it (`is_oas: true`), PUT /tyk/apis/{id} of one is 400 "this API
 *   endpoint only supports Tyk Classic APIs; please use the appropriate Tyk OAS API endpoint",
 *   and a Classic POST of its id makes it a Classic API again (`is_oas` is always false on a
 *   Classic write; its OAS file stays behind, unread). A loaded Classic definition with
 *   `is_oas: true` whose OAS file is gone reads as an empty document filled from it.
 *   PATCH, export, import and versions under /tyk/apis/oas answer 501 (not modelled).
 * - `policySource: 'service'`: a gateway whose policies come from a Dashboard refuses policy
 *   writes (POST, PUT, DELETE) with 500 "Due to enabled service policy source, please use the
 *   Dashboard API." (the swagger's 500 for POST /tyk/policies); GET lists what is loaded.
 * - Go decoding: invalid JSON or a field of the wrong JSON type → 400
 *   "Request malformed"; fields unknown to the model are dropped at top level.
 * - The real POST/PUT-time validation rules for APIs (duplicate GraphQL data
 *   source names, all auth sources disabled, invalid IP/CIDR in allow/block
 *   lists, negative hard timeout, load balancing without targets) → 400
 *   "Validation of API Definition failed. Reason: <reason>.".
 * - Echo: what GET returns is the full model, the stored object merged over
 *   Go zero values (nested structs, map entries such as version_data.versions
 *   and access_rights filled too; JSON null over a struct/scalar keeps the
 *   zero value); APIs get a stable 24-hex `id` when theirs is empty.
 * - Listen path collisions, exactly as processSpec does it: when two loaded
 *   APIs share domain+listen_path, every one of them that was not already
 *   loaded with that listen path gets `<listen_path>-<api_id>` (then `_` while
 *   still colliding). Two new APIs in one reload are therefore both renamed.
 * - Reloads: /tyk/reload/group and /tyk/reload answer ok at once and apply
 *   `reloadDelayMs` later (/tyk/reload?block=true applies before answering).
 *   A group reload sent within `joinDelayMs` of start/restart is lost (the
 *   gateway has not joined its pub/sub channel yet); `dropReloads(n)` loses
 *   the next n reloads of either kind. Lost reloads still answer ok.
 * - restart(): a new process. The loaded set and queued reloads are lost; the
 *   files too unless `keepFiles`, in which case they are loaded at start as a
 *   real gateway does (`loadOnStart: false` leaves them unloaded).
 * - Test controls: back-door edits of either layer (per kind: 'api', 'policy',
 *   'oas'), fault injection (status, delay, dropped socket, hang) and a log of
 *   calls, shaped like the Kubernetes fake's.
 * - /tyk/certs: the certificate store (./tyk-certs.ts).
 * - `tls`: served over HTTPS with the certificate given (a gateway with `use_ssl`), on 127.0.0.1.
 * - Cost: a reload fills the defaults of a file once, while that file is unchanged (each write
 *   stores a new file; back-door edits copy before they change), and the loaded definitions are
 *   never changed in place, so each one's JSON is written once and reused by every read. A real
 *   gateway loads in goroutines beside the ones serving requests; refilling 10,000 definitions
 *   on every reload stalled this single-threaded fake's answers for ~0.4 s, which no real
 *   gateway does.
 *
 * Leaves out: what ./tyk-oas.ts leaves out, keys, orgs, versions endpoints,
 * the proxying itself (so no "Version information not found"), reload coalescing (each kept reload is applied once), API load-time
 * skipping (which does not change what GET shows), Go's case-insensitive key
 * matching and int-vs-float checks, unknown fields below the top level (kept),
 * and the newest gateways' refusal of a policy POST without an id (here one
 * is generated, as older gateways do).
 */

import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import type { FaultSpec as BaseFaultSpec, FaultHandle } from './faults.js';
import { cloneJson as clone, listenOnLoopback } from './http-plumbing.js';
import { CertStore, gatewayCerts, type StoredCert } from './tyk-certs.js';
import {
  ACCESS_DEFINITION,
  API_DEFINITION,
  AUTH_CONFIG,
  gatewayError as apiError,
  type CallRecord,
  fillModel,
  isObject,
  type Json,
  type JsonObject,
  modelMismatch,
  POLICY,
  type Reply,
  reply,
  type ServedTls,
  type Shape,
  TykFakeBase,
  VERSION_INFO,
} from './tyk-fake-base.js';
import { classicOf, filledOas, oasId, readOasBody, withOasId, withoutExtension, withServers } from './tyk-oas.js';

export type { FaultHandle } from './faults.js';
export type { CallRecord, Json, JsonObject } from './tyk-fake-base.js';

export type Kind = 'api' | 'policy';

/** What the fake keeps in layers: Classic APIs (OAS APIs' Classic form too), policies, OAS documents. */
export type Layered = Kind | 'oas';

export interface FakeTykOptions {
  /** Value `x-tyk-authorization` must carry; default "fake-tyk-secret". */
  secret?: string;
  /** How long after a reload request it is applied; default 5 ms. */
  reloadDelayMs?: number;
  /** Group reloads within this long after start/restart are lost; default 0. */
  joinDelayMs?: number;
  /** Older gateways: DELETE of a missing file is 500 "Delete failed" (no 404); default true for version 3.1. */
  legacyDelete?: boolean;
  /** The release modelled: 'current' (the swagger's; default) or '3.1' (no policy or OAS routes). */
  version?: 'current' | '3.1';
  /** Where policies come from: 'file' (written through /tyk/policies; default) or 'service' (a Dashboard). */
  policySource?: 'file' | 'service';
  /** The host (and port) the gateway names in the `servers` it generates for OAS APIs; default "127.0.0.1:8080". */
  serverHost?: string;
  /** Serve HTTPS with this certificate and key (PEM), as a gateway with `http_server_options.use_ssl`; default plain HTTP. */
  tls?: ServedTls;
}

/** A fault to inject; a `status` without `body` answers with a Tyk error body. */
export type FaultSpec = BaseFaultSpec<CallRecord>;

export interface ReloadCounts {
  requested: number;
  applied: number;
  dropped: number;
}

export interface RestartOptions {
  /** Keep the app-path files (a restart that kept its disk); default false. */
  keepFiles?: boolean;
  /** Load the kept files at start, as a real gateway does; default true. */
  loadOnStart?: boolean;
}

export type Mutator = (obj: JsonObject) => void | JsonObject;

export interface FakeTykGateway {
  readonly url: string;
  readonly secret: string;
  close(): Promise<void>;
  restart(options?: RestartOptions): void;
  /** What reads show (for 'oas': the documents as GET answers them, without `mode`). */
  loaded(kind: Layered): Map<string, JsonObject>;
  /** The app-path files (for 'oas': the `<id>-oas.json` documents). */
  files(kind: Layered): Map<string, JsonObject>;
  reloadNow(): void;
  readonly reloads: ReloadCounts;
  dropReloads(n: number): void;
  waitForReloads(): Promise<void>;
  editLoaded(kind: Layered, id: string, mutate: Mutator): void;
  editFile(kind: Layered, id: string, mutate: Mutator): void;
  removeLoaded(kind: Layered, id: string): boolean;
  removeFile(kind: Layered, id: string): boolean;
  inject(spec: FaultSpec): FaultHandle;
  clearFaults(): void;
  readonly calls: CallRecord[];
  /** Calls with this method (case-insensitive; "*" or undefined for any) and path. */
  count(method?: string, path?: RegExp | string): number;
  writes(): number;
  resetCalls(): void;
  /** The certificate store (/tyk/certs), by id. */
  certs(): ReadonlyMap<string, StoredCert>;
  /** The most writes (create, update, delete) answered at once since the start or the last resetCalls. */
  peakConcurrentWrites(): number;
  /** Takes another fake's files as its own and loads them (a replica that got the same writes: the ids it makes up at load are its own), nothing logged. */
  copyFrom(other: FakeTykGateway): void;
}

// ---------------------------------------------------------------------------
// The models (./tyk-fake-base.ts): apidef.APIDefinition and user.Policy.

const SHAPES: Record<Kind, Shape> = {
  api: {
    defaults: API_DEFINITION,
    mapEntries: { 'version_data.versions': VERSION_INFO, auth_configs: AUTH_CONFIG },
  },
  policy: { defaults: POLICY, mapEntries: { access_rights: ACCESS_DEFINITION } },
};

export interface KindInfo {
  idField: string;
  /** GET's message for an id that is not loaded */
  getNotFound: string;
  notFound: string;
  mismatch: string;
}

export const KINDS: Record<Kind, KindInfo> = {
  api: {
    idField: 'api_id',
    getNotFound: 'API not found.',
    notFound: 'API not found',
    mismatch: 'Request APIID does not match that in Definition! For Update operations these must match.',
  },
  policy: {
    idField: 'id',
    getNotFound: 'Policy not found',
    notFound: 'Policy not found',
    mismatch: 'Request ID does not match that in policy! For Update operations these must match.',
  },
};

// ---------------------------------------------------------------------------
// JSON helpers.

function str(v: Json | undefined): string {
  return typeof v === 'string' ? v : '';
}

export function fillDefaults(kind: Kind, stored: JsonObject): JsonObject {
  return fillModel(SHAPES[kind], stored);
}

export type Decoded = { ok: true; value: JsonObject } | { ok: false };

export function decodeBody(kind: Kind, raw: string): Decoded {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return { ok: false };
  }
  if (parsed === null) return { ok: true, value: {} };
  if (!isObject(parsed)) return { ok: false };
  if (modelMismatch(SHAPES[kind], parsed)) return { ok: false };
  return { ok: true, value: parsed };
}

// ---------------------------------------------------------------------------
// API definition validation (apidef.DefaultValidationRuleSet).

function list(v: Json | undefined): Json[] {
  return Array.isArray(v) ? v : [];
}

function obj(v: Json | undefined): JsonObject {
  return isObject(v) ? v : {};
}

function duplicateDataSources(def: JsonObject): string | undefined {
  const sources = list(obj(obj(def.graphql).engine).data_sources);
  if (sources.length <= 1) return undefined;
  const names = sources.map((s) => str(obj(s).name).toLowerCase().trim());
  return new Set(names).size === names.length ? undefined : 'duplicate data source names are not allowed';
}

const AUTH_SOURCE_FLAGS: Record<string, string> = {
  authToken: 'use_standard_auth',
  jwt: 'enable_jwt',
  hmac: 'enable_signature_checking',
  oauth: 'use_oauth2',
  oidc: 'use_openid',
  coprocess: 'enable_coprocess_auth',
};

function allAuthSourcesDisabled(def: JsonObject): string | undefined {
  const configs = obj(def.auth_configs);
  for (const name of Object.keys(configs).sort()) {
    const flag = AUTH_SOURCE_FLAGS[name];
    const c = obj(configs[name]);
    const enabled = c.use_param === true || c.use_cookie === true || c.disable_header !== true;
    if (flag && def[flag] === true && !enabled) {
      return `all auth sources are disabled for ${name}, at least one of header/cookie/query must be enabled`;
    }
  }
  return undefined;
}

function validIpOrCidr(ip: string): boolean {
  if (ip.split('/').length !== 2) return isIP(ip) !== 0;
  const [addr = '', bits = ''] = ip.split('/');
  const family = isIP(addr);
  const max = family === 4 ? 32 : 128;
  return family !== 0 && /^\d+$/.test(bits) && Number(bits) <= max;
}

function invalidIp(def: JsonObject): string | undefined {
  const lists = [def.enable_ip_whitelisting === true ? list(def.allowed_ips) : [], def.enable_ip_blacklisting === true ? list(def.blacklisted_ips) : []];
  const bad = lists.flat().find((ip) => !validIpOrCidr(str(ip)));
  return bad === undefined ? undefined : `invalid IP/CIDR ${JSON.stringify(str(bad))}`;
}

function negativeTimeout(def: JsonObject): string | undefined {
  const versions = Object.values(obj(obj(def.version_data).versions));
  const timeouts = versions.flatMap((v) => list(obj(obj(v).extended_paths).hard_timeouts));
  const negative = timeouts.some((t) => {
    const timeout = obj(t).timeout;
    return typeof timeout === 'number' && timeout < 0;
  });
  return negative ? 'invalid timeout value' : undefined;
}

function loadBalancingWithoutTargets(def: JsonObject): string | undefined {
  const proxy = obj(def.proxy);
  if (proxy.enable_load_balancing !== true || list(proxy.target_list).length > 0) return undefined;
  return 'all load balancing targets have weight 0, at least one target must have weight > 0';
}

const API_RULES = [duplicateDataSources, allAuthSourcesDisabled, invalidIp, negativeTimeout, loadBalancingWithoutTargets];

export function validateApi(def: JsonObject): string | undefined {
  for (const rule of API_RULES) {
    const reason = rule(def);
    if (reason !== undefined) return `Validation of API Definition failed. Reason: ${reason}.`;
  }
  return undefined;
}

// ---------------------------------------------------------------------------
// Loading (a reload): files → loaded.

function listenPath(spec: JsonObject): string {
  return str(obj(spec.proxy).listen_path);
}

function listenHash(spec: JsonObject, path = listenPath(spec)): string {
  const domain = spec.domain_disabled === true ? '' : str(spec.domain);
  return domain + path;
}

export function countByListenHash(specs: JsonObject[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const s of specs) counts.set(listenHash(s), (counts.get(listenHash(s)) ?? 0) + 1);
  return counts;
}

export function fixListenPath(spec: JsonObject, counts: Map<string, number>, prev: JsonObject | undefined): void {
  if ((counts.get(listenHash(spec)) ?? 0) < 2) return;
  if (prev !== undefined && listenPath(prev) === listenPath(spec)) return; // it keeps the path it had
  let path = `${listenPath(spec)}-${str(spec.api_id)}`;
  while ((counts.get(listenHash(spec, path)) ?? 0) >= 2) path += '_';
  obj(spec.proxy).listen_path = path;
}

function newHex(bytes: number): string {
  return randomBytes(bytes).toString('hex');
}

function newObjectId(): string {
  const seconds = Math.floor(Date.now() / 1000)
    .toString(16)
    .padStart(8, '0');
  return seconds + newHex(8);
}

/** The OAS documents of the loaded OAS APIs (`apis`: the loaded Classic forms), as reads answer them (see the header). */
export function loadOas(apis: Map<string, JsonObject>, files: Map<string, JsonObject>): Map<string, JsonObject> {
  const docs = [...apis].filter(([, classic]) => classic.is_oas === true);
  return new Map(docs.map(([id, classic]) => [id, filledOas(files.get(id) ?? {}, classic)]));
}

export function loadKind(kind: Kind, files: Map<string, JsonObject>): JsonObject[] {
  return [...files.keys()].sort().map((key) => loadFile(kind, key, files.get(key) ?? {}));
}

/** One file as a reload loads it: its defaults filled, its id the key it is stored under when it has none. */
function loadFile(kind: Kind, key: string, file: JsonObject): JsonObject {
  const idField = KINDS[kind].idField;
  const spec = fillDefaults(kind, file);
  if (str(spec[idField]) === '') spec[idField] = key;
  return spec;
}

// ---------------------------------------------------------------------------
// The fake.

function modified(key: string, action: 'added' | 'modified' | 'deleted'): Reply {
  return reply(200, { key, status: 'ok', action });
}

const FORBIDDEN = 'Attempted administrative access with invalid or missing key!';
const SERVICE_POLICIES = 'Due to enabled service policy source, please use the Dashboard API.';
const CLASSIC_ON_OAS_ROUTE = 'the requested API definition is in Tyk classic format, please use old API endpoint';
const CLASSIC_PUT_ON_OAS_ROUTE = 'the supplied API definition is in OAS format, please use the Tyk classic format for this API';
const OAS_PUT_ON_CLASSIC_ROUTE = 'this API endpoint only supports Tyk Classic APIs; please use the appropriate Tyk OAS API endpoint';
/** Tyk Gateway 3.1's refusal of a write whose body id is not the path's (its typo included). */
const LEGACY_MISMATCH = 'Request APIID does not match that in Definition! For Updtae operations these must match.';

/** The gateway's words for an OAS body it cannot take (./tyk-oas.ts); schema problems say their own. */
export const OAS_REFUSALS = { malformed: 'request malformed', 'no-extension': 'the payload should contain x-tyk-api-gateway' } as const;

/** The documented query parameters of POST /tyk/apis/oas that the fake does not apply (API versions). */
const OAS_VERSION_PARAMS = ['base_api_id', 'base_api_version_name', 'new_version_name', 'set_default'];

/** Go's http.NotFound: what the gateway's router answers for a path it has no route for. */
const PAGE_NOT_FOUND: Reply = {
  status: 404,
  body: '404 page not found\n',
  raw: true,
  headers: { 'Content-Type': 'text/plain; charset=utf-8', 'X-Content-Type-Options': 'nosniff' },
};

/** The /tyk/ routes the fake serves. */
type Route =
  | { name: 'collection'; kind: Kind }
  | { name: 'item'; kind: Kind; id: string }
  | { name: 'oas-collection' }
  | { name: 'oas-item'; id: string }
  | { name: 'oas-unmodelled'; what: string }
  | { name: 'reload'; group: boolean }
  | { name: 'certs'; id?: string };

function routeOf(path: string): Route | undefined {
  if (/^\/tyk\/certs\/?$/.test(path)) return { name: 'certs' };
  const cert = /^\/tyk\/certs\/([^/]+)$/.exec(path);
  if (cert) return { name: 'certs', id: decodeURIComponent(cert[1] ?? '') };
  if (/^\/tyk\/apis\/oas\/?$/.test(path)) return { name: 'oas-collection' };
  const unmodelled = /^\/tyk\/apis\/oas\/(export|import|[^/]+\/(export|versions))\/?$/.exec(path);
  if (unmodelled) return { name: 'oas-unmodelled', what: `/tyk/apis/oas/${unmodelled[1] ?? ''}` };
  const oas = /^\/tyk\/apis\/oas\/([^/]+)$/.exec(path);
  if (oas) return { name: 'oas-item', id: decodeURIComponent(oas[1] ?? '') };
  const collection = /^\/tyk\/(apis|policies)\/?$/.exec(path);
  if (collection) return { name: 'collection', kind: kindOf(collection[1]) };
  const item = /^\/tyk\/(apis|policies)\/([^/]+)$/.exec(path);
  if (item) return { name: 'item', kind: kindOf(item[1]), id: decodeURIComponent(item[2] ?? '') };
  if (/^\/tyk\/reload\/group\/?$/.test(path)) return { name: 'reload', group: true };
  if (/^\/tyk\/reload\/?$/.test(path)) return { name: 'reload', group: false };
  return undefined;
}

/**
 * The route as Tyk Gateway 3.1 takes the path, undefined where it has none: it predates the
 * policy and OAS APIs, and its /tyk/apis/{apiID} takes /tyk/apis/oas (the id "oas").
 */
function routeIn31(route: Route): Route | undefined {
  switch (route.name) {
    case 'oas-collection':
      return { name: 'item', kind: 'api', id: 'oas' };
    case 'oas-item':
    case 'oas-unmodelled':
      return undefined;
    case 'collection':
    case 'item':
      return route.kind === 'api' ? route : undefined;
    default:
      return route;
  }
}

/** A 501 for documented query parameters the fake does not apply (rather than ignore them). */
function notModelled(query: URLSearchParams, names: readonly string[]): Reply | undefined {
  const used = names.filter((n) => query.has(n));
  return used.length === 0 ? undefined : apiError(501, `not modelled by the fake: ${used.join(', ')}`);
}

const WRITE_PATH = /^\/tyk\/(apis|policies)(\/|$)/;

class FakeTyk extends TykFakeBase {
  readonly secret: string;
  private readonly reloadDelayMs: number;
  private readonly joinDelayMs: number;
  private readonly legacyDelete: boolean;
  private readonly version: 'current' | '3.1';
  private readonly policySource: 'file' | 'service';
  private readonly serverHost: string;
  private readonly store: Record<'files' | 'loaded', Record<Layered, Map<string, JsonObject>>>;
  private readonly objectIds = new Map<string, string>();
  /** Per API file (unchanged while the same object): its loaded form before any listen-path fix; shared, never changed */
  private readonly loadedApiOf = new WeakMap<JsonObject, JsonObject>();
  private joinUntil: number;
  private dropNext = 0;
  readonly counts: ReloadCounts = { requested: 0, applied: 0, dropped: 0 };
  /** /tyk/certs (./tyk-certs.ts): kept in the gateway's Redis, so a restart keeps them */
  readonly certs = new CertStore();
  private readonly reloadTimers = new Map<NodeJS.Timeout, () => void>();
  private readonly pending = new Set<Promise<void>>();

  constructor(options: FakeTykOptions) {
    super('http://fake-tyk', WRITE_PATH, options.tls);
    this.secret = options.secret ?? 'fake-tyk-secret';
    this.reloadDelayMs = options.reloadDelayMs ?? 5;
    this.joinDelayMs = options.joinDelayMs ?? 0;
    this.version = options.version ?? 'current';
    this.legacyDelete = options.legacyDelete ?? this.version === '3.1';
    this.policySource = options.policySource ?? 'file';
    this.serverHost = options.serverHost ?? '127.0.0.1:8080';
    this.joinUntil = Date.now() + this.joinDelayMs;
    this.store = { files: this.emptyLayer(), loaded: this.emptyLayer() };
  }

  private emptyLayer(): Record<Layered, Map<string, JsonObject>> {
    return { api: new Map(), policy: new Map(), oas: new Map() };
  }

  layer(name: 'files' | 'loaded', kind: Layered): Map<string, JsonObject> {
    return this.store[name][kind];
  }

  // --- reloads -------------------------------------------------------------

  applyReload(): void {
    this.store.loaded.api = this.loadApis();
    this.store.loaded.oas = loadOas(this.store.loaded.api, this.layer('files', 'oas'));
    const policies = loadKind('policy', this.layer('files', 'policy'));
    this.store.loaded.policy = new Map(policies.map((p) => [str(p.id), p]));
  }

  private loadApis(): Map<string, JsonObject> {
    const prev = this.layer('loaded', 'api');
    const files = this.layer('files', 'api');
    const specs = [...files.keys()].sort().map((key) => this.loadedForm(key, files.get(key) ?? {}));
    const counts = countByListenHash(specs);
    const loaded = specs.map((s) => {
      if ((counts.get(listenHash(s)) ?? 0) < 2) return s; // no fix: the shared form as it is
      const own = clone(s);
      fixListenPath(own, counts, prev.get(str(s.api_id)));
      return own;
    });
    return new Map(loaded.map((s) => [str(s.api_id), s]));
  }

  /** What loading `file` (stored under `key`) gives, before listen paths are fixed: made once per file. */
  private loadedForm(key: string, file: JsonObject): JsonObject {
    const known = this.loadedApiOf.get(file);
    if (known !== undefined) return known;
    const spec = loadFile('api', key, file);
    if (str(spec.id) === '') spec.id = this.objectIdFor(str(spec.api_id));
    this.loadedApiOf.set(file, spec);
    return spec;
  }

  private objectIdFor(apiId: string): string {
    const known = this.objectIds.get(apiId);
    if (known !== undefined) return known;
    const id = newObjectId();
    this.objectIds.set(apiId, id);
    return id;
  }

  /** Returns the pending application, or undefined when the reload was lost. */
  requestReload(group: boolean): Promise<void> | undefined {
    this.counts.requested++;
    if (group && Date.now() < this.joinUntil) return this.loseReload();
    if (this.dropNext > 0) {
      this.dropNext--;
      return this.loseReload();
    }
    return this.scheduleReload();
  }

  private loseReload(): undefined {
    this.counts.dropped++;
    return undefined;
  }

  private scheduleReload(): Promise<void> {
    const p = new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.reloadTimers.delete(timer);
        this.applyReload();
        this.counts.applied++;
        resolve();
      }, this.reloadDelayMs);
      this.reloadTimers.set(timer, resolve);
    });
    this.pending.add(p);
    void p.then(() => this.pending.delete(p));
    return p;
  }

  dropReloads(n: number): void {
    this.dropNext += n;
  }

  async waitForReloads(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }

  private cancelReloads(): void {
    for (const [timer, resolve] of this.reloadTimers) {
      clearTimeout(timer);
      resolve();
    }
    this.reloadTimers.clear();
  }

  restart(options: RestartOptions = {}): void {
    this.cancelReloads();
    this.store.loaded = this.emptyLayer();
    if (!options.keepFiles) {
      this.store.files = this.emptyLayer();
      this.objectIds.clear();
    }
    if (options.keepFiles && options.loadOnStart !== false) this.applyReload();
    this.joinUntil = Date.now() + this.joinDelayMs;
  }

  // --- HTTP ----------------------------------------------------------------

  protected override errorReply(status: number, message: string): Reply {
    return apiError(status, message);
  }

  protected override async handle(req: IncomingMessage, url: URL, method: string, raw: string): Promise<Reply> {
    const path = url.pathname;
    if (!path.startsWith('/tyk/')) return apiError(404, 'Not Found');
    const found = routeOf(path);
    const route = found !== undefined && this.version === '3.1' ? routeIn31(found) : found;
    if (route === undefined) return PAGE_NOT_FOUND;
    if (req.headers['x-tyk-authorization'] !== this.secret) return apiError(403, FORBIDDEN);
    switch (route.name) {
      case 'collection':
        return this.onCollection(route.kind, method, raw);
      case 'item':
        return this.onItem(route.kind, route.id, method, raw);
      case 'oas-collection':
        return this.onOasCollection(method, url.searchParams, raw);
      case 'oas-item':
        return this.onOasItem(route.id, method, url.searchParams, raw);
      case 'oas-unmodelled':
        return apiError(501, `not modelled by the fake: ${route.what}`);
      case 'reload':
        return this.onReload(method, route.group, !route.group && url.searchParams.get('block') === 'true');
      case 'certs':
        return gatewayCerts(this.certs, method, route.id, url.searchParams, raw);
    }
  }

  private onCollection(kind: Kind, method: string, raw: string): Reply {
    if (method === 'GET') return jsonList([...this.layer('loaded', kind).values()]);
    if (method === 'POST') return this.refusedPolicyWrite(kind) ?? this.write(kind, undefined, raw);
    return apiError(405, 'Method not supported');
  }

  private onItem(kind: Kind, id: string, method: string, raw: string): Reply {
    if (method === 'GET') return this.getOne(kind, id);
    if (method === 'POST' && this.version === '3.1') return this.write(kind, id, raw, true);
    if (method === 'PUT') return this.refusedPolicyWrite(kind) ?? this.put(kind, id, raw);
    if (method === 'DELETE') return this.refusedPolicyWrite(kind) ?? this.remove(kind, id);
    return apiError(405, 'Method not supported');
  }

  /** A gateway whose policies come from a Dashboard takes no policy writes. */
  private refusedPolicyWrite(kind: Kind): Reply | undefined {
    return kind === 'policy' && this.policySource === 'service' ? apiError(500, SERVICE_POLICIES) : undefined;
  }

  // --- Tyk OAS APIs (see the header) ---------------------------------------

  private onOasCollection(method: string, query: URLSearchParams, raw: string): Reply {
    if (method === 'GET') return this.listOas(query);
    if (method === 'POST') return notModelled(query, OAS_VERSION_PARAMS) ?? this.writeOas(undefined, raw);
    return apiError(405, 'Method not supported');
  }

  private onOasItem(id: string, method: string, query: URLSearchParams, raw: string): Reply {
    if (method === 'GET') return this.getOas(id, query);
    if (method === 'PUT') return this.writeOas(id, raw);
    if (method === 'DELETE') return this.remove('api', id);
    if (method === 'PATCH') return apiError(501, 'not modelled by the fake: PATCH /tyk/apis/oas/{apiID}');
    return apiError(405, 'Method not supported');
  }

  private listOas(query: URLSearchParams): Reply {
    const docs = [...this.layer('loaded', 'oas').values()];
    return reply(
      200,
      docs.map((doc) => this.asAsked(doc, query)),
    );
  }

  /** The document as a read answers it: without the extension for `mode=public`. */
  private asAsked(doc: JsonObject, query: URLSearchParams): JsonObject {
    return query.get('mode') === 'public' ? withoutExtension(doc) : clone(doc);
  }

  private getOas(id: string, query: URLSearchParams): Reply {
    const classic = this.layer('loaded', 'api').get(id);
    if (classic === undefined) return apiError(404, KINDS.api.notFound);
    if (classic.is_oas !== true) return apiError(400, CLASSIC_ON_OAS_ROUTE);
    return reply(200, this.asAsked(this.layer('loaded', 'oas').get(id) ?? filledOas({}, classic), query));
  }

  /** POST (pathId undefined) or PUT of an OAS API: check, then write both files. */
  private writeOas(pathId: string | undefined, raw: string): Reply {
    const body = readOasBody(raw);
    if (!body.ok) return apiError(400, body.reason === 'invalid' ? body.message : OAS_REFUSALS[body.reason]);
    const refused = pathId === undefined ? undefined : this.refusedOasUpdate(pathId, body.doc);
    if (refused !== undefined) return refused;
    const id = oasId(body.doc) || newHex(16);
    const previous = pathId === undefined ? undefined : this.layer('loaded', 'oas').get(pathId);
    const doc = withServers(withOasId(body.doc, id), this.serverHost, previous);
    this.layer('files', 'oas').set(id, doc);
    this.layer('files', 'api').set(id, classicOf(doc));
    return modified(id, pathId === undefined ? 'added' : 'modified');
  }

  /** Why a PUT of this document to /tyk/apis/oas/{pathId} is refused, if it is. */
  private refusedOasUpdate(pathId: string, doc: JsonObject): Reply | undefined {
    const loaded = this.layer('loaded', 'api').get(pathId);
    if (loaded === undefined) return apiError(404, KINDS.api.notFound);
    if (loaded.is_oas !== true) return apiError(400, CLASSIC_PUT_ON_OAS_ROUTE);
    return oasId(doc) === pathId ? undefined : apiError(400, KINDS.api.mismatch);
  }

  /** Whether the API is an OAS one: as loaded, else (a gateway that only looks at files) as its file says. */
  private isOas(id: string): boolean {
    const spec = this.layer('loaded', 'api').get(id) ?? this.layer('files', 'api').get(id);
    return spec?.is_oas === true;
  }

  /** Deletes an OAS API's two files; both must be there (Tyk checks both before deleting either). */
  private removeOas(id: string): Reply {
    const classic = this.layer('files', 'api');
    const docs = this.layer('files', 'oas');
    if (!classic.has(id) || !docs.has(id)) return apiError(500, 'Delete failed');
    classic.delete(id);
    docs.delete(id);
    return modified(id, 'deleted');
  }

  private getOne(kind: Kind, id: string): Reply {
    const found = this.layer('loaded', kind).get(id);
    return found ? { status: 200, body: jsonOf(found), raw: true } : apiError(404, KINDS[kind].getNotFound);
  }

  private put(kind: Kind, id: string, raw: string): Reply {
    const loaded = this.layer('loaded', kind).get(id);
    if (kind === 'api' && loaded === undefined) return apiError(404, KINDS[kind].notFound);
    if (kind === 'api' && loaded?.is_oas === true) return apiError(400, OAS_PUT_ON_CLASSIC_ROUTE);
    return this.write(kind, id, raw);
  }

  /**
   * POST (pathId undefined) or PUT: decode, check, write the file. `legacy`: Tyk Gateway 3.1's
   * POST to /tyk/apis/{apiID}, a create that checks the body's id against the path's.
   */
  private write(kind: Kind, pathId: string | undefined, raw: string, legacy = false): Reply {
    const decoded = decodeBody(kind, raw);
    if (!decoded.ok) return apiError(400, 'Request malformed');
    const def = decoded.value;
    const { idField, mismatch } = KINDS[kind];
    if (pathId !== undefined && str(def[idField]) !== pathId) return apiError(400, legacy ? LEGACY_MISMATCH : mismatch);
    const invalid = kind === 'api' ? validateApi(def) : undefined;
    if (invalid !== undefined) return apiError(400, invalid);
    const id = str(def[idField]) || (kind === 'api' ? newHex(16) : newObjectId());
    def[idField] = id;
    if (kind === 'api') def.is_oas = false; // a Classic write makes a Classic API
    this.layer('files', kind).set(id, def);
    return modified(id, pathId === undefined || legacy ? 'added' : 'modified');
  }

  private remove(kind: Kind, id: string): Reply {
    const files = this.layer('files', kind);
    if (kind === 'api' && !this.legacyDelete && !this.layer('loaded', kind).has(id)) return apiError(404, KINDS[kind].notFound);
    if (kind === 'api' && this.isOas(id)) return this.removeOas(id);
    if (!files.delete(id)) return apiError(500, 'Delete failed');
    return modified(id, 'deleted');
  }

  private async onReload(method: string, group: boolean, block: boolean): Promise<Reply> {
    if (method !== 'GET') return apiError(405, 'Method not supported');
    const applied = this.requestReload(group);
    if (block && applied) await applied;
    return reply(200, { status: 'ok', message: '' });
  }

  protected override onClose(): void {
    this.cancelReloads();
  }
}

function kindOf(segment: string | undefined): Kind {
  return segment === 'apis' ? 'api' : 'policy';
}

function copyMap(m: Map<string, JsonObject>): Map<string, JsonObject> {
  return new Map([...m].map(([k, v]) => [k, clone(v)]));
}

/** A back-door edit: on a copy, so that what was loaded or written is never changed in place (see the header's Cost). */
function edit(m: Map<string, JsonObject>, kind: Layered, id: string, mutate: Mutator): void {
  const current = m.get(id);
  if (current === undefined) throw new Error(`fake tyk: no ${kind} ${id} to edit`);
  const copy = clone(current);
  m.set(id, mutate(copy) ?? copy);
}

/** Each loaded definition's JSON, written once (loaded definitions are never changed in place). */
const jsonTexts = new WeakMap<JsonObject, string>();

function jsonOf(spec: JsonObject): string {
  let text = jsonTexts.get(spec);
  if (text === undefined) {
    text = JSON.stringify(spec);
    jsonTexts.set(spec, text);
  }
  return text;
}

/** A 200 with a JSON array of loaded definitions, byte for byte what JSON.stringify of the array gives. */
function jsonList(specs: readonly JsonObject[]): Reply {
  return { status: 200, body: `[${specs.map(jsonOf).join(',')}]`, raw: true };
}

function facade(fake: FakeTyk, url: string): FakeTykGateway {
  return {
    url,
    secret: fake.secret,
    close: () => fake.close(),
    restart: (options) => fake.restart(options),
    loaded: (kind) => copyMap(fake.layer('loaded', kind)),
    files: (kind) => copyMap(fake.layer('files', kind)),
    reloadNow: () => fake.applyReload(),
    get reloads() {
      return { ...fake.counts };
    },
    dropReloads: (n) => fake.dropReloads(n),
    waitForReloads: () => fake.waitForReloads(),
    editLoaded: (kind, id, mutate) => edit(fake.layer('loaded', kind), kind, id, mutate),
    editFile: (kind, id, mutate) => edit(fake.layer('files', kind), kind, id, mutate),
    removeLoaded: (kind, id) => fake.layer('loaded', kind).delete(id),
    removeFile: (kind, id) => fake.layer('files', kind).delete(id),
    inject: (spec) => fake.inject(spec),
    clearFaults: () => fake.clearFaults(),
    get calls() {
      return fake.callLog.snapshot();
    },
    count: (method, path) => fake.count(method, path),
    writes: () => fake.writes(),
    resetCalls: () => {
      fake.callLog.clear();
      fake.resetPeak();
    },
    peakConcurrentWrites: () => fake.peakConcurrentWrites(),
    certs: () => fake.certs.all,
    copyFrom: (other) => {
      for (const kind of ['api', 'policy', 'oas'] as const) {
        const into = fake.layer('files', kind);
        into.clear();
        for (const [id, obj] of other.files(kind)) into.set(id, obj);
      }
      fake.applyReload();
    },
  };
}

/** Start a fake Tyk Gateway on 127.0.0.1 (a free port). */
export async function startFakeTykGateway(options: FakeTykOptions = {}): Promise<FakeTykGateway> {
  const fake = new FakeTyk(options);
  const port = await listenOnLoopback(fake.server);
  return facade(fake, `${options.tls ? 'https' : 'http'}://127.0.0.1:${port}`);
}
