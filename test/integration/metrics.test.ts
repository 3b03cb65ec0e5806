/**
 * GET /metrics through HTTP, with real Redis, our real gateway client and the loopback fakes:
 * what a run did shows in its counters, a steady state adds no writes, drift and lock
 * contention are counted, every answered request is counted by route and status, and
 * METRICS_TOKEN guards the route without ever appearing in it.
 */
import t from 'tap';
import { EmfMetrics } from '../../lib/metrics/emf.js';
import { loadConfig } from '../../lib/platform/config.js';
import { silentLogger } from '../../lib/platform/log.js';
import { buildApp } from '../../lib/server.js';
import { createService } from '../../lib/service.js';
import { MemoryStore } from '../../lib/store/memory.js';
import { apiDefinition } from '../fixtures/builders.js';
import { sumOf } from '../harness/prometheus.js';
import { RESYNC_TOKEN, WEBHOOK_TOKEN, worldFor } from '../harness/world.js';

const P = 'gateway_reconciler_';

t.test('a run shows in the counters; a steady state adds no writes', async (t) => {
  const w = await worldFor(t);
  const before = await w.scrape();
  t.equal(before.statusCode, 200);
  t.match(before.contentType, /^text\/plain; version=0\.0\.4/);
  t.equal(sumOf(before.samples, `${P}runs_total`), undefined, 'no run yet: no labelled series');
  t.match(before.text, `# TYPE ${P}runs_total counter`, 'but every metric is declared from the start');
  t.equal(sumOf(before.samples, `${P}gateway_writes_total`), 0);

  for (const n of ['a', 'b']) await w.create(apiDefinition(n).build());
  t.equal((await w.resync()).statusCode, 200);
  const first = (await w.scrape()).samples;
  t.equal(sumOf(first, `${P}runs_total`, { trigger: 'resync', outcome: 'ok' }), 1);
  t.equal(sumOf(first, `${P}objects_total`, { kind: 'ApiDefinition', action: 'CREATE', result: 'synced' }), 2);
  t.equal(sumOf(first, `${P}gateway_writes_total`), 2);
  t.equal(sumOf(first, `${P}gateway_reloads_total`), 1);
  t.equal(sumOf(first, `${P}gateway_requests_total`, { gateway: 'default', method: 'POST', outcome: '2xx' }), 2, 'the two creates as the transport saw them');
  t.ok((sumOf(first, `${P}gateway_requests_total`, { gateway: 'default', method: 'GET' }) ?? 0) > 0, 'and the reads');
  t.equal(sumOf(first, `${P}run_duration_seconds_count`, { trigger: 'resync' }), 1);
  t.equal(sumOf(first, `${P}http_requests_total`, { route: '/resync', status: '200' }), 1);
  const lastSuccess = sumOf(first, `${P}last_full_run_success_timestamp_seconds`) ?? 0;
  t.ok(Math.abs(lastSuccess - w.clock.now() / 1000) < 5, 'a full run without errors sets the last-success time');

  await w.tick();
  await w.tick();
  const steady = (await w.scrape()).samples;
  t.equal(sumOf(steady, `${P}gateway_writes_total`), 2, 'steady state: no more writes');
  t.equal(sumOf(steady, `${P}gateway_requests_total`, { method: 'POST' }), 2, 'no more POSTs');
  t.equal(sumOf(steady, `${P}gateway_requests_total`, { method: 'DELETE' }), undefined);
  t.equal(sumOf(steady, `${P}gateway_reloads_total`), 1);
  t.equal(sumOf(steady, `${P}objects_total`, { action: 'NOOP', result: 'unchanged' }), 4, 'two objects, two ticks');
  t.equal(sumOf(steady, `${P}runs_total`, { trigger: 'schedule', outcome: 'ok' }), 2);
});

t.test('drift, a gateway that answers 500, an unknown route and a rejected webhook are counted', async (t) => {
  const w = await worldFor(t);
  await w.create(apiDefinition('a').build());
  await w.create(apiDefinition('b').build());
  await w.tick();
  // someone edits a on the gateway, b is lost
  const [idA, idB] = [...w.tyk.loaded('api').keys()].sort();
  const edit = (api: Record<string, unknown>) => ({ ...api, name: 'edited by hand' });
  w.tyk.editFile('api', idA as string, edit);
  w.tyk.editLoaded('api', idA as string, edit);
  w.tyk.removeFile('api', idB as string);
  w.tyk.removeLoaded('api', idB as string);
  await w.tick();
  const drift = (await w.scrape()).samples;
  t.equal(sumOf(drift, `${P}drift_detected_total`, { kind: 'ApiDefinition', drift: 'changed' }), 1);
  t.equal(sumOf(drift, `${P}drift_detected_total`, { kind: 'ApiDefinition', drift: 'missing' }), 1);

  w.tyk.inject({ method: 'GET', path: '/tyk/apis', status: 500, body: { status: 'error', message: 'boom' }, times: 1 });
  await w.tick();
  const failed = (await w.scrape()).samples;
  t.equal(sumOf(failed, `${P}gateway_requests_total`, { method: 'GET', outcome: '5xx' }), 1);
  t.equal(sumOf(failed, `${P}runs_total`, { trigger: 'schedule', outcome: 'partial' }), 1, 'a run whose gateway read failed is partial');

  await w.app.inject({ method: 'GET', url: '/wp-login.php' });
  await w.watch([], 'not-the-webhook-token-0123');
  const requests = (await w.scrape()).samples;
  t.equal(sumOf(requests, `${P}http_requests_total`, { route: 'unmatched', status: '404' }), 1, 'a path of ours or "unmatched": the label set stays bounded');
  t.equal(sumOf(requests, `${P}http_requests_total`, { route: '/webhooks/watch', status: '401' }), 1);
  t.ok((sumOf(requests, `${P}http_requests_total`, { route: '/metrics', status: '200' }) ?? 0) >= 2, 'the scrapes themselves');
});

t.test('METRICS_TOKEN guards /metrics and never appears in it', async (t) => {
  const token = 'metrics-token-0123456789abcdef';
  const w = await worldFor(t, { env: { METRICS_TOKEN: token } });
  t.equal((await w.scrape()).statusCode, 401);
  t.equal((await w.scrape(WEBHOOK_TOKEN)).statusCode, 401, 'another route token is not the metrics token');
  const ok = await w.scrape(token);
  t.equal(ok.statusCode, 200);
  for (const secret of [token, WEBHOOK_TOKEN, RESYNC_TOKEN, w.tyk.secret]) t.notMatch(ok.text, secret, 'no secret in the exposition');
  // the probes stay open
  t.equal((await w.app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200);
});

t.test('a service whose metrics are not served over HTTP (Lambda-style) answers /metrics 404 with the reason', async (t) => {
  const w = await worldFor(t);
  const env = { KUBECONFIG: w.kubeconfigPath, TYK_URL: w.tyk.url, TYK_AUTH: w.tyk.secret, ALLOW_UNAUTHENTICATED: 'true' };
  const svc = createService(loadConfig(env), env, { store: new MemoryStore(), log: silentLogger, metrics: new EmfMetrics(() => undefined) });
  const app = buildApp(svc);
  t.teardown(async () => {
    await app.close();
    await svc.close();
  });
  const res = await app.inject({ method: 'GET', url: '/metrics' });
  t.equal(res.statusCode, 404);
  t.match(res.json(), { code: 'NOT_FOUND', error: /CloudWatch/ });
});
