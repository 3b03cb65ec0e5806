/**
 * Sharded full runs, end to end over real HTTP, at a small scale (the 20,000-object
 * case is test/scale/shards.test.ts, its own CI tier): the fake API server and Tyk gateway, our
 * real clients, Redis, and the SQS stand-in spoken to by the real AWS SDK, with Lambda's event
 * source mapping played by test/harness/sqs-lambda.ts.
 *
 * - self-hosted: the shards run in the process, one report as a full run's;
 * - a small run is an ordinary full run: no message, no snapshot; the count includes namespaces
 *   with only records left (their deletions), and no unwatched namespace;
 * - without its snapshot a shard lists the gateway itself; a stale snapshot costs no write and
 *   deletes nothing; deletions happen on the API server's word only;
 * - the Lambda functions (functions/schedule.ts, functions/shard.ts) from their environment;
 * - POST /shards, and POST /schedule (the tick on request).
 */

import t, { type Test } from 'tap';
import { handler as scheduleHandler } from '../../functions/schedule.js';
import { closeLambdaService } from '../../functions/service.js';
import { handler as shardHandler } from '../../functions/shard.js';
import type { RunReport } from '../../lib/engine/types.js';
import { type Shard, shardMessage } from '../../lib/scale/shards.js';
import { snapshotKey } from '../../lib/scale/snapshot.js';
import { buildApp } from '../../lib/server.js';
import { scheduledRun, scheduledTick } from '../../lib/triggers/schedule.js';
import { type ShardOutcome, shardBatch } from '../../lib/triggers/shards.js';
import { deletes, seed, shardFunction, shardWorlds, TOKEN } from '../harness/shard-world.js';

const world = shardWorlds(t);

t.test('self-hosted: above SHARD_SIZE, the shards run in the process, one report as a full run', async (t) => {
  const w = await world(t, { SHARD_SIZE: '100', SHARD_QUEUE_URL: '' });
  const all = seed(w.kube, [
    ['alpha', 250],
    ['beta', 60],
    ['gamma', 30],
  ]);
  const svc = w.service();
  t.equal(svc.shards.queueUrl, undefined);
  const report = await scheduledRun(svc);
  t.equal(report.objects.length, 340, 'every object in the one report');
  t.same(new Set(report.objects.map((o) => `${o.namespace}/${o.name}`)).size, 340, 'each once');
  t.same(report.counts, { synced: 340 });
  t.equal(report.errors.length, 0);
  t.equal(report.gateway.writes, 340);
  t.equal(w.tyk.writes(), 340);
  t.equal(w.sqs.count('SendMessageBatch'), 0, 'nothing sent to a queue');
  t.same(
    all.filter((k) => !report.objects.some((o) => `${o.namespace}/${o.name}` === k)),
    [],
  );
  const runs = w.log.filter((e) => e.msg === 'run finished');
  t.equal(runs.length, 4, 'four shards run: alpha in 3 ranges of names, beta and gamma packed in one');
  t.ok(
    w.log.some((e) => e.msg === 'sharded full run finished' && e.shards === 4),
    'one line for the tick',
  );
  w.tyk.resetCalls();
  const quiet = await scheduledRun(svc);
  t.same(quiet.counts, { unchanged: 340 }, 'the next tick: all unchanged');
  t.equal(w.tyk.writes(), 0);
});

t.test('records whose read-back was listed (a digest of the bytes) meet the snapshot: the shards read nothing of what did not change', async (t) => {
  const w = await world(t, { SHARD_SIZE: '100', SHARD_QUEUE_URL: '' });
  const alpha = seed(w.kube, [['alpha', 90]]);
  const svc = w.service();
  const first = await scheduledRun(svc);
  t.same(first.counts, { synced: 90 }, 'an ordinary full run (90 ≤ SHARD_SIZE), its read-back one list');
  const [record] = await w.store.getRecords([`ApiDefinition/${alpha[0]}`]);
  t.match(record?.observedWholeHash, /^[A-Za-z0-9+/]{43}=$/, "the whole echo's identity is its listed bytes' SHA-256 digest");
  seed(w.kube, [['beta', 30]]);
  w.tyk.resetCalls();
  const second = await scheduledRun(svc);
  t.same(second.counts, { unchanged: 90, synced: 30 }, '120 objects: sharded');
  t.ok(
    w.log.some((e) => e.msg === 'sharded full run finished'),
    'the tick was sharded',
  );
  const alphaIds = new Set(alpha.map((k) => Buffer.from(k).toString('base64url')));
  const alphaGets = w.tyk.calls.filter((c) => c.method === 'GET' && alphaIds.has(decodeURIComponent(c.path.split('/').pop() ?? ''))).length;
  t.equal(alphaGets, 0, 'no object of the first run was read again: the snapshot spoke for each');
  t.equal(w.tyk.count('GET', '/tyk/apis'), 1, "the coordinator's one list");
});

t.test('the count: a namespace with only records left has a shard (its deletions happen); an unwatched one none', async (t) => {
  const w = await world(t, { SHARD_SIZE: '5', SHARD_QUEUE_URL: '', WATCH_NAMESPACE: 'a,gone' });
  seed(w.kube, [
    ['a', 6],
    ['gone', 3],
    ['other', 4],
  ]);
  const svc = w.service();
  const first = await scheduledRun(svc);
  t.same(first.counts, { synced: 9 }, 'the watched namespaces only');
  t.same([...new Set(first.objects.map((o) => o.namespace))].sort(), ['a', 'gone']);
  for (let i = 0; i < 3; i++) w.kube.remove('apidefinitions', 'gone', `api-0000${i}`);
  const plan = await svc.planTick();
  if (!plan.sharded) throw new Error('expected shards');
  t.equal(plan.objects, 9, "counted: 'gone' by its records");
  t.same(
    plan.shards.map((s) => s.part),
    [{ namespace: 'a', to: 'api-00003' }, { namespace: 'a', from: 'api-00003' }, { namespaces: ['gone'] }],
  );
  w.tyk.resetCalls();
  const second = await scheduledRun(svc);
  t.same(
    second.objects.filter((o) => o.action !== 'NOOP').map((o) => `${o.namespace}/${o.name}:${o.action}:${o.reason}:${o.result}`),
    ['gone/api-00000:DELETE:deleted in cluster:deleted', 'gone/api-00001:DELETE:deleted in cluster:deleted', 'gone/api-00002:DELETE:deleted in cluster:deleted'],
  );
  t.equal(deletes(w.tyk), 3);
  t.equal(w.tyk.loaded('api').size, 6);
});

t.test('up to SHARD_SIZE objects, a tick is an ordinary full run: no message, no snapshot', async (t) => {
  const w = await world(t);
  seed(w.kube, [
    ['default', 40],
    ['other', 10],
  ]);
  const svc = w.service();
  const plan = await svc.planTick();
  t.same(plan, { sharded: false, objects: 50, why: 'small' });
  const tick = await scheduledTick(svc, { queue: w.queue() });
  t.equal(tick.sharded, undefined, 'not sharded');
  t.match(tick.report, { trigger: 'schedule', counts: { synced: 50 } }, 'the full run itself');
  t.equal(w.sqs.count('SendMessageBatch'), 0, 'nothing sent');
  t.same(await w.redis.keys(`${w.prefix}blob:*`), [], 'no snapshot kept');
  const counting = w.kube.calls.filter((c) => c.method === 'GET' && /\/apidefinitions$/.test(c.path));
  t.ok(counting.length >= 2, 'counted, then listed');
});

t.test('a shard without its snapshot lists the gateway itself; a stale one costs no write; deletions only on the API server\u2019s word', async (t) => {
  const w = await world(t, { SHARD_SIZE: '50' });
  const all = seed(w.kube, [
    ['one', 60],
    ['two', 40],
  ]);
  const svc = w.service();
  const outcomes: ShardOutcome[] = [];
  await scheduledTick(svc, { queue: w.queue() });
  await w.mapping(shardFunction(svc, outcomes)).drain();
  t.equal(w.tyk.writes(), 100);
  t.ok(
    outcomes.every((o) => o.ok),
    'first tick done',
  );

  // the snapshot expires before the shards run: each lists the gateway, decides as a full run would
  const tick = await scheduledTick(svc, { queue: w.queue() });
  const runId = tick.sharded?.runId ?? '';
  t.equal(tick.sharded?.shards, 3);
  // a shard reads its own part of the snapshot and the rest: without the rest, none has a snapshot
  await w.redis.del(`${w.prefix}blob:${snapshotKey(runId, 'default', 'rest')}`);
  w.tyk.resetCalls();
  outcomes.length = 0;
  await w.mapping(shardFunction(svc, outcomes)).drain();
  t.equal(outcomes.filter((o) => o.ok).length, 3);
  t.equal(w.tyk.count('GET', '/tyk/apis'), 3, 'each shard listed the gateway once');
  t.equal(w.tyk.writes(), 0, 'and found nothing to do');
  t.ok(
    w.log.some((e) => e.msg === 'no snapshot of this gateway: the shard lists it itself' && e.why === 'missing or expired'),
    'logged',
  );

  // a stale snapshot: an object it lacks (the gateway has it) is not written, not deleted
  const stale = await scheduledTick(svc, { queue: w.queue() });
  const partKey = (part: number | 'rest') => `${w.prefix}blob:${snapshotKey(stale.sharded?.runId ?? '', 'default', part)}`;
  const partOf = async (part: number | 'rest') => JSON.parse((await w.redis.get(partKey(part))) ?? '{}') as { part: unknown; kinds: { api: Record<string, unknown> } };
  // each shard's objects are in its own part (their ids are default ids), none in the rest
  const parts = await Promise.all([0, 1, 2, 'rest' as const].map(partOf));
  const sizes = parts.map((p) => Object.keys(p.kinds.api).length) as [number, number, number, number];
  t.same(
    parts.map((p) => p.part),
    [0, 1, 2, 'rest'],
  );
  t.same([sizes[0], sizes[1]], [30, 30], "one's two ranges hold its 60 APIs, 30 each");
  t.equal(sizes[2], 40, "two's shard its 40");
  t.equal(sizes[3], 0, 'the rest none: every id is a default id');
  const snap = parts[0] as (typeof parts)[number];
  // meanwhile in the cluster (below): one object deleted (finalizer: ours), one gone outright (our record stays)
  const [gone, deleting] = [all[0] as string, all[70] as string];
  const goneId = Buffer.from(gone).toString('base64url');
  t.ok(goneId in snap.kinds.api, 'the object gone from the cluster is in the first part');
  const dropped = Object.keys(snap.kinds.api)
    .filter((id) => id !== goneId)
    .slice(0, 5);
  for (const id of dropped) delete snap.kinds.api[id];
  // …and says another object's hash is other than it is (drift it cannot confirm)
  const [driftId] = Object.keys(snap.kinds.api);
  snap.kinds.api[driftId as string] = ['not-the-hash'];
  await w.redis.set(partKey(0), JSON.stringify(snap), 'PX', 60_000);
  w.kube.remove('apidefinitions', 'one', gone.split('/')[1] as string);
  w.kube.markDeleting('apidefinitions', 'two', deleting.split('/')[1] as string);
  w.tyk.resetCalls();
  outcomes.length = 0;
  await w.mapping(shardFunction(svc, outcomes)).drain();
  t.ok(
    outcomes.every((o) => o.ok),
    'done',
  );
  const acted = outcomes.flatMap((o) => o.report?.objects.filter((r) => r.action !== 'NOOP').map((r) => `${r.namespace}/${r.name}:${r.action}:${r.result}`) ?? []);
  t.same(acted.sort(), [`${gone}:DELETE:deleted`, `${deleting}:DELETE:deleted`].sort(), 'deleted: exactly the object deleted in the cluster and the one gone from it');
  t.equal(deletes(w.tyk), 2, 'two gateway deletions');
  t.equal(w.tyk.writes(), 2, 'and no other write: what the snapshot lacked, or said drifted, was read again under the lock and found unchanged');
  const loaded = w.tyk.loaded('api');
  t.equal(loaded.size, 98);
  for (const id of dropped) t.ok(loaded.has(id), `${id}: still on the gateway`);
});

t.test('MAX_DELETES_PER_RUN counts the whole tick: shards that each fit under it share one allowance', async (t) => {
  const w = await world(t, { SHARD_SIZE: '10', SHARD_QUEUE_URL: '', MAX_DELETES_PER_RUN: '10' });
  const all = seed(w.kube, [
    ['p', 8],
    ['q', 8],
    ['r', 8],
  ]);
  const svc = w.service();
  t.same((await scheduledRun(svc)).counts, { synced: 24 });
  // six objects deleted in each namespace: 6 per shard, each under 10; 18 for the tick, over it
  const deleting = all.filter((key) => Number(key.slice(-1)) < 6);
  for (const key of deleting) {
    const [ns, name] = key.split('/') as [string, string];
    w.kube.markDeleting('apidefinitions', ns, name);
  }
  w.tyk.resetCalls();
  const held = await scheduledRun(svc);
  t.equal(w.log.filter((e) => e.msg === 'sharded full run finished' && e.shards === 3).length, 2, 'both ticks in three shards, one a namespace');
  t.equal(deletes(w.tyk), 6, 'one shard\u2019s six deletions, no more: the tick\u2019s allowance is 10');
  t.same(held.counts, { deleted: 6, held: 12, unchanged: 6 });
  const heldNamespaces = new Set(held.objects.filter((o) => o.result === 'held').map((o) => o.namespace));
  t.equal(heldNamespaces.size, 2, 'two shards held all their deletions');
  for (const o of held.objects.filter((r) => r.result === 'held'))
    t.match(o, { action: 'DELETE', error: /these 6 deletions from the gateway would go over MAX_DELETES_PER_RUN=10 \(it counts the whole tick\)/ });
  const events = (await w.kube.listObjects('events', [...heldNamespaces][0] as string)) as unknown as { reason: string; type: string; involvedObject: { name: string } }[];
  t.match(
    events.filter((e) => e.involvedObject.name === 'api-00000' && e.reason === 'TooManyDeletions'),
    [{ type: 'Warning' }],
    'kubectl describe shows why',
  );
  t.equal(w.tyk.loaded('api').size, 18);
  t.ok(
    w.log.some((e) => e.msg === 'deletions held: the tick\u2019s MAX_DELETES_PER_RUN is taken by other shards'),
    'logged',
  );

  // the next tick has an allowance of its own: one more shard's deletions
  const next = await scheduledRun(svc);
  t.same(next.counts, { deleted: 6, held: 6, unchanged: 6 });
  t.equal(w.tyk.loaded('api').size, 12);
});

t.test('POST /shards runs one shard: 200 done, 503 not done, 400 malformed, 401 without the token', async (t) => {
  const { w, svc, app } = await twoShardsServed(t);
  const plan = await svc.planTick();
  if (!plan.sharded) throw new Error('expected shards');
  t.equal(plan.shards.length, 2);
  const post = (body: string, token = TOKEN) => app.inject({ method: 'POST', url: '/shards', payload: body, headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` } });
  const done = await post(shardMessage(plan.shards[0] as Shard));
  t.equal(done.statusCode, 200);
  t.match(done.json(), { trigger: 'schedule', counts: { synced: 8 } });
  t.equal((await post(shardMessage(plan.shards[0] as Shard), 'wrong-token-0123456789')).statusCode, 401);
  const bad = await post('{"v":1}');
  t.equal(bad.statusCode, 400);
  t.match(bad.json(), { code: 'SHARD_MESSAGE_INVALID', error: /runId/ });
  const fault = w.kube.inject({ method: 'GET', path: '/apis/tyk.tyk.io/v1alpha1/namespaces/b/apidefinitions', status: 500, times: Infinity });
  const notDone = await post(shardMessage(plan.shards[1] as Shard));
  t.equal(notDone.statusCode, 503);
  t.match(notDone.json(), { code: 'SHARD_INCOMPLETE', error: /run error: list apidefinitions in b/ });
  t.equal(notDone.headers['retry-after'], '60');
  fault.cancel();
  t.equal((await post(shardMessage(plan.shards[1] as Shard))).statusCode, 200, 'delivered again: done');
  t.equal(w.tyk.loaded('api').size, 16);
});

t.test('POST /schedule is the tick on request (a PingSource through a proxy): sharded here or to the queue, 409 while one runs', async (t) => {
  const { w, app } = await twoShardsServed(t);
  // what Knative's PingSource sends, as the proxy forwards it (a binary CloudEvent with its data)
  const tick = (url = '/schedule', token = TOKEN) =>
    app.inject({ method: 'POST', url, payload: '{}', headers: { 'content-type': 'application/json', 'ce-type': 'dev.knative.sources.ping', 'ce-id': 'p-1', authorization: `Bearer ${token}` } });
  t.equal((await tick('/schedule', 'wrong-token-0123456789')).statusCode, 401, 'RESYNC_TOKEN required');
  const dry = await tick('/schedule?dryRun=true');
  t.equal(dry.statusCode, 400, 'no parameters: a dry run is not silently a real tick');
  t.match(dry.json(), { code: 'BAD_REQUEST', error: /unknown parameter dryRun/ });
  t.equal(w.tyk.writes(), 0, 'nothing written by the refused requests');

  // the first tick is held at its count listing; a second one meanwhile is skipped
  const slow = w.kube.inject({ method: 'GET', path: /\/apidefinitions$/, delayMs: 300 });
  const first = tick();
  await waitFor(() => slow.fired > 0);
  const second = await tick();
  t.equal(second.statusCode, 409, 'one tick at a time per process');
  t.match(second.json(), { code: 'TICK_RUNNING' });
  const done = await first;
  t.equal(done.statusCode, 200);
  t.match(done.json(), { trigger: 'schedule', counts: { synced: 16 }, sharded: { shards: 2, objects: 16, queued: false } }, 'two shards, run here, one report');
  t.equal(w.tyk.loaded('api').size, 16);
  t.equal(w.sqs.count('SendMessageBatch'), 0);
  t.ok(
    w.log.some((e) => e.msg === 'sharded full run finished'),
    'the same tick as the self-hosted schedule',
  );
  t.equal((await tick()).statusCode, 200, 'the next tick runs: the guard was released');

  // with a queue, the shards go to it and the answer is 202
  const queued = await world(t, { SHARD_SIZE: '10' });
  seed(queued.kube, [
    ['c', 8],
    ['d', 8],
  ]);
  // the queue's SDK client takes the usual credentials, as the schedule function's role gives them
  const saved = { ...process.env };
  t.teardown(() => {
    process.env = saved;
  });
  Object.assign(process.env, { AWS_ACCESS_KEY_ID: 'test-key-id', AWS_SECRET_ACCESS_KEY: 'test-secret', AWS_REGION: 'us-east-1' });
  const viaQueue = buildApp(queued.service());
  t.teardown(() => viaQueue.close());
  const sent = await viaQueue.inject({ method: 'POST', url: '/schedule', headers: { authorization: `Bearer ${TOKEN}` } });
  t.equal(sent.statusCode, 202);
  t.match(sent.json(), { sharded: { shards: 2, objects: 16, queued: true } });
  t.equal(queued.sqs.queue('shards').length, 2, 'one message per shard');
  t.equal(queued.tyk.writes(), 0, 'the shards are the shard consumer\u2019s to run');
  // SQS refuses every entry, three attempts each: 503, and the next tick sends them again
  queued.sqs.failEntries(6);
  const refused = await viaQueue.inject({ method: 'POST', url: '/schedule', headers: { authorization: `Bearer ${TOKEN}` } });
  t.equal(refused.statusCode, 503);
  t.match(refused.json(), { code: 'SHARD_QUEUE_UNAVAILABLE', error: /2 of 2 shards could not be sent/ });
  t.equal((await viaQueue.inject({ method: 'POST', url: '/schedule', headers: { authorization: `Bearer ${TOKEN}` } })).statusCode, 202, 'sent by the next tick');
});

t.test('POST /resync with nothing named is a full run: sharded here above SHARD_SIZE (a queue or not), retry backoff ignored; a dry run is one run', async (t) => {
  const w = await world(t, { SHARD_SIZE: '10' });
  t.ok(w.service().shards.queueUrl !== undefined, 'a queue is configured');
  seed(w.kube, [
    ['a', 8],
    ['b', 8],
  ]);
  const app = buildApp(w.service());
  t.teardown(() => app.close());
  const resync = (payload = '{}') => app.inject({ method: 'POST', url: '/resync', payload, headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` } });
  const bad = 'api-00003';
  // one object the gateway refuses: it fails, and is retried only after its backoff
  w.tyk.inject({ method: 'POST', path: '/tyk/apis', match: (c) => (c.body as { name?: string })?.name === `b ${bad}`, status: 500 });

  const first = await resync();
  t.equal(first.statusCode, 200);
  const report = first.json() as RunReport & { sharded: { shards: number; objects: number; queued: boolean } };
  t.match(report, { trigger: 'resync', counts: { synced: 15, failed: 1 }, sharded: { shards: 2, objects: 16, queued: false } }, 'two shards, run here though a queue is set');
  t.equal(new Set(report.objects.map((o) => `${o.namespace}/${o.name}`)).size, 16, 'each object once in the merged report');
  t.equal(w.sqs.count('SendMessageBatch'), 0, 'nothing sent to the queue: the caller waits for the report');
  t.equal(w.log.filter((e) => e.msg === 'run finished').length, 2, 'one run per shard, none over everything');
  t.ok(w.log.some((e) => e.msg === 'sharded full run finished' && e.shards === 2));

  const tick = await scheduledRun(w.service());
  t.match(
    tick.objects.find((o) => o.name === bad && o.namespace === 'b'),
    { result: 'backoff' },
    'the schedule holds the backoff',
  );
  w.tyk.resetCalls();
  const again = (await resync()).json() as RunReport;
  t.match(
    again.objects.find((o) => o.name === bad && o.namespace === 'b'),
    { action: 'CREATE', result: 'synced' },
    'a resync does not: its shards retry it at once',
  );
  t.equal(w.tyk.writes(), 1, 'and write nothing else');

  const dry = await resync('{"dryRun":true}');
  t.equal(dry.statusCode, 200);
  t.equal(dry.json().sharded, undefined, 'a dry run answers with the whole plan: one run, not sharded');
  t.match(dry.json(), { dryRun: true, counts: { planned: 16 } });
  const named = await resync('{"namespace":"a"}');
  t.match(named.json(), { counts: { unchanged: 8 } });
  t.equal(named.json().sharded, undefined, 'a namespace named is one run');
});

t.test('the Lambda functions from their environment: schedule sends the shards, shard runs them', async (t) => {
  const w = await world(t, { SHARD_SIZE: '5' });
  seed(w.kube, [
    ['x', 7],
    ['y', 4],
  ]);
  const saved = { ...process.env };
  const stdout = process.stdout.write;
  const emf: string[] = [];
  // EMF lines go to stdout: kept out of tap's stream
  process.stdout.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString();
    if (text.startsWith('{"_aws"')) {
      emf.push(text);
      return true;
    }
    return (stdout as (...a: unknown[]) => boolean).call(process.stdout, chunk, ...rest);
  }) as typeof process.stdout.write;
  t.teardown(async () => {
    await closeLambdaService();
    process.stdout.write = stdout;
    process.env = saved;
  });
  await closeLambdaService();
  Object.assign(process.env, w.env, {
    REDIS_URL: w.redisUrl,
    LOG_LEVEL: 'silent',
    AWS_ACCESS_KEY_ID: 'test-key-id',
    AWS_SECRET_ACCESS_KEY: 'test-secret',
    AWS_REGION: 'us-east-1',
    AWS_LAMBDA_FUNCTION_NAME: 'gateway-reconciler-test-shard',
  });
  const context = { getRemainingTimeInMillis: () => 299_000, awsRequestId: 'r-1' };
  const sent = await scheduleHandler({ time: '2026-11-21T10:05:00Z' }, context);
  t.match(sent, { sharded: { shards: 3, objects: 11, queued: true }, writes: 0, counts: {} }, 'the schedule sends three shards');
  t.equal(w.sqs.queue('shards').length, 3);
  const fullRuns = () => emf.filter((line) => line.includes('"last_full_run_success_timestamp_seconds"')).length;
  t.equal(fullRuns(), 0, 'a tick that sent its shards has not run in full yet');
  const polls = await w.mapping((event, ctx) => shardHandler(event, ctx)).drain();
  t.same(
    polls.map((p) => p.failed),
    [[], [], []],
    'each shard done',
  );
  t.equal(w.tyk.loaded('api').size, 11, 'every API on the gateway');
  t.equal(fullRuns(), 1, 'the last shard done sets the full run\u2019s success, once');
  const malformed = await shardHandler({ Records: [{ messageId: 'm-1', body: 'nope', attributes: { ApproximateReceiveCount: '1' } }] }, context);
  t.same(malformed, { batchItemFailures: [{ itemIdentifier: 'm-1' }] }, 'a malformed message is reported failed');
  t.ok(emf.length > 0, 'the shard function writes its metrics as EMF');
});

t.test('shardBatch: each record on its own; a run that throws fails its record only', async (t) => {
  const w = await world(t, { SHARD_SIZE: '5' });
  seed(w.kube, [
    ['x', 7],
    ['y', 4],
  ]);
  const svc = w.service();
  const plan = await svc.planTick();
  if (!plan.sharded) throw new Error('expected shards');
  const records = plan.shards.map((s, i) => ({ messageId: `m-${i}`, body: shardMessage(s), attributes: { ApproximateReceiveCount: '1' } }));
  const outcomes: ShardOutcome[] = [];
  const out = await shardBatch(svc, { Records: [records[0] as (typeof records)[number], { messageId: 'bad', body: '[]' }, ...records.slice(1)] }, 299_000, (o) => outcomes.push(o));
  t.same(out, { batchItemFailures: [{ itemIdentifier: 'bad' }] });
  t.equal(outcomes.filter((o) => o.ok).length, 3);
  t.equal(w.tyk.loaded('api').size, 11);
  await svc.shutdown(1_000);
  const stopping = await shardBatch(svc, { Records: [records[0] as (typeof records)[number]] }, 299_000);
  t.same(stopping, { batchItemFailures: [{ itemIdentifier: 'm-0' }] }, 'a stopping process fails the shard (ShuttingDownError): delivered again elsewhere');
  t.same(await shardBatch(svc, {}, undefined), { batchItemFailures: [] }, 'an event without records: nothing to report');
  const report: RunReport | undefined = outcomes[0]?.report;
  t.ok(report && report.objects.length > 0);
});

async function waitFor(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  for (const deadline = Date.now() + timeoutMs; !condition(); ) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Namespaces a and b, 8 ApiDefinitions each, two shards at SHARD_SIZE 10 run in the process, and the app over the service. */
async function twoShardsServed(t: Test) {
  const w = await world(t, { SHARD_SIZE: '10', SHARD_QUEUE_URL: '' });
  seed(w.kube, [
    ['a', 8],
    ['b', 8],
  ]);
  const svc = w.service();
  const app = buildApp(svc);
  t.teardown(() => app.close());
  return { w, svc, app };
}
