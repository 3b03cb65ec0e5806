/**
 * The Tyk Dashboard fake's classic developer portal routes (./tyk-dashboard.ts delegates to
 * this after its auth check; every answer is the Dashboard's ApiResponse `{Status, Message,
 * Meta}` or a model). The swagger the other routes follow documents only /api/portal/policies,
 * so each route here says where its behaviour comes from:
 *
 * [docs]     Tyk's classic-portal API pages ("API Publishing Endpoints", tyk-docs
 *            tyk-apis/tyk-portal-api/portal-documentation.md; "Portal Configuration",
 *            portal-configuration.md): routes, bodies and sample answers.
 * [operator] Tyk Operator's Dashboard client (pkg/client/dashboard/portal_*.go) and controllers,
 *            which ran against real Dashboards: what it relies on.
 * [fake]     Not documented anywhere we could find: the fake's choice, kept strict so that a
 *            client relying on it fails here rather than against a real Dashboard. Our client
 *            (lib/gateway/tyk-dashboard-portal.ts) compares no [fake] message.
 *
 * - GET /api/portal/catalogue → 200 `{id, org_id, apis: [...], email}` [docs "List Catalogue"],
 *   every entry filled with the model's zero values (name, short_description, long_description,
 *   show, api_id, policy_id, documentation, version, is_keyless, config (the configuration model,
 *   `oauth_usage_limit: -1`), fields, auth_type, as the sample answer shows them; unknown fields
 *   dropped) [docs]. An organisation without a catalogue → 404 Dashboard error [operator: it
 *   creates one on a 404], message "Could not retrieve catalogue" [fake].
 * - POST /api/portal/catalogue `{org_id, ...}` → 200 `{Status:"OK", Message:<new id>, Meta:null}`
 *   [docs: the bootstrap scripts of Tyk's docs read the id from Message; operator: same]; the
 *   catalogue is the key's organisation's, whatever org_id says. One already there → 400
 *   "Catalogue already exists" [fake].
 * - PUT /api/portal/catalogue, the whole catalogue with its `id` [operator: it sends id and org_id]
 *   → 200 `{Status:"OK", Message:"Data updated", Meta:null}` [fake: the policies' wording]; none
 *   there → 404 "Could not retrieve catalogue" [fake]; another `id` → 400 "Invalid catalogue ID"
 *   [fake].
 * - POST /api/portal/documentation `{api_id, doc_type, documentation}` → 200 `{Status:"OK",
 *   Message:<new id>, Meta:null}` [docs]. `doc_type` one of swagger, swagger_custom_url, graphql,
 *   blueprint [docs, operator's enum]; swagger and blueprint text base64 [docs: "should be base64
 *   encoded"], else 400 "Could not decode documentation" [fake].
 * - DELETE /api/portal/documentation/{id} → 200 `{Status:"OK", Message:"Data deleted",
 *   Meta:null}` [docs]; an unknown id → 404 "Could not delete documentation" [operator: it takes a
 *   404 as gone; message fake].
 * - GET /api/portal/configuration → 200 the configuration, filled with zero values [docs]; none →
 *   404 "Could not retrieve configuration" [operator: any error means "create it"; the docs'
 *   bootstrap POSTs one first; message fake]. POST → 200 Message <new id> [docs: "Create Portal
 *   Configuration"; operator]; one already there → 400 "Configuration already exists" [fake].
 *   PUT with the stored `id` → 200 "Data updated"; none → 404; another id → 400 "Invalid
 *   configuration ID" [fake].
 * - Bodies: not JSON, not an object, or a field of the wrong JSON type → 400 "Request body
 *   malformed" [fake; the policies answer 403 for the same, the portal pages say nothing].
 * - Other methods → 405.
 * - Test controls: the stored catalogue, configuration and documentation (copies), edits and
 *   removals behind our back, `wipe()`.
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
  documentationNotFound: 'Could not delete documentation',
  malformed: 'Request body malformed',
};

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
    if (method === 'GET') return this.catalogueDoc ? reply(200, this.viewCatalogue(this.catalogueDoc)) : apiError(404, PORTAL_MSG.catalogueNotFound);
    if (method !== 'POST' && method !== 'PUT') return apiError(405, 'Method not allowed');
    const body = this.decodeCatalogue(raw);
    if (body === undefined) return apiError(400, PORTAL_MSG.malformed);
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
    if (body === undefined || mismatch({ api_id: '', doc_type: '', documentation: '' }, body)) return apiError(400, PORTAL_MSG.malformed);
    const docType = str(body.doc_type);
    const text = str(body.documentation);
    if (!DOC_TYPES.has(docType)) return apiError(400, PORTAL_MSG.badDocumentation);
    if (BASE64_DOC_TYPES.has(docType) && (!/^[A-Za-z0-9+/]+={0,2}$/.test(text) || text.length % 4 !== 0)) return apiError(400, PORTAL_MSG.badDocumentation);
    const id = this.newId();
    this.docs.set(id, { api_id: str(body.api_id), doc_type: docType, documentation: text });
    return ok(id);
  }

  private deleteDocumentation(id: string): Reply {
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
