/**
 * AWS Lambda: the shard queue (SQS, serverless.yml `ShardQueue`) → one shard of a full run each
 * (lib/triggers/shards.ts), with a deadline from the invocation's remaining time → the messages
 * to deliver again (functionResponseType ReportBatchItemFailures); the queue moves a message
 * that keeps failing to its dead-letter queue. Its requests go over HTTP_CLIENT's
 * transport, as every full run's do (lib/service.ts fullRunTransport).
 */

import { type SqsBatchResponse, type SqsEvent, shardBatch } from '../lib/triggers/shards.js';
import type { LambdaContext } from './schedule.js';
import { lambdaServiceFromEnv } from './service.js';

export async function handler(event: SqsEvent, context?: LambdaContext): Promise<SqsBatchResponse> {
  const svc = await lambdaServiceFromEnv({ fullRuns: true });
  try {
    return await shardBatch(svc, event, context?.getRemainingTimeInMillis());
  } finally {
    svc.flushMetrics();
  }
}
