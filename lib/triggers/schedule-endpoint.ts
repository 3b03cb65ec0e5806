/**
 * POST /schedule: one scheduled tick on request, for a schedule kept outside the process (a
 * Knative PingSource through deploy/knative's proxy, a CronJob running curl). It is the tick the
 * self-hosted schedule runs (./schedule.ts): retry backoff holds, as on any tick, and above
 * SHARD_SIZE objects the tick is sharded, its shards sent to SHARD_QUEUE_URL when set, else run
 * here one after the other. Unlike POST /resync, which is one run over what it names and
 * ignores backoff, it is the schedule itself.
 *
 * Requires RESYNC_TOKEN (checked before the body is read). The body is ignored (a PingSource sends its CloudEvent's data); query
 * parameters are refused, so that `?dryRun=true` is not taken for a dry run. Answers:
 * 200 with the run's report (the shards' reports merged, with `sharded`, when they ran here);
 * 202 with `sharded` when they went to the queue; 409 TICK_RUNNING while a tick this endpoint
 * started in the same process is still running (a schedule faster than a full run: the tick is
 * skipped, not queued behind); 503 when the shards could not all be sent.
 */
import { BadRequestError, TickRunningError } from '../platform/errors.js';
import type { Service } from '../service.js';
import type { HttpInput, HttpOutput, HttpRoute } from './io.js';
import { tickToShardQueue } from './shard-queue.js';

/** The services with a tick from this endpoint under way (one at a time per process). */
const ticking = new WeakSet<Service>();

export const scheduleEndpoint: HttpRoute = { guard: 'resync', handle: tick };

async function tick(svc: Service, input: HttpInput): Promise<HttpOutput> {
  const named = Object.keys(input.query).filter((k) => input.query[k] !== undefined);
  if (named.length > 0) throw new BadRequestError(`unknown parameter ${named.join(', ')}: /schedule takes none (POST /resync runs what you name)`);
  if (ticking.has(svc)) throw new TickRunningError();
  ticking.add(svc);
  try {
    const { report, sharded } = await tickToShardQueue(svc);
    if (report === undefined) return { statusCode: 202, body: { sharded } };
    return { statusCode: 200, body: sharded ? { ...report, sharded } : report };
  } finally {
    ticking.delete(svc);
  }
}
