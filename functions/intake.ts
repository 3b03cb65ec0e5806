/**
 * Shared by the webhook functions: turn a delivery's events into one run and answer with
 * what was taken, what was ignored and why, and the run's report.
 *
 * Deliveries the sender repeats (same auditID, same CloudEvent source and id) within an hour
 * are dropped, so an API server resending a batch costs no second run. A delivery that names
 * nothing new runs nothing.
 */
import type { EventItem } from '../lib/events/refs.js';
import { collect } from '../lib/events/refs.js';
import type { Trigger } from '../lib/reconcile/run.js';
import type { Service } from '../lib/service.js';
import type { HttpOutput } from './http.js';

export const DELIVERY_MEMORY_MS = 60 * 60_000;

export async function runIntake(svc: Service, trigger: Trigger, items: EventItem[]): Promise<HttpOutput> {
  const ids = [...new Set(items.flatMap((i) => (i.id === undefined ? [] : [i.id])))];
  const fresh = ids.length === 0 ? [] : await svc.parts.store.markSeen(ids, DELIVERY_MEMORY_MS);
  const seen = new Set(ids.filter((_, i) => !fresh[i]));
  const intake = collect(items, { seen, maxRefs: svc.config.webhook.maxRefs });
  const { scope } = intake;
  const empty = !scope.all && (scope.refs ?? []).length === 0 && (scope.namespaces ?? []).length === 0;
  const report = empty ? undefined : await svc.run({ trigger, scope });
  return {
    statusCode: 200,
    body: { accepted: intake.accepted, ignored: intake.ignored, ...(intake.folded ? { folded: intake.folded } : {}), report: report ?? null },
  };
}
