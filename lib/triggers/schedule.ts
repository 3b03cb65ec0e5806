/**
 * The schedule: a full run over everything, on RESYNC_SCHEDULE (self-hosted, lib/main.ts) or
 * on an EventBridge schedule (Lambda, functions/schedule.ts). Finds what missed events would
 * have told us, and undoes drift on the gateway side.
 *
 * Given the time left (a Lambda invocation's remaining time), `deadlineWithin` sets a
 * deadline that keeps DEADLINE_MARGIN_MS back for the last writes to settle and records to be saved:
 * objects it has not started by then are left, untouched and unlocked, to the next tick;
 * nothing is cut off half-way.
 */
import type { RunReport } from '../reconcile/types.js';
import type { Service } from '../service.js';

/** Time kept back from the deadline for settling and saving what was started. */
const DEADLINE_MARGIN_MS = 30_000;

/** The deadline (on the service's clock) of a run that has `remainingMs` left; undefined: none. */
export function deadlineWithin(svc: Service, remainingMs: number | undefined): number | undefined {
  return remainingMs === undefined ? undefined : svc.now() + Math.max(0, remainingMs - DEADLINE_MARGIN_MS);
}

/** A full run, stopping between chunks of writes at `deadline` when one is given. */
export function scheduledRun(svc: Service, deadline?: number): Promise<RunReport> {
  return svc.run({ trigger: 'schedule', scope: { all: true }, ...(deadline !== undefined ? { deadline } : {}) });
}
