/**
 * The Tyk Dashboard API ("pro" mode, TYK_MODE=pro) as a Gateway (./types.ts), and as a
 * CertificateStore (./certificates.ts).
 *
 * Calls (the Dashboard swagger): GET /api/apis?p=N&sort=created_at, GET/PUT/DELETE
 * /api/apis/{id}, POST /api/apis, all with the `{"api_definition": ...}` wrapper; GET
 * /api/portal/policies?p=N, GET/PUT/DELETE /api/portal/policies/{_id}, POST
 * /api/portal/policies, with bare Policy bodies; the certificate store: POST /api/certs
 * (multipart), GET /api/certs?p=N, GET/DELETE /api/certs/{certId}. Every call carries
 * `Authorization: <key>` (the Dashboard user's API key, no "Bearer") and a timeout. No reload:
 * the Dashboard's writes are visible at once, so `reloadRequired` is false and `reload()` does
 * nothing.
 *
 * Tyk OAS APIs ('oas', ./oas.ts): GET/PUT/DELETE /api/apis/oas/{id} and POST /api/apis/oas,
 * with the bare OpenAPI document; {id} is the API's public id, `x-tyk-api-gateway.info.id` (the
 * swagger's examples: the id a create answers as `ID`), so no internal id is needed.
 * - list: the Dashboard documents no OAS list; its API list (GET /api/apis, as for 'api') holds
 *   OAS APIs too, in their Classic form with `is_oas: true` and the document as the wrapper's
 *   `oas`; an item without `oas` is read by GET /api/apis/oas/{id}.
 * - upsert: the document with our id in info.id and without info.dbId (the Dashboard's); PUT,
 *   and on the documented "absent" POST (with the hint that the API is absent, the POST first); a POST refused with 409 (a create whose answer was
 *   lost, or made meanwhile) is followed by one more PUT, and if the API there is still not an
 *   OAS API (a Tyk Classic API has the id) a GatewayApiError (409) says so. A Dashboard that
 *   gives the new API an id of its own gets that copy deleted, and a GatewayApiError (409).
 * - remove: a read first, then DELETE; absent is done; a failed delete is done when a read
 *   confirms the API is gone.
 * - Absent: GET → 400 or 404 "Could not retrieve API detail." (400 documented, 404 as for
 *   Classic APIs); PUT → 404 "API definition does not exist"; DELETE → 404 "Could not retrieve
 *   API detail.". A PUT refused with 403 "Found API with same url." (another API's listen path)
 *   refuses what we sent: GatewayRejectedError.
 *
 * The developer portal ('portal-catalogue', 'portal-configuration', 'portal-description'):
 * /api/portal/catalogue, /api/portal/documentation and /api/portal/configuration, in
 * ./tyk-dashboard-portal.ts, over this client's transport and error mapping.
 *
 * Ids are ours everywhere in the interface:
 * - 'api': the id is `api_id`. The Dashboard's internal `id` is learned from lists, reads and
 *   creates, and sent back in PUT bodies; never chosen by us. A create whose `api_id` the
 *   Dashboard already has (409) is adopted: read, then PUT. When a Dashboard generates its own
 *   api_id on create, we PUT ours onto the new API by its internal id (the swagger: api_id can be
 *   updated on-premise); if that does not take (Tyk Cloud ignores api_id updates) the stray copy
 *   is deleted and a GatewayApiError says why.
 * - 'policy': the id is the policy's `id` field; the Dashboard's `_id` (which names it in URLs)
 *   is kept in a small id→_id map learned from lists, reads and creates, and found by listing
 *   on a miss. A complete list younger than `listFreshMs` is trusted to say an id is absent
 *   (so a run that listed, then creates many policies, does not list again per create), except
 *   for an id that is itself a Dashboard _id, which is then read directly; a known _id that
 *   turns out gone or re-keyed always forces a new list. Bodies returned by
 *   get/list include `_id`; policies are also found by their `_id` (Tyk Operator adopts a policy by setting spec.id to its _id). When two
 *   policies carry the same `id`, the first listed (oldest) is ours.
 * - `list` follows every page (sorted oldest first, so new objects land on the last page) and
 *   starts again when the page count changes under it; a failed page fails the list, and so
 *   does a page without its list field (`apis`, `Data`, `certs`; null is an empty page). (A
 *   delete by someone else while we page, with the page count unchanged, can shift one item
 *   past us; the worst it costs is one adopting write, never a delete.)
 * - A policy create's `_id` is read from the answer's Meta, else its Message (where the
 *   swagger's example puts it). A policy POST refused with 400/409 first looks for a policy
 *   with our id (a create whose answer was lost) and updates it instead.
 * - `ping` is one filtered list call (GET /api/apis?p=1&q=<probe name>).
 * - Absent is only what the swagger documents for an id the Dashboard does not have, as its own
 *   ApiResponse (`Status: "Error"`) with the documented Message (compared without case or a
 *   final period): GET /api/apis/{id} → 400 or 404 "Could not retrieve API detail" (the swagger
 *   gives 400; Dashboards answer either); PUT → 404 "API definition does not exist"; DELETE →
 *   404 "Could not retrieve API detail"; GET and PUT /api/portal/policies/{id} → 404 "Could not
 *   retrieve portal object."; DELETE → 404 "Could not retrieve object for deletion". Any other
 *   answer (a 400 with another message, a proxy's 404 page) is an error, never "absent".
 * - A policy read by _id whose body lacks `_id` (the swagger's GET example omits it) is given
 *   the _id it was read by. Whether the Dashboard also takes a policy's own `id` in that path
 *   (the swagger does not say) does not matter: only _ids go in paths.
 * - Deletes verify first: a read by our id finds the object (by its real identity), then it is
 *   deleted by its internal id / _id; absent (as above) is done, and a failed delete is done
 *   when a read confirms the object is gone.
 *
 * The certificate store (/api/certs):
 * - The Dashboard keeps certificates in the org of its key, and names them as Tyk does: that
 *   org id followed by the hex SHA-256 of the leaf's DER. The `orgId` parameters of the
 *   CertificateStore calls are accepted for the interface and ignored: the Dashboard takes no
 *   org, and an id built from TYK_ORG would be wrong where TYK_ORG is not the key's org.
 * - `uploadCertificate` checks the PEM first (certificateId: InvalidSpecError, nothing sent),
 *   then posts it as multipart/form-data, the same file under two fields: `file` (the
 *   swagger's) and `cert` (what Tyk Operator and tyk-sync send, which real Dashboards read).
 *   A Dashboard reads one of them, and either way gets the same PEM. The id is the one the
 *   answer gives. A certificate the org has already (any 4xx ApiResponse whose Message says
 *   "Certificate with <id> ID already exists", the swagger's 404) is uploaded: its id is the
 *   one named there, when it ends with the certificate's SHA-256, else the listed id that does.
 *   Another 404 "Could not create certificate.…" (expired, a key that does not match, …) →
 *   GatewayRejectedError.
 * - `hasCertificate`: the certificate's metadata (an object carrying its id) → true; the
 *   documented 404 "Could not retrieve certificate details. Certificate with given SHA256
 *   fingerprint not found." → false. Another org's id (400 "Attempted access to non-owned
 *   certificate.") is an error, never "absent".
 * - `removeCertificate`: 2xx, or the documented 404 "Could not delete certificate.", is done
 *   (Dashboards answer an unknown id either way); a failed delete (5xx) is done when
 *   `hasCertificate` confirms the certificate is gone.
 * - `listCertificates` follows every page of ids, as `list` does.
 * - Errors never carry a PEM: PEM blocks in an answer, and any line of the uploaded PEM, are
 *   cut out of messages.
 * Errors: a body refused with 400 → GatewayRejectedError with the Dashboard's Message (also 403
 * "Request body malformed.", the Dashboard's answer to a policy it cannot decode, and 403 "Found
 * API with same url." to an OAS API on another API's listen path); a 400 to a
 * GET or DELETE (other than the documented "absent") → GatewayApiError; 401, or a 403 that
 * refuses the key (./transport.ts `isAuthorisationFailure`) → GatewayApiError naming TYK_AUTH;
 * other ≥ 400 (a 403 that refuses the request itself too) → GatewayApiError; network/timeout →
 * GatewayUnavailableError. The key never appears in an error.
 */
import { randomBytes } from 'node:crypto';
import type { LookupFunction } from 'node:net';
import { GatewayApiError, GatewayRejectedError } from '../platform/errors.js';
import { isObject, nonEmpty } from '../platform/guards.js';
import { type HttpResponse, redactUrl, type TransportFactory } from '../platform/http.js';
import { nodeTransports } from '../platform/http-node.js';
import { type CertificateStore, certificateId, type Uploaded } from './certificates.js';
import { oasApiId, withOasId, withoutOasFields } from './oas.js';
import { answerMessage, type CallTarget, type GatewayObserver, gatewayCall, isAuthorisationFailure } from './transport.js';
import { DashboardPortal } from './tyk-dashboard-portal.js';
import { type Gateway, type GatewayObjectKind, type JsonObject, type ListVisitor, listedObject, type UpsertHint } from './types.js';

export interface TykDashboardOptions {
  name: string;
  url: string;
  /** the Dashboard user's API key */
  secret: string;
  insecureSkipVerify?: boolean;
  /** resolves host names for new connections (an OperatorContext's UrlPolicy check); default the system's */
  lookup?: LookupFunction;
  /** the deadline of each request, the whole exchange; default 10 s */
  timeoutMs?: number;
  /** the most bytes of an answer read (GATEWAY_MAX_RESPONSE_BYTES); default: no limit */
  maxResponseBytes?: number;
  /** told of every request (the metrics) */
  observe?: GatewayObserver;
  /** how long a complete policy list is trusted to say an id is absent; default 5 s (0: list on every miss) */
  listFreshMs?: number;
  /** makes the connection pool (lib/platform/http.ts), chosen where the service is built; default Node's own (lib/platform/http-node.ts) */
  transport?: TransportFactory;
}

const APIS = '/api/apis';
const OAS_APIS = '/api/apis/oas';
const POLICIES = '/api/portal/policies';
const CERTS = '/api/certs';
/** The multipart fields an upload carries the PEM under: the swagger's, then Tyk Operator's. */
const CERT_UPLOAD_FIELDS = ['file', 'cert'] as const;
/** The certificate manager's answer to a certificate the org has already ("ID" in the swagger's words, "id" in newer Tyk's). */
const CERT_EXISTS = /Certificate with (\S*) id already exists/i;
/** The start of the Dashboard's answer to a PEM the certificate manager refuses. */
const CERT_NOT_CREATED = /^could not create certificate/i;
/** A PEM block in an answer, to its END line or the end of the text (a cut-off echo). */
const PEM_BLOCK = /-----BEGIN [A-Z0-9 ]+-----[\s\S]*?(?:-----END [A-Z0-9 ]+-----|$)/g;
/** how often `list` starts again when the list changes while it pages */
const LIST_ATTEMPTS = 3;
const MAX_PAGES = 100_000;
const PROBE_NAME = 'gateway-reconciler-readiness-probe';
/** A Dashboard (MongoDB) object id, as policy _ids are */
const OBJECT_ID = /^[0-9a-f]{24}$/i;

type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

/** A documented answer for an id the Dashboard does not have: its statuses and Message. */
export interface AbsentAnswer {
  statuses: readonly number[];
  message: string;
}

/** The swagger's answers for an unknown id, per call (see the header). */
export const ABSENT_ANSWERS = {
  getApi: { statuses: [400, 404], message: 'Could not retrieve API detail' },
  putApi: { statuses: [404], message: 'API definition does not exist' },
  deleteApi: { statuses: [404], message: 'Could not retrieve API detail' },
  getOas: { statuses: [400, 404], message: 'Could not retrieve API detail.' },
  putOas: { statuses: [404], message: 'API definition does not exist' },
  deleteOas: { statuses: [404], message: 'Could not retrieve API detail.' },
  getPolicy: { statuses: [404], message: 'Could not retrieve portal object.' },
  putPolicy: { statuses: [404], message: 'Could not retrieve portal object.' },
  deletePolicy: { statuses: [404], message: 'Could not retrieve object for deletion' },
  getCertificate: { statuses: [404], message: 'Could not retrieve certificate details. Certificate with given SHA256 fingerprint not found.' },
  deleteCertificate: { statuses: [404], message: 'Could not delete certificate.' },
} as const satisfies Record<string, AbsentAnswer>;

/** A Message as compared with a documented one: no case, no surrounding space, no final period. */
function normalMessage(m: string): string {
  return m.trim().replace(/\.$/, '').toLowerCase();
}

/** Our key for a Dashboard policy: its `id`, else its `_id`. */
function policyKey(p: JsonObject): string | undefined {
  return nonEmpty(p.id) ?? nonEmpty(p._id);
}

function enc(id: string): string {
  return encodeURIComponent(id);
}

/** A request body sent as it is. */
interface RawBody {
  text: string;
  contentType: string;
}

/** POST /api/certs's body: the PEM as a file under each of CERT_UPLOAD_FIELDS (see the header). */
function certUpload(pem: string): RawBody {
  const boundary = `gateway-reconciler-${randomBytes(16).toString('hex')}`;
  const parts = CERT_UPLOAD_FIELDS.map(
    (field) => `--${boundary}\r\nContent-Disposition: form-data; name="${field}"; filename="${field}.pem"\r\nContent-Type: application/x-pem-file\r\n\r\n${pem}\r\n`,
  );
  return { text: `${parts.join('')}--${boundary}--\r\n`, contentType: `multipart/form-data; boundary=${boundary}` };
}

/** `text` without PEM blocks, and without any line of `pem` (an answer echoing what was sent). */
function withoutPem(text: string, pem?: string): string {
  let out = text.replace(PEM_BLOCK, '[PEM]');
  for (const line of pem?.split(/\r?\n/) ?? []) if (line.trim().length >= 16) out = out.split(line.trim()).join('[PEM]');
  return out;
}

export class TykDashboardClient implements Gateway, CertificateStore {
  readonly certificates: CertificateStore = this;
  readonly name: string;
  readonly reloadRequired = false;
  private readonly base: string;
  private readonly secret: string;
  private readonly timeoutMs: number;
  private readonly maxResponseBytes: number | undefined;
  private readonly target: CallTarget;
  private readonly listFreshMs: number;
  /** when the last complete policy list started (epoch ms) */
  private policiesListedAt = -Infinity;
  /** api_id → the Dashboard's internal id */
  private apiIds = new Map<string, string>();
  /** the last policy list, by the Dashboard's _id */
  private policiesByMid = new Map<string, JsonObject>();
  /** our policy id → the Dashboard's _id */
  private policyIds = new Map<string, string>();
  /** the developer portal's kinds (./tyk-dashboard-portal.ts), over this client's transport */
  private readonly portal = new DashboardPortal({
    call: (method, path, body) => this.call(method, path, body),
    expect2xx: (res, what, sentBody) => this.expect2xx(res, what, sentBody),
    isDashboardError: (res) => this.isDashboardError(res),
  });

  constructor(options: TykDashboardOptions) {
    this.name = options.name;
    this.base = options.url.replace(/\/+$/, '');
    this.secret = options.secret;
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.maxResponseBytes = options.maxResponseBytes;
    this.listFreshMs = options.listFreshMs ?? 5_000;
    const transport = (options.transport ?? nodeTransports())({ ...(options.insecureSkipVerify ? { rejectUnauthorized: false } : {}), ...(options.lookup ? { lookup: options.lookup } : {}) });
    this.target = { label: `dashboard ${options.name}`, name: options.name, transport, ...(options.observe ? { observe: options.observe } : {}) };
  }

  /** The Dashboard's lists are read whole (one JSON object each, not a bare list); `visit` then takes each object. */
  async list(kind: GatewayObjectKind, visit?: ListVisitor): Promise<Map<string, JsonObject>> {
    const all = await this.listOf(kind);
    if (!visit) return all;
    for (const [id, item] of all) visit(id, listedObject(item));
    return new Map();
  }

  private listOf(kind: GatewayObjectKind): Promise<Map<string, JsonObject>> {
    switch (kind) {
      case 'api':
        return this.listApis();
      case 'policy':
        return this.listPolicies();
      case 'oas':
        return this.listOas();
      default:
        return this.portal.list(kind);
    }
  }

  get(kind: GatewayObjectKind, id: string): Promise<JsonObject | null> {
    switch (kind) {
      case 'api':
        return this.getApi(id);
      case 'policy':
        return this.getPolicy(id);
      case 'oas':
        return this.getOas(id);
      default:
        return this.portal.get(kind, id);
    }
  }

  upsert(kind: GatewayObjectKind, id: string, body: JsonObject, hint?: UpsertHint): Promise<void> {
    switch (kind) {
      case 'api':
        return this.upsertApi(id, body);
      case 'policy':
        return this.upsertPolicy(id, body);
      case 'oas':
        return this.upsertOas(id, body, hint?.present !== false);
      default:
        return this.portal.upsert(kind, id, body);
    }
  }

  remove(kind: GatewayObjectKind, id: string): Promise<void> {
    switch (kind) {
      case 'api':
        return this.removeApi(id);
      case 'policy':
        return this.removePolicy(id);
      case 'oas':
        return this.removeOas(id);
      default:
        return this.portal.remove(kind, id);
    }
  }

  /** The Dashboard needs no reload. */
  async reload(): Promise<void> {}

  /** One small list call (a name filter nobody matches): proves the Dashboard answers and takes the key. */
  async ping(): Promise<void> {
    const res = await this.call('GET', `${APIS}?p=1&q=${PROBE_NAME}`);
    this.expect2xx(res, 'readiness probe', false);
    if (!isObject(res.json) || !('apis' in res.json)) {
      throw new GatewayApiError(res.status, 'readiness probe: the answer is not a Tyk Dashboard API list (check TYK_URL)');
    }
  }

  async close(): Promise<void> {
    await this.target.transport.close();
  }

  /** The Dashboard URL without credentials, for logs and /readyz. */
  get url(): string {
    return redactUrl(this.base);
  }

  // --- APIs ----------------------------------------------------------------

  private async listApis(): Promise<Map<string, JsonObject>> {
    const items = await this.walk(`${APIS}?sort=created_at&`, 'apis', 'pages', 'APIs');
    const out = new Map<string, JsonObject>();
    const ids = new Map<string, string>();
    for (const item of items) {
      const def = isObject(item) ? item.api_definition : undefined;
      const apiId = isObject(def) ? nonEmpty(def.api_id) : undefined;
      if (!isObject(def) || apiId === undefined) throw new GatewayApiError(200, 'list APIs: an item has no api_definition.api_id');
      out.set(apiId, def);
      const internal = nonEmpty(def.id);
      if (internal !== undefined) ids.set(apiId, internal);
    }
    this.apiIds = ids;
    return out;
  }

  private async getApi(id: string): Promise<JsonObject | null> {
    const res = await this.call('GET', `${APIS}/${enc(id)}`);
    if (this.isAbsent(res, ABSENT_ANSWERS.getApi)) {
      this.apiIds.delete(id);
      return null;
    }
    this.expect2xx(res, `get API ${id}`, false);
    const def = isObject(res.json) ? res.json.api_definition : undefined;
    if (!isObject(def)) throw new GatewayApiError(res.status, `get API ${id}: the answer has no api_definition`);
    // {apiId} may also match an internal id: only an API carrying our api_id is ours.
    if (def.api_id !== id) return null;
    const internal = nonEmpty(def.id);
    if (internal !== undefined) this.apiIds.set(id, internal);
    return def;
  }

  private async upsertApi(id: string, body: JsonObject): Promise<void> {
    const def: JsonObject = { ...body, api_id: id };
    delete def.id; // the Dashboard's internal id: never ours to choose
    if (this.apiIds.has(id) && (await this.putApi(id, def))) return;
    const res = await this.call('POST', APIS, { api_definition: def });
    if (res.status === 409 && this.isDashboardError(res)) {
      // The Dashboard already has this api_id (Tyk Operator's, or a create we lost the answer to): adopt it.
      if (await this.putApi(id, def)) return;
      throw new GatewayApiError(409, `write API ${id}: the Dashboard says it has this api_id (409) but has no API under it to update`);
    }
    this.expect2xx(res, `create API ${id}`);
    await this.settleApiId(id, def, res);
  }

  /** PUT by internal id (read first when unknown); false when the Dashboard has no such API. */
  private async putApi(id: string, def: JsonObject): Promise<boolean> {
    let internal = this.apiIds.get(id);
    if (internal === undefined) {
      if ((await this.getApi(id)) === null) return false;
      internal = this.apiIds.get(id);
    }
    const path = `${APIS}/${enc(internal ?? id)}`;
    const res = await this.call('PUT', path, { api_definition: internal === undefined ? def : { ...def, id: internal } });
    if (this.isAbsent(res, ABSENT_ANSWERS.putApi)) {
      this.apiIds.delete(id);
      return false;
    }
    this.expect2xx(res, `update API ${id}`);
    return true;
  }

  /** After a create: make sure the new API carries our api_id (see the header). */
  private async settleApiId(id: string, def: JsonObject, created: HttpResponse): Promise<void> {
    const answer = isObject(created.json) ? created.json : {};
    const internal = nonEmpty(answer.Meta);
    let assigned = nonEmpty(answer.ID);
    if (internal === undefined) {
      if ((await this.getApi(id)) !== null) return;
      throw new GatewayApiError(created.status, `create API ${id}: the Dashboard answered without the new API's id, and has no API under api_id ${id}`);
    }
    if (assigned === undefined) {
      const res = await this.call('GET', `${APIS}/${enc(internal)}`);
      this.expect2xx(res, `read back API ${id}`, false);
      const back = isObject(res.json) && isObject(res.json.api_definition) ? res.json.api_definition : {};
      assigned = nonEmpty(back.api_id);
    }
    if (assigned === id) {
      this.apiIds.set(id, internal);
      return;
    }
    // The Dashboard generated its own api_id: put ours on the API it created, by its internal id.
    let fixed = false;
    try {
      const res = await this.call('PUT', `${APIS}/${enc(internal)}`, { api_definition: { ...def, id: internal } });
      this.expect2xx(res, `set api_id of API ${id}`);
      fixed = (await this.getApi(id)) !== null && this.apiIds.get(id) === internal;
    } finally {
      if (!fixed) await this.call('DELETE', `${APIS}/${enc(internal)}`).catch(() => undefined);
    }
    if (!fixed) {
      throw new GatewayApiError(
        409,
        `create API ${id}: the Dashboard gave the new API api_id ${assigned ?? '(none)'} and would not take ours ` +
          '(Tyk Cloud ignores api_id updates); the copy was deleted. Use a Dashboard that keeps api_id, or set spec.api_id.',
      );
    }
  }

  private async removeApi(id: string): Promise<void> {
    if ((await this.getApi(id)) === null) return;
    const res = await this.call('DELETE', `${APIS}/${enc(this.apiIds.get(id) ?? id)}`);
    if (res.status < 300 || this.isAbsent(res, ABSENT_ANSWERS.deleteApi)) {
      this.apiIds.delete(id);
      return;
    }
    if (res.status >= 500 && (await this.getApi(id)) === null) return;
    this.expect2xx(res, `delete API ${id}`, false);
  }

  // --- Tyk OAS APIs ------------------------------------------------------------

  private async listOas(): Promise<Map<string, JsonObject>> {
    const items = await this.walk(`${APIS}?sort=created_at&`, 'apis', 'pages', 'OAS APIs');
    const out = new Map<string, JsonObject>();
    for (const item of items) {
      const def = isObject(item) ? item.api_definition : undefined;
      if (!isObject(item) || !isObject(def)) throw new GatewayApiError(200, 'list OAS APIs: an item has no api_definition');
      if (def.is_oas !== true) continue;
      const apiId = nonEmpty(def.api_id);
      if (apiId === undefined) throw new GatewayApiError(200, 'list OAS APIs: an item has no api_definition.api_id');
      const doc = isObject(item.oas) ? item.oas : await this.getOas(apiId);
      if (doc !== null) out.set(apiId, doc);
    }
    return out;
  }

  private async getOas(id: string): Promise<JsonObject | null> {
    const res = await this.call('GET', `${OAS_APIS}/${enc(id)}`);
    if (this.isAbsent(res, ABSENT_ANSWERS.getOas)) return null;
    this.expect2xx(res, `get OAS API ${id}`, false);
    if (!isObject(res.json)) throw new GatewayApiError(res.status, `get OAS API ${id}: the answer is not an OAS document`);
    // only a document carrying our id is ours
    return oasApiId(res.json) === id ? res.json : null;
  }

  private async upsertOas(id: string, body: JsonObject, tryPut: boolean): Promise<void> {
    const doc = withoutOasFields(withOasId(body, id), ['dbId']);
    if (tryPut && (await this.putOas(id, doc))) return;
    const res = await this.call('POST', OAS_APIS, doc);
    if (res.status === 409 && this.isDashboardError(res)) {
      if (await this.putOas(id, doc)) return;
      throw new GatewayApiError(409, `create OAS API ${id}: the Dashboard has an API under this id that is not a Tyk OAS API (${this.message(res)}): delete it, or give this one another id`);
    }
    this.expect2xx(res, `create OAS API ${id}`);
    await this.settleOasId(id, res);
  }

  /** PUT by our id; false when the Dashboard has no OAS API under it. */
  private async putOas(id: string, doc: JsonObject): Promise<boolean> {
    const res = await this.call('PUT', `${OAS_APIS}/${enc(id)}`, doc);
    if (this.isAbsent(res, ABSENT_ANSWERS.putOas)) return false;
    this.expect2xx(res, `update OAS API ${id}`);
    return true;
  }

  /** After a create: a Dashboard that gave the API an id of its own keeps no copy of it (see the header). */
  private async settleOasId(id: string, created: HttpResponse): Promise<void> {
    const given = isObject(created.json) ? nonEmpty(created.json.ID) : undefined;
    if (given === undefined || given === id) return;
    await this.call('DELETE', `${OAS_APIS}/${enc(given)}`).catch(() => undefined);
    throw new GatewayApiError(
      409,
      `create OAS API ${id}: the Dashboard gave the new API the id ${given} instead of ours; the copy was deleted. Use a Dashboard that keeps the id in x-tyk-api-gateway.info.id.`,
    );
  }

  private async removeOas(id: string): Promise<void> {
    if ((await this.getOas(id)) === null) return;
    const res = await this.call('DELETE', `${OAS_APIS}/${enc(id)}`);
    if (res.status < 300 || this.isAbsent(res, ABSENT_ANSWERS.deleteOas)) return;
    if (res.status >= 500 && (await this.getOas(id)) === null) return;
    this.expect2xx(res, `delete OAS API ${id}`, false);
  }

  // --- policies ------------------------------------------------------------

  private async listPolicies(): Promise<Map<string, JsonObject>> {
    const startedAt = Date.now();
    const items = await this.walk(`${POLICIES}?`, 'Data', 'Pages', 'policies');
    const out = new Map<string, JsonObject>();
    const ids = new Map<string, string>();
    for (const item of items) {
      const mid = isObject(item) ? nonEmpty(item._id) : undefined;
      if (!isObject(item) || mid === undefined) throw new GatewayApiError(200, 'list policies: an item has no _id');
      const key = policyKey(item) ?? mid;
      if (out.has(key)) continue; // the oldest policy with this id is ours
      out.set(key, item);
      ids.set(key, mid);
    }
    // Tyk Operator's convention for adopting a policy: spec.id set to its Dashboard _id.
    this.policiesByMid = new Map((items as JsonObject[]).map((item) => [item._id as string, item]));
    for (const mid of this.policiesByMid.keys()) if (!ids.has(mid)) ids.set(mid, mid);
    this.policyIds = ids;
    this.policiesListedAt = startedAt;
    return out;
  }

  private async getPolicy(id: string): Promise<JsonObject | null> {
    const mid = this.policyIds.get(id);
    if (mid !== undefined) {
      const body = await this.readPolicy(id, mid);
      if (body !== null && body._id === mid && policyKey(body) === id) return body;
      this.policyIds.delete(id); // gone, or no longer carries our id: look for it
      return (await this.listPolicies()).get(id) ?? this.policiesByMid.get(id) ?? null;
    }
    if (this.listIsFresh()) {
      // No listed policy carries this id. A Dashboard _id (adoption by spec.id = _id) is read
      // directly: the policy may be younger than the list.
      if (!OBJECT_ID.test(id)) return null;
      const body = await this.readPolicy(id, id);
      if (body === null || body._id !== id) return null;
      this.policyIds.set(id, id);
      return body;
    }
    return (await this.listPolicies()).get(id) ?? this.policiesByMid.get(id) ?? null;
  }

  /** GET by _id: the policy (carrying `_id`, the path's when the body has none), or null when absent. */
  private async readPolicy(id: string, mid: string): Promise<JsonObject | null> {
    const res = await this.call('GET', `${POLICIES}/${enc(mid)}`);
    if (this.isAbsent(res, ABSENT_ANSWERS.getPolicy)) return null;
    this.expect2xx(res, `get policy ${id}`, false);
    if (!isObject(res.json)) throw new GatewayApiError(res.status, `get policy ${id}: the answer is not a policy`);
    return nonEmpty(res.json._id) === undefined ? { ...res.json, _id: mid } : res.json;
  }

  private listIsFresh(): boolean {
    return Date.now() - this.policiesListedAt < this.listFreshMs;
  }

  /** The _id of our policy: from the map, else from a list (a fresh one unless `force`). */
  private async findPolicyId(id: string, force: boolean): Promise<string | undefined> {
    const known = force ? undefined : this.policyIds.get(id);
    if (known !== undefined || (!force && this.listIsFresh())) return known;
    await this.listPolicies();
    return this.policyIds.get(id);
  }

  private async upsertPolicy(id: string, body: JsonObject): Promise<void> {
    const doc: JsonObject = { ...body, id };
    delete doc._id;
    let mid = await this.findPolicyId(id, false);
    for (let attempt = 0; mid !== undefined && attempt < 2; attempt++) {
      if (await this.putPolicy(id, mid, doc)) return;
      mid = await this.findPolicyId(id, true); // deleted behind our back; recreated elsewhere?
    }
    const res = await this.call('POST', POLICIES, doc);
    if ((res.status === 400 || res.status === 409) && this.isDashboardError(res)) {
      // A POST whose answer we lost may have been made after all: then update what it made.
      const made = await this.findPolicyId(id, true);
      if (made !== undefined && (await this.putPolicy(id, made, doc))) return;
    }
    this.expect2xx(res, `create policy ${id}`);
    const created = newPolicyId(res.json);
    if (created !== undefined) this.policyIds.set(id, created);
  }

  /** false when the Dashboard has no policy under that _id */
  private async putPolicy(id: string, mid: string, doc: JsonObject): Promise<boolean> {
    const res = await this.call('PUT', `${POLICIES}/${enc(mid)}`, { ...doc, _id: mid });
    if (this.isAbsent(res, ABSENT_ANSWERS.putPolicy)) {
      this.policyIds.delete(id);
      return false;
    }
    this.expect2xx(res, `update policy ${id}`);
    this.policyIds.set(id, mid);
    return true;
  }

  private async removePolicy(id: string): Promise<void> {
    const found = await this.getPolicy(id);
    const mid = found === null ? undefined : nonEmpty(found._id);
    if (mid === undefined) return;
    const res = await this.call('DELETE', `${POLICIES}/${enc(mid)}`);
    if (res.status < 300 || this.isAbsent(res, ABSENT_ANSWERS.deletePolicy)) {
      this.policyIds.delete(id);
      return;
    }
    if (res.status >= 500 && (await this.getPolicy(id)) === null) return;
    this.expect2xx(res, `delete policy ${id}`, false);
  }

  // --- the certificate store (/api/certs) ----------------------------------------

  /** Uploads to the key's org (`_orgId` is ignored: see the header); resolves with the certificate's id there. */
  async uploadCertificate(pem: string, _orgId?: string): Promise<Uploaded> {
    const fingerprint = certificateId(pem);
    const what = `upload certificate ${fingerprint}`;
    const res = await this.call('POST', CERTS, undefined, certUpload(pem));
    if (res.status >= 200 && res.status < 300) {
      const given = isObject(res.json) ? nonEmpty(res.json.id) : undefined;
      return { id: given ?? (await this.listedCertificateId(fingerprint, what)), created: true };
    }
    const message = this.message(res, pem);
    const refused = res.status >= 400 && res.status < 500 && this.isDashboardError(res);
    if (refused && CERT_EXISTS.test(message)) return { id: await this.existingCertificateId(message, fingerprint, what), created: false };
    if (refused && res.status === 404 && CERT_NOT_CREATED.test(message)) throw new GatewayRejectedError(404, `${what}: rejected by the Dashboard: ${message}`);
    this.fail(res, what, true, pem);
  }

  async hasCertificate(id: string): Promise<boolean> {
    const res = await this.call('GET', `${CERTS}/${enc(id)}`);
    if (this.isAbsent(res, ABSENT_ANSWERS.getCertificate)) return false;
    this.expect2xx(res, `get certificate ${id}`, false);
    if (!isObject(res.json) || res.json.id !== id) throw new GatewayApiError(res.status, `get certificate ${id}: the answer is not this certificate's metadata`);
    return true;
  }

  /** Removes from the key's org (`_orgId` is ignored: see the header); absent counts as removed. */
  async removeCertificate(id: string, _orgId?: string): Promise<void> {
    const res = await this.call('DELETE', `${CERTS}/${enc(id)}`);
    if (res.status < 300 || this.isAbsent(res, ABSENT_ANSWERS.deleteCertificate)) return;
    if (res.status >= 500 && !(await this.hasCertificate(id))) return;
    this.expect2xx(res, `delete certificate ${id}`, false);
  }

  /** The ids of the key's org's certificates (`_orgId` is ignored: see the header), every page. */
  async listCertificates(_orgId?: string): Promise<string[]> {
    const items = await this.walk(`${CERTS}?`, 'certs', 'pages', 'certificates');
    if (!items.every((item): item is string => typeof item === 'string')) throw new GatewayApiError(200, 'list certificates: an item is not a certificate id');
    return [...new Set(items)];
  }

  /** The id of a certificate the Dashboard says it has already: the one its message names, when that is this certificate's, else the listed one. */
  private async existingCertificateId(message: string, fingerprint: string, what: string): Promise<string> {
    const named = CERT_EXISTS.exec(message)?.[1];
    return named?.endsWith(fingerprint) ? named : this.listedCertificateId(fingerprint, what);
  }

  /** The listed id of the certificate with this SHA-256 (after an upload whose answer did not name it). */
  private async listedCertificateId(fingerprint: string, what: string): Promise<string> {
    const id = (await this.listCertificates()).find((listed) => listed.endsWith(fingerprint));
    if (id === undefined) throw new GatewayApiError(200, `${what}: the Dashboard took the certificate but does not list it`);
    return id;
  }

  // --- paging, errors, transport ----------------------------------------------

  /** Every item of a paged list; starts again (up to LIST_ATTEMPTS) when the page count changes. */
  private async walk(prefix: string, itemsKey: string, pagesKey: string, label: string): Promise<unknown[]> {
    for (let attempt = 1; ; attempt++) {
      const first = await this.page(prefix, 1, itemsKey, pagesKey, label);
      const items = [...first.items];
      let stable = true;
      for (let p = 2; p <= first.pages; p++) {
        const next = await this.page(prefix, p, itemsKey, pagesKey, label);
        if (next.pages !== first.pages) {
          stable = false;
          break;
        }
        items.push(...next.items);
      }
      if (stable) return items;
      if (attempt >= LIST_ATTEMPTS) {
        throw new GatewayApiError(200, `list ${label}: the list kept changing while it was read page by page (${LIST_ATTEMPTS} attempts)`);
      }
    }
  }

  private async page(prefix: string, p: number, itemsKey: string, pagesKey: string, label: string): Promise<{ items: unknown[]; pages: number }> {
    const res = await this.call('GET', `${prefix}p=${p}`);
    this.expect2xx(res, `list ${label} (page ${p})`, false);
    const body = res.json;
    // null is an empty page (Go's nil slice); a body without the field is no page of these at all
    const items = isObject(body) && itemsKey in body ? (body[itemsKey] ?? []) : undefined;
    const pages = isObject(body) ? body[pagesKey] : undefined;
    if (!Array.isArray(items) || typeof pages !== 'number' || !Number.isInteger(pages) || pages < 0 || pages > MAX_PAGES) {
      throw new GatewayApiError(res.status, `list ${label} (page ${p}): the Dashboard answered something other than a page of ${label}`);
    }
    return { items, pages };
  }

  /** An ApiResponse error body (`{Status: "Error", ...}`): the Dashboard's own, not a proxy's page. */
  private isDashboardError(res: HttpResponse): boolean {
    return isObject(res.json) && res.json.Status === 'Error';
  }

  /** The Dashboard's own documented answer for an id it does not have (see the header). */
  private isAbsent(res: HttpResponse, answer: AbsentAnswer): boolean {
    if (!answer.statuses.includes(res.status) || !this.isDashboardError(res)) return false;
    const message = isObject(res.json) ? res.json.Message : undefined;
    return typeof message === 'string' && normalMessage(message) === normalMessage(answer.message);
  }

  /** Throws unless 2xx. With `sentBody`, a 400 (or 403 "malformed") refuses what we sent (also 403 "same url"); `pem` (what we sent) never reaches the message. */
  private expect2xx(res: HttpResponse, what: string, sentBody = true, pem?: string): void {
    if (res.status >= 200 && res.status < 300) return;
    this.fail(res, what, sentBody, pem);
  }

  /** The error for a non-2xx answer (see `expect2xx`). */
  private fail(res: HttpResponse, what: string, sentBody: boolean, pem?: string): never {
    const message = this.message(res, pem);
    if (sentBody && (res.status === 400 || (res.status === 403 && /malformed|same url/i.test(message)))) {
      throw new GatewayRejectedError(res.status, `${what}: rejected by the Dashboard: ${message}`);
    }
    if (isAuthorisationFailure(res.status, message)) {
      throw new GatewayApiError(res.status, `${what}: ${res.status} ${message} (check TYK_AUTH)`);
    }
    throw new GatewayApiError(res.status, `${what}: ${res.status} ${message}`);
  }

  /** What an answer says, without the key or a PEM (`pem`: one we sent). */
  private message(res: HttpResponse, pem?: string): string {
    const text = withoutPem(answerMessage(res, 'Message'), pem);
    return this.secret === '' ? text : text.split(this.secret).join('***');
  }

  /** One call; `raw` is sent as it is instead of `body` as JSON. */
  private async call(method: Method, path: string, body?: unknown, raw?: RawBody): Promise<HttpResponse> {
    return gatewayCall(this.target, {
      method,
      url: this.base + path,
      headers: { authorization: this.secret },
      body,
      ...(raw === undefined ? {} : { rawBody: raw.text, contentType: raw.contentType }),
      timeoutMs: this.timeoutMs,
      ...(this.maxResponseBytes === undefined ? {} : { maxResponseBytes: this.maxResponseBytes }),
    });
  }
}

/** The new policy's _id from a create answer: Meta, or Message (where the swagger's example puts it). */
function newPolicyId(answer: unknown): string | undefined {
  if (!isObject(answer)) return undefined;
  const meta = nonEmpty(answer.Meta);
  if (meta !== undefined) return meta;
  const message = nonEmpty(answer.Message);
  return message !== undefined && /^[0-9a-f]{24,}$/i.test(message) ? message : undefined;
}
