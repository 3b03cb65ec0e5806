/**
 * A dry run says what each planned write would change on the gateway, field by field: an
 * edited field of a synced API (spec changed, or drift on the gateway) is listed alone with
 * its before and after; a CREATE lists the fields of the body it would send, with nothing
 * before; a steady state lists nothing; a DELETE an empty list; a secret is masked. The
 * report's gateway calls are what the writes would cost (a CE gateway: one reload; a
 * Dashboard: none), and nothing is written.
 */
import t from 'tap';
import type { JsonObject } from '../../lib/gateway/types.js';
import { API_DEFINITION } from '../../lib/kinds/api-definition/kind.js';
import { apiDefinition, defaultIdOf } from '../fixtures/builders.js';
import { MemoryTykGateway } from '../memory/gateway.js';
import { FastWorld, reported } from './world.js';

function ce(w: FastWorld): MemoryTykGateway {
  if (!(w.gateway instanceof MemoryTykGateway)) throw new Error('a CE world');
  return w.gateway;
}

async function synced(names: string[], mode: 'ce' | 'pro' = 'ce'): Promise<FastWorld> {
  const w = new FastWorld({ mode });
  for (const n of names) w.apply(apiDefinition(n).build());
  const first = await w.run();
  for (const n of names) if (reported(first, n).result !== 'synced') throw new Error(`${n} did not sync`);
  w.resetCounts();
  return w;
}

t.test('a field changed in the spec of a synced object: exactly that field, before and after', async (t) => {
  const w = await synced(['a', 'b']);
  w.updateSpec(API_DEFINITION, 'a', (spec) => ({ ...spec, proxy: { ...(spec.proxy as JsonObject), target_url: 'http://example.com' } }));
  const dry = await w.run({ trigger: 'resync', dryRun: true });
  t.match(reported(dry, 'a'), { action: 'UPDATE', reason: 'spec changed', result: 'planned' });
  t.same(reported(dry, 'a').changes, [{ path: 'proxy.target_url', before: 'http://httpbin.org', after: 'http://example.com' }]);
  t.match(reported(dry, 'b'), { action: 'NOOP', reason: 'unchanged', result: 'planned' });
  t.notOk('changes' in reported(dry, 'b'), 'an object with nothing to write lists no changes');
  t.same(dry.gateway, { writes: 1, reloads: 1 }, 'the write it would make, and the CE gateway’s one reload');
  t.equal(w.gateway.writes(), 0, 'nothing written');
  t.match(ce(w).loaded('api').get(defaultIdOf('a')), { proxy: { target_url: 'http://httpbin.org' } });
});

t.test('drift on the gateway: the field the gateway changed, its value there before ours after', async (t) => {
  const w = await synced(['a']);
  ce(w).tamper('api', defaultIdOf('a'), (o) => {
    (o.proxy as JsonObject).listen_path = '/elsewhere';
    o.custom_field_of_the_gateway = 'not ours';
  });
  const dry = await w.run({ dryRun: true });
  t.match(reported(dry, 'a'), { action: 'UPDATE', reason: 'drifted on gateway', result: 'planned' });
  t.same(reported(dry, 'a').changes, [{ path: 'proxy.listen_path', before: '/elsewhere', after: '/a' }], 'a field the gateway has of its own is not compared');
});

t.test('a steady state: no change listed, no write, no reload', async (t) => {
  const w = await synced(['a', 'b']);
  const dry = await w.run({ dryRun: true });
  t.same(
    dry.objects.filter((o) => o.changes !== undefined),
    [],
  );
  t.same(dry.gateway, { writes: 0, reloads: 0 });
});

t.test('a CREATE lists the fields of the body it would send, nothing before', async (t) => {
  const w = await synced([]);
  w.apply(apiDefinition('new').build());
  const dry = await w.run({ dryRun: true });
  t.match(reported(dry, 'new'), { action: 'CREATE', result: 'planned' });
  const changes = reported(dry, 'new').changes ?? [];
  t.ok(
    changes.every((c) => !('before' in c)),
    'nothing before',
  );
  const paths = changes.map((c) => c.path);
  t.same(paths, [...paths].sort(), 'in path order');
  t.match(Object.fromEntries(changes.map((c) => [c.path, c.after])), { name: 'new', 'proxy.listen_path': '/new', 'proxy.target_url': 'http://httpbin.org', use_keyless: true, active: true });
  // the body the run then sends holds every field listed, with the value listed
  await w.run();
  const sent = ce(w).loaded('api').get(defaultIdOf('new')) as JsonObject;
  for (const c of changes) {
    const value = c.path.split('.').reduce<unknown>((o, k) => (o as JsonObject | undefined)?.[k], sent);
    t.same(value, c.after, c.path);
  }
});

t.test('a secret is masked on both sides, and appears nowhere in the report', async (t) => {
  const w = new FastWorld();
  const headers = (token: string) => ({ version_data: { not_versioned: true, versions: { Default: { name: 'Default', global_headers: { Authorization: `Bearer ${token}`, 'X-Plain': 'seen' } } } } });
  w.apply(apiDefinition('a').patchSpec(headers('first-s3cret')).build());
  t.match(reported(await w.run(), 'a'), { result: 'synced' });
  w.updateSpec(API_DEFINITION, 'a', (spec) => ({ ...spec, ...headers('second-s3cret') }));
  const dry = await w.run({ dryRun: true });
  t.same(reported(dry, 'a').changes, [{ path: 'version_data.versions.Default.global_headers.Authorization', before: '***', after: '***' }]);
  t.notMatch(JSON.stringify(dry), /s3cret/);
  w.apply(apiDefinition('b').patchSpec(headers('third-s3cret')).build());
  const created = await w.run({ dryRun: true });
  t.match(Object.fromEntries((reported(created, 'b').changes ?? []).map((c) => [c.path, c.after])), {
    'version_data.versions.Default.global_headers.Authorization': '***',
    'version_data.versions.Default.global_headers.X-Plain': 'seen',
  });
  t.notMatch(JSON.stringify(created), /s3cret/);
});

t.test('a DELETE lists no field: the object goes', async (t) => {
  const w = await synced(['a']);
  w.remove(API_DEFINITION, 'a');
  const dry = await w.run({ dryRun: true });
  t.match(reported(dry, 'a'), { action: 'DELETE', result: 'planned' });
  t.same(reported(dry, 'a').changes, []);
  t.same(dry.gateway, { writes: 1, reloads: 1 });
  t.ok(ce(w).loaded('api').has(defaultIdOf('a')), 'still there');
});

t.test('a Dashboard needs no reload: a dry run says so', async (t) => {
  const w = await synced(['a'], 'pro');
  w.updateSpec(API_DEFINITION, 'a', (spec) => ({ ...spec, proxy: { ...(spec.proxy as JsonObject), target_url: 'http://example.com' } }));
  const dry = await w.run({ dryRun: true });
  t.same(reported(dry, 'a').changes, [{ path: 'proxy.target_url', before: 'http://httpbin.org', after: 'http://example.com' }]);
  t.same(dry.gateway, { writes: 1, reloads: 0 });
});
