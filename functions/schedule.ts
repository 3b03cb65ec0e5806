/**
 * AWS Lambda: the EventBridge schedule → a full run (lib/triggers/schedule.ts) with a deadline
 * from the invocation's remaining time → a summary (the full report goes to the log; the
 * run's metrics go out as EMF lines, lib/metrics/emf.ts).
 */
import type { RunReport } from '../lib/reconcile/types.js';
import { deadlineWithin, scheduledRun } from '../lib/triggers/schedule.js';
import { lambdaServiceFromEnv } from './service.js';

/** What EventBridge sends for a scheduled rule (only `time` is read, for the log). */
export interface ScheduledEvent {
  'detail-type'?: string;
  source?: string;
  time?: string;
  [key: string]: unknown;
}

export interface LambdaContext {
  getRemainingTimeInMillis(): number;
  awsRequestId?: string;
}

export async function handler(event?: ScheduledEvent, context?: LambdaContext): Promise<{ counts: RunReport['counts']; errors: number; writes: number; reloads: number; deferred: number }> {
  const svc = await lambdaServiceFromEnv();
  const deadline = deadlineWithin(svc, context?.getRemainingTimeInMillis());
  svc.log.info({ awsRequestId: context?.awsRequestId, scheduledAt: event?.time, deadline }, 'scheduled run');
  let report: RunReport;
  try {
    report = await scheduledRun(svc, deadline);
  } finally {
    svc.flushMetrics();
  }
  return {
    counts: report.counts,
    errors: report.errors.length,
    writes: report.gateway.writes,
    reloads: report.gateway.reloads,
    deferred: report.counts.deferred ?? 0,
  };
}
