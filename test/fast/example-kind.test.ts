/**
 * A kind is a folder and a registry line: the README's worked example (test/fixtures/kinds/
 * example.ts), a kind the engine has never heard of, run alone through the whole pipeline on
 * the in-memory cluster and gateway. Created, recorded, finalized, its status set; drift on the
 * gateway undone; a spec change sent; a deletion removes it from the gateway and lets the
 * resource go; a run with nothing changed writes nothing.
 */
import { readFileSync } from 'node:fs';
import t from 'tap';
import type { KubeObject } from '../../lib/kube/types.js';
import { EXAMPLE, EXAMPLE_REGISTRY } from '../fixtures/kinds/example.js';
import { MemoryTykGateway } from '../memory/gateway.js';
import { FastWorld, reported } from './world.js';

const SPEC = { name: 'gold', rate: 100, per: 60, quota_max: -1, access_rights: {}, active: true };

function example(name: string, spec: Record<string, unknown> = SPEC): KubeObject {
  return { apiVersion: 'example.io/v1', kind: 'Example', metadata: { name, namespace: 'default', generation: 1 }, spec };
}

t.test('an Example is created, kept in line, changed and deleted like any kind', async (t) => {
  const w = new FastWorld({ kinds: EXAMPLE_REGISTRY });
  const gateway = w.gateway;
  if (!(gateway instanceof MemoryTykGateway)) throw new Error('a Tyk Gateway world');
  w.apply(example('gold'));

  const created = await w.run();
  t.match(reported(created, 'gold', 'Example'), { action: 'CREATE', result: 'synced', id: 'gold' });
  t.match(gateway.loaded('policy').get('gold'), { id: 'gold', name: 'gold', rate: 100 }, 'on the gateway, its spec as the body');
  t.ok(w.get(EXAMPLE, 'gold')?.metadata.finalizers?.includes(EXAMPLE.finalizer), 'its finalizer');
  t.match(w.get(EXAMPLE, 'gold')?.status, { id: 'gold', latestTransaction: { status: 'Successful' } }, 'its status');
  t.match(await w.record(EXAMPLE, 'gold'), { key: 'Example/default/gold', result: 'synced', id: 'gold' }, 'its record');

  const quiet = await w.run();
  t.match(reported(quiet, 'gold', 'Example'), { action: 'NOOP', result: 'unchanged' });
  t.same(quiet.gateway, { writes: 0, reloads: 0 }, 'nothing changed: nothing written');

  gateway.tamper('policy', 'gold', (p) => ({ ...p, rate: 1 }));
  const undone = await w.run();
  t.match(reported(undone, 'gold', 'Example'), { action: 'UPDATE', reason: 'drift', result: 'synced' });
  t.equal(gateway.loaded('policy').get('gold')?.rate, 100, 'drift on the gateway undone');

  w.updateSpec(EXAMPLE, 'gold', (spec) => ({ ...spec, rate: 200 }));
  const changed = await w.run();
  t.match(reported(changed, 'gold', 'Example'), { action: 'UPDATE', reason: 'spec changed', result: 'synced' });
  t.equal(gateway.loaded('policy').get('gold')?.rate, 200);

  w.delete(EXAMPLE, 'gold');
  const deleted = await w.run();
  t.match(reported(deleted, 'gold', 'Example'), { action: 'DELETE', result: 'deleted' });
  t.equal(gateway.loaded('policy').get('gold'), undefined, 'gone from the gateway');
  t.equal(w.get(EXAMPLE, 'gold'), undefined, 'the finalizer let the resource go');
  t.equal(await w.record(EXAMPLE, 'gold'), null, 'and its record');
});

t.test("the registry's run takes only its kinds: an ApiDefinition in the cluster is not looked at", async (t) => {
  const w = new FastWorld({ kinds: EXAMPLE_REGISTRY });
  w.apply({ apiVersion: 'tyk.tyk.io/v1alpha1', kind: 'ApiDefinition', metadata: { name: 'httpbin', namespace: 'default' }, spec: { name: 'httpbin' } });
  w.apply(example('gold'));
  const report = await w.run();
  t.same(
    report.objects.map((o) => o.kind),
    ['Example'],
  );
});

t.test('the kind the READMEs show is the one this file runs', async (t) => {
  const squash = (s: string) => s.replace(/\s+/g, ' ');
  const fixture = squash(readFileSync(new URL('../fixtures/kinds/example.ts', import.meta.url), 'utf8'));
  const build = 'build: (o) => ({ id: o.ref.name, body: { id: o.ref.name, ...o.obj.spec } })';
  t.ok(fixture.includes(build), 'the fixture builds its body so');
  for (const readme of ['../../README.md', '../../lib/kinds/README.md']) {
    const text = squash(readFileSync(new URL(readme, import.meta.url), 'utf8'));
    t.ok(text.includes(build) && text.includes("gatewayKind: 'policy'") && text.includes('kindEntry(EXAMPLE)'), `${readme}: its example is this kind, added by its registry line`);
  }
});
