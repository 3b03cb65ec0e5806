/**
 * The contest over listen paths in a phase (lib/engine/phase.ts `contestant`, owners.ts
 * `contest`), through whole Runs: of two live, valid resources on one listen path of one gateway
 * the older keeps it and the younger is refused before any write (ListenPathClash); a resource
 * being deleted, an invalid one and one whose gateway object could not be read are no
 * contestants, so they take no listen path nor id from a younger one.
 */
import t from 'tap';
import { API_DEFINITION } from '../../lib/kinds/api-definition/kind.js';
import { apiDefinition, defaultIdOf } from '../fixtures/builders.js';
import { MemoryTykGateway } from '../memory/gateway.js';
import { FastWorld, reported } from './world.js';

const SHARED = { target_url: 'http://httpbin.org', listen_path: '/shared', strip_listen_path: true };

/** An ApiDefinition on the listen path /shared. */
const onShared = (name: string) => apiDefinition(name).patchSpec({ proxy: SHARED });

function apiIds(w: FastWorld): string[] {
  if (!(w.gateway instanceof MemoryTykGateway)) throw new Error('a Tyk Gateway world');
  return [...w.gateway.loaded('api').keys()].sort();
}

/** "zeta" created first, "alpha" a second later: the older one is last by name. */
function olderThenYounger(w: FastWorld, older = onShared('zeta'), younger = onShared('alpha')): void {
  w.apply(older.build());
  w.clock.advance(1_000);
  w.apply(younger.build());
}

t.test('the older of two resources on one listen path keeps it; the younger is refused before any write', async (t) => {
  const w = new FastWorld();
  olderThenYounger(w);
  const report = await w.run();
  t.match(reported(report, 'zeta'), { action: 'CREATE', result: 'synced' });
  t.match(reported(report, 'alpha'), {
    reason: 'ListenPathClash',
    result: 'failed',
    code: 'LISTEN_PATH_CLASH',
    error: 'spec.proxy.listen_path /shared is already served on gateway default by ApiDefinition/default/zeta; choose another listen path or domain',
  });
  t.same(apiIds(w), [defaultIdOf('zeta')], 'only the older is written');
  t.same(report.gateway, { writes: 1, reloads: 1 });
  t.notOk(w.api('alpha')?.metadata.finalizers, 'no finalizer on the refused one');

  const next = await w.run();
  t.match(reported(next, 'alpha'), { reason: 'ListenPathClash', result: 'failed' }, 'still refused while the older one serves the path');
  t.same(next.gateway, { writes: 0, reloads: 0 });
});

t.test('a resource being deleted is no contestant: a younger one takes its listen path in the same run', async (t) => {
  const w = new FastWorld();
  w.apply(onShared('zeta').build());
  await w.run();
  w.delete(API_DEFINITION, 'zeta');
  w.clock.advance(1_000);
  w.apply(onShared('alpha').build());
  const report = await w.run();
  t.match(reported(report, 'zeta'), { action: 'DELETE', result: 'deleted' });
  t.match(reported(report, 'alpha'), { action: 'CREATE', reason: 'created in cluster' });
  t.not(reported(report, 'alpha').reason, 'ListenPathClash');
  t.ok(apiIds(w).includes(defaultIdOf('alpha')), 'the younger one is written');
});

t.test('an invalid resource is no contestant: a younger valid one takes the id and listen path it asks for', async (t) => {
  const w = new FastWorld();
  olderThenYounger(w, onShared('zeta').withApiId('same-id').unsupported(), onShared('alpha').withApiId('same-id'));
  const report = await w.run();
  t.match(reported(report, 'zeta'), { result: 'invalid' });
  t.match(reported(report, 'alpha'), { action: 'CREATE', result: 'synced', id: 'same-id' });
  t.same(apiIds(w), ['same-id']);
});

t.test('a resource whose gateway object could not be read is no contestant', async (t) => {
  const w = new FastWorld();
  olderThenYounger(w);
  // the older one's GET fails (a run of the two named objects reads each with a GET)
  w.gateway.inject({ op: 'get', match: (call) => call.id === defaultIdOf('zeta'), error: () => new Error('connection reset') });
  const report = await w.run({
    trigger: 'watch',
    scope: {
      refs: [
        { kind: API_DEFINITION, namespace: 'default', name: 'zeta' },
        { kind: API_DEFINITION, namespace: 'default', name: 'alpha' },
      ],
    },
  });
  t.match(reported(report, 'zeta'), { reason: 'read failed', result: 'failed' });
  t.match(reported(report, 'alpha'), { action: 'CREATE', result: 'synced' });
  t.same(apiIds(w), [defaultIdOf('alpha')]);
});
