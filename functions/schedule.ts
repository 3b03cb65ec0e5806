/**
 * The schedule: a full run over everything, on RESYNC_SCHEDULE (self-hosted, node-cron) or
 * on an EventBridge schedule (Lambda). Finds what missed events would have told us, and undoes
 * drift on the gateway side.
 *
 * On Lambda the run gets a deadline from the invocation's remaining time (less a margin for
 * the last writes to settle and records to be saved): objects it has not started by then are
 * left, untouched and unlocked, to the next tick; nothing is cut off half-way.
 */
import type { RunReport } from '../lib/reconcile/run.js';
import type { Service } from '../lib/service.js';
import { lambdaServiceFromEnv } from './http.js';

/** What EventBridge sends for a scheduled rule (only `time` is read, for the log). */
export interface ScheduledEvent {
  'detail-type'?: string;
  source?: string;
  time?: string;
  [key: string]: unknown;
}

export interface LambdaContext {
  getRemainingTimeInMillis(): number;
}

/** Time kept back from the deadline for settling and saving what was started. */
export const DEADLINE_MARGIN_MS = 30_000;

export function scheduledRun(svc: Service, deadline?: number): Promise<RunReport> {
  return svc.run({ trigger: 'schedule', scope: { all: true }, ...(deadline !== undefined ? { deadline } : {}) });
}

/** EventBridge scheduled event → summary (the full report goes to the log). */
export async function handler(
  event?: ScheduledEvent,
  context?: LambdaContext,
): Promise<{ counts: RunReport['counts']; errors: number; writes: number; reloads: number; deferred: number }> {
  const svc = await lambdaServiceFromEnv();
  const remaining = context?.getRemainingTimeInMillis();
  const deadline = remaining === undefined ? undefined : svc.parts.clock.now() + Math.max(0, remaining - DEADLINE_MARGIN_MS);
  svc.log.info({ scheduledAt: event?.time, deadline }, 'scheduled run');
  const report = await scheduledRun(svc, deadline);
  return {
    counts: report.counts,
    errors: report.errors.length,
    writes: report.gateway.writes,
    reloads: report.gateway.reloads,
    deferred: report.counts.deferred ?? 0,
  };
}
