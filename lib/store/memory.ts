/**
 * MemoryStore: the Store contract (lib/store/types.ts) inside one process, for running
 * without Redis. Same semantics as RedisStore, checked by the same contract suite.
 *
 * Guarantees: every operation is atomic (single-threaded, no await inside an operation; a
 * batch, lockAll, putRecords and the others, runs its single operation per entry in one go);
 * records are copied in and out through JSON, exactly as RedisStore stores them, so callers
 * never alias stored state and an `undefined` optional field reads back as absent; locks and
 * dirty marks expire by the injected Clock, with Redis's boundary (alive while now <= expiry);
 * a dirty mark outlives the lock it was set against; after close() every operation throws
 * StoreUnavailableError.
 * Assumes: a single process (nothing is shared between processes or survives a restart);
 * ttlMs is a positive integer. Expired entries are dropped lazily, when their key is touched,
 * so memory is bounded by the number of distinct keys.
 */
import { type Clock, systemClock } from '../platform/clock.js';
import { StoreUnavailableError } from '../platform/errors.js';
import type { LockEntry, LockOutcome, Owner, OwnerClaimEntry, ReleaseOutcome, Store, SyncRecord } from './types.js';

interface StoredRecord {
  json: string;
  generation: number;
}

interface Lock {
  token: string;
  expiresAt: number;
}

export interface MemoryStoreOptions {
  clock?: Clock;
}

export class MemoryStore implements Store {
  readonly kind = 'memory' as const;
  private readonly clock: Clock;
  private readonly records = new Map<string, StoredRecord>();
  private readonly locks = new Map<string, Lock>();
  /** key → expiry (epoch ms) */
  private readonly dirty = new Map<string, number>();
  private readonly seen = new Map<string, number>();
  /** key → value and expiry (epoch ms) */
  private readonly blobs = new Map<string, { value: string; expiresAt: number }>();
  /** pool → holder → expiry (epoch ms) */
  private readonly slots = new Map<string, Map<string, number>>();
  /** claim(): per pool, each holder's claimed amount, and when the pool is forgotten */
  private readonly claims = new Map<string, { until: number; claims: Map<string, number> }>();
  /** use → keys of the records whose `uses` name it */
  private readonly index = new Map<string, Set<string>>();
  /** gateway object key → its owner */
  private readonly owning = new Map<string, Owner>();
  /** pool → ids we created there */
  private readonly ours = new Map<string, Set<string>>();
  private closed = false;

  constructor(options: MemoryStoreOptions = {}) {
    this.clock = options.clock ?? systemClock;
  }

  async getRecords(keys: readonly string[]): Promise<(SyncRecord | null)[]> {
    this.assertOpen('getRecords');
    return keys.map((key) => {
      const stored = this.records.get(key);
      return stored === undefined ? null : (JSON.parse(stored.json) as SyncRecord);
    });
  }

  async putRecord(record: SyncRecord): Promise<boolean> {
    this.assertOpen('putRecord');
    const stored = this.records.get(record.key);
    if (stored !== undefined && stored.generation > record.generation) return false;
    this.unindex(record.key);
    this.records.set(record.key, { json: JSON.stringify(record), generation: record.generation });
    for (const use of new Set(record.uses ?? [])) {
      const keys = this.index.get(use) ?? new Set<string>();
      this.index.set(use, keys.add(record.key));
    }
    return true;
  }

  async putRecords(records: readonly SyncRecord[]): Promise<boolean[]> {
    this.assertOpen('putRecords');
    return Promise.all(records.map((r) => this.putRecord(r)));
  }

  async deleteRecord(key: string): Promise<void> {
    this.assertOpen('deleteRecord');
    this.unindex(key);
    this.records.delete(key);
  }

  async recordsUsing(uses: readonly string[]): Promise<string[][]> {
    this.assertOpen('recordsUsing');
    return uses.map((use) => [...(this.index.get(use) ?? [])].sort());
  }

  async owners(keys: readonly string[]): Promise<(Owner | null)[]> {
    this.assertOpen('owners');
    return keys.map((key) => {
      const owner = this.owning.get(key);
      return owner === undefined ? null : { ...owner };
    });
  }

  async claimOwner(key: string, owner: Owner): Promise<Owner> {
    this.assertOpen('claimOwner');
    const current = this.owning.get(key);
    if (current !== undefined && current.ref !== owner.ref) return { ...current };
    this.owning.set(key, { ref: owner.ref, uid: owner.uid });
    return { ref: owner.ref, uid: owner.uid };
  }

  async claimOwners(claims: readonly OwnerClaimEntry[]): Promise<Owner[]> {
    this.assertOpen('claimOwners');
    return Promise.all(claims.map((c) => this.claimOwner(c.key, c.owner)));
  }

  async releaseOwner(key: string, ref: string): Promise<boolean> {
    this.assertOpen('releaseOwner');
    if (this.owning.get(key)?.ref !== ref) return false;
    this.owning.delete(key);
    return true;
  }

  async own(pool: string, ids: readonly string[]): Promise<void> {
    this.assertOpen('own');
    const set = this.ours.get(pool) ?? new Set<string>();
    for (const id of ids) set.add(id);
    this.ours.set(pool, set);
  }

  async disown(pool: string, id: string): Promise<void> {
    this.assertOpen('disown');
    this.ours.get(pool)?.delete(id);
  }

  async owned(pool: string): Promise<string[]> {
    this.assertOpen('owned');
    return [...(this.ours.get(pool) ?? [])].sort();
  }

  /** Drops the stored record's uses from the index. */
  private unindex(key: string): void {
    const stored = this.records.get(key);
    if (stored === undefined) return;
    const old = JSON.parse(stored.json) as SyncRecord;
    for (const use of old.uses ?? []) {
      const keys = this.index.get(use);
      keys?.delete(key);
      if (keys?.size === 0) this.index.delete(use);
    }
  }

  async listRecordKeys(prefix: string): Promise<string[]> {
    this.assertOpen('listRecordKeys');
    return [...this.records.keys()].filter((key) => key.startsWith(prefix)).sort();
  }

  async lock(key: string, token: string, ttlMs: number): Promise<LockOutcome> {
    this.assertOpen('lock');
    const now = this.clock.now();
    const held = this.liveLock(key, now);
    if (!held) {
      this.locks.set(key, { token, expiresAt: now + ttlMs });
      return 'acquired';
    }
    // The mark must outlive the holder's lock (and never shrink), so the holder's release sees it.
    const expiresAt = Math.max(now + 2 * ttlMs, held.expiresAt + ttlMs, this.liveDirty(key, now) ?? 0);
    this.dirty.set(key, expiresAt);
    return 'marked-dirty';
  }

  async release(key: string, token: string): Promise<ReleaseOutcome> {
    this.assertOpen('release');
    const now = this.clock.now();
    if (this.liveLock(key, now)?.token !== token) return 'lost';
    if (this.liveDirty(key, now) !== undefined) {
      this.dirty.delete(key);
      return 'dirty';
    }
    this.locks.delete(key);
    return 'released';
  }

  async lockAll(entries: readonly LockEntry[], ttlMs: number): Promise<LockOutcome[]> {
    this.assertOpen('lockAll');
    return Promise.all(entries.map((e) => this.lock(e.key, e.token, ttlMs)));
  }

  async releaseAll(entries: readonly LockEntry[]): Promise<ReleaseOutcome[]> {
    this.assertOpen('releaseAll');
    return Promise.all(entries.map((e) => this.release(e.key, e.token)));
  }

  async forceReleaseAll(entries: readonly LockEntry[]): Promise<boolean[]> {
    this.assertOpen('forceReleaseAll');
    return Promise.all(entries.map((e) => this.forceRelease(e.key, e.token)));
  }

  async renew(locks: readonly { key: string; token: string }[], ttlMs: number): Promise<boolean[]> {
    this.assertOpen('renew');
    const now = this.clock.now();
    return locks.map(({ key, token }) => {
      const held = this.liveLock(key, now);
      if (held?.token !== token) return false;
      held.expiresAt = now + ttlMs;
      const mark = this.liveDirty(key, now);
      if (mark !== undefined && mark < now + 2 * ttlMs) this.dirty.set(key, now + 2 * ttlMs);
      return true;
    });
  }

  async acquireSlot(pool: string, holder: string, limit: number, ttlMs: number): Promise<boolean> {
    this.assertOpen('acquireSlot');
    const now = this.clock.now();
    const slots = this.liveSlots(pool, now);
    if (slots.size >= limit) return false;
    slots.set(holder, now + ttlMs);
    return true;
  }

  async releaseSlot(pool: string, holder: string): Promise<void> {
    this.assertOpen('releaseSlot');
    this.slots.get(pool)?.delete(holder);
  }

  async acquireSlots(pool: string, holder: string, want: number, limit: number, ttlMs: number): Promise<number> {
    this.assertOpen('acquireSlots');
    const now = this.clock.now();
    const slots = this.liveSlots(pool, now);
    const mine = [...slots.keys()].filter((member) => member.startsWith(`${holder}#`));
    for (const member of mine.slice(want)) slots.delete(member);
    let held = Math.min(mine.length, want);
    for (const member of mine.slice(0, held)) slots.set(member, now + ttlMs);
    for (let i = 1; held < want && slots.size < limit; i++) {
      const member = `${holder}#${i}`;
      if (slots.has(member)) continue;
      slots.set(member, now + ttlMs);
      held++;
    }
    return held;
  }

  async releaseSlots(pool: string, holder: string): Promise<void> {
    this.assertOpen('releaseSlots');
    const slots = this.slots.get(pool);
    for (const member of slots?.keys() ?? []) if (member.startsWith(`${holder}#`)) slots?.delete(member);
  }

  /** The live slots of `pool` (member → expiry): acquireSlot's holders, and acquireSlots' `<holder>#<n>`. */
  private liveSlots(pool: string, now: number): Map<string, number> {
    const slots = this.slots.get(pool) ?? new Map<string, number>();
    for (const [h, until] of slots) if (until <= now) slots.delete(h);
    this.slots.set(pool, slots);
    return slots;
  }

  async claim(pool: string, holder: string, amount: number, limit: number, ttlMs: number): Promise<boolean> {
    this.assertOpen('claim');
    const now = this.clock.now();
    const live = this.claims.get(pool);
    const claims = live && live.until > now ? live.claims : new Map<string, number>();
    let others = 0;
    for (const [h, n] of claims) if (h !== holder) others += n;
    if (others + amount > limit) return false;
    claims.set(holder, amount);
    this.claims.set(pool, { until: now + ttlMs, claims });
    return true;
  }

  reachable(): boolean {
    return !this.closed;
  }

  async forceRelease(key: string, token: string): Promise<boolean> {
    this.assertOpen('forceRelease');
    if (this.liveLock(key, this.clock.now())?.token !== token) return false;
    this.locks.delete(key);
    return true;
  }

  async markSeen(ids: readonly string[], ttlMs: number): Promise<boolean[]> {
    this.assertOpen('markSeen');
    const now = this.clock.now();
    if (this.seen.size > 10_000) for (const [id, at] of this.seen) if (at < now) this.seen.delete(id);
    return ids.map((id) => {
      const expiresAt = this.seen.get(id);
      if (expiresAt !== undefined && now <= expiresAt) return false;
      this.seen.set(id, now + ttlMs);
      return true;
    });
  }

  async putBlob(key: string, value: string, ttlMs: number): Promise<void> {
    this.assertOpen('putBlob');
    const now = this.clock.now();
    for (const [k, b] of this.blobs) if (now > b.expiresAt) this.blobs.delete(k);
    this.blobs.set(key, { value, expiresAt: now + ttlMs });
  }

  async getBlob(key: string): Promise<string | null> {
    this.assertOpen('getBlob');
    const blob = this.blobs.get(key);
    if (blob === undefined) return null;
    if (this.clock.now() <= blob.expiresAt) return blob.value;
    this.blobs.delete(key);
    return null;
  }

  async ping(): Promise<void> {
    this.assertOpen('ping');
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  private assertOpen(operation: string): void {
    if (this.closed) throw new StoreUnavailableError(`memory store ${operation} failed: the store is closed`, { context: { operation } });
  }

  /** The lock on `key` if it has not expired; drops it if it has. */
  private liveLock(key: string, now: number): Lock | undefined {
    const lock = this.locks.get(key);
    if (lock === undefined || now <= lock.expiresAt) return lock;
    this.locks.delete(key);
    return undefined;
  }

  /** The expiry of `key`'s dirty mark if it has not expired; drops it if it has. */
  private liveDirty(key: string, now: number): number | undefined {
    const expiresAt = this.dirty.get(key);
    if (expiresAt === undefined || now <= expiresAt) return expiresAt;
    this.dirty.delete(key);
    return undefined;
  }
}
