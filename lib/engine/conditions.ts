/**
 * The `Ready` and `Synced` conditions of a custom resource, with Crossplane's meanings. Pure.
 *
 * - Synced: our last attempt to make the gateway match succeeded (True), or why it did not
 *   (False: ReconcileError, Invalid, Diverged, Waiting, DeletionHeld, ReconcilePaused, or a
 *   refusal before any write, recorded with its reason: RefNotPermitted, UrlNotPermitted,
 *   IdClaimed, AdoptionNotPermitted, ListenPathClash).
 * - Ready: the gateway serves what the spec says (True: Available), or why not (False:
 *   NotVisible, Diverged, Invalid, NotSynced, Waiting, Deleting, Drifted, or that refusal;
 *   ReplicasUnavailable: a gateway of several replicas, some of which could not be read, the
 *   message naming them).
 *
 * Each condition carries `observedGeneration` (the resource's metadata.generation this pass
 * read); `lastTransitionTime` is the pass's time only when a condition's `status` changes, and
 * otherwise stays what the resource already says, so a steady state patches nothing.
 * Conditions of other types that someone else keeps on the resource are left in place.
 * Messages are never empty (kube-apiserver 1.20 refuses "" in a required string).
 */
import { isObject } from '../platform/guards.js';
import type { SyncRecord } from '../store/types.js';
import type { Action } from './plan.js';
import type { ReportReason } from './types.js';

export type ConditionType = 'Ready' | 'Synced';
export type ConditionStatus = 'True' | 'False' | 'Unknown';

export interface Condition {
  type: string;
  status: ConditionStatus;
  reason: string;
  message: string;
  lastTransitionTime: string;
  observedGeneration: number;
}

/** The annotation that pauses an object (Crossplane's `crossplane.io/paused`, in Tyk's group). */
export const PAUSE_ANNOTATION = 'tyk.tyk.io/reconcile-paused';

/** What the conditions are derived from, besides the record this pass ends with. */
export interface ConditionFacts {
  /** metadata.generation of the resource as this pass read it */
  readonly generation: number;
  /** the resource is being deleted */
  readonly deleting: boolean;
  /** paused: the write this pass would have made (action and reason), or NOOP when it would make none */
  readonly paused?: { readonly action: Action; readonly reason: ReportReason };
  /** a gateway of several replicas, some of which its last read could not reach: how many, and which */
  readonly replicas?: { readonly of: number; readonly unreadable: readonly string[]; readonly behind?: readonly string[] };
}

type Verdict = Pick<Condition, 'status' | 'reason' | 'message'>;

/** What a paused object's report, Event and Synced condition say: the pause, and the write it holds. */
export function pausedMessage(action: Action, reason: ReportReason): string {
  const held = action === 'NOOP' || action === 'WAIT' ? '' : `; held: ${action} (${reason})`;
  return `reconciliation paused by the annotation ${PAUSE_ANNOTATION}${held}`;
}

function synced(record: SyncRecord, facts: ConditionFacts): Verdict {
  if (facts.paused) return { status: 'False', reason: 'ReconcilePaused', message: pausedMessage(facts.paused.action, facts.paused.reason) };
  const error = record.error || 'no message';
  if (record.result === 'failed' && record.refusal !== undefined) return { status: 'False', reason: record.refusal, message: error };
  switch (record.result) {
    case 'synced':
    case 'pending':
      return { status: 'True', reason: 'ReconcileSuccess', message: 'the last write was accepted by the gateway' };
    case 'invalid':
      return { status: 'False', reason: 'Invalid', message: error };
    case 'diverged':
      return { status: 'False', reason: 'Diverged', message: error };
    case 'waiting':
      return { status: 'False', reason: facts.deleting ? 'DeletionHeld' : 'Waiting', message: error };
    default:
      return { status: 'False', reason: 'ReconcileError', message: error };
  }
}

function ready(record: SyncRecord, facts: ConditionFacts): Verdict {
  const p = facts.paused;
  if (p && p.action !== 'NOOP' && p.action !== 'WAIT') {
    const drift = p.reason === 'drifted on gateway' || p.reason === 'missing on gateway';
    const reason = drift ? 'Drifted' : p.action === 'DELETE' ? 'Deleting' : 'NotSynced';
    return { status: 'False', reason, message: `${p.reason}; held while paused` };
  }
  const error = record.error || 'no message';
  if (facts.deleting) return { status: 'False', reason: 'Deleting', message: record.result === 'waiting' ? error : 'the resource is being deleted' };
  if (record.result === 'failed' && record.refusal !== undefined) return { status: 'False', reason: record.refusal, message: error };
  switch (record.result) {
    case 'synced': {
      const r = facts.replicas;
      if (r && r.unreadable.length > 0) {
        const serving = r.of - r.unreadable.length;
        return { status: 'False', reason: 'ReplicasUnavailable', message: `${serving} of ${r.of} replicas serve the current spec; not known for ${r.unreadable.join(', ')}: could not be read` };
      }
      return { status: 'True', reason: 'Available', message: 'the gateway serves the current spec' };
    }
    case 'pending': {
      const behind = facts.replicas?.behind ?? [];
      return { status: 'False', reason: 'NotVisible', message: behind.length > 0 ? `${error}; not yet shown by ${behind.join(', ')}` : error };
    }
    case 'invalid':
      return { status: 'False', reason: 'Invalid', message: error };
    case 'diverged':
      return { status: 'False', reason: 'Diverged', message: error };
    case 'waiting':
      return { status: 'False', reason: 'Waiting', message: error };
    default:
      return { status: 'False', reason: 'NotSynced', message: error };
  }
}

function isCondition(v: unknown): v is Condition {
  return isObject(v) && typeof v.type === 'string';
}

/**
 * The conditions the status should hold: Ready and Synced from the record and facts, with the
 * transition times of `current` (the resource's status.conditions) kept where the status did
 * not change, followed by current conditions of other types.
 */
export function conditionsFor(record: SyncRecord, facts: ConditionFacts, current: unknown, time: string): Condition[] {
  const existing = Array.isArray(current) ? current.filter(isCondition) : [];
  const ours: [ConditionType, Verdict][] = [
    ['Ready', ready(record, facts)],
    ['Synced', synced(record, facts)],
  ];
  const built = ours.map(([type, v]): Condition => {
    const before = existing.find((c) => c.type === type);
    const lastTransitionTime = before && before.status === v.status && typeof before.lastTransitionTime === 'string' ? before.lastTransitionTime : time;
    return { type, ...v, lastTransitionTime, observedGeneration: facts.generation };
  });
  return [...built, ...existing.filter((c) => c.type !== 'Ready' && c.type !== 'Synced')];
}
