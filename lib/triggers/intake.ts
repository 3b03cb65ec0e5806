/**
 * Shared by the webhook triggers: turn a delivery's events into one run and answer with what
 * was taken, what was ignored and why, and the run's report.
 *
 * Deliveries the sender repeats (same auditID, same CloudEvent source and id) within
 * DELIVERY_MEMORY_MS are dropped, so an API server resending a batch costs no second run. A
 * delivery that names nothing new runs nothing. An event about a Secret becomes the objects
 * whose records use it (lib/events/dependents.ts); one about an EndpointSlice of the gateway's
 * Service (TYK_GATEWAY_SERVICE) makes a full run (sharded above SHARD_SIZE, as a tick is:
 * Service.runEvents). Once the service is stopping, a delivery is
 * refused (503) before it is marked, so its retry is taken by the next process.
 */

import type { Trigger } from '../engine/types.js';
import { collect, type EventItem, isEmptyScope } from '../events/refs.js';
import { describeError, errorCode, ShuttingDownError } from '../platform/errors.js';
import type { Service } from '../service.js';
import type { HttpOutput } from './io.js';

export async function runIntake(svc: Service, trigger: Trigger, items: EventItem[]): Promise<HttpOutput> {
  // before the delivery is marked seen: the sender's retry after this 503 must not be dropped as a repeat
  if (svc.stopping) throw new ShuttingDownError();
  const ids = [...new Set(items.flatMap((i) => (i.id === undefined ? [] : [i.id])))];
  const seen = await svc.markDelivered(ids);
  const gatewayService = svc.gatewayService;
  const intake = collect(await svc.dependents(items), { seen, maxRefs: svc.webhookLimits.maxRefs, ...(gatewayService ? { gatewayService } : {}) });
  const { scope } = intake;
  const empty = isEmptyScope(scope);
  const taken = { accepted: intake.accepted, ignored: intake.ignored, ...(intake.folded ? { folded: intake.folded } : {}) };
  if (empty) return { statusCode: 200, body: { ...taken, report: null } };
  if (svc.webhookAnswer === 'accepted') {
    // the run goes on after the answer, coalesced: its outcome is in the log, the metrics and the objects' status
    svc.runCoalesced(trigger, scope).catch((err: unknown) => svc.log.warn({ trigger, err: describeError(err), code: errorCode(err) }, 'a webhook run failed after its delivery was answered'));
    return { statusCode: 202, body: { ...taken, queued: true } };
  }
  return { statusCode: 200, body: { ...taken, report: await svc.runEvents(trigger, scope) } };
}
