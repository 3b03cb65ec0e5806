/**
 * The Tyk Dashboard's certificate store, /api/certs, as the Dashboard fake serves it (the
 * Dashboard swagger's Certificates routes, 5.13.0), over the certificate manager the gateway
 * fake shares (./tyk-certs.ts: ids, what a PEM must be, the manager's messages, metadata).
 *
 * Modelled (auth, 401 and fault injection are the Dashboard fake's, as on every route):
 * - The org is the Dashboard key's (the fake's `orgId`): uploads go to it, lists show only it,
 *   and a certificate id that does not start with it is another org's: GET and DELETE answer
 *   400 "Attempted access to non-owned certificate.".
 * - POST /api/certs takes multipart/form-data and nothing else, and reads one file field, as
 *   Go's r.FormFile does: the first part of that name with a filename; other parts are ignored.
 *   Which field is the documented alternative `uploadField`: 'file' (the swagger's
 *   FormDataFile, required `file`; the default) or 'cert' (what Tyk Operator's and tyk-sync's
 *   Dashboard clients send, so real Dashboards read it). No such file (another content type, a
 *   body that is not multipart, a plain field of that name, an empty file) → 500 "Failed to
 *   read response body, body empty." (the swagger's answer to "sending data without the certs
 *   file"). The manager's refusals, a repeat included, → 404 "Could not create certificate."
 *   followed by its message (the swagger's example: "Could not create certificate.Certificate
 *   with <id> ID already exists."). Success: 200 `{"id":<id>,"message":"Certificate
 *   added.","status":"ok"}` (APICertificateStatusMessage, as the swagger's example words it).
 * - GET /api/certs lists the org's ids, `{"certs":[...],"pages":N}` (CertificateList), paged
 *   like every Dashboard list (the fake's `p` rules and page size; `emptyList` for a page
 *   without items); `mode=detailed` lists CertificateBasics as `{"cert_basics":[...],
 *   "pages":N}`, where `filter` (only in that mode, as documented) keeps the certificates with
 *   a private key (with_pk), without one (without_pk), or all (omit, the default).
 * - GET /api/certs/{certId}: CertificateMeta; unknown → 404 "Could not retrieve certificate
 *   details. Certificate with given SHA256 fingerprint not found.".
 * - DELETE /api/certs/{certId}: 200 `{"status":"ok","message":"removed"}` (ApiStatusMessage;
 *   the swagger's example holds placeholders, these are the gateway's words). An unknown id is
 *   the documented alternative `unknownDelete`: 404 "Could not delete certificate." (the
 *   default: the swagger's "failed to delete") or 200 (the manager deletes without looking).
 * - GET /api/certs/details, GET /api/certs/{certId}/apis, GET and DELETE
 *   /api/certs/dependencies/{certId} are documented and not modelled: 501.
 * - Certificates live where the manager keeps them (Redis), not in the Dashboard's database:
 *   the fake's `wipe()` keeps them. Private keys are never echoed.
 */
import { type CertStore, certBasics, certMeta, type StoredCert } from './tyk-certs.js';
import { dashboardError as apiError, type Reply, reply } from './tyk-fake-base.js';

export interface DashboardCertsOptions {
  /** the key's organisation */
  readonly orgId: string;
  /** the multipart file field an upload is read from */
  readonly uploadField: 'file' | 'cert';
  /** how DELETE answers a certificate the org does not have */
  readonly unknownDelete: 404 | 200;
  /** how a list page without items renders them */
  readonly emptyList: null | [];
  /** one page of items and the page count, by the Dashboard's `p` rules */
  page<T>(items: T[], p: string | null): { items: T[]; pages: number };
}

export const CERT_MSG = {
  noFile: 'Failed to read response body, body empty.',
  notCreated: 'Could not create certificate.',
  notOwned: 'Attempted access to non-owned certificate.',
  notFound: 'Could not retrieve certificate details. Certificate with given SHA256 fingerprint not found.',
  notDeleted: 'Could not delete certificate.',
  added: 'Certificate added.',
};

/** The documented routes under /api/certs the fake does not model, and their methods. */
const UNMODELLED: readonly { path: RegExp; methods: readonly string[]; what: string }[] = [
  { path: /^\/api\/certs\/details\/?$/, methods: ['GET'], what: 'certificate details lists (/api/certs/details)' },
  { path: /^\/api\/certs\/dependencies\/[^/]+\/?$/, methods: ['GET', 'DELETE'], what: 'certificate dependencies (/api/certs/dependencies/{certId})' },
  { path: /^\/api\/certs\/[^/]+\/apis\/?$/, methods: ['GET'], what: 'the APIs using a certificate (/api/certs/{certId}/apis)' },
];

const COLLECTION = /^\/api\/certs\/?$/;
const ITEM = /^\/api\/certs\/([^/]+)\/?$/;

/** Whether a pathname is one of /api/certs's. */
export function isCertsPath(path: string): boolean {
  return path === '/api/certs' || path.startsWith('/api/certs/');
}

export class DashboardCerts {
  constructor(
    readonly store: CertStore,
    private readonly options: DashboardCertsOptions,
  ) {}

  /** The answer to a request under /api/certs (see `isCertsPath`), auth already checked. */
  async handle(method: string, path: string, query: URLSearchParams, contentType: string | undefined, raw: string): Promise<Reply> {
    const unmodelled = UNMODELLED.find((u) => u.path.test(path));
    if (unmodelled) {
      return unmodelled.methods.includes(method) ? apiError(501, `not modelled by the fake: ${unmodelled.what}`) : apiError(405, 'Method not allowed');
    }
    if (COLLECTION.test(path)) {
      if (method === 'GET') return this.list(query);
      if (method === 'POST') return this.upload(contentType, raw);
      return apiError(405, 'Method not allowed');
    }
    const item = ITEM.exec(path);
    if (item) return this.item(method, decodeURIComponent(item[1] ?? ''));
    return apiError(404, 'Not found');
  }

  private async upload(contentType: string | undefined, raw: string): Promise<Reply> {
    const pem = await this.uploadedFile(contentType, raw);
    if (pem === undefined) return apiError(500, CERT_MSG.noFile);
    const outcome = this.store.add(pem, this.options.orgId);
    if (outcome.kind === 'added') return reply(200, { id: outcome.cert.id, message: CERT_MSG.added, status: 'ok' });
    if (outcome.kind === 'unmodelled') return apiError(501, outcome.message);
    return apiError(404, CERT_MSG.notCreated + outcome.message);
  }

  /** The text of the upload's file, read as Go's r.FormFile(field) does; undefined when there is none, or it is empty. */
  private async uploadedFile(contentType: string | undefined, raw: string): Promise<string | undefined> {
    if (contentType === undefined || !/^multipart\/form-data\s*;/i.test(contentType)) return undefined;
    let form: FormData;
    try {
      form = await new Response(raw, { headers: { 'content-type': contentType } }).formData();
    } catch {
      return undefined;
    }
    const file = form.get(this.options.uploadField);
    if (file === null || typeof file === 'string') return undefined;
    const text = await file.text();
    return text === '' ? undefined : text;
  }

  private list(query: URLSearchParams): Reply {
    const detailed = query.get('mode') === 'detailed';
    const mine = this.store.list(this.options.orgId).filter(detailed ? keyFilter(query.get('filter')) : () => true);
    const { items, pages } = this.options.page(mine, query.get('p'));
    const render = (c: StoredCert): unknown => (detailed ? certBasics(c) : c.id);
    const rendered = items.length === 0 ? this.options.emptyList : items.map(render);
    return reply(200, detailed ? { cert_basics: rendered, pages } : { certs: rendered, pages });
  }

  private item(method: string, id: string): Reply {
    if (method !== 'GET' && method !== 'DELETE') return apiError(405, 'Method not allowed');
    if (!id.startsWith(this.options.orgId)) return apiError(400, CERT_MSG.notOwned);
    if (method === 'GET') {
      const found = this.store.get(id);
      return found ? reply(200, certMeta(found)) : apiError(404, CERT_MSG.notFound);
    }
    if (!this.store.delete(id) && this.options.unknownDelete === 404) return apiError(404, CERT_MSG.notDeleted);
    return reply(200, { status: 'ok', message: 'removed' });
  }
}

/** The detailed list's `filter`: with_pk, without_pk, else (omit, the default) all. */
function keyFilter(filter: string | null): (c: StoredCert) => boolean {
  if (filter === 'with_pk') return (c) => c.hasPrivate;
  if (filter === 'without_pk') return (c) => !c.hasPrivate;
  return () => true;
}
