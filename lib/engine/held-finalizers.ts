/**
 * Cluster-only objects whose finalizer is held while other objects use them: nothing of them is
 * on a gateway, but deleting one that is in use would break what uses it (Tyk Operator's
 * the held kinds of the registry; a finalizer held while other objects name an object has the same shape).
 * Who uses an object is decided by the caller, purely (for the graphs: federation.ts); this
 * module decides and carries out the rest.
 *
 * decideHeld (pure), from the object, what uses it (null: could not be read) and the status
 * fields to keep, in the engine's vocabulary (`quiet | upsert | remove`, matched exhaustively):
 * - upsert: live, and our finalizer is missing or status fields differ: the finalizer is added,
 *   the fields that differ patched (null removes one; absent, null and "" are the same); when
 *   both hold it is quiet, so a steady state makes no API-server write.
 * - remove: being deleted with our finalizer and used by nothing: the finalizer is removed and
 *   the API server completes the deletion.
 * - quiet with `held`: being deleted while anything uses it, or while what uses it is not known
 *   (never released on doubt), with a Warning `DeletionHeld` naming the users. Being deleted
 *   without our finalizer: not ours to hold, quiet.
 * applyHeld carries a decision out (finalizer, status, Event) and reports it; a failed write is
 * reported (result failed, a Warning naming it), never thrown. A dry run writes nothing.
 */

import type { KubeObject } from '../kube/types.js';
import { describeError, errorCode } from '../platform/errors.js';
import { isEmptyJson } from '../platform/guards.js';
import { exhaustive } from './decide.js';
import { canonicalJson } from './hash.js';
import type { HeldKind } from './kind.js';
import type { Action } from './plan.js';
import type { RunContext } from './run-context.js';
import type { ObjectReport, ObjectResult, ReportReason } from './types.js';

export interface HeldInput {
  readonly kind: HeldKind;
  readonly obj: KubeObject;
  /** what uses it ("<Kind> <namespace>/<name>"), sorted; null when that could not be read */
  readonly users: readonly string[] | null;
  /** status fields to keep equal (null: absent); undefined: the status is not ours to keep, or not known now */
  readonly status?: Readonly<Record<string, unknown>>;
}

export type HeldDecision =
  /** nothing to write; `held`: a held deletion, and why (the report's error, the Warning's message) */
  | { readonly what: 'quiet'; readonly action: Action; readonly reason: ReportReason; readonly held?: string }
  /** the finalizer added when `addFinalizer`, the status merge-patched with `statusPatch` when given */
  | { readonly what: 'upsert'; readonly action: 'UPDATE'; readonly reason: ReportReason; readonly addFinalizer: boolean; readonly statusPatch?: Record<string, unknown> }
  /** our finalizer removed: the deletion completes */
  | { readonly what: 'remove'; readonly action: 'DELETE'; readonly reason: 'deleted in cluster' };

const same = (a: unknown, b: unknown): boolean => (isEmptyJson(a) && isEmptyJson(b)) || canonicalJson(a ?? null) === canonicalJson(b ?? null);

export function decideHeld({ kind, obj, users, status }: HeldInput): HeldDecision {
  const ours = (obj.metadata.finalizers ?? []).includes(kind.finalizer);
  if (obj.metadata.deletionTimestamp) {
    if (!ours) return { what: 'quiet', action: 'NOOP', reason: 'not managed' };
    if (users === null) return { what: 'quiet', action: 'WAIT', reason: 'in use', held: 'deletion held: what uses it could not be read' };
    if (users.length > 0) return { what: 'quiet', action: 'WAIT', reason: 'in use', held: `deletion held: still used by ${users.join(', ')}` };
    return { what: 'remove', action: 'DELETE', reason: 'deleted in cluster' };
  }
  const current = obj.status ?? {};
  const changed = Object.entries(status ?? {}).filter(([k, v]) => !same(current[k], v));
  const statusPatch = changed.length > 0 ? Object.fromEntries(changed.map(([k, v]) => [k, isEmptyJson(v) ? null : v])) : undefined;
  if (!ours) return { what: 'upsert', action: 'UPDATE', reason: 'finalizer missing', addFinalizer: true, ...(statusPatch ? { statusPatch } : {}) };
  if (statusPatch) return { what: 'upsert', action: 'UPDATE', reason: 'status changed', addFinalizer: false, statusPatch };
  return { what: 'quiet', action: 'NOOP', reason: 'unchanged' };
}

const RESULTS: Record<Action, ObjectResult> = { NOOP: 'unchanged', UPDATE: 'synced', CREATE: 'synced', DELETE: 'deleted', WAIT: 'waiting' };

/** Carries out `decision` for `input.obj` (nothing in a dry run); returns its report. */
export async function applyHeld(ctx: RunContext, input: HeldInput, decision: HeldDecision): Promise<ObjectReport> {
  const { kind, obj } = input;
  const base = { kind: kind.kind, namespace: obj.metadata.namespace ?? '', name: obj.metadata.name, id: '', action: decision.action, reason: decision.reason };
  const notManaged = decision.reason === 'not managed';
  const result: ObjectResult = notManaged ? 'skipped' : RESULTS[decision.action];
  if (decision.what === 'quiet') {
    if (decision.held === undefined) return { ...base, result };
    if (ctx.request.dryRun !== true) await tell(ctx, obj, 'DeletionHeld', decision.held);
    return { ...base, result, error: decision.held };
  }
  if (ctx.request.dryRun === true) return { ...base, result: 'planned' };
  let current = obj;
  try {
    switch (decision.what) {
      case 'upsert':
        if (decision.addFinalizer) current = await ctx.deps.kube.addFinalizer(kind, current, kind.finalizer);
        if (decision.statusPatch) current = await ctx.deps.kube.patchStatus(kind, current, decision.statusPatch);
        break;
      case 'remove':
        await ctx.deps.kube.removeFinalizer(kind, current, kind.finalizer);
        break;
      default:
        exhaustive(decision);
    }
  } catch (err) {
    const error = describeError(err);
    ctx.log.warn({ key: `${kind.kind}/${base.namespace}/${base.name}`, err: error, code: errorCode(err) }, 'held object not updated');
    await tell(ctx, current, 'SyncFailed', error);
    return { ...base, result: 'failed', error, code: errorCode(err) };
  }
  return { ...base, result };
}

/** A Warning about the object; one that cannot be recorded is logged. */
async function tell(ctx: RunContext, obj: KubeObject, reason: string, message: string): Promise<void> {
  try {
    await ctx.deps.kube.recordEvent(obj, 'Warning', reason, message);
  } catch (err) {
    ctx.log.warn({ key: `${obj.kind}/${obj.metadata.namespace ?? ''}/${obj.metadata.name}`, reason, err: describeError(err) }, 'event not recorded');
  }
}
