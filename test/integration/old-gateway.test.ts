/**
 * Gateways that lack what an object needs, through HTTP with real Redis, our clients and the
 * fakes: Tyk Gateway 3.1, which has no /tyk/policies (Go's plain-text `404 page not found`), and
 * a gateway whose policies come from a Dashboard. ApiDefinitions keep syncing; each affected
 * SecurityPolicy gets a Failed outcome that says why (report, status, Event), once; nothing is
 * ever deleted because of it; nothing crashes.
 */
import t from 'tap';
import type { KubeObject } from '../../lib/kube/types.js';
import { apiDefinition } from '../fixtures/builders.js';
import { reported, type World, worldFor } from '../harness/world.js';

const idOf = (name: string, ns = 'default') => Buffer.from(`${ns}/${name}`).toString('base64url');
const WHY =
  /has no \/tyk\/policies API: it answered "404 page not found" \(a Tyk Gateway older than its policy API, such as 3\.1: SecurityPolicies need a newer gateway, or the Tyk Dashboard \(TYK_MODE=pro\)\)/;

const world = worldFor;

const obj = reported;

function securityPolicy(name: string, apis: string[], metadata: Partial<KubeObject['metadata']> = {}): KubeObject {
  return {
    apiVersion: 'tyk.tyk.io/v1alpha1',
    kind: 'SecurityPolicy',
    metadata: { name, namespace: 'default', ...metadata },
    spec: { name, state: 'active', active: true, access_rights_array: apis.map((a) => ({ name: a, namespace: 'default', versions: ['Default'] })) },
  };
}

/** The Events about one SecurityPolicy (its CRD prunes our transaction status: Events say what happened). */
function policyEvents(w: World, name: string): Promise<unknown[]> {
  return w.events(name, 'default', 'SecurityPolicy');
}

t.test('Tyk Gateway 3.1: APIs sync; a SecurityPolicy is Failed naming why, once; no policy call writes or deletes', async (t) => {
  const w = await world(t, { tyk: { version: '3.1' } });
  await w.create(apiDefinition('a').build());
  await w.create(apiDefinition('b').build());
  await w.create(securityPolicy('p', ['a']));
  const first = await w.tick();
  t.match(obj(first, 'a'), { action: 'CREATE', result: 'synced' }, 'APIs keep working');
  t.match(obj(first, 'b'), { result: 'synced' });
  t.ok(w.gatewayApi(idOf('a')));
  t.match(obj(first, 'p', 'SecurityPolicy'), { result: 'failed', reason: 'not supported by gateway', code: 'GATEWAY_UNSUPPORTED', error: WHY });
  t.match(first.errors, [{ stage: 'list policies on gateway default', code: 'GATEWAY_UNSUPPORTED', message: WHY }], 'the run says so too');
  t.match(await policyEvents(w, 'p'), [{ type: 'Warning', reason: 'GatewayUnsupported', message: WHY }], 'an Event says why');
  t.match((await w.get('p', 'default', 'SecurityPolicy'))?.status, { linked_apis: [{ name: 'a', namespace: 'default' }] });
  t.equal(w.tyk.count('*', /^\/tyk\/policies/) - w.tyk.count('GET', /^\/tyk\/policies/), 0, 'no policy write was tried');

  w.resetCounts();
  const again = await w.tick();
  t.match(obj(again, 'p', 'SecurityPolicy'), { result: 'failed', code: 'GATEWAY_UNSUPPORTED' });
  t.equal(w.statusPatches() + w.kube.count('POST', /\/events$/), 0, 'said once: no repeated status patch or Event');
  t.equal(w.tyk.writes(), 0);

  const scoped = await w.resync({ kind: 'SecurityPolicy', namespace: 'default', name: 'p' });
  t.match(obj(scoped.body, 'p', 'SecurityPolicy'), { result: 'failed', reason: 'not supported by gateway', error: WHY }, 'a run scoped to the policy says the same');

  await w.updateSpec('a', (s) => ({ ...s, name: 'a2' }));
  w.resetCounts();
  t.match(obj(await w.announce('MODIFIED', 'a'), 'a'), { reason: 'spec changed', result: 'synced' });
  t.equal(w.tyk.writes(), 1, 'an API change is one write');
  await w.delete('b');
  t.match(obj(await w.announce('MODIFIED', 'b'), 'b'), { action: 'DELETE', result: 'deleted' });
  t.equal(await w.get('b'), undefined);
});

t.test('Tyk Gateway 3.1: a SecurityPolicy being deleted with our finalizer is never deleted on doubt; it stays, saying why', async (t) => {
  const w = await world(t, { tyk: { version: '3.1' } });
  await w.create(apiDefinition('a').build());
  await w.create(securityPolicy('p', ['a'], { finalizers: ['finalizers.tyk.io/securitypolicy'] }));
  await w.tick();
  await w.delete('p', 'default', 'SecurityPolicy');
  w.resetCounts();
  const report = await w.resync({ kind: 'SecurityPolicy', namespace: 'default', name: 'p' });
  t.match(obj(report.body, 'p', 'SecurityPolicy'), { action: 'NOOP', result: 'failed', reason: 'not supported by gateway', error: WHY });
  t.equal(w.tyk.count('DELETE'), 0, 'no DELETE');
  t.ok((await w.get('p', 'default', 'SecurityPolicy'))?.metadata.finalizers?.includes('finalizers.tyk.io/securitypolicy'), 'the finalizer stays');
  const tick = await w.tick();
  t.match(obj(tick, 'p', 'SecurityPolicy'), { result: 'failed', code: 'GATEWAY_UNSUPPORTED' });
  t.match(obj(tick, 'a'), { result: 'unchanged' }, 'the API it references is untouched');
  t.equal(w.tyk.count('DELETE'), 0);
});

t.test('a gateway whose policies come from a Dashboard: the policy write is Failed naming why; APIs sync', async (t) => {
  const w = await world(t, { tyk: { policySource: 'service' } });
  await w.create(apiDefinition('a').build());
  await w.create(securityPolicy('p', ['a']));
  const report = await w.tick();
  t.match(obj(report, 'a'), { result: 'synced' });
  const why = /takes its policies from a Dashboard \(policy_source "service"\) and refuses policy writes/;
  t.match(obj(report, 'p', 'SecurityPolicy'), { action: 'CREATE', result: 'failed', code: 'GATEWAY_UNSUPPORTED', error: why });
  t.match(await policyEvents(w, 'p'), [{ type: 'Warning', reason: 'GatewayUnsupported', message: why }]);
  t.equal(w.tyk.files('policy').size, 0);
});

t.test('our own CRDs (the fake serves deploy/crds) keep the transaction: the status says Failed and why', async (t) => {
  const w = await world(t, { tyk: { version: '3.1' } });
  await w.create(apiDefinition('a').build());
  await w.create(securityPolicy('p', ['a']));
  await w.tick();
  t.match((await w.get('p', 'default', 'SecurityPolicy'))?.status, { pol_id: idOf('p'), latestTransaction: { status: 'Failed', error: WHY } });
});
