/**
 * What the load stage makes of a resource before anything is decided (lib/engine/load.ts,
 * computeDesired): whether it is being deleted and carries our finalizer, and
 * the hash an invalid spec is remembered by, so an edit of an invalid spec is seen as one.
 */
import t from 'tap';
import { API_DEFINITION } from '../../lib/kinds/api-definition/kind.js';
import { apiDefinition, defaultIdOf, FINALIZER } from '../fixtures/builders.js';
import { MemoryTykGateway } from '../memory/gateway.js';
import { FastWorld, reported } from './world.js';

t.test('an invalid spec edited into another invalid spec is reported and recorded anew', async (t) => {
  const w = new FastWorld();
  w.apply(apiDefinition('bad').unsupported().build());
  await w.run();
  t.match(await w.record(API_DEFINITION, 'bad'), { result: 'invalid', error: /graph_ref/ });
  // a Secret without a certificate: invalid too, for another reason
  w.put({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'x', namespace: 'default' }, type: 'Opaque', data: { 'ca.crt': 'eA==' } });
  w.updateSpec(API_DEFINITION, 'bad', (s) => ({ ...s, graphql: undefined, certificate_secret_names: ['x'] }));
  w.resetCounts();
  const report = await w.run();
  const rec = await w.record(API_DEFINITION, 'bad');
  t.match(reported(report, 'bad'), { action: 'NOOP', reason: 'invalid spec', result: 'invalid' });
  t.match(rec?.error, /Secret default\/x has no tls\.crt/, 'the record says what is wrong now');
  t.equal(rec?.generation, 2);
  t.equal(w.kube.count('patchStatus'), 1, 'the status says it too');
  t.equal(w.gateway.writes(), 0);
});

t.test('a null deletionTimestamp is no deletion', async (t) => {
  const w = new FastWorld();
  w.put({ ...apiDefinition('a').withFinalizer().build(), metadata: { ...apiDefinition('a').withFinalizer().build().metadata, deletionTimestamp: null } } as never);
  const report = await w.run();
  t.match(reported(report, 'a'), { action: 'CREATE', result: 'synced' });
  t.ok(w.gateway instanceof MemoryTykGateway && w.gateway.loaded('api').has(defaultIdOf('a')));
  t.same(w.api('a')?.metadata.finalizers, [FINALIZER]);
});

t.test("being deleted without our finalizer: not ours to delete; with another's finalizer only, the same", async (t) => {
  const w = new FastWorld();
  w.put(apiDefinition('a').withFinalizer('example.com/other').deleting().build());
  const report = await w.run();
  t.match(reported(report, 'a'), { action: 'NOOP', reason: 'not managed', result: 'skipped' });
  t.equal(w.gateway.writes(), 0);
  t.same(w.api('a')?.metadata.finalizers, ['example.com/other']);
});

t.test('being deleted with our finalizer among others: deleted from the gateway, only ours removed', async (t) => {
  const w = new FastWorld();
  w.apply(apiDefinition('a').build());
  await w.run();
  w.put({ ...apiDefinition('a').withFinalizer('example.com/other').withFinalizer().deleting().build() });
  const report = await w.run();
  t.match(reported(report, 'a'), { action: 'DELETE', result: 'deleted' });
  t.same(w.api('a')?.metadata.finalizers, ['example.com/other']);
});
