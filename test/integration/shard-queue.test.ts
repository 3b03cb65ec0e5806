/**
 * The shards' sender (lib/triggers/sqs.ts) with the real AWS SDK client against the SQS
 * stand-in: ten entries a SendMessageBatch, entries a batch reports failed sent again, what
 * still is not sent a ShardQueueError (after every batch was tried), an unknown queue refused.
 */
import t from 'tap';
import { ShardQueueError } from '../../lib/platform/errors.js';
import { parseShardMessage, type Shard, shardsOf } from '../../lib/scale/shards.js';
import { SqsShardQueue } from '../../lib/triggers/sqs.js';
import { startFakeSqs } from '../fakes/sqs.js';
import { capturingLogger, type LogEntry } from '../harness/log.js';

const CLIENT = { region: 'us-east-1', credentials: { accessKeyId: 'test-key-id', secretAccessKey: 'test-secret' }, maxAttempts: 1 };

function shards(n: number): Shard[] {
  return shardsOf(
    'tick-1',
    Array.from({ length: n }, (_, i) => ({ namespaces: [`ns-${i}`] })),
  );
}

type Test = Parameters<Parameters<typeof t.test>[0]>[0];

async function setup(t: Test) {
  const sqs = await startFakeSqs({ queues: [{ name: 'shards' }] });
  t.teardown(() => sqs.close());
  const log: LogEntry[] = [];
  const waits: number[] = [];
  const queue = (url = sqs.queueUrl('shards')) =>
    new SqsShardQueue({
      queueUrl: url,
      log: capturingLogger(log),
      client: CLIENT,
      sleep: async (ms) => {
        waits.push(ms);
      },
    });
  return { sqs, log, waits, queue };
}

t.test('25 shards: three batches of at most ten, every shard once, as its message', async (t) => {
  const { sqs, queue } = await setup(t);
  const sent = shards(25);
  await queue().send(sent);
  t.equal(sqs.count('SendMessageBatch'), 3);
  const got = sqs.queue('shards').map((m) => parseShardMessage(m.body));
  t.same(got, sent, 'each shard once, in order, parsed back exactly');
  await queue().send([]);
  t.equal(sqs.count('SendMessageBatch'), 3, 'no shards: no request');
});

t.test('entries a batch reports failed are sent again, the others not', async (t) => {
  const { sqs, log, waits, queue } = await setup(t);
  sqs.failEntries(3);
  await queue().send(shards(12));
  t.equal(sqs.queue('shards').length, 12, 'all twelve arrived once');
  t.same(new Set(sqs.queue('shards').map((m) => parseShardMessage(m.body).index)).size, 12);
  t.equal(sqs.count('SendMessageBatch'), 3, 'two batches, and the three failed entries again');
  t.same(waits, [100], 'after a short wait');
  t.match(log, [{ level: 'warn', msg: 'shards not sent to the queue yet', attempt: 1, entries: 3, err: /InternalError/ }]);
});

t.test('entries that keep failing: every batch tried, then ShardQueueError naming how many', async (t) => {
  const { sqs, waits, queue } = await setup(t);
  // three shards' entries fail every time (of the second batch: ns-10 … ns-12)
  sqs.failEntries(Infinity, (body) => ['ns-10', 'ns-11', 'ns-12'].some((ns) => body.includes(`"${ns}"`)));
  const err = await queue()
    .send(shards(15))
    .then(
      () => undefined,
      (e: unknown) => e,
    );
  t.ok(err instanceof ShardQueueError);
  t.equal((err as ShardQueueError).code, 'SHARD_QUEUE_UNAVAILABLE');
  t.match((err as Error).message, /^3 of 15 shards could not be sent to the queue: InternalError/);
  t.equal(sqs.queue('shards').length, 12, 'the rest were sent');
  t.equal(sqs.count('SendMessageBatch'), 4, 'the first batch once, the second three times');
  t.same(waits, [100, 200], 'three attempts, backing off');
});

t.test('an unknown queue: ShardQueueError with SQS\u2019s reason, nothing sent', async (t) => {
  const { sqs, queue } = await setup(t);
  const err = await queue(`${sqs.url}/000000000000/nope`)
    .send(shards(2))
    .then(
      () => undefined,
      (e: unknown) => e,
    );
  t.ok(err instanceof ShardQueueError);
  t.match((err as Error).message, /^2 of 2 shards could not be sent to the queue: .*queue does not exist/i);
  t.equal(sqs.queue('shards').length, 0);
});
