/**
 * AWS Lambda: the EventBridge schedule → a tick (lib/triggers/schedule.ts) with a deadline from
 * the invocation's remaining time → a summary. Up to SHARD_SIZE objects the tick is one full
 * run (the full report goes to the log; the run's metrics go out as EMF lines,
 * lib/metrics/emf.ts); above, its shards go to SHARD_QUEUE_URL (the `shard` function runs them)
 * and the summary says how many, or, without a queue, run here one after the other. Its requests
 * go over HTTP_CLIENT's transport, as every full run's do (lib/service.ts fullRunTransport).
 */
import type { RunReport } from '../lib/engine/types.js';
import { deadlineWithin, type ShardedTick } from '../lib/triggers/schedule.js';
import { tickToShardQueue } from '../lib/triggers/shard-queue.js';
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

export interface ScheduleResult {
  counts: RunReport['counts'];
  errors: number;
  writes: number;
  reloads: number;
  deferred: number;
  /** a sharded tick: its run id, shards and objects, and whether they went to the queue */
  sharded?: ShardedTick;
}

export async function handler(event?: ScheduledEvent, context?: LambdaContext): Promise<ScheduleResult> {
  const svc = await lambdaServiceFromEnv({ fullRuns: true });
  const deadline = deadlineWithin(svc, context?.getRemainingTimeInMillis());
  svc.log.info({ awsRequestId: context?.awsRequestId, scheduledAt: event?.time, deadline }, 'scheduled run');
  try {
    const { report, sharded } = await tickToShardQueue(svc, deadline);
    return {
      counts: report?.counts ?? {},
      errors: report?.errors.length ?? 0,
      writes: report?.gateway.writes ?? 0,
      reloads: report?.gateway.reloads ?? 0,
      deferred: report?.counts.deferred ?? 0,
      ...(sharded ? { sharded } : {}),
    };
  } finally {
    svc.flushMetrics();
  }
}
