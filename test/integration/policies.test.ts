/**
 * SecurityPolicies with their ApiDefinitions, through HTTP with real Redis, our clients and the
 * fakes: ordering, waiting, links, id changes, held deletions, Events.
 */
import t from 'tap';
import type { RunReport } from '../../lib/engine/run.js';
import type { KubeObject } from '../../lib/kube/types.js';
import { apiDefinition, httpbinSpec } from '../fixtures/builders.js';
import { startWorld, type World } from '../harness/world.js';

const idOf = (name: string, ns = 'default') => Buffer.from(`${ns}/${name}`).toString('base64url');
const HTTPBIN = idOf('httpbin');

async function world(t: { teardown(fn: () => unknown): void }, options?: Parameters<typeof startWorld>[0]): Promise<World> {
  const w = await startWorld(options);
  t.teardown(() => w.close());
  return w;
}

function obj(report: RunReport, kind: string, name: string) {
  const o = report.objects.find((x) => x.kind === kind && x.name === name);
  if (!o) throw new Error(`no report for ${kind} ${name}: ${JSON.stringify(report.objects)}`);
  return o;
}

/** An API that needs a key (auth token), as a policy protects it. */
function protectedApi(name: string): KubeObject {
  return apiDefinition(name)
    .withSpec(httpbinSpec({ name: `${name} protected`, use_keyless: false, use_standard_auth: true, auth_configs: { authToken: { auth_header_name: 'Authorization' } } }))
    .build();
}

function policy(name: string, apis: { name: string; namespace?: string }[], extra: Record<string, unknown> = {}): KubeObject {
  return {
    apiVersion: 'tyk.tyk.io/v1alpha1',
    kind: 'SecurityPolicy',
    metadata: { name, namespace: 'default' },
    spec: { name: `${name} policy`, state: 'active', active: true, access_rights_array: apis.map((a) => ({ namespace: 'default', ...a, versions: ['Default'] })), ...extra },
  };
}

function gatewayPolicy(w: World, id: string): Record<string, unknown> | undefined {
  return w.tyk.loaded('policy').get(id) as Record<string, unknown> | undefined;
}

t.test('a protected API and its policy, created API first, sync in one run', async (t) => {
  const w = await world(t);
  await w.create(protectedApi('httpbin'));
  await w.create(policy('httpbin', [{ name: 'httpbin' }], { rate: 100, per: 60, quota_max: 1000 }));
  const report = await w.tick();
  t.match(obj(report, 'ApiDefinition', 'httpbin'), { result: 'synced' });
  t.match(obj(report, 'SecurityPolicy', 'httpbin'), { action: 'CREATE', result: 'synced', id: HTTPBIN });
  const onGateway = gatewayPolicy(w, HTTPBIN);
  t.match(onGateway, {
    id: HTTPBIN,
    name: 'httpbin policy',
    active: true,
    rate: 100,
    per: 60,
    quota_max: 1000,
    access_rights: { [HTTPBIN]: { api_id: HTTPBIN, api_name: 'httpbin protected', versions: ['Default'] } },
  });
  t.notOk('access_rights_array' in (w.tyk.files('policy').get(HTTPBIN) ?? {}), 'operator-only fields are not sent');
  t.match((await w.get('httpbin', 'default', 'SecurityPolicy'))?.status, { pol_id: HTTPBIN, linked_apis: [{ name: 'httpbin', namespace: 'default' }] });
  t.match((await w.get('httpbin'))?.status, { api_id: HTTPBIN, linked_by_policies: [{ name: 'httpbin', namespace: 'default' }] });
  t.same((await w.get('httpbin', 'default', 'SecurityPolicy'))?.metadata.finalizers, ['finalizers.tyk.io/securitypolicy']);
  t.equal(report.gateway.reloads, 2, 'one reload for the APIs, one for the policies that need them visible first');

  w.resetCounts();
  for (let i = 0; i < 5; i++) await w.tick();
  t.equal(w.tyk.writes(), 0, 'then silent: no write');
  t.equal(w.statusPatches(), 0, 'and no status patch');
});

t.test('policy first: it waits (status and Event say for what), then follows its API in the same run', async (t) => {
  const w = await world(t);
  await w.create(policy('httpbin', [{ name: 'httpbin' }]));
  const waiting = await w.tick();
  t.match(obj(waiting, 'SecurityPolicy', 'httpbin'), { action: 'WAIT', result: 'waiting', error: /ApiDefinition default\/httpbin does not exist/ });
  t.equal(w.tyk.writes(), 0);
  const events = await w.kube.listObjects('events', 'default');
  t.match(events, [{ type: 'Warning', reason: 'Waiting', involvedObject: { kind: 'SecurityPolicy', name: 'httpbin' }, message: /does not exist/ }]);
  w.resetCounts();
  const again = await w.tick();
  t.match(obj(again, 'SecurityPolicy', 'httpbin'), { result: 'waiting' });
  t.equal(w.statusPatches() + w.kube.count('POST', /\/events$/), 0, 'waiting quietly: no retry storm, no repeated patch or Event');

  await w.create(protectedApi('httpbin'));
  const synced = await w.announce('ADDED', 'httpbin');
  t.match(obj(synced, 'ApiDefinition', 'httpbin'), { result: 'synced' });
  t.match(obj(synced, 'SecurityPolicy', 'httpbin'), { action: 'CREATE', reason: 'dependency ready', result: 'synced' }, 'the waiting policy followed its API');
  t.match(gatewayPolicy(w, HTTPBIN), { access_rights: { [HTTPBIN]: { api_id: HTTPBIN } } });
  // Events are named per (object, type, reason, message), so list order says nothing of time
  t.match(
    (await w.kube.listObjects('events', 'default')).filter((e) => (e.involvedObject as { kind?: string }).kind === 'SecurityPolicy' && e.type === 'Normal'),
    [{ type: 'Normal', reason: 'Synced' }],
  );
});

t.test('re-pointing an access right is one write; an API id change is followed by its policies', async (t) => {
  const w = await world(t);
  await w.create(apiDefinition('a').build());
  await w.create(apiDefinition('b').build());
  await w.create(policy('p', [{ name: 'a' }]));
  await w.tick();
  t.ok((gatewayPolicy(w, idOf('p'))?.access_rights as Record<string, unknown> | undefined)?.[idOf('a')]);

  w.resetCounts();
  await w.updateSpec('p', (s) => ({ ...s, access_rights_array: [{ name: 'b', namespace: 'default', versions: ['Default'] }] }), 'default', 'SecurityPolicy');
  const repointed = await w.tick();
  t.match(obj(repointed, 'SecurityPolicy', 'p'), { reason: 'spec changed', result: 'synced' });
  t.equal(w.tyk.writes(), 1, 'one write');
  t.same(Object.keys(gatewayPolicy(w, idOf('p'))?.access_rights as object), [idOf('b')]);
  t.same((await w.get('a'))?.status?.linked_by_policies, undefined, 'a no longer linked');
  t.match((await w.get('b'))?.status, { linked_by_policies: [{ name: 'p', namespace: 'default' }] });

  w.resetCounts();
  await w.updateSpec('b', (s) => ({ ...s, api_id: 'b-pinned' }));
  const moved = await w.announce('MODIFIED', 'b');
  t.match(obj(moved, 'ApiDefinition', 'b'), { reason: 'id changed', result: 'synced', id: 'b-pinned' });
  t.match(obj(moved, 'SecurityPolicy', 'p'), { reason: 'spec changed', result: 'synced' });
  t.same(Object.keys(gatewayPolicy(w, idOf('p'))?.access_rights as object), ['b-pinned']);
  t.equal(w.gatewayApi(idOf('b')), undefined, 'the old id is retired');
});

t.test('an API a policy references is not deleted while referenced; deleting the policy lets it go', async (t) => {
  const w = await world(t);
  await w.create(apiDefinition('a').build());
  await w.create(policy('p', [{ name: 'a' }]));
  await w.tick();
  await w.delete('a');
  const held = await w.announce('MODIFIED', 'a');
  t.match(obj(held, 'ApiDefinition', 'a'), { action: 'WAIT', reason: 'referenced by policies', result: 'waiting', error: /still referenced by SecurityPolicy default\/p/ });
  t.ok(w.gatewayApi(idOf('a')), 'still on the gateway');
  t.ok((await w.get('a'))?.metadata.finalizers?.length, 'finalizer kept');
  t.match((await w.get('a'))?.status, { latestTransaction: { status: 'Pending', error: /still referenced/ } });

  await w.delete('p', 'default', 'SecurityPolicy');
  const gone = await w.tick();
  t.match(obj(gone, 'SecurityPolicy', 'p'), { action: 'DELETE', result: 'deleted' });
  t.match(obj(gone, 'ApiDefinition', 'a'), { action: 'DELETE', result: 'deleted' });
  t.equal(w.gatewayApi(idOf('a')), undefined);
  t.equal(gatewayPolicy(w, idOf('p')), undefined);
  t.equal(await w.get('a'), undefined);
  t.equal(await w.get('p', 'default', 'SecurityPolicy'), undefined);
});

t.test('editing the policy away from a held API lets its deletion complete', async (t) => {
  const w = await world(t);
  await w.create(apiDefinition('a').build());
  await w.create(apiDefinition('b').build());
  await w.create(policy('p', [{ name: 'a' }]));
  await w.tick();
  await w.delete('a');
  t.match(obj(await w.tick(), 'ApiDefinition', 'a'), { result: 'waiting' });
  await w.updateSpec('p', (s) => ({ ...s, access_rights_array: [{ name: 'b', namespace: 'default', versions: ['Default'] }] }), 'default', 'SecurityPolicy');
  const report = await w.tick();
  t.match(obj(report, 'ApiDefinition', 'a'), { result: 'deleted' });
  t.equal(await w.get('a'), undefined);
});

t.test('dry run covers both kinds and writes nothing', async (t) => {
  const w = await world(t);
  await w.create(apiDefinition('a').build());
  await w.create(policy('p', [{ name: 'a' }]));
  w.resetCounts();
  const res = await w.resync({ dryRun: true });
  t.same(
    res.body.objects.map((o) => `${o.kind}/${o.name}:${o.action}:${o.result}`),
    ['ApiDefinition/a:CREATE:planned', 'SecurityPolicy/p:WAIT:waiting'],
  );
  t.equal(w.tyk.writes() + w.kube.count('PATCH') + w.kube.count('POST'), 0);
});
