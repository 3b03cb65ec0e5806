import { SendMessageCommand } from '@aws-sdk/client-sqs';
import t from 'tap';
import { describeShard, inPart, parseShardMessage, type Shard } from '../../lib/scale/shards.js';
import { snapshotKey } from '../../lib/scale/snapshot.js';
import { scheduledTick } from '../../lib/triggers/schedule.js';
import type { ShardOutcome } from '../../lib/triggers/shards.js';
import { deletes, edit, MAX_RECEIVES, reportedBy, seed, shardFunction, shardWorlds, TimeRunsOut, VISIBILITY_S, writesById } from '../harness/shard-world.js';
import type { SqsHandler } from '../harness/sqs-lambda.js';

// minutes on two shared cores: above tap's 120 s a file
t.setTimeout(2_400_000);

const world = shardWorlds(t);

t.test('20,000 objects over 10 shards through the SQS stand-in', { timeout: 2_400_000 }, async (t) => {
  const started = Date.now();
  const w = await world(t);
  // 8,000 in one namespace (4 ranges of names) and 24 namespaces of 500 (6 shards of 4)
  const layout: [string, number][] = [['big', 8_000], ...Array.from({ length: 24 }, (_, i) => [`team-${String(i).padStart(2, '0')}`, 500] as [string, number])];
  const all = seed(w.kube, layout);
  t.equal(all.length, 20_000);
  const coordinator = w.service();
  const container = w.service();
  const lap = (what: string) => t.comment(`${what}: ${Math.round((Date.now() - started) / 1000)} s, RSS ${Math.round(process.memoryUsage().rss / 2 ** 20)} MB`);
  /** Says why shards failed, when some did (a failing assertion then has its cause next to it). */
  const why = (outcomes: readonly ShardOutcome[]) => {
    for (const o of outcomes) if (!o.ok) t.comment(`shard ${o.shard ? describeShard(o.shard) : '?'} failed: ${o.why}`);
  };
  /** Each tick starts with empty call logs (the fakes keep every call, bodies included). */
  const fresh = () => {
    w.tyk.resetCalls();
    w.kube.resetCalls();
  };

  // ── tick 1: everything is new ──
  let outcomes: ShardOutcome[] = [];
  const first = await scheduledTick(coordinator, { queue: w.queue() });
  t.match(first, { sharded: { shards: 10, objects: 20_000, queued: true } }, 'sent, not run');
  t.equal(first.report, undefined, 'the coordinator ran nothing');
  t.equal(w.tyk.writes(), 0);
  t.equal(w.tyk.count('GET', '/tyk/apis'), 1, 'the coordinator listed the gateway once');
  const messages = w.sqs.queue('shards');
  t.equal(messages.length, 10, 'one message per shard');
  const shards = messages.map((m) => parseShardMessage(m.body));
  t.same(shards.map((s) => describeShard(s)).sort(), [
    '1/10 (big, names before api-02000)',
    '10/10 (team-20, team-21, team-22 and 1 more)',
    '2/10 (big, names from api-02000 before api-04000)',
    '3/10 (big, names from api-04000 before api-06000)',
    '4/10 (big, names from api-06000)',
    '5/10 (team-00, team-01, team-02 and 1 more)',
    '6/10 (team-04, team-05, team-06 and 1 more)',
    '7/10 (team-08, team-09, team-10 and 1 more)',
    '8/10 (team-12, team-13, team-14 and 1 more)',
    '9/10 (team-16, team-17, team-18 and 1 more)',
  ]);
  t.ok(await w.store.getBlob(snapshotKey(first.sharded?.runId ?? '', 'default', 0)), "the tick's snapshot of the gateway is in the store: the first shard's part");
  t.ok(await w.store.getBlob(snapshotKey(first.sharded?.runId ?? '', 'default', 'rest')), '…and the rest');
  fresh();
  const polls = await w.mapping(shardFunction(container, outcomes)).drain();
  lap('first tick');
  why(outcomes);
  t.equal(polls.length, 10, 'ten invocations');
  t.same(
    outcomes.filter((o) => !o.ok).map((o) => (o.ok ? '' : o.why)),
    [],
    'every shard done',
  );
  t.same(w.sqs.queue('shards'), [], 'every message deleted');
  t.equal(w.tyk.writes(), 20_000, '20,000 gateway writes');
  const byId = writesById(w.tyk);
  t.equal(byId.size, 20_000, 'to 20,000 APIs');
  t.ok(
    [...byId.values()].every((n) => n === 1),
    'each written once',
  );
  t.equal(w.tyk.count('GET', '/tyk/apis'), 0, 'no shard listed the gateway: each took the snapshot');
  t.equal(w.tyk.loaded('api').size, 20_000);
  let by = reportedBy(outcomes);
  t.equal(by.size, 20_000, 'complete: every object reported');
  t.same(
    [...by.entries()].filter(([, s]) => s.length !== 1),
    [],
    'no object in two shards',
  );
  t.same(
    all.filter((k) => !by.has(k)),
    [],
    'every object by some shard',
  );
  const misplaced = outcomes.flatMap((o) => (o.shard && o.report ? o.report.objects.filter((r) => !inPart((o.shard as Shard).part, r.namespace, r.name)) : []));
  t.same(misplaced, [], "each shard reported only its own part's objects");
  t.ok(
    outcomes.every((o) => o.report?.objects.every((r) => r.action === 'CREATE' && r.result === 'synced')),
    'all created and synced',
  );

  // ── tick 2: nothing changed ──
  outcomes = [];
  fresh();
  await scheduledTick(coordinator, { queue: w.queue() });
  await w.mapping(shardFunction(container, outcomes)).drain();
  lap('second tick');
  why(outcomes);
  t.equal(outcomes.length, 10);
  t.ok(
    outcomes.every((o) => o.ok),
    'every shard done',
  );
  t.equal(w.tyk.writes(), 0, 'steady state: no gateway write');
  t.equal(w.tyk.count('GET', /^\/tyk\/reload/), 0, 'no reload');
  t.equal(w.kube.count('PATCH'), 0, 'no status or finalizer patch');
  by = reportedBy(outcomes);
  t.equal(by.size, 20_000);
  t.ok(
    outcomes.every((o) => o.report?.objects.every((r) => r.result === 'unchanged')),
    'all unchanged',
  );
  t.equal(w.tyk.count('GET', '/tyk/apis'), 1, 'one gateway listing in the whole tick: the coordinator\u2019s');

  // ── tick 3: a change of 30 objects across shards ──
  const changed = [...all.filter((k) => k.startsWith('big/')).slice(0, 10), ...all.filter((k) => k.startsWith('team-03/')).slice(0, 10), ...all.filter((k) => k.startsWith('team-23/')).slice(0, 10)];
  edit(w.kube, changed, '8081');
  outcomes = [];
  fresh();
  await scheduledTick(coordinator, { queue: w.queue() });
  await w.mapping(shardFunction(container, outcomes)).drain();
  lap('third tick');
  why(outcomes);
  t.ok(
    outcomes.every((o) => o.ok),
    'every shard done',
  );
  t.equal(w.tyk.writes(), 30, '30 writes for 30 changes');
  t.equal(writesById(w.tyk).size, 30, 'one each');
  const updated = outcomes.flatMap((o) => o.report?.objects.filter((r) => r.action !== 'NOOP').map((r) => `${r.namespace}/${r.name}:${r.reason}:${r.result}`) ?? []);
  t.same(updated.sort(), changed.map((k) => `${k}:spec changed:synced`).sort());

  // ── tick 4: a shard's invocation runs out of time mid-run, and is delivered again ──
  const slow = [...all.filter((k) => k.startsWith('team-00/')), ...all.filter((k) => k.startsWith('team-01/')), ...all.filter((k) => k.startsWith('team-02/')).slice(0, 200)];
  edit(w.kube, slow, '8082');
  outcomes = [];
  fresh();
  const tick4 = await scheduledTick(coordinator, { queue: w.queue() });
  // the container that gets the team-00 shard first is slow: its time runs out after one chunk (500 writes, recorded)
  const slowContainer = w.service({ store: new TimeRunsOut(w.store, w.clock, 500) });
  let slowShard: Shard | undefined;
  const handler: SqsHandler = async (event, context) => {
    const shard = parseShardMessage(event.Records?.[0]?.body ?? '');
    if (slowShard === undefined && 'namespaces' in shard.part && shard.part.namespaces.includes('team-00')) {
      slowShard = shard;
      return shardFunction(slowContainer, outcomes)(event, context);
    }
    return shardFunction(container, outcomes)(event, context);
  };
  const firstRound = await w.mapping(handler).drain();
  why(outcomes);
  t.equal(firstRound.length, 10);
  const killed = outcomes.find((o) => !o.ok);
  t.match(killed, { ok: false, why: /700 objects not got to \(out of time\)/ }, 'the slow shard failed: 700 of its 1,200 changes not started');
  t.equal(killed?.shard?.index, slowShard?.index);
  t.equal(outcomes.filter((o) => !o.ok).length, 1, 'only that one');
  t.equal(w.tyk.writes(), 500, 'one chunk written before the time ran out');
  t.match(w.sqs.queue('shards'), [{ receiveCount: 1, inFlight: true }], 'its message stays, in flight');
  t.same(await w.mapping(handler).drain(), [], 'not delivered again before the visibility timeout');
  w.clock.advance(VISIBILITY_S * 1000);
  const redelivered: ShardOutcome[] = [];
  const secondRound = await w.mapping(shardFunction(container, redelivered)).drain();
  why(redelivered);
  t.equal(secondRound.length, 1, 'delivered again after the visibility timeout');
  t.match(redelivered, [{ ok: true }], 'and done');
  t.equal(redelivered[0]?.shard?.index, slowShard?.index);
  t.same(w.sqs.queue('shards'), []);
  const writes4 = writesById(w.tyk);
  t.equal(w.tyk.writes(), 1_200, '1,200 writes for 1,200 changes: none repeated');
  t.ok(
    [...writes4.values()].every((n) => n === 1),
    'each object written once over both deliveries',
  );
  t.equal(deletes(w.tyk), 0, 'nothing deleted');
  t.same(redelivered[0]?.report?.objects.filter((r) => r.action !== 'NOOP').length, 700, 'the second delivery wrote only what the first did not get to');
  // loaded() copies what the gateway holds: once
  const loaded = w.tyk.loaded('api');
  t.equal(loaded.size, 20_000);
  for (const key of slow) {
    const [ns, name] = key.split('/') as [string, string];
    const id = Buffer.from(`${ns}/${name}`).toString('base64url');
    const target = (loaded.get(id)?.proxy as { target_url?: string } | undefined)?.target_url;
    if (target !== `http://${name}.${ns}.svc:8082`) {
      t.fail(`${key} not converged: ${target}`);
      break;
    }
  }
  t.pass('converged: every changed object has its new spec on the gateway');
  t.ok(tick4.sharded?.queued);
  lap('fourth tick (a shard redelivered)');

  // ── tick 5: a shard that fails every time, and a malformed message, end in the dead-letter queue ──
  const fault = w.kube.inject({ method: 'GET', path: '/apis/tyk.tyk.io/v1alpha1/namespaces/team-05/apidefinitions', status: 500, times: Infinity });
  await w.client.send(new SendMessageCommand({ QueueUrl: w.sqs.queueUrl('shards'), MessageBody: '{"v":1,"runId":"tick","index":0,"count":1,"namespaces":["Not A Namespace"]}' }));
  outcomes = [];
  fresh();
  await scheduledTick(coordinator, { queue: w.queue() });
  for (let delivery = 1; delivery <= MAX_RECEIVES; delivery++) {
    await w.mapping(shardFunction(container, outcomes)).drain();
    w.clock.advance(VISIBILITY_S * 1000);
  }
  t.same(await w.mapping(shardFunction(container, outcomes)).drain(), [], 'nothing is delivered a fourth time');
  const dead = w.sqs.queue('shards-dlq');
  t.equal(dead.length, 2, 'two messages in the dead-letter queue');
  const deadShards = dead.map((m) => {
    try {
      return describeShard(parseShardMessage(m.body));
    } catch {
      return 'malformed';
    }
  });
  t.same(deadShards.sort(), ['6/10 (team-04, team-05, team-06 and 1 more)', 'malformed'].sort());
  const failures = outcomes.filter((o) => !o.ok);
  t.equal(failures.length, 2 * MAX_RECEIVES, 'each failed on every delivery');
  t.ok(
    failures.some((o) => !o.ok && /SHARD_MESSAGE_INVALID: shard message: namespaces must be/.test(o.why)),
    'the malformed one, with its reason',
  );
  t.ok(
    failures.some((o) => !o.ok && /run error: list apidefinitions in team-05/.test(o.why)),
    'the failing one, with its reason',
  );
  t.equal(outcomes.filter((o) => o.ok).length, 9, 'the other shards were done once each');
  t.equal(w.tyk.writes(), 0, 'nothing written');
  t.equal(deletes(w.tyk), 0, 'nothing deleted: the objects of the failing namespace are as they were');
  t.equal(w.tyk.loaded('api').size, 20_000);
  fault.cancel();
  lap('fifth tick (dead letters)');
});
