/**
 * The Lambda handlers, given events shaped as AWS sends them (API Gateway HTTP API payload
 * 2.0; EventBridge scheduled events), reach the same gateway state as the server routes.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { handler as auditHandler } from '../../functions/audit.js';
import { handler as readyHandler } from '../../functions/health.js';
import { handler as scheduleHandler } from '../../functions/schedule.js';
import { closeLambdaService } from '../../functions/http.js';
import { handler as watchHandler } from '../../functions/watch.js';
import { apiDefinition } from '../fixtures/builders.js';
import { startFakeKubeApiServer } from '../fakes/kube-apiserver.js';
import { startFakeTykGateway } from '../fakes/tyk-gateway.js';
import { startRedis } from '../harness/redis.js';

const TOKEN = 'lambda-test-token-0123456789';

function httpApiEvent(method: string, path: string, body: string, headers: Record<string, string> = {}, base64 = false) {
  return {
    version: '2.0',
    routeKey: `${method} ${path}`,
    rawPath: path,
    rawQueryString: '',
    headers: { 'content-type': 'application/json', 'user-agent': 'kube-apiserver-admission', ...headers },
    requestContext: { accountId: '123456789012', apiId: 'api-id', domainName: 'x.execute-api.eu-west-1.amazonaws.com', http: { method, path, protocol: 'HTTP/1.1', sourceIp: '10.0.0.1', userAgent: 'x' }, requestId: 'r', routeKey: `${method} ${path}`, stage: '$default', time: '21/Nov/2026:10:00:00 +0000', timeEpoch: 0 },
    body: base64 ? Buffer.from(body).toString('base64') : body,
    isBase64Encoded: base64,
  };
}

t.test('Lambda handlers over a real-shaped event reach the same state as the routes', async (t) => {
  const [kube, tyk, redis] = await Promise.all([startFakeKubeApiServer(), startFakeTykGateway(), startRedis()]);
  const dir = await mkdtemp(join(tmpdir(), 'gr-lambda-'));
  const saved = { ...process.env };
  t.teardown(async () => {
    await closeLambdaService();
    process.env = saved;
    await Promise.all([kube.close(), tyk.close(), redis.owned ? redis.stop() : Promise.resolve()]);
    await rm(dir, { recursive: true, force: true });
  });

  // without Redis, a Lambda refuses to run (containers share no memory)
  Object.assign(process.env, { KUBECONFIG: await kube.writeKubeconfig(dir), TYK_URL: tyk.url, TYK_AUTH: tyk.secret, WEBHOOK_TOKEN: TOKEN, RESYNC_TOKEN: TOKEN, LOG_LEVEL: 'silent' });
  delete process.env.REDIS_URL;
  const refused = await watchHandler(httpApiEvent('POST', '/webhooks/watch', '[]', { authorization: `Bearer ${TOKEN}` }));
  t.equal(refused.statusCode, 500);
  t.match(JSON.parse(refused.body), { error: /REDIS_URL: is required on AWS Lambda/ });

  process.env.REDIS_URL = redis.url;
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
});
