/**
 * What a run reads from the API server for the scope it was given (lib/engine/load.ts,
 * loadDesired and loadOrphans): whole namespaces are listed, single objects read once each,
 * unwatched namespaces are not read at all, and a record whose resource is missing is
 * confirmed gone before it is deleted. Each test pins the calls the API server gets and what
 * the run reports.
 */
import t from 'tap';
import { API_DEFINITION } from '../../lib/kinds/api-definition/kind.js';
import { SECURITY_POLICY } from '../../lib/kinds/security-policy/kind.js';
import type { Store } from '../../lib/store/types.js';
import { apiDefinition, defaultIdOf, recordFor, securityPolicy } from '../fixtures/builders.js';
import { MemoryTykGateway } from '../memory/gateway.js';
import { kubeFailure } from '../memory/kube.js';
import { FastWorld, reported } from './world.js';

function ce(w: FastWorld): MemoryTykGateway {
  if (!(w.gateway instanceof MemoryTykGateway)) throw new Error('not a Tyk Gateway');
  return w.gateway;
}

function kubeCalls(w: FastWorld, op: 'get' | 'list', kind = 'ApiDefinition'): { namespace?: string; name?: string }[] {
  return w.kube.faults.calls
    .filter((c) => c.op === op && c.kind === kind)
    .map((c) => ({ ...(c.namespace !== undefined ? { namespace: c.namespace } : {}), ...(c.name !== undefined ? { name: c.name } : {}) }));
}

t.test('a namespace scope lists its namespaces and reads the named objects outside them once each', async (t) => {
  const w = new FastWorld();
  w.apply(apiDefinition('a').inNamespace('team-a').build());
  w.apply(apiDefinition('b').inNamespace('team-b').build());
  w.apply(apiDefinition('c').inNamespace('team-c').build());
  w.apply(securityPolicy('p').inNamespace('team-b').build());
  const B = { kind: API_DEFINITION, namespace: 'team-b', name: 'b' };
  const report = await w.run({
    trigger: 'watch',
    dryRun: true, // the load stage's reads only (a write would re-read under its lock)
    scope: {
      namespaces: ['team-a', 'team-a'],
      // a is in a listed namespace (not read again), b is named twice (read once), p is another kind
      refs: [{ kind: API_DEFINITION, namespace: 'team-a', name: 'a' }, B, { ...B }, { kind: SECURITY_POLICY, namespace: 'team-b', name: 'p' }],
    },
  });
  t.same(kubeCalls(w, 'list'), [{ namespace: 'team-a' }], 'team-a listed once');
  t.same(kubeCalls(w, 'get'), [{ namespace: 'team-b', name: 'b' }], 'b read once; a not read again');
  t.same(
    report.objects.filter((o) => o.kind === 'ApiDefinition').map((o) => `${o.namespace}/${o.name}:${o.result}`),
    ['team-a/a:planned', 'team-b/b:planned'],
    'c, out of scope, is not looked at',
  );
  t.match(reported(report, 'p', 'SecurityPolicy', 'team-b'), { action: 'CREATE', result: 'planned' });
});

t.test('under WATCH_NAMESPACE, an unwatched namespace is neither listed nor read', async (t) => {
  const w = new FastWorld({ namespaces: ['team-a'] });
  w.apply(apiDefinition('a').inNamespace('team-a').build());
  w.apply(apiDefinition('x').inNamespace('elsewhere').build());
  const listed = await w.run({ trigger: 'watch', scope: { namespaces: ['team-a', 'elsewhere'] } });
  t.same(kubeCalls(w, 'list'), [{ namespace: 'team-a' }]);
  t.same(
    listed.objects.map((o) => o.name),
    ['a'],
  );
  w.resetCounts();
  const named = await w.runFor(API_DEFINITION, 'x', 'watch', 'elsewhere');
  t.same(kubeCalls(w, 'get'), [], 'not read');
  t.match(reported(named, 'x', 'ApiDefinition', 'elsewhere'), { action: 'NOOP', reason: 'not watched', result: 'skipped' });
  t.equal(w.gateway.writes(), 0);
  t.equal(await w.record(API_DEFINITION, 'x', 'elsewhere'), null);
});

t.test('a failed listing of all namespaces is a run error naming no namespace', async (t) => {
  const w = new FastWorld();
  w.apply(apiDefinition('a').build());
  w.kube.inject({ op: 'list', kind: 'ApiDefinition', error: () => kubeFailure({ status: 500 }, 'list apidefinitions "(all namespaces)"') });
  const report = await w.run();
  t.match(report.errors, [{ stage: 'list apidefinitions', code: 'KUBE_API' }]);
  t.equal(report.errors.length, 1);
  t.equal(w.gateway.writes(), 0);
});

t.test('orphans of a namespace scope: only records of the listed namespaces, each confirmed gone by a GET', async (t) => {
  const w = new FastWorld();
  w.apply(apiDefinition('a').inNamespace('team-a').build());
  w.apply(apiDefinition('b').inNamespace('team-b').build());
  w.apply(apiDefinition('a2').inNamespace('team-a').build());
  await w.run();
  w.remove(API_DEFINITION, 'a', 'team-a');
  w.remove(API_DEFINITION, 'b', 'team-b');
  w.resetCounts();
  const report = await w.run({ trigger: 'watch', scope: { namespaces: ['team-a'] } });
  t.match(reported(report, 'a', 'ApiDefinition', 'team-a'), { action: 'DELETE', reason: 'deleted in cluster', result: 'deleted' });
  t.same(
    kubeCalls(w, 'get'),
    [
      { namespace: 'team-a', name: 'a' },
      { namespace: 'team-a', name: 'a' },
    ],
    'the orphan confirmed gone, then re-read under its lock; a2, listed, not read again',
  );
  t.notOk(
    report.objects.some((o) => o.name === 'b'),
    'team-b is out of scope',
  );
  t.same([...ce(w).loaded('api').keys()].sort(), [defaultIdOf('a2', 'team-a'), defaultIdOf('b', 'team-b')].sort());
  t.ok(await w.record(API_DEFINITION, 'b', 'team-b'), "b's record kept");
});

t.test('a record in a namespace no longer watched is left alone by a run over everything', async (t) => {
  const w = new FastWorld({ namespaces: ['team-a'] });
  w.apply(apiDefinition('a').inNamespace('team-a').build());
  await w.run();
  w.resetCounts();
  await w.putRecord(recordFor('ApiDefinition', 'old', 'gone-ns').onGateway('default').build());
  await w.putRecord({ ...recordFor('ApiDefinition', 'x').build(), key: 'ApiDefinition/malformed' });
  const report = await w.run();
  t.same(
    report.objects.map((o) => o.name),
    ['a'],
  );
  t.same(kubeCalls(w, 'get'), [], 'nothing read');
  t.equal(w.gateway.count('remove'), 0);
  t.ok(await w.record(API_DEFINITION, 'old', 'gone-ns'), 'record kept');
});

t.test('a record whose resource was created after the listing is kept, not deleted (a run over a namespace: its prefixes asked one by one)', async (t) => {
  let w: FastWorld | undefined;
  const late = apiDefinition('late').build();
  const slowStore = (s: Store): Store =>
    new Proxy(s, {
      get(target, prop, receiver) {
        if (prop === 'listRecordKeys')
          return async (prefix: string) => {
            const keys = await target.listRecordKeys(prefix);
            if (prefix.startsWith('ApiDefinition/')) w?.apply(late); // created between the listing and the orphan check
            return keys;
          };
        const v = Reflect.get(target, prop, receiver);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
  w = new FastWorld({ store: slowStore });
  await w.putRecord(recordFor('ApiDefinition', 'late').onGateway('default').build());
  const report = await w.run({ scope: { namespaces: ['default'] } });
  t.same(
    kubeCalls(w, 'get'),
    [
      { namespace: 'default', name: 'late' },
      { namespace: 'default', name: 'late' },
    ],
    'confirmed, then re-read under its lock',
  );
  t.match(reported(report, 'late'), { result: 'synced' });
  t.not(reported(report, 'late').action, 'DELETE');
  t.equal(w.gateway.count('remove'), 0);
  t.ok(ce(w).loaded('api').has(defaultIdOf('late')));
});

t.test('a run over everything asks the store for its record keys once, for every kind; each kind finds its orphans there', async (t) => {
  const asked: string[] = [];
  const w = new FastWorld({
    store: (s: Store): Store =>
      new Proxy(s, {
        get(target, prop, receiver) {
          if (prop === 'listRecordKeys')
            return (prefix: string) => {
              asked.push(prefix);
              return target.listRecordKeys(prefix);
            };
          const v = Reflect.get(target, prop, receiver);
          return typeof v === 'function' ? v.bind(target) : v;
        },
      }),
  });
  w.apply(apiDefinition('kept').build());
  await w.run();
  await w.putRecord(recordFor('ApiDefinition', 'gone-api').onGateway('default').build());
  await w.putRecord(recordFor('SecurityPolicy', 'gone-policy').onGateway('default').build());
  asked.length = 0;
  const report = await w.run();
  t.same(asked, [''], 'one listing of every record key');
  t.ok(
    kubeCalls(w, 'get').some((c) => c.name === 'gone-api'),
    'the ApiDefinition orphan confirmed with a GET',
  );
  t.ok(
    kubeCalls(w, 'get', 'SecurityPolicy').some((c) => c.name === 'gone-policy'),
    'the SecurityPolicy orphan too',
  );
  t.match(reported(report, 'gone-api'), { action: 'DELETE', result: 'deleted' });
  t.match(reported(report, 'gone-policy', 'SecurityPolicy'), { action: 'DELETE', result: 'deleted' });
  t.notOk(await w.record(API_DEFINITION, 'gone-api'), 'its record gone');
  t.same(
    report.objects
      .filter((o) => o.action === 'DELETE')
      .map((o) => `${o.kind}/${o.name}`)
      .sort(),
    ['ApiDefinition/gone-api', 'SecurityPolicy/gone-policy'],
    "each kind took only its own records' keys",
  );
  asked.length = 0;
  await w.run({ scope: { namespaces: ['default'] } });
  t.ok(asked.length > 1 && asked.every((p) => p !== '' && p.endsWith('/default/')), `a scoped run asks for its own prefixes: ${asked.join(', ')}`);
});

t.test('an orphan whose GET fails is reported as a read failure and kept', async (t) => {
  const w = new FastWorld();
  w.apply(apiDefinition('a').build());
  await w.run();
  w.remove(API_DEFINITION, 'a');
  w.kube.inject({ op: 'get', kind: 'ApiDefinition', error: () => kubeFailure({ unavailable: true }, 'get apidefinitions "a"') });
  w.resetCounts();
  const report = await w.run();
  t.match(reported(report, 'a'), { action: 'NOOP', reason: 'read failed', result: 'failed', code: 'KUBE_UNAVAILABLE' });
  t.equal(w.gateway.count('remove'), 0);
  t.ok(await w.record(API_DEFINITION, 'a'));
});
