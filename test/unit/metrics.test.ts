/**
 * lib/metrics: the figures a run, a request and a gateway call add (pure), the EMF lines the
 * Lambda sink writes (as CloudWatch's format requires them), and the Prometheus sink's
 * exposition of the same figures.
 */
import t from 'tap';
import type { ObjectReport, RunReport, RunRequest } from '../../lib/engine/types.js';
import { type Figure, METRIC_PREFIX, METRICS } from '../../lib/metrics/catalogue.js';
import { EMF_NAMESPACE, EmfMetrics } from '../../lib/metrics/emf.js';
import { gatewayCallFigures, requestFigures, runFigures } from '../../lib/metrics/figures.js';
import { PrometheusMetrics } from '../../lib/metrics/prometheus.js';
import { parseExposition, sumOf } from '../harness/prometheus.js';

function object(over: Partial<ObjectReport>): ObjectReport {
  return { kind: 'ApiDefinition', namespace: 'default', name: 'a', id: 'x', action: 'NOOP', reason: 'unchanged', result: 'unchanged', ...over };
}

function report(objects: ObjectReport[], over: Partial<RunReport> = {}): RunReport {
  return { runId: 'r', trigger: 'schedule', dryRun: false, startedAt: '', durationMs: 1, gateway: { writes: 0, reloads: 0 }, objects, errors: [], counts: {}, ...over };
}

const FULL: RunRequest = { trigger: 'schedule', scope: { all: true } };
const NOW = 1_800_000_000_500;

function find(figures: Figure[], name: string, labels: Record<string, string> = {}): Figure[] {
  return figures.filter((f) => f.name === name && Object.entries(labels).every(([k, v]) => f.labels[k] === v));
}

t.test('runFigures: objects by kind/action/result, drift, contention, writes, outcome, last success', async (t) => {
  const r = report(
    [
      object({ name: 'a', action: 'CREATE', reason: 'created in cluster', result: 'synced' }),
      object({ name: 'b', action: 'CREATE', reason: 'created in cluster', result: 'synced' }),
      object({ name: 'c', action: 'UPDATE', reason: 'drifted on gateway', result: 'synced' }),
      object({ name: 'd', action: 'CREATE', reason: 'missing on gateway', result: 'paused' }),
      object({ name: 'e', action: 'UPDATE', reason: 'spec changed', result: 'deferred' }),
      object({ name: 'f', action: 'UPDATE', reason: 'out of time', result: 'deferred' }),
      object({ kind: 'SecurityPolicy', name: 'p', action: 'DELETE', reason: 'deleted in cluster', result: 'held' }),
    ],
    { gateway: { writes: 3, reloads: 1 } },
  );
  const f = runFigures(FULL, { report: r }, 2.5, NOW);
  t.same(find(f, 'runs_total'), [{ name: 'runs_total', labels: { trigger: 'schedule', outcome: 'ok' }, value: 1 }]);
  t.same(find(f, 'run_duration_seconds'), [{ name: 'run_duration_seconds', labels: { trigger: 'schedule' }, value: 2.5 }]);
  t.same(
    find(f, 'objects_total', { action: 'CREATE', result: 'synced' }),
    [{ name: 'objects_total', labels: { kind: 'ApiDefinition', action: 'CREATE', result: 'synced' }, value: 2 }],
    'one figure per label set, summed',
  );
  t.equal(find(f, 'objects_total').length, 5);
  t.same(find(f, 'objects_total', { kind: 'SecurityPolicy' })[0]?.labels, { kind: 'SecurityPolicy', action: 'DELETE', result: 'held' });
  t.same(
    find(f, 'drift_detected_total').map((x) => [x.labels.drift, x.value]),
    [
      ['changed', 1],
      ['missing', 1],
    ],
    'drift is detected even where the object is paused',
  );
  t.same(find(f, 'lock_contention_total'), [{ name: 'lock_contention_total', labels: { kind: 'ApiDefinition' }, value: 1 }], 'out of time is not contention');
  t.same(find(f, 'gateway_writes_total')[0]?.value, 3);
  t.same(find(f, 'gateway_reloads_total')[0]?.value, 1);
  t.same(find(f, 'last_full_run_success_timestamp_seconds'), [{ name: 'last_full_run_success_timestamp_seconds', labels: {}, value: 1_800_000_000 }]);
});

t.test('runFigures: partial and failed runs, scoped and dry runs set no last success; no writes, no write figure', async (t) => {
  const partial = runFigures(FULL, { report: report([], { errors: [{ stage: 'list', code: 'GATEWAY_API', message: 'boom' }] }) }, 1, NOW);
  t.same(find(partial, 'runs_total')[0]?.labels, { trigger: 'schedule', outcome: 'partial' });
  t.same(find(partial, 'last_full_run_success_timestamp_seconds'), []);
  t.same(find(partial, 'gateway_writes_total'), []);
  t.same(find(partial, 'gateway_reloads_total'), []);

  const failed = runFigures({ trigger: 'watch', scope: { refs: [] } }, { failed: true }, 0.1, NOW);
  t.same(failed, [
    { name: 'runs_total', labels: { trigger: 'watch', outcome: 'failed' }, value: 1 },
    { name: 'run_duration_seconds', labels: { trigger: 'watch' }, value: 0.1 },
  ]);
  t.same(find(runFigures({ trigger: 'resync', scope: { namespaces: ['default'] } }, { report: report([]) }, 1, NOW), 'last_full_run_success_timestamp_seconds'), [], 'a namespace is not a full run');
  t.same(find(runFigures({ ...FULL, dryRun: true }, { report: report([]) }, 1, NOW), 'last_full_run_success_timestamp_seconds'), [], 'a dry run changes nothing');
  const dry = runFigures({ ...FULL, dryRun: true }, { report: report([], { dryRun: true, gateway: { writes: 2, reloads: 1 } }) }, 1, NOW);
  t.same([...find(dry, 'gateway_writes_total'), ...find(dry, 'gateway_reloads_total')], [], 'a dry run’s writes and reloads are what it would cost: none counted');
});

t.test('runFigures: a gateway of several replicas sets its gauge, served and unreadable; a gateway of one sets none', async (t) => {
  const r = report([], { gateway: { writes: 0, reloads: 0, replicas: [{ gateway: 'default', replicas: ['gw-0', 'gw-1', 'gw-2'], unreadable: ['gw-1'] }] } });
  const f = runFigures(FULL, { report: r }, 1, NOW);
  t.same(find(f, 'gateway_replicas'), [
    { name: 'gateway_replicas', labels: { gateway: 'default', state: 'served' }, value: 2 },
    { name: 'gateway_replicas', labels: { gateway: 'default', state: 'unreadable' }, value: 1 },
  ]);
  t.same(find(runFigures(FULL, { report: report([]) }, 1, NOW), 'gateway_replicas'), []);
});

t.test('requestFigures and gatewayCallFigures', async (t) => {
  t.same(requestFigures('/webhooks/audit', 413), [{ name: 'http_requests_total', labels: { route: '/webhooks/audit', status: '413' }, value: 1 }]);
  t.same(requestFigures('/.env', 404)[0]?.labels, { route: 'unmatched', status: '404' });
  for (const route of ['/webhooks/watch', '/webhooks/cloudevents', '/resync', '/healthz', '/readyz', '/metrics']) t.equal(requestFigures(route, 200)[0]?.labels.route, route);
  t.same(gatewayCallFigures({ gateway: 'context:ns/c', method: 'DELETE', outcome: '4xx', seconds: 0.02 }), [
    { name: 'gateway_requests_total', labels: { gateway: 'context:ns/c', method: 'DELETE', outcome: '4xx' }, value: 1 },
    { name: 'gateway_request_duration_seconds', labels: { gateway: 'context:ns/c', method: 'DELETE' }, value: 0.02 },
  ]);
});

t.test('EMF: one document per label set, as CloudWatch reads it; counters summed, gauges last, observations in arrays of 100', async (t) => {
  const lines: string[] = [];
  const emf = new EmfMetrics(
    (l) => lines.push(l),
    () => NOW,
    'gr-prod-schedule',
  );
  emf.flush();
  t.same(lines, [], 'nothing recorded, nothing written');
  emf.record([
    { name: 'runs_total', labels: { trigger: 'schedule', outcome: 'ok' }, value: 1 },
    { name: 'runs_total', labels: { trigger: 'schedule', outcome: 'ok' }, value: 1 },
    { name: 'gateway_writes_total', labels: {}, value: 3 },
    { name: 'last_full_run_success_timestamp_seconds', labels: {}, value: 10 },
    { name: 'last_full_run_success_timestamp_seconds', labels: {}, value: 20 },
  ]);
  for (let i = 0; i < 150; i++) emf.record([{ name: 'gateway_request_duration_seconds', labels: { gateway: 'default', method: 'GET' }, value: i }]);
  emf.flush();
  const docs = lines.map(
    (l) => JSON.parse(l) as Record<string, unknown> & { _aws: { Timestamp: number; CloudWatchMetrics: { Namespace: string; Dimensions: string[][]; Metrics: { Name: string; Unit: string }[] }[] } },
  );
  t.equal(docs.length, 4);
  const [runs, plain, durations, more] = docs;
  t.same(runs, {
    _aws: { Timestamp: NOW, CloudWatchMetrics: [{ Namespace: EMF_NAMESPACE, Dimensions: [['function', 'trigger', 'outcome']], Metrics: [{ Name: 'runs_total', Unit: 'Count' }] }] },
    function: 'gr-prod-schedule',
    trigger: 'schedule',
    outcome: 'ok',
    runs_total: 2,
  });
  t.match(plain, { _aws: { CloudWatchMetrics: [{ Dimensions: [['function']] }] }, gateway_writes_total: 3, last_full_run_success_timestamp_seconds: 20 });
  t.equal((durations?.gateway_request_duration_seconds as number[] | undefined)?.length, 100);
  t.same(
    more?.gateway_request_duration_seconds,
    Array.from({ length: 50 }, (_, i) => 100 + i),
  );
  t.match(more, { _aws: { CloudWatchMetrics: [{ Metrics: [{ Name: 'gateway_request_duration_seconds', Unit: 'Seconds' }] }] }, gateway: 'default', method: 'GET' });
  for (const d of docs) {
    // every metric a directive names is a member of the document, every dimension too
    const directive = d._aws.CloudWatchMetrics[0];
    for (const m of directive?.Metrics ?? []) t.ok(m.Name in d, `${m.Name} is present`);
    for (const k of directive?.Dimensions[0] ?? []) t.type(d[k], 'string');
  }
  lines.length = 0;
  emf.flush();
  t.same(lines, [], 'flushed figures are forgotten');
  const bare = new EmfMetrics(
    (l) => lines.push(l),
    () => NOW,
    undefined,
  );
  bare.record([{ name: 'gateway_reloads_total', labels: {}, value: 1 }]);
  bare.flush();
  t.match(JSON.parse(lines[0] ?? '{}'), { _aws: { CloudWatchMetrics: [{ Dimensions: [[]] }] }, gateway_reloads_total: 1 }, 'outside Lambda: no function dimension');

  const failing = new EmfMetrics(() => {
    throw new Error('stdout closed');
  });
  failing.record([{ name: 'gateway_reloads_total', labels: {}, value: 1 }]);
  t.throws(() => failing.flush());
  t.doesNotThrow(() => failing.flush(), 'the buffer was emptied before the writer failed');
});

t.test('Prometheus: every catalogue metric declared from the start; figures exposed under the prefix', async (t) => {
  const prom = new PrometheusMetrics({ defaultMetrics: false });
  const empty = await prom.exposition();
  for (const [name, spec] of Object.entries(METRICS)) t.match(empty.text, `# TYPE ${METRIC_PREFIX}${name} ${spec.type}`);
  t.notMatch(empty.text, 'process_cpu', 'default metrics off when asked');
  prom.record([
    ...runFigures(FULL, { report: report([object({ action: 'CREATE', result: 'synced' })], { gateway: { writes: 1, reloads: 1 } }) }, 0.3, NOW),
    ...gatewayCallFigures({ gateway: 'default', method: 'POST', outcome: '2xx', seconds: 0.004 }),
  ]);
  const samples = parseExposition((await prom.exposition()).text);
  t.equal(sumOf(samples, `${METRIC_PREFIX}objects_total`, { kind: 'ApiDefinition', action: 'CREATE', result: 'synced' }), 1);
  t.equal(sumOf(samples, `${METRIC_PREFIX}gateway_writes_total`), 1);
  t.equal(sumOf(samples, `${METRIC_PREFIX}last_full_run_success_timestamp_seconds`), 1_800_000_000);
  t.equal(sumOf(samples, `${METRIC_PREFIX}run_duration_seconds_bucket`, { trigger: 'schedule', le: '0.25' }), 0);
  t.equal(sumOf(samples, `${METRIC_PREFIX}run_duration_seconds_bucket`, { trigger: 'schedule', le: '0.5' }), 1);
  t.equal(sumOf(samples, `${METRIC_PREFIX}gateway_request_duration_seconds_bucket`, { le: '0.005' }), 1);
  const withDefaults = await new PrometheusMetrics().exposition();
  t.match(withDefaults.text, 'process_cpu_user_seconds_total', "prom-client's process metrics by default");
});
