/**
 * Loopback fake of the Tyk Dashboard API (the "pro" control plane), for tests.
 *
 * The Dashboard is closed source; everything here follows its published swagger
 * (tyk-docs swagger/dashboard-swagger.yml, 5.13.0). Modelled:
 * - Auth: `Authorization: <user API key>` on every /api/ route (no "Bearer"); missing or
 *   wrong → 401 `{"Status":"Error","Message":"Not authorised","Meta":null}`. Every error body
 *   is an ApiResponse `{Status:"Error", Message, Meta:null}`; unknown routes 404, other methods 405.
 * - One store, no reload: a write is visible to the next read.
 * - APIs (Tyk Classic): bodies are the ApiDefinitionWrapper `{"api_definition": {...}}`.
 *   {apiId} in /api/apis/{apiId} is "either internal or public API ID" (swagger): it is looked
 *   up as the public `api_id` first, then as the internal 24-hex `id`.
 *   POST: 200 `{Status:"OK", Message:"API created", Meta:<internal id>, ID:<api_id>}`; an empty
 *   api_id is generated (32 hex); the internal `id` is always the Dashboard's (24 hex, "cannot be
 *   chosen"); an api_id already in use → 409 "Found API with the same ID" (the swagger's example).
 *   GET one → the wrapper, api_definition filled with every field of the model. An id it does
 *   not have: the swagger documents `400 "Could not retrieve API detail"` for GET and `404` with
 *   the same message for DELETE; `unknownApi` picks GET's answer ('400', the default, or '404').
 *   PUT → 200 "API updated"; missing → 404 "API definition does not exist"; a body `id` other
 *   than the stored internal id → 400 "Invalid `ID` value"; an empty body api_id keeps the
 *   stored one, another one renames the API (on-premise behaviour; `immutableApiId` models Tyk
 *   Cloud, which ignores it); renaming onto an api_id in use → 400 "Found API with the same
 *   ID". DELETE → 200 "API deleted"; missing → 404 "Could not retrieve API detail".
 *   GET list `?p=N` → ApiDefinitionsResponse `{apis, pages}`: pages are 1-based; p absent, 0 or
 *   not a number → page 1; p past the end → no items; p < 0 → every item (pages 1). `pages`
 *   is ceil(total / pageSize), 0 when empty. The schema makes `apis` (and the policies' `Data`)
 *   a nullable array: `emptyList` picks how a page without items says so, null (Go's nil
 *   slice; the default) or [].
 *   Sorted by `-created_at` unless `sort` (name, created_at, updated_at, each with "-") says
 *   otherwise; `q` filters by a case-insensitive substring of the name.
 * - Policies: the bare Policy object. The Dashboard's `_id` (24 hex) names it; `id` is an
 *   ordinary field it stores as given (duplicates are not refused: nothing in the swagger says
 *   they are). POST → 200 `{Status:"OK", Message:<_id>, Meta:null}` (the swagger's example puts
 *   the new _id in Message, not Meta). What {id} in /api/portal/policies/{id} names, the swagger
 *   says only as "ID of policy" (its examples are 24-hex _ids; "Invalid policy ID." answers an
 *   id that is invalid); `policyPathId` picks: '_id' (the default) takes the _id only, and a
 *   path id that is not 24 hex → 400 "Invalid policy ID."; '_id-or-id' takes the _id, else the
 *   oldest policy whose `id` field is the path id (Tyk Operator's early Dashboard client looked
 *   policies up by their own id this way), so no path id is invalid. Missing → 404 "Could not
 *   retrieve portal object." (DELETE: "Could not retrieve object for deletion"). PUT → 200
 *   "Data updated"; a body `_id` other than the policy's → 400 "Invalid policy ID.". DELETE →
 *   200 "Data deleted". A name another policy has → 400 "This policy name has already been
 *   used. Enter a unique policy name.". A malformed body (bad JSON, a field of the wrong type)
 *   → 403 "Request body malformed." (yes, 403: the swagger's answer for policies). GET list →
 *   ReturnDataStruct `{Data, Pages}`, same paging rules, creation order; `active` (any value)
 *   keeps active ones.
 * - The Dashboard owns `org_id` (the key's organisation, `orgId`), the internal `id`, `_id`,
 *   `date_created` and `last_updated` (unix seconds); GET echoes the full model, the stored
 *   object merged over Go zero values (map entries of version_data.versions, auth_configs and
 *   access_rights filled too); unknown top-level fields are dropped.
 * - API bodies: bad JSON, a wrapper without an `api_definition` object, or a field of the wrong
 *   JSON type → 400 "Malformed API data" (message ours); an invalid IP/CIDR in an enabled
 *   allow/block list → 400 "Validation of API Definition failed. Reason: invalid IP/CIDR ...".
 * - `ignoreApiIdOnCreate` models Dashboards that generate their own api_id on POST (of a Classic
 *   or an OAS API).
 * - Tyk OAS APIs (the model in ./tyk-oas.ts): one API in the same store, in two forms: the OAS
 *   document, under /api/apis/oas, and the Tyk Classic definition it maps to (`is_oas: true`),
 *   under /api/apis, whose wrappers also carry the document as `oas` (the ApiDefinitionWrapper
 *   schema's field). {apiId} in /api/apis/oas/{apiId} is the public id (`x-tyk-api-gateway.info.id`,
 *   the api_id) only, as the swagger's examples use it; a Classic API is not found there.
 *   The swagger documents no GET /api/apis/oas: a GET there is 405; OAS APIs are listed by
 *   GET /api/apis. POST → 200 `{Status:"OK", Message:"API created", Meta:<internal id>,
 *   ID:<api id>}`: the id is info.id, else generated (32 hex); an id any API has → 409 "Found API
 *   with the same ID.". GET → the document with the Dashboard's info (id, dbId = the internal id,
 *   orgId = the key's org; name, state and listen path from the Classic form); not found →
 *   `unknownApi` (400 by default) "Could not retrieve API detail.". PUT → 200 "API updated.";
 *   not found → 404 "API definition does not exist"; an info.id or info.dbId other than the
 *   API's → 400 "Invalid `ID` value" (the swagger's word for a wrong id on this path); a listen
 *   path (and domain) another API has → 403 "Found API with same url." (documented for PUT only,
 *   so POST does not check it). DELETE → 200 "API deleted."; not found → 404 "Could not
 *   retrieve API detail.". Bodies: not JSON, or not an object → 400 "Couldn't read body."; no
 *   `x-tyk-api-gateway` → 400 "The payload should contain x-tyk-api-gateway."; schema problems →
 *   400 with the gateway's words (./tyk-oas.ts). A Classic PUT of an OAS API → 400 (message
 *   ours, the gateway's: "this API endpoint only supports Tyk Classic APIs; ..."); a Classic
 *   write always makes a Classic API (`is_oas` false). Documented parameters the fake does not
 *   apply (versions, templateID, purge), PATCH, and the sub-resources (urls, categories, export,
 *   versions, dry-run, import, rebase) answer 501.
 * - DASHBOARD_VARIANTS: named option sets, one per documented alternative answer (each option's
 *   every value appears in one), for tests that must hold against each.
 * - The classic developer portal (/api/portal/catalogue, /documentation, /configuration: the
 *   swagger does not document them): ./tyk-dashboard-portal.ts says where each answer comes
 *   from. Their writes are not counted by `writes()` (`portalWrites()` counts them).
 * - Certificates (/api/certs, in the key's org, over the certificate manager the gateway fake
 *   shares): ./tyk-dashboard-certs.ts; `certUploadField` and `unknownCertDelete` pick its
 *   documented alternatives. They are not API or policy writes (`writes()` leaves them out).
 * - API versions: POST /api/apis with `base_api_id` but no `new_version_name` → 400 "version
 *   name header should be set with base API ID" (the swagger's example); with one → 501.
 *   Documented query parameters the fake does not apply (the other list filters, versioning)
 *   answer 501 "not modelled by the fake: ..." rather than being ignored.
 * - Test controls: the stored objects (copies), back-door edits and removals, certificates of
 *   any org (`storeCert`), `wipe()`, fault injection and a call log shared with the other fakes
 *   (./faults.ts).
 *
 * Leaves out: streams/MCP APIs, API versions, categories, ownership and permissions (403s
 * only by fault injection), keys, policy search, the other list filters, certificate details
 * lists and dependencies (501).
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import type { FaultSpec as BaseFaultSpec, FaultHandle } from './faults.js';
import { cloneJson as clone, listenOnLoopback } from './http-plumbing.js';
import { CertStore, type StoredCert } from './tyk-certs.js';
import { DashboardCerts, isCertsPath } from './tyk-dashboard-certs.js';
import { FakeDashboardPortal, type PortalMutator, type StoredDocumentation } from './tyk-dashboard-portal.js';
import {
  ACCESS_DEFINITION,
  API_DEFINITION,
  AUTH_CONFIG,
  dashboardError as apiError,
  type CallRecord,
  fillModel,
  isObject,
  type Json,
  type JsonObject,
  modelMismatch,
  POLICY,
  type Reply,
  reply,
  type Shape,
  TykFakeBase,
  VERSION_INFO,
} from './tyk-fake-base.js';
import { classicOf, filledOas, oasId, readOasBody, withOasId } from './tyk-oas.js';

export type { FaultHandle } from './faults.js';
export type { StoredDocumentation } from './tyk-dashboard-portal.js';
export type { CallRecord, Json, JsonObject } from './tyk-fake-base.js';

export interface FakeTykDashboardOptions {
  /** The user API key `Authorization` must carry; default "fake-dashboard-key". */
  secret?: string;
  /** Items per list page; default 10, as the Dashboard's default. */
  pageSize?: number;
  /** The key's organisation, forced into every object's org_id; default a fixed 24-hex id. */
  orgId?: string;
  /** POST /api/apis (and /api/apis/oas) ignores the body's api_id and generates one (some Dashboards do). */
  ignoreApiIdOnCreate?: boolean;
  /** PUT /api/apis ignores a change of api_id (Tyk Cloud). */
  immutableApiId?: boolean;
  /** How GET /api/apis/{apiId} answers an id it does not have: 400 (the default) or 404, "Could not retrieve API detail". */
  unknownApi?: '400' | '404';
  /** What /api/portal/policies/{id} takes: the _id only (the default), or the _id else the policy's `id` field. */
  policyPathId?: '_id' | '_id-or-id';
  /** How a list page without items renders them: null (the default) or []. */
  emptyList?: 'null' | '[]';
  /** The multipart file field POST /api/certs reads: 'file' (the swagger's; the default) or 'cert' (Tyk Operator's). */
  certUploadField?: 'file' | 'cert';
  /** How DELETE /api/certs/{certId} answers a certificate the org does not have: 404 (the default) or 200. */
  unknownCertDelete?: '404' | '200';
  /** How GET /api/portal/catalogue renders the catalogue: one object (the default; what Tyk Operator decoded) or a list of one (the SDK swagger's schema). */
  catalogueAnswer?: 'object' | 'list';
}

/** One documented way a Dashboard answers, as fake options. */
export interface DashboardVariant {
  name: string;
  options: FakeTykDashboardOptions;
}

/**
 * Every documented alternative answer, each in one variant (the first is all defaults): tests
 * of behaviour that must hold on any Dashboard run over these.
 */
export const DASHBOARD_VARIANTS: readonly DashboardVariant[] = [
  { name: 'unknown API 400, policies by _id, empty lists null', options: {} },
  { name: 'unknown API 404', options: { unknownApi: '404' } },
  { name: 'policy path takes _id or id', options: { policyPathId: '_id-or-id' } },
  { name: 'empty lists []', options: { emptyList: '[]' } },
  { name: 'certificates uploaded as cert, unknown certificate DELETE 200', options: { certUploadField: 'cert', unknownCertDelete: '200' } },
  { name: 'portal catalogue answered as a list', options: { catalogueAnswer: 'list' } },
];

/** A fault to inject; a `status` without `body` answers with an ApiResponse error. */
export type FaultSpec = BaseFaultSpec<CallRecord>;

export type Mutator = (obj: JsonObject) => void | JsonObject;

export interface FakeTykDashboard {
  readonly url: string;
  readonly secret: string;
  readonly orgId: string;
  close(): Promise<void>;
  /** api_id → the api_definition as GET shows it (copies). */
  apis(): Map<string, JsonObject>;
  /** _id → the policy as GET shows it (copies). */
  policies(): Map<string, JsonObject>;
  /** Edits the stored api_definition in place (or replaces it with what `mutate` returns). */
  editApi(apiId: string, mutate: Mutator): void;
  removeApi(apiId: string): boolean;
  /** api_id → an OAS API's document as GET /api/apis/oas/{apiId} shows it (copies). */
  oasApis(): Map<string, JsonObject>;
  /** Edits an OAS API's document as GET shows it (or replaces it); its Classic form follows, as after an edit on the Dashboard. */
  editOas(apiId: string, mutate: Mutator): void;
  editPolicy(mid: string, mutate: Mutator): void;
  removePolicy(mid: string): boolean;
  /** Loses every API, policy and the portal's objects (a fresh database); certificates stay (they live in Redis). */
  wipe(): void;
  /** The organisation's portal catalogue as GET shows it (a copy); undefined when it has none. */
  catalogue(): JsonObject | undefined;
  /** The organisation's portal configuration as GET shows it (a copy). */
  configuration(): JsonObject | undefined;
  /** id → the portal documentation stored. */
  documentation(): Map<string, StoredDocumentation>;
  /** Edits the stored catalogue in place (or replaces it with what `mutate` returns): drift. */
  editCatalogue(mutate: PortalMutator): void;
  /** Removes the catalogue entry under `policyId` behind our back; false when there is none. */
  removeCatalogueEntry(policyId: string): boolean;
  editConfiguration(mutate: PortalMutator): void;
  /** POST, PUT and DELETE calls on /api/portal/catalogue, /documentation and /configuration. */
  portalWrites(): number;
  /** The certificate store (/api/certs), by id. */
  certs(): ReadonlyMap<string, StoredCert>;
  /** Stores a certificate as a key of `orgId` (default: the fake's org) would upload it; its id. Throws when the manager refuses it. */
  storeCert(pem: string, orgId?: string): string;
  inject(spec: FaultSpec): FaultHandle;
  clearFaults(): void;
  readonly calls: CallRecord[];
  /** Calls with this method (case-insensitive; "*" or undefined for any) and path. */
  count(method?: string, path?: RegExp | string): number;
  /** POST, PUT and DELETE calls on /api/apis and /api/portal/policies. */
  writes(): number;
  resetCalls(): void;
}

// ---------------------------------------------------------------------------
// The models (./tyk-fake-base.ts) as the Dashboard's swagger has them: its schemas list the
// fields sorted, the API without error_overrides, the policy with date_created and without the
// gateway's graphql_access_rights, HTTP signature and post-expiry fields, an access
// definition's limit null, and every extended_paths list of a version named (null).

const EXTENDED_PATHS: JsonObject = {
  advance_cache_config: null,
  black_list: null,
  cache: null,
  circuit_breakers: null,
  do_not_track_endpoints: null,
  go_plugin: null,
  hard_timeouts: null,
  ignored: null,
  internal: null,
  method_transforms: null,
  mock_response: null,
  persist_graphql: null,
  rate_limit: null,
  size_limits: null,
  track_endpoints: null,
  transform: null,
  transform_headers: null,
  transform_jq: null,
  transform_jq_response: null,
  transform_response: null,
  transform_response_headers: null,
  url_rewrites: null,
  validate_json: null,
  validate_request: null,
  virtual: null,
  white_list: null,
};

/** The same fields, sorted at every depth, as the swagger lists them. */
function sortedFields(v: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const k of Object.keys(v).sort()) {
    const e = v[k] ?? null;
    out[k] = isObject(e) ? sortedFields(e) : e;
  }
  return out;
}

function without(v: JsonObject, ...fields: string[]): JsonObject {
  return Object.fromEntries(Object.entries(v).filter(([k]) => !fields.includes(k)));
}

export const API_SHAPE: Shape = {
  defaults: sortedFields(without(API_DEFINITION, 'error_overrides', 'error_overrides_disabled')),
  mapEntries: {
    'version_data.versions': sortedFields({ ...VERSION_INFO, extended_paths: EXTENDED_PATHS }),
    auth_configs: sortedFields(AUTH_CONFIG),
  },
};

export const POLICY_SHAPE: Shape = {
  defaults: sortedFields({ ...without(POLICY, 'graphql_access_rights', 'enable_http_signature_validation', 'post_expiry_action', 'post_expiry_grace_period'), date_created: '' }),
  mapEntries: { access_rights: sortedFields({ ...ACCESS_DEFINITION, limit: null }) },
};

// ---------------------------------------------------------------------------
// JSON helpers.

function str(v: Json | undefined): string {
  return typeof v === 'string' ? v : '';
}

/** The JSON object in raw, if it is one that the model can decode. */
export function decodeModel(raw: string, shape: Shape, field?: string): JsonObject | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return undefined;
  }
  if (!isObject(parsed)) return undefined;
  const body = field === undefined ? parsed : parsed[field];
  if (!isObject(body)) return undefined;
  return modelMismatch(shape, body) ? undefined : body;
}

function validIpOrCidr(ip: string): boolean {
  const parts = ip.split('/');
  if (parts.length === 1) return isIP(ip) !== 0;
  const [addr = '', bits = ''] = parts;
  const family = isIP(addr);
  return parts.length === 2 && family !== 0 && /^\d+$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128);
}

export function invalidApi(def: JsonObject): string | undefined {
  const lists = [
    def.enable_ip_whitelisting === true && Array.isArray(def.allowed_ips) ? def.allowed_ips : [],
    def.enable_ip_blacklisting === true && Array.isArray(def.blacklisted_ips) ? def.blacklisted_ips : [],
  ];
  const bad = lists.flat().find((ip) => !validIpOrCidr(str(ip)));
  if (bad === undefined) return undefined;
  return `Validation of API Definition failed. Reason: invalid IP/CIDR ${JSON.stringify(str(bad))}.`;
}

function newHex(bytes: number): string {
  return randomBytes(bytes).toString('hex');
}

/** A MongoDB ObjectId: 4 bytes of seconds, 8 random bytes; 24 hex. */
function newObjectId(): string {
  return (
    Math.floor(Date.now() / 1000)
      .toString(16)
      .padStart(8, '0') + newHex(8)
  );
}

const OBJECT_ID = /^[0-9a-f]{24}$/i;

// ---------------------------------------------------------------------------
// The fake.

function ok(message: string, meta: Json = null, extra: JsonObject = {}): Reply {
  return reply(200, { Status: 'OK', Message: message, Meta: meta, ...extra });
}

/** The list filters the swagger documents for GET /api/apis that the fake does not apply. */
const API_LIST_FILTERS = ['api_type', 'category', 'auth_type', 'base_apis', 'compressed'];

/** A 501 for a documented query parameter the fake does not model (rather than ignore it). */
function notModelled(query: URLSearchParams, names: readonly string[]): Reply | undefined {
  const used = names.filter((n) => query.has(n));
  return used.length === 0 ? undefined : apiError(501, `not modelled by the fake: ${used.join(', ')}`);
}

export const MSG = {
  unauthorised: 'Not authorised',
  malformedApi: 'Malformed API data',
  apiExists: 'Found API with the same ID',
  versionName: 'version name header should be set with base API ID',
  apiNotFound: 'Could not retrieve API detail',
  apiPutNotFound: 'API definition does not exist',
  badInternalId: 'Invalid `ID` value',
  malformedPolicy: 'Request body malformed.',
  badPolicyId: 'Invalid policy ID.',
  policyNotFound: 'Could not retrieve portal object.',
  policyDeleteNotFound: 'Could not retrieve object for deletion',
  policyName: 'This policy name has already been used. Enter a unique policy name.',
};

/** The Dashboard's words on /api/apis/oas (the swagger's examples; see the header). */
export const OAS_MSG = {
  malformed: "Couldn't read body.",
  noExtension: 'The payload should contain x-tyk-api-gateway.',
  exists: 'Found API with the same ID.',
  created: 'API created',
  notFound: 'Could not retrieve API detail.',
  putNotFound: 'API definition does not exist',
  badId: 'Invalid `ID` value',
  sameUrl: 'Found API with same url.',
  updated: 'API updated.',
  deleted: 'API deleted.',
  classicRoute: 'this API endpoint only supports Tyk Classic APIs; please use the appropriate Tyk OAS API endpoint',
};

/** The documented query parameters of the OAS routes that the fake does not apply. */
const OAS_CREATE_PARAMS = ['base_api_id', 'base_api_version_name', 'new_version_name', 'set_default', 'templateID'];

/** The OAS routes: the collection, one API, or a documented sub-resource the fake does not model. */
type OasRoute = { name: 'collection' } | { name: 'item'; id: string } | { name: 'unmodelled'; what: string };

/** Whether an OAS document's info names an API other than (apiId, internal) by its id or dbId. */
function namesAnotherApi(doc: JsonObject, apiId: string, internal: string): boolean {
  const ext = doc['x-tyk-api-gateway'];
  const info = isObject(ext) && isObject(ext.info) ? ext.info : {};
  const other = (v: Json | undefined, own: string): boolean => typeof v === 'string' && v !== '' && v !== own;
  return other(info.id, apiId) || other(info.dbId, internal);
}

/** Where a Classic definition listens: its domain and listen path. */
function listenUrl(def: JsonObject): string {
  return str(def.domain) + str(isObject(def.proxy) ? def.proxy.listen_path : undefined);
}

function oasRouteOf(path: string): OasRoute | undefined {
  if (/^\/api\/apis\/oas\/?$/.test(path)) return { name: 'collection' };
  const sub = /^\/api\/apis\/oas\/(dry-run|import|[^/]+\/(urls|categories|export|versions)|[^/]+\/rebase\/[^/]+)\/?$/.exec(path);
  if (sub) return { name: 'unmodelled', what: `/api/apis/oas/${sub[1] ?? ''}` };
  const item = /^\/api\/apis\/oas\/([^/]+)\/?$/.exec(path);
  return item ? { name: 'item', id: decodeURIComponent(item[1] ?? '') } : undefined;
}

const WRITE_PATH = /^\/api\/(apis|portal\/policies)(\/|$)/;
/** The classic portal's routes (./tyk-dashboard-portal.ts); their writes are counted apart (`portalWrites`). */
const PORTAL_WRITE_PATH = /^\/api\/portal\/(catalogue|documentation|configuration)(\/|$)/;

interface StoredApi {
  /** creation order, to break ties in sorting */
  seq: number;
  createdAt: string;
  updatedAt: string;
  /** the filled api_definition; its `id` is the internal id */
  def: JsonObject;
  /** an OAS API's document, as last written (GET fills it from `def`) */
  oas?: JsonObject;
}

interface StoredPolicy {
  seq: number;
  doc: JsonObject;
}

/** Which page `p` asks for: 0 = all, else 1-based. */
function pageOf(p: string | null): number {
  const n = p === null || p.trim() === '' ? NaN : Number(p);
  if (!Number.isInteger(n) || n === 0) return 1;
  return n < 0 ? 0 : n;
}

class FakeDashboard extends TykFakeBase {
  readonly secret: string;
  readonly orgId: string;
  private readonly pageSize: number;
  private readonly ignoreApiIdOnCreate: boolean;
  private readonly immutableApiId: boolean;
  private readonly unknownApi: number;
  private readonly policyPathId: '_id' | '_id-or-id';
  private readonly emptyList: null | [];
  /** internal id → API */
  private apiStore = new Map<string, StoredApi>();
  /** api_id → internal id */
  private apiIndex = new Map<string, string>();
  /** _id → policy */
  private policyStore = new Map<string, StoredPolicy>();
  private seq = 0;
  /** /api/certs (./tyk-dashboard-certs.ts) */
  readonly certs: DashboardCerts;
  /** the classic developer portal: catalogue, documentation, configuration (./tyk-dashboard-portal.ts) */
  readonly portal: FakeDashboardPortal;

  constructor(options: FakeTykDashboardOptions) {
    super('http://fake-dashboard', WRITE_PATH);
    this.secret = options.secret ?? 'fake-dashboard-key';
    this.orgId = options.orgId ?? '5e9d9544a1dcd60001d0ed20';
    this.pageSize = Math.max(1, options.pageSize ?? 10);
    this.ignoreApiIdOnCreate = options.ignoreApiIdOnCreate ?? false;
    this.immutableApiId = options.immutableApiId ?? false;
    this.unknownApi = options.unknownApi === '404' ? 404 : 400;
    this.policyPathId = options.policyPathId ?? '_id';
    this.emptyList = options.emptyList === '[]' ? [] : null;
    this.portal = new FakeDashboardPortal(this.orgId, newObjectId, options.catalogueAnswer);
    this.certs = new DashboardCerts(new CertStore(), {
      orgId: this.orgId,
      uploadField: options.certUploadField ?? 'file',
      unknownDelete: options.unknownCertDelete === '200' ? 200 : 404,
      emptyList: this.emptyList,
      page: (items, p) => this.page(items, p),
    });
  }

  // --- the test side -------------------------------------------------------

  apis(): Map<string, JsonObject> {
    return new Map([...this.apiStore.values()].map((a) => [str(a.def.api_id), clone(a.def)]));
  }

  policies(): Map<string, JsonObject> {
    return new Map([...this.policyStore].map(([mid, p]) => [mid, clone(p.doc)]));
  }

  editApi(apiId: string, mutate: Mutator): void {
    const internal = this.apiIndex.get(apiId);
    const stored = internal === undefined ? undefined : this.apiStore.get(internal);
    if (stored === undefined) throw new Error(`fake dashboard: no API ${apiId} to edit`);
    const next = mutate(stored.def);
    if (next !== undefined) stored.def = next;
    if (str(stored.def.api_id) !== apiId) {
      this.apiIndex.delete(apiId);
      this.apiIndex.set(str(stored.def.api_id), str(stored.def.id));
    }
  }

  removeApi(apiId: string): boolean {
    const internal = this.apiIndex.get(apiId);
    if (internal === undefined) return false;
    this.apiIndex.delete(apiId);
    return this.apiStore.delete(internal);
  }

  oasApis(): Map<string, JsonObject> {
    const oas = [...this.apiStore.values()].filter((a) => a.oas !== undefined);
    return new Map(oas.map((a) => [str(a.def.api_id), this.oasView(a)]));
  }

  editOas(apiId: string, mutate: Mutator): void {
    const stored = this.findOasApi(apiId);
    if (stored === undefined) throw new Error(`fake dashboard: no OAS API ${apiId} to edit`);
    const view = this.oasView(stored);
    const next = mutate(view) ?? view;
    Object.assign(stored, this.oasForms(next, apiId, str(stored.def.id)));
  }

  editPolicy(mid: string, mutate: Mutator): void {
    const stored = this.policyStore.get(mid);
    if (stored === undefined) throw new Error(`fake dashboard: no policy ${mid} to edit`);
    const next = mutate(stored.doc);
    if (next !== undefined) stored.doc = next;
  }

  removePolicy(mid: string): boolean {
    return this.policyStore.delete(mid);
  }

  wipe(): void {
    this.apiStore = new Map();
    this.apiIndex = new Map();
    this.policyStore = new Map();
    this.portal.wipe();
  }

  // --- HTTP ----------------------------------------------------------------

  protected override errorReply(status: number, message: string): Reply {
    return apiError(status, message);
  }

  protected override handle(req: IncomingMessage, url: URL, method: string, raw: string): Reply | Promise<Reply> {
    const path = url.pathname;
    if (!path.startsWith('/api/')) return apiError(404, 'Not found');
    if (req.headers.authorization !== this.secret) return apiError(401, MSG.unauthorised);
    if (isCertsPath(path)) return this.certs.handle(method, path, url.searchParams, req.headers['content-type'], raw);
    const portal = this.portal.handle(method, path, raw);
    if (portal) return portal;
    const oas = oasRouteOf(path);
    if (oas) return this.onOas(oas, method, url.searchParams, raw);
    if (/^\/api\/apis\/?$/.test(path)) {
      if (method === 'GET') return notModelled(url.searchParams, API_LIST_FILTERS) ?? this.listApis(url.searchParams);
      if (method === 'POST') return this.versioning(url.searchParams) ?? this.createApi(raw);
      return apiError(405, 'Method not allowed');
    }
    const api = /^\/api\/apis\/([^/]+)\/?$/.exec(path);
    if (api) {
      const id = decodeURIComponent(api[1] ?? '');
      if (method === 'GET') return this.getApi(id);
      if (method === 'PUT') return this.updateApi(id, raw);
      if (method === 'DELETE') return this.deleteApi(id);
      return apiError(405, 'Method not allowed');
    }
    if (/^\/api\/portal\/policies\/?$/.test(path)) {
      if (method === 'GET') return this.listPolicies(url.searchParams);
      if (method === 'POST') return this.createPolicy(raw);
      return apiError(405, 'Method not allowed');
    }
    const policy = /^\/api\/portal\/policies\/([^/]+)\/?$/.exec(path);
    if (policy) {
      const pathId = decodeURIComponent(policy[1] ?? '');
      if (!['GET', 'PUT', 'DELETE'].includes(method)) return apiError(405, 'Method not allowed');
      if (this.policyPathId === '_id' && !OBJECT_ID.test(pathId)) return apiError(400, MSG.badPolicyId);
      const mid = this.findPolicy(pathId);
      if (method === 'GET') return this.getPolicy(mid);
      if (method === 'PUT') return this.updatePolicy(mid, raw);
      return this.deletePolicy(mid);
    }
    return apiError(404, 'Not found');
  }

  /** One page of items, and the page count, by the rules in the header. */
  private page<T>(items: T[], p: string | null): { items: T[]; pages: number } {
    const page = pageOf(p);
    const pages = Math.ceil(items.length / this.pageSize);
    if (page === 0) return { items, pages: items.length === 0 ? 0 : 1 };
    return { items: items.slice((page - 1) * this.pageSize, page * this.pageSize), pages };
  }

  // --- APIs ----------------------------------------------------------------

  private findApi(id: string): StoredApi | undefined {
    const internal = this.apiIndex.get(id);
    return this.apiStore.get(internal ?? id);
  }

  private wrapper(a: StoredApi): JsonObject {
    return {
      api_definition: clone(a.def),
      ...(a.oas === undefined ? {} : { oas: this.oasView(a) }),
      hook_references: null,
      is_site: false,
      sort_by: 0,
      user_group_owners: null,
      user_owners: null,
      created_at: a.createdAt,
      updated_at: a.updatedAt,
      categories: [],
      api_model: {},
    };
  }

  private listApis(query: URLSearchParams): Reply {
    let all = [...this.apiStore.values()];
    const q = query.get('q');
    if (q) all = all.filter((a) => str(a.def.name).toLowerCase().includes(q.toLowerCase()));
    const sort = query.get('sort') ?? '-created_at';
    const field = sort.replace(/^-/, '');
    const sign = sort.startsWith('-') ? -1 : 1;
    const key = (a: StoredApi): string => (field === 'name' ? str(a.def.name) : field === 'updated_at' ? a.updatedAt : a.createdAt);
    all.sort((x, y) => sign * (key(x) < key(y) ? -1 : key(x) > key(y) ? 1 : x.seq - y.seq));
    const { items, pages } = this.page(all, query.get('p'));
    return reply(200, { apis: items.length === 0 ? this.emptyList : items.map((a) => this.wrapper(a)), pages });
  }

  private getApi(id: string): Reply {
    const a = this.findApi(id);
    return a ? reply(200, this.wrapper(a)) : apiError(this.unknownApi, MSG.apiNotFound);
  }

  /** POST /api/apis with the versioning parameters: the documented 400, else not modelled. */
  private versioning(query: URLSearchParams): Reply | undefined {
    if (!query.has('base_api_id')) return notModelled(query, ['base_api_version_name', 'new_version_name', 'set_default']);
    if (!query.get('new_version_name')) return apiError(400, MSG.versionName);
    return apiError(501, 'not modelled by the fake: API versions (base_api_id)');
  }

  private createApi(raw: string): Reply {
    const body = decodeModel(raw, API_SHAPE, 'api_definition');
    if (body === undefined) return apiError(400, MSG.malformedApi);
    const invalid = invalidApi(body);
    if (invalid !== undefined) return apiError(400, invalid);
    const wanted = this.ignoreApiIdOnCreate ? '' : str(body.api_id);
    if (wanted !== '' && this.apiIndex.has(wanted)) return apiError(409, MSG.apiExists);
    const apiId = wanted || newHex(16);
    const internal = newObjectId();
    const now = new Date().toISOString();
    const def = fillModel(API_SHAPE, { ...body, api_id: apiId, id: internal, org_id: this.orgId, is_oas: false });
    this.apiStore.set(internal, { seq: ++this.seq, createdAt: now, updatedAt: now, def });
    this.apiIndex.set(apiId, internal);
    return ok('API created', internal, { ID: apiId });
  }

  private updateApi(id: string, raw: string): Reply {
    const stored = this.findApi(id);
    if (stored === undefined) return apiError(404, MSG.apiPutNotFound);
    const body = decodeModel(raw, API_SHAPE, 'api_definition');
    if (body === undefined) return apiError(400, MSG.malformedApi);
    if (stored.oas !== undefined) return apiError(400, OAS_MSG.classicRoute);
    const internal = str(stored.def.id);
    if (str(body.id) !== '' && str(body.id) !== internal) return apiError(400, MSG.badInternalId);
    const current = str(stored.def.api_id);
    let apiId = str(body.api_id) || current;
    if (this.immutableApiId) apiId = current;
    if (apiId !== current && this.apiIndex.has(apiId)) return apiError(400, MSG.apiExists);
    const invalid = invalidApi(body);
    if (invalid !== undefined) return apiError(400, invalid);
    stored.def = fillModel(API_SHAPE, { ...body, api_id: apiId, id: internal, org_id: this.orgId, is_oas: false });
    stored.updatedAt = new Date().toISOString();
    this.apiIndex.delete(current);
    this.apiIndex.set(apiId, internal);
    return ok('API updated');
  }

  private deleteApi(id: string): Reply {
    const stored = this.findApi(id);
    if (stored === undefined) return apiError(404, MSG.apiNotFound);
    this.apiStore.delete(str(stored.def.id));
    this.apiIndex.delete(str(stored.def.api_id));
    return ok('API deleted');
  }

  // --- Tyk OAS APIs (see the header) ---------------------------------------

  private onOas(route: OasRoute, method: string, query: URLSearchParams, raw: string): Reply {
    if (route.name === 'unmodelled') return apiError(501, `not modelled by the fake: ${route.what}`);
    if (route.name === 'collection') {
      if (method === 'POST') return notModelled(query, OAS_CREATE_PARAMS) ?? this.createOas(raw);
      return apiError(405, 'Method not allowed');
    }
    if (method === 'GET') return this.getOas(route.id);
    if (method === 'PUT') return this.updateOas(route.id, raw);
    if (method === 'DELETE') return notModelled(query, ['purge']) ?? this.deleteOas(route.id);
    if (method === 'PATCH') return apiError(501, 'not modelled by the fake: PATCH /api/apis/oas/{apiId}');
    return apiError(405, 'Method not allowed');
  }

  /** The OAS API under this public id (a Classic API is not one). */
  private findOasApi(apiId: string): StoredApi | undefined {
    const internal = this.apiIndex.get(apiId);
    const stored = internal === undefined ? undefined : this.apiStore.get(internal);
    return stored?.oas === undefined ? undefined : stored;
  }

  /** The document as GET answers it. */
  private oasView(a: StoredApi): JsonObject {
    return filledOas(a.oas ?? {}, a.def);
  }

  /** Both forms of an OAS API from its document, under the Dashboard's ids and org. */
  private oasForms(doc: JsonObject, apiId: string, internal: string): { oas: JsonObject; def: JsonObject } {
    const oas = withOasId(doc, apiId);
    const def = fillModel(API_SHAPE, { ...classicOf(oas), api_id: apiId, id: internal, org_id: this.orgId });
    return { oas, def };
  }

  /** The body as a document, else the refusal (see the header). */
  private oasBody(raw: string): { doc: JsonObject } | { refused: Reply } {
    const body = readOasBody(raw);
    if (body.ok) return { doc: body.doc };
    const message = body.reason === 'invalid' ? body.message : body.reason === 'malformed' ? OAS_MSG.malformed : OAS_MSG.noExtension;
    return { refused: apiError(400, message) };
  }

  private createOas(raw: string): Reply {
    const body = this.oasBody(raw);
    if ('refused' in body) return body.refused;
    const wanted = this.ignoreApiIdOnCreate ? '' : oasId(body.doc);
    if (wanted !== '' && this.apiIndex.has(wanted)) return apiError(409, OAS_MSG.exists);
    const apiId = wanted || newHex(16);
    const internal = newObjectId();
    const now = new Date().toISOString();
    this.apiStore.set(internal, { seq: ++this.seq, createdAt: now, updatedAt: now, ...this.oasForms(body.doc, apiId, internal) });
    this.apiIndex.set(apiId, internal);
    return ok(OAS_MSG.created, internal, { ID: apiId });
  }

  private getOas(apiId: string): Reply {
    const stored = this.findOasApi(apiId);
    return stored ? reply(200, this.oasView(stored)) : apiError(this.unknownApi, OAS_MSG.notFound);
  }

  private updateOas(apiId: string, raw: string): Reply {
    const stored = this.findOasApi(apiId);
    if (stored === undefined) return apiError(404, OAS_MSG.putNotFound);
    const body = this.oasBody(raw);
    if ('refused' in body) return body.refused;
    const internal = str(stored.def.id);
    if (namesAnotherApi(body.doc, apiId, internal)) return apiError(400, OAS_MSG.badId);
    const forms = this.oasForms(body.doc, apiId, internal);
    if (this.urlTaken(forms.def, internal)) return apiError(403, OAS_MSG.sameUrl);
    Object.assign(stored, forms, { updatedAt: new Date().toISOString() });
    return ok(OAS_MSG.updated);
  }

  /** Whether another API listens on the same domain and listen path. */
  private urlTaken(def: JsonObject, internal: string): boolean {
    return [...this.apiStore.values()].some((a) => str(a.def.id) !== internal && listenUrl(a.def) === listenUrl(def));
  }

  private deleteOas(apiId: string): Reply {
    const stored = this.findOasApi(apiId);
    if (stored === undefined) return apiError(404, OAS_MSG.notFound);
    this.apiStore.delete(str(stored.def.id));
    this.apiIndex.delete(apiId);
    return ok(OAS_MSG.deleted);
  }

  // --- policies ------------------------------------------------------------

  private nameTaken(name: string, except?: string): boolean {
    if (name === '') return false;
    return [...this.policyStore].some(([mid, p]) => mid !== except && str(p.doc.name) === name);
  }

  private listPolicies(query: URLSearchParams): Reply {
    let all = [...this.policyStore.values()].sort((x, y) => x.seq - y.seq);
    if (query.has('active')) all = all.filter((p) => p.doc.active === true);
    const { items, pages } = this.page(all, query.get('p'));
    return reply(200, { Data: items.length === 0 ? this.emptyList : items.map((p) => clone(p.doc)), Pages: pages });
  }

  /** The _id of the policy a path id names (see `policyPathId`); undefined when none. */
  private findPolicy(pathId: string): string | undefined {
    if (this.policyStore.has(pathId)) return pathId;
    if (this.policyPathId === '_id' || pathId === '') return undefined;
    const byId = [...this.policyStore].filter(([, p]) => p.doc.id === pathId).sort(([, x], [, y]) => x.seq - y.seq);
    return byId[0]?.[0];
  }

  private getPolicy(mid: string | undefined): Reply {
    const p = mid === undefined ? undefined : this.policyStore.get(mid);
    return p ? reply(200, clone(p.doc)) : apiError(404, MSG.policyNotFound);
  }

  private createPolicy(raw: string): Reply {
    const body = decodeModel(raw, POLICY_SHAPE);
    if (body === undefined) return apiError(403, MSG.malformedPolicy);
    if (this.nameTaken(str(body.name))) return apiError(400, MSG.policyName);
    const mid = newObjectId();
    const doc = fillModel(POLICY_SHAPE, {
      ...body,
      _id: mid,
      org_id: this.orgId,
      date_created: new Date().toISOString(),
      last_updated: String(Math.floor(Date.now() / 1000)),
    });
    this.policyStore.set(mid, { seq: ++this.seq, doc });
    return ok(mid);
  }

  private updatePolicy(mid: string | undefined, raw: string): Reply {
    const stored = mid === undefined ? undefined : this.policyStore.get(mid);
    if (mid === undefined || stored === undefined) return apiError(404, MSG.policyNotFound);
    const body = decodeModel(raw, POLICY_SHAPE);
    if (body === undefined) return apiError(403, MSG.malformedPolicy);
    if (str(body._id) !== '' && str(body._id) !== mid) return apiError(400, MSG.badPolicyId);
    if (this.nameTaken(str(body.name), mid)) return apiError(400, MSG.policyName);
    stored.doc = fillModel(POLICY_SHAPE, {
      ...body,
      _id: mid,
      org_id: this.orgId,
      date_created: stored.doc.date_created ?? '',
      last_updated: String(Math.floor(Date.now() / 1000)),
    });
    return ok('Data updated');
  }

  private deletePolicy(mid: string | undefined): Reply {
    if (mid === undefined || !this.policyStore.delete(mid)) return apiError(404, MSG.policyDeleteNotFound);
    return ok('Data deleted');
  }
}

function facade(fake: FakeDashboard, url: string): FakeTykDashboard {
  return {
    url,
    secret: fake.secret,
    orgId: fake.orgId,
    close: () => fake.close(),
    apis: () => fake.apis(),
    policies: () => fake.policies(),
    editApi: (apiId, mutate) => fake.editApi(apiId, mutate),
    removeApi: (apiId) => fake.removeApi(apiId),
    oasApis: () => fake.oasApis(),
    editOas: (apiId, mutate) => fake.editOas(apiId, mutate),
    editPolicy: (mid, mutate) => fake.editPolicy(mid, mutate),
    removePolicy: (mid) => fake.removePolicy(mid),
    wipe: () => fake.wipe(),
    catalogue: () => fake.portal.catalogue(),
    configuration: () => fake.portal.configuration(),
    documentation: () => fake.portal.documentation(),
    editCatalogue: (mutate) => fake.portal.editCatalogue(mutate),
    removeCatalogueEntry: (policyId) => fake.portal.removeEntry(policyId),
    editConfiguration: (mutate) => fake.portal.editConfiguration(mutate),
    portalWrites: () => fake.count('*', PORTAL_WRITE_PATH) - fake.count('GET', PORTAL_WRITE_PATH),
    certs: () => fake.certs.store.all,
    storeCert: (pem, orgId = fake.orgId) => {
      const outcome = fake.certs.store.add(pem, orgId);
      if (outcome.kind !== 'added') throw new Error(`fake dashboard: certificate not stored: ${outcome.message}`);
      return outcome.cert.id;
    },
    inject: (spec) => fake.inject(spec),
    clearFaults: () => fake.clearFaults(),
    get calls() {
      return fake.callLog.snapshot();
    },
    count: (method, path) => fake.count(method, path),
    writes: () => fake.writes(),
    resetCalls: () => fake.callLog.clear(),
  };
}

/** Start a fake Tyk Dashboard on 127.0.0.1 (a free port). */
export async function startFakeTykDashboard(options: FakeTykDashboardOptions = {}): Promise<FakeTykDashboard> {
  const fake = new FakeDashboard(options);
  const port = await listenOnLoopback(fake.server);
  return facade(fake, `http://127.0.0.1:${port}`);
}
