/**
 * Records, locks and dirty marks: the reconciler's only memory between runs.
 *
 * Two implementations share this contract and one test suite (test/integration/store-contract.test.ts):
 * RedisStore (lib/store/redis.ts) for any number of processes, MemoryStore
 * (lib/store/memory.ts) for a single process.
 *
 * Guarantees:
 * - getRecords reads all keys in one round trip and returns them in the order asked.
 * - putRecord is a compare-and-set on generation: it refuses (returns false) to replace a
 *   stored record whose generation is greater than the new one's; equal or lower stored
 *   generations are replaced.
 * - lock(key, token, ttl) either takes the lock ("acquired") or, atomically, marks the key
 *   dirty ("marked-dirty"); release(key, token) atomically either releases ("released"),
 *   keeps the lock and clears the mark when the key was marked dirty meanwhile ("dirty"),
 *   or reports the lock is no longer ours ("lost"). Together these make an event that
 *   arrives while its object is being reconciled impossible to lose.
 * - locks expire after their ttl, so a crashed holder blocks nobody for longer than that;
 *   renew(locks, ttl) extends those still held by their token (and a dirty mark on each past
 *   the lock's new end, so a holder that works long still sees the mark at release), in one
 *   round trip, and says which were still ours.
 * - acquireSlot(pool, holder, limit, ttl) takes a slot atomically: of concurrent callers, no
 *   more than `limit` hold slots of one pool at once; slots expire after ttl.
 * - claim(pool, holder, amount, limit, ttl) takes `amount` of an allowance atomically: the
 *   claims of one pool never add up to more than `limit`; a holder's new claim replaces its
 *   own earlier one (a redelivered shard does not count twice), a refused one leaves it as it
 *   was; the pool is forgotten ttl after its last granted claim.
 * - every record's `uses` (the Secrets, ConfigMaps and certificates it was built from) is
 *   indexed as one atomic step with putRecord and deleteRecord: recordsUsing(uses) answers, in
 *   one round trip, the keys of the records whose current `uses` name each one, so an event
 *   about a Secret finds its APIs without a scan of every record.
 * - owners/claimOwner/releaseOwner keep who owns each gateway object (key: gateway, id space and
 *   id, lib/engine/owners.ts): owners reads many in one round trip; claimOwner is atomic (of
 *   two concurrent claims of a free key exactly one wins) and answers the owner after it, the
 *   claimant when the key was free or already its resource's (a resource recreated under the
 *   same name takes its new uid); releaseOwner removes the key only while its resource owns it.
 * - own/disown/owned keep, per pool (a gateway), the ids of what we created there and may
 *   remove again (certificates we uploaded); nothing else is ever removed as ours.
 * - markSeen(ids, ttl) marks each id and says which were new, atomically per id, in one round
 *   trip: of two concurrent callers marking the same id, exactly one sees it as new. Marks
 *   expire after ttl (used to drop webhook deliveries a sender repeats).
 * - putBlob(key, value, ttl) keeps one opaque value (replacing any) until ttl passed; getBlob
 *   answers it, or null once it expired or when there is none (a sharded full run's snapshot
 *   of a gateway, lib/scale/snapshot.ts).
 * - batches: lockAll, releaseAll, forceReleaseAll, putRecords and claimOwners do what lock,
 *   release, forceRelease, putRecord and claimOwner do, for many keys in ONE round trip, each
 *   key as atomically as its single call (a batch is not a transaction: of two concurrent
 *   lockAll's over overlapping keys, each key is acquired by exactly one; a put refused for an
 *   older generation refuses that record only), answering per entry in the order given. The
 *   engine uses these (per chunk of objects); the single calls stay for single objects.
 * - acquireSlots(pool, holder, want, limit, ttl) is a lease of several slots for one holder in
 *   one round trip: after it the holder holds min(want, what it held + what is free) slots, all
 *   of them renewed to ttl (so calling it again with the count held renews the lease, a smaller
 *   want gives the excess back); the slots of every holder of a pool, acquireSlot's included,
 *   never exceed `limit`. releaseSlots(pool, holder) gives back all the holder's slots.
 * Throws StoreUnavailableError when the backing store cannot be reached.
 */

export type SyncResult =
  /** written and confirmed on the gateway */
  | 'synced'
  /** written, but the gateway reports some field differently from what we sent */
  | 'diverged'
  /** written, not yet visible on the gateway (reload lost or slow) */
  | 'pending'
  /** a transient failure; retried with backoff */
  | 'failed'
  /** the gateway or our validation rejected the spec; retried only when the spec changes */
  | 'invalid'
  /** not written: waits for a dependency (a policy's API), or a deletion is held by references */
  | 'waiting';

export interface SyncRecord {
  /** "<Kind>/<namespace>/<name>" */
  key: string;
  /** the gateway (default, or an OperatorContext's) the object was last written to; absent: "default" */
  gateway?: string;
  /** policies: the ApiDefinitions (namespace/name) the last sync linked to */
  links?: string[];
  /** gateway object id (api_id, policy id) */
  id: string;
  /** metadata.generation of the custom resource when this record was written */
  generation: number;
  /** hash of the payload we last sent */
  desiredHash: string;
  /**
   * managed hash (lib/engine/hash.ts) of what the gateway reported after our last confirmed
   * write: of the fields we sent; "" when unknown. (Records from before managed hashes hold a
   * hash of the whole report here.)
   */
  observedHash: string;
  /**
   * the whole of that report's identity: the SHA-256 digest of its bytes where the read-back
   * listed it, else its hashOf; what a sharded full run's snapshot of the gateway
   * (lib/scale/snapshot.ts) is compared with; absent on records from before it
   */
  observedWholeHash?: string;
  result: SyncResult;
  error?: string;
  /** consecutive failures, for backoff */
  failures: number;
  /** epoch ms before which scheduled runs leave a failed object alone */
  retryAt?: number;
  /** ISO time of the last transaction */
  time: string;
  /**
   * why a Failed object was refused before any write: a reference no ReferenceGrant opens or a
   * context URL not permitted (RefNotPermitted, UrlNotPermitted: lib/gateway/targets.ts), or
   * ownership (IdClaimed, AdoptionNotPermitted, ListenPathClash: lib/engine/owners.ts); the
   * reason its conditions and Warning Event carry
   */
  refusal?: string;
  /**
   * what the object was built from, as "Secret/<ns>/<name>", "ConfigMap/<ns>/<name>",
   * "Certificate/<gateway>/<id>": indexed by the store (recordsUsing), so a change of one finds
   * the objects to run, and a certificate no record uses any more can be removed
   */
  uses?: string[];
  /** the resource's CRD prunes status.conditions (Tyk Operator's): learnt from a status patch's answer */
  conditionsPruned?: true;
  /**
   * Ingresses: per generated ApiDefinition, hashes of what we last wrote of it and of what the
   * API server answered (lib/kinds/ingress/apis.ts), so a server-side normalisation is not
   * rewritten every run
   */
  generated?: Record<string, { sent: string; seen: string }>;
}

/** The resource owning a gateway object: "<Kind>/<namespace>/<name>" and its metadata.uid. */
export interface Owner {
  ref: string;
  uid: string;
}

export type LockOutcome = 'acquired' | 'marked-dirty';
export type ReleaseOutcome = 'released' | 'dirty' | 'lost';

/** A lock to take, give back or renew: the key and the holder's token. */
export interface LockEntry {
  readonly key: string;
  readonly token: string;
}

/** An owner claim of claimOwners: the key (gateway, id space, id) and its claimant. */
export interface OwnerClaimEntry {
  readonly key: string;
  readonly owner: Owner;
}

export interface Store {
  /** Which implementation, for /readyz and logs: "redis" or "memory". */
  readonly kind: 'redis' | 'memory';
  getRecords(keys: readonly string[]): Promise<(SyncRecord | null)[]>;
  putRecord(record: SyncRecord): Promise<boolean>;
  /** putRecord() of each record, in one round trip; true for each written. */
  putRecords(records: readonly SyncRecord[]): Promise<boolean[]>;
  deleteRecord(key: string): Promise<void>;
  /** Keys of all records whose key starts with `prefix` (e.g. "default/ApiDefinition/"). */
  listRecordKeys(prefix: string): Promise<string[]>;
  lock(key: string, token: string, ttlMs: number): Promise<LockOutcome>;
  release(key: string, token: string): Promise<ReleaseOutcome>;
  /** Extends each lock still held by its token to ttlMs from now; true for each that was. */
  renew(locks: readonly { key: string; token: string }[], ttlMs: number): Promise<boolean[]>;
  /** Releases regardless of dirty marks (used when giving up); true if it was ours. */
  forceRelease(key: string, token: string): Promise<boolean>;
  /** lock() of each entry, in one round trip; the outcomes in the order given. */
  lockAll(entries: readonly LockEntry[], ttlMs: number): Promise<LockOutcome[]>;
  /** release() of each entry, in one round trip. */
  releaseAll(entries: readonly LockEntry[]): Promise<ReleaseOutcome[]>;
  /** forceRelease() of each entry, in one round trip. */
  forceReleaseAll(entries: readonly LockEntry[]): Promise<boolean[]>;
  /**
   * Takes one of `limit` slots of `pool` for `holder` until released or ttlMs passed (so a
   * dead holder frees its slot); false when all are taken. Shared by every process on the
   * store: the write limit per gateway.
   */
  acquireSlot(pool: string, holder: string, limit: number, ttlMs: number): Promise<boolean>;
  releaseSlot(pool: string, holder: string): Promise<void>;
  /**
   * A lease of up to `want` of the `limit` slots of `pool` for `holder`, in one round trip:
   * keeps (and renews to ttlMs) what the holder holds, takes free ones up to `want`, gives back
   * any beyond `want`; answers how many the holder holds now (0: none free).
   */
  acquireSlots(pool: string, holder: string, want: number, limit: number, ttlMs: number): Promise<number>;
  /** Gives back every slot `holder` holds in `pool` (acquireSlots'); one round trip. */
  releaseSlots(pool: string, holder: string): Promise<void>;
  /**
   * Claims `amount` of the allowance `limit` of `pool` for `holder`, replacing the holder's own
   * earlier claim; false, and nothing changed, when the others' claims and this one would add
   * up to more than `limit`. Shared by every process on the store: MAX_DELETES_PER_RUN across
   * the shards of one tick.
   */
  claim(pool: string, holder: string, amount: number, limit: number, ttlMs: number): Promise<boolean>;
  /** For each of `uses`, the keys of the records whose `uses` name it (sorted); one round trip. */
  recordsUsing(uses: readonly string[]): Promise<string[][]>;
  /** The owner of each key (null: none), in the order asked; one round trip. */
  owners(keys: readonly string[]): Promise<(Owner | null)[]>;
  /**
   * Makes `owner` the owner of `key` when nobody owns it or its resource (`ref`) does; answers
   * the owner after the call (someone else's when it was taken). Atomic.
   */
  claimOwner(key: string, owner: Owner): Promise<Owner>;
  /** claimOwner() of each claim, in one round trip; the owner after each, in the order given. */
  claimOwners(claims: readonly OwnerClaimEntry[]): Promise<Owner[]>;
  /** Removes the owner of `key` when it is `ref`'s resource; true when it was. Atomic. */
  releaseOwner(key: string, ref: string): Promise<boolean>;
  /** Remembers that we created `ids` in `pool` (a gateway's certificate store). */
  own(pool: string, ids: readonly string[]): Promise<void>;
  /** Forgets `id` as ours in `pool` (after removing it there). */
  disown(pool: string, id: string): Promise<void>;
  /** The ids we created in `pool` and have not disowned (sorted). */
  owned(pool: string): Promise<string[]>;
  /** Marks each id as seen for ttlMs; true for the ids that were not marked already. */
  markSeen(ids: readonly string[], ttlMs: number): Promise<boolean[]>;
  /** Keeps `value` under `key` for ttlMs, replacing what was there. */
  putBlob(key: string, value: string, ttlMs: number): Promise<void>;
  /** The value put under `key`, or null when there is none or its ttl passed. */
  getBlob(key: string): Promise<string | null>;
  ping(): Promise<void>;
  /**
   * False once the connection is known to be gone (Redis closed it, or the store was closed);
   * no round trip. Runs check it before each gateway write, so a store lost mid-run stops
   * the writes whose records could not be saved.
   */
  reachable(): boolean;
  close(): Promise<void>;
}
