/**
 * Carrying out a write and settling it (lib/engine/apply.ts), through whole Runs on the
 * stepping clock: how long a run waits for its writes to become visible, how often it reads
 * back and reloads, what it does with a lost or failed reload, a failed read-back, a gateway
 * that changed what we sent, and a write or retirement that fails.
 */
import t from 'tap';
import type { JsonObject } from '../../lib/gateway/types.js';
import { API_DEFINITION } from '../../lib/kinds/api-definition/kind.js';
import { OPERATOR_CONTEXT } from '../../lib/kube/kinds.js';
import { apiDefinition, defaultIdOf, FINALIZER, operatorContext } from '../fixtures/builders.js';
import { MemoryTykGateway } from '../memory/gateway.js';
import { kubeFailure } from '../memory/kube.js';
import { FastWorld, reported } from './world.js';

const A = defaultIdOf('a');
const retarget = (url: string) => (s: Record<string, unknown>) => ({ ...s, proxy: { ...(s.proxy as JsonObject), target_url: url } });

function ce(w: FastWorld): MemoryTykGateway {
  if (!(w.gateway instanceof MemoryTykGateway)) throw new Error('not a Tyk Gateway');
  return w.gateway;
}

async function synced(): Promise<FastWorld> {
  const w = new FastWorld();
  w.apply(apiDefinition('a').build());
  await w.run();
  w.resetCounts();
  return w;
}

t.test('a Tyk Gateway: one reload, one wait of initialDelayMs, one read-back', async (t) => {
  const w = new FastWorld();
  w.apply(apiDefinition('a').build());
  const report = await w.run();
  t.match(reported(report, 'a'), { action: 'CREATE', result: 'synced' });
  t.same(report.gateway, { writes: 1, reloads: 1 });
  t.equal(report.durationMs, w.settings.settle.initialDelayMs);
  t.equal(w.gateway.count('get', 'api'), 2, 'one read at load, one read-back');
});

t.test('a Dashboard: no reload, read back at once without waiting', async (t) => {
  const w = new FastWorld({ mode: 'pro' });
  w.apply(apiDefinition('a').build());
  const report = await w.run();
  t.match(reported(report, 'a'), { action: 'CREATE', result: 'synced' });
  t.same(report.gateway, { writes: 1, reloads: 0 });
  t.equal(report.durationMs, 0);
  t.equal(w.gateway.count('reload'), 0);
  t.equal(w.gateway.count('get', 'api'), 2);
});

t.test('a lost reload is re-issued once reloadEveryMs has passed; the write then shows', async (t) => {
  const w = new FastWorld();
  ce(w).dropReloads(1);
  w.apply(apiDefinition('a').build());
  const report = await w.run();
  t.match(reported(report, 'a'), { action: 'CREATE', result: 'synced' });
  t.same(report.gateway, { writes: 1, reloads: 2 });
  // reads back at 250, 750, 1750, 3750 (the delay doubling), reloads at 3750 (>= 3000 after the first), reads at 7750
  t.equal(report.durationMs, 7750);
  t.equal(w.gateway.count('get', 'api'), 6);
  t.same(ce(w).reloads, { requested: 2, applied: 1, dropped: 1 });
});

t.test('an update whose reload is lost: the old state read back is not taken for the write', async (t) => {
  const w = await synced();
  ce(w).dropReloads(1);
  w.updateSpec(API_DEFINITION, 'a', retarget('http://example.com'));
  const report = await w.run();
  t.match(reported(report, 'a'), { action: 'UPDATE', result: 'synced' });
  t.same(report.gateway, { writes: 1, reloads: 2 });
  t.equal(report.durationMs, 7750, 'waited for the re-issued reload');
  t.equal(w.kube.count('addFinalizer') + w.kube.count('patchFinalizers'), 0, 'the finalizer is there already: not asked for again');
  t.match(ce(w).loaded('api').get(A), { proxy: { target_url: 'http://example.com' } });
});

t.test('a removal whose reload is lost: still there is not gone', async (t) => {
  const w = await synced();
  ce(w).dropReloads(1);
  w.delete(API_DEFINITION, 'a');
  const report = await w.run();
  t.match(reported(report, 'a'), { action: 'DELETE', result: 'deleted' });
  t.same(report.gateway, { writes: 1, reloads: 2 });
  t.equal(report.durationMs, 7750);
  t.notOk(ce(w).loaded('api').has(A));
});

t.test('reloads that are always lost: pending when the budget is spent, reloads re-issued every reloadEveryMs', async (t) => {
  const w = new FastWorld();
  ce(w).dropReloads(100);
  w.apply(apiDefinition('a').build());
  const report = await w.run();
  t.match(reported(report, 'a'), { action: 'CREATE', result: 'pending', error: /not yet visible/ });
  t.equal(report.durationMs, w.settings.settle.budgetMs, 'waited the whole budget, no longer');
  // reloads at 0, 3750, 7750, 11750, 15750, 19750; reads at 250, 750, 1750, 3750, 7750, ..., 19750 and 20000
  t.same(report.gateway, { writes: 1, reloads: 6 });
  t.equal(w.gateway.count('get', 'api'), 10);
  t.match(await w.record(API_DEFINITION, 'a'), { result: 'pending' });
});

t.test('a deadline nearer than the budget shortens the wait', async (t) => {
  const w = new FastWorld();
  ce(w).dropReloads(100);
  w.apply(apiDefinition('a').build());
  const report = await w.run({ deadline: w.clock.now() + 5000 });
  t.match(reported(report, 'a'), { result: 'pending' });
  t.equal(report.durationMs, 5000);
  t.same(report.gateway, { writes: 1, reloads: 2 });
});

t.test('a deadline further than the budget does not lengthen it', async (t) => {
  const w = new FastWorld();
  ce(w).dropReloads(100);
  w.apply(apiDefinition('a').build());
  const report = await w.run({ deadline: w.clock.now() + 60_000 });
  t.equal(report.durationMs, w.settings.settle.budgetMs);
});

t.test('a deadline already passed during the writes: one read-back, no wait', async (t) => {
  const w = new FastWorld();
  ce(w).dropReloads(100);
  w.apply(apiDefinition('a').build());
  // the write itself takes 2s of the 1s left
  w.gateway.inject({ op: 'upsert', delayMs: 2000 });
  const report = await w.run({ deadline: w.clock.now() + 1000 });
  t.match(reported(report, 'a'), { result: 'pending' });
  t.equal(report.durationMs, 2000, 'no settle wait at all');
  t.equal(w.gateway.count('get', 'api'), 2, 'read back once');
});

t.test('a failed reload is a run error; it is re-issued and the write then shows', async (t) => {
  const w = new FastWorld();
  w.gateway.inject({ op: 'reload', error: () => new Error('reload refused') });
  w.apply(apiDefinition('a').build());
  const report = await w.run();
  t.same(report.errors, [{ stage: 'reload gateway default', code: 'INTERNAL', message: 'reload refused' }]);
  t.match(reported(report, 'a'), { result: 'synced' });
  t.same(report.gateway, { writes: 1, reloads: 2 }, 'the failed reload counts');
  t.equal(report.durationMs, 7750);
});

t.test('a failed read-back is not a failed write: it is read again', async (t) => {
  const w = new FastWorld();
  w.apply(apiDefinition('a').build());
  // the first get is the load's; the second, the read-back, fails
  w.gateway.inject({ op: 'get', afterCalls: 1, error: () => new Error('read refused') });
  const report = await w.run();
  t.match(reported(report, 'a'), { result: 'synced' });
  t.notOk(reported(report, 'a').error);
  t.equal(report.durationMs, 750, 'read again after the next wait');
  t.same(report.gateway, { writes: 1, reloads: 1 }, 'no reload needed for a failed read');
  t.match(await w.record(API_DEFINITION, 'a'), { result: 'synced', observedHash: /^m:[0-9a-f]{32}$/ });
});

t.test('a gateway that renamed a clashing listen path: visible (it moved), reported diverged', async (t) => {
  const w = await synced();
  w.apply(
    apiDefinition('b')
      .patchSpec({ proxy: { target_url: 'http://httpbin.org', listen_path: '/a', strip_listen_path: true } })
      .build(),
  );
  // a run for b alone (a full run would refuse the younger of the two: ListenPathClash)
  const report = await w.runFor(API_DEFINITION, 'b');
  t.match(reported(report, 'b'), { action: 'CREATE', result: 'diverged', error: /proxy\.listen_path: sent "\/a"/ });
  t.equal(report.durationMs, 250, 'no waiting for a write that will never read back as sent');
  t.same(report.gateway, { writes: 1, reloads: 1 });
});

t.test('a removal of what the gateway no longer has: nothing written, no reload, no wait', async (t) => {
  const w = await synced();
  ce(w).removeBehindOurBack('api', A);
  w.resetCounts();
  w.delete(API_DEFINITION, 'a');
  const report = await w.run();
  t.match(reported(report, 'a'), { action: 'DELETE', result: 'deleted' });
  t.same(report.gateway, { writes: 0, reloads: 0 });
  t.equal(report.durationMs, 0);
  t.equal(w.api('a'), undefined, 'finalizer dropped, object gone');
});

t.test('a failed gateway write is reported with its error; the gateway is still reloaded; nothing read back', async (t) => {
  const w = new FastWorld();
  w.apply(apiDefinition('a').build());
  w.gateway.inject({ op: 'upsert', error: () => new Error('write refused') });
  const report = await w.run();
  t.match(reported(report, 'a'), { action: 'CREATE', result: 'failed', error: 'write refused', code: 'INTERNAL' });
  t.same(report.gateway, { writes: 1, reloads: 1 });
  t.equal(report.durationMs, 0);
  t.equal(w.gateway.count('get', 'api'), 1, 'only the load read');
  t.match(
    w.log.entries.filter((e) => e.msg === 'apply failed'),
    [{ level: 'warn', key: 'ApiDefinition/default/a', action: 'CREATE', err: 'write refused', code: 'INTERNAL' }],
  );
});

t.test('the finalizer comes first: when it cannot be added, nothing is sent', async (t) => {
  const w = new FastWorld();
  w.apply(apiDefinition('a').build());
  w.kube.inject({ op: 'addFinalizer', error: () => kubeFailure({ status: 500 }, 'add finalizer') });
  const report = await w.run();
  t.match(reported(report, 'a'), { action: 'CREATE', result: 'failed' });
  t.same(report.gateway, { writes: 0, reloads: 0 });
  t.equal(w.gateway.writes(), 0);
  t.notOk(w.api('a')?.metadata.finalizers);
});

t.test('moved off a context that is gone: written to the new gateway, the old copy cannot be retired and that is reported', async (t) => {
  const w = new FastWorld();
  const gw2 = w.addGateway('http://gw2:8080', { secret: 's2' });
  w.apply(operatorContext('ctx').ce('http://gw2:8080', 's2').build());
  w.apply(apiDefinition('a').inContext('ctx').build());
  await w.run();
  w.remove(OPERATOR_CONTEXT, 'ctx');
  w.updateSpec(API_DEFINITION, 'a', ({ contextRef: _, ...rest }) => rest);
  w.resetCounts();
  const report = await w.run();
  t.match(reported(report, 'a'), {
    reason: 'moved to another gateway',
    result: 'invalid',
    code: 'INVALID_SPEC',
    error: 'cannot remove from the previous gateway: OperatorContext default/ctx not found',
  });
  t.equal(w.gateway.count('upsert', 'api'), 1, 'written to the default gateway');
  t.equal(gw2.writes(), 0, 'nothing removed from the old one');
  t.same(report.gateway, { writes: 1, reloads: 1 });
  t.same(w.api('a')?.metadata.finalizers, [FINALIZER]);
});

t.test('an id change on a context gateway retires the old id there, not on the default gateway', async (t) => {
  const w = new FastWorld();
  const gw2 = w.addGateway('http://gw2:8080', { secret: 's2' });
  w.apply(operatorContext('ctx').ce('http://gw2:8080', 's2').build());
  w.apply(apiDefinition('a').inContext('ctx').build());
  await w.run();
  w.resetCounts();
  w.updateSpec(API_DEFINITION, 'a', (s) => ({ ...s, api_id: 'new-id' }));
  const report = await w.run();
  t.match(reported(report, 'a'), { reason: 'id changed', result: 'synced', id: 'new-id', gateway: 'context:default/ctx' });
  t.same(report.gateway, { writes: 2, reloads: 1 });
  t.ok(gw2 instanceof MemoryTykGateway && [...gw2.loaded('api').keys()].join() === 'new-id', 'only the new id is left there');
  t.equal(w.gateway.writes(), 0, 'the default gateway is not touched');
});

t.test('a pass that wrote to a Tyk Gateway and to a Dashboard waits for the reload before reading back', async (t) => {
  const w = new FastWorld();
  w.addGateway('http://dash:3000', { mode: 'pro', secret: 's2' });
  w.apply(operatorContext('ctx').pro('http://dash:3000', 's2').build());
  w.apply(apiDefinition('a').build());
  w.apply(apiDefinition('b').inContext('ctx').build());
  const report = await w.run();
  t.same(report.counts, { synced: 2 });
  t.same(report.gateway, { writes: 2, reloads: 1 });
  t.equal(report.durationMs, w.settings.settle.initialDelayMs);
});

t.test('a Dashboard read-back that failed is tried again after a wait', async (t) => {
  const w = new FastWorld({ mode: 'pro' });
  w.apply(apiDefinition('a').build());
  w.gateway.inject({ op: 'get', afterCalls: 1, error: () => new Error('read refused') });
  const report = await w.run();
  t.match(reported(report, 'a'), { result: 'synced' });
  t.equal(report.durationMs, w.settings.settle.initialDelayMs, 'read at once, then after initialDelayMs');
  t.equal(w.gateway.count('get', 'api'), 3);
});

t.test('a reload is re-issued as soon as reloadEveryMs has passed, not later', async (t) => {
  const w = new FastWorld({ settings: { settle: { ...new FastWorld().settings.settle, reloadEveryMs: 3750 } } });
  ce(w).dropReloads(1);
  w.apply(apiDefinition('a').build());
  const report = await w.run();
  t.match(reported(report, 'a'), { result: 'synced' });
  // the fourth read-back is at 3750, exactly reloadEveryMs after the lost reload: re-issued then, visible at 7750
  t.equal(report.durationMs, 7750);
  t.same(report.gateway, { writes: 1, reloads: 2 });
});
