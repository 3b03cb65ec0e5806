/**
 * How an HTTPRoute's pass ends: its report line, its record, its `status.parents` and the
 * Events `kubectl describe httproute` shows.
 *
 * | outcome                                            | report                             | Event            |
 * | -------------------------------------------------- | ---------------------------------- | ---------------- |
 * | ApiDefinitions created, updated or deleted         | CREATE/UPDATE synced               | Normal Synced    |
 * | nothing to change                                  | NOOP unchanged                     | none             |
 * | something Tyk cannot serve (UnsupportedValue)      | … invalid (ROUTE_UNSUPPORTED)      | Warning Invalid  |
 * | a backend that does not resolve (ResolvedRefs)     | … waiting (ROUTE_BACKEND)          | Warning Waiting  |
 * | a name held by an object not ours                  | … failed (ROUTE_NAME_TAKEN)        | Warning SyncFailed |
 * | a write refused or failed                          | … failed                           | Warning SyncFailed |
 * | a read failed                                      | NOOP read failed, failed           | Warning ReadFailed |
 * | deleted / gone / released: what it made gone       | DELETE deleted                     | none             |
 * | paused (tyk.tyk.io/reconcile-paused) with a write  | its action, paused                 | Normal ReconcilePaused |
 *
 * Status: each parent of ours gets `Accepted` (attach.ts; UnsupportedValue naming the fields
 * when the rules ask what Tyk cannot do) and `ResolvedRefs` (translate.ts), with
 * observedGeneration; other controllers' parents are left as they are. It is patched only when
 * it changes (a steady state patches nothing), and not at all by a dry run or for a read
 * failure. A route released from our Gateways loses our parents.
 *
 * The record (`HTTPRoute/<ns>/<name>`, no gateway id) keeps the result, the generated names, the
 * backend Services and the ReferenceGrants of each other namespace a backend is in
 * (`ReferenceGrant/<namespace>/*`) as `uses`, so an event about one of them runs the route; and
 * what we last wrote of each generated ApiDefinition.
 */
import type { CompositeOutcome } from '../../engine/composite.js';
import { pausedMessage } from '../../engine/conditions.js';
import { exhaustive } from '../../engine/decide.js';
import { hashOf } from '../../engine/hash.js';
import type { RunContext } from '../../engine/run-context.js';
import type { ObjectReport, ObjectResult } from '../../engine/types.js';
import { describeError, errorCode, InvalidSpecError, RouteError } from '../../platform/errors.js';
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
import type { RouteBecause } from './decide.js';
import { HTTP_ROUTE, ROUTE_LABEL } from './kinds.js';
import type { RouteEntry } from './load.js';
import type { NewCondition } from './model.js';
import { routeParents, sameStatus } from './status.js';
import { backendServicesOf } from './translate.js';
import { gatewayApiSettings } from './world.js';

export type RouteOutcome = CompositeOutcome<RouteBecause>;

/** A name the plan needs, held by an object not labelled for this route (or controlled by another). */
export function takenError(e: { namespace: string; name: string }, names: readonly string[]): RouteError {
  return new RouteError('ROUTE_NAME_TAKEN', takenMessage(ROUTE_LABEL, e, names));
}

function failures(e: RouteEntry, o: RouteOutcome): unknown[] {
  const because = o.what === 'failed' ? undefined : o.decision.because;
  return outcomeFailures(o, because?.reason === 'sync' && because.diff.taken.length > 0 ? takenError(e, because.diff.taken) : undefined);
}

function verdict(e: RouteEntry, o: RouteOutcome): Verdict {
  if (o.what === 'failed') return failedVerdict(o);
  const d = o.decision;
  const failed = failures(e, o);
  const failure = failureFields(failed);
  const because = d.because;
  switch (because.reason) {
    case 'paused': {
      const held = verdict(e, { what: 'decided', decision: because.held });
      return { action: held.action, reason: held.reason, result: 'paused', error: pausedMessage(held.action, held.reason) };
    }
    case 'teardown':
      return { action: 'DELETE', reason: because.why === 'released' ? 'parent changed' : 'deleted in cluster', result: failed.length > 0 ? 'failed' : 'deleted', ...failure };
    case 'sync': {
      const { action, reason } = syncAction(d, e.record !== null);
      if (failed.length > 0) return { action, reason, result: 'failed', ...failure };
      const invalid = [...because.problems, ...because.translation.unsupported];
      if (invalid.length > 0) return { action, reason, result: 'invalid', error: invalid.join('; '), code: 'ROUTE_UNSUPPORTED' };
      if (because.translation.resolvedRefs.status !== 'True') return { action, reason, result: 'waiting', error: because.translation.resolvedRefs.message, code: 'ROUTE_BACKEND' };
      if (because.diff.terminating.length > 0) {
        return { action, reason, result: 'waiting', error: `ApiDefinition ${because.diff.terminating.map((n) => `${e.namespace}/${n}`).join(', ')} is being deleted; made again once it is gone` };
      }
      return { action, reason, result: o.what === 'written' ? 'synced' : 'unchanged' };
    }
    default:
      return exhaustive(because);
  }
}

export function reportRoute(e: RouteEntry, o: RouteOutcome, result?: ObjectResult, extra: Partial<ObjectReport> = {}): ObjectReport {
  return reportLine(HTTP_ROUTE.kind, e, verdict(e, o), result, extra);
}

/** The record after this pass: null to delete it, undefined to leave it as it is. */
export function recordOf(e: RouteEntry, o: RouteOutcome, time: string): SyncRecord | null | undefined {
  if (o.what === 'failed') return undefined;
  const d = o.decision;
  const v = verdict(e, o);
  if (d.because.reason === 'paused') return undefined;
  if (d.because.reason === 'teardown') return v.result === 'deleted' ? null : undefined;
  const { wanted, diff } = d.because;
  const route = e.state.route;
  const names = wanted.map((w) => w.name);
  const generated = rememberedMemory(o, names, diff.unchanged, e.record?.generated ?? {});
  const result = recordResult(v);
  const backends = route ? backendServicesOf(route) : [];
  // a backend in another namespace depends on that namespace's ReferenceGrants (events/dependents.ts)
  const crossed = [...new Set(backends.map((b) => b.slice(0, b.indexOf('/'))).filter((ns) => ns !== e.namespace))];
  const uses = [...names.map((n) => `${API_DEFINITION.kind}/${e.namespace}/${n}`), ...backends.map((b) => `Service/${b}`), ...crossed.map((ns) => `ReferenceGrant/${ns}/*`)];
  return {
    key: e.key,
    id: '',
    generation: route?.metadata.generation ?? e.record?.generation ?? 0,
    desiredHash: hashOf(wanted.map((w) => w.object)),
    observedHash: '',
    result,
    ...(v.error !== undefined ? { error: v.error } : {}),
    failures: result === 'failed' ? (e.record?.result === 'failed' ? e.record.failures : 0) + 1 : 0,
    time,
    ...(uses.length > 0 ? { uses } : {}),
    ...(Object.keys(generated).length > 0 ? { generated } : {}),
  };
}

/** Our parents' entries of `status.parents` after this pass; undefined: leave the status alone. */
function parentsOf(o: RouteOutcome): { parentRef: Record<string, unknown>; conditions: NewCondition[] }[] | undefined {
  if (o.what === 'failed') return undefined;
  const because = o.decision.because;
  if (because.reason === 'paused') return undefined;
  if (because.reason === 'teardown') return because.why === 'released' ? [] : undefined;
  const unsupported = [...because.problems, ...because.translation.unsupported];
  return because.attachments.map((a) => {
    const accepted: NewCondition =
      a.accepted.status === 'True' && unsupported.length > 0 ? { type: 'Accepted', status: 'False', reason: 'UnsupportedValue', message: unsupported.join('; ') } : a.accepted;
    return { parentRef: a.parentRef.raw, conditions: [accepted, because.translation.resolvedRefs] };
  });
}

/** Patches the route's status when our parents' entries change, and tells the outcome in Events; failures to do either are logged. */
export async function tellRoute(ctx: RunContext, e: RouteEntry, o: RouteOutcome): Promise<void> {
  const route = e.state.route;
  if (!route || (route.metadata.deletionTimestamp && o.what !== 'failed')) return;
  const ours = parentsOf(o);
  if (ours !== undefined) {
    const settings = gatewayApiSettings(ctx);
    const now = new Date(ctx.deps.clock.now()).toISOString();
    const current = route.status?.parents;
    const parents = routeParents(current, ours, settings.controllerName, route.metadata.generation ?? 0, now);
    if (!sameStatus(current ?? [], parents)) {
      try {
        await ctx.deps.kube.patchStatus(HTTP_ROUTE, route, { parents });
      } catch (err) {
        ctx.log.warn({ key: e.key, err: describeError(err), code: errorCode(err) }, 'status not patched');
      }
    }
  }
  const said: Said[] = [];
  if (o.what === 'failed') said.push({ type: 'Warning', reason: o.error instanceof InvalidSpecError ? 'Invalid' : o.writing ? 'SyncFailed' : 'ReadFailed', message: describeError(o.error) });
  else {
    const v = verdict(e, o);
    if (v.result === 'paused' && v.error !== undefined) said.push({ type: 'Normal', reason: 'ReconcilePaused', message: v.error });
    if (v.result === 'invalid' && v.error !== undefined) said.push({ type: 'Warning', reason: 'Invalid', message: v.error });
    if (v.result === 'waiting' && v.error !== undefined) said.push({ type: 'Warning', reason: 'Waiting', message: v.error });
    const failed = failures(e, o);
    if (failed.length > 0) said.push({ type: 'Warning', reason: o.decision.because.reason === 'teardown' ? 'DeleteFailed' : 'SyncFailed', message: failed.map(describeError).join('; ') });
    const written = writtenSummary(o);
    if (written !== undefined && o.decision.because.reason === 'sync') said.push({ type: 'Normal', reason: 'Synced', message: `ApiDefinitions ${written}` });
  }
  await tell(ctx, route, e.key, said);
}
