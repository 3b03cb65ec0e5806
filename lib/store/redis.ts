/**
 * RedisStore: the Store contract (lib/store/types.ts) on Redis, shared by any number of
 * processes.
 *
 * Layout: records `<prefix>rec:<key>` (JSON strings, no expiry), locks `<prefix>lock:<key>`
 * (token, PX ttl), dirty marks `<prefix>dirty:<key>` ("1", PX), write slots per gateway
 * `<prefix>slots:<pool>` (a sorted set: holder → expiry on the server's clock), the index of
 * records' uses `<prefix>uses:<use>` (a set of record keys, kept by the record scripts), what
 * we created on a gateway `<prefix>owned:<pool>` (a set of ids), values with a ttl
 * `<prefix>blob:<key>` (PX). Every compare-then-write is
 * one Lua script, so it is atomic on the server; getRecords is one MGET; listRecordKeys
 * pages with SCAN, never KEYS.
 *
 * Guarantees: every failure of the client or the server (refused, closed, timed out, a
 * reply error) surfaces as StoreUnavailableError naming the operation, with the original
 * error as cause (a scrubbed copy when the client has a password), and never the password;
 * an unreadable record reads as
 * null (and may be overwritten) rather than failing the whole batch. A dirty mark is set to
 * outlive the lock it was set against.
 * Clients from createRedisStore fail fast instead of queueing: no offline queue, no resend
 * after a reconnect, a bounded connect and command time; a command that timed out may
 * still have run on the server (locks expire; records are generation-checked).
 * Assumes: one Redis >= 6 (or its primary), not Redis Cluster: a script touches a lock and
 * its dirty mark together, and the record scripts touch the index sets they compute; an injected client does not use ioredis' keyPrefix (use
 * `prefix`) and either connects lazily or keeps its offline queue on; ttlMs is a positive
 * integer.
 */
import { Redis } from 'ioredis';
import { ConfigError, StoreUnavailableError } from '../errors.js';
import type { LockOutcome, ReleaseOutcome, Store, SyncRecord } from './types.js';

export interface RedisStoreOptions {
  /** An ioredis client; the store owns it from now on (close() quits it). */
  redis: Redis;
  /** Prepended to every key; default "gr:". */
  prefix?: string;
}

export interface CreateRedisStoreOptions {
  prefix?: string;
  /** Bound on establishing a connection; default 2000 ms. */
  connectTimeoutMs?: number;
  /** Bound on any single command; default 1500 ms. */
  commandTimeoutMs?: number;
  /** Connection errors the client reports in the background (already scrubbed). */
  onError?: (error: StoreUnavailableError) => void;
}

const DEFAULT_PREFIX = 'gr:';
const SCAN_COUNT = 1000;

/**
 * The `uses` index of one record, as Lua: drops the stored record's uses (ARGV index prefix,
 * member) and adds the new record's. Shared by putRecord and deleteRecord.
 */
const UNINDEX = `
local function uses_of(json)
  if not json then return nil end
  local ok, record = pcall(cjson.decode, json)
  if ok and type(record) == 'table' and type(record.uses) == 'table' then return record.uses end
  return nil
end
local function unindex(stored, prefix, member)
  for _, use in ipairs(uses_of(stored) or {}) do redis.call('SREM', prefix .. use, member) end
end`;

/**
 * KEYS[1] record; ARGV json, generation, index prefix, record key. 1 = written (and its uses
 * indexed), 0 = a newer generation is stored.
 */
const PUT_RECORD = `${UNINDEX}
local stored = redis.call('GET', KEYS[1])
if stored then
  local ok, record = pcall(cjson.decode, stored)
  if ok and type(record) == 'table' and type(record.generation) == 'number'
     and record.generation > tonumber(ARGV[2]) then
    return 0
  end
end
unindex(stored, ARGV[3], ARGV[4])
for _, use in ipairs(uses_of(ARGV[1]) or {}) do redis.call('SADD', ARGV[3] .. use, ARGV[4]) end
redis.call('SET', KEYS[1], ARGV[1])
return 1`;

/** KEYS[1] record; ARGV index prefix, record key. Deletes the record and its uses from the index. */
const DELETE_RECORD = `${UNINDEX}
unindex(redis.call('GET', KEYS[1]), ARGV[1], ARGV[2])
redis.call('DEL', KEYS[1])
return 1`;

/** KEYS lock, dirty; ARGV token, ttl. Takes the lock, or marks dirty past the lock's end. */
const LOCK = `
local ttl = tonumber(ARGV[2])
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ttl) then
  return 'acquired'
end
local keep = math.max(ttl * 2, redis.call('PTTL', KEYS[1]) + ttl, redis.call('PTTL', KEYS[2]))
redis.call('SET', KEYS[2], '1', 'PX', keep)
return 'marked-dirty'`;

/** KEYS lock, dirty; ARGV token. */
const RELEASE = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 'lost'
end
if redis.call('EXISTS', KEYS[2]) == 1 then
  redis.call('DEL', KEYS[2])
  return 'dirty'
end
redis.call('DEL', KEYS[1])
return 'released'`;

/** KEYS lock, dirty; ARGV token, ttl. Extends a lock still ours, and a dirty mark on it past the lock's new end. */
const RENEW = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
local ttl = tonumber(ARGV[2])
redis.call('PEXPIRE', KEYS[1], ttl)
local mark = redis.call('PTTL', KEYS[2])
if mark > 0 and mark < ttl * 2 then
  redis.call('PEXPIRE', KEYS[2], ttl * 2)
end
return 1`;

/** KEYS pool; ARGV holder, limit, ttl. Drops expired slots (on the server's clock), then takes one if one is free. */
const ACQUIRE_SLOT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then
  return 0
end
redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
if redis.call('PTTL', KEYS[1]) < ttl then
  redis.call('PEXPIRE', KEYS[1], ttl)
end
return 1`;

/** KEYS lock; ARGV token. */
const FORCE_RELEASE = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1])
return 1`;

/** The commands defineCommand adds to the client (ioredis cannot type them). */
interface ScriptCommands {
  grPutRecord(record: string, json: string, generation: number, indexPrefix: string, member: string): Promise<number>;
  grDeleteRecord(record: string, indexPrefix: string, member: string): Promise<number>;
  grLock(lock: string, dirty: string, token: string, ttlMs: number): Promise<LockOutcome>;
  grRelease(lock: string, dirty: string, token: string): Promise<ReleaseOutcome>;
  grForceRelease(lock: string, token: string): Promise<number>;
  grRenew(lock: string, dirty: string, token: string, ttlMs: number): Promise<number>;
  grAcquireSlot(pool: string, holder: string, limit: number, ttlMs: number): Promise<number>;
}

export class RedisStore implements Store {
  readonly kind = 'redis' as const;
  private readonly redis: Redis;
  private readonly scripts: ScriptCommands;
  private readonly prefix: string;
  private connecting: Promise<void> | undefined;

  constructor(options: RedisStoreOptions) {
    if (options.redis.options.keyPrefix) {
      const message = 'RedisStore takes its own prefix option, not an ioredis keyPrefix (SCAN patterns are not prefixed)';
      throw new ConfigError([{ setting: 'keyPrefix', message }]);
    }
    this.redis = options.redis;
    this.prefix = options.prefix ?? DEFAULT_PREFIX;
    this.redis.defineCommand('grPutRecord', { numberOfKeys: 1, lua: PUT_RECORD });
    this.redis.defineCommand('grDeleteRecord', { numberOfKeys: 1, lua: DELETE_RECORD });
    this.redis.defineCommand('grLock', { numberOfKeys: 2, lua: LOCK });
    this.redis.defineCommand('grRelease', { numberOfKeys: 2, lua: RELEASE });
    this.redis.defineCommand('grForceRelease', { numberOfKeys: 1, lua: FORCE_RELEASE });
    this.redis.defineCommand('grRenew', { numberOfKeys: 2, lua: RENEW });
    this.redis.defineCommand('grAcquireSlot', { numberOfKeys: 1, lua: ACQUIRE_SLOT });
    this.scripts = this.redis as unknown as ScriptCommands;
  }

  getRecords(keys: readonly string[]): Promise<(SyncRecord | null)[]> {
    return this.run('getRecords', async () => {
      if (keys.length === 0) return [];
      const values = await this.redis.mget(keys.map((key) => this.recordKey(key)));
      return values.map(parseRecord);
    });
  }

  putRecord(record: SyncRecord): Promise<boolean> {
    return this.run('putRecord', async () => {
      const written = await this.scripts.grPutRecord(this.recordKey(record.key), JSON.stringify(record), record.generation, this.usesKey(''), record.key);
      return written === 1;
    });
  }

  deleteRecord(key: string): Promise<void> {
    return this.run('deleteRecord', async () => {
      await this.scripts.grDeleteRecord(this.recordKey(key), this.usesKey(''), key);
    });
  }

  recordsUsing(uses: readonly string[]): Promise<string[][]> {
    return this.run('recordsUsing', async () => {
      if (uses.length === 0) return [];
      const pipeline = this.redis.pipeline();
      for (const use of uses) pipeline.smembers(this.usesKey(use));
      const results = (await pipeline.exec()) ?? [];
      return results.map(([err, reply]) => {
        if (err) throw err;
        return [...(reply as string[])].sort();
      });
    });
  }

  own(pool: string, ids: readonly string[]): Promise<void> {
    return this.run('own', async () => {
      if (ids.length > 0) await this.redis.sadd(this.ownedKey(pool), ...ids);
    });
  }

  disown(pool: string, id: string): Promise<void> {
    return this.run('disown', async () => {
      await this.redis.srem(this.ownedKey(pool), id);
    });
  }

  owned(pool: string): Promise<string[]> {
    return this.run('owned', async () => (await this.redis.smembers(this.ownedKey(pool))).sort());
  }

  listRecordKeys(prefix: string): Promise<string[]> {
    return this.run('listRecordKeys', async () => {
      const base = this.recordKey('');
      const pattern = `${escapeGlob(base + prefix)}*`;
      const found = new Set<string>();
      let cursor = '0';
      do {
        const [next, keys] = await this.redis.scan(cursor, 'MATCH', pattern, 'COUNT', SCAN_COUNT);
        cursor = next;
        for (const key of keys) found.add(key.slice(base.length));
      } while (cursor !== '0');
      return [...found].sort();
    });
  }

  lock(key: string, token: string, ttlMs: number): Promise<LockOutcome> {
    return this.run('lock', () => this.scripts.grLock(this.lockKey(key), this.dirtyKey(key), token, ttlMs));
  }

  release(key: string, token: string): Promise<ReleaseOutcome> {
    return this.run('release', () => this.scripts.grRelease(this.lockKey(key), this.dirtyKey(key), token));
  }

  renew(locks: readonly { key: string; token: string }[], ttlMs: number): Promise<boolean[]> {
    return this.run('renew', async () => {
      if (locks.length === 0) return [];
      const pipeline = this.redis.pipeline() as unknown as { grRenew(...a: unknown[]): void; exec(): Promise<[Error | null, unknown][] | null> };
      for (const l of locks) pipeline.grRenew(this.lockKey(l.key), this.dirtyKey(l.key), l.token, ttlMs);
      const results = (await pipeline.exec()) ?? [];
      return results.map(([err, reply]) => {
        if (err) throw err;
        return reply === 1;
      });
    });
  }

  acquireSlot(pool: string, holder: string, limit: number, ttlMs: number): Promise<boolean> {
    return this.run('acquireSlot', async () => (await this.scripts.grAcquireSlot(this.slotsKey(pool), holder, limit, ttlMs)) === 1);
  }

  releaseSlot(pool: string, holder: string): Promise<void> {
    return this.run('releaseSlot', async () => {
      await this.redis.zrem(this.slotsKey(pool), holder);
    });
  }

  forceRelease(key: string, token: string): Promise<boolean> {
    return this.run('forceRelease', async () => (await this.scripts.grForceRelease(this.lockKey(key), token)) === 1);
  }

  markSeen(ids: readonly string[], ttlMs: number): Promise<boolean[]> {
    return this.run('markSeen', async () => {
      if (ids.length === 0) return [];
      const pipeline = this.redis.pipeline();
      for (const id of ids) pipeline.set(this.seenKey(id), '1', 'PX', ttlMs, 'NX');
      const results = (await pipeline.exec()) ?? [];
      return results.map(([err, reply]) => {
        if (err) throw err;
        return reply === 'OK';
      });
    });
  }

  putBlob(key: string, value: string, ttlMs: number): Promise<void> {
    return this.run('putBlob', async () => {
      await this.redis.set(this.blobKey(key), value, 'PX', ttlMs);
    });
  }

  getBlob(key: string): Promise<string | null> {
    return this.run('getBlob', () => this.redis.get(this.blobKey(key)));
  }

  ping(): Promise<void> {
    return this.run('ping', async () => {
      await this.redis.ping();
    });
  }

  /** Quits politely when connected, then makes sure the client stops reconnecting. Never throws. */
  reachable(): boolean {
    // 'wait' (not connected yet: lazyConnect), 'connecting', 'connect', 'ready' may all still work
    return !['close', 'reconnecting', 'end'].includes(this.redis.status);
  }

  async close(): Promise<void> {
    if (this.redis.status === 'ready') await Promise.allSettled([this.redis.quit()]);
    this.redis.disconnect();
  }

  /**
   * A StoreUnavailableError for `operation` caused by `err`, with the password scrubbed.
   * When the client has a password, the cause is a copy holding only the scrubbed text:
   * the driver's errors can carry the password outside their message (a failed handshake's
   * ReplyError keeps its command arguments), where a logger would serialise it.
   */
  unavailable(operation: string, err: unknown): StoreUnavailableError {
    const text = this.scrub(String(err));
    const cause = this.redis.options.password ? new Error(text) : err;
    const connection = this.redis.status;
    return new StoreUnavailableError(`redis ${operation} failed (connection ${connection}): ${text}`, {
      cause,
      context: { operation, connection },
    });
  }

  private async run<T>(operation: string, body: () => Promise<T>): Promise<T> {
    try {
      await this.connected();
      return await body();
    } catch (err) {
      throw this.unavailable(operation, err);
    }
  }

  /** Connects a lazy client once, sharing the attempt between concurrent first callers. */
  private connected(): Promise<void> {
    if (this.redis.status === 'wait') {
      this.connecting = this.redis.connect().finally(() => {
        this.connecting = undefined;
      });
    }
    return this.connecting ?? Promise.resolve();
  }

  private scrub(text: string): string {
    const password = this.redis.options.password;
    return password ? text.split(password).join('***') : text;
  }

  private recordKey(key: string): string {
    return `${this.prefix}rec:${key}`;
  }

  private lockKey(key: string): string {
    return `${this.prefix}lock:${key}`;
  }

  private slotsKey(pool: string): string {
    return `${this.prefix}slots:${pool}`;
  }

  private dirtyKey(key: string): string {
    return `${this.prefix}dirty:${key}`;
  }

  private usesKey(use: string): string {
    return `${this.prefix}uses:${use}`;
  }

  private ownedKey(pool: string): string {
    return `${this.prefix}owned:${pool}`;
  }

  private seenKey(id: string): string {
    return `${this.prefix}seen:${id}`;
  }

  /** One opaque value with a ttl (putBlob): a full run's snapshot of a gateway. */
  private blobKey(key: string): string {
    return `${this.prefix}blob:${key}`;
  }
}

/**
 * A RedisStore on a new client for `url` (redis:// or rediss://), tuned to fail fast:
 * it connects on first use, never queues commands while disconnected, never resends a
 * command after a reconnect, bounds connect and command time, and keeps reconnecting in
 * the background (backoff capped at 1 s). Throws ConfigError, without the URL, when the
 * URL cannot be parsed.
 */
export function createRedisStore(url: string, options: CreateRedisStoreOptions = {}): RedisStore {
  const redis = newClient(url, options);
  const store = new RedisStore({ redis, prefix: options.prefix ?? DEFAULT_PREFIX });
  redis.on('error', (err: unknown) => options.onError?.(store.unavailable('connection', err)));
  return store;
}

function newClient(url: string, options: CreateRedisStoreOptions): Redis {
  try {
    return new Redis(url, {
      lazyConnect: true,
      enableOfflineQueue: false,
      autoResendUnfulfilledCommands: false,
      maxRetriesPerRequest: 2,
      connectTimeout: options.connectTimeoutMs ?? 2000,
      commandTimeout: options.commandTimeoutMs ?? 1500,
      retryStrategy: (times) => Math.min(times * 100, 1000),
    });
  } catch {
    // The parser's error carries the input, password included: leave it behind.
    throw new ConfigError([{ setting: 'REDIS_URL', message: 'is not a valid Redis URL' }]);
  }
}

/** Escapes the characters SCAN MATCH treats as glob syntax. */
export function escapeGlob(text: string): string {
  return text.replace(/[\\*?[\]]/g, '\\$&');
}

/** A stored record, or null when there is none or it cannot be read as one. */
function parseRecord(json: string | null): SyncRecord | null {
  if (json === null) return null;
  try {
    const value: unknown = JSON.parse(json);
    return isRecord(value) ? value : null;
  } catch {
    return null;
  }
}

function isRecord(value: unknown): value is SyncRecord {
  const candidate = value as Partial<SyncRecord> | null;
  return typeof candidate?.key === 'string' && typeof candidate.generation === 'number';
}
