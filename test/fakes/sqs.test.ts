/**
 * The SQS stand-in (./sqs.ts) through the real AWS SDK client, over HTTP: at-least-once with
 * a visibility timeout on an injected clock, redelivery with ApproximateReceiveCount, receipt
 * handles as SQS treats them, redrive to the dead-letter queue, and what SQS refuses. The SDK
 * checks the MD5 of every body it sends and receives, so the digests are right too.
 */
import {
  ChangeMessageVisibilityCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import t from 'tap';
import { FakeClock } from '../harness/clock.js';
import { sqsClient } from '../harness/sqs-lambda.js';
import { type FakeSqs, MAX_MESSAGE_BYTES, startFakeSqs } from './sqs.js';

type Test = Parameters<Parameters<typeof t.test>[0]>[0];

async function setup(t: Test): Promise<{ sqs: FakeSqs; client: SQSClient; clock: FakeClock; url: string; dlq: string }> {
  const clock = new FakeClock();
  const sqs = await startFakeSqs({
    clock,
    queues: [
      { name: 'shards', visibilityTimeoutSeconds: 60, redrive: { deadLetterQueue: 'shards-dlq', maxReceiveCount: 2 } },
      { name: 'shards-dlq', visibilityTimeoutSeconds: 60 },
    ],
  });
  const client = sqsClient(sqs);
  t.teardown(async () => {
    client.destroy();
    await sqs.close();
  });
  return { sqs, client, clock, url: sqs.queueUrl('shards'), dlq: sqs.queueUrl('shards-dlq') };
}

async function receive(client: SQSClient, url: string, extra: { MaxNumberOfMessages?: number; VisibilityTimeout?: number } = {}) {
  return (await client.send(new ReceiveMessageCommand({ QueueUrl: url, MessageSystemAttributeNames: ['ApproximateReceiveCount'], ...extra }))).Messages ?? [];
}

/** The error an SDK call rejects with (its name is SQS's error type). */
async function refusal(p: Promise<unknown>): Promise<{ name: string; message: string; status?: number }> {
  try {
    await p;
  } catch (err) {
    const e = err as { name: string; message: string; $metadata?: { httpStatusCode?: number } };
    return { name: e.name, message: e.message, status: e.$metadata?.httpStatusCode };
  }
  throw new Error('expected a refusal');
}

t.test('at least once: a received message is invisible for the visibility timeout, then delivered again with a new handle', async (t) => {
  const { sqs, client, clock, url } = await setup(t);
  const sent = await client.send(
    new SendMessageBatchCommand({
      QueueUrl: url,
      Entries: [
        { Id: 'a', MessageBody: '{"shard":0}' },
        { Id: 'b', MessageBody: 'zwei ü 🚀' },
      ],
    }),
  );
  t.same(
    sent.Successful?.map((s) => s.Id),
    ['a', 'b'],
  );
  t.same(sent.Failed ?? [], []);
  const [first] = await receive(client, url);
  t.match(first, { Body: '{"shard":0}', Attributes: { ApproximateReceiveCount: '1' } });
  const [second] = await receive(client, url);
  t.match(second, { Body: 'zwei ü 🚀' }, 'oldest first; the first is in flight');
  t.same(await receive(client, url), [], 'both in flight: nothing to receive');

  clock.advance(59_999);
  t.same(await receive(client, url), [], 'still in flight just before the timeout');
  clock.advance(1);
  const again = await receive(client, url, { MaxNumberOfMessages: 10 });
  t.same(
    again.map((m) => [m.Body, m.Attributes?.ApproximateReceiveCount]),
    [
      ['{"shard":0}', '2'],
      ['zwei ü 🚀', '2'],
    ],
    'both delivered again, counted',
  );
  t.not(again[0]?.ReceiptHandle, first?.ReceiptHandle, 'a new receipt handle per delivery');
  t.equal(again[0]?.MessageId, first?.MessageId, 'the same message');

  await client.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: first?.ReceiptHandle }));
  t.equal(sqs.queue('shards').length, 2, 'an old handle succeeds and deletes nothing');
  await client.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: again[0]?.ReceiptHandle }));
  t.same(
    sqs.queue('shards').map((m) => m.body),
    ['zwei ü 🚀'],
    'the latest handle deletes',
  );
  await client.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: again[0]?.ReceiptHandle }));
  t.pass('deleting again succeeds');
  t.match(await refusal(client.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: 'never-issued' }))), { name: 'ReceiptHandleIsInvalid', status: 400 });
});

t.test('a visibility timeout per receive, and ChangeMessageVisibility on messages in flight only', async (t) => {
  // the queue without a redrive policy: a third delivery stays here
  const { client, clock, dlq: url } = await setup(t);
  await client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'one' }));
  const [m] = await receive(client, url, { VisibilityTimeout: 5 });
  clock.advance(5_000);
  const [back] = await receive(client, url);
  t.match(back, { Body: 'one', Attributes: { ApproximateReceiveCount: '2' } }, 'the receive\u2019s own timeout');
  await client.send(new ChangeMessageVisibilityCommand({ QueueUrl: url, ReceiptHandle: back?.ReceiptHandle, VisibilityTimeout: 0 }));
  const [third] = await receive(client, url);
  t.ok(third, 'visible again at once after a change to 0');
  t.match(
    await refusal(client.send(new ChangeMessageVisibilityCommand({ QueueUrl: url, ReceiptHandle: m?.ReceiptHandle, VisibilityTimeout: 10 }))),
    { name: 'MessageNotInflight' },
    'an old handle: not in flight',
  );
  t.match(await refusal(client.send(new ChangeMessageVisibilityCommand({ QueueUrl: url, ReceiptHandle: 'x', VisibilityTimeout: 10 }))), { name: 'ReceiptHandleIsInvalid' });
  t.match(await refusal(client.send(new ChangeMessageVisibilityCommand({ QueueUrl: url, ReceiptHandle: third?.ReceiptHandle, VisibilityTimeout: 43_201 }))), {
    name: 'InvalidParameterValue',
    status: 400,
  });
});

t.test('redrive: received maxReceiveCount times and not deleted, a message moves to the dead-letter queue', async (t) => {
  const { sqs, client, clock, url, dlq } = await setup(t);
  const { MessageId } = await client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'poison' }));
  t.equal((await receive(client, url))[0]?.Attributes?.ApproximateReceiveCount, '1');
  clock.advance(60_000);
  t.equal((await receive(client, url))[0]?.Attributes?.ApproximateReceiveCount, '2');
  clock.advance(60_000);
  t.same(await receive(client, url), [], 'not delivered a third time');
  t.same(sqs.queue('shards'), [], 'gone from the queue');
  const [dead] = await receive(client, dlq);
  t.match(dead, { MessageId, Body: 'poison', Attributes: { ApproximateReceiveCount: '1' } }, 'in the dead-letter queue, the same message');
  const attrs = await client.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['All'] }));
  t.match(attrs.Attributes, { ApproximateNumberOfMessages: '0', ApproximateNumberOfMessagesNotVisible: '0', VisibilityTimeout: '60', QueueArn: sqs.queueArn('shards') });
  t.same(JSON.parse(attrs.Attributes?.RedrivePolicy ?? '{}'), { deadLetterTargetArn: sqs.queueArn('shards-dlq'), maxReceiveCount: 2 });
  const dlqAttrs = await client.send(new GetQueueAttributesCommand({ QueueUrl: dlq, AttributeNames: ['ApproximateNumberOfMessagesNotVisible'] }));
  t.same(dlqAttrs.Attributes, { ApproximateNumberOfMessagesNotVisible: '1' }, 'only what was asked');
});

t.test('what SQS refuses', async (t) => {
  const { sqs, client, url } = await setup(t);
  const entries = (n: number, body = 'x') => Array.from({ length: n }, (_, i) => ({ Id: `e${i}`, MessageBody: body }));
  t.match(await refusal(client.send(new SendMessageBatchCommand({ QueueUrl: url, Entries: entries(11) }))), {
    name: 'TooManyEntriesInBatchRequest',
    message: 'Maximum number of entries per request are 10. You have sent 11.',
    status: 400,
  });
  t.match(await refusal(client.send(new SendMessageBatchCommand({ QueueUrl: url, Entries: [] }))), { name: 'EmptyBatchRequest' });
  t.match(
    await refusal(
      client.send(
        new SendMessageBatchCommand({
          QueueUrl: url,
          Entries: [
            { Id: 'same', MessageBody: 'a' },
            { Id: 'same', MessageBody: 'b' },
          ],
        }),
      ),
    ),
    { name: 'BatchEntryIdsNotDistinct', message: 'Id same repeated.' },
  );
  t.match(await refusal(client.send(new SendMessageBatchCommand({ QueueUrl: url, Entries: [{ Id: 'has space', MessageBody: 'a' }] }))), { name: 'InvalidBatchEntryId' });
  t.match(
    await refusal(client.send(new SendMessageBatchCommand({ QueueUrl: url, Entries: entries(2, 'y'.repeat(MAX_MESSAGE_BYTES / 2 + 1)) }))),
    { name: 'BatchRequestTooLong' },
    'over 256 KB together',
  );
  t.match(await refusal(client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'z'.repeat(MAX_MESSAGE_BYTES + 1) }))), {
    name: 'InvalidParameterValue',
    message: /Message must be shorter than 262144 bytes/,
  });
  const exact = await client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'z'.repeat(MAX_MESSAGE_BYTES) }));
  t.ok(exact.MessageId, 'exactly 256 KB is taken');
  const mixed = await client.send(
    new SendMessageBatchCommand({
      QueueUrl: url,
      Entries: [
        { Id: 'ok', MessageBody: 'fine' },
        { Id: 'bad', MessageBody: 'nul \u0000 here' },
      ],
    }),
  );
  t.same(
    mixed.Successful?.map((s) => s.Id),
    ['ok'],
  );
  t.match(mixed.Failed, [{ Id: 'bad', SenderFault: true, Code: 'InvalidMessageContents' }], 'a character SQS does not allow fails that entry');
  t.match(await refusal(client.send(new SendMessageCommand({ QueueUrl: `${sqs.url}/000000000000/nope`, MessageBody: 'a' }))), { name: 'QueueDoesNotExist', status: 400 });
  t.match(await refusal(client.send(new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 11 }))), { name: 'InvalidParameterValue' });

  sqs.failEntries(1);
  const partly = await client.send(new SendMessageBatchCommand({ QueueUrl: url, Entries: entries(3) }));
  t.match(partly.Failed, [{ Id: 'e0', SenderFault: false, Code: 'InternalError' }], 'failEntries: an entry fails as SQS may');
  t.same(
    partly.Successful?.map((s) => s.Id),
    ['e1', 'e2'],
  );

  const unsigned = await fetch(sqs.url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'AmazonSQS.ReceiveMessage' },
    body: JSON.stringify({ QueueUrl: url }),
  });
  t.equal(unsigned.status, 403, 'an unsigned request');
  const unknown = await fetch(sqs.url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'AmazonSQS.PurgeEverything', authorization: 'AWS4-HMAC-SHA256 x' },
    body: '{}',
  });
  t.match(await unknown.json(), { __type: /UnknownOperationException/ });
  t.ok(sqs.count('SendMessageBatch') >= 6, 'calls are logged by operation');
});
