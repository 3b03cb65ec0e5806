/**
 * The Gateway port (lib/gateway/types.ts) in memory, with the contract our real clients show
 * against the loopback fakes; the shared contract suite (./contract.ts) runs against both.
 * The Tyk model itself (zero-value filling on read, decoding, validation, listen-path
 * collisions) is the fakes' own code, imported, so it cannot drift.
 *
 * MemoryTykGateway (lib/gateway/tyk-ce.ts against test/fakes/tyk-gateway.ts):
 * - two layers: files (written by upsert/remove) and loaded (read by get/list); only a
 *   reload() copies files → loaded, so writes are invisible until then (reloadRequired).
 *   A reload is applied at once, unless lost (`dropReloads(n)`); `restart()` loses the loaded
 *   set (and the files unless keepFiles).
 * - what get/list return is the gateway's full model: the stored object over Go zero values,
 *   APIs with a 24-hex `id`; two loaded APIs on one listen path are renamed as Tyk does.
 * - upsert: a body Go cannot decode, or an invalid API → GatewayRejectedError (400).
 * - remove is idempotent: an API not loaded is gone; a policy without a file is gone unless
 *   loaded; an object loaded but without its file → GatewayApiError 500 ("Delete failed").
 * - Tyk OAS APIs ('oas', the fakes' model in ../fakes/tyk-oas.ts): two files (the Classic form,
 *   with `is_oas: true`, among the APIs, and the document), loaded together; reads answer the
 *   document filled from its loaded Classic form, with the servers the gateway generates. A
 *   body the gateway refuses → GatewayRejectedError 400; an id a loaded Classic API has →
 *   GatewayApiError 400 on get, upsert and remove; removing an OAS API (either kind) removes
 *   both files. A Classic write makes a Classic API (`is_oas` false).
 *
 * MemoryTykDashboard (lib/gateway/tyk-dashboard.ts against test/fakes/tyk-dashboard.ts):
 * - one store, no reload: writes are visible at once (reloadRequired false).
 * - APIs by api_id, with the Dashboard's internal `id` and its org_id; policies with the
 *   Dashboard's `_id`, found by their `id` field (the oldest first), else by `_id` (adoption
 *   by spec.id = _id); date_created and last_updated from the injected clock.
 * - upsert: a malformed API → GatewayRejectedError 400 ("Malformed API data"); a malformed
 *   policy → 403 "Request body malformed."; a policy name another policy has → 400.
 * - remove is idempotent.
 * - Tyk OAS APIs: in the same store, with the Classic form (`is_oas: true`) among the APIs and
 *   the document read with the Dashboard's info (id, dbId, orgId); a body it refuses →
 *   GatewayRejectedError 400, another API's listen path on an update → 403; an id a Classic
 *   API has → GatewayApiError 409 on upsert (a Classic update of an OAS API → rejected 400).
 *
 * Both: faults (./faults.ts) on list, get, upsert, remove, reload, ping, with the errors the
 * clients throw (GatewayApiError with a status, GatewayUnavailableError, ...); `writes()`
 * counts upserts and removes. `brokenGateway` stands for a gateway that cannot be reached.
 */

import { withOasId, withoutOasFields } from '../../lib/gateway/oas.js';
import { isPortalGatewayKind, portalUnsupported } from '../../lib/gateway/portal.js';
import { GATEWAY_OBJECT_NAMES, type Gateway, type GatewayObjectKind, type JsonObject, type ListVisitor, listedObject } from '../../lib/gateway/types.js';
import type { Clock } from '../../lib/platform/clock.js';
import { GatewayApiError, GatewayRejectedError, GatewayUnavailableError } from '../../lib/platform/errors.js';
import { API_SHAPE, type JsonObject as DashboardJson, decodeModel, invalidApi, MSG, OAS_MSG, POLICY_SHAPE } from '../fakes/tyk-dashboard.js';
import { fillModel } from '../fakes/tyk-fake-base.js';
import { countByListenHash, decodeBody, fixListenPath, KINDS, loadKind, loadOas, OAS_REFUSALS, type JsonObject as TykJson, validateApi } from '../fakes/tyk-gateway.js';
import { classicOf, filledOas, type OasBody, readOasBody, withServers } from '../fakes/tyk-oas.js';
import { type FailHow, type PortFault, type PortFaultHandle, PortFaults } from './faults.js';

export type GatewayOp = 'list' | 'get' | 'upsert' | 'remove' | 'reload' | 'ping';

export type Mutator = (obj: JsonObject) => void | JsonObject;

/** Where the in-memory Tyk Gateway says it listens, in the servers it generates for OAS APIs (as the fake's default). */
const SERVER_HOST = '127.0.0.1:8080';

/** The message of an OAS body refused, in the gateway's or (dashboard) the Dashboard's words. */
function oasRefusal(body: Exclude<OasBody, { ok: true }>, words: { malformed: string; noExtension: string }): string {
  if (body.reason === 'invalid') return body.message;
  return body.reason === 'malformed' ? words.malformed : words.noExtension;
}

function clone<T>(v: T): T {
  return structuredClone(v);
}

function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

/** A JSON round trip, as the body would travel over HTTP (undefined members dropped). */
function wire(v: unknown): string {
  return JSON.stringify(v);
}

/** Deterministic 24-hex object ids (4 bytes of seconds, then a counter), as MongoDB's look. */
class ObjectIds {
  private n = 0;
  constructor(private readonly clock: Clock) {}
  next(): string {
    this.n += 1;
    return (
      Math.floor(this.clock.now() / 1000)
        .toString(16)
        .padStart(8, '0') + this.n.toString(16).padStart(16, '0')
    );
  }
}

/** What the two in-memory gateways share: name, faults, call counts. */
abstract class MemoryGatewayBase implements Gateway {
  abstract readonly reloadRequired: boolean;
  readonly faults: PortFaults<GatewayOp>;
  protected readonly ids: ObjectIds;

  constructor(
    readonly name: string,
    protected readonly clock: Clock,
  ) {
    this.faults = new PortFaults<GatewayOp>(clock);
    this.ids = new ObjectIds(clock);
  }

  abstract list(kind: GatewayObjectKind, visit?: ListVisitor): Promise<Map<string, JsonObject>>;

  /** The Gateway contract's `visit`: each listed object handed over, and an empty map. */
  protected visited(all: Map<string, JsonObject>, visit: ListVisitor | undefined): Map<string, JsonObject> {
    if (!visit) return all;
    for (const [id, item] of all) visit(id, listedObject(item));
    return new Map();
  }
  abstract get(kind: GatewayObjectKind, id: string): Promise<JsonObject | null>;
  abstract upsert(kind: GatewayObjectKind, id: string, body: JsonObject): Promise<void>;
  abstract remove(kind: GatewayObjectKind, id: string): Promise<void>;
  abstract reload(): Promise<void>;

  async ping(): Promise<void> {
    await this.faults.enter({ op: 'ping' });
  }

  inject(fault: PortFault<GatewayOp>): PortFaultHandle {
    return this.faults.inject(fault);
  }

  clearFaults(): void {
    this.faults.clear();
  }

  count(op?: GatewayOp, kind?: GatewayObjectKind): number {
    return this.faults.count(op, kind);
  }

  /** Upserts and removes since the last resetCalls. */
  writes(kind?: GatewayObjectKind): number {
    return this.count('upsert', kind) + this.count('remove', kind);
  }

  resetCalls(): void {
    this.faults.resetCalls();
  }
}

// ───────────────────────────── Tyk Gateway (ce) ─────────────────────────────

export interface RestartOptions {
  keepFiles?: boolean;
  loadOnStart?: boolean;
}

/** The kinds the in-memory gateways model: not the developer portal's (see `modelled`). */
type TykKind = Extract<GatewayObjectKind, 'api' | 'policy' | 'oas'>;

/**
 * The kind, when the in-memory gateways model it. The developer portal's kinds are refused as the
 * Tyk Gateway refuses them (GatewayUnsupportedError); the portal is tested against the HTTP
 * Dashboard fake (test/fakes/tyk-dashboard-portal.ts), not in memory.
 */
function modelled(kind: GatewayObjectKind, gateway: string): TykKind {
  if (isPortalGatewayKind(kind)) throw portalUnsupported(GATEWAY_OBJECT_NAMES[kind].one, gateway);
  return kind as TykKind;
}

type Layer = Record<TykKind, Map<string, JsonObject>>;

function emptyLayer(): Layer {
  return { api: new Map(), policy: new Map(), oas: new Map() };
}

export class MemoryTykGateway extends MemoryGatewayBase {
  readonly reloadRequired = true;
  readonly reloads = { requested: 0, applied: 0, dropped: 0 };
  private store: { files: Layer; loaded: Layer } = { files: emptyLayer(), loaded: emptyLayer() };
  private readonly objectIds = new Map<string, string>();
  private dropNext = 0;

  constructor(options: { name?: string; clock: Clock }) {
    super(options.name ?? 'default', options.clock);
  }

  async list(of: GatewayObjectKind, visit?: ListVisitor): Promise<Map<string, JsonObject>> {
    const kind = modelled(of, this.name);
    await this.faults.enter({ op: 'list', kind });
    return this.visited(this.loaded(kind), visit);
  }

  async get(of: GatewayObjectKind, id: string): Promise<JsonObject | null> {
    const kind = modelled(of, this.name);
    await this.faults.enter({ op: 'get', kind, id });
    if (kind === 'oas') this.refuseClassicHeld(`get OAS API ${id}`, id);
    const found = this.store.loaded[kind].get(id);
    return found ? clone(found) : null;
  }

  async upsert(of: GatewayObjectKind, id: string, body: JsonObject): Promise<void> {
    const kind = modelled(of, this.name);
    await this.faults.enter({ op: 'upsert', kind, id });
    if (kind === 'oas') return this.upsertOas(id, body);
    const { idField } = KINDS[kind];
    const what = `write ${GATEWAY_OBJECT_NAMES[kind].one} ${id}`;
    const decoded = decodeBody(kind, wire({ ...body, [idField]: id }));
    if (!decoded.ok) throw new GatewayRejectedError(400, `${what}: rejected by the gateway: Request malformed`);
    const invalid = kind === 'api' ? validateApi(decoded.value) : undefined;
    if (invalid !== undefined) throw new GatewayRejectedError(400, `${what}: rejected by the gateway: ${invalid}`);
    this.store.files[kind].set(id, { ...decoded.value, ...(kind === 'api' ? { is_oas: false } : {}) } as JsonObject);
  }

  async remove(of: GatewayObjectKind, id: string): Promise<void> {
    const kind = modelled(of, this.name);
    await this.faults.enter({ op: 'remove', kind, id });
    if (kind === 'oas') this.refuseClassicHeld(`delete OAS API ${id}`, id);
    const layer = kind === 'oas' ? 'api' : kind;
    const loaded = this.store.loaded[layer].has(id);
    if (layer === 'api' && !loaded) return; // 404: gone
    if (this.deleteFiles(layer, id)) return;
    // 500 "Delete failed": settled by a read
    if (!loaded) return;
    throw new GatewayApiError(500, `delete ${GATEWAY_OBJECT_NAMES[kind].one} ${id}: 500 Delete failed`);
  }

  /** Deletes the object's file (both of an OAS API's, which must both be there); false when it could not. */
  private deleteFiles(kind: 'api' | 'policy', id: string): boolean {
    const { files } = this.store;
    if (kind !== 'api' || files.api.get(id)?.is_oas !== true) return files[kind].delete(id);
    if (!files.api.has(id) || !files.oas.has(id)) return false;
    files.api.delete(id);
    return files.oas.delete(id);
  }

  /** The client's PUT, then POST: the document and its Classic form written, with the servers the gateway makes. */
  private upsertOas(id: string, body: JsonObject): void {
    const checked = readOasBody(wire(withOasId(body, id)));
    if (!checked.ok) {
      const message = oasRefusal(checked, { malformed: OAS_REFUSALS.malformed, noExtension: OAS_REFUSALS['no-extension'] });
      throw new GatewayRejectedError(400, `update OAS API ${id}: rejected by the gateway: ${message}`);
    }
    this.refuseClassicHeld(`write OAS API ${id}`, id);
    const doc = withServers(checked.doc, SERVER_HOST, this.store.loaded.oas.get(id) as TykJson | undefined) as JsonObject;
    this.store.files.oas.set(id, doc);
    this.store.files.api.set(id, classicOf(doc as TykJson) as JsonObject);
  }

  /** The client's error for an id a loaded Tyk Classic API has, asked for as an OAS API. */
  private refuseClassicHeld(what: string, id: string): void {
    if (this.store.loaded.api.get(id)?.is_oas !== false) return;
    throw new GatewayApiError(400, `${what}: gateway ${this.name} has a Tyk Classic API under the id ${id}; an OAS API cannot take its place`);
  }

  async reload(): Promise<void> {
    await this.faults.enter({ op: 'reload' });
    this.reloads.requested++;
    if (this.dropNext > 0) {
      this.dropNext--;
      this.reloads.dropped++;
      return;
    }
    this.reloadNow();
    this.reloads.applied++;
  }

  // ── the test side ──

  /** Applies the files now (a reload nobody asked for through the API). */
  reloadNow(): void {
    const prev = this.store.loaded.api;
    const specs = loadKind('api', this.store.files.api as Map<string, TykJson>);
    for (const s of specs) if (str(s.id) === '') s.id = this.objectIdFor(str(s.api_id));
    const counts = countByListenHash(specs);
    for (const s of specs) fixListenPath(s, counts, prev.get(str(s.api_id)) as TykJson | undefined);
    this.store.loaded.api = new Map(specs.map((s) => [str(s.api_id), s as JsonObject]));
    this.store.loaded.oas = loadOas(this.store.loaded.api as Map<string, TykJson>, this.store.files.oas as Map<string, TykJson>) as Map<string, JsonObject>;
    const policies = loadKind('policy', this.store.files.policy as Map<string, TykJson>);
    this.store.loaded.policy = new Map(policies.map((p) => [str(p.id), p as JsonObject]));
  }

  /** The next n reloads are lost (they still answer ok). */
  dropReloads(n: number): void {
    this.dropNext += n;
  }

  /** A new gateway process: the loaded set is lost, the files too unless keepFiles. */
  restart(options: RestartOptions = {}): void {
    this.store.loaded = emptyLayer();
    if (!options.keepFiles) {
      this.store.files = emptyLayer();
      this.objectIds.clear();
    }
    if (options.keepFiles && options.loadOnStart !== false) this.reloadNow();
  }

  loaded(kind: TykKind): Map<string, JsonObject> {
    return clone(this.store.loaded[kind]);
  }

  files(kind: TykKind): Map<string, JsonObject> {
    return clone(this.store.files[kind]);
  }

  /** Someone edits the object through the gateway API and reloads (drift). */
  tamper(kind: TykKind, id: string, mutate: Mutator): void {
    editIn(this.store.files[kind], kind, id, mutate);
    this.reloadNow();
  }

  /** Someone deletes the object through the gateway API and reloads. */
  removeBehindOurBack(kind: TykKind, id: string): boolean {
    const had = this.store.files[kind].delete(id);
    this.reloadNow();
    return had;
  }

  editLoaded(kind: TykKind, id: string, mutate: Mutator): void {
    editIn(this.store.loaded[kind], kind, id, mutate);
  }

  editFile(kind: TykKind, id: string, mutate: Mutator): void {
    editIn(this.store.files[kind], kind, id, mutate);
  }

  private objectIdFor(apiId: string): string {
    let id = this.objectIds.get(apiId);
    if (id === undefined) {
      id = this.ids.next();
      this.objectIds.set(apiId, id);
    }
    return id;
  }
}

function editIn(m: Map<string, JsonObject>, kind: GatewayObjectKind, id: string, mutate: Mutator): void {
  const current = m.get(id);
  if (current === undefined) throw new Error(`memory gateway: no ${kind} ${id} to edit`);
  const next = mutate(current);
  if (next !== undefined) m.set(id, next);
}

// ───────────────────────────── Tyk Dashboard (pro) ─────────────────────────────

interface StoredApi {
  seq: number;
  def: JsonObject;
  /** an OAS API's document, as last written */
  oas?: JsonObject;
}

interface StoredPolicy {
  seq: number;
  doc: JsonObject;
}

export const DEFAULT_DASHBOARD_ORG = '5e9d9544a1dcd60001d0ed20';

export class MemoryTykDashboard extends MemoryGatewayBase {
  readonly reloadRequired = false;
  readonly orgId: string;
  /** api_id → API */
  private apiStore = new Map<string, StoredApi>();
  /** _id → policy */
  private policyStore = new Map<string, StoredPolicy>();
  private seq = 0;

  constructor(options: { name?: string; clock: Clock; orgId?: string }) {
    super(options.name ?? 'default', options.clock);
    this.orgId = options.orgId ?? DEFAULT_DASHBOARD_ORG;
  }

  async list(of: GatewayObjectKind, visit?: ListVisitor): Promise<Map<string, JsonObject>> {
    const kind = modelled(of, this.name);
    await this.faults.enter({ op: 'list', kind });
    switch (kind) {
      case 'api':
        return this.visited(this.apis(), visit);
      case 'policy':
        return this.visited(this.policiesById(), visit);
      case 'oas':
        return this.visited(this.oasApis(), visit);
    }
  }

  async get(of: GatewayObjectKind, id: string): Promise<JsonObject | null> {
    const kind = modelled(of, this.name);
    await this.faults.enter({ op: 'get', kind, id });
    if (kind === 'policy') {
      const mid = this.findPolicy(id);
      return mid === undefined ? null : clone(this.policyStore.get(mid)?.doc ?? null);
    }
    const a = this.apiStore.get(id);
    if (kind === 'oas') return a?.oas === undefined ? null : oasView(a);
    return a ? clone(a.def) : null;
  }

  async upsert(of: GatewayObjectKind, id: string, body: JsonObject): Promise<void> {
    const kind = modelled(of, this.name);
    await this.faults.enter({ op: 'upsert', kind, id });
    switch (kind) {
      case 'api':
        return this.upsertApi(id, body);
      case 'policy':
        return this.upsertPolicy(id, body);
      case 'oas':
        return this.upsertOas(id, body);
    }
  }

  async remove(of: GatewayObjectKind, id: string): Promise<void> {
    const kind = modelled(of, this.name);
    await this.faults.enter({ op: 'remove', kind, id });
    if (kind === 'policy') {
      const mid = this.findPolicy(id);
      if (mid !== undefined) this.policyStore.delete(mid);
      return;
    }
    if (kind === 'api' || this.apiStore.get(id)?.oas !== undefined) this.apiStore.delete(id);
  }

  async reload(): Promise<void> {
    await this.faults.enter({ op: 'reload' });
  }

  // ── the test side ──

  /** api_id → the api_definition as GET shows it (copies), oldest first. */
  apis(): Map<string, JsonObject> {
    return new Map([...this.apiStore.values()].sort((a, b) => a.seq - b.seq).map((a) => [str(a.def.api_id), clone(a.def)]));
  }

  /** api_id → an OAS API's document as GET shows it (copies), oldest first. */
  oasApis(): Map<string, JsonObject> {
    const oas = [...this.apiStore.values()].filter((a) => a.oas !== undefined).sort((a, b) => a.seq - b.seq);
    return new Map(oas.map((a) => [str(a.def.api_id), oasView(a)]));
  }

  /** _id → the policy as GET shows it (copies), oldest first. */
  policies(): Map<string, JsonObject> {
    return new Map([...this.policyStore].sort(([, a], [, b]) => a.seq - b.seq).map(([mid, p]) => [mid, clone(p.doc)]));
  }

  /** Someone edits the API on the Dashboard (drift). */
  editApi(apiId: string, mutate: Mutator): void {
    const a = this.apiStore.get(apiId);
    if (!a) throw new Error(`memory dashboard: no API ${apiId} to edit`);
    const next = mutate(a.def);
    if (next !== undefined) a.def = next;
  }

  removeApi(apiId: string): boolean {
    return this.apiStore.delete(apiId);
  }

  /** Creates a policy directly (what Tyk Operator or a user left there); returns its _id. */
  seedPolicy(doc: JsonObject): string {
    const mid = this.ids.next();
    this.policyStore.set(mid, { seq: ++this.seq, doc: this.policyDoc(doc, mid, this.now()) });
    return mid;
  }

  removePolicy(mid: string): boolean {
    return this.policyStore.delete(mid);
  }

  /** A fresh database. */
  wipe(): void {
    this.apiStore = new Map();
    this.policyStore = new Map();
  }

  // ── internals ──

  private upsertApi(id: string, body: JsonObject): void {
    const existing = this.apiStore.get(id);
    const what = existing ? `update API ${id}` : `create API ${id}`;
    const def: JsonObject = { ...body, api_id: id };
    delete def.id;
    const decoded = decodeModel(wire({ api_definition: def }), API_SHAPE, 'api_definition');
    if (decoded === undefined) throw new GatewayRejectedError(400, `${what}: rejected by the Dashboard: ${MSG.malformedApi}`);
    if (existing?.oas !== undefined) throw new GatewayRejectedError(400, `${what}: rejected by the Dashboard: ${OAS_MSG.classicRoute}`);
    const invalid = invalidApi(decoded);
    if (invalid !== undefined) throw new GatewayRejectedError(400, `${what}: rejected by the Dashboard: ${invalid}`);
    const internal = existing ? str(existing.def.id) : this.ids.next();
    const filled = fillModel(API_SHAPE, { ...decoded, api_id: id, id: internal, org_id: this.orgId, is_oas: false }) as JsonObject;
    if (existing) existing.def = filled;
    else this.apiStore.set(id, { seq: ++this.seq, def: filled });
  }

  /** The client's PUT, else POST: both forms of the API under our id (see the header). */
  private upsertOas(id: string, body: JsonObject): void {
    const existing = this.apiStore.get(id);
    const what = existing ? `update OAS API ${id}` : `create OAS API ${id}`;
    const checked = readOasBody(wire(withoutOasFields(withOasId(body, id), ['dbId'])));
    if (!checked.ok) throw new GatewayRejectedError(400, `${what}: rejected by the Dashboard: ${oasRefusal(checked, OAS_MSG)}`);
    if (existing && existing.oas === undefined) throw new GatewayApiError(409, `create OAS API ${id}: the Dashboard has an API under this id that is not a Tyk OAS API`);
    const internal = existing ? str(existing.def.id) : this.ids.next();
    const oas = checked.doc as JsonObject;
    const def = fillModel(API_SHAPE, { ...classicOf(checked.doc), api_id: id, id: internal, org_id: this.orgId }) as JsonObject;
    if (existing && this.listenUrlTaken(def, id)) throw new GatewayRejectedError(403, `${what}: rejected by the Dashboard: ${OAS_MSG.sameUrl}`);
    if (existing) Object.assign(existing, { def, oas });
    else this.apiStore.set(id, { seq: ++this.seq, def, oas });
  }

  /** Whether an API other than apiId listens on def's domain and listen path. */
  private listenUrlTaken(def: JsonObject, apiId: string): boolean {
    const where = (d: JsonObject): string => str(d.domain) + str((d.proxy as JsonObject | undefined)?.listen_path);
    return [...this.apiStore.values()].some((a) => str(a.def.api_id) !== apiId && where(a.def) === where(def));
  }

  private upsertPolicy(id: string, body: JsonObject): void {
    const doc: JsonObject = { ...body, id };
    delete doc._id;
    const mid = this.findPolicy(id);
    const what = mid === undefined ? `create policy ${id}` : `update policy ${id}`;
    const decoded = decodeModel(wire(doc), POLICY_SHAPE);
    if (decoded === undefined) throw new GatewayRejectedError(403, `${what}: rejected by the Dashboard: ${MSG.malformedPolicy}`);
    if (this.nameTaken(str(decoded.name), mid)) throw new GatewayRejectedError(400, `${what}: rejected by the Dashboard: ${MSG.policyName}`);
    if (mid === undefined) {
      const created = this.ids.next();
      this.policyStore.set(created, { seq: ++this.seq, doc: this.policyDoc(decoded as JsonObject, created, this.now()) });
      return;
    }
    const stored = this.policyStore.get(mid) as StoredPolicy;
    stored.doc = this.policyDoc(decoded as JsonObject, mid, str(stored.doc.date_created));
  }

  private policyDoc(doc: JsonObject, mid: string, created: string): JsonObject {
    return fillModel(POLICY_SHAPE, {
      ...(doc as DashboardJson),
      _id: mid,
      org_id: this.orgId,
      date_created: created,
      last_updated: String(Math.floor(this.clock.now() / 1000)),
    }) as JsonObject;
  }

  /** Policies by our key (`id`, else `_id`); the oldest with a key wins. */
  private policiesById(): Map<string, JsonObject> {
    const out = new Map<string, JsonObject>();
    for (const [mid, p] of [...this.policyStore].sort(([, a], [, b]) => a.seq - b.seq)) {
      const key = str(p.doc.id) || mid;
      if (!out.has(key)) out.set(key, clone(p.doc));
    }
    return out;
  }

  /** The _id of the policy our id names: the oldest carrying it, else the one whose _id it is. */
  private findPolicy(id: string): string | undefined {
    const byId = [...this.policyStore].filter(([mid, p]) => (str(p.doc.id) || mid) === id).sort(([, a], [, b]) => a.seq - b.seq);
    if (byId[0]) return byId[0][0];
    return this.policyStore.has(id) ? id : undefined;
  }

  private nameTaken(name: string, except: string | undefined): boolean {
    return name !== '' && [...this.policyStore].some(([mid, p]) => mid !== except && str(p.doc.name) === name);
  }

  private now(): string {
    return new Date(this.clock.now()).toISOString();
  }
}

/** An OAS API's document as the Dashboard reads it: filled from its Classic form (ids, org, name, state, listen path). */
function oasView(a: StoredApi): JsonObject {
  return filledOas((a.oas ?? {}) as TykJson, a.def as TykJson) as JsonObject;
}

// ───────────────────────────── unreachable ─────────────────────────────

/** A gateway every call to which fails with `error()` (nothing listening, or a refused secret). */
export function brokenGateway(name: string, reloadRequired: boolean, error: () => Error): Gateway {
  const fail = async (): Promise<never> => {
    throw error();
  };
  return { name, reloadRequired, list: fail, get: fail, upsert: fail, remove: fail, reload: fail, ping: fail };
}

export function unreachable(name: string, url: string): () => Error {
  return () => new GatewayUnavailableError(`gateway ${name}: GET ${url}: ECONNREFUSED connect ECONNREFUSED`);
}

/** The error our gateway clients throw for a call that fails `how` (a status that is not a refusal of the body). */
export function gatewayFailure(how: FailHow, what: string): Error {
  if ('unavailable' in how) return new GatewayUnavailableError(`${what}: ECONNREFUSED connect ECONNREFUSED`);
  if (how.status === 400) return new GatewayRejectedError(400, `${what}: rejected by the gateway: injected fault`);
  return new GatewayApiError(how.status, `${what}: ${how.status} injected fault`);
}
