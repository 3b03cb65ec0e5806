/**
 * The Lambda handlers, given events shaped as AWS sends them (API Gateway HTTP API payload
 * 2.0; EventBridge scheduled events), reach the same gateway state as the server routes.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { handler as auditHandler } from '../../functions/audit.js';
import { handler as readyHandler } from '../../functions/health.js';
import { handler as healthzHandler } from '../../functions/healthz.js';
import { handler as resyncHandler } from '../../functions/resync.js';
import { handler as scheduleHandler } from '../../functions/schedule.js';
import { closeLambdaService } from '../../functions/service.js';
import { handler as watchHandler } from '../../functions/watch.js';
import type { KubeObject } from '../../lib/kube/types.js';
import { scheduledRun } from '../../lib/triggers/schedule.js';
import { type FakeKubeApiServer, startFakeKubeApiServer } from '../fakes/kube-apiserver.js';
import { type FakeTykGateway, startFakeTykGateway } from '../fakes/tyk-gateway.js';
import { apiDefinition, httpbinSpec } from '../fixtures/builders.js';
import { startRedis } from '../harness/redis.js';
import { startWorld } from '../harness/world.js';

const TOKEN = 'lambda-test-token-0123456789';

function httpApiEvent(method: string, path: string, body: string, headers: Record<string, string> = {}, base64 = false) {
  return {
    version: '2.0',
    routeKey: `${method} ${path}`,
    rawPath: path,
    rawQueryString: '',
    headers: { 'content-type': 'application/json', 'user-agent': 'kube-apiserver-admission', ...headers },
    requestContext: {
      accountId: '123456789012',
      apiId: 'api-id',
      domainName: 'x.execute-api.eu-west-1.amazonaws.com',
      http: { method, path, protocol: 'HTTP/1.1', sourceIp: '10.0.0.1', userAgent: 'x' },
      requestId: 'r',
      routeKey: `${method} ${path}`,
      stage: '$default',
      time: '21/Nov/2026:10:00:00 +0000',
      timeEpoch: 0,
    },
    body: base64 ? Buffer.from(body).toString('base64') : body,
    isBase64Encoded: base64,
  };
}

/** An EventBridge scheduled event, as the `schedule` function's rule delivers it. */
const scheduledEvent = {
  version: '0',
  id: '53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa',
  'detail-type': 'Scheduled Event',
  source: 'aws.events',
  account: '123456789012',
  time: '2026-11-21T10:05:00Z',
  region: 'eu-west-1',
  resources: ['arn:aws:events:eu-west-1:123456789012:rule/gateway-reconciler-dev-ScheduleEventsRuleSchedule1-ABCDEF'],
  detail: {},
};

/** The parts of the Lambda context the schedule reads, and what else the runtime passes. */
function lambdaContext(remainingMs: number) {
  return {
    functionName: 'gateway-reconciler-dev-schedule',
    awsRequestId: 'c6af9ac6-7b61-11e6-9a41-93e812345678',
    getRemainingTimeInMillis: () => remainingMs,
  };
}

/** An audit.k8s.io/v1 Event at stage ResponseComplete, as the API server's webhook sends it. */
function auditEvent(verb: string, resource: string, name: string, extra: Record<string, unknown> = {}) {
  return {
    level: 'Metadata',
    // unique across runs: deliveries are remembered (in Redis, which REDIS_URL may share) for an hour
    auditID: randomUUID(),
    stage: 'ResponseComplete',
    requestURI: `/apis/tyk.tyk.io/v1alpha1/namespaces/default/${resource}${verb === 'create' ? '' : `/${name}`}`,
    verb,
    user: { username: 'jane@example.com', groups: ['system:authenticated'] },
    sourceIPs: ['10.0.0.1'],
    userAgent: 'kubectl/v1.31.0',
    objectRef: { resource, namespace: 'default', name, apiGroup: 'tyk.tyk.io', apiVersion: 'v1alpha1' },
    responseStatus: { metadata: {}, code: verb === 'create' ? 201 : 200 },
    requestReceivedTimestamp: '2026-11-21T10:00:00.000000Z',
    stageTimestamp: '2026-11-21T10:00:00.010000Z',
    ...extra,
  };
}

const eventList = (...items: unknown[]) => ({ kind: 'EventList', apiVersion: 'audit.k8s.io/v1', metadata: {}, items });

function securityPolicy(name: string, api: string): KubeObject {
  return {
    apiVersion: 'tyk.tyk.io/v1alpha1',
    kind: 'SecurityPolicy',
    metadata: { name, namespace: 'default' },
    spec: { name: `${name} policy`, state: 'active', active: true, rate: 100, per: 60, access_rights_array: [{ name: api, namespace: 'default', versions: ['Default'] }] },
  };
}

/** The cluster both worlds start from: two APIs and a policy on one of them. */
function seed(kube: FakeKubeApiServer): void {
  kube.put(apiDefinition('httpbin').build());
  kube.put(
    apiDefinition('orders')
      .withSpec(httpbinSpec({ name: 'orders', proxy: { target_url: 'http://orders.default.svc:8080', listen_path: '/orders', strip_listen_path: true } }))
      .build(),
  );
  kube.put(securityPolicy('gold', 'httpbin'));
}

/**
 * What the gateway holds: every loaded API and policy, by id. An API's `id` is the gateway's
 * own object id (random, like Tyk's Mongo ids), not ours (`api_id`), so it is left out.
 */
function gatewayState(tyk: FakeTykGateway): { apis: Record<string, unknown>; policies: Record<string, unknown> } {
  const apis = [...tyk.loaded('api')].map(([apiId, { id: _gatewayOwnId, ...api }]) => [apiId, api]);
  return { apis: Object.fromEntries(apis), policies: Object.fromEntries(tyk.loaded('policy')) };
}

/** What the cluster says about each object: finalizers and the gateway ids in its status. */
function clusterState(kube: FakeKubeApiServer): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [plural, name] of [
    ['apidefinitions', 'httpbin'],
    ['apidefinitions', 'orders'],
    ['securitypolicies', 'gold'],
  ] as const) {
    const o = kube.getObject(plural, 'default', name) as KubeObject | undefined;
    const status = (o?.status ?? {}) as Record<string, unknown>;
    out[`${plural}/${name}`] = { finalizers: o?.metadata.finalizers, api_id: status.api_id, pol_id: status.pol_id, linked_apis: status.linked_apis };
  }
  return out;
}

/** The EMF documents the functions write to stdout (taken out of it, so tap's stream stays TAP). */
interface EmfDoc {
  _aws: { CloudWatchMetrics: { Namespace: string; Dimensions: string[][] }[] };
  [member: string]: unknown;
}

function captureEmf(): { docs: EmfDoc[]; restore(): void } {
  const docs: EmfDoc[] = [];
  const write = process.stdout.write;
  process.stdout.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString();
    if (!text.startsWith('{"_aws"')) return (write as (...a: unknown[]) => boolean).call(process.stdout, chunk, ...rest);
    for (const line of text.split('\n')) if (line !== '') docs.push(JSON.parse(line) as EmfDoc);
    return true;
  }) as typeof process.stdout.write;
  return {
    docs,
    restore: () => {
      process.stdout.write = write;
    },
  };
}

/** Fakes and Redis for the Lambda side, and the environment a deployed function would have. */
async function lambdaWorld(t: { teardown(fn: () => unknown): void }): Promise<{ kube: FakeKubeApiServer; tyk: FakeTykGateway; redisUrl: string; emf: EmfDoc[] }> {
  const [kube, tyk, redis] = await Promise.all([startFakeKubeApiServer(), startFakeTykGateway(), startRedis()]);
  const dir = await mkdtemp(join(tmpdir(), 'gr-lambda-'));
  const saved = { ...process.env };
  const emf = captureEmf();
  t.teardown(async () => {
    await closeLambdaService();
    emf.restore();
    process.env = saved;
    await Promise.all([kube.close(), tyk.close(), redis.owned ? redis.stop() : Promise.resolve()]);
    await rm(dir, { recursive: true, force: true });
  });
  await closeLambdaService();
  Object.assign(process.env, { KUBECONFIG: await kube.writeKubeconfig(dir), TYK_URL: tyk.url, TYK_AUTH: tyk.secret, WEBHOOK_TOKEN: TOKEN, RESYNC_TOKEN: TOKEN, LOG_LEVEL: 'silent' });
  delete process.env.REDIS_URL;
  process.env.AWS_LAMBDA_FUNCTION_NAME = 'gateway-reconciler-test-watch';
  return { kube, tyk, redisUrl: redis.url, emf: emf.docs };
}

/** The value of `metric` in the EMF documents whose dimensions include `dims`, summed. */
function emfSum(docs: readonly EmfDoc[], metric: string, dims: Record<string, string> = {}): number {
  let sum = 0;
  for (const d of docs) {
    if (!(metric in d) || !Object.entries(dims).every(([k, v]) => d[k] === v)) continue;
    const v = d[metric];
    sum += Array.isArray(v) ? v.length : (v as number);
  }
  return sum;
}

t.test('Lambda handlers over a real-shaped event reach the same state as the routes', async (t) => {
  const { kube, tyk, redisUrl, emf } = await lambdaWorld(t);

  // without Redis, a Lambda refuses to run (containers share no memory)
  const refused = await watchHandler(httpApiEvent('POST', '/webhooks/watch', '[]', { authorization: `Bearer ${TOKEN}` }));
  t.equal(refused.statusCode, 500);
  t.match(JSON.parse(refused.body), { error: /REDIS_URL: is required on AWS Lambda/ });
  // nor does it answer before its run (it is stopped once it answered)
  process.env.REDIS_URL = redisUrl;
  process.env.WEBHOOK_ANSWER = 'accepted';
  const accepted = await watchHandler(httpApiEvent('POST', '/webhooks/watch', '[]', { authorization: `Bearer ${TOKEN}` }));
  t.equal(accepted.statusCode, 500);
  t.match(JSON.parse(accepted.body), { error: /^misconfigured: WEBHOOK_ANSWER: must be report on AWS Lambda/ });
  delete process.env.WEBHOOK_ANSWER;

  process.env.REDIS_URL = redisUrl;
  kube.put(apiDefinition('a').build());
  kube.put(apiDefinition('b').build());
  const event = { type: 'ADDED', object: { apiVersion: 'tyk.tyk.io/v1alpha1', kind: 'ApiDefinition', metadata: { name: 'a', namespace: 'default' } } };
  const res = await watchHandler(httpApiEvent('POST', '/webhooks/watch', JSON.stringify(event), { Authorization: `Bearer ${TOKEN}` }, true));
  t.equal(res.statusCode, 200);
  t.equal(res.headers['content-type'], 'application/json');
  t.match(JSON.parse(res.body), { accepted: 1, report: { objects: [{ name: 'a', result: 'synced' }] } });

  const unauth = await auditHandler(httpApiEvent('POST', '/webhooks/audit', '{}'));
  t.equal(unauth.statusCode, 401);

  const scheduled = await scheduleHandler();
  t.match(scheduled, { writes: 1, reloads: 1, errors: 0, counts: { synced: 1, unchanged: 1 } });
  t.equal(tyk.loaded('api').size, 2);

  const ready = await readyHandler(httpApiEvent('GET', '/readyz', ''));
  t.equal(ready.statusCode, 200);

  // each invocation wrote its metrics as EMF lines: the watch run, the rejected audit, the tick
  t.ok(emf.length > 0, 'EMF documents on stdout');
  for (const d of emf) t.match(d, { _aws: { Timestamp: Number, CloudWatchMetrics: [{ Namespace: 'GatewayReconciler' }] }, function: 'gateway-reconciler-test-watch' });
  t.equal(emfSum(emf, 'runs_total', { trigger: 'watch', outcome: 'ok' }), 1);
  t.equal(emfSum(emf, 'runs_total', { trigger: 'schedule', outcome: 'ok' }), 1);
  t.equal(emfSum(emf, 'http_requests_total', { route: '/webhooks/audit', status: '401' }), 1, 'the rejected request is counted');
  t.equal(emfSum(emf, 'http_requests_total', { route: '/webhooks/watch', status: '200' }), 1);
  t.equal(emfSum(emf, 'objects_total', { kind: 'ApiDefinition', action: 'CREATE', result: 'synced' }), 2, 'a by the watch run, b by the tick');
  t.equal(emfSum(emf, 'gateway_writes_total'), 2);
  t.equal(emfSum(emf, 'gateway_requests_total', { gateway: 'default', method: 'POST', outcome: '2xx' }), 2);
  t.ok(emfSum(emf, 'last_full_run_success_timestamp_seconds') > 0);
  t.notMatch(JSON.stringify(emf), TOKEN, 'no token in the metrics');
});

t.test('an audit EventList over HTTP API 2.0, then an EventBridge tick: the same gateway and cluster state as the server routes', async (t) => {
  // the server: fastify routes over the same functions, its own fakes and store
  const w = await startWorld();
  t.teardown(() => w.close());
  // the Lambda side
  const { kube, tyk, redisUrl } = await lambdaWorld(t);
  process.env.REDIS_URL = redisUrl;
  seed(w.kube.fake);
  seed(kube);

  // 1. the API server's audit webhook reports creates of httpbin and its policy (and our own
  //    status patch, which is ignored); orders was created while the webhook was down
  const audit = eventList(
    auditEvent('create', 'apidefinitions', 'httpbin'),
    auditEvent('create', 'securitypolicies', 'gold'),
    auditEvent('patch', 'apidefinitions', 'httpbin', {
      objectRef: { resource: 'apidefinitions', subresource: 'status', namespace: 'default', name: 'httpbin', apiGroup: 'tyk.tyk.io', apiVersion: 'v1alpha1' },
    }),
  );
  const viaRoute = await w.audit(audit);
  const viaLambda = await auditHandler(
    httpApiEvent('POST', '/webhooks/audit', JSON.stringify(audit), {
      Authorization: `Bearer ${TOKEN}`,
      'user-agent': 'kube-apiserver-admission',
      'content-length': String(JSON.stringify(audit).length),
    }),
  );
  t.equal(viaRoute.statusCode, 200);
  t.equal(viaLambda.statusCode, 200);
  t.equal(viaLambda.headers['content-type'], 'application/json');
  const lambdaBody = JSON.parse(viaLambda.body) as { accepted: number; ignored: Record<string, number>; report: { counts: Record<string, number> } };
  t.match(lambdaBody, { accepted: 2, ignored: { 'status subresource': 1 }, report: { counts: { synced: 2 } } });
  t.same(lambdaBody.report.counts, viaRoute.body.report?.counts, 'the same outcome per object');
  t.same(gatewayState(tyk), gatewayState(w.tyk), 'after the audit batch: the same APIs and policies on both gateways');
  t.same(Object.keys(gatewayState(tyk).apis).sort(), ['ZGVmYXVsdC9odHRwYmlu'], 'httpbin only: orders was not in the batch');
  t.equal(tyk.loaded('policy').size, 1);

  // a resent batch (same auditIDs) costs nothing on either side
  const resent = JSON.parse((await auditHandler(httpApiEvent('POST', '/webhooks/audit', JSON.stringify(audit), { authorization: `Bearer ${TOKEN}` }))).body) as { report: unknown };
  t.equal(resent.report, null, 'a repeated delivery runs nothing');

  // 2. the schedule: EventBridge on Lambda, the self-hosted schedule's run on the server
  const tick = await scheduleHandler(scheduledEvent, lambdaContext(299_000));
  const serverTick = await scheduledRun(w.svc);
  t.match(tick, { errors: 0, writes: 1, reloads: 1, deferred: 0, counts: { synced: 1, unchanged: 2 } });
  t.same(tick.counts, serverTick.counts, 'the same outcome per object');
  const lambdaGateway = gatewayState(tyk);
  t.same(lambdaGateway, gatewayState(w.tyk), 'after the tick: the same APIs and policies on both gateways');
  t.same(Object.keys(lambdaGateway.apis).sort(), ['ZGVmYXVsdC9odHRwYmlu', 'ZGVmYXVsdC9vcmRlcnM'], 'orders found by the tick');
  t.match(lambdaGateway.apis.ZGVmYXVsdC9vcmRlcnM, { name: 'orders', proxy: { listen_path: '/orders', target_url: 'http://orders.default.svc:8080' } });
  t.match(Object.values(lambdaGateway.policies), [{ name: 'gold policy', access_rights: { ZGVmYXVsdC9odHRwYmlu: { api_id: 'ZGVmYXVsdC9odHRwYmlu' } } }]);
  t.same(clusterState(kube), clusterState(w.kube.fake), 'the same finalizers and status ids in both clusters');

  // 3. a second tick changes nothing anywhere
  const quiet = await scheduleHandler(scheduledEvent, lambdaContext(299_000));
  t.match(quiet, { writes: 0, reloads: 0, errors: 0, counts: { unchanged: 3 } });
});

t.test('GET /healthz on Lambda answers without building the service', async (t) => {
  const res = await healthzHandler();
  t.same(res, { statusCode: 200, headers: { 'content-type': 'application/json' }, body: '{"status":"ok"}' });
});

t.test('a refused caller on Lambda: 401 before the body is decoded or parsed', async (t) => {
  const { redisUrl } = await lambdaWorld(t);
  process.env.REDIS_URL = redisUrl;
  // API Gateway hands the body over already; the handler must not look at it before the token
  const counted = (body: string, headers: Record<string, string>) => {
    let reads = 0;
    const event = httpApiEvent('POST', '/webhooks/watch', '', headers, true);
    Object.defineProperty(event, 'body', {
      get: () => {
        reads++;
        return Buffer.from(body).toString('base64');
      },
    });
    return { event, reads: () => reads };
  };
  for (const [handler, path] of [
    [watchHandler, '/webhooks/watch'],
    [auditHandler, '/webhooks/audit'],
    [resyncHandler, '/resync'],
  ] as const) {
    const refused = counted('{"not json', { authorization: 'Bearer not-the-token-at-all-xx' });
    const res = await handler(refused.event);
    t.equal(res.statusCode, 401, `${path}: 401`);
    t.equal(refused.reads(), 0, `${path}: the body was not read`);
    t.notMatch(res.body, TOKEN, `${path}: no token in the answer`);
    const admitted = counted('{"not json', { authorization: `Bearer ${TOKEN}` });
    t.equal((await handler(admitted.event)).statusCode, 400, `${path}: an admitted malformed body is parsed and refused`);
    t.ok(admitted.reads() > 0, `${path}: the admitted body was read`);
  }
});
