/**
 * Which Kubernetes Event an object's outcome is told in. Pure: no clock, no I/O.
 *
 * Contract: every run that ends for an object in anything but synced or unchanged, where the
 * user has something to act on or wait for, gives a Warning; a few successful changes give a
 * Normal Event; everything else gives none. The message of a Warning is the error the report
 * and the status carry, so a steady problem says the same thing on every run and is counted
 * on one Event (lib/kube/events.ts) instead of making a new one.
 *
 * | outcome                                              | type    | reason             |
 * | ---------------------------------------------------- | ------- | ------------------ |
 * | written and confirmed, first time or after a problem,| Normal  | Synced             |
 * |   or after a change the user made (spec, id, context)|         |                    |
 * | deleted from the gateway, finalizer removed          | Normal  | Deleted            |
 * | a gateway write failed (and each run in its backoff) | Warning | SyncFailed         |
 * | a gateway delete failed (and each run in its backoff)| Warning | DeleteFailed       |
 * | the spec is invalid (ours or the gateway's verdict)  | Warning | Invalid            |
 * | an object waits for one it references                | Warning | Waiting            |
 * | a deletion is held by the objects referencing it     | Warning | DeletionHeld       |
 * | Tyk changed what it loaded (a renamed listen path)   | Warning | Diverged           |
 * | written, not visible after reloads within the budget | Warning | NotVisible         |
 * | refused by ownership (owners.ts): another resource  | Warning | IdClaimed,         |
 * |   owns its id, an unowned object not to adopt, an   |         | AdoptionNotPermitted,|
 * |   older resource's domain and listen path           |         | ListenPathClash    |
 * | its gateway cannot be reached, or its OperatorContext| Warning | GatewayUnavailable |
 * |   (or the context's Secret) is missing or incomplete |         |                    |
 * | the gateway lacks the kind's API (Tyk 3.1: policies) | Warning | GatewayUnsupported |
 * | a reference into another namespace no ReferenceGrant | Warning | RefNotPermitted    |
 * |   permits                                            |         |                    |
 * | its OperatorContext's URL is refused (userinfo, query| Warning | UrlNotPermitted    |
 * |   or fragment; loopback, link-local, unspecified or  |         |                    |
 * |   not named by CONTEXT_URL_ALLOW)                    |         |                    |
 * | any other failed read of its state                   | Warning | ReadFailed         |
 * | the API server refused its status patch              | Warning | StatusPatchFailed  |
 * | paused (tyk.tyk.io/reconcile-paused) with a write held| Normal  | ReconcilePaused    |
 * | a deletion held by MAX_DELETES_PER_RUN               | Warning | TooManyDeletions   |
 *
 * None: unchanged (but a recorded divergence is still told), deferred (another run holds the
 * object's lock and tells its outcome; or the run ran out of time and the next one takes it
 * up), planned (a dry run writes nothing, Events included), skipped (not ours to manage).
 */
import type { SyncResult } from '../store/types.js';
import type { Action } from './plan.js';
import { refusalOfCode } from './refusals.js';
import type { ObjectResult, ReportReason } from './types.js';

export interface OutcomeEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}

/** What a run did to one object, as far as its Event is concerned (an ObjectReport is one). */
export interface Outcome {
  result: ObjectResult;
  reason: ReportReason;
  action: Action;
  id: string;
  /** the gateway's name; undefined means the default one */
  gateway?: string | undefined;
  error?: string | undefined;
  code?: string | undefined;
  /** the record before this run's decision, and after it (null or undefined: none) */
  before?: RecordedOutcome | null | undefined;
  after?: RecordedOutcome | null | undefined;
}

/** The part of a SyncRecord an Event looks at. */
export interface RecordedOutcome {
  result: SyncResult;
  error?: string | undefined;
  /** the refusal a Failed object was refused with (owners.ts) */
  refusal?: string | undefined;
}

/** Reasons of a synced write that are a change the user made, told even when it was synced before. */
const USER_CHANGES: ReadonlySet<ReportReason> = new Set(['spec changed', 'id changed', 'moved to another gateway']);

export function outcomeEvent(o: Outcome): OutcomeEvent | undefined {
  const gateway = o.gateway ?? 'default';
  const warning = (reason: string, message: string | undefined, fallback: string): OutcomeEvent => ({ type: 'Warning', reason, message: message || fallback });
  switch (o.result) {
    case 'synced':
      if (o.before?.result === 'synced' && !USER_CHANGES.has(o.reason)) return undefined;
      return { type: 'Normal', reason: 'Synced', message: `${o.reason}: written to gateway ${gateway} as ${o.id}` };
    case 'deleted':
      return { type: 'Normal', reason: 'Deleted', message: o.reason === 'already gone' ? `already gone from gateway ${gateway} (${o.id})` : `deleted from gateway ${gateway} (${o.id})` };
    case 'unchanged':
      return o.after?.result === 'diverged' ? warning('Diverged', o.after.error, 'the gateway changed what was sent') : undefined;
    case 'failed':
    case 'backoff':
      return failure(o);
    case 'invalid':
      return warning('Invalid', o.error, 'invalid spec');
    case 'waiting':
      return o.reason === 'referenced by policies' || o.reason === 'referenced by catalogues'
        ? warning('DeletionHeld', o.error, 'deletion held')
        : warning('Waiting', o.error, 'waiting for a dependency');
    case 'diverged':
      return warning('Diverged', o.error, 'the gateway changed what was sent');
    case 'pending':
      return warning('NotVisible', o.error, `not visible on gateway ${gateway} after reload; will retry`);
    case 'paused':
      return o.action === 'NOOP' || o.action === 'WAIT' ? undefined : { type: 'Normal', reason: 'ReconcilePaused', message: o.error || 'paused' };
    case 'held':
      return warning('TooManyDeletions', o.error, 'deletion held by MAX_DELETES_PER_RUN');
    case 'deferred':
    case 'planned':
    case 'skipped':
      return undefined;
  }
}

function failure(o: Outcome): OutcomeEvent {
  const message = o.error || `${o.result}`;
  if (o.after?.refusal !== undefined && o.after.result === 'failed') return { type: 'Warning', reason: o.after.refusal, message };
  // a refused reference or context URL: the Event's reason is the refusal's
  const refused = refusalOfCode(o.code);
  if (refused !== undefined) return { type: 'Warning', reason: refused, message };
  if (o.reason === 'gateway unavailable') return { type: 'Warning', reason: 'GatewayUnavailable', message };
  // the gateway lacks the API this kind needs (e.g. Tyk 3.1 and /tyk/policies): the error says which and what to do
  if (o.reason === 'not supported by gateway' || o.code === 'GATEWAY_UNSUPPORTED') return { type: 'Warning', reason: 'GatewayUnsupported', message };
  if (o.reason === 'read failed') {
    if (o.code === 'GATEWAY_UNAVAILABLE') return { type: 'Warning', reason: 'GatewayUnavailable', message };
    return { type: 'Warning', reason: 'ReadFailed', message };
  }
  // a run in backoff tells the failure it waits out, in the same words: the same Event, counted
  return { type: 'Warning', reason: o.action === 'DELETE' ? 'DeleteFailed' : 'SyncFailed', message };
}

/** The Event of a status patch the API server refused (the object keeps its old status). */
export function statusPatchFailedEvent(error: string): OutcomeEvent {
  return { type: 'Warning', reason: 'StatusPatchFailed', message: `status not saved: ${error}` };
}
