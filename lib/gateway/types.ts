/**
 * Observed state: what the reconciler needs from a Tyk gateway (the Gateway API in CE
 * mode, the Dashboard API in pro mode), as one narrow interface. lib/engine depends
 * only on this file.
 *
 * Guarantees of every implementation:
 * - `list` returns every object the gateway reports, or throws: never a partial map.
 * - `get` resolves null only when the gateway says the object does not exist, in the answer
 *   its API documents for that (never a proxy's page, never another error).
 * - `upsert` creates or replaces the object with the given id. `hint.present` (what the caller
 *   just read: the gateway has it, or not) picks the first request where create and update are
 *   separate calls; a wrong or absent hint costs a second request, never a wrong outcome.
 * - `remove` is idempotent: an object that is already gone counts as removed; a failed
 *   delete counts as done only when a read confirms the object is gone.
 * - errors never carry the gateway secret.
 * Throws GatewayApiError, GatewayRejectedError (400: invalid definition),
 * GatewayUnsupportedError (the gateway lacks, or has turned off, what the kind needs),
 * GatewayUnavailableError (network, timeout).
 */

import type { CertificateStore } from './certificates.js';

/**
 * What the gateway holds, and the id the interface names it by:
 * - 'api': a Tyk Classic API definition, by its `api_id`;
 * - 'policy': a security policy, by its `id`;
 * - 'oas': a Tyk OAS API definition (an OpenAPI 3 document with the `x-tyk-api-gateway`
 *   extension, ./oas.ts), by its `x-tyk-api-gateway.info.id`. To the gateway it is an API too:
 *   its Classic form (`is_oas: true`) is among the 'api' objects a list returns.
 * - the developer portal (Tyk Dashboard only, ./portal.ts; a Tyk Gateway throws
 *   GatewayUnsupportedError for these): 'portal-catalogue', the entries of the organisation's
 *   catalogue that one resource owns, by the set of their policy ids (catalogueId); and
 *   'portal-configuration', the organisation's portal configuration, by PORTAL_CONFIGURATION_ID;
 *   'portal-description', an APIDescription, which keeps nothing of its own on the Dashboard:
 *   every id reads as an empty object, and writes send nothing.
 */
export type GatewayObjectKind = 'api' | 'policy' | 'oas' | 'portal-description' | 'portal-catalogue' | 'portal-configuration';

/** How messages name an object of each kind, and several. */
export const GATEWAY_OBJECT_NAMES: Readonly<Record<GatewayObjectKind, { one: string; many: string }>> = {
  api: { one: 'API', many: 'APIs' },
  policy: { one: 'policy', many: 'policies' },
  oas: { one: 'OAS API', many: 'OAS APIs' },
  'portal-description': { one: 'API description', many: 'API descriptions' },
  'portal-catalogue': { one: 'portal catalogue entries', many: 'portal catalogues' },
  'portal-configuration': { one: 'portal configuration', many: 'portal configurations' },
};

export type JsonObject = Record<string, unknown>;

/** What the caller knows of the object before an upsert. */
export interface UpsertHint {
  /** the gateway showed the object (true), or confirmed it absent (false) */
  readonly present?: boolean;
}

/**
 * One object of a full list as it is read. `body()` parses it on first use (then the same
 * object); `digest`, where the client read its bytes, is their SHA-256: equal digests, equal
 * objects, so a caller that kept what it derived from an object can skip parsing it again.
 * Valid during the visit only: body() throws afterwards.
 */
export interface ListedObject {
  readonly digest?: string;
  /**
   * Where the client read the bytes: a digest of them without the object's leading `id` member
   * (the object id each replica of one gateway makes up for itself; the digest's own value when
   * there is none), so the same object on two replicas has the same one. Valid during the visit only.
   */
  sameAs?(): string;
  body(): JsonObject;
}

/** Takes one object of a full list as it is read. */
export type ListVisitor = (id: string, item: ListedObject) => void;

/** A ListedObject of an object already parsed (no digest). */
export function listedObject(body: JsonObject): ListedObject {
  return { body: () => body };
}

export interface Gateway {
  /** Names this gateway in records and locks, e.g. "default". */
  readonly name: string;
  /** True when writes become visible only after `reload()` (Tyk Gateway CE). */
  readonly reloadRequired: boolean;
  /**
   * Every object of `kind`, by id. With `visit` (kinds api, policy and oas), each object is
   * handed to it as it is read instead, and the map is empty: a caller that keeps only a little
   * of each need not hold them all.
   */
  list(kind: GatewayObjectKind, visit?: ListVisitor): Promise<Map<string, JsonObject>>;
  get(kind: GatewayObjectKind, id: string): Promise<JsonObject | null>;
  upsert(kind: GatewayObjectKind, id: string, body: JsonObject, hint?: UpsertHint): Promise<void>;
  remove(kind: GatewayObjectKind, id: string): Promise<void>;
  /** Asks every node of the gateway group to reload. A no-op where reloadRequired is false. */
  reload(): Promise<void>;
  /** Resolves when the gateway answers and accepts our secret; for /readyz. */
  ping(): Promise<void>;
  /** The gateway's certificate store (./certificates.ts), where it has one we can reach. */
  readonly certificates?: CertificateStore;
  /** A gateway of several replicas (./replicas.ts): its replicas, those its last read could not reach, and (for `of`) those not yet showing our last write of that object. */
  replicaStatus?(of?: { readonly kind: GatewayObjectKind; readonly id: string }): ReplicaStatus;
}

/** A gateway's replicas as its last read found them. */
export interface ReplicaStatus {
  readonly replicas: readonly string[];
  /** left out of the last read, and so not written: the replica and why */
  readonly unreadable: readonly { readonly replica: string; readonly error: string; readonly code: string }[];
  /** for one object: the replicas its last read-back found not yet showing our write */
  readonly behind?: readonly string[];
}
