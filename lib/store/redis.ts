/**
 * RedisStore: the Store contract (lib/store/types.ts) on Redis, shared by any number of
 * processes; on one Redis (or its primary) or on a Redis Cluster.
 *
 * Layout: records `<prefix>rec:<key>` (JSON strings, no expiry), locks `<prefix>lock:<key>`
 * (token, PX ttl), dirty marks `<prefix>dirty:<key>` ("1", PX), write slots per gateway
 * `<prefix>slots:<pool>` (a sorted set: holder → expiry on the server's clock), the index of
 * records' uses `<prefix>uses:<use>` (a set of record keys, kept by the record scripts), what
 * we created on a gateway `<prefix>owned:<pool>` (a set of ids), the owner of each gateway object
 * `<prefix>owner:<key>` (JSON `{ref, uid}`, no expiry), values with a ttl
 * `<prefix>blob:<key>` (PX), and the index of record keys `<prefix>recs` (a sorted set, every
 * score 0, kept by the record scripts) with its mark `<prefix>recs:complete`. Every
 * compare-then-write is one Lua script, so it is atomic on the server; getRecords is one MGET.
 * A batch (lockAll, releaseAll, forceReleaseAll, putRecords, claimOwners) is one pipeline of
 * the single call's script, one per entry: one round trip, each entry atomic on its own (a
 * pipeline is not a transaction; an entry's error fails the call, entries before it may have
 * run, as with a timed-out single call). A lease of write slots (acquireSlots) is one script:
 * the holder's slots are members `<holder>#<n>` of the pool's sorted set.
 * listRecordKeys is one ZRANGEBYLEX of the index: one round trip whatever the number of
 * records. The index is built once, where it is missing (records written by a version before
 * it): a SCAN of the records (never KEYS), whose pages are added by a script that adds only
 * records still there, so a record deleted meanwhile is not indexed; the mark is set when the
 * scan ended, and a store that stopped half way leaves it unset for the next to scan again.
 * While a version without the index still writes records (a rolling upgrade), a record it
 * creates is missing from the index until the mark is deleted: only orphan detection of that
 * object waits.
 *
 * On a Redis Cluster (a Cluster client: createRedisStore with `cluster: true`, or an injected
 * ioredis Cluster) the prefix is wrapped in a hash tag, `{<prefix>}rec:<key>`, `{<prefix>}uses:<use>`,
 * ..., so every key of one prefix lives in ONE hash slot. Why one slot rather than spreading
 * keys: the scripts touch keys together (a lock and its dirty mark; a record and the index sets
 * its script computes from the stored record, which cannot be declared up front), getRecords is
 * one MGET and recordsUsing/renew/markSeen one pipeline each; across slots each of these would
 * fail with CROSSSLOT or lose its atomicity or its single round trip. The data is small
 * (records of ~50,000 objects are tens of MB), so the cluster gives failover and compatibility
 * with cluster-mode Redis (ElastiCache cluster mode enabled, Redis Cluster), not spread: one
 * prefix is served by one shard. Keys declared to a script are declared as KEYS (the new uses of
 * a record included); the old uses a record script drops are computed on the server, in the
 * same slot. Building the index of record keys scans the master serving that slot (SCAN has no
 * cluster-wide form, and the other masters hold none of our keys), paging with COUNT; while an
 * operator migrates the slot, keys already moved are missed by that scan (the index then lacks
 * them until their next write): only their orphan detection waits. A store waits for its connection to that
 * master before each operation, and fails when it is gone, whatever the other shards do. On a
 * single Redis the layout is unchanged (no hash tag), so existing deployments keep their records.
 *
 * Guarantees: every failure of the client or the server (refused, closed, timed out, a
 * reply error, CLUSTERDOWN) surfaces as StoreUnavailableError naming the operation, with the
 * original error as cause (a scrubbed copy when the client has a password), and never the
 * password; an unreadable record reads as
 * null (and may be overwritten) rather than failing the whole batch. A dirty mark is set to
 * outlive the lock it was set against.
 * Clients from createRedisStore fail fast instead of queueing: no offline queue, no resend
 * after a reconnect, a bounded connect and command time; a command that timed out may
 * still have run on the server (locks expire; records are generation-checked). Cluster
 * clients follow MOVED and ASK redirects, and retry CLUSTERDOWN and TRYAGAIN (replies the
 * server gives without running the command) 100 ms apart, within the command timeout; they
 * never resend a command whose connection closed (it may have run), and refresh the slot map
 * every 5 s, so a failover is seen within seconds without any command being sent twice.
 * Throws ConfigError (naming the setting, never its value) for a URL it cannot read, an ioredis
 * keyPrefix, or a cluster prefix that is empty or holds `{` or `}` (either would break the hash tag).
 * Assumes: Redis >= 6, or a Redis Cluster of them; one prefix per deployment (on a cluster, a
 * prefix is one slot: several deployments spread over shards only by their prefixes); an
 * injected client does not use ioredis' keyPrefix (use `prefix`) and either connects lazily
 * or keeps its offline queue on; ttlMs is a positive integer.
 */
import { type Cluster, Redis } from 'ioredis';
import { ConfigError, StoreUnavailableError } from '../platform/errors.js';
import { parseClusterSeeds } from './redis-url.js';
import type { LockEntry, LockOutcome, Owner, OwnerClaimEntry, ReleaseOutcome, Store, SyncRecord } from './types.js';

export interface RedisStoreOptions {
  /**
   * An ioredis client, or a Cluster client for a Redis Cluster (keys then carry the prefix as a
   * hash tag); the store owns it from now on (close() quits it).
   */
  redis: Redis | Cluster;
  /** Prepended to every key; default "gr:". */
  prefix?: string;
}

export interface CreateRedisStoreOptions {
  prefix?: string;
  /**
   * `url` names a Redis Cluster: its configuration endpoint or any node, or several seed URLs
   * separated by commas (REDIS_CLUSTER=true). Default: one Redis.
   */
  cluster?: boolean;
  /** Bound on establishing a connection; default 2000 ms. */
  connectTimeoutMs?: number;
  /** Bound on any single command; default 1500 ms. */
  commandTimeoutMs?: number;
  /** Connection errors the client reports in the background (already scrubbed). */
  onError?: (error: StoreUnavailableError) => void;
}

const DEFAULT_PREFIX = 'gr:';
const SCAN_COUNT = 1000;
/** A byte above any in a record key's UTF-8 (0xFF is never in UTF-8): the end of a prefix's range. */
const AFTER = '\\255';

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
 * KEYS[1] record, KEYS[2] the index of record keys, KEYS[3..] the index sets of the new record's
 * uses; ARGV json, generation, index prefix, record key. 1 = written (and indexed), 0 = a newer
 * generation is stored. The index sets of the stored record's uses are computed here (index
 * prefix .. use).
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
for i = 3, #KEYS do redis.call('SADD', KEYS[i], ARGV[4]) end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[2], 0, ARGV[4])
return 1`;

/** KEYS[1] record, KEYS[2] the index of record keys; ARGV index prefix, record key. Deletes the record, its key and its uses from the indexes. */
const DELETE_RECORD = `${UNINDEX}
unindex(redis.call('GET', KEYS[1]), ARGV[1], ARGV[2])
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[2])
return 1`;

/**
 * KEYS index of record keys, its mark; ARGV prefix. The keys under the prefix, sorted bytewise
 * (for record keys, which are ASCII, the order of a JavaScript sort()); false while the index
 * is not built.
 */
const LIST_RECORD_KEYS = `
if redis.call('EXISTS', KEYS[2]) == 0 then return false end
if ARGV[1] == '' then return redis.call('ZRANGEBYLEX', KEYS[1], '-', '+') end
return redis.call('ZRANGEBYLEX', KEYS[1], '[' .. ARGV[1], '(' .. ARGV[1] .. '${AFTER}')`;

/**
 * KEYS index of record keys; ARGV the records' key prefix, then record keys found by a scan.
 * Indexes those whose record is still there (one deleted since the scan is not).
 */
const INDEX_RECORDS = `
for i = 2, #ARGV do
  if redis.call('EXISTS', ARGV[1] .. ARGV[i]) == 1 then redis.call('ZADD', KEYS[1], 0, ARGV[i]) end
end
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

/**
 * KEYS pool; ARGV holder, want, limit, ttl. Drops expired slots (server's clock), gives back the
 * holder's slots beyond want, renews the rest, takes free ones up to want (members holder#n);
 * answers how many the holder holds.
 */
const ACQUIRE_SLOTS = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local want = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local ttl = tonumber(ARGV[4])
local prefix = ARGV[1] .. '#'
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local mine = {}
for _, member in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  if string.sub(member, 1, #prefix) == prefix then mine[member] = true end
end
local held = 0
for member in pairs(mine) do
  if held < want then
    redis.call('ZADD', KEYS[1], now + ttl, member)
    held = held + 1
  else
    redis.call('ZREM', KEYS[1], member)
    mine[member] = nil
  end
end
local taken = redis.call('ZCARD', KEYS[1])
local n = 1
while held < want and taken < limit do
  local member = prefix .. n
  if not mine[member] then
    redis.call('ZADD', KEYS[1], now + ttl, member)
    held = held + 1
    taken = taken + 1
  end
  n = n + 1
end
if held > 0 and redis.call('PTTL', KEYS[1]) < ttl then
  redis.call('PEXPIRE', KEYS[1], ttl)
end
return held`;

/** KEYS pool; ARGV holder. Removes every slot of the holder (members holder#n). */
const RELEASE_SLOTS = `
local prefix = ARGV[1] .. '#'
for _, member in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  if string.sub(member, 1, #prefix) == prefix then redis.call('ZREM', KEYS[1], member) end
end
return 1`;

/** KEYS pool (a hash: holder → amount); ARGV holder, amount, limit, ttl. Grants when the others' claims and this one fit in limit. */
const CLAIM = `
local others = 0
local claims = redis.call('HGETALL', KEYS[1])
for i = 1, #claims, 2 do
  if claims[i] ~= ARGV[1] then
    others = others + tonumber(claims[i + 1])
  end
end
if others + tonumber(ARGV[2]) > tonumber(ARGV[3]) then
  return 0
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1`;

/** The owner decoded from a stored value (nil when unreadable), for the owner scripts. */
const OWNER_OF = `
local function owner_of(json)
  if not json then return nil end
  local ok, owner = pcall(cjson.decode, json)
  if ok and type(owner) == 'table' and type(owner.ref) == 'string' then return owner end
  return nil
end`;

/** KEYS owner; ARGV the claimant's JSON, its ref. Takes a free (or unreadable) key or one its ref holds; answers the owner after. */
const CLAIM_OWNER = `${OWNER_OF}
local stored = redis.call('GET', KEYS[1])
local owner = owner_of(stored)
if owner and owner.ref ~= ARGV[2] then return stored end
redis.call('SET', KEYS[1], ARGV[1])
return ARGV[1]`;

/** KEYS owner; ARGV ref. Deletes the owner when it is ref's; 1 when it was. */
const RELEASE_OWNER = `${OWNER_OF}
local owner = owner_of(redis.call('GET', KEYS[1]))
if not owner or owner.ref ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
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
  /** numberOfKeys, then the record's key, the index of record keys and its uses' index keys, then json, generation, indexPrefix, member */
  grPutRecord(numberOfKeys: number, ...keysAndArgs: (string | number)[]): Promise<number>;
  grDeleteRecord(record: string, index: string, indexPrefix: string, member: string): Promise<number>;
  grListRecordKeys(index: string, mark: string, prefix: string): Promise<string[] | null>;
  grIndexRecords(index: string, recordPrefix: string, ...keys: string[]): Promise<number>;
  grLock(lock: string, dirty: string, token: string, ttlMs: number): Promise<LockOutcome>;
  grRelease(lock: string, dirty: string, token: string): Promise<ReleaseOutcome>;
  grForceRelease(lock: string, token: string): Promise<number>;
  grRenew(lock: string, dirty: string, token: string, ttlMs: number): Promise<number>;
  grAcquireSlot(pool: string, holder: string, limit: number, ttlMs: number): Promise<number>;
  grAcquireSlots(pool: string, holder: string, want: number, limit: number, ttlMs: number): Promise<number>;
  grReleaseSlots(pool: string, holder: string): Promise<number>;
  grClaim(pool: string, holder: string, amount: number, limit: number, ttlMs: number): Promise<number>;
  grClaimOwner(owner: string, json: string, ref: string): Promise<string>;
  grReleaseOwner(owner: string, ref: string): Promise<number>;
}

/** The scripts as a pipeline takes them (queued; the replies come with exec()). */
type ScriptPipeline = { [K in keyof ScriptCommands]: (...args: Parameters<ScriptCommands[K]>) => unknown };

/** An ioredis Cluster client (ioredis marks its clients: `isCluster`), without loading the Cluster class. */
function isClusterClient(redis: Redis | Cluster): redis is Cluster {
  return (redis as { isCluster?: unknown }).isCluster === true;
}

/**
 * ioredis' Cluster class, once loadRedisCluster() has loaded it. It is loaded on demand (a
 * chunk of its own in the Lambda bundles, scripts/bundle.ts), so the functions of a deployment
 * on one Redis do not load it at start.
 */
let ClusterClient: typeof Cluster | undefined;

/** Loads ioredis' Cluster client; createRedisStore with `cluster: true` needs it loaded first. Idempotent. */
export async function loadRedisCluster(): Promise<void> {
  if (ClusterClient) return;
  const mod = (await import('ioredis/built/cluster/index.js')) as unknown as { default: typeof Cluster | { default: typeof Cluster } };
  ClusterClient = typeof mod.default === 'function' ? mod.default : mod.default.default;
}

export class RedisStore implements Store {
  readonly kind = 'redis' as const;
  private readonly redis: Redis | Cluster;
  private readonly scripts: ScriptCommands;
  /** What every key starts with: the prefix, on a cluster as a hash tag (`{gr:}`). */
  private readonly prefix: string;
  /** On a cluster: the hash slot of every key (the prefix's). */
  private readonly slot: number;
  private connecting: Promise<void> | undefined;

  constructor(options: RedisStoreOptions) {
    const redis = options.redis;
    const keyPrefix = isClusterClient(redis) ? (redis.options.keyPrefix ?? redis.options.redisOptions?.keyPrefix) : redis.options.keyPrefix;
    if (keyPrefix) {
      const message = 'RedisStore takes its own prefix option, not an ioredis keyPrefix (SCAN patterns are not prefixed)';
      throw new ConfigError([{ setting: 'keyPrefix', message }]);
    }
    const prefix = options.prefix ?? DEFAULT_PREFIX;
    if (isClusterClient(redis) && (prefix === '' || /[{}]/.test(prefix))) {
      throw new ConfigError([{ setting: 'prefix', message: "must be non-empty and hold no { or } on a Redis Cluster (it becomes the keys' hash tag)" }]);
    }
    this.redis = redis;
    this.prefix = isClusterClient(redis) ? `{${prefix}}` : prefix;
    this.slot = isClusterClient(redis) ? hashSlot(prefix) : -1;
    this.redis.defineCommand('grPutRecord', { lua: PUT_RECORD });
    this.redis.defineCommand('grDeleteRecord', { numberOfKeys: 2, lua: DELETE_RECORD });
    this.redis.defineCommand('grListRecordKeys', { numberOfKeys: 2, lua: LIST_RECORD_KEYS });
    this.redis.defineCommand('grIndexRecords', { numberOfKeys: 1, lua: INDEX_RECORDS });
    this.redis.defineCommand('grLock', { numberOfKeys: 2, lua: LOCK });
    this.redis.defineCommand('grRelease', { numberOfKeys: 2, lua: RELEASE });
    this.redis.defineCommand('grForceRelease', { numberOfKeys: 1, lua: FORCE_RELEASE });
    this.redis.defineCommand('grRenew', { numberOfKeys: 2, lua: RENEW });
    this.redis.defineCommand('grAcquireSlot', { numberOfKeys: 1, lua: ACQUIRE_SLOT });
    this.redis.defineCommand('grAcquireSlots', { numberOfKeys: 1, lua: ACQUIRE_SLOTS });
    this.redis.defineCommand('grReleaseSlots', { numberOfKeys: 1, lua: RELEASE_SLOTS });
    this.redis.defineCommand('grClaim', { numberOfKeys: 1, lua: CLAIM });
    this.redis.defineCommand('grClaimOwner', { numberOfKeys: 1, lua: CLAIM_OWNER });
    this.redis.defineCommand('grReleaseOwner', { numberOfKeys: 1, lua: RELEASE_OWNER });
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
      const keys = [this.recordKey(record.key), this.indexKey(), ...new Set((record.uses ?? []).map((use) => this.usesKey(use)))];
      const written = await this.scripts.grPutRecord(keys.length, ...keys, JSON.stringify(record), record.generation, this.usesKey(''), record.key);
      return written === 1;
    });
  }

  putRecords(records: readonly SyncRecord[]): Promise<boolean[]> {
    return this.run('putRecords', () =>
      this.pipelined(
        records,
        (p, record) => {
          const keys = [this.recordKey(record.key), this.indexKey(), ...new Set((record.uses ?? []).map((use) => this.usesKey(use)))];
          p.grPutRecord(keys.length, ...keys, JSON.stringify(record), record.generation, this.usesKey(''), record.key);
        },
        (reply) => reply === 1,
      ),
    );
  }

  deleteRecord(key: string): Promise<void> {
    return this.run('deleteRecord', async () => {
      await this.scripts.grDeleteRecord(this.recordKey(key), this.indexKey(), this.usesKey(''), key);
    });
  }

  owners(keys: readonly string[]): Promise<(Owner | null)[]> {
    return this.run('owners', async () => {
      if (keys.length === 0) return [];
      const values = await this.redis.mget(keys.map((key) => this.ownerKey(key)));
      return values.map(parseOwner);
    });
  }

  claimOwner(key: string, owner: Owner): Promise<Owner> {
    return this.run('claimOwner', async () => {
      const json = JSON.stringify({ ref: owner.ref, uid: owner.uid });
      const after = parseOwner(await this.scripts.grClaimOwner(this.ownerKey(key), json, owner.ref));
      if (after === null) throw new Error(`claimOwner: unreadable owner of ${key}`);
      return after;
    });
  }

  claimOwners(claims: readonly OwnerClaimEntry[]): Promise<Owner[]> {
    return this.run('claimOwners', () =>
      this.pipelined(
        claims,
        (p, c) => p.grClaimOwner(this.ownerKey(c.key), JSON.stringify({ ref: c.owner.ref, uid: c.owner.uid }), c.owner.ref),
        (reply, c) => {
          const after = parseOwner(reply as string | null);
          if (after === null) throw new Error(`claimOwners: unreadable owner of ${c.key}`);
          return after;
        },
      ),
    );
  }

  releaseOwner(key: string, ref: string): Promise<boolean> {
    return this.run('releaseOwner', async () => (await this.scripts.grReleaseOwner(this.ownerKey(key), ref)) === 1);
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
      const indexed = await this.scripts.grListRecordKeys(this.indexKey(), this.indexMarkKey(), prefix);
      if (indexed) return indexed;
      const all = await this.buildIndex();
      return all.filter((key) => key.startsWith(prefix));
    });
  }

  /**
   * Builds the index of record keys from a SCAN of the records, page by page, then marks it
   * complete; answers every record key found, sorted. Idempotent, and safe beside writers:
   * puts and deletes keep the index themselves, and a page adds only records still there.
   */
  private async buildIndex(): Promise<string[]> {
    const base = this.recordKey('');
    const pattern = `${escapeGlob(base)}*`;
    const found = new Set<string>();
    const node = this.scanned();
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', SCAN_COUNT);
      cursor = next;
      const page = keys.map((key) => key.slice(base.length));
      if (page.length > 0) await this.scripts.grIndexRecords(this.indexKey(), base, ...page);
      for (const key of page) found.add(key);
    } while (cursor !== '0');
    await this.redis.set(this.indexMarkKey(), '1');
    return [...found].sort();
  }

  lock(key: string, token: string, ttlMs: number): Promise<LockOutcome> {
    return this.run('lock', () => this.scripts.grLock(this.lockKey(key), this.dirtyKey(key), token, ttlMs));
  }

  release(key: string, token: string): Promise<ReleaseOutcome> {
    return this.run('release', () => this.scripts.grRelease(this.lockKey(key), this.dirtyKey(key), token));
  }

  lockAll(entries: readonly LockEntry[], ttlMs: number): Promise<LockOutcome[]> {
    return this.run('lockAll', () =>
      this.pipelined(
        entries,
        (p, e) => p.grLock(this.lockKey(e.key), this.dirtyKey(e.key), e.token, ttlMs),
        (reply) => reply as LockOutcome,
      ),
    );
  }

  releaseAll(entries: readonly LockEntry[]): Promise<ReleaseOutcome[]> {
    return this.run('releaseAll', () =>
      this.pipelined(
        entries,
        (p, e) => p.grRelease(this.lockKey(e.key), this.dirtyKey(e.key), e.token),
        (reply) => reply as ReleaseOutcome,
      ),
    );
  }

  forceReleaseAll(entries: readonly LockEntry[]): Promise<boolean[]> {
    return this.run('forceReleaseAll', () =>
      this.pipelined(
        entries,
        (p, e) => p.grForceRelease(this.lockKey(e.key), e.token),
        (reply) => reply === 1,
      ),
    );
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

  acquireSlots(pool: string, holder: string, want: number, limit: number, ttlMs: number): Promise<number> {
    return this.run('acquireSlots', () => this.scripts.grAcquireSlots(this.slotsKey(pool), holder, want, limit, ttlMs));
  }

  releaseSlots(pool: string, holder: string): Promise<void> {
    return this.run('releaseSlots', async () => {
      await this.scripts.grReleaseSlots(this.slotsKey(pool), holder);
    });
  }

  claim(pool: string, holder: string, amount: number, limit: number, ttlMs: number): Promise<boolean> {
    return this.run('claim', async () => (await this.scripts.grClaim(this.claimsKey(pool), holder, amount, limit, ttlMs)) === 1);
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
    return !['close', 'reconnecting', 'end', 'disconnecting'].includes(this.redis.status);
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
    const text = this.scrub(driverMessage(err));
    const cause = this.password() ? new Error(text) : err;
    const connection = this.redis.status;
    return new StoreUnavailableError(`redis ${operation} failed (connection ${connection}): ${text}`, {
      cause,
      context: { operation, connection },
    });
  }

  /**
   * One pipeline of `add` per item (each a script call), sent in one round trip; each reply
   * mapped by `map`. An item's error fails the whole call (items before it may have run).
   */
  private async pipelined<I, R>(items: readonly I[], add: (p: ScriptPipeline, item: I) => void, map: (reply: unknown, item: I) => R): Promise<R[]> {
    if (items.length === 0) return [];
    const pipeline = this.redis.pipeline() as unknown as ScriptPipeline & { exec(): Promise<[Error | null, unknown][] | null> };
    for (const item of items) add(pipeline, item);
    const results = (await pipeline.exec()) ?? [];
    if (results.length !== items.length) throw new Error(`pipeline answered ${results.length} of ${items.length} commands`);
    return results.map(([err, reply], i) => {
      if (err) throw err;
      return map(reply, items[i] as I);
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

  /**
   * Connects a lazy client once, sharing the attempt between concurrent first callers. On a
   * cluster, then waits for the connection to the master serving our slot: a Cluster without
   * an offline queue refuses commands for a node whose connection is still being made, so
   * concurrent first commands would fail although the node is fine.
   */
  private async connected(): Promise<void> {
    if (this.redis.status === 'wait') {
      this.connecting = this.redis.connect().finally(() => {
        this.connecting = undefined;
      });
    }
    await this.connecting;
    const owner = this.owner();
    if (owner !== undefined) await nodeReady(owner);
  }

  /** On a cluster, the client's connection to the master serving our slot, when it has one. */
  private owner(): Redis | undefined {
    if (!isClusterClient(this.redis)) return undefined;
    const key = this.redis.slots[this.slot]?.[0];
    return this.redis.nodes('master').find((node) => `${node.options.host}:${node.options.port}` === key);
  }

  private scrub(text: string): string {
    const password = this.password();
    return password ? text.split(password).join('***') : text;
  }

  /** The password the client authenticates with (a Cluster's is its nodes'). */
  private password(): string | undefined {
    return isClusterClient(this.redis) ? this.redis.options.redisOptions?.password : this.redis.options.password;
  }

  /**
   * Where SCAN runs: the one Redis, or the master serving our slot. Not every master: one down
   * that serves none of our keys must not fail the listing, and masters that do not serve our
   * slot hold none of our keys (while the slot migrates, keys already moved are listed by the
   * next listing, once the client's slot map follows).
   */
  private scanned(): Redis {
    if (!isClusterClient(this.redis)) return this.redis;
    const owner = this.owner();
    // an empty answer would read as "no records": unreachable instead
    if (owner === undefined) throw new Error(`no connection to the master serving slot ${this.slot} (cluster ${this.redis.status})`);
    return owner;
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

  private claimsKey(pool: string): string {
    return `${this.prefix}claims:${pool}`;
  }

  private dirtyKey(key: string): string {
    return `${this.prefix}dirty:${key}`;
  }

  /** The index of record keys (a sorted set, scores 0: ranges by prefix). */
  private indexKey(): string {
    return `${this.prefix}recs`;
  }

  /** Set once the index of record keys holds every record. */
  private indexMarkKey(): string {
    return `${this.prefix}recs:complete`;
  }

  private usesKey(use: string): string {
    return `${this.prefix}uses:${use}`;
  }

  private ownedKey(pool: string): string {
    return `${this.prefix}owned:${pool}`;
  }

  /** The owner of one gateway object (claimOwner). */
  private ownerKey(key: string): string {
    return `${this.prefix}owner:${key}`;
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
 * the background (backoff capped at 1 s). With `cluster`, `url` is a Redis Cluster's
 * configuration endpoint or seed URLs (comma-separated; lib/store/redis-url.ts) and the
 * client an ioredis Cluster tuned the same way (loadRedisCluster() must have loaded it). Throws
 * ConfigError, without the URL, when the URL cannot be parsed.
 */
export function createRedisStore(url: string, options: CreateRedisStoreOptions = {}): RedisStore {
  const redis = options.cluster ? newClusterClient(url, options) : newClient(url, options);
  const store = new RedisStore({ redis, prefix: options.prefix ?? DEFAULT_PREFIX });
  redis.on('error', (err: unknown) => options.onError?.(store.unavailable('connection', err)));
  // a Cluster reports each node's failures apart from its own
  if (isClusterClient(redis)) redis.on('node error', (err: unknown, node: unknown) => options.onError?.(store.unavailable(`connection to ${String(node)}`, err)));
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

function newClusterClient(url: string, options: CreateRedisStoreOptions): Cluster {
  let seeds: ReturnType<typeof parseClusterSeeds>;
  try {
    seeds = parseClusterSeeds(url);
  } catch (err) {
    // the message says what is wrong without repeating the URL
    throw new ConfigError([{ setting: 'REDIS_URL', message: (err as Error).message }]);
  }
  if (!ClusterClient) throw new Error('the Redis Cluster client is not loaded: await loadRedisCluster() before createRedisStore(url, { cluster: true })');
  const connectTimeout = options.connectTimeoutMs ?? 2000;
  return new ClusterClient(seeds.nodes, {
    lazyConnect: true,
    enableOfflineQueue: false,
    // reconnect to the seeds in the background, as newClient does
    clusterRetryStrategy: (times) => Math.min(times * 100, 1000),
    // bounds each seed's connect and CLUSTER SLOTS when (re)learning the topology
    slotsRefreshTimeout: connectTimeout,
    slotsRefreshInterval: 5000,
    // never resend a command whose connection closed: it may have run (no autoResendUnfulfilledCommands)
    retryDelayOnFailover: 0,
    // CLUSTERDOWN and TRYAGAIN: the server did not run the command; at most maxRedirections tries
    retryDelayOnClusterDown: 100,
    retryDelayOnTryAgain: 100,
    maxRedirections: 16,
    // ElastiCache with in-transit encryption: connect to nodes by the names the cluster gives,
    // so their certificates match (ioredis' README, "AWS ElastiCache Clusters with TLS")
    ...(seeds.tls ? { dnsLookup: (address: string, callback: (err: null, address: string) => void) => callback(null, address) } : {}),
    redisOptions: {
      connectTimeout,
      commandTimeout: options.commandTimeoutMs ?? 1500,
      autoResendUnfulfilledCommands: false,
      // every node, the ones the cluster names included, takes the seeds' credentials
      ...(seeds.username !== undefined ? { username: seeds.username } : {}),
      ...(seeds.password !== undefined ? { password: seeds.password } : {}),
      ...(seeds.tls ? { tls: {} } : {}),
    },
  });
}

/**
 * Resolves once `node` (a cluster node's connection) is ready, connecting it if it waits to;
 * rejects with the reason when it closes first, or when it is not ready within its connect and
 * command timeouts (the handshake's ready check is a command).
 */
function nodeReady(node: Redis): Promise<void> {
  const where = `${node.options.host}:${node.options.port}`;
  if (node.status === 'ready') return Promise.resolve();
  if (node.status === 'end' || node.status === 'close') return Promise.reject(new Error(`connection to ${where} is closed`));
  const boundMs = (node.options.connectTimeout ?? 10_000) + (node.options.commandTimeout ?? 0);
  return new Promise((resolve, reject) => {
    let reason: unknown;
    const onError = (err: unknown): void => {
      reason = err;
    };
    const settle = (err?: unknown): void => {
      clearTimeout(timer);
      node.off('ready', onReady);
      node.off('close', onClose);
      node.off('error', onError);
      if (err === undefined) resolve();
      else reject(err);
    };
    const onReady = (): void => settle();
    const onClose = (): void => settle(reason ?? new Error(`connection to ${where} closed`));
    const timer = setTimeout(() => settle(new Error(`connection to ${where} not ready within ${boundMs} ms`)), boundMs);
    node.on('ready', onReady);
    node.on('close', onClose);
    node.on('error', onError);
    // its failure arrives as 'error' and 'close' above
    if (node.status === 'wait') node.connect().catch(() => undefined);
  });
}

/**
 * The Redis Cluster hash slot of `tag` (a hash tag's content): CRC16 (XMODEM) modulo 16384, as
 * Redis Cluster computes it (its specification, "Keys distribution model").
 */
export function hashSlot(tag: string): number {
  let crc = 0;
  for (const byte of Buffer.from(tag)) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc % 16384;
}

/** Escapes the characters SCAN MATCH treats as glob syntax. */
export function escapeGlob(text: string): string {
  return text.replace(/[\\*?[\]]/g, '\\$&');
}

/**
 * The text of a driver error. A Cluster's "Failed to refresh slots cache." keeps why in its
 * lastNodeError (a refused connection, WRONGPASS): said too, else the message says nothing.
 */
function driverMessage(err: unknown): string {
  const last = (err as { lastNodeError?: unknown } | null)?.lastNodeError;
  return last instanceof Error ? `${String(err)} (last node: ${String(last)})` : String(err);
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

/** A stored owner, or null when there is none or it cannot be read as one. */
function parseOwner(json: string | null): Owner | null {
  if (json === null) return null;
  try {
    const value = JSON.parse(json) as Partial<Owner> | null;
    return typeof value?.ref === 'string' && typeof value.uid === 'string' ? { ref: value.ref, uid: value.uid } : null;
  } catch {
    return null;
  }
}

function isRecord(value: unknown): value is SyncRecord {
  const candidate = value as Partial<SyncRecord> | null;
  return typeof candidate?.key === 'string' && typeof candidate.generation === 'number';
}
