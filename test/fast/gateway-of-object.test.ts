/**
 * Which gateway an object goes to, and when a change of gateway must clean up the old one
 * (lib/engine/load.ts, resolveTarget): an object goes to its contextRef's gateway, a
 * vanished one to the gateway its record names (the default one for a record that names
 * none). The old gateway is cleaned up only when the record says the object reached it.
 */
import t from 'tap';
import type { JsonObject } from '../../lib/gateway/types.js';
import { API_DEFINITION } from '../../lib/kinds/api-definition/kind.js';
import { apiDefinition, defaultIdOf, operatorContext, recordFor } from '../fixtures/builders.js';
import { MemoryTykGateway } from '../memory/gateway.js';
import { FastWorld, type MemoryGateway, reported } from './world.js';

const ID = defaultIdOf('a');
const CTX = 'context:default/ctx';

function loaded(g: MemoryGateway): Map<string, JsonObject> {
  if (!(g instanceof MemoryTykGateway)) throw new Error('not a Tyk Gateway');
  return g.loaded('api');
}

/** A world with a second gateway behind OperatorContext ctx. */
function twoGateways(): { w: FastWorld; other: MemoryGateway } {
  const w = new FastWorld();
  const other = w.addGateway('http://gw2:8080', { secret: 's2' });
  w.apply(operatorContext('ctx').ce('http://gw2:8080', 's2').build());
  return { w, other };
}

t.test('a record that names no gateway is the default gateway: a synced object stays quiet', async (t) => {
  const w = new FastWorld();
  w.apply(apiDefinition('a').build());
  await w.run();
  await w.editRecord(API_DEFINITION, 'a', (r) => {
    delete r.gateway;
    return r;
  });
  w.resetCounts();
  const report = await w.run();
  t.match(reported(report, 'a'), { action: 'NOOP', reason: 'unchanged', result: 'unchanged', gateway: 'default' });
  t.same(report.gateway, { writes: 0, reloads: 0 });
});

t.test('moved to another gateway: the old one is cleaned up only when the record says the object reached it', async (t) => {
  const cases = [
    { what: 'synced there', rec: recordFor('ApiDefinition', 'a').onGateway('default').build(), cleaned: true },
    { what: 'written there, not yet visible', rec: recordFor('ApiDefinition', 'a').pending().onGateway('default').build(), cleaned: true },
    { what: 'its first write there failed', rec: { ...recordFor('ApiDefinition', 'a').failed('503').onGateway('default').build(), observedHash: '' }, cleaned: false },
    { what: 'it never had an id there', rec: { ...recordFor('ApiDefinition', 'a').onGateway('default').build(), id: '' }, cleaned: false },
  ];
  for (const c of cases) {
    t.test(c.what, async (t) => {
      const { w, other } = twoGateways();
      w.apply(apiDefinition('a').inContext('ctx').build());
      await w.putRecord(c.rec);
      const report = await w.run();
      t.match(reported(report, 'a'), { action: 'CREATE', result: 'synced', gateway: CTX });
      if (c.cleaned) t.equal(reported(report, 'a').reason, 'moved to another gateway');
      else t.not(reported(report, 'a').reason, 'moved to another gateway');
      t.ok(loaded(other).has(ID), 'written to its new gateway');
      t.equal(w.gateway.count('remove'), c.cleaned ? 1 : 0, c.cleaned ? 'removed from the old one' : 'the old one is left alone');
      t.match(await w.record(API_DEFINITION, 'a'), { result: 'synced', gateway: CTX });
    });
  }
  t.end();
});

t.test('an object that stays on its gateway is not moved, whatever its record says about writes', async (t) => {
  const w = new FastWorld();
  w.apply(apiDefinition('a').build());
  await w.putRecord(recordFor('ApiDefinition', 'a').pending().onGateway('default').build());
  const report = await w.run();
  t.not(reported(report, 'a').reason, 'moved to another gateway');
  t.match(reported(report, 'a'), { result: 'synced', gateway: 'default' });
  t.equal(w.gateway.count('remove'), 0);
});

t.test('a vanished object is deleted from the gateway its record names', async (t) => {
  const { w, other } = twoGateways();
  w.apply(apiDefinition('a').inContext('ctx').build());
  w.apply(apiDefinition('b').build());
  await w.run();
  t.ok(loaded(other).has(ID));
  w.remove(API_DEFINITION, 'a');
  w.remove(API_DEFINITION, 'b');
  w.resetCounts();
  const report = await w.run();
  t.match(reported(report, 'a'), { action: 'DELETE', reason: 'deleted in cluster', result: 'deleted', gateway: CTX });
  t.match(reported(report, 'b'), { action: 'DELETE', reason: 'deleted in cluster', result: 'deleted', gateway: 'default' });
  t.equal(other.count('remove', 'api'), 1);
  t.equal(w.gateway.count('remove', 'api'), 1);
  t.notOk(loaded(other).has(ID));
  t.notOk(loaded(w.gateway).has(defaultIdOf('b')));
});

t.test('a vanished object whose record names a gateway that cannot be resolved: failed, record kept, nothing removed', async (t) => {
  const w = new FastWorld();
  await w.putRecord(recordFor('ApiDefinition', 'a').onGateway('context:default/gone').build());
  const report = await w.run();
  t.match(reported(report, 'a'), { action: 'NOOP', reason: 'gateway unavailable', result: 'failed', code: 'GATEWAY_CONTEXT' });
  t.equal(w.gateway.count('remove'), 0);
  t.equal(w.gateway.count('get') + w.gateway.count('list'), 0, 'no gateway read');
  t.match(await w.record(API_DEFINITION, 'a'), { result: 'synced', gateway: 'context:default/gone' });
});

t.test('an object whose context is missing: failed, its gateway state not read', async (t) => {
  const w = new FastWorld();
  w.apply(apiDefinition('a').inContext('nope').build());
  const report = await w.run();
  t.match(reported(report, 'a'), { action: 'NOOP', reason: 'gateway unavailable', result: 'failed', code: 'GATEWAY_CONTEXT' });
  t.equal(w.gateway.count('get') + w.gateway.count('list'), 0);
  t.match(w.api('a')?.status, { latestTransaction: { status: 'Failed' } });
});
