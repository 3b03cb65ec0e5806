/**
 * The Tyk Dashboard fake's classic developer portal routes (./tyk-dashboard.ts delegates to
 * this after its auth check; every answer is the Dashboard's ApiResponse `{Status, Message,
 * Meta}` or a model). Each route says where its behaviour comes from:
 *
 * [sdk]      tyk-dashboard-sdk-swagger.yml (the Dashboard API 5.4 description Tyk's SDK is
 *            generated from; the only one of the catalogue and documentation routes): statuses,
 *            example bodies, and what each status means.
 * [docs]     Tyk's classic-portal API pages ("API Publishing Endpoints", "Portal Configuration"):
 *            routes, bodies and sample answers (the configuration routes are documented only there).
 * [operator] Tyk Operator's Dashboard client and controllers, which ran against real Dashboards.
 * [observed] Seen on a real Dashboard (the project's design notes).
 * [fake]     Documented nowhere we could find: the fake's choice, kept strict so that a client
 *            relying on it fails here rather than against a real Dashboard. Our client
 *            (lib/gateway/tyk-dashboard-portal.ts) compares no [fake] message.
 *
 * - GET /api/portal/catalogue → 200, the catalogue `{id, org_id, apis: [...], email}` [docs
 *   "List Catalogue"; operator: it decodes one object], every entry filled with the model's zero
 *   values (name, short_description, long_description, show, api_id, policy_id, documentation,
 *   version, is_keyless, config (the configuration model, `oauth_usage_limit: -1`), fields,
 *   auth_type; unknown fields dropped) [docs, sdk]. With `catalogueAnswer: 'list'`, the same
 *   catalogue as a list of one, as the sdk's schema (`type: array`) has it [sdk]. An
 *   organisation without a catalogue → 404 Dashboard error [observed; operator: it creates one
 *   on a 404], message "Could not retrieve catalogue" [fake].
 * - POST /api/portal/catalogue `{org_id, ...}` → 200 `{Status:"OK", Message:<new id>, Meta:null}`
 *   [sdk]; the catalogue is the key's organisation's, whatever org_id says. One already there →
 *   400 "Catalogue already exists" [sdk: "only use this method if no single catalogue exist";
 *   message fake].
 * - PUT /api/portal/catalogue, the whole catalogue with its `id` [sdk: "the ApiCatalogue ID is
 *   required in the request body"; it replaces every entry] → 200 `{Status:"OK", Message:"Data
 *   updated", Meta:null}` [sdk]; none there → 404 "Could not retrieve catalogue" [fake];
 *   another `id` → 400 "Invalid catalogue ID" [fake].
 * - POST and PUT: an entry without a policy_id → 400 "Portal Catalogue API <name> should have a
 *   valid policy_id" [sdk: the documented 400 "failed request body validation"]; a body the model
 *   cannot decode (not JSON, not an object, a field of the wrong JSON type) → 403 "Request body
 *   malformed" [sdk].
 * - POST /api/portal/documentation `{api_id, doc_type, documentation}` → 200 `{Status:"OK",
 *   Message:<new id>, Meta:null}` [sdk]. While the organisation has no catalogue → 403 "Could not
 *   retrieve portal object." [sdk: "malformed body or no catalogue added yet"; the message as a
 *   real Dashboard answered it]. A body the model cannot decode → 403 "Request body malformed"
 *   [sdk]. `doc_type` one of swagger, swagger_custom_url, blueprint [sdk's enum] or graphql
 *   [operator's enum]; swagger and blueprint text base64 [docs: "should be base64 encoded"], else
 *   400 "Could not decode documentation" [fake].
 * - DELETE /api/portal/documentation/{id} → 200 `{Status:"OK", Message:"Data deleted",
 *   Meta:null}` [sdk]; an id that is not an object id → 400 "invalid doc id" [sdk]; an unknown id
 *   → 404 "Could not retrieve object for deletion" [sdk].
 * - GET /api/portal/configuration → 200 the configuration, filled with zero values [docs]; none →
 *   404 "Could not retrieve configuration" [operator: any error means "create it"; the docs'
 *   bootstrap POSTs one first; message fake]. POST → 200 Message <new id> [docs: "Create Portal
 *   Configuration"; operator]; one already there → 400 "Configuration already exists" [fake].
 *   PUT with the stored `id` → 200 "Data updated"; none → 404; another id → 400 "Invalid
 *   configuration ID" [fake]. A body the model cannot decode → 400 "Request body malformed" [fake].
 * - Other methods → 405.
 * - Test controls: the stored catalogue, configuration and documentation (copies), edits and
 *   removals behind our back, `wipe()` (a fresh organisation).
 */
import { cloneJson as clone } from './http-plumbing.js';
import { dashboardError as apiError, type Reply, reply } from './tyk-fake-base.js';

type Json = null | boolean | number | string | Json[] | JsonObject;
export interface JsonObject {
  [key: string]: Json;
}

export const PORTAL_MSG = {
  catalogueNotFound: 'Could not retrieve catalogue',
  catalogueExists: 'Catalogue already exists',
  badCatalogueId: 'Invalid catalogue ID',
  configurationNotFound: 'Could not retrieve configuration',
  configurationExists: 'Configuration already exists',
  badConfigurationId: 'Invalid configuration ID',
  badDocumentation: 'Could not decode documentation',
  documentationNotFound: 'Could not retrieve object for deletion',
  badDocumentationId: 'invalid doc id',
  noCatalogueYet: 'Could not retrieve portal object.',
  malformed: 'Request body malformed',
};

/** The 400 to a catalogue entry without a policy_id [sdk]. */
export function invalidEntryMessage(name: string): string {
  return `Portal Catalogue API ${name} should have a valid policy_id`;
}

const EMAIL = (): JsonObject => ({ enabled: false, subject: '', body: '', sign_off: '', hide_token_data: false });

/** The portal configuration model's zero values [docs sample, plus operator's fields]. */
export function configurationDefaults(oauthUsageLimit = 0): JsonObject {
  return {
    id: '',
    org_id: '',
    signup_fields: [],
    key_request_fields: [],
    require_key_approval: false,
    secure_key_approval: false,
    redirect_on_key_request: false,
    redirect_to: '',
    enable_multi_selection: false,
    disable_login: false,
    disable_signup: false,
    disable_auto_login: false,
    catalogue_login_only: false,
    oauth_usage_limit: oauthUsageLimit,
    email: '',
    mail_options: { mail_from_name: '', mail_from_email: '', email_copy: { welcome_email: EMAIL(), key_email: EMAIL(), reset_password_email: EMAIL() } },
    enable_dcr: false,
    dcr_options: { idp_host: '', registration_endpoint: '', access_token: '', provider: '', grant_types: null, response_types: null, token_endpoint_auth_method: '' },
    override: false,
    HashKeys: false,
  };
}

/** A catalogue entry's zero values [docs sample]. */
function entryDefaults(): JsonObject {
  return {
    name: '',
    short_description: '',
    long_description: '',
    show: false,
    api_id: '',
    policy_id: '',
    documentation: '',
    version: '',
    is_keyless: false,
    config: configurationDefaults(-1),
    fields: {},
    auth_type: '',
  };
}

const CATALOGUE_DEFAULTS = (): JsonObject => ({ id: '', org_id: '', apis: [], email: '' });
const DOC_TYPES = new Set(['swagger', 'swagger_custom_url', 'graphql', 'blueprint']);
const BASE64_DOC_TYPES = new Set(['swagger', 'blueprint']);
const OBJECT_ID = /^[0-9a-f]{24}$/i;

function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Whether Go would refuse `v` for a field whose zero value is `def` (null zero values: any). */
function mismatch(def: Json | undefined, v: Json | undefined): boolean {
  if (v === undefined || v === null || def === undefined || def === null) return false;
  if (Array.isArray(def)) return !Array.isArray(v);
  if (isObject(def)) return !isObject(v) || Object.entries(v).some(([k, x]) => mismatch(def[k], x));
  return typeof v !== typeof def;
}

/** `v` over the zero values `def`: known fields only at the top, nested objects keep unknown ones as Go maps do not (dropped too). */
function filled(def: JsonObject, v: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const [k, d] of Object.entries(def)) {
    const x = v[k];
    if (x === undefined || x === null) out[k] = clone(d);
    else if (isObject(d) && Object.keys(d).length > 0 && isObject(x)) out[k] = filled(d, x);
    else out[k] = clone(x);
  }
  return out;
}

function parse(raw: string): JsonObject | undefined {
  try {
    const v = JSON.parse(raw) as unknown;
    return isObject(v) ? v : undefined;
  } catch {
    return undefined;
  }
}

function ok(message: string): Reply {
  return reply(200, { Status: 'OK', Message: message, Meta: null });
}

function str(v: Json | undefined): string {
  return typeof v === 'string' ? v : '';
}

export interface StoredDocumentation {
  api_id: string;
  doc_type: string;
  documentation: string;
}

export type PortalMutator = (obj: JsonObject) => void | JsonObject;

/** The portal routes of one fake Dashboard (one organisation). */
export class FakeDashboardPortal {
  private catalogueDoc: JsonObject | undefined;
  private configurationDoc: JsonObject | undefined;
  private docs = new Map<string, StoredDocumentation>();

  constructor(
    private readonly orgId: string,
    private readonly newId: () => string,
    /** how GET /api/portal/catalogue renders the catalogue: one object, or a list of one (see the header) */
    private readonly catalogueAnswer: 'object' | 'list' = 'object',
  ) {}

  /** The answer to a portal route; undefined when `path` is not one. */
  handle(method: string, path: string, raw: string): Reply | undefined {
    if (/^\/api\/portal\/catalogue\/?$/.test(path)) return this.onCatalogue(method, raw);
    if (/^\/api\/portal\/configuration\/?$/.test(path)) return this.onConfiguration(method, raw);
    if (/^\/api\/portal\/documentation\/?$/.test(path)) return method === 'POST' ? this.uploadDocumentation(raw) : apiError(405, 'Method not allowed');
    const doc = /^\/api\/portal\/documentation\/([^/]+)\/?$/.exec(path);
    if (doc) return method === 'DELETE' ? this.deleteDocumentation(decodeURIComponent(doc[1] ?? '')) : apiError(405, 'Method not allowed');
    return undefined;
  }

  // --- the test side ---------------------------------------------------------------

  /** The catalogue as GET shows it (a copy); undefined when the organisation has none. */
  catalogue(): JsonObject | undefined {
    return this.catalogueDoc ? this.viewCatalogue(this.catalogueDoc) : undefined;
  }

  /** The configuration as GET shows it (a copy). */
  configuration(): JsonObject | undefined {
    return this.configurationDoc ? clone(this.configurationDoc) : undefined;
  }

  /** id → the documentation stored (copies). */
  documentation(): Map<string, StoredDocumentation> {
    return new Map([...this.docs].map(([id, d]) => [id, { ...d }]));
  }

  /** Someone edits the catalogue on the Dashboard. */
  editCatalogue(mutate: PortalMutator): void {
    if (!this.catalogueDoc) throw new Error('fake dashboard: no catalogue to edit');
    const next = mutate(this.catalogueDoc);
    if (next !== undefined) this.catalogueDoc = next;
  }

  /** Someone removes the entry under `policyId` on the Dashboard; false when there is none. */
  removeEntry(policyId: string): boolean {
    const apis = this.catalogueApis();
    const kept = apis.filter((e) => !(isObject(e) && e.policy_id === policyId));
    if (this.catalogueDoc) this.catalogueDoc.apis = kept;
    return kept.length !== apis.length;
  }

  /** Someone edits the configuration on the Dashboard. */
  editConfiguration(mutate: PortalMutator): void {
    if (!this.configurationDoc) throw new Error('fake dashboard: no portal configuration to edit');
    const next = mutate(this.configurationDoc);
    if (next !== undefined) this.configurationDoc = next;
  }

  wipe(): void {
    this.catalogueDoc = undefined;
    this.configurationDoc = undefined;
    this.docs = new Map();
  }

  // --- the catalogue -----------------------------------------------------------------

  private catalogueApis(): Json[] {
    const apis = this.catalogueDoc?.apis;
    return Array.isArray(apis) ? apis : [];
  }

  private viewCatalogue(doc: JsonObject): JsonObject {
    const out = filled(CATALOGUE_DEFAULTS(), doc);
    out.apis = (Array.isArray(doc.apis) ? doc.apis : []).map((e) => (isObject(e) ? filled(entryDefaults(), e) : clone(e)));
    return out;
  }

  /** A catalogue body the model decodes: its entries' fields of the right JSON types. */
  private decodeCatalogue(raw: string): JsonObject | undefined {
    const body = parse(raw);
    if (body === undefined || mismatch(CATALOGUE_DEFAULTS(), body)) return undefined;
    const apis = body.apis ?? [];
    if (!Array.isArray(apis) || !apis.every((e) => isObject(e) && !mismatch(entryDefaults(), e))) return undefined;
    return body;
  }

  private onCatalogue(method: string, raw: string): Reply {
    if (method === 'GET') {
      if (!this.catalogueDoc) return apiError(404, PORTAL_MSG.catalogueNotFound);
      const view = this.viewCatalogue(this.catalogueDoc);
      return reply(200, this.catalogueAnswer === 'list' ? [view] : view);
    }
    if (method !== 'POST' && method !== 'PUT') return apiError(405, 'Method not allowed');
    const body = this.decodeCatalogue(raw);
    if (body === undefined) return apiError(403, PORTAL_MSG.malformed);
    const invalid = (body.apis as Json[] | undefined)?.find((e) => isObject(e) && str(e.policy_id) === '');
    if (isObject(invalid)) return apiError(400, invalidEntryMessage(str(invalid.name)));
    if (method === 'POST') {
      if (this.catalogueDoc) return apiError(400, PORTAL_MSG.catalogueExists);
      const id = this.newId();
      this.catalogueDoc = { ...this.stored(body), id, org_id: this.orgId };
      return ok(id);
    }
    if (!this.catalogueDoc) return apiError(404, PORTAL_MSG.catalogueNotFound);
    if (str(body.id) !== str(this.catalogueDoc.id)) return apiError(400, PORTAL_MSG.badCatalogueId);
    this.catalogueDoc = { ...this.stored(body), id: this.catalogueDoc.id ?? '', org_id: this.orgId };
    return ok('Data updated');
  }

  /** A decoded catalogue as the Dashboard stores it: its model, its entries' models (unknown fields dropped). */
  private stored(body: JsonObject): JsonObject {
    const doc = filled(CATALOGUE_DEFAULTS(), body);
    doc.apis = (Array.isArray(body.apis) ? body.apis : []).map((e) => (isObject(e) ? filled(entryDefaults(), e) : clone(e)));
    return doc;
  }

  // --- documentation -----------------------------------------------------------------

  private uploadDocumentation(raw: string): Reply {
    const body = parse(raw);
    if (body === undefined || mismatch({ api_id: '', doc_type: '', documentation: '' }, body)) return apiError(403, PORTAL_MSG.malformed);
    if (!this.catalogueDoc) return apiError(403, PORTAL_MSG.noCatalogueYet);
    const docType = str(body.doc_type);
    const text = str(body.documentation);
    if (!DOC_TYPES.has(docType)) return apiError(400, PORTAL_MSG.badDocumentation);
    if (BASE64_DOC_TYPES.has(docType) && (!/^[A-Za-z0-9+/]+={0,2}$/.test(text) || text.length % 4 !== 0)) return apiError(400, PORTAL_MSG.badDocumentation);
    const id = this.newId();
    this.docs.set(id, { api_id: str(body.api_id), doc_type: docType, documentation: text });
    return ok(id);
  }

  private deleteDocumentation(id: string): Reply {
    if (!OBJECT_ID.test(id)) return apiError(400, PORTAL_MSG.badDocumentationId);
    return this.docs.delete(id) ? ok('Data deleted') : apiError(404, PORTAL_MSG.documentationNotFound);
  }

  // --- the configuration ---------------------------------------------------------------

  private onConfiguration(method: string, raw: string): Reply {
    if (method === 'GET') return this.configurationDoc ? reply(200, clone(this.configurationDoc)) : apiError(404, PORTAL_MSG.configurationNotFound);
    if (method !== 'POST' && method !== 'PUT') return apiError(405, 'Method not allowed');
    const body = parse(raw);
    if (body === undefined || mismatch(configurationDefaults(), body)) return apiError(400, PORTAL_MSG.malformed);
    if (method === 'POST') {
      if (this.configurationDoc) return apiError(400, PORTAL_MSG.configurationExists);
      const id = this.newId();
      this.configurationDoc = { ...filled(configurationDefaults(), body), id, org_id: this.orgId };
      return ok(id);
    }
    if (!this.configurationDoc) return apiError(404, PORTAL_MSG.configurationNotFound);
    if (str(body.id) !== str(this.configurationDoc.id)) return apiError(400, PORTAL_MSG.badConfigurationId);
    this.configurationDoc = { ...filled(configurationDefaults(), body), id: this.configurationDoc.id ?? '', org_id: this.orgId };
    return ok('Data updated');
  }
}
