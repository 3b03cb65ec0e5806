/**
 * AWS Lambda: the shard queue (SQS, serverless.yml `ShardQueue`) → one shard of a full run each
 * (lib/triggers/shards.ts), with a deadline from the invocation's remaining time → the messages
 * to deliver again (functionResponseType ReportBatchItemFailures); the queue moves a message
 * that keeps failing to its dead-letter queue. Its requests go over undici's pooled client
 * (lib/platform/http-undici.ts), as every full run's do.
 */

import { undiciTransports } from '../lib/platform/http-undici.js';
import { runConnections } from '../lib/service.js';
import { type SqsBatchResponse, type SqsEvent, shardBatch } from '../lib/triggers/shards.js';
import type { LambdaContext } from './schedule.js';
import { lambdaServiceFromEnv } from './service.js';

/** Full runs: undici's pooled client, sized for a run's concurrency (lib/platform/http-undici.ts). */
const FULL_RUN_TRANSPORT = undiciTransports({ connections: runConnections() });

export async function handler(event: SqsEvent, context?: LambdaContext): Promise<SqsBatchResponse> {
  const svc = await lambdaServiceFromEnv(FULL_RUN_TRANSPORT);
  try {
    return await shardBatch(svc, event, context?.getRemainingTimeInMillis());
  } finally {
    svc.flushMetrics();
  }
}
