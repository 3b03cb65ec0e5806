/**
 * Lambda's event source mapping for SQS, played by a test: ReceiveMessage (the real AWS SDK
 * client against the SQS stand-in, test/fakes/sqs.ts) → the handler with the event Lambda builds
 * ({Records: [{messageId, receiptHandle, body, attributes: {ApproximateReceiveCount, …}, …}]})
 * and a context with the time left → DeleteMessage for each record the handler did not report
 * in batchItemFailures (functionResponseType ReportBatchItemFailures). A handler that throws, or
 * a record it reports, leaves the message to come back after the visibility timeout.
 */
import { DeleteMessageCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { SqsBatchResponse, SqsEvent } from '../../lib/triggers/shards.js';
import type { FakeSqs } from '../fakes/sqs.js';

/** What the function's handler gets as context (the part ours read). */
export interface InvocationContext {
  getRemainingTimeInMillis(): number;
  awsRequestId: string;
}

export type SqsHandler = (event: SqsEvent, context: InvocationContext) => Promise<SqsBatchResponse>;

/** An SDK client for the stand-in: its endpoint, dummy credentials. */
export function sqsClient(sqs: FakeSqs): SQSClient {
  return new SQSClient({ endpoint: sqs.url, region: 'us-east-1', credentials: { accessKeyId: 'test-key-id', secretAccessKey: 'test-secret' }, maxAttempts: 1 });
}

export interface Poll {
  /** messages received this poll */
  received: number;
  /** message ids the handler reported failed, or every one when it threw */
  failed: string[];
  deleted: number;
  /** the handler threw (what it threw) */
  threw?: unknown;
}

export class EventSourceMapping {
  private seq = 0;

  constructor(
    private readonly options: {
      client: SQSClient;
      queueUrl: string;
      queueArn: string;
      handler: SqsHandler;
      /** messages per invocation; default 1 */
      batchSize?: number;
      /** what the context says is left; default 300 s (the function's timeout) */
      remainingMs?: () => number;
    },
  ) {}

  /** One receive, one invocation (when something came), deletes. */
  async pollOnce(): Promise<Poll> {
    const { client, queueUrl, queueArn, handler } = this.options;
    const got = await client.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: this.options.batchSize ?? 1, MessageSystemAttributeNames: ['All'] }));
    const messages = got.Messages ?? [];
    if (messages.length === 0) return { received: 0, failed: [], deleted: 0 };
    const event: SqsEvent = {
      Records: messages.map((m) => ({
        messageId: m.MessageId as string,
        receiptHandle: m.ReceiptHandle as string,
        body: m.Body as string,
        attributes: { ...(m.Attributes ?? {}) },
        messageAttributes: {},
        md5OfBody: m.MD5OfBody as string,
        eventSource: 'aws:sqs',
        eventSourceARN: queueArn,
        awsRegion: 'us-east-1',
      })),
    };
    const remaining = this.options.remainingMs ?? (() => 300_000);
    let failed: string[];
    let threw: unknown;
    try {
      const out = await handler(event, { getRemainingTimeInMillis: remaining, awsRequestId: `invocation-${++this.seq}` });
      failed = out.batchItemFailures.map((f) => f.itemIdentifier);
    } catch (err) {
      threw = err;
      failed = messages.map((m) => m.MessageId as string);
    }
    let deleted = 0;
    for (const m of messages) {
      if (failed.includes(m.MessageId as string)) continue;
      await client.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: m.ReceiptHandle }));
      deleted++;
    }
    return { received: messages.length, failed, deleted, ...(threw !== undefined ? { threw } : {}) };
  }

  /** Polls until a receive finds nothing visible; returns every poll that received something. */
  async drain(maxPolls = 1_000): Promise<Poll[]> {
    const polls: Poll[] = [];
    for (let i = 0; i < maxPolls; i++) {
      const p = await this.pollOnce();
      if (p.received === 0) return polls;
      polls.push(p);
    }
    throw new Error(`the queue did not drain in ${maxPolls} polls`);
  }
}
