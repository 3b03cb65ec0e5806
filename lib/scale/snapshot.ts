/**
 * The snapshot of a sharded full run: what each gateway held when the tick's coordinator listed
 * it (lib/scale/coordinate.ts), so the tick's shards decide without listing the gateway
 * again, each of them.
 *
 * Per gateway (target name) and gateway kind, per object id: hashOf the whole object as the
 * gateway lists it and, where the gateway client read its bytes, their SHA-256 digest, either
 * compared with the record's observedWholeHash (the whole read-back after our last write: a
 * listed one's digest, a GET's hashOf; equal, nothing changed; else load.ts reads the object
 * and decides on its managed hash),
 * and the few id fields a status is built from (finalize.ts statusId: a policy's Dashboard
 * `_id`, a portal object's own id). Kept in the store (putBlob) under the run id, with a ttl
 * that outlives every delivery of a shard (SNAPSHOT_TTL_MS), in one value per gateway and
 * shard: an entry goes to the shard that holds the object its id names (a default id,
 * namedByDefaultId), and every other id to one value all the shards read (`rest`). So a
 * shard reads and holds about its own part of the snapshot, not the whole gateway's.
 *
 * How a shard uses it (load.ts): only for its first decision over what it listed. An object
 * the snapshot has is observed with that hash; one it lacks is taken as absent. Neither ever
 * becomes a write on its own: every write (deletions included) is re-read and decided again
 * under the object's lock (apply.ts), with a GET of the object, so a snapshot that is out of
 * date costs a lock and a read, never a wrong write or a deletion. Deletions need the API
 * server's word (deletionTimestamp with our finalizer, or a confirmed 404 with our record),
 * never the snapshot's (an object whose entry is in another shard's value, its id naming
 * another object, is one the snapshot lacks). A snapshot that is missing, expired or unreadable
 * (its shard's value or the rest), or lacks a gateway or a kind, is not used: the shard lists
 * that gateway itself (logged once per gateway).
 */

import { hashOf } from '../engine/hash.js';
import { defaultId } from '../engine/ids.js';
import type { ManagedKind } from '../engine/kind.js';
import type { GatewayObjectKind, JsonObject } from '../gateway/types.js';
import { describeError } from '../platform/errors.js';
import type { Logger } from '../platform/log.js';
import type { Store } from '../store/types.js';
import { inPart, partNamespaces, type ShardPart } from './shards.js';

export { SNAPSHOT_TTL_MS } from './shards.js';

/** One object as the snapshot keeps it. */
export interface SnapshotEntry {
  /** hashOf the whole object as the gateway listed it: compared with the record's observedWholeHash */
  readonly hash: string;
  /** the SHA-256 digest of its listed bytes (ListedObject.digest), where the client gave one: compared too */
  readonly digest?: string;
  /** the id fields statuses are built from (finalize.ts statusId), as the gateway had them */
  readonly ids: Readonly<Record<string, string>>;
}

const VERSION = 2;

/** The stored form: per gateway kind, id → [hash, id fields?, digest?]. */
type StoredEntry = [string, Record<string, string>?, string?];
interface StoredSnapshot {
  v: number;
  runId: string;
  gateway: string;
  /** the shard whose objects' entries it holds (its index), or the rest */
  part: number | 'rest';
  takenAt: string;
  kinds: Partial<Record<GatewayObjectKind, Record<string, StoredEntry>>>;
}

/** Where a tick's snapshot of `gateway` keeps the entries of shard `part` (its index), or those of no shard's object (`rest`). */
export function snapshotKey(runId: string, gateway: string, part: number | 'rest'): string {
  return `snapshot/${runId}/${gateway}/${part}`;
}

/** Which shard (an index) holds a gateway object by its id, as the tick's parts say (partIndex); undefined: none, the rest. */
export type Placement = (id: string) => number | undefined;

/**
 * The namespace and name a default id was made from (ids.ts `defaultId`), or undefined when
 * `id` is not one: its base64url text must decode to "namespace/name" and encode back to `id`
 * exactly. (Here rather than in ids.ts: only a tick's snapshot needs it, and the webhook
 * functions load ids.ts at start.)
 */
export function namedByDefaultId(id: string): { namespace: string; name: string } | undefined {
  const text = Buffer.from(id, 'base64url').toString('utf8');
  const cut = text.indexOf('/');
  if (cut <= 0 || cut === text.length - 1) return undefined;
  const namespace = text.slice(0, cut);
  const name = text.slice(cut + 1);
  return defaultId(namespace, name) === id ? { namespace, name } : undefined;
}

/**
 * Which of `parts` (an index) holds the object `namespace`/`name` (shards.ts `inPart`), asking
 * only the parts of its namespace (a tick's snapshot places every gateway object with it);
 * undefined: none.
 */
export function partIndex(parts: readonly ShardPart[]): (namespace: string, name: string) => number | undefined {
  const byNamespace = new Map<string, number[]>();
  parts.forEach((p, i) => {
    for (const ns of partNamespaces(p)) byNamespace.set(ns, [...(byNamespace.get(ns) ?? []), i]);
  });
  return (namespace, name) => byNamespace.get(namespace)?.find((i) => inPart(parts[i] as ShardPart, namespace, name));
}

/** A placement among a tick's `parts`: the shard holding the resource a default id names (partIndex), else the rest. */
export function placeByDefaultId(parts: readonly ShardPart[]): Placement {
  const partOf = partIndex(parts);
  return (id) => {
    const named = namedByDefaultId(id);
    return named === undefined ? undefined : partOf(named.namespace, named.name);
  };
}

/** The fields of a gateway object that statuses read (finalize.ts statusId): a kind's nativeIdField and nativeIdIfAny. */
function idFieldsOf(kinds: readonly ManagedKind[], kind: GatewayObjectKind): string[] {
  const fields = new Set<string>();
  for (const k of kinds) {
    if (k.gatewayKind !== kind) continue;
    if (k.nativeIdField !== undefined) fields.add(k.nativeIdField);
    if (k.nativeIdIfAny !== undefined) fields.add(k.nativeIdIfAny);
  }
  return [...fields];
}

/**
 * Builds one gateway's snapshot as its listings are read: each object is reduced to its entry
 * (hash and id fields) as it arrives (Gateway.list's visitor), so no listing is held whole.
 */
export class SnapshotWriter {
  /** per shard (by index), and the rest at `parts` */
  private readonly kinds: StoredSnapshot['kinds'][];
  private readonly kept = new Set<GatewayObjectKind>();
  private count = 0;

  constructor(
    private readonly takenAt: string,
    /** the kinds the snapshot is of (the registry's): which id fields each gateway kind keeps */
    private readonly managed: readonly ManagedKind[],
    /** how many shards the tick has, and which holds each id */
    private readonly parts: number,
    private readonly place: Placement,
  ) {
    this.kinds = Array.from({ length: parts + 1 }, () => ({}));
  }

  /**
   * A listing of `kind` in progress: `add` each object as it is read, then `keep` it. A listing
   * never kept (it failed part-way) is left out of the snapshot.
   */
  listing(kind: GatewayObjectKind): { add(id: string, body: JsonObject, digest?: string): void; keep(): void } {
    const fields = idFieldsOf(this.managed, kind);
    const out: Record<string, StoredEntry>[] = this.kinds.map(() => ({}));
    let size = 0;
    return {
      add: (id, body, digest) => {
        const ids: Record<string, string> = {};
        for (const f of fields) if (typeof body[f] === 'string') ids[f] = body[f];
        const hash = hashOf(body);
        const part = this.place(id);
        const into = out[part !== undefined && part >= 0 && part < this.parts ? part : this.parts] as Record<string, StoredEntry>;
        into[id] = digest !== undefined ? [hash, ids, digest] : Object.keys(ids).length > 0 ? [hash, ids] : [hash];
        size++;
      },
      keep: () => {
        out.forEach((entries, i) => {
          (this.kinds[i] as StoredSnapshot['kinds'])[kind] = entries;
        });
        this.kept.add(kind);
        this.count += size;
      },
    };
  }

  /** Objects kept so far. */
  get objects(): number {
    return this.count;
  }

  get kindsAdded(): GatewayObjectKind[] {
    return [...this.kept];
  }

  /** The stored form, for one target of this gateway (targets sharing a gateway share its listings): each shard's value and the rest's, with their keys. */
  texts(runId: string, gateway: string): { key: string; text: string }[] {
    return this.kinds.map((kinds, i) => {
      const part = i < this.parts ? i : 'rest';
      const stored: StoredSnapshot = { v: VERSION, runId, gateway, part, takenAt: this.takenAt, kinds };
      return { key: snapshotKey(runId, gateway, part), text: JSON.stringify(stored) };
    });
  }
}

/** A shard's view of its tick's snapshot: each gateway's (its own part's value and the rest's) read from the store at most once. */
export class SnapshotReader {
  private readonly loaded = new Map<string, Promise<StoredSnapshot[] | undefined>>();
  /** per gateway and kind: the entries, or null when the snapshot cannot say */
  private readonly maps = new Map<string, ReadonlyMap<string, SnapshotEntry> | null>();

  constructor(
    private readonly store: Store,
    readonly runId: string,
    /** the shard's index among its tick's */
    readonly part: number,
    private readonly log: Logger,
  ) {}

  /** What `gateway` held of `kind` at the snapshot; undefined when the snapshot cannot say (then list the gateway). */
  async observed(gateway: string, kind: GatewayObjectKind): Promise<ReadonlyMap<string, SnapshotEntry> | undefined> {
    const cacheKey = `${gateway}\u0000${kind}`;
    const cached = this.maps.get(cacheKey);
    if (cached !== undefined) return cached ?? undefined;
    const snaps = await this.read(gateway);
    const listings = snaps?.map((snap) => snap.kinds[kind]);
    if (!snaps || !listings || listings.some((entries) => entries === undefined)) {
      if (snaps && !this.maps.has(cacheKey)) this.log.info({ gateway, kind, runId: this.runId }, 'the snapshot has no listing of this kind: listing the gateway');
      this.maps.set(cacheKey, null);
      return undefined;
    }
    const map = new Map<string, SnapshotEntry>();
    for (const entries of listings) for (const [id, [hash, ids, digest]] of Object.entries(entries ?? {})) map.set(id, { hash, ids: ids ?? {}, ...(typeof digest === 'string' ? { digest } : {}) });
    this.maps.set(cacheKey, map);
    return map;
  }

  /** The shard's own value of `gateway`'s snapshot and the rest's; undefined when either cannot be read. */
  private read(gateway: string): Promise<StoredSnapshot[] | undefined> {
    let pending = this.loaded.get(gateway);
    if (!pending) {
      pending = Promise.all([this.part, 'rest' as const].map((part) => this.store.getBlob(snapshotKey(this.runId, gateway, part)))).then(
        (texts) => {
          const snaps = texts.map((text) => (text === null ? undefined : parse(text)));
          if (snaps.every((snap) => snap !== undefined)) return snaps as StoredSnapshot[];
          const why = texts.some((text) => text === null) ? 'missing or expired' : 'unreadable';
          this.log.warn({ gateway, runId: this.runId, why }, 'no snapshot of this gateway: the shard lists it itself');
          return undefined;
        },
        (err: unknown) => {
          this.log.warn({ gateway, runId: this.runId, err: describeError(err) }, 'the snapshot could not be read: the shard lists the gateway itself');
          return undefined;
        },
      );
      this.loaded.set(gateway, pending);
    }
    return pending;
  }
}

function parse(text: string): StoredSnapshot | undefined {
  try {
    const value = JSON.parse(text) as Partial<StoredSnapshot> | null;
    if (value?.v !== VERSION || typeof value.kinds !== 'object' || value.kinds === null) return undefined;
    for (const entries of Object.values(value.kinds)) {
      if (typeof entries !== 'object' || entries === null) return undefined;
      for (const e of Object.values(entries)) if (!Array.isArray(e) || typeof e[0] !== 'string') return undefined;
    }
    return value as StoredSnapshot;
  } catch {
    return undefined;
  }
}
