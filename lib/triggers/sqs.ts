/**
 * SHARD_QUEUE_URL's queue on Amazon SQS: a tick's shards, one message each (the JSON of
 * lib/scale/shards.ts shardMessage), sent with SendMessageBatch, ten to a request.
 *
 * Entries a batch reports failed are sent again (up to `attempts` in all, with a short backoff);
 * a request that fails as a whole has been retried by the SDK already. What still is not sent
 * is a ShardQueueError naming how many, after every batch was tried: the next tick sends
 * its shards again (a shard sent twice is run twice: a run is idempotent).
 *
 * The AWS SDK (@aws-sdk/client-sqs) is imported when the first shards are sent, and only the
 * schedule reaches this module (lib/triggers/schedule.ts imports it on demand): the webhooks'
 * bundles never hold it, and the Lambda bundles take it from the runtime (scripts/bundle.ts
 * keeps @aws-sdk/* external). Credentials and region are the SDK's usual ones (the function's
 * role; the region from the queue URL's host when it names one).
 */
import { describeError, ShardQueueError } from '../platform/errors.js';
import type { Logger } from '../platform/log.js';
import { type Shard, shardMessage } from '../scale/shards.js';
import type { ShardQueue } from './schedule.js';

export interface SqsShardQueueOptions {
  queueUrl: string;
  log: Logger;
  /** further SQSClient settings (a stand-in's credentials and region in tests); the endpoint is the queue URL's origin */
  client?: Record<string, unknown>;
  /** sends per entry, the first included; default 3 */
  attempts?: number;
  /** waits between attempts; default real time */
  sleep?: (ms: number) => Promise<void>;
}

/** SQS takes at most ten entries per SendMessageBatch. */
const BATCH = 10;

export class SqsShardQueue implements ShardQueue {
  constructor(private readonly options: SqsShardQueueOptions) {}

  async send(shards: readonly Shard[]): Promise<void> {
    if (shards.length === 0) return;
    const { SQSClient, SendMessageBatchCommand } = await import('@aws-sdk/client-sqs');
    const { queueUrl, log } = this.options;
    const url = new URL(queueUrl);
    const region = /^sqs\.([a-z0-9-]+)\.amazonaws\.com/.exec(url.hostname)?.[1];
    const client = new SQSClient({ endpoint: url.origin, ...(region ? { region } : {}), ...this.options.client });
    const attempts = Math.max(1, this.options.attempts ?? 3);
    const sleep = this.options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
    const unsent: { index: number; why: string }[] = [];
    try {
      for (let i = 0; i < shards.length; i += BATCH) {
        let pending = shards.slice(i, i + BATCH).map((s) => ({ Id: `shard-${s.index}`, MessageBody: shardMessage(s), index: s.index }));
        let why = '';
        for (let attempt = 1; attempt <= attempts && pending.length > 0; attempt++) {
          if (attempt > 1) await sleep(100 * 2 ** (attempt - 2));
          try {
            const out = await client.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: pending.map(({ Id, MessageBody }) => ({ Id, MessageBody })) }));
            const failed = new Map((out.Failed ?? []).map((f) => [f.Id, `${f.Code ?? 'failed'}: ${f.Message ?? ''}`]));
            pending = pending.filter((e) => failed.has(e.Id));
            why = [...failed.values()][0] ?? '';
          } catch (err) {
            why = describeError(err);
          }
          if (pending.length > 0) log.warn({ attempt, entries: pending.length, err: why }, 'shards not sent to the queue yet');
        }
        unsent.push(...pending.map((e) => ({ index: e.index, why })));
      }
    } finally {
      client.destroy();
    }
    if (unsent.length > 0) {
      throw new ShardQueueError(`${unsent.length} of ${shards.length} shards could not be sent to the queue: ${unsent[0]?.why}`, {
        context: { unsent: unsent.length, shards: shards.length },
      });
    }
  }
}
