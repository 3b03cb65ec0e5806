/**
 * SHARD_QUEUE_URL's queue (./sqs.ts), for the producers of shards only: the schedule function
 * and the self-hosted schedule. The module holding the AWS SDK client is imported here, on
 * demand, so no other function's bundle reaches it.
 */
import type { Service } from '../service.js';
import type { ShardQueue } from './schedule.js';

/** The queue SHARD_QUEUE_URL names; undefined without one (shards then run in the process that ticks). */
export async function shardQueueOf(svc: Service): Promise<ShardQueue | undefined> {
  const url = svc.shards.queueUrl;
  if (url === undefined) return undefined;
  const { SqsShardQueue } = await import('./sqs.js');
  return new SqsShardQueue({ queueUrl: url, log: svc.log });
}
