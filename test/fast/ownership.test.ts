/**
 * One owner per gateway object through a whole Run in process (test/fast/world.ts): a claim lost
 * to a concurrent run writes nothing; an id change retires the old id only while it is ours;
 * policies have owners too; owner entries missing for what we wrote (records from before owners)
 * are claimed by the next run without a write; an unowned gateway object under another id than a
 * resource's default one is adopted only from ADOPT_NAMESPACES.
 */
import t from 'tap';
import { API_DEFINITION } from '../../lib/kinds/api-definition/kind.js';
import { SECURITY_POLICY } from '../../lib/kinds/security-policy/kind.js';
import type { MemoryStore } from '../../lib/store/memory.js';
import type { Owner } from '../../lib/store/types.js';
import { apiDefinition, defaultIdOf, securityPolicy } from '../fixtures/builders.js';
import { DelegatingStore } from '../fixtures/delegating-store.js';
import { FastWorld, reported } from './world.js';

/** A store on which another run claims every id first, between our decision and our write. */
class ClaimedMeanwhile extends DelegatingStore {
  override async claimOwner(key: string, owner: Owner): Promise<Owner> {
    await this.inner.claimOwner(key, { ref: 'ApiDefinition/elsewhere/first', uid: 'uid-first' });
    return super.claimOwner(key, owner);
  }
}

t.test('a claim lost to a concurrent run: refused (IdClaimed), nothing written, no finalizer', async (t) => {
  const w = new FastWorld({ store: (m: MemoryStore) => new ClaimedMeanwhile(m) });
  w.apply(apiDefinition('x').build());
  const report = await w.run();
  t.match(reported(report, 'x'), { action: 'CREATE', result: 'failed', code: 'ID_CLAIMED' });
  t.equal(w.gateway.count('upsert'), 0, 'no gateway write');
  t.notOk(w.api('x')?.metadata.finalizers, 'no finalizer');
  t.match(await w.record(API_DEFINITION, 'x'), { result: 'failed', refusal: 'IdClaimed', id: '' });
  t.equal(w.kube.eventsAbout('ApiDefinition', 'x').filter((e) => e.type === 'Warning' && e.reason === 'IdClaimed').length, 1, 'a Warning Event IdClaimed');
  const next = await w.run();
  t.match(reported(next, 'x'), { action: 'NOOP', reason: 'IdClaimed', result: 'failed' }, 'the next run sees the owner and refuses before writing');
});

t.test('an id change retires the old id only while the resource owns it', async (t) => {
  t.test('ours: removed, and released', async (t) => {
    const w = new FastWorld();
    w.apply(apiDefinition('x').build());
    await w.run();
    const old = defaultIdOf('x');
    t.same(await w.memoryStore.owners([`default/api/${old}`]), [{ ref: 'ApiDefinition/default/x', uid: w.api('x')?.metadata.uid }]);
    w.updateSpec(API_DEFINITION, 'x', (s) => ({ ...s, api_id: 'new-id' }));
    const report = await w.run();
    t.match(reported(report, 'x'), { reason: 'id changed', result: 'synced', id: 'new-id' });
    t.notOk(await w.gateway.get('api', old), 'the old id is gone');
    t.same(await w.memoryStore.owners([`default/api/${old}`, 'default/api/new-id']), [null, { ref: 'ApiDefinition/default/x', uid: w.api('x')?.metadata.uid }], 'released, and the new one owned');
  });

  t.test("another's: left on the gateway", async (t) => {
    const w = new FastWorld();
    w.apply(apiDefinition('x').build());
    await w.run();
    const old = defaultIdOf('x');
    await w.memoryStore.releaseOwner(`default/api/${old}`, 'ApiDefinition/default/x');
    await w.memoryStore.claimOwner(`default/api/${old}`, { ref: 'ApiDefinition/team-b/other', uid: 'u' });
    // another listen path too: the one left behind keeps its own
    w.updateSpec(API_DEFINITION, 'x', (s) => ({ ...s, api_id: 'new-id', proxy: { ...(s.proxy as object), listen_path: '/x2' } }));
    const report = await w.run();
    t.match(reported(report, 'x'), { reason: 'id changed', result: 'synced', id: 'new-id' });
    t.ok(await w.gateway.get('api', old), 'the old id, owned by another, stays');
    t.equal(w.gateway.count('remove'), 0, 'no delete sent');
  });
});

t.test("policies have owners: another namespace's policy id is refused", async (t) => {
  const w = new FastWorld();
  w.apply(securityPolicy('gold').inNamespace('team-b').build());
  await w.run();
  const id = defaultIdOf('gold', 'team-b');
  const before = JSON.stringify(await w.gateway.get('policy', id));
  w.apply(securityPolicy('copy').inNamespace('team-a').patchSpec({ id }).build());
  const report = await w.run();
  t.match(reported(report, 'copy', 'SecurityPolicy', 'team-a'), { reason: 'IdClaimed', result: 'failed' });
  t.equal(JSON.stringify(await w.gateway.get('policy', id)), before, 'the policy keeps its bytes');
  t.match(w.policy('copy', 'team-a')?.status, { latestTransaction: { status: 'Failed' } });
  t.same(await w.memoryStore.owners([`default/policy/${id}`]), [{ ref: 'SecurityPolicy/team-b/gold', uid: w.policy('gold', 'team-b')?.metadata.uid }]);
  t.equal(SECURITY_POLICY.gatewayKind, 'policy');
});

t.test('owners missing for what our records say we wrote are claimed by the next run, without a write', async (t) => {
  const w = new FastWorld();
  w.apply(apiDefinition('x').build());
  await w.run();
  const key = `default/api/${defaultIdOf('x')}`;
  await w.memoryStore.releaseOwner(key, 'ApiDefinition/default/x');
  w.resetCounts();
  const report = await w.run();
  t.match(reported(report, 'x'), { result: 'unchanged' });
  t.equal(w.gateway.count('upsert'), 0, 'no write');
  t.same(await w.memoryStore.owners([key]), [{ ref: 'ApiDefinition/default/x', uid: w.api('x')?.metadata.uid }], 'claimed again');
});

/** A gateway API no resource made (left by another tool), under `id`. */
async function leftBehind(w: FastWorld, id: string): Promise<void> {
  await w.gateway.upsert('api', id, {
    api_id: id,
    name: `left behind ${id}`,
    proxy: { listen_path: `/${id}`, target_url: 'http://left.behind' },
    version_data: { not_versioned: true, versions: { Default: { name: 'Default' } } },
  });
  await w.gateway.reload();
}

t.test('ADOPT_NAMESPACES: an unowned gateway object under another id than the default is adopted only from a namespace it lists', async (t) => {
  const pinned = apiDefinition('pinned').inNamespace('team-c').withApiId('operator-made').build();

  const refused = new FastWorld();
  await leftBehind(refused, 'operator-made');
  refused.apply(pinned);
  t.match(reported(await refused.run(), 'pinned', 'ApiDefinition', 'team-c'), { action: 'NOOP', reason: 'AdoptionNotPermitted', result: 'failed', code: 'ADOPTION_NOT_PERMITTED' });
  t.match(await refused.gateway.get('api', 'operator-made'), { name: 'left behind operator-made' }, 'left as it was');

  const adopting = new FastWorld({ settings: { adoptNamespaces: ['team-c'] } });
  await leftBehind(adopting, 'operator-made');
  adopting.apply(pinned);
  t.match(reported(await adopting.run(), 'pinned', 'ApiDefinition', 'team-c'), { action: 'UPDATE', reason: 'adopted from gateway', result: 'synced' });
  t.match(await adopting.gateway.get('api', 'operator-made'), { name: 'pinned', proxy: { listen_path: '/pinned' } });
});

/** What a flushed store leaves of `name`: nothing (its record and its owner entry gone). */
async function forget(w: FastWorld, name: string): Promise<void> {
  await w.memoryStore.deleteRecord(`ApiDefinition/default/${name}`);
  await w.memoryStore.releaseOwner(`default/api/${defaultIdOf(name)}`, `ApiDefinition/default/${name}`);
}

t.test('an object the gateway holds exactly as it would be sent, with no record: adopted as it is, no write, no reload; then unchanged', async (t) => {
  const w = new FastWorld();
  w.apply(apiDefinition('x').build());
  await w.run();
  await forget(w, 'x');
  t.same(await w.memoryStore.getRecords(['ApiDefinition/default/x']), [null], 'the record is gone');
  w.resetCounts();
  const report = await w.run();
  t.match(reported(report, 'x'), { action: 'NOOP', reason: 'adopted from gateway', result: 'synced' });
  t.same(report.gateway, { writes: 0, reloads: 0 }, 'nothing sent, nothing reloaded');
  t.equal(w.gateway.count('upsert'), 0);
  t.match(await w.memoryStore.getRecords(['ApiDefinition/default/x']), [{ result: 'synced' }], 'recorded as after a write');
  t.same(await w.memoryStore.owners([`default/api/${defaultIdOf('x')}`]), [{ ref: 'ApiDefinition/default/x', uid: w.api('x')?.metadata.uid }], 'the id claimed');
  t.match(reported(await w.run(), 'x'), { action: 'NOOP', reason: 'unchanged', result: 'unchanged' }, 'the next run: unchanged');
  t.equal(w.gateway.count('upsert'), 0, 'still no write');
});

t.test('adopted as it is, a resource without our finalizer gets it; one that differs on the gateway is written once', async (t) => {
  const w = new FastWorld();
  const id = defaultIdOf('bare');
  w.apply(apiDefinition('bare').build());
  await w.run();
  const body = await w.gateway.get('api', id);
  // a resource without our finalizer, whose object the gateway holds as it would be sent (what an import applies)
  const fresh = new FastWorld();
  await fresh.gateway.upsert('api', id, body ?? {});
  await fresh.gateway.reload();
  fresh.apply(apiDefinition('bare').build());
  const adopted = await fresh.run();
  t.match(reported(adopted, 'bare'), { action: 'NOOP', reason: 'adopted from gateway', result: 'synced' });
  t.same(fresh.api('bare')?.metadata.finalizers, ['finalizers.tyk.io/apidefinition'], 'the finalizer added, so its deletion removes the object');
  t.equal(adopted.gateway.writes, 0);

  const drifted = new FastWorld();
  await drifted.gateway.upsert('api', id, { ...(body ?? {}), name: 'edited by hand' });
  await drifted.gateway.reload();
  drifted.apply(apiDefinition('bare').build());
  const updated = await drifted.run();
  t.match(reported(updated, 'bare'), { action: 'UPDATE', reason: 'adopted from gateway', result: 'synced' });
  t.equal(updated.gateway.writes, 1, 'a field it sends differs: written once');
  t.match(await drifted.gateway.get('api', id), { name: 'bare' });
});

t.test('adopting as it is keeps the adoption rules: an identical unowned object under a pinned id is refused outside ADOPT_NAMESPACES', async (t) => {
  const maker = new FastWorld({ settings: { adoptNamespaces: ['team-c'] } });
  const pinned = apiDefinition('pinned').inNamespace('team-c').withApiId('operator-made').build();
  maker.apply(pinned);
  await maker.run();
  const body = await maker.gateway.get('api', 'operator-made');
  const w = new FastWorld();
  await w.gateway.upsert('api', 'operator-made', body ?? {});
  await w.gateway.reload();
  w.apply(pinned);
  t.match(reported(await w.run(), 'pinned', 'ApiDefinition', 'team-c'), { action: 'NOOP', reason: 'AdoptionNotPermitted', result: 'failed', code: 'ADOPTION_NOT_PERMITTED' });
  t.same(w.api('pinned', 'team-c')?.metadata.finalizers ?? [], [], 'no finalizer: nothing of it is ours');
});
