/**
 * The Tyk Dashboard's classic developer portal, for TykDashboardClient (./tyk-dashboard.ts): the
 * portal kinds of the Gateway interface ('portal-catalogue', 'portal-configuration',
 * 'portal-description'; ids and bodies: ./portal.ts).
 *
 * Calls, as tyk-dashboard-sdk-swagger.yml documents the catalogue and documentation routes (the
 * Dashboard API 5.4 its SDK is generated from) and Tyk's "Portal Configuration" page the
 * configuration's: GET/POST/PUT /api/portal/catalogue (one catalogue per organisation: `{id,
 * org_id, email, apis: [...]}`, each entry keyed by `policy_id`); POST /api/portal/documentation
 * `{api_id, doc_type, documentation}`, whose answer's Message is the new documentation's id;
 * DELETE /api/portal/documentation/{id}; GET/POST/PUT /api/portal/configuration (one per
 * organisation). Writes answer `{"Status":"OK","Message":...,"Meta":null}`; a create's Message is
 * the new id. Every call goes through the client's transport (Authorization, timeout, errors
 * without the key).
 *
 * - Absent: a GET of the catalogue or the configuration of an organisation that has none is a
 *   404 in the Dashboard's own error shape (`Status: "Error"`; Tyk Operator creates them on that
 *   404). The message is not documented, so it is not compared; a 404 without the Dashboard's
 *   shape (a proxy's page) is an error, never "absent". The catalogue is read as one object (what
 *   Dashboards answer, and Tyk Operator decoded) or as a list of at most one (the SDK swagger's
 *   schema); an empty list is "absent".
 * - A fresh organisation: the Dashboard refuses documentation (403, "no catalogue added yet")
 *   until the organisation has a catalogue. So a write whose entries carry documentation, to an
 *   organisation without a catalogue, first creates an empty one (POST; one created meanwhile is
 *   as good), then uploads the documentation, then puts the entries in it (PUT): the first
 *   catalogue is made in one run. A 403 to an upload that does not refuse the key (the catalogue
 *   was removed since it was read) is met the same way, once: the catalogue is read, created when
 *   it is gone, and the upload sent again; when the catalogue was there, the 403 refuses what we
 *   sent (GatewayRejectedError), and is never reported as a TYK_AUTH problem.
 * - Catalogue slices: `get(id)` reads the catalogue and answers `{id: <the catalogue's id>, apis:
 *   [the entries under the id's policy ids, in that order]}`; null when the organisation has no
 *   catalogue, or none of those entries (an empty id: when it has no catalogue). `list` reads the
 *   catalogue once and answers any slice id the same way (iterating it yields nothing: slice ids
 *   are the caller's).
 * - Catalogue writes (upsert, remove) are read-modify-write of the whole catalogue (a PUT
 *   replaces every entry, as the swagger says), one at a time in this client (two slices written
 *   in one run never lose each other's entries; writes from another process meanwhile can, and
 *   the next run finds that as drift). An upsert uploads the documentation of each entry that has
 *   `docs`, puts the entries in place (an entry already there keeps its position; new ones go
 *   last), drops the released and taken-over entries, keeps every other entry as the Dashboard
 *   had it, and sends one PUT (POST when the organisation has no catalogue yet and nothing is to
 *   be uploaded; a POST refused because one was created meanwhile is followed by a read and a
 *   PUT). Then the documentation the replaced or dropped entries pointed to, and that no entry
 *   points to any more, is deleted. A remove drops the slice's entries (no write when there are
 *   none) and deletes their documentation the same way. Documentation deletes are best effort: a
 *   failure leaves an unreferenced document, nothing else. When the catalogue write fails, the
 *   documentation just uploaded is deleted again.
 * - Documentation cannot be read back (the API has no GET for it), so an entry's documentation is
 *   uploaded again with every write of the entry.
 * - Configuration: PUT with the Dashboard's `id` and `org_id` when it has one, else POST; remove
 *   sends nothing (the API has no DELETE for it; the configuration stays, as with Tyk Operator).
 * - Descriptions: nothing is sent or read; every id reads as `{}`.
 * Throws what the client's transport throws: GatewayRejectedError (400, or a 403 that is not about
 * the key: the Dashboard refused what we sent), GatewayApiError, GatewayUnavailableError;
 * InvalidSpecError for an id that is not a catalogue id (a bug, not an input).
 */
import { GatewayApiError, GatewayRejectedError, InvalidSpecError } from '../platform/errors.js';
import { isObject, nonEmpty } from '../platform/guards.js';
import type { HttpResponse } from '../platform/http.js';
import { type CatalogueWrite, catalogueEntryIds, type EntryDocs, PORTAL_CONFIGURATION_ID } from './portal.js';
import { answerMessage, isAuthorisationFailure } from './transport.js';
import type { GatewayObjectKind, JsonObject } from './types.js';

const CATALOGUE = '/api/portal/catalogue';
const DOCUMENTATION = '/api/portal/documentation';
const CONFIGURATION = '/api/portal/configuration';
/** how often a catalogue write reads and writes again when the catalogue changed under it */
const WRITE_ATTEMPTS = 2;

type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';
type PortalKind = Extract<GatewayObjectKind, `portal-${string}`>;

/** What this module needs of the client's transport and error mapping (./tyk-dashboard.ts). */
export interface DashboardCalls {
  call(method: Method, path: string, body?: unknown): Promise<HttpResponse>;
  /** throws unless 2xx; with `sentBody`, a 400 refuses what we sent (GatewayRejectedError) */
  expect2xx(res: HttpResponse, what: string, sentBody?: boolean): void;
  /** the Dashboard's own error shape (`Status: "Error"`), not a proxy's page */
  isDashboardError(res: HttpResponse): boolean;
}

interface Catalogue {
  readonly doc: JsonObject;
  readonly id: string;
  readonly apis: JsonObject[];
}

/** A Map that answers any key from `at` (a slice of one read); iterating it yields nothing. */
class Answering extends Map<string, JsonObject> {
  constructor(private readonly at: (id: string) => JsonObject | null) {
    super();
  }
  override get(id: string): JsonObject | undefined {
    return this.at(id) ?? undefined;
  }
  override has(id: string): boolean {
    return this.at(id) !== null;
  }
}

function policyIdOf(entry: unknown): string {
  return isObject(entry) && typeof entry.policy_id === 'string' ? entry.policy_id : '';
}

function documentationOf(entry: unknown): string {
  return isObject(entry) && typeof entry.documentation === 'string' ? entry.documentation : '';
}

function entryIds(id: string): string[] {
  const ids = catalogueEntryIds(id);
  if (ids === undefined) throw new InvalidSpecError(`not a portal catalogue id: ${id}`);
  return ids;
}

/** The slice of `cat` under `ids` (see the header). */
function sliceOf(cat: Catalogue | null, ids: readonly string[]): JsonObject | null {
  if (cat === null) return null;
  const apis = ids.flatMap((pid) => {
    const entry = cat.apis.find((e) => policyIdOf(e) === pid);
    return entry ? [entry] : [];
  });
  if (ids.length > 0 && apis.length === 0) return null;
  return { id: cat.id, apis };
}

function writeOf(body: JsonObject): CatalogueWrite {
  if (!Array.isArray(body.apis) || !body.apis.every(isObject)) throw new InvalidSpecError('a portal catalogue write needs apis: a list of entries');
  const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);
  return {
    apis: body.apis as JsonObject[],
    release: strings(body.release),
    replaces: strings(body.replaces),
    ...(typeof body.email === 'string' ? { email: body.email } : {}),
    ...(typeof body.org_id === 'string' ? { org_id: body.org_id } : {}),
  };
}

function docsOf(entry: JsonObject): EntryDocs | undefined {
  const d = entry.docs;
  return isObject(d) && typeof d.doc_type === 'string' && typeof d.documentation === 'string' ? { doc_type: d.doc_type, documentation: d.documentation } : undefined;
}

export class DashboardPortal {
  /** catalogue writes, one at a time (see the header) */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly dash: DashboardCalls) {}

  list(kind: PortalKind): Promise<Map<string, JsonObject>> {
    switch (kind) {
      case 'portal-description':
        return Promise.resolve(new Answering(() => ({})));
      case 'portal-catalogue':
        return this.readCatalogue().then((cat) => new Answering((id) => sliceOf(cat, entryIds(id))));
      case 'portal-configuration':
        return this.readConfiguration().then((conf) => new Map(conf ? [[PORTAL_CONFIGURATION_ID, conf]] : []));
    }
  }

  async get(kind: PortalKind, id: string): Promise<JsonObject | null> {
    switch (kind) {
      case 'portal-description':
        return {};
      case 'portal-catalogue':
        return sliceOf(await this.readCatalogue(), entryIds(id));
      case 'portal-configuration':
        return this.readConfiguration();
    }
  }

  upsert(kind: PortalKind, id: string, body: JsonObject): Promise<void> {
    switch (kind) {
      case 'portal-description':
        return Promise.resolve();
      case 'portal-catalogue':
        return this.serial(() => this.writeSlice(entryIds(id), writeOf(body)));
      case 'portal-configuration':
        return this.writeConfiguration(body);
    }
  }

  remove(kind: PortalKind, id: string): Promise<void> {
    if (kind !== 'portal-catalogue') return Promise.resolve();
    return this.serial(() => this.removeSlice(entryIds(id)));
  }

  private serial<T>(work: () => Promise<T>): Promise<T> {
    const run = this.queue.then(work, work);
    this.queue = run.catch(() => undefined);
    return run;
  }

  // --- the catalogue ---------------------------------------------------------

  /** The organisation's catalogue; null when it has none (the Dashboard's 404). */
  private async readCatalogue(): Promise<Catalogue | null> {
    const res = await this.dash.call('GET', CATALOGUE);
    if (res.status === 404 && this.dash.isDashboardError(res)) return null;
    this.dash.expect2xx(res, 'get portal catalogue', false);
    if (Array.isArray(res.json) && res.json.length === 0) return null;
    const doc = Array.isArray(res.json) && res.json.length === 1 ? res.json[0] : res.json;
    const apis = isObject(doc) ? (doc.apis ?? []) : undefined;
    const id = isObject(doc) ? nonEmpty(doc.id) : undefined;
    if (!isObject(doc) || id === undefined || !Array.isArray(apis) || !apis.every(isObject)) {
      throw new GatewayApiError(res.status, 'get portal catalogue: the Dashboard answered something other than a catalogue');
    }
    return { doc, id, apis: apis as JsonObject[] };
  }

  private async writeSlice(ids: readonly string[], write: CatalogueWrite): Promise<void> {
    let cat = await this.readCatalogue();
    // a fresh organisation: no documentation is taken before the catalogue exists (see the header)
    if (cat === null && write.apis.some((entry) => docsOf(entry) !== undefined)) cat = await this.createEmptyCatalogue(write);
    const uploaded: string[] = [];
    try {
      const desired = new Map<string, JsonObject>();
      for (const entry of write.apis) {
        const docs = docsOf(entry);
        const { docs: _, ...rest } = entry;
        // without docs, a documentation id the resource gives itself (Tyk Operator's deprecated field) is kept
        let documentation = typeof rest.documentation === 'string' ? rest.documentation : '';
        if (docs) {
          const up = await this.uploadDocumentation(policyIdOf(entry), docs, write);
          documentation = up.id;
          uploaded.push(documentation);
          if (up.madeCatalogue) cat = up.madeCatalogue;
        }
        desired.set(policyIdOf(entry), { ...rest, documentation });
      }
      const drop = new Set([...ids, ...(write.release ?? []), ...(write.replaces ?? [])]);
      for (let attempt = 1; ; attempt++) {
        const { apis, replaced } = merge(cat?.apis ?? [], desired, drop);
        if (await this.putCatalogue(cat, apis, write, attempt >= WRITE_ATTEMPTS)) {
          await this.deleteUnused(replaced, apis);
          return;
        }
        cat = await this.readCatalogue();
      }
    } catch (err) {
      await this.deleteUnused(uploaded, []);
      throw err;
    }
  }

  private async removeSlice(ids: readonly string[]): Promise<void> {
    const cat = await this.readCatalogue();
    if (cat === null) return;
    const drop = new Set(ids);
    const gone = cat.apis.filter((e) => drop.has(policyIdOf(e)));
    if (gone.length === 0) return;
    const apis = cat.apis.filter((e) => !drop.has(policyIdOf(e)));
    // false: the catalogue is gone, and its entries with it
    if (await this.putCatalogue(cat, apis, { apis: [] }, false)) await this.deleteUnused(gone.map(documentationOf), apis);
  }

  /**
   * PUTs the catalogue with `apis`, or POSTs it when there is none. False when the catalogue
   * changed under us (gone before the PUT, created before the POST) and `last` is not set.
   */
  private async putCatalogue(cat: Catalogue | null, apis: JsonObject[], write: CatalogueWrite, last: boolean): Promise<boolean> {
    const email = write.email !== undefined ? { email: write.email } : {};
    if (cat !== null) {
      const res = await this.dash.call('PUT', CATALOGUE, { ...cat.doc, ...email, apis });
      if (!last && res.status === 404 && this.dash.isDashboardError(res)) return false;
      this.dash.expect2xx(res, 'update portal catalogue');
      return true;
    }
    const res = await this.dash.call('POST', CATALOGUE, { ...(write.org_id ? { org_id: write.org_id } : {}), ...email, apis });
    if (!last && (res.status === 400 || res.status === 409) && this.dash.isDashboardError(res)) return false;
    this.dash.expect2xx(res, 'create portal catalogue');
    return true;
  }

  /**
   * POSTs the organisation's first catalogue, empty (owner email and organisation as `write` says),
   * and answers it as read back; one created meanwhile (the POST refused) is as good.
   */
  private async createEmptyCatalogue(write: CatalogueWrite): Promise<Catalogue> {
    const res = await this.dash.call('POST', CATALOGUE, { ...(write.org_id ? { org_id: write.org_id } : {}), ...(write.email !== undefined ? { email: write.email } : {}), apis: [] });
    if (!((res.status === 400 || res.status === 409) && this.dash.isDashboardError(res))) this.dash.expect2xx(res, 'create portal catalogue');
    const cat = await this.readCatalogue();
    if (cat === null) throw new GatewayApiError(res.status, 'create portal catalogue: the Dashboard accepted it, then had no catalogue');
    return cat;
  }

  /**
   * Uploads documentation and answers its id, and the catalogue it had to make first when the
   * organisation had none any more (a 403 that does not refuse the key is met once: see the header).
   */
  private async uploadDocumentation(policyId: string, docs: EntryDocs, write: CatalogueWrite): Promise<{ id: string; madeCatalogue?: Catalogue }> {
    const what = `upload portal documentation for policy ${policyId}`;
    const body = { api_id: policyId, doc_type: docs.doc_type, documentation: docs.documentation };
    let res = await this.dash.call('POST', DOCUMENTATION, body);
    let madeCatalogue: Catalogue | undefined;
    if (res.status === 403 && this.dash.isDashboardError(res) && !isAuthorisationFailure(res.status, answerMessage(res, 'Message'))) {
      if ((await this.readCatalogue()) === null) {
        madeCatalogue = await this.createEmptyCatalogue(write);
        res = await this.dash.call('POST', DOCUMENTATION, body);
      }
      const message = answerMessage(res, 'Message');
      if (res.status === 403 && !isAuthorisationFailure(res.status, message))
        throw new GatewayRejectedError(403, `${what}: refused by the Dashboard while the organisation has a catalogue: ${message}`);
    }
    this.dash.expect2xx(res, what);
    const id = isObject(res.json) ? nonEmpty(res.json.Message) : undefined;
    if (id === undefined) throw new GatewayApiError(res.status, `${what}: the answer names no documentation id`);
    return madeCatalogue ? { id, madeCatalogue } : { id };
  }

  /** Deletes the documentation in `ids` that no entry of `apis` points to (best effort: see the header). */
  private async deleteUnused(ids: readonly string[], apis: readonly JsonObject[]): Promise<void> {
    const used = new Set(apis.map(documentationOf));
    for (const id of new Set(ids)) {
      if (id === '' || used.has(id)) continue;
      await this.dash.call('DELETE', `${DOCUMENTATION}/${encodeURIComponent(id)}`).catch(() => undefined);
    }
  }

  // --- the configuration -----------------------------------------------------

  private async readConfiguration(): Promise<JsonObject | null> {
    const res = await this.dash.call('GET', CONFIGURATION);
    if (res.status === 404 && this.dash.isDashboardError(res)) return null;
    this.dash.expect2xx(res, 'get portal configuration', false);
    if (!isObject(res.json) || nonEmpty(res.json.id) === undefined) throw new GatewayApiError(res.status, 'get portal configuration: the Dashboard answered something other than a configuration');
    return res.json;
  }

  private async writeConfiguration(body: JsonObject): Promise<void> {
    const { id: _id, org_id: orgId, ...settings } = body;
    for (let attempt = 0; attempt < 2; attempt++) {
      const current = await this.readConfiguration();
      if (current !== null) {
        const res = await this.dash.call('PUT', CONFIGURATION, { ...settings, id: current.id, org_id: current.org_id });
        if (res.status === 404 && this.dash.isDashboardError(res)) continue; // deleted meanwhile
        this.dash.expect2xx(res, 'update portal configuration');
        return;
      }
      const res = await this.dash.call('POST', CONFIGURATION, { ...settings, ...(typeof orgId === 'string' && orgId !== '' ? { org_id: orgId } : {}) });
      if ((res.status === 400 || res.status === 409) && this.dash.isDashboardError(res) && attempt === 0) continue; // created meanwhile
      this.dash.expect2xx(res, 'create portal configuration');
      return;
    }
    throw new GatewayApiError(409, 'write portal configuration: it kept appearing and disappearing while it was written');
  }
}

/**
 * The catalogue's entries with `desired` in place (by policy id; new ones last) and the entries
 * under `drop` left out; what the replaced and dropped entries' documentation was.
 */
function merge(current: readonly JsonObject[], desired: ReadonlyMap<string, JsonObject>, drop: ReadonlySet<string>): { apis: JsonObject[]; replaced: string[] } {
  const apis: JsonObject[] = [];
  const replaced: string[] = [];
  const placed = new Set<string>();
  for (const entry of current) {
    const pid = policyIdOf(entry);
    const mine = desired.get(pid);
    if (mine && !placed.has(pid)) {
      apis.push(mine);
      placed.add(pid);
      replaced.push(documentationOf(entry));
    } else if (mine || drop.has(pid)) replaced.push(documentationOf(entry));
    else apis.push(entry);
  }
  for (const [pid, entry] of desired) if (!placed.has(pid)) apis.push(entry);
  return { apis, replaced };
}
