/**
 * The state of one run: its dependencies, settings, the per-object Items it works on, counters,
 * and the report helpers. Shared by load.ts, apply.ts and run.ts; no I/O of its own except
 * through the dependencies it holds.
 */
import { randomUUID } from 'node:crypto';
import { describeError, errorCode } from '../errors.js';
import type { GatewayTarget, TargetResolver } from '../gateway/targets.js';
import type { JsonObject } from '../gateway/types.js';
import type { KubeObject } from '../kube/types.js';
import type { Logger } from '../log.js';
import type { SyncRecord } from '../store/types.js';
import { gatewayIdFor } from './ids.js';
import { API_DEFINITION, type ManagedKind, type ObjectRef } from '../kinds.js';
import type { NamespacedName } from './links.js';
import type { DesiredState, ObservedState, Plan } from './plan.js';
import type { ObjectReport, ObjectResult, RunDeps, RunReport, RunRequest, RunSettings } from './types.js';

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
