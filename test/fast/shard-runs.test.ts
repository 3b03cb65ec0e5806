/**
 * Runs of one shard of a sharded full run (RunRequest.shard), through whole Runs: a shard
 * decides only the objects of its part (RunContext.owns, lib/scale/shards.ts inPart) and logs
 * as its shard of its tick (a range's listing keeps its own names only, stops past them, begins where the range before it stopped, and notes no size of
 * its namespace); its gateway deletions are claimed against the tick's
 * MAX_DELETES_PER_RUN in the store (lib/engine/phase.ts claimTickDeletions), counted across its
 * kinds, and held (reported, an Event, nothing sent) when the tick's allowance is taken; no
 * claim is made without a shard, without a limit, in a dry run, or without a deletion. Its first
 * decision takes the tick's snapshot; its decision under an object's lock never does.
 */
import t from 'tap';
import { API_DEFINITION } from '../../lib/kinds/api-definition/kind.js';
import { SECURITY_POLICY } from '../../lib/kinds/security-policy/kind.js';
import { planTick } from '../../lib/scale/coordinate.js';
import { type Shard, type ShardPart, shardScope } from '../../lib/scale/shards.js';
import { SNAPSHOT_TTL_MS } from '../../lib/scale/snapshot.js';
import { apiDefinition, defaultIdOf, FINALIZER, securityPolicy } from '../fixtures/builders.js';
import { MemoryTykGateway } from '../memory/gateway.js';
import { FastWorld, reported } from './world.js';

function shard(runId: string, index: number, part: ShardPart, count = 2): Shard {
  return { runId, index, count, part };
}

/** The run of `s`, as the shard's invocation makes it. */
function runShard(w: FastWorld, s: Shard, extra: { dryRun?: boolean } = {}) {
  return w.run({ scope: shardScope(s), shard: s, ...extra });
}

const names = (r: { objects: { kind: string; namespace: string; name: string }[] }) => r.objects.map((o) => `${o.kind}/${o.namespace}/${o.name}`).sort();

/** A world with `perNamespace` ApiDefinitions (`<ns>-0`…) in each namespace, synced by an ordinary full run. */
async function synced(namespaces: readonly string[], perNamespace: number, maxDeletesPerRun: number): Promise<FastWorld> {
  const w = new FastWorld({ settings: { maxDeletesPerRun } });
  for (const ns of namespaces) for (let i = 0; i < perNamespace; i++) w.apply(apiDefinition(`${ns}-${i}`).inNamespace(ns).build());
  t.equal((await w.run()).counts.synced, namespaces.length * perNamespace);
  w.resetCounts();
  return w;
}

function deleteAll(w: FastWorld, ns: string, n: number): void {
  for (let i = 0; i < n; i++) w.delete(API_DEFINITION, `${ns}-${i}`, ns);
}

/** The ids of the APIs on the (Tyk Gateway) default gateway. */
function loadedIds(w: FastWorld): Set<string> {
  if (!(w.gateway instanceof MemoryTykGateway)) throw new Error('a Tyk Gateway world');
  return new Set(w.gateway.loaded('api').keys());
}

/** How many of `<ns>-0`…`<ns>-<n-1>` are on the gateway. */
function onGateway(w: FastWorld, ns: string, n: number): number {
  const ids = loadedIds(w);
  let found = 0;
  for (let i = 0; i < n; i++) if (ids.has(defaultIdOf(`${ns}-${i}`, ns))) found++;
  return found;
}

t.test('a shard of a range of names decides only its names, and logs as its shard of its tick', async (t) => {
  const w = new FastWorld();
  const all = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];
  for (const n of all) w.apply(apiDefinition(n).build());
  const first = ['a', 'b', 'c', 'd'];
  const rest = ['e', 'f', 'g', 'h'];
  // a policy of the second range that grants an API of the first: it follows that API, but not into the first's shard
  w.apply(securityPolicy('p').granting('a').build());

  const one = await runShard(w, shard('tick-1', 0, { namespace: 'default', to: 'e' }));
  t.same(
    names(one),
    first.map((n) => `ApiDefinition/default/${n}`),
    'only its range; not the policy that follows a',
  );
  t.same(one.counts, { synced: first.length });
  t.same([...loadedIds(w)].sort(), first.map((n) => defaultIdOf(n)).sort(), 'only they are written');
  for (const n of rest) t.equal(await w.record(API_DEFINITION, n), null, `${n}: not touched`);
  // its listing stopped past its names, and dropped what it read of the next range: no size is noted for the namespace
  t.equal(w.listSizes.inNamespace('ApiDefinition', 'default'), undefined, 'a range notes no size of its namespace');
  t.match(
    w.kube.listed.filter((l) => l.kind === 'ApiDefinition'),
    [{ returned: first.length, offered: first.length + 1 }],
    'its listing read up to the first name past its range, and kept its own',
  );
  t.equal(await w.record(SECURITY_POLICY, 'p'), null, 'p: not touched');
  t.match(
    w.log.entries.filter((e) => e.msg === 'run finished'),
    [{ shard: '1/2', tick: 'tick-1' }],
  );
  t.equal(w.listHandover.size, 1, 'it left where it stopped for the ApiDefinitions (the policies stopped on their first page: nothing to leave)');

  w.kube.listed.length = 0;
  const two = await runShard(w, shard('tick-1', 1, { namespace: 'default', from: 'e' }));
  t.same(names(two), [...rest.map((n) => `ApiDefinition/default/${n}`), 'SecurityPolicy/default/p']);
  t.equal(loadedIds(w).size, all.length, 'the two shards together: every object once');
  t.match(
    w.kube.listed.filter((l) => l.kind === 'ApiDefinition'),
    [{ returned: rest.length, offered: rest.length }],
    'the next range began where the one before stopped: it read none of the first range',
  );
  t.equal(w.listHandover.size, 0, 'the token was taken');
  t.match(
    w.log.entries.filter((e) => e.msg === 'run finished'),
    [{ shard: '1/2' }, { shard: '2/2', tick: 'tick-1' }],
  );

  // another tick's range, with nothing left for it (the range before ran elsewhere): from the first page, keeping its own
  w.kube.listed.length = 0;
  const alone = await runShard(w, shard('tick-2', 1, { namespace: 'default', from: 'e' }));
  t.same(alone.counts, { unchanged: rest.length + 1 });
  t.match(
    w.kube.listed.filter((l) => l.kind === 'ApiDefinition'),
    [{ returned: rest.length, offered: all.length }],
    'without a token it reads from the first page',
  );
});

t.test('a token left by one tick is not taken by another, nor by another kind or namespace', async (t) => {
  const w = new FastWorld();
  for (const n of ['a', 'b', 'c', 'd']) w.apply(apiDefinition(n).build());
  for (const n of ['a', 'b', 'c', 'd']) w.apply(apiDefinition(n).inNamespace('other').build());
  await runShard(w, shard('tick-1', 0, { namespace: 'default', to: 'c' }));
  t.equal(w.listHandover.size, 1);
  w.kube.listed.length = 0;
  await runShard(w, shard('tick-1', 1, { namespace: 'other', from: 'c' }));
  await runShard(w, shard('tick-2', 1, { namespace: 'default', from: 'c' }));
  t.match(
    w.kube.listed.filter((l) => l.kind === 'ApiDefinition'),
    [{ offered: 4 }, { offered: 4 }],
    'another namespace, another tick: each from the first page',
  );
  t.equal(w.listHandover.size, 1, 'the token waits for its own range');
});

t.test('a shard of namespaces decides only those namespaces, not a policy elsewhere that follows one of its APIs', async (t) => {
  const w = new FastWorld();
  w.apply(apiDefinition('x').inNamespace('one').build());
  w.apply(apiDefinition('y').inNamespace('two').build());
  w.apply(securityPolicy('p').inNamespace('two').granting('one/x').build());
  const report = await runShard(w, shard('tick-1', 0, { namespaces: ['one'] }));
  t.same(names(report), ['ApiDefinition/one/x']);
  t.equal(w.listSizes.inNamespace('ApiDefinition', 'one'), 1, 'a whole namespace listed: its size noted');
  t.equal(await w.record(API_DEFINITION, 'y', 'two'), null);
  t.equal(await w.record(SECURITY_POLICY, 'p', 'two'), null, 'the policy is left to its own shard');
  const other = await runShard(w, shard('tick-1', 1, { namespaces: ['two'] }));
  t.same(names(other), ['ApiDefinition/two/y', 'SecurityPolicy/two/p']);
});

t.test('the tick’s MAX_DELETES_PER_RUN: a shard whose deletions the other shards left no room for holds them all', async (t) => {
  const w = await synced(['a', 'b'], 2, 3);
  deleteAll(w, 'a', 2);
  deleteAll(w, 'b', 2);

  const first = await runShard(w, shard('tick-1', 0, { namespaces: ['a'] }));
  t.same(first.counts, { deleted: 2 }, 'two of the tick’s three');
  t.equal(onGateway(w, 'a', 2), 0);

  const second = await runShard(w, shard('tick-1', 1, { namespaces: ['b'] }));
  t.same(second.counts, { held: 2 }, 'its own two fit under the limit, the tick’s four do not');
  for (const n of ['b-0', 'b-1']) {
    t.match(reported(second, n, 'ApiDefinition', 'b'), {
      action: 'DELETE',
      result: 'held',
      error:
        'deletion held: with the other shards of this full run, these 2 deletions from the gateway would go over MAX_DELETES_PER_RUN=3 (it counts the whole tick); raise the limit (0 turns it off) or delete fewer at a time',
    });
    t.same(w.get(API_DEFINITION, n, 'b')?.metadata.finalizers, [FINALIZER], `${n}: the finalizer stays`);
  }
  t.same(second.gateway, { writes: 0, reloads: 0 }, 'nothing sent');
  t.equal(onGateway(w, 'b', 2), 2, 'still on the gateway');
  t.match(
    w.kube.eventsAbout('ApiDefinition', 'b-0', 'b').filter((e) => e.reason === 'TooManyDeletions'),
    [{ type: 'Warning', message: /it counts the whole tick/ }],
  );
  t.match(await w.record(API_DEFINITION, 'b-0', 'b'), { result: 'synced' }, 'the record stays as it was');

  // the tick's pool: shard 0 holds two; shard 1 none (a refused claim leaves nothing)
  t.equal(await w.memoryStore.claim('deletions:tick-1', 'probe', 2, 3, 1_000), false, 'two taken: no room for two more');
  t.equal(await w.memoryStore.claim('deletions:tick-1', 'probe', 1, 3, 1_000), true, 'room for one');

  // the next tick has an allowance of its own
  const next = await runShard(w, shard('tick-2', 1, { namespaces: ['b'] }));
  t.same(next.counts, { deleted: 2 });
  t.equal(onGateway(w, 'b', 2), 0);
});

t.test('a shard’s deletions count across its kinds: its policies’ after its APIs’', async (t) => {
  const w = new FastWorld({ settings: { maxDeletesPerRun: 2 } });
  w.apply(apiDefinition('x').inNamespace('a').build());
  w.apply(securityPolicy('p').inNamespace('a').build());
  w.apply(apiDefinition('y').inNamespace('b').build());
  t.same((await w.run()).counts, { synced: 3 });
  w.delete(API_DEFINITION, 'x', 'a');
  w.delete(SECURITY_POLICY, 'p', 'a');
  w.delete(API_DEFINITION, 'y', 'b');

  const first = await runShard(w, shard('tick-1', 0, { namespaces: ['a'] }));
  t.same(first.counts, { deleted: 2 }, 'an API and a policy: the tick’s two');
  const second = await runShard(w, shard('tick-1', 1, { namespaces: ['b'] }));
  t.match(reported(second, 'y', 'ApiDefinition', 'b'), { result: 'held', error: /these 1 deletions from the gateway would go over MAX_DELETES_PER_RUN=2/ });
  t.ok(loadedIds(w).has(defaultIdOf('y', 'b')), 'y stays on the gateway');
  t.equal(loadedIds(w).has(defaultIdOf('x', 'a')), false, 'x is gone');
});

t.test('no claim without a limit: MAX_DELETES_PER_RUN=0 lets every shard delete', async (t) => {
  const w = await synced(['a'], 3, 0);
  deleteAll(w, 'a', 3);
  const report = await runShard(w, shard('tick-1', 0, { namespaces: ['a'] }));
  t.same(report.counts, { deleted: 3 });
  t.equal(onGateway(w, 'a', 3), 0);
});

t.test('no claim in a dry run: it leaves the tick’s allowance to the shards that delete', async (t) => {
  const w = await synced(['a', 'b'], 2, 2);
  deleteAll(w, 'a', 2);
  deleteAll(w, 'b', 2);
  const dry = await runShard(w, shard('tick-1', 0, { namespaces: ['a'] }), { dryRun: true });
  t.same(dry.counts, { planned: 2 }, 'what it would delete');
  t.equal(onGateway(w, 'a', 2), 2, 'nothing deleted');

  const real = await runShard(w, shard('tick-1', 1, { namespaces: ['b'] }));
  t.same(real.counts, { deleted: 2 }, 'the dry run took none of the two');
});

t.test('no claim without a deletion: a shard with nothing to delete keeps the tick’s pool no longer', async (t) => {
  const w = await synced(['a', 'b', 'c'], 2, 3);
  deleteAll(w, 'a', 2);
  t.same((await runShard(w, shard('tick-1', 0, { namespaces: ['a'] }, 3))).counts, { deleted: 2 });

  // three hours later a shard with nothing to delete; the pool is forgotten SNAPSHOT_TTL_MS after its last claim
  w.clock.advance(3 * 60 * 60_000);
  t.same((await runShard(w, shard('tick-1', 1, { namespaces: ['b'] }, 3))).counts, { unchanged: 2 });
  w.clock.advance(SNAPSHOT_TTL_MS - 3 * 60 * 60_000 + 60_000);

  // a late delivery of the third shard: the pool of its tick is gone, so its two fit
  deleteAll(w, 'c', 2);
  t.same((await runShard(w, shard('tick-1', 2, { namespaces: ['c'] }, 3))).counts, { deleted: 2 });
});

t.test('an ordinary run claims nothing: its limit is its own', async (t) => {
  const w = await synced(['a'], 2, 2);
  await w.memoryStore.claim('deletions:undefined', 'shard-undefined', 2, 2, SNAPSHOT_TTL_MS);
  deleteAll(w, 'a', 2);
  t.same((await w.run()).counts, { deleted: 2 });
});

t.test('a shard decides first from its tick’s snapshot, and again under the lock from the gateway itself', async (t) => {
  const w = new FastWorld();
  for (const n of ['a', 'b', 'c']) w.apply(apiDefinition(n).build());
  await w.run();
  const plan = await planTick(w.deps, 2);
  if (!plan.sharded) throw new Error('a sharded tick');
  // after the snapshot: a's spec changes, and the gateway loses a behind our back
  w.updateSpec(API_DEFINITION, 'a', (s) => ({ ...s, proxy: { ...(s.proxy as object), target_url: 'http://elsewhere.example' } }));
  if (!(w.gateway instanceof MemoryTykGateway)) throw new Error('a Tyk Gateway world');
  w.gateway.removeBehindOurBack('api', defaultIdOf('a'));
  w.resetCounts();
  const reports = [];
  for (const s of plan.shards) reports.push(...(await runShard(w, s)).objects);
  t.equal(w.gateway.count('list'), 0, 'the first decision: the snapshot (a there, as recorded)');
  t.match(
    reports.find((o) => o.name === 'a'),
    { action: 'CREATE', reason: 'spec changed', result: 'synced' },
    'under the lock: read from the gateway, found missing (the snapshot would say UPDATE)',
  );
  t.ok(loadedIds(w).has(defaultIdOf('a')));
});
