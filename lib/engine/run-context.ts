/**
 * The state of one run: its dependencies, settings, the MAX_DELETES_PER_RUN allowance used so
 * far, run-level errors, what each kind's phase ended with (outcomes) and the objects earlier phases ask a later one
 * to look at (follow), listings read once per run (listOnce), per-run values a kind keeps
 * between its phases (shared), the records waiting to be saved in one batch (records: a
 * RecordWriter, flushed before any lock is given back), and the report helpers. What a run cost the gateways is not
 * kept here: each stage returns it (calls.ts) and the run adds it up. Shared by the stages; no
 * I/O of its own except through the dependencies it holds.
 */
import { randomUUID } from 'node:crypto';
import type { TargetResolver } from '../gateway/targets.js';
import type { KubeObject, ListRange, NamespacedName, ResourceKind } from '../kube/types.js';
import { describeError, errorCode } from '../platform/errors.js';
import type { Logger } from '../platform/log.js';
import { inPart } from '../scale/shards.js';
import type { SnapshotReader } from '../scale/snapshot.js';
import type { OwnerClaimEntry, Store, SyncRecord } from '../store/types.js';
import type { GatewayCalls } from './calls.js';
import { chunked, mapLimit } from './concurrency.js';
import type { Decision, Loaded } from './decide.js';
import type { Done } from './finalize.js';
import type { KindRegistry, ManagedKind } from './kind.js';
import type { ObjectReport, ObjectResult, RunDeps, RunReport, RunRequest, RunSettings } from './types.js';

/** An object a later phase is asked to look at; optional: a guess, not reported when it does not exist. */
export type FollowRef = NamespacedName & { readonly optional?: boolean };

export class RunContext {
  readonly runId = randomUUID();
  readonly startedAt: number;
  readonly errors: RunReport['errors'] = [];
  readonly resolver: TargetResolver;
  readonly log: Logger;
  /** a shard run's view of its tick's snapshot of the gateways (snapshot.ts, loaded on first use) */
  private snapshotReader: Promise<SnapshotReader> | undefined;
  /** records saved in batches: finalize queues, the stages flush (before a lock is given back, at a phase's end) */
  readonly records: RecordWriter;
  /** gateway deletions let through by MAX_DELETES_PER_RUN so far: the run's allowance used, read before each phase decides */
  deletions = 0;
  private readonly listings = new Map<ResourceKind, Promise<KubeObject[] | undefined>>();
  private readonly done = new Map<ManagedKind, readonly Done[]>();
  private readonly follows = new Map<ManagedKind, FollowRef[]>();
  private readonly values = new Map<object | symbol, unknown>();
  private allRecordKeys?: Promise<string[]>;
  /** work done at most once per run, by key (a certificate's upload to one gateway) */
  private readonly onceDone = new Map<string, Promise<void>>();

  constructor(
    readonly deps: RunDeps,
    readonly request: RunRequest,
  ) {
    this.startedAt = deps.clock.now();
    this.log = deps.log.child({ runId: this.runId, trigger: request.trigger });
    this.resolver = deps.targets.forRun();
    this.records = new RecordWriter(deps.store, concurrencyOf(deps.settings), (record) => this.log.info({ key: record.key, generation: record.generation }, 'a newer record exists; kept it'));
    const shard = request.shard;
    if (shard) this.log = this.log.child({ shard: `${shard.index + 1}/${shard.count}`, tick: shard.runId });
  }

  /** A shard run's view of its tick's snapshot of the gateways (snapshot.ts); undefined for other runs, which never load it. */
  snapshot(): Promise<SnapshotReader> | undefined {
    const shard = this.request.shard;
    if (shard === undefined) return undefined;
    this.snapshotReader ??= import('../scale/snapshot.js').then(({ SnapshotReader }) => new SnapshotReader(this.deps.store, shard.runId, shard.index, this.log));
    return this.snapshotReader;
  }

  /** Where a shard run's listing of `kind` in `namespace` begins and ends, when the shard is a range of it (list-ranges.ts, loaded then only); else undefined. */
  async listRange(kind: ResourceKind, namespace: string): Promise<ListRange | undefined> {
    const shard = this.request.shard;
    if (shard === undefined || 'namespaces' in shard.part) return undefined;
    const { rangeListing } = await import('../scale/list-ranges.js');
    return rangeListing(shard, kind, namespace, this.deps.listHandover);
  }

  get settings(): RunSettings {
    return this.deps.settings;
  }

  /** The kinds this run serves, and the order of its phases. */
  get kinds(): KindRegistry {
    return this.deps.kinds;
  }

  /** How each object of `kind` ended in this run's phase of it (empty before it ran). */
  outcomes(kind: ManagedKind): readonly Done[] {
    return this.done.get(kind) ?? [];
  }

  /** Sets what `kind`'s phase ended with (a second pass replaces its first's). */
  setOutcomes(kind: ManagedKind, done: readonly Done[]): void {
    this.done.set(kind, done);
  }

  /** Asks `kind`'s phase, later in the run, to look at `refs` too (objects an earlier phase's outcome concerns). */
  follow(kind: ManagedKind, refs: readonly FollowRef[]): void {
    this.follows.set(kind, [...(this.follows.get(kind) ?? []), ...refs]);
  }

  /** The objects earlier phases asked `kind`'s phase to look at. */
  followed(kind: ManagedKind): readonly FollowRef[] {
    return this.follows.get(kind) ?? [];
  }

  /** A value kept for the run under `key` (what a kind carries between its phases), made on first use. */
  shared<T>(key: object | symbol, make: () => T): T {
    if (!this.values.has(key)) this.values.set(key, make());
    return this.values.get(key) as T;
  }

  /** Milliseconds left before the request's deadline or the process's stop, whichever is first (Infinity without either). */
  remainingMs(): number {
    const until = Math.min(this.request.deadline ?? Infinity, this.deps.stop?.deadline ?? Infinity);
    return until === Infinity ? Infinity : until - this.deps.clock.now();
  }

  /** The process is stopping (SIGTERM): start no further gateway write. */
  stopping(): boolean {
    return this.deps.stop?.deadline !== undefined;
  }

  /** Why no further gateway write may start now, if none may: the process is stopping, or the store is gone (its record could not be saved). */
  writesHeld(): 'shutting down' | 'store unavailable' | undefined {
    if (this.stopping()) return 'shutting down';
    return this.deps.store.reachable() ? undefined : 'store unavailable';
  }

  /** Runs `work` the first time `key` is asked for in this run (`started`: by this call); later callers share its outcome. */
  once(key: string, work: () => Promise<void>): { readonly started: boolean; readonly done: Promise<void> } {
    const done = this.onceDone.get(key);
    if (done !== undefined) return { started: false, done };
    const work$ = work();
    this.onceDone.set(key, work$);
    return { started: true, done: work$ };
  }

  /** Whether the run decides this object: always, except in a shard run, for an object of another shard (a neighbouring range's). */
  owns(namespace: string, name: string): boolean {
    const shard = this.request.shard;
    return shard === undefined || inPart(shard.part, namespace, name);
  }

  /**
   * The store's record keys under `prefix`. A run over everything asks the store once for all
   * of them and answers every kind's prefix from that (one round trip a run, not one a kind); a
   * scoped run asks for its prefixes only. Throws what the store throws (StoreUnavailableError).
   */
  async recordKeys(prefix: string): Promise<string[]> {
    if (!this.request.scope.all) return this.deps.store.listRecordKeys(prefix);
    this.allRecordKeys ??= this.deps.store.listRecordKeys('');
    return (await this.allRecordKeys).filter((key) => key.startsWith(prefix));
  }

  watched(namespace: string): boolean {
    const ns = this.settings.namespaces;
    return ns === undefined || ns.includes(namespace);
  }

  runError(stage: string, err: unknown): void {
    this.runProblem(stage, errorCode(err), describeError(err));
  }

  /** A run-level problem already described (its error's code and message). */
  runProblem(stage: string, code: string, message: string): void {
    this.errors.push({ stage, code, message });
    this.log.warn({ stage, err: message, code }, 'run stage failed');
  }

  /**
   * Every object of `kind` in the watched namespaces, listed once per run (e.g. what references
   * decide held deletions and linked statuses from). Undefined when the list failed: callers then
   * assume the worst (hold deletions, leave links alone).
   */
  listOnce(kind: ResourceKind): Promise<KubeObject[] | undefined> {
    let listing = this.listings.get(kind);
    if (listing === undefined) {
      listing = (async () => {
        try {
          const namespaces = this.settings.namespaces ? [...this.settings.namespaces] : [undefined];
          const all: KubeObject[] = [];
          for (const ns of namespaces) all.push(...(await this.deps.kube.list(kind, ns)));
          return all;
        } catch (err) {
          this.runError(`list ${kind.plural}`, err);
          return undefined;
        }
      })();
      this.listings.set(kind, listing);
    }
    return listing;
  }
}

/** One object's report: what was decided for it and how it ended. */
export function reportOf(loaded: Loaded, decision: Decision, result: ObjectResult, extra: Partial<ObjectReport> = {}): ObjectReport {
  return {
    kind: loaded.kind.kind,
    namespace: loaded.ref.namespace,
    name: loaded.ref.name,
    ...(decision.gateway !== undefined ? { gateway: decision.gateway } : {}),
    id: decision.id,
    action: decision.action,
    reason: decision.reason,
    result,
    ...extra,
  };
}

export function errorFields(err: unknown): { error: string; code: string } {
  return { error: describeError(err), code: errorCode(err) };
}

export function finishReport(ctx: RunContext, objects: ObjectReport[], calls: GatewayCalls, replicas: NonNullable<RunReport['gateway']['replicas']> = []): RunReport {
  const counts: Partial<Record<ObjectResult, number>> = {};
  for (const o of objects) counts[o.result] = (counts[o.result] ?? 0) + 1;
  objects.sort((a, b) => `${a.kind}/${a.namespace}/${a.name}`.localeCompare(`${b.kind}/${b.namespace}/${b.name}`));
  const report: RunReport = {
    runId: ctx.runId,
    trigger: ctx.request.trigger,
    dryRun: ctx.request.dryRun === true,
    startedAt: new Date(ctx.startedAt).toISOString(),
    durationMs: ctx.deps.clock.now() - ctx.startedAt,
    gateway: { writes: calls.writes, reloads: calls.reloads, ...(replicas.length > 0 ? { replicas } : {}) },
    objects,
    errors: ctx.errors,
    counts,
  };
  ctx.log.info({ counts, writes: calls.writes, reloads: calls.reloads, errors: ctx.errors.length, durationMs: report.durationMs }, 'run finished');
  return report;
}

/** Records per store call when a RecordWriter flushes: one round trip each. */
export const RECORD_CHUNK = 500;

/**
 * Records saved in batches. put() queues a record (a later record of the same key replaces a
 * queued one: the last word is what is stored); flush() saves everything queued, RECORD_CHUNK
 * records per store call (putRecords, the same compare-and-set on generation as putRecord; a
 * record refused for an older generation is reported to `kept`). A queued record reaches the
 * store only at a flush, so whoever queues flushes before the record must be there: before the
 * object's lock is given back, and at the end of the stage. reclaim() queues an owner claim
 * the same way (an object that writes nothing whose owner entry was missing: claimOwners at the
 * flush, after the records). A flush throws what the store throws (StoreUnavailableError); what
 * it was saving is dropped from the queue.
 */
export class RecordWriter {
  private queued = new Map<string, SyncRecord>();
  private claims = new Map<string, OwnerClaimEntry>();

  constructor(
    private readonly store: Store,
    private readonly concurrency: number,
    private readonly kept: (record: SyncRecord) => void,
  ) {}

  /** Queues `record` for the next flush. */
  put(record: SyncRecord): void {
    this.queued.delete(record.key);
    this.queued.set(record.key, record);
  }

  /** Queues an owner claim made again for an object that writes nothing (its entry was missing), for the next flush. */
  reclaim(claim: OwnerClaimEntry): void {
    this.claims.set(claim.key, claim);
  }

  /** How many records and claims wait for a flush. */
  get pending(): number {
    return this.queued.size + this.claims.size;
  }

  /** Saves what is queued; throws what the store throws. */
  async flush(): Promise<void> {
    if (this.pending === 0) return;
    const records = [...this.queued.values()];
    const claims = [...this.claims.values()];
    this.queued = new Map();
    this.claims = new Map();
    await mapLimit(chunked(records, RECORD_CHUNK), this.concurrency, async (chunk) => {
      const stored = await this.store.putRecords(chunk);
      chunk.forEach((record, i) => {
        if (stored[i] === false) this.kept(record);
      });
    });
    await mapLimit(chunked(claims, RECORD_CHUNK), this.concurrency, (chunk) => this.store.claimOwners(chunk));
  }
}

function concurrencyOf(settings: RunSettings): number {
  return Math.max(1, settings.concurrency);
}
