/**
 * GET for a few, LIST for many (lib/engine/load.ts, readObserved and readObjects): the gateway
 * state of a run over namespaces, or of more objects than `getThreshold`, is read with one
 * LIST per gateway and kind; of a few named objects, with one GET each. Objects re-read under
 * their locks follow the same rule against the API server, one LIST per namespace. A failed
 * LIST fails every object it covered, and is a run error; it never makes an object absent.
 */
import t from 'tap';
import type { ObjectRef } from '../../lib/engine/kind.js';
import { API_DEFINITION } from '../../lib/kinds/api-definition/kind.js';
import { SECURITY_POLICY } from '../../lib/kinds/security-policy/kind.js';
import { GatewayUnavailableError } from '../../lib/platform/errors.js';
import { getLimit } from '../../lib/scale/list-sizes.js';
import { apiDefinition, defaultIdOf, securityPolicy } from '../fixtures/builders.js';
import { MemoryTykGateway } from '../memory/gateway.js';
import { kubeFailure } from '../memory/kube.js';
import { FastWorld, reported } from './world.js';

function ce(w: FastWorld): MemoryTykGateway {
  if (!(w.gateway instanceof MemoryTykGateway)) throw new Error('not a Tyk Gateway');
  return w.gateway;
}

const refs = (...names: string[]): ObjectRef[] => names.map((name) => ({ kind: API_DEFINITION, namespace: 'default', name }));

async function synced(names: string[], getThreshold: number): Promise<FastWorld> {
  const w = new FastWorld({ settings: { getThreshold } });
  for (const n of names) w.apply(apiDefinition(n).build());
  await w.run();
  w.resetCounts();
  return w;
}

t.test('the gateway: named objects up to getThreshold are read with a GET each, more with one LIST', async (t) => {
  const w = await synced(['a', 'b', 'c'], 2);
  const two = await w.run({ trigger: 'watch', scope: { refs: refs('a', 'b') } });
  t.equal(w.gateway.count('get', 'api'), 2, 'two, at the threshold: a GET each');
  t.equal(w.gateway.count('list', 'api'), 0);
  t.match(reported(two, 'a'), { result: 'unchanged' });
  w.resetCounts();
  const three = await w.run({ trigger: 'watch', scope: { refs: refs('a', 'b', 'c') } });
  t.equal(w.gateway.count('get', 'api'), 0, 'three, above it: no GET');
  t.equal(w.gateway.count('list', 'api'), 1, 'one LIST');
  for (const n of ['a', 'b', 'c']) t.match(reported(three, n), { result: 'unchanged' });
});

t.test('the gateway: once this process has listed a large gateway, GETs up to a tenth of its size', async (t) => {
  const names = Array.from({ length: 50 }, (_, i) => `api-${i}`);
  const w = await synced(names, 2);
  t.equal(w.listSizes.of('default', 'api'), 50, 'the full run saw 50 APIs listed');
  const five = await w.run({ trigger: 'watch', scope: { refs: refs(...names.slice(0, 5)) } });
  t.equal(w.gateway.count('get', 'api'), 5, 'five, above getThreshold (2) but within 50 / 10: a GET each');
  t.equal(w.gateway.count('list', 'api'), 0);
  for (const n of names.slice(0, 5)) t.match(reported(five, n), { result: 'unchanged' });
  w.resetCounts();
  const six = await w.run({ trigger: 'watch', scope: { refs: refs(...names.slice(0, 6)) } });
  t.equal(w.gateway.count('get', 'api'), 0, 'six, above 50 / 10: no GET');
  t.equal(w.gateway.count('list', 'api'), 1, 'one LIST');
  for (const n of names.slice(0, 6)) t.match(reported(six, n), { result: 'unchanged' });
  t.equal(getLimit(20, undefined), 20, 'nothing listed yet: the threshold');
  t.equal(getLimit(20, 10_000), 1_000, '10,000 listed: a thousand GETs');
});

t.test('the API server: named objects, more than getThreshold in a namespace, are read with one LIST of it; only they are decided', async (t) => {
  const w = new FastWorld({ settings: { getThreshold: 2 } });
  for (const n of ['a', 'b', 'c', 'bystander']) w.apply(apiDefinition(n).inNamespace('team-a').build());
  w.apply(apiDefinition('d').inNamespace('team-b').build());
  w.resetCounts();
  const named: ObjectRef[] = [...['a', 'b', 'c', 'never-made'].map((name) => ({ kind: API_DEFINITION, namespace: 'team-a', name })), { kind: API_DEFINITION, namespace: 'team-b', name: 'd' }];
  const report = await w.run({ trigger: 'watch', scope: { refs: named } });
  t.same(
    w.kube.faults.calls.filter((c) => c.kind === 'ApiDefinition' && (c.op === 'get' || c.op === 'list')).map((c) => `${c.op} ${c.name ?? c.namespace ?? '*'}`),
    ['list team-a', 'get d', 'list team-a', 'get d'],
    'one LIST for the four named in team-a, a GET for the one in team-b (at the threshold); the same again under the locks of the four written',
  );
  for (const [n, ns] of [
    ['a', 'team-a'],
    ['b', 'team-a'],
    ['c', 'team-a'],
    ['d', 'team-b'],
  ] as const)
    t.match(reported(report, n, 'ApiDefinition', ns), { action: 'CREATE', result: 'synced' });
  t.match(reported(report, 'never-made', 'ApiDefinition', 'team-a'), { action: 'NOOP', reason: 'not managed' }, 'the LIST lacks it: gone');
  t.notOk(
    report.objects.some((o) => o.name === 'bystander'),
    'listed but not named: not decided',
  );
  t.notOk(ce(w).loaded('api').has(defaultIdOf('bystander', 'team-a')));
});

t.test('the API server: once this process has listed a namespace, GETs up to a tenth of what it held', async (t) => {
  const w = new FastWorld({ settings: { getThreshold: 2 } });
  const names = Array.from({ length: 50 }, (_, i) => `api-${i}`);
  for (const n of names) w.apply(apiDefinition(n).inNamespace('team-a').build());
  await w.run();
  t.equal(w.listSizes.inNamespace('ApiDefinition', 'team-a'), 50, 'the full run counted team-a');
  const named = (n: number): ObjectRef[] => names.slice(0, n).map((name) => ({ kind: API_DEFINITION, namespace: 'team-a', name }));
  const apiCalls = () => w.kube.faults.calls.filter((c) => c.kind === 'ApiDefinition' && (c.op === 'get' || c.op === 'list')).map((c) => c.op);
  w.resetCounts();
  const five = await w.run({ trigger: 'watch', scope: { refs: named(5) } });
  t.same(apiCalls(), ['get', 'get', 'get', 'get', 'get'], 'five of fifty: a GET each');
  for (const n of names.slice(0, 5)) t.match(reported(five, n, 'ApiDefinition', 'team-a'), { result: 'unchanged' });
  w.resetCounts();
  const before = w.kube.listed.length;
  await w.run({ trigger: 'watch', scope: { refs: named(6) } });
  t.same(apiCalls(), ['list'], 'six of fifty: one LIST');
  t.same(
    w.kube.listed.slice(before).filter((l) => l.kind === 'ApiDefinition'),
    [{ kind: 'ApiDefinition', returned: 6, offered: 47 }],
    'of which only the six named are kept, as it is read; it stopped at api-6, the first name past api-5 in byte order (api-10 … api-49 come before it)',
  );
});

t.test('the API server: a failed LIST of named objects fails them (read failed), never makes them absent', async (t) => {
  const w = new FastWorld({ settings: { getThreshold: 1 } });
  for (const n of ['a', 'b']) w.apply(apiDefinition(n).inNamespace('team-a').build());
  await w.run();
  w.kube.inject({ op: 'list', kind: 'ApiDefinition', match: (c) => c.namespace === 'team-a', error: () => kubeFailure({ unavailable: true }, 'list apidefinitions "team-a"') });
  const report = await w.run({ trigger: 'watch', scope: { refs: ['a', 'b'].map((name) => ({ kind: API_DEFINITION, namespace: 'team-a', name })) } });
  for (const n of ['a', 'b']) t.match(reported(report, n, 'ApiDefinition', 'team-a'), { reason: 'read failed', result: 'failed', code: 'KUBE_UNAVAILABLE' });
  t.equal(ce(w).loaded('api').size, 2, 'nothing removed');
});

t.test('the API server: a full run whose LIST of a kind fails decides none of it; its records are no orphans', async (t) => {
  const w = await synced(['a', 'b'], 10);
  // b goes behind our back (its record stays): only a complete listing could confirm it gone
  w.remove(API_DEFINITION, 'b');
  w.kube.inject({ op: 'list', kind: 'ApiDefinition', error: () => kubeFailure({ unavailable: true }, 'list apidefinitions') });
  const report = await w.run();
  t.same(
    report.objects.filter((o) => o.kind === 'ApiDefinition'),
    [],
    'none looked at',
  );
  t.match(report.errors, [{ stage: 'list apidefinitions', code: 'KUBE_UNAVAILABLE' }]);
  t.equal(w.kube.count('get', 'ApiDefinition'), 0, 'no record read back as an orphan');
  t.equal(ce(w).loaded('api').size, 2, 'nothing removed');
  t.match(reported(await w.run(), 'b'), { action: 'DELETE', result: 'deleted' }, 'the next complete listing confirms it gone');
});

t.test('the gateway: a run over namespaces reads with one LIST, however few objects', async (t) => {
  const w = await synced(['a'], 20);
  const report = await w.run({ trigger: 'watch', scope: { namespaces: ['default'] } });
  t.equal(w.gateway.count('list', 'api'), 1);
  t.equal(w.gateway.count('get', 'api'), 0);
  t.match(reported(report, 'a'), { result: 'unchanged' });
});

t.test('the gateway: a failed LIST fails each object it covered and is a run error; nothing is written', async (t) => {
  const w = new FastWorld();
  w.apply(apiDefinition('a').build());
  w.apply(securityPolicy('p').granting('a').build());
  await w.run();
  w.resetCounts();
  w.gateway.inject({ op: 'list', kind: 'api', error: () => new GatewayUnavailableError('gateway default: GET /tyk/apis: ECONNRESET') });
  w.gateway.inject({ op: 'list', kind: 'policy', error: () => new GatewayUnavailableError('gateway default: GET /tyk/policies: ECONNRESET') });
  const report = await w.run();
  t.same(
    report.errors.map((e) => e.stage),
    ['list APIs on gateway default', 'list policies on gateway default'],
  );
  t.match(reported(report, 'a'), { action: 'NOOP', reason: 'read failed', result: 'failed', code: 'GATEWAY_UNAVAILABLE' });
  t.match(reported(report, 'p', 'SecurityPolicy'), { action: 'NOOP', reason: 'read failed', result: 'failed', code: 'GATEWAY_UNAVAILABLE' });
  t.equal(w.gateway.writes(), 0, 'nothing rewritten as if missing');
  t.match(await w.record(API_DEFINITION, 'a'), { result: 'synced' });
  t.match(await w.record(SECURITY_POLICY, 'p'), { result: 'synced' });
});

t.test('the gateway: a failed GET fails that object only', async (t) => {
  const w = await synced(['a', 'b'], 20);
  w.gateway.inject({ op: 'get', kind: 'api', match: (c) => c.id === defaultIdOf('a'), error: () => new GatewayUnavailableError('gateway default: GET /tyk/apis/a: ECONNRESET') });
  const report = await w.run({ trigger: 'watch', scope: { refs: refs('a', 'b') } });
  t.match(reported(report, 'a'), { reason: 'read failed', result: 'failed', code: 'GATEWAY_UNAVAILABLE', error: /ECONNRESET/ });
  t.match(reported(report, 'b'), { reason: 'unchanged', result: 'unchanged' });
  t.same(report.errors, [], 'not a run error');
  t.equal(w.gateway.writes(), 0);
});

t.test('the gateway: an object a LIST lacks is missing there and written again', async (t) => {
  const w = await synced(['a', 'b'], 20);
  ce(w).restart({ keepFiles: false });
  const report = await w.run();
  t.equal(w.gateway.count('list', 'api'), 1);
  for (const n of ['a', 'b']) t.match(reported(report, n), { action: 'CREATE', reason: 'missing on gateway', result: 'synced' });
});

t.test('under the lock: per namespace, up to getThreshold objects are re-read with a GET each, more with a LIST of the namespace', async (t) => {
  t.test('at the threshold: GETs', async (t) => {
    const w = new FastWorld({ settings: { getThreshold: 2 } });
    w.apply(apiDefinition('a').build());
    w.apply(apiDefinition('b').build());
    const report = await w.run();
    t.same(
      w.kube.faults.calls.filter((c) => c.kind === 'ApiDefinition' && (c.op === 'get' || c.op === 'list')).map((c) => `${c.op} ${c.name ?? c.namespace ?? '*'}`),
      ['list *', 'get a', 'get b'],
    );
    for (const n of ['a', 'b']) t.match(reported(report, n), { action: 'CREATE', result: 'synced' });
  });
  t.test('above it in a namespace: a LIST of that namespace; the others by GETs', async (t) => {
    const w = new FastWorld({ settings: { getThreshold: 2 } });
    const objects = [
      ['a', 'team-a'],
      ['b', 'team-a'],
      ['c', 'team-a'],
      ['d', 'team-b'],
      ['e', 'team-b'],
    ] as const;
    for (const [n, ns] of objects) w.apply(apiDefinition(n).inNamespace(ns).build());
    const report = await w.run();
    t.same(
      w.kube.faults.calls.filter((c) => c.kind === 'ApiDefinition' && (c.op === 'get' || c.op === 'list')).map((c) => `${c.op} ${c.name ?? c.namespace ?? '*'}`),
      ['list *', 'list team-a', 'get d', 'get e'],
      'five objects, but three in team-a (above 2) and two in team-b (at 2)',
    );
    for (const [n, ns] of objects) t.match(reported(report, n, 'ApiDefinition', ns), { action: 'CREATE', result: 'synced' });
    t.equal(ce(w).loaded('api').size, 5);
  });
  t.end();
});

t.test('under the lock: an object the LIST lacks is gone; a failed LIST fails its namespace only', async (t) => {
  const w = new FastWorld({ settings: { getThreshold: 1 } });
  for (const [n, ns] of [
    ['a', 'team-a'],
    ['gone', 'team-a'],
    ['c', 'team-b'],
    ['d', 'team-b'],
  ] as const)
    w.apply(apiDefinition(n).inNamespace(ns).build());
  // the re-read LISTs (after the first, over all namespaces): team-a loses "gone" meanwhile, team-b cannot be listed
  w.kube.inject({ op: 'list', kind: 'ApiDefinition', match: (c) => c.namespace === 'team-a', hook: () => void w.remove(API_DEFINITION, 'gone', 'team-a') });
  w.kube.inject({ op: 'list', kind: 'ApiDefinition', match: (c) => c.namespace === 'team-b', error: () => kubeFailure({ unavailable: true }, 'list apidefinitions "team-b"') });
  const report = await w.run();
  t.match(reported(report, 'a', 'ApiDefinition', 'team-a'), { action: 'CREATE', result: 'synced' });
  t.match(reported(report, 'gone', 'ApiDefinition', 'team-a'), { action: 'NOOP', reason: 'not managed', result: 'skipped' });
  for (const n of ['c', 'd']) t.match(reported(report, n, 'ApiDefinition', 'team-b'), { reason: 'read failed', result: 'failed', code: 'KUBE_UNAVAILABLE' });
  t.same([...ce(w).loaded('api').keys()], [defaultIdOf('a', 'team-a')], 'only a written');
  t.equal(await w.record(API_DEFINITION, 'gone', 'team-a'), null);
});
