/**
 * TykOasApiDefinitions end to end through HTTP, with real Redis, our real clients and the
 * loopback fakes: the document from its ConfigMap, created, edited (the ConfigMap, announced by
 * an audit event that reaches the right resource without a full run), drifted on the gateway,
 * lost by a gateway restart, deleted; one write per change, silence in a steady state; refusals
 * named in the status; policies granting a TykOasApiDefinition; the same in pro mode.
 */
import t from 'tap';
import type { RunReport } from '../../lib/engine/types.js';
import { auditEventList } from '../fixtures/audit.js';
import { configMap, defaultIdOf, oasDocument, secret, securityPolicy, tykOasApi } from '../fixtures/builders.js';
import { certId, PEM } from '../fixtures/pem.js';
import { reported, type World, worldFor } from '../harness/world.js';

const OAS = 'tykoasapidefinitions';

/** An edit behind our back: the OAS document's upstream pointed elsewhere. */
const redirectUpstream = (d: Record<string, unknown>): void => {
  (d['x-tyk-api-gateway'] as { upstream: { url: string } }).upstream.url = 'http://evil.example';
};

/** The report of TykOasApiDefinition `name`. */
const oasReport = (report: RunReport | null | undefined, name: string) => {
  if (!report) throw new Error('no run');
  return reported(report, name, 'TykOasApiDefinition');
};

t.test('a TykOasApiDefinition: created, its ConfigMap edited, drifted, restarted, deleted; one write per change, silent in between', async (t) => {
  const w = await worldFor(t);
  const id = defaultIdOf('petstore');
  await w.create(
    configMap('petstore')
      .withOas(oasDocument('petstore', { listenPath: '/petstore/' }))
      .build(),
  );
  await w.create(tykOasApi('petstore').build());
  const first = await w.tick();
  t.match(oasReport(first, 'petstore'), { kind: 'TykOasApiDefinition', action: 'CREATE', result: 'synced', id });
  t.equal(w.tyk.writes(), 1, 'one write');
  const doc = w.gatewayOas(id);
  t.match(doc, { 'x-tyk-api-gateway': { info: { id, name: 'petstore' }, server: { listenPath: { value: '/petstore/' } } } });
  const obj = await w.get('petstore', 'default', OAS);
  t.match(obj?.status, { id, latestTransaction: { status: 'Successful' }, listenPath: '/petstore/', targetURL: 'http://httpbin.org', enabled: true, name: 'petstore' });
  t.ok(obj?.metadata.finalizers?.includes('finalizers.tyk.io/tykoasapidefinition'), "Tyk Operator's finalizer");
  w.resetCounts();
  for (let i = 0; i < 10; i++) await w.tick();
  t.equal(w.tyk.writes(), 0, 'no write in ten ticks');
  t.equal(w.statusPatches(), 0, 'no status patch in ten ticks');

  // the ConfigMap edited, announced by an audit event: only this resource is run
  await w.kube.put(
    configMap('petstore')
      .withOas(oasDocument('petstore', { listenPath: '/pets/' }))
      .build(),
  );
  const res = await w.audit(auditEventList({ resource: 'configmaps', name: 'petstore' }));
  t.equal(res.statusCode, 200);
  t.strictSame(
    res.body.report?.objects.map((o) => `${o.kind}/${o.name}:${o.action}:${o.result}`),
    ['TykOasApiDefinition/petstore:UPDATE:synced'],
    'the audit event reaches the resource, without a full run',
  );
  t.equal(w.tyk.writes(), 1, 'one write');
  t.match(w.gatewayOas(id), { 'x-tyk-api-gateway': { server: { listenPath: { value: '/pets/' } } } });
  t.match((await w.get('petstore', 'default', OAS))?.status, { listenPath: '/pets/' });

  // edited on the gateway behind our back: the schedule puts it back
  w.resetCounts();
  w.tyk.editLoaded('oas', id, redirectUpstream);
  const healed = await w.tick();
  t.match(oasReport(healed, 'petstore'), { action: 'UPDATE', result: 'synced' });
  t.equal(w.tyk.writes(), 1, 'one write undoes the drift');
  t.match(w.gatewayOas(id), { 'x-tyk-api-gateway': { upstream: { url: 'http://httpbin.org' } } });

  // the gateway restarted without its files: recreated
  w.tyk.restart();
  w.resetCounts();
  const restored = await w.tick();
  t.match(oasReport(restored, 'petstore'), { action: 'CREATE', result: 'synced' });
  t.equal(w.tyk.writes(), 1);
  w.resetCounts();
  await w.tick();
  t.equal(w.tyk.writes(), 0, 'then silent');

  // deleted: the API goes, the finalizer goes
  await w.delete('petstore', 'default', OAS);
  const gone = await w.tick();
  t.match(oasReport(gone, 'petstore'), { action: 'DELETE', result: 'deleted' });
  t.equal(w.gatewayOas(id), undefined, 'gone from the gateway');
  t.equal(await w.get('petstore', 'default', OAS), undefined, 'gone from the cluster');
});

t.test('refused documents: a missing ConfigMap or key, not JSON, no x-tyk-api-gateway; nothing sent, the status names why', async (t) => {
  const w = await worldFor(t);
  await w.create(tykOasApi('nomap').build());
  await w.create(configMap('nokey').withText('other.json', '{}').build());
  await w.create(tykOasApi('nokey').build());
  await w.create(configMap('notjson').withText('oas.json', '{ not json').build());
  await w.create(tykOasApi('notjson').build());
  await w.create(
    configMap('plain')
      .withOas({ openapi: '3.0.3', info: { title: 'x', version: '1' }, paths: {} })
      .build(),
  );
  await w.create(tykOasApi('plain').build());
  const report = await w.tick();
  t.match(oasReport(report, 'nomap'), { result: 'waiting', error: /ConfigMap default\/nomap does not exist/ }, 'a ConfigMap not created yet is waited for');
  t.match(oasReport(report, 'nokey'), { result: 'invalid', error: /ConfigMap default\/nokey has no key oas\.json/ });
  t.match(oasReport(report, 'notjson'), { result: 'invalid', error: /not valid JSON/ });
  t.match(oasReport(report, 'plain'), { result: 'invalid', error: /has no x-tyk-api-gateway/ });
  t.equal(w.tyk.writes(), 0, 'nothing sent');
  t.match((await w.get('nomap', 'default', OAS))?.status, { latestTransaction: { status: 'Pending', error: /ConfigMap default\/nomap does not exist/ } });
  const events = await w.events('nomap', 'default', 'TykOasApiDefinition');
  t.ok(
    events.some((e) => /does not exist/.test(e.message)),
    'kubectl describe shows why',
  );

  // the ConfigMap created, announced: the resource that named it is run
  await w.kube.put(configMap('nomap').withOas(oasDocument('nomap')).build());
  const res = await w.audit(auditEventList({ resource: 'configmaps', name: 'nomap', verb: 'create' }));
  t.match(oasReport(res.body.report, 'nomap'), { action: 'CREATE', result: 'synced' });
});

t.test('a policy granting a TykOasApiDefinition: follows its id, holds its deletion', async (t) => {
  const w = await worldFor(t);
  const id = 'petstore-oas-id';
  await w.create(configMap('petstore').withOas(oasDocument('petstore', { id })).build());
  await w.create(tykOasApi('petstore').build());
  await w.create(
    securityPolicy('pets')
      .patchSpec({ access_rights_array: [{ name: 'petstore', namespace: 'default', kind: 'TykOasApiDefinition', versions: ['Default'] }] })
      .build(),
  );
  const first = await w.tick();
  t.match(oasReport(first, 'petstore'), { id, result: 'synced' });
  t.match(reported(first, 'pets', 'SecurityPolicy'), { result: 'synced' });
  const policy = w.tyk.loaded('policy').get(defaultIdOf('pets'));
  t.match(policy?.access_rights, { [id]: { api_id: id, api_name: 'petstore' } }, 'the policy grants the OAS API by its id');
  t.match((await w.get('petstore', 'default', OAS))?.status, { linkedByPolicies: [{ name: 'pets', namespace: 'default' }] });
  t.match((await w.get('pets', 'default', 'securitypolicies'))?.status, { linked_apis: [{ name: 'petstore', namespace: 'default' }] });

  await w.delete('petstore', 'default', OAS);
  const held = await w.tick();
  t.match(oasReport(held, 'petstore'), { action: 'WAIT', result: 'waiting', error: /still referenced by SecurityPolicy default\/pets/ });
  t.ok(w.gatewayOas(id), 'still on the gateway');
  await w.delete('pets', 'default', 'securitypolicies');
  await w.tick();
  const after = await w.tick();
  t.equal(w.gatewayOas(id), undefined, 'gone once no policy holds it');
  t.notOk(after.objects.some((o) => o.name === 'petstore' && o.result === 'waiting'));
});

t.test('mTLS: the allowlist names TLS Secrets; their certificates are uploaded once and listed by id; a rotation updates the API once', async (t) => {
  const w = await worldFor(t);
  const id = defaultIdOf('secure');
  await w.create(secret('client-a').tls(PEM.client).build());
  await w.create(secret('client-b').tls(PEM.client).build());
  await w.create(configMap('secure').withOas(oasDocument('secure')).build());
  await w.create(tykOasApi('secure').allowingClients('client-a', 'client-b').build());
  const first = await w.tick();
  t.match(oasReport(first, 'secure'), { action: 'CREATE', result: 'synced' });
  t.equal(w.tyk.count('POST', '/tyk/certs'), 1, 'one certificate, one upload, though two Secrets hold it');
  t.match(w.gatewayOas(id), { 'x-tyk-api-gateway': { server: { clientCertificate: { enabled: true, allowlist: [certId(PEM.client)] } } } });
  w.resetCounts();
  await w.tick();
  t.equal(w.tyk.writes() + w.tyk.count('POST', '/tyk/certs'), 0, 'then silent');

  await w.kube.put(secret('client-b').tls(PEM.stranger).build());
  await w.tick();
  t.equal(w.tyk.count('POST', '/tyk/certs'), 1, 'the rotated certificate uploaded');
  t.equal(w.tyk.count('PUT', /^\/tyk\/apis\/oas\//), 1, 'the API updated once');
  t.match(w.gatewayOas(id), { 'x-tyk-api-gateway': { server: { clientCertificate: { allowlist: [certId(PEM.client), certId(PEM.stranger)] } } } });
});

/** A world with TykOasApiDefinition v2 (id pets-v2-id) and a base API versioned over `versions`. */
async function versionedWorld(t: Parameters<typeof worldFor>[0], versions: string[]): Promise<World> {
  const w = await worldFor(t);
  await w.create(
    configMap('v2')
      .withOas(oasDocument('pets-v2', { id: 'pets-v2-id', listenPath: '/pets-v2/' }))
      .build(),
  );
  await w.create(tykOasApi('v2').build());
  await w.create(
    configMap('base')
      .withOas(oasDocument('pets', { listenPath: '/pets/' }))
      .build(),
  );
  await w.create(tykOasApi('base').versioned('v1', versions).build());
  return w;
}

t.test('versioning: a base created with its versions follows them in the same run', async (t) => {
  const w = await versionedWorld(t, ['v2']);
  const together = await w.tick();
  t.match(oasReport(together, 'base'), { action: 'CREATE', result: 'synced' }, 'the base follows its version in the same run');
  t.equal(together.objects.filter((o) => o.name === 'base').length, 1, 'and is reported once');
  t.match(w.gatewayOas(defaultIdOf('base')), { 'x-tyk-api-gateway': { info: { versioning: { versions: [{ name: 'v2', id: 'pets-v2-id' }] } } } });
  w.resetCounts();
  await w.tick();
  t.equal(w.tyk.writes(), 0, 'then silent');
});

t.test('versioning: a base API waits for a missing version, then lists its versions by their ids', async (t) => {
  const w = await versionedWorld(t, ['v2', 'v3']);
  const first = await w.tick();
  t.match(oasReport(first, 'v2'), { action: 'CREATE', result: 'synced' });
  t.match(oasReport(first, 'base'), { result: 'waiting', error: 'waiting for TykOasApiDefinition default/v3 does not exist' }, 'v2, created in the same run, is found; v3 is missing');
  t.equal(w.gatewayOas(defaultIdOf('base')), undefined, 'not sent while a version is missing');
  t.match((await w.get('base', 'default', OAS))?.status, { latestTransaction: { status: 'Pending', error: /default\/v3 does not exist/ } });

  await w.updateSpec('base', (spec) => ({ ...spec, versioning: { ...(spec.versioning as object), versions: [{ name: 'v2', tykOasApiDefinitionRef: { name: 'v2' } }] } }), 'default', OAS);
  const second = await w.tick();
  t.match(oasReport(second, 'base'), { action: 'CREATE', result: 'synced' });
  t.equal(second.objects.filter((o) => o.name === 'base').length, 1, 'reported once');
  t.match(w.gatewayOas(defaultIdOf('base')), {
    'x-tyk-api-gateway': { info: { versioning: { enabled: true, name: 'v1', default: 'v1', location: 'header', key: 'x-api-version', versions: [{ name: 'v2', id: 'pets-v2-id' }] } } },
  });
});

t.test('pro mode, against the Dashboard: created, ConfigMap edited, drifted, deleted; a policy grants it; silent in between', async (t) => {
  const w = await worldFor(t, { mode: 'pro' });
  const dash = w.dashboard as NonNullable<World['dashboard']>;
  const id = defaultIdOf('petstore');
  await w.create(
    configMap('petstore')
      .withOas(oasDocument('petstore', { listenPath: '/petstore/' }))
      .build(),
  );
  await w.create(tykOasApi('petstore').build());
  await w.create(
    securityPolicy('pets')
      .patchSpec({ access_rights_array: [{ name: 'petstore', namespace: 'default', kind: 'TykOasApiDefinition', versions: ['Default'] }] })
      .build(),
  );
  const first = await w.tick();
  t.match(oasReport(first, 'petstore'), { action: 'CREATE', result: 'synced', id });
  t.match(reported(first, 'pets', 'SecurityPolicy'), { result: 'synced' });
  t.equal(dash.writes(), 2, 'one write for the API, one for the policy');
  t.match(dash.oasApis().get(id), { 'x-tyk-api-gateway': { info: { id }, server: { listenPath: { value: '/petstore/' } } } });
  t.ok(
    [...dash.policies().values()].some((p) => (p.access_rights as Record<string, unknown> | undefined)?.[id] !== undefined),
    'the policy grants the OAS API by its id',
  );
  dash.resetCalls();
  for (let i = 0; i < 10; i++) await w.tick();
  t.equal(dash.writes(), 0, 'silent for ten ticks');

  await w.kube.put(
    configMap('petstore')
      .withOas(oasDocument('petstore', { listenPath: '/pets/' }))
      .build(),
  );
  const res = await w.audit(auditEventList({ resource: 'configmaps', name: 'petstore' }));
  t.match(oasReport(res.body.report, 'petstore'), { action: 'UPDATE', result: 'synced' });
  t.equal(dash.writes(), 1, 'one write');
  t.match(dash.oasApis().get(id), { 'x-tyk-api-gateway': { server: { listenPath: { value: '/pets/' } } } });

  dash.resetCalls();
  dash.editOas(id, redirectUpstream);
  const healed = await w.tick();
  t.match(oasReport(healed, 'petstore'), { action: 'UPDATE', result: 'synced' });
  t.equal(dash.writes(), 1, 'the drift undone with one write');

  await w.delete('pets', 'default', 'securitypolicies');
  await w.delete('petstore', 'default', OAS);
  await w.tick();
  await w.tick();
  t.equal(dash.oasApis().get(id), undefined, 'gone from the Dashboard');
  t.equal(await w.get('petstore', 'default', OAS), undefined, 'and from the cluster');
});
