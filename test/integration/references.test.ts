/**
 * Namespaces as boundaries, through HTTP against the fakes: a reference into another namespace
 * (an OperatorContext's secretRef, a contextRef, a policy's APIs) resolves only through a
 * ReferenceGrant there that names the referring kind and namespace (a Secret by name); an
 * OperatorContext's URL is refused before any connection when it carries userinfo, a query or
 * a fragment, or names a loopback or link-local host that CONTEXT_URL_ALLOW does not name; a
 * Secret's TYK_AUTH goes only to that Secret's URL. Each refusal is the resource's alone: it is
 * Failed with RefNotPermitted or UrlNotPermitted (status, condition, Warning Event), and the
 * well-formed resources beside it sync in the same run. CROSS_NAMESPACE_REFS=allow keeps Tyk
 * Operator's behaviour.
 */
import { createServer as createHttpServer } from 'node:http';
import { createServer, type Server } from 'node:net';
import t, { type Test } from 'tap';
import type { ObjectReport, RunReport } from '../../lib/engine/types.js';
import type { KubeObject } from '../../lib/kube/types.js';
import { DEFAULT_CRD_DIR } from '../fakes/crd-schema.js';
import { REFERENCE_GRANT_CRD } from '../fakes/kube-apiserver.js';
import { startFakeTykGateway } from '../fakes/tyk-gateway.js';
import {
  apiDefinition,
  conditionOf,
  configMap,
  defaultIdOf,
  oasDocument,
  operatorContext,
  POSTS_SDL,
  secret,
  securityPolicy,
  subGraph,
  superGraph,
  tykOasApi,
  USERS_SDL,
} from '../fixtures/builders.js';
import { capturingLogger } from '../harness/log.js';
import { RESYNC_TOKEN, startWorld, type World, type WorldOptions } from '../harness/world.js';

/** ReferenceGrants served; their core group is "" (kube-apiserver accepts it: scripts/kube-apiserver.sh). */
const WITH_GRANTS: WorldOptions['kube'] = { crds: [DEFAULT_CRD_DIR, REFERENCE_GRANT_CRD], emptyStringIsNull: false };

/** A TCP listener standing for a host the tenant runs: it counts the connections it receives. */
async function tenantListener(t: { teardown(fn: () => unknown): void }): Promise<{ url: string; connections: () => number }> {
  let connections = 0;
  const server: Server = createServer((socket) => {
    connections++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const port = (server.address() as { port: number }).port;
  return { url: `http://127.0.0.1:${port}`, connections: () => connections };
}

function grant(name: string, namespace: string, from: { group: string; kind: string; namespace: string }[], to: { group: string; kind: string; name?: string }[]): KubeObject {
  return { apiVersion: 'gateway.networking.k8s.io/v1beta1', kind: 'ReferenceGrant', metadata: { name, namespace }, spec: { from, to } };
}

function entry(report: RunReport, kind: string, name: string, namespace: string): ObjectReport {
  const o = report.objects.find((x) => x.kind === kind && x.name === name && x.namespace === namespace);
  if (!o) throw new Error(`no report for ${kind} ${namespace}/${name}: ${JSON.stringify(report.objects)}`);
  return o;
}

async function resync(w: World): Promise<RunReport> {
  const res = await w.resync({}, RESYNC_TOKEN);
  if (res.statusCode !== 200) throw new Error(`/resync answered ${res.statusCode}: ${JSON.stringify(res.body)}`);
  return res.body;
}

/** Nine well-formed ApiDefinitions on the default gateway, in the tenant's and another namespace. */
async function nineWellFormed(w: World): Promise<string[]> {
  const names: string[] = [];
  for (let i = 0; i < 9; i++) {
    const ns = i % 2 === 0 ? 'team-a' : 'team-b';
    const name = `fine-${i}`;
    await w.create(apiDefinition(name).inNamespace(ns).build());
    names.push(`${ns}/${name}`);
  }
  return names;
}

async function assertRefused(t: Test, w: World, report: RunReport, name: string, namespace: string, reason: 'RefNotPermitted' | 'UrlNotPermitted', kind = 'ApiDefinition'): Promise<string> {
  const o = entry(report, kind, name, namespace);
  t.equal(o.result, 'failed', `${namespace}/${name}: failed`);
  t.equal(o.code, reason === 'RefNotPermitted' ? 'REF_NOT_PERMITTED' : 'URL_NOT_PERMITTED', `${namespace}/${name}: the report's code`);
  const obj = await w.get(name, namespace, kind);
  // Tyk Operator's CRDs (the real tier's second pass) prune conditions, and a SecurityPolicy's
  // latestTransaction: the Event below says it there
  const theirs = process.env.REAL_KUBE_CRDS === 'tyk-operator';
  if (!theirs || kind !== 'SecurityPolicy') t.match(obj?.status, { latestTransaction: { status: 'Failed', error: String } }, `${namespace}/${name}: status Failed`);
  if (!theirs) {
    t.match(conditionOf(obj, 'Synced'), { status: 'False', reason }, `${namespace}/${name}: Synced says ${reason}`);
    t.match(conditionOf(obj, 'Ready'), { status: 'False', reason }, `${namespace}/${name}: Ready says ${reason}`);
  }
  const events = await w.events(name, namespace, kind);
  t.ok(
    events.some((e) => e.type === 'Warning' && e.reason === reason),
    `${namespace}/${name}: a Warning Event ${reason} (${events.map((e) => e.reason).join(', ')})`,
  );
  return o.error ?? '';
}

t.test("a tenant's context naming the reconciler's own Secret, with its own URL: RefNotPermitted, no connection, the secret goes nowhere", async (t) => {
  const w = await startWorld({ kube: WITH_GRANTS });
  t.teardown(() => w.close());
  const listener = await tenantListener(t);
  // the reconciler's own Secret, in its own namespace
  await w.create(secret('gateway-reconciler').inNamespace('gateway-reconciler').tykConnection('ce', w.tyk.url, w.tyk.secret).build());
  await w.create(operatorContext('steal').inNamespace('team-a').fromSecret('gateway-reconciler', 'gateway-reconciler').env({ url: listener.url }).build());
  await w.create(apiDefinition('grab').inNamespace('team-a').inContext('steal').build());
  const fine = await nineWellFormed(w);

  const report = await resync(w);
  const error = await assertRefused(t, w, report, 'grab', 'team-a', 'RefNotPermitted');
  t.match(error, /spec\.secretRef: Secret gateway-reconciler\/gateway-reconciler is in another namespace/, 'the message names the reference');
  t.notMatch(JSON.stringify(report), w.tyk.secret, 'the secret is in no report');
  t.notMatch(JSON.stringify(await w.allEvents()), w.tyk.secret, 'nor in any Event');
  t.equal(listener.connections(), 0, "the tenant's host received no connection");
  for (const key of fine) {
    const [ns, name] = key.split('/') as [string, string];
    t.equal(entry(report, 'ApiDefinition', name, ns).result, 'synced', `${key} synced in the same run`);
    t.ok(w.gatewayApi(defaultIdOf(name, ns)), `${key} is on the gateway`);
  }
  t.notOk(w.gatewayApi(defaultIdOf('grab', 'team-a')), 'the refused API is on no gateway');
});

t.test("a grant naming the Secret does not let spec.env send the Secret's key elsewhere: UrlNotPermitted, no connection", async (t) => {
  const w = await startWorld({ kube: WITH_GRANTS });
  t.teardown(() => w.close());
  const listener = await tenantListener(t);
  const other = await startFakeTykGateway({ secret: 'shared-gateway-secret' });
  t.teardown(() => other.close());
  await w.create(secret('shared').inNamespace('platform').tykConnection('ce', other.url, 'shared-gateway-secret').build());
  await w.create(grant('contexts', 'platform', [{ group: 'tyk.tyk.io', kind: 'OperatorContext', namespace: 'team-a' }], [{ group: '', kind: 'Secret', name: 'shared' }]));
  await w.create(operatorContext('redirect').inNamespace('team-a').fromSecret('shared', 'platform').env({ url: listener.url }).build());
  await w.create(operatorContext('honest').inNamespace('team-a').fromSecret('shared', 'platform').build());
  await w.create(operatorContext('unverified').inNamespace('team-a').fromSecret('shared', 'platform').env({ insecureSkipVerify: true }).build());
  await w.create(apiDefinition('unverified').inNamespace('team-a').inContext('unverified').build());
  await w.create(apiDefinition('redirected').inNamespace('team-a').inContext('redirect').build());
  await w.create(apiDefinition('through-grant').inNamespace('team-a').inContext('honest').build());

  const report = await resync(w);
  const error = await assertRefused(t, w, report, 'redirected', 'team-a', 'UrlNotPermitted');
  t.match(error, /spec\.env\.url may not send the TYK_AUTH of its Secret elsewhere/);
  t.equal(listener.connections(), 0, "the tenant's host received no connection");
  t.match(await assertRefused(t, w, report, 'unverified', 'team-a', 'UrlNotPermitted'), /spec\.env\.insecureSkipVerify may not change how the TYK_AUTH of its Secret is sent/);
  t.equal(entry(report, 'ApiDefinition', 'through-grant', 'team-a').result, 'synced', "the granted Secret's own URL is used");
  t.ok(other.loaded('api').get(defaultIdOf('through-grant', 'team-a')), 'on the gateway the Secret names');
});

t.test('context URLs: a fragment, a query, userinfo, link-local, loopback by address or by name are refused before any connection', async (t) => {
  // CONTEXT_URL_ALLOW unset: the default rules
  const w = await startWorld({ env: { CONTEXT_URL_ALLOW: '' } });
  t.teardown(() => w.close());
  const listener = await tenantListener(t);
  const port = new URL(listener.url).port;
  const urls: Record<string, string> = {
    metadata: 'http://169.254.169.254/latest/meta-data/iam#',
    query: `${listener.url}/?x=1`,
    userinfo: `http://user:pw@127.0.0.1:${port}/`,
    loopback: listener.url,
    byname: `http://localhost:${port}`,
    linklocal6: 'http://[fe80::1]:8080',
  };
  for (const [name, url] of Object.entries(urls)) {
    await w.create(operatorContext(name).inNamespace('team-a').ce(url, 'whatever-key').build());
    await w.create(apiDefinition(`via-${name}`).inNamespace('team-a').inContext(name).build());
  }
  const fine = await nineWellFormed(w);
  const report = await resync(w);
  const expected: Record<string, RegExp> = {
    metadata: /must not have a fragment/,
    query: /must not have a query/,
    userinfo: /must not contain user information/,
    loopback: /loopback, link-local or unspecified/,
    byname: /loopback, link-local or unspecified/,
    linklocal6: /loopback, link-local or unspecified/,
  };
  for (const [name, pattern] of Object.entries(expected)) {
    const o = entry(report, 'ApiDefinition', `via-${name}`, 'team-a');
    t.equal(o.result, 'failed', `${name}: failed`);
    t.match(o.error, pattern, `${name}: ${o.error}`);
    t.notMatch(o.error, /169\.254|127\.0\.0\.1|localhost|fe80/, `${name}: the message does not quote the URL`);
    t.equal(o.code, 'URL_NOT_PERMITTED', `${name}: UrlNotPermitted`);
  }
  await assertRefused(t, w, report, 'via-metadata', 'team-a', 'UrlNotPermitted');
  t.equal(listener.connections(), 0, 'the listener received no connection');
  for (const key of fine) {
    const [ns, name] = key.split('/') as [string, string];
    t.equal(entry(report, 'ApiDefinition', name, ns).result, 'synced', `${key} synced in the same run`);
  }
});

t.test('CONTEXT_URL_ALLOW names a loopback gateway by host:port or CIDR; any other host is then refused', async (t) => {
  const other = await startFakeTykGateway({ secret: 'loopback-gateway-secret' });
  t.teardown(() => other.close());
  const port = new URL(other.url).port;
  const w = await startWorld({ env: { CONTEXT_URL_ALLOW: `127.0.0.1:${port}, 10.0.0.0/8` } });
  t.teardown(() => w.close());
  const listener = await tenantListener(t);
  await w.create(operatorContext('allowed').inNamespace('team-a').ce(other.url, 'loopback-gateway-secret').build());
  await w.create(operatorContext('unlisted').inNamespace('team-a').ce(listener.url, 'whatever-key').build());
  await w.create(apiDefinition('on-allowed').inNamespace('team-a').inContext('allowed').build());
  await w.create(apiDefinition('on-unlisted').inNamespace('team-a').inContext('unlisted').build());
  const report = await resync(w);
  t.equal(entry(report, 'ApiDefinition', 'on-allowed', 'team-a').result, 'synced');
  t.ok(other.loaded('api').get(defaultIdOf('on-allowed', 'team-a')), 'written to the allowed gateway');
  const error = await assertRefused(t, w, report, 'on-unlisted', 'team-a', 'UrlNotPermitted');
  t.match(error, /not named by CONTEXT_URL_ALLOW/);
  t.equal(listener.connections(), 0, 'the unlisted host received no connection');
});

t.test('a ReferenceGrant permits exactly the kinds and namespaces it names; its deletion is noticed by the next run, and deletes nothing', async (t) => {
  const w = await startWorld({ kube: WITH_GRANTS });
  t.teardown(() => w.close());
  await w.create(apiDefinition('payments').inNamespace('team-b').build());
  await w.create(securityPolicy('pay').inNamespace('team-a').granting('team-b/payments').build());
  await w.create(securityPolicy('pay').inNamespace('team-c').granting('team-b/payments').build());
  // grants that do not fit: another kind from team-a, policies from team-c to another kind
  await w.create(grant('wrong-kind', 'team-b', [{ group: 'tyk.tyk.io', kind: 'ApiDefinition', namespace: 'team-a' }], [{ group: 'tyk.tyk.io', kind: 'ApiDefinition' }]));
  await w.create(grant('wrong-to', 'team-b', [{ group: 'tyk.tyk.io', kind: 'SecurityPolicy', namespace: 'team-c' }], [{ group: 'tyk.tyk.io', kind: 'TykOasApiDefinition' }]));

  let report = await resync(w);
  t.equal(entry(report, 'ApiDefinition', 'payments', 'team-b').result, 'synced');
  const refusedA = await assertRefused(t, w, report, 'pay', 'team-a', 'RefNotPermitted', 'SecurityPolicy');
  t.match(refusedA, /spec\.access_rights_array: ApiDefinition team-b\/payments is in another namespace/);
  await assertRefused(t, w, report, 'pay', 'team-c', 'RefNotPermitted', 'SecurityPolicy');
  t.equal(w.tyk.loaded('policy').size, 0, 'no policy written');
  t.same((await w.get('payments', 'team-b'))?.status?.linked_by_policies ?? [], [], 'a policy that may not name the API does not hold it, nor shows in its status');

  // the right grant: policies of team-a may name team-b's ApiDefinitions
  await w.create(grant('policies-of-a', 'team-b', [{ group: 'tyk.tyk.io', kind: 'SecurityPolicy', namespace: 'team-a' }], [{ group: 'tyk.tyk.io', kind: 'ApiDefinition' }]));
  report = await resync(w);
  t.equal(entry(report, 'SecurityPolicy', 'pay', 'team-a').result, 'synced', 'team-a may now');
  t.equal(entry(report, 'SecurityPolicy', 'pay', 'team-c').code, 'REF_NOT_PERMITTED', 'team-c still may not');
  const policyId = defaultIdOf('pay', 'team-a');
  t.match(w.tyk.loaded('policy').get(policyId), { access_rights: { [defaultIdOf('payments', 'team-b')]: {} } });

  // the grant goes: the next run refuses again and deletes nothing
  await w.delete('policies-of-a', 'team-b', 'ReferenceGrant');
  report = await resync(w);
  await assertRefused(t, w, report, 'pay', 'team-a', 'RefNotPermitted', 'SecurityPolicy');
  t.ok(w.tyk.loaded('policy').get(policyId), 'the policy written through the grant is not deleted on that account');
  t.ok(w.gatewayApi(defaultIdOf('payments', 'team-b')), "team-b's API keeps serving");
});

t.test('contextRef into another namespace: refused without a grant, resolved with one; a Secret needs a grant naming it', async (t) => {
  const w = await startWorld({ kube: WITH_GRANTS });
  t.teardown(() => w.close());
  const other = await startFakeTykGateway({ secret: 'platform-gateway-secret' });
  t.teardown(() => other.close());
  await w.create(secret('conn').inNamespace('platform').tykConnection('ce', other.url, 'platform-gateway-secret').build());
  await w.create(operatorContext('shared').inNamespace('platform').fromSecret('conn').build());
  await w.create(operatorContext('remote-secret').inNamespace('team-a').fromSecret('conn', 'platform').build());
  await w.create(apiDefinition('uses-shared').inNamespace('team-a').inContext('shared', 'platform').build());
  await w.create(apiDefinition('uses-missing').inNamespace('team-a').inContext('nothing-here', 'platform').build());
  await w.create(apiDefinition('uses-remote-secret').inNamespace('team-a').inContext('remote-secret').build());
  // a grant of every Secret (no name) is not enough for a Secret
  await w.create(grant('all-secrets', 'platform', [{ group: 'tyk.tyk.io', kind: 'OperatorContext', namespace: 'team-a' }], [{ group: '', kind: 'Secret' }]));

  let report = await resync(w);
  const existing = await assertRefused(t, w, report, 'uses-shared', 'team-a', 'RefNotPermitted');
  const missing = entry(report, 'ApiDefinition', 'uses-missing', 'team-a').error ?? '';
  t.equal(missing.replace('nothing-here', 'shared'), existing, 'the same words whether the target exists or not');
  const bySecret = await assertRefused(t, w, report, 'uses-remote-secret', 'team-a', 'RefNotPermitted');
  t.match(bySecret, /no ReferenceGrant in platform naming it/);
  t.equal(other.loaded('api').size, 0, 'nothing written to the platform gateway');

  await w.create(grant('contexts', 'platform', [{ group: 'tyk.tyk.io', kind: 'ApiDefinition', namespace: 'team-a' }], [{ group: 'tyk.tyk.io', kind: 'OperatorContext', name: 'shared' }]));
  await w.create(grant('conn-secret', 'platform', [{ group: 'tyk.tyk.io', kind: 'OperatorContext', namespace: 'team-a' }], [{ group: '', kind: 'Secret', name: 'conn' }]));
  report = await resync(w);
  t.match(entry(report, 'ApiDefinition', 'uses-shared', 'team-a'), { result: 'synced', gateway: 'context:platform/shared' });
  t.match(entry(report, 'ApiDefinition', 'uses-remote-secret', 'team-a'), { result: 'synced', gateway: 'context:team-a/remote-secret' });
  t.equal(entry(report, 'ApiDefinition', 'uses-missing', 'team-a').code, 'REF_NOT_PERMITTED', 'a grant naming one context permits no other');
});

t.test("CROSS_NAMESPACE_REFS=allow: Tyk Operator's behaviour, references across namespaces without grants", async (t) => {
  const log = capturingLogger();
  const w = await startWorld({ env: { CROSS_NAMESPACE_REFS: 'allow' }, log });
  t.teardown(() => w.close());
  const other = await startFakeTykGateway({ secret: 'platform-gateway-secret' });
  t.teardown(() => other.close());
  await w.create(secret('conn').inNamespace('platform').tykConnection('ce', other.url, 'platform-gateway-secret').build());
  await w.create(operatorContext('remote-secret').inNamespace('team-a').fromSecret('conn', 'platform').build());
  await w.create(apiDefinition('payments').inNamespace('team-b').build());
  await w.create(apiDefinition('elsewhere').inNamespace('team-a').inContext('remote-secret').build());
  await w.create(securityPolicy('pay').inNamespace('team-a').granting('team-b/payments').build());
  const report = await resync(w);
  t.equal(entry(report, 'SecurityPolicy', 'pay', 'team-a').result, 'synced');
  t.equal(entry(report, 'ApiDefinition', 'elsewhere', 'team-a').result, 'synced');
  t.ok(other.loaded('api').get(defaultIdOf('elsewhere', 'team-a')));
  t.ok(
    log.entries.some((e) => e.level === 'warn' && /CROSS_NAMESPACE_REFS=allow/.test(String(e.msg))),
    'warned at start',
  );
});

t.test("a gateway's answer reaches a status or Event only as its error message, at most 300 characters", async (t) => {
  const w = await startWorld();
  t.teardown(() => w.close());
  // a context gateway (loopback, allowed by the harness's CONTEXT_URL_ALLOW) answering every call with a long error
  const long = `${'leaked answer text '.repeat(500)}END`;
  const server = createHttpServer((req, res) => {
    req.resume();
    // reads find nothing; every write is refused with the long message
    const [status, body] =
      req.method === 'GET' ? (req.url === '/tyk/apis' ? [200, []] : [404, { status: 'error', message: 'API not found' }]) : [500, { status: 'error', message: long, extra: 'x'.repeat(10_000) }];
    res.writeHead(status as number, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  await w.create(operatorContext('noisy').inNamespace('team-a').ce(url, 'noisy-gateway-key').build());
  await w.create(apiDefinition('loud').inNamespace('team-a').inContext('noisy').build());
  const report = await resync(w);
  const o = entry(report, 'ApiDefinition', 'loud', 'team-a');
  t.equal(o.result, 'failed');
  t.match(o.error, /leaked answer text/, 'the gateway message is told');
  t.notMatch(o.error, /END|xxxxxxxxxx/, 'its end and the rest of the answer are not');
  const status = (await w.get('loud', 'team-a'))?.status as { latestTransaction?: { error?: string } } | undefined;
  const said = status?.latestTransaction?.error ?? '';
  t.ok(said.includes('leaked answer text'), 'the status says the message');
  // what the status adds around the gateway's message (the call and its status code) is short
  t.ok(said.length <= 300 + 100, `the status carries at most 300 characters of the answer (${said.length} in all)`);
  for (const e of await w.events('loud', 'team-a')) t.ok(e.message.length < 600, `Event ${e.reason}: ${e.message.length} characters`);
});

t.test("a SuperGraph composing a SubGraph of another namespace: refused without a grant, composed with one; a Tyk OAS API's ConfigMap elsewhere needs a grant naming it", async (t) => {
  const w = await startWorld({ kube: WITH_GRANTS });
  t.teardown(() => w.close());
  await w.create(subGraph('users').inNamespace('team-b').withSdl(USERS_SDL).build());
  await w.create(apiDefinition('users-api').inNamespace('team-b').servingSubGraph('users').build());
  await w.create(subGraph('posts').inNamespace('team-a').withSdl(POSTS_SDL).build());
  await w.create(apiDefinition('posts-api').inNamespace('team-a').servingSubGraph('posts').build());
  await w.create(superGraph('social').inNamespace('team-a').withSubgraphs('team-b/users', 'posts').build());
  await w.create(apiDefinition('social').inNamespace('team-a').ofSuperGraph('social').build());
  await w.create(configMap('petstore').inNamespace('team-b').withOas(oasDocument('petstore')).build());
  await w.create(tykOasApi('petstore').inNamespace('team-a').fromConfigMap('petstore', 'oas.json', 'team-b').build());
  // a grant of every ConfigMap of team-b is not enough
  await w.create(grant('all-configmaps', 'team-b', [{ group: 'tyk.tyk.io', kind: 'TykOasApiDefinition', namespace: 'team-a' }], [{ group: '', kind: 'ConfigMap' }]));

  let report = await resync(w);
  const refused = await assertRefused(t, w, report, 'social', 'team-a', 'RefNotPermitted');
  t.match(refused, /SuperGraph team-a\/social spec\.subgraph_refs: SubGraph team-b\/users is in another namespace/);
  const oas = await assertRefused(t, w, report, 'petstore', 'team-a', 'RefNotPermitted', 'TykOasApiDefinition');
  t.match(oas, /spec\.tykOAS\.configmapRef: ConfigMap team-b\/petstore is in another namespace, and no ReferenceGrant in team-b naming it/);
  t.notOk(w.gatewayApi(defaultIdOf('social', 'team-a')), 'no supergraph API');

  await w.create(grant('supergraphs-of-a', 'team-b', [{ group: 'tyk.tyk.io', kind: 'SuperGraph', namespace: 'team-a' }], [{ group: 'tyk.tyk.io', kind: 'SubGraph' }]));
  await w.create(grant('petstore-doc', 'team-b', [{ group: 'tyk.tyk.io', kind: 'TykOasApiDefinition', namespace: 'team-a' }], [{ group: '', kind: 'ConfigMap', name: 'petstore' }]));
  report = await resync(w);
  t.equal(entry(report, 'ApiDefinition', 'social', 'team-a').result, 'synced', 'composed through the grant');
  t.equal(entry(report, 'TykOasApiDefinition', 'petstore', 'team-a').result, 'synced', 'its document read through the grant');
});

t.test("a SuperGraph naming another namespace's SubGraph without a grant does not hold its deletion; with a grant it does", async (t) => {
  const w = await startWorld({ kube: WITH_GRANTS });
  t.teardown(() => w.close());
  await w.create(subGraph('users').inNamespace('team-b').withSdl(USERS_SDL).build());
  await w.create(subGraph('orders').inNamespace('team-b').withSdl(POSTS_SDL).build());
  await w.create(superGraph('grabby').inNamespace('team-a').withSubgraphs('team-b/users').build());
  await w.create(superGraph('granted').inNamespace('team-c').withSubgraphs('team-b/orders').build());
  await w.create(grant('supergraphs-of-c', 'team-b', [{ group: 'tyk.tyk.io', kind: 'SuperGraph', namespace: 'team-c' }], [{ group: 'tyk.tyk.io', kind: 'SubGraph', name: 'orders' }]));
  await resync(w);
  await w.delete('users', 'team-b', 'subgraphs');
  await w.delete('orders', 'team-b', 'subgraphs');
  const report = await resync(w);
  t.equal(await w.get('users', 'team-b', 'subgraphs'), undefined, "team-b's SubGraph went: team-a's SuperGraph may not hold it");
  t.match(entry(report, 'SubGraph', 'orders', 'team-b'), { result: 'waiting', error: /still used by SuperGraph team-c\/granted/ }, 'the granted one is held');
});
