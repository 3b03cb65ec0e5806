/**
 * The gateway list read ahead of the API server (lib/engine/phase.ts listAhead,
 * lib/scale/list-ahead.ts), through whole Runs with an ObservedMemo and a gateway client that
 * gives listed objects' digests: a full or namespaces' run, for a kind this process has listed on
 * the default gateway before, starts that list before the API server's list (one list, not two);
 * not a first run, a run of named objects, a kind the memo has nothing of, or a shard run (its
 * tick's snapshot); a list no read took is forgotten from the memo.
 */
import { createHash } from 'node:crypto';
import t from 'tap';
import type { GatewayObjectKind, JsonObject, ListVisitor } from '../../lib/gateway/types.js';
import { API_DEFINITION } from '../../lib/kinds/api-definition/kind.js';
import { SECURITY_POLICY } from '../../lib/kinds/security-policy/kind.js';
import { planTick } from '../../lib/scale/coordinate.js';
import { ObservedMemo } from '../../lib/scale/observed-memo.js';
import { shardScope } from '../../lib/scale/shards.js';
import { apiDefinition, securityPolicy } from '../fixtures/builders.js';
import { DelegatingGateway } from '../memory/delegating-gateway.js';
import { FastWorld, reported } from './world.js';

/** The in-memory gateway as a client that reads listed bytes sees it: each listed object with the SHA-256 digest of its JSON. */
class DigestingGateway extends DelegatingGateway {
  override list(kind: GatewayObjectKind, visit?: ListVisitor): Promise<Map<string, JsonObject>> {
    if (!visit) return this.inner.list(kind);
    return this.inner.list(kind, (id, item) => {
      const body = item.body();
      visit(id, { digest: createHash('sha256').update(JSON.stringify(body)).digest('base64'), body: () => body });
    });
  }
}

/** A world whose runs keep an ObservedMemo, and a log of when the gateway's lists start: how many lists of the kind's resources the API server had answered by then. */
function world(): { w: FastWorld; memo: ObservedMemo; lists: string[] } {
  const memo = new ObservedMemo();
  const w = new FastWorld({ observedMemo: memo, defaultGateway: (g) => new DigestingGateway(g) });
  const lists: string[] = [];
  const resourceOf: Record<string, string> = { api: API_DEFINITION.kind, policy: SECURITY_POLICY.kind };
  w.gateway.inject({
    op: 'list',
    times: Infinity,
    hook: (call) => {
      const resource = resourceOf[call.kind ?? ''];
      if (resource) lists.push(`${call.kind} after ${w.kube.count('list', resource)} ${resource} lists`);
    },
  });
  return { w, memo, lists };
}

/** A run, with the counts and the list log reset before it. */
async function measured(w: FastWorld, lists: string[], request: Parameters<FastWorld['run']>[0] = {}) {
  w.resetCounts();
  lists.length = 0;
  return w.run(request);
}

t.test('a full run lists the gateway ahead of the API server once this process has listed the kind there: one list', async (t) => {
  const { w, memo, lists } = world();
  for (const n of ['a', 'b']) w.apply(apiDefinition(n).build());
  w.apply(securityPolicy('p').granting('a').build());
  t.same((await w.run()).counts, { synced: 3 });
  t.notOk(memo.has('default', 'api'), 'the gateway had nothing when it was listed');
  t.same((await measured(w, lists)).counts, { unchanged: 3 });
  // (the ApiDefinitions' phase lists the policies once, for what references the APIs: the policies' own list is the second)
  t.same(lists, ['api after 1 ApiDefinition lists', 'policy after 2 SecurityPolicy lists'], 'listed after the API server');
  t.ok(memo.has('default', 'api'), 'the memo kept the listed APIs');
  t.ok(memo.has('default', 'policy'));

  const report = await measured(w, lists);
  t.same(report.counts, { unchanged: 3 });
  t.same(lists, ['api after 0 ApiDefinition lists', 'policy after 1 SecurityPolicy lists'], 'each list started before the API server was listed (for its phase)');
  t.equal(w.gateway.count('list', 'api'), 1, 'one list of the APIs: the one read ahead');
  t.equal(w.gateway.count('list', 'policy'), 1);
  t.equal(w.gateway.count('get'), 0);
  t.ok(memo.has('default', 'api'), 'the list was taken: the memo keeps it');
});

t.test('a kind the memo has nothing of is listed after the API server', async (t) => {
  const { w, memo, lists } = world();
  w.apply(apiDefinition('a').build());
  await w.run();
  await w.run();
  t.ok(memo.has('default', 'api'));
  t.notOk(memo.has('default', 'policy'), 'no policy listed');

  w.apply(securityPolicy('p').granting('a').build());
  const report = await measured(w, lists);
  t.match(reported(report, 'p', 'SecurityPolicy'), { action: 'CREATE', result: 'synced' });
  t.same(lists, ['api after 0 ApiDefinition lists', 'policy after 2 SecurityPolicy lists'], 'the APIs ahead, the policies after');
});

t.test('a run over namespaces lists ahead as a full run does', async (t) => {
  const { w, lists } = world();
  w.apply(apiDefinition('a').build());
  await w.run();
  await w.run();
  const report = await measured(w, lists, { trigger: 'resync', scope: { namespaces: ['default'] } });
  t.match(reported(report, 'a'), { result: 'unchanged' });
  t.same(lists, ['api after 0 ApiDefinition lists']);
  t.equal(w.gateway.count('list', 'api'), 1);
});

t.test('a run of named objects reads them one by one: nothing listed ahead, the memo kept', async (t) => {
  const { w, memo, lists } = world();
  for (const n of ['a', 'b']) w.apply(apiDefinition(n).build());
  await w.run();
  await w.run();
  t.ok(memo.has('default', 'api'));
  const report = await measured(w, lists, { trigger: 'watch', scope: { refs: [{ kind: API_DEFINITION, namespace: 'default', name: 'a' }] } });
  t.match(reported(report, 'a'), { result: 'unchanged' });
  t.same(lists, [], 'no list');
  t.equal(w.gateway.count('list'), 0);
  t.equal(w.gateway.count('get', 'api'), 1);
  t.ok(memo.has('default', 'api'), 'kept for the next full run');
});

t.test('a list read ahead that no read takes is forgotten: the next run lists after', async (t) => {
  const { w, memo, lists } = world();
  w.apply(apiDefinition('a').build());
  await w.run();
  await w.run();
  // the last ApiDefinition deleted: its deletion lists the APIs (ahead) and takes that list
  w.delete(API_DEFINITION, 'a');
  t.match(reported(await w.run(), 'a'), { action: 'DELETE', result: 'deleted' });
  t.equal(w.api('a'), undefined);
  t.ok(memo.has('default', 'api'), 'the gateway still had it when it was listed');

  const empty = await measured(w, lists);
  t.same(empty.objects, [], 'nothing of the kind left to read');
  t.same(lists, ['api after 0 ApiDefinition lists'], 'listed ahead, for nothing');
  t.notOk(memo.has('default', 'api'), 'forgotten');

  w.apply(apiDefinition('b').build());
  await measured(w, lists);
  t.same(lists, ['api after 1 ApiDefinition lists'], 'the next run lists after the API server');
});

t.test('a shard run takes its tick’s snapshot: nothing listed ahead, the memo kept', async (t) => {
  const { w, memo, lists } = world();
  for (const n of ['a', 'b', 'c']) w.apply(apiDefinition(n).build());
  await w.run();
  await w.run();
  t.ok(memo.has('default', 'api'));
  const plan = await planTick(w.deps, 2);
  if (!plan.sharded) throw new Error('a sharded tick');
  lists.length = 0;
  w.resetCounts();
  for (const shard of plan.shards) {
    const report = await w.run({ scope: shardScope(shard), shard });
    t.ok(
      report.objects.every((o) => o.result === 'unchanged'),
      'unchanged',
    );
  }
  t.equal(plan.shards.length, 2);
  t.same(lists, [], 'the shards read the snapshot, not the gateway');
  t.equal(w.gateway.count('list'), 0);
  t.ok(memo.has('default', 'api'), 'nothing forgotten');
});
