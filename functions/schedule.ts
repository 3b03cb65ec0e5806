/**
 * The schedule: a full run over everything, on RESYNC_SCHEDULE (self-hosted, node-cron) or
 * on an EventBridge schedule (Lambda). Finds what missed events would have told us, and undoes
 * drift on the gateway side.
 */
import type { RunReport } from '../lib/reconcile/run.js';
import type { Service } from '../lib/service.js';
import { lambdaServiceFromEnv } from './http.js';

export function scheduledRun(svc: Service): Promise<RunReport> {
  return svc.run({ trigger: 'schedule', scope: { all: true } });
}

/** EventBridge scheduled event → summary (the full report goes to the log). */
export async function handler(): Promise<{ counts: RunReport['counts']; errors: number; writes: number; reloads: number }> {
  const svc = await lambdaServiceFromEnv();
  const report = await scheduledRun(svc);
  return { counts: report.counts, errors: report.errors.length, writes: report.gateway.writes, reloads: report.gateway.reloads };
}
