/**
 * The Tyk Gateway (open-source) REST API as a Gateway (./types.ts).
 *
 * Calls: GET /tyk/apis, GET /tyk/apis/{id}, POST /tyk/apis (an upsert: the gateway writes the
 * definition file whether or not it exists), DELETE /tyk/apis/{id}; the same under
 * /tyk/policies; GET /tyk/reload/group, or with `reload: 'node'` GET /tyk/reload (Tyk's reload of
 * the one gateway the request reaches: a replica of TYK_GATEWAY_SERVICE, reached at its own
 * address, whose APIs are files on its own disk); the certificate store (./certificates.ts): POST, GET
 * and DELETE under /tyk/certs, where a certificate already there (403 "… already exists")
 * counts as uploaded. Every call carries `x-tyk-authorization` and a timeout.
 *
 * TLS: verified against the system's CAs (or `ca`), unless `insecureSkipVerify`. With
 * `tlsServerName`, the certificate is checked against that name instead of the URL's host (and
 * the name is sent as SNI unless it is an address): a replica reached at its pod address is
 * verified as the name TYK_URL gives the gateway.
 *
 * Tyk OAS APIs ('oas', ./oas.ts), under /tyk/apis/oas, by `x-tyk-api-gateway.info.id`:
 * - list: GET /tyk/apis/oas (every loaded OAS API); get: GET /tyk/apis/oas/{id}.
 * - upsert: the document with our id in info.id; PUT /tyk/apis/oas/{id}, which needs the API
 *   loaded, and on Tyk's 404 ("API not found": new, or written but not reloaded yet) POST
 *   /tyk/apis/oas, which writes the files whether or not they exist. With the hint that the
 *   gateway does not show the API (a create), the POST alone. A body the gateway
 *   refuses (400: not an OAS document, no `x-tyk-api-gateway`, its schema problems) is refused
 *   by the PUT already, so nothing is written.
 * - remove: a GET first (only what is loaded can be deleted; Tyk answers 404 otherwise, which
 *   counts as removed), then DELETE /tyk/apis/oas/{id}, which removes both of its files; a
 *   500 is settled by a GET as for the other kinds.
 * - An id held by a Tyk Classic API (the gateway's 400 "… Tyk classic format …" to a GET or
 *   PUT on the OAS route) is never read as absent, overwritten or deleted through this kind:
 *   a GatewayApiError (400) says so. (A DELETE on the OAS route would delete a Classic API.)
 * - The gateway adds to what it was sent: info.id, info.dbId, `servers` generated from the
 *   listen path; reads return the document as the gateway answers it.
 *
 * Real-gateway behaviour this relies on: writes become visible to reads only after a reload
 * (so `reloadRequired` is true); a DELETE of an id the gateway does not have answers 404 on
 * newer gateways and `500 Delete failed` on older ones, so a failed delete is settled by a GET.
 * A 404 counts as "absent" only when it is Tyk's own JSON error, never a proxy's page.
 *
 * Real-gateway behaviour this relies on: writes become visible to reads only after a reload
 * (so `reloadRequired` is true); a DELETE of an id the gateway does not have answers 404 on
 * newer gateways and `500 Delete failed` on older ones, so a failed delete is settled by a GET.
 * A 404 counts as "absent" only when it is Tyk's own JSON error, never a proxy's page.
 *
 * The developer portal's kinds ('portal-*') are the Tyk Dashboard's: every call for one throws
 * GatewayUnsupportedError saying the portal needs a Dashboard, and sends nothing.
 *
 * Gateways without what a kind needs fail that kind only, with a GatewayUnsupportedError saying
 * why, and never count as "absent" or "deleted": a gateway that predates an API (Tyk Gateway
 * 3.1 has no /tyk/policies, nor /tyk/apis/oas/{id}) answers Go's plain-text `404 page not
 * found`; such a gateway takes GET /tyk/apis/oas for its Classic /tyk/apis/{apiID} and answers
 * Tyk's JSON 404, which no gateway with the OAS API gives for its list, so any 404 to that list
 * means the same (and an OAS write never reaches the POST that such a gateway would take for a
 * Classic write: the PUT before it has no route); a gateway whose policies come from a
 * Dashboard refuses policy writes with 500 "Due to enabled service policy source, please use
 * the Dashboard API.".
 * Throws GatewayApiError, GatewayRejectedError (400), GatewayUnsupportedError,
 * GatewayUnavailableError; never with the secret.
 */

import { isIP, type LookupFunction } from 'node:net';
import { checkServerIdentity } from 'node:tls';
import { GatewayApiError, GatewayRejectedError, GatewayUnsupportedError } from '../platform/errors.js';
import { isObject } from '../platform/guards.js';
import { type HttpRequest, type HttpResponse, redactUrl, type TlsOptions, type TransportFactory } from '../platform/http.js';
import { nodeTransports } from '../platform/http-node.js';
import { JsonItemsError, readJsonItemBytes, readJsonItems } from '../platform/json-items.js';
import { type CertificateStore, certificateId, type Uploaded } from './certificates.js';
import { ListedIds } from './listed-ids.js';
import { oasApiId, withOasId } from './oas.js';
import { isPortalGatewayKind, portalUnsupported } from './portal.js';
import { answerMessage, type CallTarget, type GatewayObserver, gatewayCall, isAuthorisationFailure } from './transport.js';
import { GATEWAY_OBJECT_NAMES, type Gateway, type GatewayObjectKind, type JsonObject, type ListVisitor, type UpsertHint } from './types.js';

export interface TykGatewayOptions {
  name: string;
  url: string;
  secret: string;
  insecureSkipVerify?: boolean;
  /** the CAs a gateway's certificate must chain to (PEM), instead of the system's; default the system's */
  ca?: string;
  /**
   * the name the gateway's certificate is checked against (and, unless it is an address, the
   * SNI name sent), instead of the URL's host: TYK_URL's host, for a replica reached at its address
   */
  tlsServerName?: string;
  /** `group` (default): GET /tyk/reload/group, every gateway of the group; `node`: GET /tyk/reload, this one only */
  reload?: 'group' | 'node';
  /** resolves host names for new connections (an OperatorContext's UrlPolicy check); default the system's */
  lookup?: LookupFunction;
  /** the deadline of each request, the whole exchange; default 10 s */
  timeoutMs?: number;
  /** the most bytes of an answer read (GATEWAY_MAX_RESPONSE_BYTES); default: no limit */
  maxResponseBytes?: number;
  /** told of every request (the metrics) */
  observe?: GatewayObserver;
  /** makes the connection pool (lib/platform/http.ts), chosen where the service is built; default Node's own (lib/platform/http-node.ts) */
  transport?: TransportFactory;
}

/** The kinds a Tyk Gateway has (the developer portal's are the Dashboard's only). */
type TykKind = Extract<GatewayObjectKind, 'api' | 'policy' | 'oas'>;

/** The kinds whose objects carry their id in a top-level field (Tyk Classic APIs and policies). */
type FieldIdKind = Exclude<TykKind, 'oas'>;

const ID_FIELDS: Record<FieldIdKind, string> = { api: 'api_id', policy: 'id' };

/** Each kind's collection, and what a gateway without it is (for GatewayUnsupportedError). */
const PATHS: Record<TykKind, { collection: string; missing: string }> = {
  api: { collection: '/tyk/apis', missing: 'is TYK_URL the Tyk Gateway API?' },
  policy: {
    collection: '/tyk/policies',
    missing: 'a Tyk Gateway older than its policy API, such as 3.1: SecurityPolicies need a newer gateway, or the Tyk Dashboard (TYK_MODE=pro)',
  },
  oas: {
    collection: '/tyk/apis/oas',
    missing: 'a Tyk Gateway older than its OAS API, such as 3.1: Tyk OAS APIs need Tyk Gateway 5.x, or the Tyk Dashboard (TYK_MODE=pro)',
  },
};

const OAS = PATHS.oas.collection;

/** A listed object's id, and the field that holds it (for the error when it has none). */
function listedId(kind: TykKind, item: unknown): { id: unknown; field: string } {
  if (kind === 'oas') return { id: oasApiId(item), field: 'x-tyk-api-gateway.info.id' };
  return { id: (item as JsonObject | null)?.[ID_FIELDS[kind]], field: ID_FIELDS[kind] };
}

function orgQuery(orgId: string): string {
  return orgId === '' ? '' : `?org_id=${encodeURIComponent(orgId)}`;
}

/** Go's http.NotFound body: the router has no such route (not Tyk's JSON "not found"). */
const NO_ROUTE = '404 page not found';
/** The start of the refusal of a gateway whose policies come from a Dashboard. */
const SERVICE_POLICY_SOURCE = /^due to enabled service policy source/i;

/** TLS options checking a certificate against `name` (a host name, or an address, bracketed or not), whatever host the URL names. */
function verifiedAs(name: string): Pick<TlsOptions, 'servername' | 'checkServerIdentity'> {
  const bare = name.replace(/^\[(.*)\]$/, '$1');
  // SNI carries host names only (RFC 6066); an address is checked against the certificate's IP entries
  return { ...(isIP(bare) === 0 ? { servername: bare } : {}), checkServerIdentity: (_host, cert) => checkServerIdentity(bare, cert) };
}

/** The gateway's answer to a certificate it has already. */
const CERT_EXISTS = /already exists/i;
/** The gateway's answer to a missing or wrong secret (403 on every route). */
const FORBIDDEN = /administrative access/i;
/** The gateway's 400 to a GET or PUT on the OAS route of an id a Tyk Classic API has. */
const CLASSIC_FORMAT = /tyk classic format/i;

export class TykGatewayClient implements Gateway, CertificateStore {
  readonly name: string;
  readonly certificates: CertificateStore = this;
  readonly reloadRequired = true;
  private readonly base: string;
  private readonly secret: string;
  private readonly timeoutMs: number;
  private readonly maxResponseBytes: number | undefined;
  private readonly target: CallTarget;
  private readonly reloadPath: string;
  /** the ids of the last complete list of each kind, by their objects' digests */
  private readonly listedIds = new ListedIds();

  constructor(options: TykGatewayOptions) {
    this.name = options.name;
    this.base = options.url.replace(/\/+$/, '');
    this.secret = options.secret;
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.maxResponseBytes = options.maxResponseBytes;
    const transport = (options.transport ?? nodeTransports())({
      ...(options.insecureSkipVerify ? { rejectUnauthorized: false } : {}),
      ...(options.lookup ? { lookup: options.lookup } : {}),
      ...(options.ca !== undefined ? { ca: options.ca } : {}),
      ...(options.tlsServerName !== undefined ? verifiedAs(options.tlsServerName) : {}),
    });
    this.reloadPath = options.reload === 'node' ? '/tyk/reload' : '/tyk/reload/group';
    this.target = { label: `gateway ${options.name}`, name: options.name, transport, ...(options.observe ? { observe: options.observe } : {}) };
  }

  /** Reads the list as it arrives (json-items.ts): each object is kept as it is parsed, or handed to `visit` as it is read, with its digest (listed-ids.ts). */
  async list(of: GatewayObjectKind, visit?: ListVisitor): Promise<Map<string, JsonObject>> {
    const kind = this.tykKind(of);
    const label = GATEWAY_OBJECT_NAMES[kind].many;
    const out = new Map<string, JsonObject>();
    // a fault of the list's content comes back as the answer (the body's transport faults are thrown)
    const consume = async (body: AsyncIterable<Uint8Array>): Promise<{ fault?: Error }> => {
      try {
        const idOf = (item: JsonObject): string => {
          const { id, field } = listedId(kind, item);
          if (typeof id !== 'string') throw new GatewayApiError(200, `list ${label}: an item has no ${field}`);
          return id;
        };
        if (!visit) {
          await readJsonItems(body, (item) => out.set(idOf(item), item));
          return {};
        }
        // objects listed again byte for byte are not parsed unless the visitor asks (listed-ids.ts)
        const reading = this.listedIds.reading(kind, idOf);
        await readJsonItemBytes(body, (bytes, index) => {
          const { id, listed, close } = reading.item(bytes, index);
          try {
            visit(id, listed);
          } finally {
            close();
          }
        });
        reading.done();
        return {};
      } catch (err) {
        if (err instanceof GatewayApiError) return { fault: err };
        if (err instanceof JsonItemsError) return { fault: new GatewayApiError(200, `list ${label}: ${err.message}`) };
        throw err;
      }
    };
    const res = await this.call('GET', PATHS[kind].collection, undefined, undefined, consume);
    const fault = (res.json as { fault?: Error } | undefined)?.fault;
    if (res.status >= 200 && res.status < 300 && fault) throw fault;
    // No gateway with the OAS API answers its list with a 404; older ones take the path for /tyk/apis/{apiID}.
    if (kind === 'oas' && res.status === 404) throw this.noRoute(`list ${label}`, kind, `${res.status} ${answerMessage(res, 'message')}`);
    this.expect2xx(res, `list ${label}`, kind);
    return out;
  }

  async get(of: GatewayObjectKind, id: string): Promise<JsonObject | null> {
    const kind = this.tykKind(of);
    const what = `get ${GATEWAY_OBJECT_NAMES[kind].one} ${id}`;
    const res = await this.call('GET', `${PATHS[kind].collection}/${encodeURIComponent(id)}`);
    if (this.isTykNotFound(res)) return null;
    if (kind === 'oas') this.throwIfClassicHeld(res, what, id);
    this.expect2xx(res, what, kind);
    if (!isObject(res.json)) {
      throw new GatewayApiError(res.status, `${what}: the gateway answered something other than an object`);
    }
    return res.json;
  }

  async upsert(of: GatewayObjectKind, id: string, body: JsonObject, hint?: UpsertHint): Promise<void> {
    const kind = this.tykKind(of);
    if (kind === 'oas') return this.upsertOas(id, body, hint?.present !== false);
    const res = await this.call('POST', PATHS[kind].collection, { ...body, [ID_FIELDS[kind]]: id });
    this.expect2xx(res, `write ${GATEWAY_OBJECT_NAMES[kind].one} ${id}`, kind);
  }

  async remove(of: GatewayObjectKind, id: string): Promise<void> {
    const kind = this.tykKind(of);
    // On the OAS route, DELETE removes whatever API has the id: look first (see the header).
    if (kind === 'oas' && (await this.get(kind, id)) === null) return;
    const what = `delete ${GATEWAY_OBJECT_NAMES[kind].one} ${id}`;
    const res = await this.call('DELETE', `${PATHS[kind].collection}/${encodeURIComponent(id)}`);
    if (res.status < 300 || this.isTykNotFound(res)) return;
    this.throwIfUnsupported(res, what, kind);
    if (res.status === 500 && (await this.get(kind, id)) === null) return;
    this.expect2xx(res, what, kind);
  }

  /** The kind, if a Tyk Gateway has it: the developer portal's kinds are refused (GatewayUnsupportedError), nothing is sent. */
  private tykKind(kind: GatewayObjectKind): TykKind {
    if (isPortalGatewayKind(kind)) throw portalUnsupported(GATEWAY_OBJECT_NAMES[kind].one, this.name);
    return kind as TykKind;
  }

  /** PUT when the gateway has it loaded, else POST (see the header); a create (`tryPut` false) goes straight to the POST. */
  private async upsertOas(id: string, body: JsonObject, tryPut: boolean): Promise<void> {
    const doc = withOasId(body, id);
    if (!tryPut) {
      const created = await this.call('POST', OAS, doc);
      this.expect2xx(created, `create OAS API ${id}`, 'oas');
      return;
    }
    const put = await this.call('PUT', `${OAS}/${encodeURIComponent(id)}`, doc);
    if (put.status >= 200 && put.status < 300) return;
    if (!this.isTykNotFound(put)) {
      this.throwIfClassicHeld(put, `write OAS API ${id}`, id);
      this.expect2xx(put, `update OAS API ${id}`, 'oas');
    }
    const post = await this.call('POST', OAS, doc);
    this.expect2xx(post, `create OAS API ${id}`, 'oas');
  }

  /** The gateway's 400 for an id a Tyk Classic API has, on the OAS route: never absent, never ours to overwrite. */
  private throwIfClassicHeld(res: HttpResponse, what: string, id: string): void {
    if (res.status !== 400 || !CLASSIC_FORMAT.test(answerMessage(res, 'message'))) return;
    throw new GatewayApiError(
      res.status,
      `${what}: gateway ${this.name} has a Tyk Classic API under the id ${id} (it answered "${answerMessage(res, 'message')}"); ` +
        'an OAS API cannot take its place: delete that API, or give this one another id',
    );
  }

  // ── the certificate store (/tyk/certs) ──

  async uploadCertificate(pem: string, orgId = ''): Promise<Uploaded> {
    const id = certificateId(pem, orgId);
    const res = await this.call('POST', `/tyk/certs${orgQuery(orgId)}`, undefined, pem);
    if (res.status >= 200 && res.status < 300) {
      const given = isObject(res.json) ? res.json.id : undefined;
      return { id: typeof given === 'string' && given !== '' ? given : id, created: true };
    }
    const message = answerMessage(res, 'message');
    if (res.status === 403 && CERT_EXISTS.test(message)) return { id, created: false };
    if (res.status === 403 && !FORBIDDEN.test(message)) throw new GatewayRejectedError(403, `upload certificate ${id}: rejected by the gateway: ${message}`);
    this.expect2xx(res, `upload certificate ${id}`);
    return { id, created: true };
  }

  async hasCertificate(id: string): Promise<boolean> {
    const res = await this.call('GET', `/tyk/certs/${encodeURIComponent(id)}`);
    if (this.isTykNotFound(res)) return false;
    this.expect2xx(res, `get certificate ${id}`);
    return true;
  }

  async removeCertificate(id: string, orgId = ''): Promise<void> {
    const res = await this.call('DELETE', `/tyk/certs/${encodeURIComponent(id)}${orgQuery(orgId)}`);
    if (this.isTykNotFound(res)) return;
    this.expect2xx(res, `delete certificate ${id}`);
  }

  async listCertificates(orgId = ''): Promise<string[]> {
    const res = await this.call('GET', `/tyk/certs${orgQuery(orgId)}`);
    this.expect2xx(res, 'list certificates');
    const certs = isObject(res.json) ? res.json.certs : undefined;
    if (certs === null) return [];
    if (!Array.isArray(certs) || !certs.every((c) => typeof c === 'string')) throw new GatewayApiError(res.status, 'list certificates: the gateway answered something other than a list of ids');
    return certs;
  }

  async reload(): Promise<void> {
    const res = await this.call('GET', this.reloadPath);
    this.expect2xx(res, 'reload');
  }

  /** A GET of an id nobody uses: Tyk's 404 proves the gateway answers and accepts the secret. */
  async ping(): Promise<void> {
    const res = await this.call('GET', '/tyk/apis/gateway-reconciler-readiness-probe');
    if (this.isTykNotFound(res)) return;
    this.expect2xx(res, 'readiness probe');
  }

  async close(): Promise<void> {
    await this.target.transport.close();
  }

  private isTykNotFound(res: HttpResponse): boolean {
    return res.status === 404 && (res.json as { status?: unknown } | undefined)?.status === 'error';
  }

  /** A gateway without the route, or refusing the kind by configuration: GatewayUnsupportedError. */
  private throwIfUnsupported(res: HttpResponse, what: string, kind?: TykKind): void {
    if (res.status === 404 && res.json === undefined && res.text.trim() === NO_ROUTE) throw this.noRoute(what, kind, NO_ROUTE);
    if (kind === 'policy' && res.status === 500 && SERVICE_POLICY_SOURCE.test(answerMessage(res, 'message'))) {
      throw new GatewayUnsupportedError(
        500,
        `${what}: gateway ${this.name} takes its policies from a Dashboard (policy_source "service") and refuses policy writes: ` +
          `${answerMessage(res, 'message')} Manage SecurityPolicies through the Dashboard (TYK_MODE=pro).`,
      );
    }
  }

  /** The error for a gateway without the kind's route (or any route, without a kind), and what it answered. */
  private noRoute(what: string, kind: TykKind | undefined, answered: string): GatewayUnsupportedError {
    const route = kind === undefined ? 'such route' : `${PATHS[kind].collection} API`;
    const why = kind === undefined ? '' : ` (${PATHS[kind].missing})`;
    return new GatewayUnsupportedError(404, `${what}: gateway ${this.name} has no ${route}: it answered "${answered}"${why}`);
  }

  private expect2xx(res: HttpResponse, what: string, kind?: TykKind): void {
    if (res.status >= 200 && res.status < 300) return;
    this.throwIfUnsupported(res, what, kind);
    const message = answerMessage(res, 'message');
    if (res.status === 400) throw new GatewayRejectedError(400, `${what}: rejected by the gateway: ${message}`);
    if (isAuthorisationFailure(res.status, message)) throw new GatewayApiError(res.status, `${what}: ${res.status} ${message} (check TYK_AUTH)`);
    throw new GatewayApiError(res.status, `${what}: ${res.status} ${message}`);
  }

  private async call(method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, body?: unknown, rawBody?: string, consume?: HttpRequest['consume']): Promise<HttpResponse> {
    return gatewayCall(this.target, {
      method,
      url: this.base + path,
      headers: { 'x-tyk-authorization': this.secret },
      body,
      ...(rawBody === undefined ? {} : { rawBody }),
      ...(consume === undefined ? {} : { consume }),
      timeoutMs: this.timeoutMs,
      ...(this.maxResponseBytes === undefined ? {} : { maxResponseBytes: this.maxResponseBytes }),
    });
  }

  /** The gateway URL without credentials, for logs and /readyz. */
  get url(): string {
    return redactUrl(this.base);
  }
}
