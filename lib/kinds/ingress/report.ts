/**
 * How an Ingress's pass ends: its report line, its record, and the Events `kubectl describe
 * ingress` shows (the Ingress's status is its controller's to write, not ours).
 *
 * | outcome                                          | report                          | Event                 |
 * | ------------------------------------------------ | ------------------------------- | --------------------- |
 * | ApiDefinitions created, updated or deleted       | CREATE/UPDATE synced            | Normal Synced         |
 * | nothing to change                                | NOOP unchanged                  | none                  |
 * | its template missing or not labelled as one      | WAIT waiting (INGRESS_TEMPLATE) | Warning Waiting       |
 * | a path refused (named port, no service backend,  | … invalid (INGRESS_INVALID)     | Warning Invalid       |
 * |   duplicate, name too long)                      |                                 |                       |
 * | a name held by an object not ours                | … failed (INGRESS_NAME_TAKEN)   | Warning SyncFailed    |
 * | a write refused or failed                        | … failed                        | Warning SyncFailed    |
 * | a read failed                                    | NOOP read failed, failed        | Warning ReadFailed    |
 * | deleted / gone / another class: what it made gone| DELETE deleted                  | Normal Deleted (class)|
 *
 * The record (`Ingress/<ns>/<name>`, no gateway id) keeps the result, the template and the
 * generated names as `uses` (the store's index turns an event about one into this Ingress), and
 * what we last wrote of each generated ApiDefinition. It is saved only when it changes.
 */

import type { CompositeOutcome } from '../../engine/composite.js';
import { exhaustive } from '../../engine/decide.js';
import { hashOf } from '../../engine/hash.js';
import type { RunContext } from '../../engine/run-context.js';
import type { ObjectReport, ObjectResult } from '../../engine/types.js';
import { describeError, IngressError, InvalidSpecError } from '../../platform/errors.js';
import type { SyncRecord } from '../../store/types.js';
import { API_DEFINITION } from '../api-definition/kind.js';
import {
  failedVerdict,
  failureFields,
  outcomeFailures,
  recordResult,
  rememberedMemory,
  reportLine,
  type Said,
  syncAction,
  takenMessage,
  tell,
  type Verdict,
  writtenSummary,
} from '../shared/generated-report.js';
import { type ChildMemory, INGRESS_LABEL, templateNameOf } from './apis.js';
import type { IngressBecause } from './decide.js';
import type { IngressEntry } from './load.js';
import { ingressSettings } from './phase.js';

/** How an Ingress's pass ended (engine/composite.ts). */
export type Outcome = CompositeOutcome<IngressBecause>;

/** A name the plan needs, held by an object not labelled for this Ingress (or controlled by another). */
export function takenError(e: { namespace: string; name: string }, names: readonly string[]): IngressError {
  return new IngressError('INGRESS_NAME_TAKEN', takenMessage(INGRESS_LABEL, e, names));
}

/** The failures of an outcome, one error each (a taken name, a refused write, a lost finalizer). */
function failures(e: IngressEntry, o: Outcome): unknown[] {
  const because = o.what === 'failed' ? undefined : o.decision.because;
  return outcomeFailures(o, because?.reason === 'sync' && because.diff.taken.length > 0 ? takenError(e, because.diff.taken) : undefined);
}

function verdict(e: IngressEntry, o: Outcome): Verdict {
  // an Ingress whose decision threw (ingress.ts): Invalid, as an invalid plan is
  if (o.what === 'failed') return failedVerdict(o);
  const d = o.decision;
  const wrote = o.what === 'written' && o.results.some((r) => r.ok);
  const failed = failures(e, o);
  const failure = failureFields(failed);
  const because = d.because;
  switch (because.reason) {
    case 'wait':
      return { action: 'WAIT', reason: 'waiting for dependency', result: 'waiting', error: because.waiting, code: 'INGRESS_TEMPLATE' };
    case 'teardown': {
      const reason = because.why === 'class changed' ? 'ingress class changed' : 'deleted in cluster';
      return { action: 'DELETE', reason, result: failed.length > 0 ? 'failed' : 'deleted', ...failure };
    }
    case 'sync': {
      const { action, reason } = syncAction(d, e.record !== null);
      if (failed.length > 0) return { action, reason, result: 'failed', ...failure };
      if (because.plan.problems.length > 0) return { action, reason, result: 'invalid', error: because.plan.problems.join('; '), code: 'INGRESS_INVALID' };
      if (because.diff.terminating.length > 0) {
        return { action, reason, result: 'waiting', error: `ApiDefinition ${because.diff.terminating.map((n) => `${e.namespace}/${n}`).join(', ')} is being deleted; made again once it is gone` };
      }
      return { action, reason, result: wrote || o.what === 'written' ? 'synced' : 'unchanged' };
    }
    default:
      return exhaustive(because);
  }
}

export function reportIngress(e: IngressEntry, o: Outcome, result?: ObjectResult, extra: Partial<ObjectReport> = {}): ObjectReport {
  return reportLine('Ingress', e, verdict(e, o), result, extra);
}

/** The record after this pass: null to delete it, undefined to leave it as it is. */
export function recordOf(e: IngressEntry, o: Outcome, time: string): SyncRecord | null | undefined {
  if (o.what === 'failed') return undefined;
  const d = o.decision;
  const v = verdict(e, o);
  if (d.because.reason === 'teardown') return v.result === 'deleted' ? null : undefined;
  const ingress = e.state.ingress;
  const templateName = ingress ? templateNameOf(ingress) : undefined;
  const template = templateName === undefined ? undefined : `${API_DEFINITION.kind}/${e.namespace}/${templateName}`;
  const result = recordResult(v);
  let generated: Record<string, ChildMemory> = { ...(e.record?.generated ?? {}) };
  let desiredHash = e.record?.desiredHash ?? '';
  let names: string[] = Object.keys(generated);
  if (d.because.reason === 'sync') {
    const { plan, diff } = d.because;
    names = plan.apis.map((a) => a.name);
    desiredHash = hashOf(plan.apis.map((a) => a.object));
    generated = rememberedMemory(o, names, diff.unchanged, generated);
  }
  const uses = [...(template ? [template] : []), ...names.map((n) => `${API_DEFINITION.kind}/${e.namespace}/${n}`)];
  return {
    key: e.key,
    id: '',
    generation: ingress?.metadata.generation ?? e.record?.generation ?? 0,
    desiredHash,
    observedHash: '',
    result,
    ...(v.error !== undefined ? { error: v.error } : {}),
    failures: result === 'failed' ? (e.record?.result === 'failed' ? e.record.failures : 0) + 1 : 0,
    time,
    ...(uses.length > 0 ? { uses } : {}),
    ...(Object.keys(generated).length > 0 ? { generated } : {}),
  };
}

/** Tells the outcome in Events on the Ingress (none in a steady state); one that cannot be recorded is logged. */
export async function tellIngress(ctx: RunContext, e: IngressEntry, o: Outcome): Promise<void> {
  const ingress = e.state.ingress;
  if (!ingress) return;
  const said: Said[] = [];
  if (o.what === 'failed') said.push({ type: 'Warning', reason: o.error instanceof InvalidSpecError ? 'Invalid' : o.writing ? 'SyncFailed' : 'ReadFailed', message: describeError(o.error) });
  else if (o.decision.because.reason === 'wait') said.push({ type: 'Warning', reason: 'Waiting', message: o.decision.because.waiting });
  else {
    const because = o.decision.because;
    if (because.reason === 'sync' && because.plan.problems.length > 0) said.push({ type: 'Warning', reason: 'Invalid', message: because.plan.problems.join('; ') });
    const failed = failures(e, o);
    if (failed.length > 0) said.push({ type: 'Warning', reason: because.reason === 'teardown' ? 'DeleteFailed' : 'SyncFailed', message: failed.map(describeError).join('; ') });
    const written = writtenSummary(o);
    if (written !== undefined && because.reason === 'sync') said.push({ type: 'Normal', reason: 'Synced', message: `ApiDefinitions ${written}` });
    if (written !== undefined && because.reason === 'teardown' && because.why === 'class changed')
      said.push({ type: 'Normal', reason: 'Deleted', message: `no longer of class ${ingressSettings(ctx).className}: ApiDefinitions ${written}` });
  }
  await tell(ctx, ingress, e.key, said);
}
