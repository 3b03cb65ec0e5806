/**
 * Whole runs against a gateway of three replicas (ReplicaGateway over three in-memory Tyk
 * Gateways as the default gateway): an API created reaches each replica with one write and one
 * reload; a replica restarted empty gets it back from one run, written to it alone; a replica
 * edited behind our back is restored with one write to it; a replica that answers 500 leaves the
 * others synced, nothing deleted, and is a run error naming it; a replica that joins is served
 * by the next run, one that leaves is never written again.
 */
import t from 'tap';
import { type Replica, ReplicaGateway } from '../../lib/gateway/replicas.js';
import type { JsonObject } from '../../lib/gateway/types.js';
import { API_DEFINITION } from '../../lib/kinds/api-definition/kind.js';
import { apiDefinition, defaultIdOf } from '../fixtures/builders.js';
import { gatewayFailure, MemoryTykGateway } from '../memory/gateway.js';
import { FastWorld, reported } from './world.js';

const HTTPBIN = defaultIdOf('httpbin');

/** A FastWorld whose default gateway is the replicas `names`, all ready; `members` changes which are. */
function world(names = ['pod-a', 'pod-b', 'pod-c']) {
  const pods = new Map<string, MemoryTykGateway>();
  let members = [...names];
  let w: FastWorld | undefined;
  const podOf = (name: string): MemoryTykGateway => {
    let gw = pods.get(name);
    if (!gw) {
      gw = new MemoryTykGateway({ name, clock: (w as FastWorld).clock });
      pods.set(name, gw);
    }
    return gw;
  };
  const discover = async (): Promise<Replica[]> => members.map((name) => ({ name, url: `http://${name}.tyk:8080` }));
  w = new FastWorld({ defaultGateway: () => new ReplicaGateway('default', discover, (r) => podOf(r.name), { now: () => (w as FastWorld).clock.now() }) });
  for (const n of names) podOf(n);
  const each = (f: (g: MemoryTykGateway) => number) => Object.fromEntries([...pods].map(([n, g]) => [n, f(g)]));
  return {
    w,
    pod: podOf,
    writes: () => each((g) => g.writes()),
    reloads: () => each((g) => g.reloads.requested),
    reset: () => {
      w?.resetCounts();
      for (const g of pods.values()) {
        g.resetCalls();
        g.reloads.requested = 0;
      }
    },
    setMembers: (m: string[]) => {
      members = m;
    },
  };
}

t.test('an API created reaches all three replicas: one write and one reload each; then a silent steady state', async (t) => {
  const r = world();
  r.w.apply(apiDefinition('httpbin').build());
  const report = await r.w.run();
  t.match(reported(report, 'httpbin'), { action: 'CREATE', result: 'synced', id: HTTPBIN });
  t.same(r.writes(), { 'pod-a': 1, 'pod-b': 1, 'pod-c': 1 });
  t.same(r.reloads(), { 'pod-a': 1, 'pod-b': 1, 'pod-c': 1 });
  t.same(report.gateway, { writes: 1, reloads: 1, replicas: [{ gateway: 'default', replicas: ['pod-a', 'pod-b', 'pod-c'], unreadable: [] }] }, 'one write and one reload to the engine');
  for (const p of ['pod-a', 'pod-b', 'pod-c']) t.ok(r.pod(p).loaded('api').has(HTTPBIN), `${p} serves it`);
  r.reset();
  const quiet = await r.w.run();
  t.match(reported(quiet, 'httpbin'), { action: 'NOOP', result: 'unchanged' });
  t.same(r.writes(), { 'pod-a': 0, 'pod-b': 0, 'pod-c': 0 });
  t.same(Object.fromEntries(['pod-a', 'pod-b', 'pod-c'].map((p) => [p, r.pod(p).count('list', 'api')])), { 'pod-a': 1, 'pod-b': 1, 'pod-c': 1 }, 'a steady state: one list per replica');
});

t.test('a replica restarted empty gets every API back from one run, with writes to it alone', async (t) => {
  const r = world();
  for (const n of ['httpbin', 'petstore']) r.w.apply(apiDefinition(n).build());
  await r.w.run();
  r.pod('pod-b').restart();
  r.reset();
  const report = await r.w.run();
  t.match(reported(report, 'httpbin'), { action: 'CREATE', reason: 'missing on gateway', result: 'synced' });
  t.same(r.writes(), { 'pod-a': 0, 'pod-b': 2, 'pod-c': 0 });
  t.same(r.reloads(), { 'pod-a': 0, 'pod-b': 1, 'pod-c': 0 });
  t.equal(r.pod('pod-b').loaded('api').size, 2);
});

t.test('a replica edited behind our back is restored with one write to it', async (t) => {
  const r = world();
  r.w.apply(apiDefinition('httpbin').build());
  await r.w.run();
  r.pod('pod-c').tamper('api', HTTPBIN, (o: JsonObject) => {
    (o.proxy as JsonObject).target_url = 'http://evil.example';
  });
  r.reset();
  const report = await r.w.run();
  t.match(reported(report, 'httpbin'), { action: 'UPDATE', reason: 'drifted on gateway', result: 'synced' });
  t.same(r.writes(), { 'pod-a': 0, 'pod-b': 0, 'pod-c': 1 });
  t.same(r.reloads(), { 'pod-a': 0, 'pod-b': 0, 'pod-c': 1 });
  t.match(r.pod('pod-c').loaded('api').get(HTTPBIN), { proxy: { target_url: 'http://httpbin.org' } });
});

t.test('a replica that answers 500: the others are synced, nothing is deleted anywhere, and the run names it', async (t) => {
  const r = world();
  r.w.apply(apiDefinition('httpbin').build());
  await r.w.run();
  r.w.apply(apiDefinition('petstore').build());
  r.w.updateSpec(API_DEFINITION, 'httpbin', (s) => ({ ...s, active: false }));
  // down for this run: every read of it answers 500
  for (const op of ['list', 'get'] as const) r.pod('pod-b').inject({ op, times: 1_000, error: () => gatewayFailure({ status: 500 }, `${op} api`) });
  r.reset();
  const report = await r.w.run();
  t.match(reported(report, 'petstore'), { action: 'CREATE', result: 'synced' });
  t.match(reported(report, 'httpbin'), { action: 'UPDATE', result: 'synced' });
  t.same(r.writes(), { 'pod-a': 2, 'pod-b': 0, 'pod-c': 2 }, 'nothing written to the replica that could not be read');
  t.equal(r.pod('pod-b').count('remove'), 0, 'nothing deleted');
  t.match(report.errors, [{ stage: 'gateway default replica pod-b', code: 'GATEWAY_API_ERROR', message: /could not be read, so nothing was written to it: .*500/ }]);
  t.match(report.gateway.replicas, [{ unreadable: ['pod-b'] }]);
  const ready = (name: string) => ((r.w.api(name)?.status?.conditions ?? []) as { type: string }[]).find((c) => c.type === 'Ready');
  t.match(
    ready('petstore'),
    { status: 'False', reason: 'ReplicasUnavailable', message: '2 of 3 replicas serve the current spec; not known for pod-b: could not be read' },
    'kubectl describe says which replica does not',
  );
  // readable again: the next run serves it
  r.pod('pod-b').clearFaults();
  r.reset();
  const next = await r.w.run();
  t.same(r.writes(), { 'pod-a': 0, 'pod-b': 2, 'pod-c': 0 });
  t.same(next.errors, []);
  t.match(ready('petstore'), { status: 'True', reason: 'Available' }, 'every replica serves it again');
});

t.test('a replica that joins is served by the next run; one that leaves is never written again', async (t) => {
  const r = world();
  r.w.apply(apiDefinition('httpbin').build());
  await r.w.run();
  r.setMembers(['pod-a', 'pod-b', 'pod-c', 'pod-d']);
  r.reset();
  await r.w.run();
  t.same(r.writes(), { 'pod-a': 0, 'pod-b': 0, 'pod-c': 0, 'pod-d': 1 });
  t.ok(r.pod('pod-d').loaded('api').has(HTTPBIN));
  r.setMembers(['pod-a', 'pod-c', 'pod-d']);
  r.w.delete(API_DEFINITION, 'httpbin');
  r.reset();
  const report = await r.w.run();
  t.match(reported(report, 'httpbin'), { action: 'DELETE', result: 'deleted' });
  t.same(r.writes(), { 'pod-a': 1, 'pod-b': 0, 'pod-c': 1, 'pod-d': 1 }, 'the replica that left is not a deletion, and not written');
  t.ok(r.pod('pod-b').loaded('api').has(HTTPBIN), 'what it held stays with it');
});

t.test('a replica that never shows a write (its reloads lost): the object is not visible, and Ready names that replica', async (t) => {
  const r = world();
  r.pod('pod-c').dropReloads(1_000);
  r.w.apply(apiDefinition('httpbin').build());
  const report = await r.w.run();
  t.match(reported(report, 'httpbin'), { action: 'CREATE', result: 'pending' });
  t.ok(r.pod('pod-c').reloads.requested > 1, 'the lost reload was asked for again, of that replica');
  const ready = ((r.w.api('httpbin')?.status?.conditions ?? []) as { type: string }[]).find((c) => c.type === 'Ready');
  t.match(ready, { status: 'False', reason: 'NotVisible', message: /; not yet shown by pod-c$/ });
});
