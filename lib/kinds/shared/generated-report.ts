/**
 * What the kinds that generate ApiDefinitions in the cluster (Ingress, HTTPRoute) say the same
 * way about a composite pass (engine/composite.ts): its failures, the verdict of a read or
 * decide failure, the action of a sync, what the record remembers of each generated object,
 * the summary of what was written, the report line, and the Events (each one that cannot be
 * recorded is logged, never thrown). Pure but for `tell`.
 */
import type { ChildMemory, CompositeOutcome, ReportedDecision } from '../../engine/composite.js';
import type { Action } from '../../engine/plan.js';
import type { RunContext } from '../../engine/run-context.js';
import type { ObjectReport, ObjectResult, ReportReason } from '../../engine/types.js';
import type { KubeObject } from '../../kube/types.js';
import { describeError, errorCode, InvalidSpecError } from '../../platform/errors.js';
import type { SyncRecord } from '../../store/types.js';

/** How a pass is reported: its action and reason, its result, and what went wrong. */
export interface Verdict {
  action: Action;
  reason: ReportReason;
  result: ObjectResult;
  error?: string;
  code?: string;
}

/** Something to say in an Event. */
export interface Said {
  readonly type: 'Normal' | 'Warning';
  readonly reason: string;
  readonly message: string;
}

/** What a name held by an object not its generator's says: the ApiDefinitions, and the label they lack. */
export function takenMessage(label: string, e: { namespace: string; name: string }, names: readonly string[]): string {
  return `ApiDefinition ${names.map((n) => `${e.namespace}/${n}`).join(', ')} exists without the label ${label}: ${e.name}, or another object controls it: not overwritten`;
}

/** The failures of an outcome, one error each: the read or decide failure; `taken` (names held by others); each refused write; a lost finalizer. */
export function outcomeFailures<B>(o: CompositeOutcome<B>, taken?: Error): unknown[] {
  if (o.what === 'failed') return [o.error];
  const out: unknown[] = taken ? [taken] : [];
  if (o.what === 'written') {
    for (const r of o.results) if (!r.ok) out.push(r.error);
    if (o.finalizerError !== undefined) out.push(o.finalizerError);
  }
  return out;
}

/** The verdict of a pass that failed before writing: Invalid when deciding threw, else a failed read or write. */
export function failedVerdict<B>(o: Extract<CompositeOutcome<B>, { what: 'failed' }>): Verdict {
  if (o.error instanceof InvalidSpecError) return { action: 'NOOP', reason: 'invalid spec', result: 'invalid', error: describeError(o.error), code: errorCode(o.error) };
  return { action: 'NOOP', reason: o.writing ? 'spec changed' : 'read failed', result: 'failed', error: describeError(o.error), code: errorCode(o.error) };
}

/** The error and code of `failed` (joined), or nothing. */
export function failureFields(failed: readonly unknown[]): { error?: string; code?: string } {
  return failed.length > 0 ? { error: failed.map(describeError).join('; '), code: errorCode(failed[0]) } : {};
}

/** The action and reason of a sync decision: CREATE when everything is created for an object never recorded, NOOP with nothing to do, else UPDATE. */
export function syncAction<B>(d: ReportedDecision<B>, recorded: boolean): { action: Action; reason: ReportReason } {
  const steps = d.what === 'quiet' ? [] : d.steps;
  const addFinalizer = d.what === 'upsert' && d.addFinalizer;
  const created = steps.length > 0 && steps.every((s) => s.op === 'create') && !recorded;
  const action: Action = steps.length === 0 && !addFinalizer ? 'NOOP' : created ? 'CREATE' : 'UPDATE';
  return { action, reason: action === 'NOOP' ? 'unchanged' : created ? 'created in cluster' : 'spec changed' };
}

/** The record's result for a verdict's. */
export function recordResult(v: Verdict): SyncRecord['result'] {
  return v.result === 'waiting' ? 'waiting' : v.result === 'invalid' ? 'invalid' : v.result === 'failed' ? 'failed' : 'synced';
}

/**
 * What the record remembers of each of `names` after this pass: what was written now, else what
 * was found unchanged, else what the record knew (an object not written keeps its memory); names
 * not desired any more are forgotten.
 */
export function rememberedMemory<B>(
  o: CompositeOutcome<B>,
  names: readonly string[],
  unchanged: ReadonlyMap<string, ChildMemory>,
  before: Readonly<Record<string, ChildMemory>>,
): Record<string, ChildMemory> {
  const written = new Map<string, ChildMemory>();
  if (o.what === 'written')
    o.decision.steps.forEach((s, i) => {
      const r = o.results[i];
      if (r?.ok && r.memory) written.set(s.name, r.memory);
    });
  return Object.fromEntries(
    names.flatMap((n) => {
      const m = written.get(n) ?? unchanged.get(n) ?? before[n];
      return m ? [[n, m] as const] : [];
    }),
  );
}

/** "created a, b; updated c; deleted d" of the writes that succeeded; undefined when none did. */
export function writtenSummary<B>(o: CompositeOutcome<B>): string | undefined {
  if (o.what !== 'written') return undefined;
  const steps = o.decision.steps;
  const done = (op: string) => steps.filter((s, i) => s.op === op && o.results[i]?.ok).map((s) => s.name);
  const parts = (
    [
      ['created', done('create')],
      ['updated', done('update')],
      ['deleted', done('delete')],
    ] as const
  )
    .filter(([, n]) => n.length > 0)
    .map(([what, n]) => `${what} ${n.join(', ')}`);
  return parts.length > 0 ? parts.join('; ') : undefined;
}

/** The report line of object `namespace`/`name` of `kind` (result: when the engine knows better). */
export function reportLine(kind: string, e: { namespace: string; name: string }, v: Verdict, result?: ObjectResult, extra: Partial<ObjectReport> = {}): ObjectReport {
  return {
    kind,
    namespace: e.namespace,
    name: e.name,
    id: '',
    action: v.action,
    reason: v.reason,
    result: result ?? v.result,
    ...(v.error !== undefined ? { error: v.error } : {}),
    ...(v.code !== undefined ? { code: v.code } : {}),
    ...extra,
  };
}

/** Records each of `said` as an Event on `obj`; one that cannot be recorded is logged. */
export async function tell(ctx: RunContext, obj: KubeObject, key: string, said: readonly Said[]): Promise<void> {
  for (const s of said) {
    try {
      await ctx.deps.kube.recordEvent(obj, s.type, s.reason, s.message);
    } catch (err) {
      ctx.log.warn({ key, reason: s.reason, err: describeError(err), code: errorCode(err) }, 'event not recorded');
    }
  }
}
