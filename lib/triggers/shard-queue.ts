/**
 * SHARD_QUEUE_URL's queue (./sqs.ts), for the producers of shards only: the schedule function,
 * the self-hosted schedule and POST /schedule, which all tick through `tickToShardQueue`. The
 * module holding the AWS SDK client is imported here, on demand, so no other function's bundle
 * reaches it.
 */
import type { Service } from '../service.js';
import { type ShardQueue, scheduledTick, type TickOutcome } from './schedule.js';

/** The queue SHARD_QUEUE_URL names; undefined without one (shards then run in the process that ticks). */
export async function shardQueueOf(svc: Service): Promise<ShardQueue | undefined> {
  const url = svc.shards.queueUrl;
  if (url === undefined) return undefined;
  const { SqsShardQueue } = await import('./sqs.js');
  return new SqsShardQueue({ queueUrl: url, log: svc.log });
}

/** One scheduled tick (./schedule.ts) whose shards, above SHARD_SIZE, go to SHARD_QUEUE_URL's queue, or run in this process without one. */
export async function tickToShardQueue(svc: Service, deadline?: number): Promise<TickOutcome> {
  const queue = await shardQueueOf(svc);
  return scheduledTick(svc, { ...(deadline !== undefined ? { deadline } : {}), ...(queue ? { queue } : {}) });
}
