/**
 * The state of one run: its dependencies, settings, the per-object Items it works on, counters,
 * and the report helpers. Shared by load.ts, apply.ts and run.ts; no I/O of its own except
 * through the dependencies it holds.
 */
import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.js';
import { describeError, errorCode } from '../errors.js';
import type { GatewayTarget, GatewayTargets, TargetResolver } from '../gateway/targets.js';
import type { JsonObject } from '../gateway/types.js';
import type { KubeApi, KubeObject } from '../kube/types.js';
import type { Logger } from '../log.js';
import type { Store, SyncRecord } from '../store/types.js';
import type { BackoffSettings } from './error-policy.js';
import { gatewayIdFor } from './ids.js';
import { API_DEFINITION, type ManagedKind, type ObjectRef } from './kinds.js';
import type { NamespacedName } from './links.js';
import type { Action, DesiredState, ObservedState, Plan, Reason } from './plan.js';

export interface SettleSettings {
  /** how long a pass may wait for its writes to become visible */
  budgetMs: number;
  /** first wait after a reload before reading back; doubles up to maxDelayMs */
  initialDelayMs: number;
  maxDelayMs: number;
  /** a reload not visible after this long is re-issued (a gateway can lose one silently) */
  reloadEveryMs: number;
}

export interface RunSettings {
  /** WATCH_NAMESPACE; undefined means all namespaces */
  namespaces?: readonly string[];
  concurrency: number;
  lockTtlMs: number;
  /** up to this many objects, state is read with one GET each; above, with LISTs */
  getThreshold: number;
  settle: SettleSettings;
  maxDirtyPasses: number;
  backoff: BackoffSettings;
  /** with a deadline, writes are applied (locked, written, settled, released) in chunks of this size */
  deadlineChunk: number;
}

export interface RunDeps {
  kube: KubeApi;
  targets: GatewayTargets;
  store: Store;
  clock: Clock;
  log: Logger;
  settings: RunSettings;
}

/**
 * Which objects a run looks at: everything (`all`), whole namespaces (listed), and single
 * objects (read one by one). An empty scope looks at nothing.
 */
export interface RunScope {
  all?: boolean;
  namespaces?: readonly string[];
  refs?: readonly ObjectRef[];
}

export type Trigger = 'schedule' | 'watch' | 'audit' | 'resync' | 'cloudevents';

export interface RunRequest {
  trigger: Trigger;
  scope: RunScope;
  dryRun?: boolean;
  /**
   * Epoch ms by which the run must be done (a Lambda's time limit). Writes are then applied in
   * chunks; a chunk not started by the deadline is left, unlocked and untouched, to the next run.
   */
  deadline?: number;
}

export type ObjectResult =
  | 'synced'
  | 'unchanged'
  | 'diverged'
  | 'pending'
  | 'waiting'
  | 'failed'
  | 'invalid'
  | 'deleted'
  | 'deferred'
  | 'backoff'
  | 'planned'
  | 'skipped';

export type ReportReason = Reason | 'read failed' | 'not supported by gateway' | 'not watched' | 'gateway unavailable' | 'out of time';

export interface ObjectReport {
  kind: string;
  namespace: string;
  name: string;
  /** the gateway: "default" or "context:<namespace>/<name>" */
  gateway?: string;
  id: string;
  action: Action;
  reason: ReportReason;
  result: ObjectResult;
  error?: string;
  code?: string;
  /** the API server refused the status patch (the object keeps its old status): its message */
  statusError?: string;
}

export interface RunReport {
  runId: string;
  trigger: Trigger;
  dryRun: boolean;
  startedAt: string;
  durationMs: number;
  /** gateway writes and reloads made by this run, over all gateways */
  gateway: { writes: number; reloads: number };
  objects: ObjectReport[];
  errors: { stage: string; code: string; message: string }[];
  counts: Partial<Record<ObjectResult, number>>;
}

/** Everything known about one object during a run. */
export interface Item {
  kind: ManagedKind;
  ref: ObjectRef;
  /** "<Kind>/<namespace>/<name>" */
  key: string;
  /** the custom resource; null when confirmed gone; undefined when not read (yet) */
  obj?: KubeObject | null;
  /** where the object goes now (or, when it is gone, where it was) */
  target?: GatewayTarget;
  targetError?: string;
  /** where the record says it was, when that differs from target (a contextRef change) */
  previousTarget?: string;
  desired?: DesiredState;
  body?: JsonObject;
  /** policies: the ApiDefinitions referenced */
  links?: NamespacedName[];
  observedBody?: JsonObject | null;
  observed?: ObservedState;
  record?: SyncRecord | null;
  plan?: Plan;
  /** why a WAIT waits (missing references, or the policies holding a deletion) */
  waitReason?: string;
  /** extra status fields the kind keeps (linked_by_policies, linked_apis) */
  statusExtra?: Record<string, unknown>;
  readError?: unknown;
  wrote?: 'upsert' | 'remove';
  writeError?: unknown;
  visible?: boolean;
  /** the API server refused this pass's status patch: its message */
  statusError?: string;
  report?: ObjectReport;
}

export class RunContext {
  readonly runId = randomUUID();
  readonly startedAt: number;
  readonly errors: RunReport['errors'] = [];
  readonly resolver: TargetResolver;
  readonly log: Logger;
  writes = 0;
  reloads = 0;
  private policyList?: Promise<KubeObject[] | undefined>;

  constructor(
    readonly deps: RunDeps,
    readonly request: RunRequest,
  ) {
    this.startedAt = deps.clock.now();
    this.log = deps.log.child({ runId: this.runId, trigger: request.trigger });
    this.resolver = deps.targets.forRun();
  }

  get settings(): RunSettings {
    return this.deps.settings;
  }

  /** Milliseconds left before the request's deadline (Infinity without one). */
  remainingMs(): number {
    return this.request.deadline === undefined ? Infinity : this.request.deadline - this.deps.clock.now();
  }

  watched(namespace: string): boolean {
    const ns = this.settings.namespaces;
    return ns === undefined || ns.includes(namespace);
  }

  runError(stage: string, err: unknown): void {
    this.errors.push({ stage, code: errorCode(err), message: describeError(err) });
    this.log.warn({ stage, err: describeError(err), code: errorCode(err) }, 'run stage failed');
  }

  /**
   * Every SecurityPolicy in the watched namespaces, listed once per run (references decide
   * held deletions, linked statuses and which policies follow an API). Undefined when the
   * list failed: callers then assume the worst (hold deletions, leave links alone).
   */
  policies(list: (namespace: string | undefined) => Promise<KubeObject[]>): Promise<KubeObject[] | undefined> {
    this.policyList ??= (async () => {
      try {
        const namespaces = this.settings.namespaces ? [...this.settings.namespaces] : [undefined];
        const all: KubeObject[] = [];
        for (const ns of namespaces) all.push(...(await list(ns)));
        return all;
      } catch (err) {
        this.runError('list securitypolicies', err);
        return undefined;
      }
    })();
    return this.policyList;
  }
}

export function targetName(item: Item): string | undefined {
  return item.target?.name ?? item.record?.gateway;
}

/**
 * The object's gateway id as far as it is known: planned, desired, recorded, else, for an
 * ApiDefinition, the one its resource names (spec, status or the default), which needs no
 * gateway (an API whose context cannot be resolved still has one). A policy's id can depend on
 * its gateway (a Dashboard names it by its own _id), so without a gateway it stays ''.
 */
export function knownId(item: Item): string {
  return item.plan?.id || item.desired?.id || item.record?.id || (item.obj && item.kind === API_DEFINITION ? gatewayIdFor(API_DEFINITION, item.obj) : '');
}

export function reportFor(item: Item, result: ObjectResult): ObjectReport {
  const p = item.plan ?? { action: 'NOOP' as const, reason: 'unchanged' as const, id: knownId(item) };
  const gateway = targetName(item);
  return {
    kind: item.kind.kind,
    namespace: item.ref.namespace,
    name: item.ref.name,
    ...(gateway ? { gateway } : {}),
    id: p.id,
    action: p.action,
    reason: p.reason,
    result,
  };
}

export function errorFields(err: unknown): { error: string; code: string } {
  return { error: describeError(err), code: errorCode(err) };
}

export function finishReport(ctx: RunContext, objects: ObjectReport[]): RunReport {
  const counts: Partial<Record<ObjectResult, number>> = {};
  for (const o of objects) counts[o.result] = (counts[o.result] ?? 0) + 1;
  objects.sort((a, b) => `${a.kind}/${a.namespace}/${a.name}`.localeCompare(`${b.kind}/${b.namespace}/${b.name}`));
  const report: RunReport = {
    runId: ctx.runId,
    trigger: ctx.request.trigger,
    dryRun: ctx.request.dryRun === true,
    startedAt: new Date(ctx.startedAt).toISOString(),
    durationMs: ctx.deps.clock.now() - ctx.startedAt,
    gateway: { writes: ctx.writes, reloads: ctx.reloads },
    objects,
    errors: ctx.errors,
    counts,
  };
  ctx.log.info({ counts, writes: ctx.writes, reloads: ctx.reloads, errors: ctx.errors.length, durationMs: report.durationMs }, 'run finished');
  return report;
}
