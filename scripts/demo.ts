/**
 * `npm run demo`: a self-contained playground to watch before touching a cluster.
 *
 * It starts, all on 127.0.0.1, the loopback Kubernetes API server and Tyk Gateway fakes from
 * test/fakes, the real service (createService: our KubeClient from the fake's kubeconfig, our
 * TykGatewayClient, the in-process store — no Redis) behind the real fastify app on a free
 * port, then walks through eight steps, printing for each the kubectl/curl a user would type
 * against a real setup and a one-line result. The cluster is changed with
 * @kubernetes/client-node over HTTP (as kubectl does), triggers go through real HTTP (fetch:
 * watch events, an audit event, /resync), and the scheduled run is the same function node-cron
 * calls.
 *
 * Every step checks what it claims: the demo doubles as a smoke test. A failed expectation
 * prints `demo: FAILED at step N (...)` with the reason on stderr and exits 1; so does taking
 * longer than DEMO_TIMEOUT_MS (default 30 s). No colors. LOG_LEVEL=info (or debug) also
 * prints the service's own JSON log lines on stderr.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import type { ObjectReport, RunReport } from '../lib/engine/run.js';
import type { KubeObject } from '../lib/kube/types.js';
import { loadConfig } from '../lib/platform/config.js';
import { createLogger, silentLogger } from '../lib/platform/log.js';
import { buildApp } from '../lib/server.js';
import { createService, type Service } from '../lib/service.js';
import { scheduledRun } from '../lib/triggers/schedule.js';
import { type FakeKubeApiServer, startFakeKubeApiServer } from '../test/fakes/kube-apiserver.js';
import { type FakeTykGateway, startFakeTykGateway } from '../test/fakes/tyk-gateway.js';

const NS = 'default';
const API = 'httpbin';
const POLICY = 'httpbin-readers';
const API_FINALIZER = 'finalizers.tyk.io/apidefinition';
const POLICY_FINALIZER = 'finalizers.tyk.io/securitypolicy';
const OAS_API = 'petstore';
const OAS_FINALIZER = 'finalizers.tyk.io/tykoasapidefinition';
const TYK = { group: 'tyk.tyk.io', version: 'v1alpha1' };
const idOf = (name: string): string => Buffer.from(`${NS}/${name}`).toString('base64url');
const API_ID = idOf(API); // ZGVmYXVsdC9odHRwYmlu
const POLICY_ID = idOf(POLICY);
const OAS_ID = idOf(OAS_API); // ZGVmYXVsdC9wZXRzdG9yZQ

// ── output ──────────────────────────────────────────────────────────────────────────────────

const say = (line = ''): void => void process.stdout.write(`${line}\n`);
const cmd = (line: string): void => say(`  $ ${line}`);
const more = (line: string): void => say(`      ${line}`);
const note = (line: string): void => say(`    ${line}`);
const result = (line: string): void => say(`  → ${line}`);
const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

class Expectation extends Error {}

function expect(condition: unknown, what: string): asserts condition {
  if (!condition) throw new Expectation(what);
}

// ── the playground ──────────────────────────────────────────────────────────────────────────

interface Playground {
  kube: FakeKubeApiServer;
  tyk: FakeTykGateway;
  svc: Service;
  /** the service's base URL */
  url: string;
  webhookToken: string;
  resyncToken: string;
  /** the cluster, as kubectl changes it */
  crd: CustomObjectsApi;
  core: CoreV1Api;
}

const cleanups: (() => Promise<unknown>)[] = [];

async function start(): Promise<Playground> {
  const [kube, tyk] = await Promise.all([startFakeKubeApiServer(), startFakeTykGateway()]);
  cleanups.push(
    () => kube.close(),
    () => tyk.close(),
  );
  const dir = await mkdtemp(join(tmpdir(), 'gr-demo-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  const kubeconfig = await kube.writeKubeconfig(dir);
  const webhookToken = randomBytes(24).toString('hex');
  const resyncToken = randomBytes(24).toString('hex');
  // Only what `npm start` would be given; nothing from this shell (no REDIS_URL, no KUBECONFIG).
  const env: Record<string, string> = {
    KUBECONFIG: kubeconfig,
    TYK_URL: tyk.url,
    TYK_AUTH: tyk.secret,
    WEBHOOK_TOKEN: webhookToken,
    RESYNC_TOKEN: resyncToken,
    // the demo shows each delivery's report (the default answers 202 and runs after)
    WEBHOOK_ANSWER: 'report',
    HOST: '127.0.0.1',
    PORT: '0',
  };
  const config = loadConfig(env);
  const level = process.env.LOG_LEVEL;
  const log = level && level !== 'silent' ? createLogger(level, process.stderr) : silentLogger;
  // The settle loop's first read-back comes sooner than in production (the fake reloads in ms).
  const svc = createService(config, env, { log, settings: { settle: { budgetMs: 5_000, initialDelayMs: 20, maxDelayMs: 200, reloadEveryMs: 1_000 } } });
  cleanups.push(() => svc.close());
  const app = buildApp(svc);
  cleanups.push(() => app.close());
  await app.listen({ host: config.host, port: config.port });
  const { port } = app.server.address() as AddressInfo;
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  return { kube, tyk, svc, url: `http://127.0.0.1:${port}`, webhookToken, resyncToken, crd: kc.makeApiClient(CustomObjectsApi), core: kc.makeApiClient(CoreV1Api) };
}

// ── what a user does ───────────────────────────────────────────────────────────────────────

async function http<T>(p: Playground, method: 'GET' | 'POST', path: string, token?: string, body?: string): Promise<{ status: number; body: T }> {
  const headers: Record<string, string> = {};
  if (token !== undefined) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${p.url}${path}`, { method, headers, ...(body !== undefined ? { body } : {}) });
  const text = await res.text();
  return { status: res.status, body: (text === '' ? undefined : JSON.parse(text)) as T };
}

/** What the reconciler itself made the gateway do, over every run of the demo. */
const made = { runs: 0, writes: 0, reloads: 0 };

function counted(report: RunReport): RunReport {
  made.runs++;
  // a dry run's writes and reloads are what its plan would cost: none made
  if (report.dryRun) return report;
  made.writes += report.gateway.writes;
  made.reloads += report.gateway.reloads;
  return report;
}

/** One scheduled run: the function node-cron (or EventBridge) calls. */
async function scheduled(p: Playground): Promise<RunReport> {
  return counted(await scheduledRun(p.svc));
}

/** POST /webhooks/watch with one watch event per line, as the kubectl forwarder sends them. */
async function forward(p: Playground, events: { type: string; object: KubeObject }[]): Promise<RunReport> {
  const res = await http<{ accepted: number; report: RunReport | null }>(p, 'POST', '/webhooks/watch', p.webhookToken, events.map((e) => JSON.stringify(e)).join('\n'));
  expect(res.status === 200, `POST /webhooks/watch answered ${res.status}: ${JSON.stringify(res.body)}`);
  expect(res.body.accepted === events.length, `the webhook accepted ${res.body.accepted} of ${events.length} events`);
  expect(res.body.report, 'the webhook started no run');
  return counted(res.body.report);
}

/** POST /webhooks/audit with an EventList, as the API server's audit webhook sends it. */
async function auditWebhook(p: Playground, eventList: unknown): Promise<RunReport> {
  const res = await http<{ accepted: number; report: RunReport | null }>(p, 'POST', '/webhooks/audit', p.webhookToken, JSON.stringify(eventList));
  expect(res.status === 200, `POST /webhooks/audit answered ${res.status}: ${JSON.stringify(res.body)}`);
  expect(res.body.report, `the audit webhook started no run: ${JSON.stringify(res.body)}`);
  return counted(res.body.report);
}

async function resync(p: Playground, query: string): Promise<RunReport> {
  const res = await http<RunReport>(p, 'POST', `/resync${query}`, p.resyncToken);
  expect(res.status === 200, `POST /resync answered ${res.status}: ${JSON.stringify(res.body)}`);
  return counted(res.body);
}

const plurals: Record<string, string> = { ApiDefinition: 'apidefinitions', SecurityPolicy: 'securitypolicies', TykOasApiDefinition: 'tykoasapidefinitions' };

async function kubectlCreate(p: Playground, obj: KubeObject): Promise<KubeObject> {
  return (await p.crd.createNamespacedCustomObject({ ...TYK, plural: plurals[obj.kind]!, namespace: NS, body: obj })) as KubeObject;
}

/** Read-modify-write of the spec with its resourceVersion, as `kubectl edit` does. */
async function kubectlEdit(p: Playground, kind: string, name: string, change: (spec: Record<string, unknown>) => void): Promise<KubeObject> {
  const plural = plurals[kind]!;
  const current = (await p.crd.getNamespacedCustomObject({ ...TYK, plural, namespace: NS, name })) as KubeObject;
  const spec = structuredClone(current.spec ?? {});
  change(spec);
  return (await p.crd.replaceNamespacedCustomObject({ ...TYK, plural, namespace: NS, name, body: { ...current, spec } })) as KubeObject;
}

async function kubectlDelete(p: Playground, kind: string, name: string): Promise<KubeObject | undefined> {
  await p.crd.deleteNamespacedCustomObject({ ...TYK, plural: plurals[kind]!, namespace: NS, name });
  return inCluster(p, kind, name);
}

/** `kubectl create configmap <name> --from-file=<key>`, or with `--dry-run=client -o yaml | kubectl apply -f -` when it exists. */
async function kubectlConfigMap(p: Playground, name: string, key: string, text: string): Promise<void> {
  const body = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: NS }, data: { [key]: text } };
  const current = p.kube.getObject('configmaps', NS, name) as KubeObject | undefined;
  if (current === undefined) await p.core.createNamespacedConfigMap({ namespace: NS, body });
  else await p.core.replaceNamespacedConfigMap({ name, namespace: NS, body: { ...body, metadata: { ...body.metadata, resourceVersion: current.metadata.resourceVersion } } });
}

function inCluster(p: Playground, kind: string, name: string): KubeObject | undefined {
  return p.kube.getObject(plurals[kind]!, NS, name) as KubeObject | undefined;
}

/** The gateway's admin API, as curl would call it. */
async function tykAdmin(p: Playground, method: 'GET' | 'PUT', path: string, body?: unknown): Promise<unknown> {
  const res = await fetch(`${p.tyk.url}${path}`, {
    method,
    headers: { 'x-tyk-authorization': p.tyk.secret, 'content-type': 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  expect(res.ok, `the gateway answered ${method} ${path} with ${res.status}: ${text}`);
  return JSON.parse(text);
}

// ── what to look at ─────────────────────────────────────────────────────────────────────────

interface GatewayApi {
  api_id?: string;
  proxy?: { target_url?: string; listen_path?: string };
}

function onGateway(p: Playground, id = API_ID): GatewayApi | undefined {
  return p.tyk.loaded('api').get(id) as GatewayApi | undefined;
}

function entry(report: RunReport, kind: string, name: string): ObjectReport {
  const o = report.objects.find((x) => x.kind === kind && x.namespace === NS && x.name === name);
  expect(o, `the run's report has no entry for ${kind} ${NS}/${name}: ${JSON.stringify(report.objects)}`);
  return o;
}

function expectSynced(o: ObjectReport, reason: string): void {
  expect(o.result === 'synced', `${o.kind} ${o.name}: result ${o.result}${o.error ? ` (${o.error})` : ''}, expected synced`);
  expect(o.reason === reason, `${o.kind} ${o.name}: reason "${o.reason}", expected "${reason}"`);
}

function expectCost(report: RunReport, writes: number, reloads: number): void {
  const { gateway } = report;
  expect(gateway.writes === writes && gateway.reloads === reloads, `the run made ${plural(gateway.writes, 'write')} and ${plural(gateway.reloads, 'reload')}, expected ${writes} and ${reloads}`);
}

function cost(report: RunReport): string {
  return `${plural(report.gateway.writes, 'write')}, ${plural(report.gateway.reloads, 'reload')}, ${report.durationMs} ms`;
}

function transaction(obj: KubeObject | undefined): string | undefined {
  return (obj?.status?.latestTransaction as { status?: string } | undefined)?.status;
}

function names(list: unknown): string {
  return Array.isArray(list) ? list.map((r: { name?: string }) => r.name).join(', ') : '';
}

// ── the steps ───────────────────────────────────────────────────────────────────────────────

const HTTPBIN: KubeObject = {
  apiVersion: 'tyk.tyk.io/v1alpha1',
  kind: 'ApiDefinition',
  metadata: { name: API, namespace: NS },
  spec: { name: API, use_keyless: true, protocol: 'http', active: true, proxy: { target_url: 'http://httpbin.org', listen_path: '/httpbin', strip_listen_path: true } },
};

const READERS: KubeObject = {
  apiVersion: 'tyk.tyk.io/v1alpha1',
  kind: 'SecurityPolicy',
  metadata: { name: POLICY, namespace: NS },
  spec: { name: 'httpbin readers', state: 'active', active: true, rate: 100, per: 60, access_rights_array: [{ name: API, namespace: NS, versions: ['Default'] }] },
};

const WEBHOOK_CURL = `curl -s -X POST -H "Authorization: Bearer $WEBHOOK_TOKEN" -H 'content-type: application/json' --data "$EVENT" localhost:8080/webhooks/watch`;

async function stepCreate(p: Playground): Promise<void> {
  cmd(`kubectl apply -f httpbin.yaml          # ApiDefinition ${NS}/${API}: /httpbin → http://httpbin.org`);
  cmd(`${WEBHOOK_CURL}   # EVENT={"type":"ADDED","object":{...}}`);
  const created = await kubectlCreate(p, HTTPBIN);
  const report = await forward(p, [{ type: 'ADDED', object: created }]);
  expectSynced(entry(report, 'ApiDefinition', API), 'created in cluster');
  expectCost(report, 1, 1);
  const api = onGateway(p);
  expect(api, `the gateway has no API ${API_ID}`);
  expect(api.proxy?.target_url === 'http://httpbin.org' && api.proxy.listen_path === '/httpbin', `the gateway's API has ${JSON.stringify(api.proxy)}`);
  const obj = inCluster(p, 'ApiDefinition', API);
  expect(obj, 'the ApiDefinition is gone from the cluster');
  expect(obj.metadata.finalizers?.includes(API_FINALIZER), `no finalizer ${API_FINALIZER} on the ApiDefinition: ${JSON.stringify(obj?.metadata.finalizers)}`);
  expect(obj.status?.api_id === API_ID, `status.api_id is ${String(obj.status?.api_id)}, expected ${API_ID}`);
  expect(transaction(obj) === 'Successful', `status.latestTransaction.status is ${transaction(obj)}`);
  result(`created: the gateway serves /httpbin as API ${API_ID} (base64url of "${NS}/${API}"); finalizer ${API_FINALIZER} added; status.api_id set, latestTransaction Successful (${cost(report)}).`);
}

async function stepEdit(p: Playground): Promise<void> {
  cmd(`kubectl patch tykapis ${API} --type merge -p '{"spec":{"proxy":{"target_url":"http://httpbin.org/anything"}}}'`);
  cmd(`${WEBHOOK_CURL}   # EVENT={"type":"MODIFIED",...}`);
  const edited = await kubectlEdit(p, 'ApiDefinition', API, (spec) => {
    (spec.proxy as Record<string, unknown>).target_url = 'http://httpbin.org/anything';
  });
  const writesBefore = p.tyk.writes();
  const reloadsBefore = p.tyk.reloads.requested;
  const report = await forward(p, [{ type: 'MODIFIED', object: edited }]);
  expectSynced(entry(report, 'ApiDefinition', API), 'spec changed');
  expectCost(report, 1, 1);
  expect(p.tyk.writes() - writesBefore === 1 && p.tyk.reloads.requested - reloadsBefore === 1, 'the gateway itself did not see exactly one write and one reload');
  expect(onGateway(p)?.proxy?.target_url === 'http://httpbin.org/anything', `the gateway still proxies to ${onGateway(p)?.proxy?.target_url}`);
  result(`spec changed: 1 write (POST /tyk/apis, an upsert of ${API_ID}), 1 reload; the gateway now proxies to http://httpbin.org/anything (${report.durationMs} ms).`);
}

async function stepDrift(p: Playground): Promise<void> {
  const path = `/tyk/apis/${API_ID}`;
  cmd(`curl -s -H "x-tyk-authorization: $TYK_AUTH" $TYK_URL${path} | jq '.proxy.target_url="http://evil.example"' \\`);
  more(`| curl -s -X PUT -H "x-tyk-authorization: $TYK_AUTH" --data @- $TYK_URL${path}`);
  cmd(`curl -s -H "x-tyk-authorization: $TYK_AUTH" $TYK_URL/tyk/reload/group     # someone edits the gateway behind our back`);
  const current = (await tykAdmin(p, 'GET', path)) as { proxy: Record<string, unknown> };
  await tykAdmin(p, 'PUT', path, { ...current, proxy: { ...current.proxy, target_url: 'http://evil.example' } });
  await tykAdmin(p, 'GET', '/tyk/reload/group');
  await p.tyk.waitForReloads();
  expect(onGateway(p)?.proxy?.target_url === 'http://evil.example', 'the edit behind our back did not take on the gateway');
  note(`the gateway now proxies /httpbin to http://evil.example; nothing changed in the cluster, so no event comes.`);
  note(`the schedule (RESYNC_SCHEDULE, every 5 minutes) runs a full sync; here it runs now.`);
  const report = await scheduled(p);
  const o = entry(report, 'ApiDefinition', API);
  expectSynced(o, 'drifted on gateway');
  expectCost(report, 1, 1);
  expect(onGateway(p)?.proxy?.target_url === 'http://httpbin.org/anything', `after the scheduled run the gateway proxies to ${onGateway(p)?.proxy?.target_url}`);
  result(`drifted on gateway, restored by the scheduled run: 1 write, 1 reload; back to http://httpbin.org/anything (${report.durationMs} ms).`);
}

async function stepRestart(p: Playground): Promise<void> {
  cmd(`kubectl -n tyk rollout restart deployment/tyk-gateway    # a gateway without persistent storage`);
  p.tyk.restart();
  expect(p.tyk.loaded('api').size === 0, 'the restarted gateway still has APIs');
  note(`the gateway came back empty: 0 APIs loaded, GET /tyk/apis/${API_ID} answers 404. No event comes; the next scheduled run:`);
  const report = await scheduled(p);
  expectSynced(entry(report, 'ApiDefinition', API), 'missing on gateway');
  expectCost(report, 1, 1);
  expect(onGateway(p)?.proxy?.target_url === 'http://httpbin.org/anything', `after the restart the gateway has ${JSON.stringify(onGateway(p)?.proxy)}`);
  result(`missing on gateway, restored by the next run: 1 write, 1 reload; ${plural(p.tyk.loaded('api').size, 'API')} loaded again (${report.durationMs} ms).`);
}

async function stepPolicy(p: Playground): Promise<void> {
  cmd(`kubectl apply -f httpbin-readers.yaml  # SecurityPolicy ${NS}/${POLICY}: 100 requests per 60 s on ${API}`);
  cmd(`${WEBHOOK_CURL}   # EVENT={"type":"ADDED","object":{...}}`);
  const created = await kubectlCreate(p, READERS);
  const report = await forward(p, [{ type: 'ADDED', object: created }]);
  expectSynced(entry(report, 'SecurityPolicy', POLICY), 'created in cluster');
  expectCost(report, 1, 1);
  const onTyk = p.tyk.loaded('policy').get(POLICY_ID) as { rate?: number; access_rights?: Record<string, unknown> } | undefined;
  expect(onTyk, `the gateway has no policy ${POLICY_ID}`);
  expect(onTyk.access_rights?.[API_ID], `the gateway's policy grants ${JSON.stringify(Object.keys(onTyk.access_rights ?? {}))}, expected ${API_ID}`);
  const pol = inCluster(p, 'SecurityPolicy', POLICY);
  const api = inCluster(p, 'ApiDefinition', API);
  expect(pol, 'the SecurityPolicy is gone from the cluster');
  expect(pol.metadata.finalizers?.includes(POLICY_FINALIZER), `no finalizer ${POLICY_FINALIZER} on the SecurityPolicy`);
  expect(pol.status?.pol_id === POLICY_ID, `the policy's status.pol_id is ${String(pol.status?.pol_id)}`);
  expect(names(pol.status?.linked_apis) === API, `the policy's status.linked_apis is ${JSON.stringify(pol.status?.linked_apis)}`);
  expect(names(api?.status?.linked_by_policies) === POLICY, `the API's status.linked_by_policies is ${JSON.stringify(api?.status?.linked_by_policies)}`);
  result(`synced: policy ${POLICY_ID} grants API ${API_ID}; ${POLICY} status.linked_apis [${API}], ${API} status.linked_by_policies [${POLICY}] (${cost(report)}).`);
}

async function stepDryRun(p: Playground): Promise<void> {
  cmd(`kubectl patch tykpolicies ${POLICY} --type merge -p '{"spec":{"rate":50}}'`);
  cmd(`curl -s -X POST -H "Authorization: Bearer $RESYNC_TOKEN" 'localhost:8080/resync?dryRun=true' | jq '.objects[] | {kind, name, action, reason, result, changes}'`);
  await kubectlEdit(p, 'SecurityPolicy', POLICY, (spec) => {
    spec.rate = 50;
  });
  const writesBefore = p.tyk.writes();
  const patchesBefore = p.kube.count('PATCH');
  const report = await resync(p, '?dryRun=true');
  expect(report.dryRun, 'the report is not a dry run');
  for (const o of report.objects) note(`${o.kind} ${o.namespace}/${o.name}: ${o.action} (${o.reason}) → ${o.result}`);
  const pol = entry(report, 'SecurityPolicy', POLICY);
  expect(pol.action === 'UPDATE' && pol.result === 'planned', `the dry run planned ${pol.action} → ${pol.result} for the policy, expected UPDATE → planned`);
  expect(entry(report, 'ApiDefinition', API).action === 'NOOP', 'the dry run would touch the API');
  const rate = (p.tyk.loaded('policy').get(POLICY_ID) as { rate?: number } | undefined)?.rate;
  for (const c of pol.changes ?? []) note(`  ${c.path}: ${JSON.stringify(c.before)} → ${JSON.stringify(c.after)}`);
  expect(pol.changes?.some((c) => c.path === 'rate' && c.before === 100 && c.after === 50) === true, `the dry run's changes for the policy are ${JSON.stringify(pol.changes)}, expected rate 100 → 50`);
  expect(p.tyk.writes() === writesBefore && p.kube.count('PATCH') === patchesBefore, 'the dry run wrote something');
  expect(rate === 100, `the gateway's policy rate is ${rate}, expected it untouched at 100`);
  result(
    `dry run: 1 update planned, 0 writes made (applying it would cost ${plural(report.gateway.writes, 'write')} and ${plural(report.gateway.reloads, 'reload')}), 0 status patches; the gateway's policy still allows rate 100 (drop dryRun=true to apply 50).`,
  );
}

async function stepDelete(p: Playground): Promise<void> {
  cmd(`kubectl delete tykpolicies ${POLICY} --wait=false`);
  cmd(`kubectl delete tykapis ${API} --wait=false`);
  cmd(`${WEBHOOK_CURL}   # two MODIFIED events: deletionTimestamp set, finalizers hold the objects`);
  const pol = await kubectlDelete(p, 'SecurityPolicy', POLICY);
  const api = await kubectlDelete(p, 'ApiDefinition', API);
  expect(pol?.metadata.deletionTimestamp && api?.metadata.deletionTimestamp, 'the finalizers did not hold the objects for us');
  note(`both are Terminating: our finalizers keep them until the gateway lets go.`);
  const report = await forward(p, [
    { type: 'MODIFIED', object: pol },
    { type: 'MODIFIED', object: api },
  ]);
  for (const [kind, name] of [
    ['SecurityPolicy', POLICY],
    ['ApiDefinition', API],
  ] as const) {
    const o = entry(report, kind, name);
    expect(o.action === 'DELETE' && o.result === 'deleted', `${kind} ${name}: ${o.action} → ${o.result}${o.error ? ` (${o.error})` : ''}, expected DELETE → deleted`);
  }
  expect(report.gateway.writes === 2, `the run made ${plural(report.gateway.writes, 'write')}, expected 2`);
  expect(onGateway(p) === undefined && !p.tyk.loaded('policy').has(POLICY_ID), 'the gateway still has the API or the policy');
  expect(!inCluster(p, 'SecurityPolicy', POLICY) && !inCluster(p, 'ApiDefinition', API), 'the objects are still in the cluster');
  result(
    `deleted: API ${API_ID} and policy ${POLICY_ID} gone from the gateway (${p.tyk.loaded('api').size} APIs, ${p.tyk.loaded('policy').size} policies left); finalizers removed, both objects gone from the cluster (${cost(report)}).`,
  );
}

/** An OpenAPI 3 document with the `x-tyk-api-gateway` extension a Tyk OAS API needs, as oas.json holds it. */
function petstoreOas(listenPath: string): string {
  const doc = {
    openapi: '3.0.3',
    info: { title: 'Petstore', version: '1.0.0' },
    paths: {},
    components: {},
    'x-tyk-api-gateway': {
      info: { name: OAS_API, state: { active: true } },
      upstream: { url: 'http://httpbin.org' },
      server: { listenPath: { value: listenPath, strip: true } },
    },
  };
  return JSON.stringify(doc, null, 2);
}

const PETSTORE: KubeObject = {
  apiVersion: 'tyk.tyk.io/v1alpha1',
  kind: 'TykOasApiDefinition',
  metadata: { name: OAS_API, namespace: NS },
  spec: { tykOAS: { configmapRef: { name: OAS_API, keyName: 'oas.json' } } },
};

/** The audit EventList the API server sends for a ConfigMap write (Metadata level: no data in it). */
function configMapAuditEvent(name: string): unknown {
  return {
    kind: 'EventList',
    apiVersion: 'audit.k8s.io/v1',
    items: [
      {
        level: 'Metadata',
        auditID: randomBytes(8).toString('hex'),
        stage: 'ResponseComplete',
        verb: 'update',
        requestURI: `/api/v1/namespaces/${NS}/configmaps/${name}`,
        user: { username: 'jane@example.com', groups: ['system:authenticated'] },
        objectRef: { resource: 'configmaps', namespace: NS, name, apiVersion: 'v1' },
        responseStatus: { metadata: {}, code: 200 },
      },
    ],
  };
}

interface GatewayOas {
  'x-tyk-api-gateway'?: { info?: { id?: string }; server?: { listenPath?: { value?: string } } };
}

async function stepOas(p: Playground): Promise<void> {
  const path = `/tyk/apis/oas/${OAS_ID}`;
  cmd(`kubectl create configmap ${OAS_API} --from-file=oas.json   # an OpenAPI 3 document with x-tyk-api-gateway: /petstore/ → http://httpbin.org`);
  cmd(`kubectl apply -f petstore.yaml         # TykOasApiDefinition ${NS}/${OAS_API}: spec.tykOAS.configmapRef {name: ${OAS_API}, keyName: oas.json}`);
  cmd(`curl -s -X POST -H "Authorization: Bearer $RESYNC_TOKEN" 'localhost:8080/resync?kind=TykOasApiDefinition&namespace=${NS}&name=${OAS_API}'`);
  await kubectlConfigMap(p, OAS_API, 'oas.json', petstoreOas('/petstore/'));
  await kubectlCreate(p, PETSTORE);
  const created = await resync(p, `?kind=TykOasApiDefinition&namespace=${NS}&name=${OAS_API}`);
  expectSynced(entry(created, 'TykOasApiDefinition', OAS_API), 'created in cluster');
  expectCost(created, 1, 1);
  const obj = inCluster(p, 'TykOasApiDefinition', OAS_API);
  expect(obj, 'the TykOasApiDefinition is gone from the cluster');
  expect(obj.metadata.finalizers?.includes(OAS_FINALIZER), `no finalizer ${OAS_FINALIZER} on the TykOasApiDefinition: ${JSON.stringify(obj.metadata.finalizers)}`);
  const st = obj.status ?? {};
  expect(st.id === OAS_ID, `status.id is ${String(st.id)}, expected ${OAS_ID}`);
  expect(transaction(obj) === 'Successful', `status.latestTransaction.status is ${transaction(obj)}`);
  expect(st.listenPath === '/petstore/' && st.targetURL === 'http://httpbin.org' && st.enabled === true, `the status says ${JSON.stringify(st)}`);
  cmd(`kubectl get tykoas ${OAS_API}`);
  more(`LISTENPATH ${String(st.listenPath)}   PROXY.TARGETURL ${String(st.targetURL)}   ENABLED ${String(st.enabled)}   SYNCSTATUS ${transaction(obj)}`);
  cmd(`curl -s -H "x-tyk-authorization: $TYK_AUTH" $TYK_URL${path} | jq -c '."x-tyk-api-gateway" | {id: .info.id, listenPath: .server.listenPath.value}'`);
  const served = (await tykAdmin(p, 'GET', path)) as GatewayOas;
  const ext = served['x-tyk-api-gateway'];
  expect(ext?.info?.id === OAS_ID && ext.server?.listenPath?.value === '/petstore/', `the gateway's OAS API has ${JSON.stringify(ext)}`);
  more(JSON.stringify({ id: ext.info.id, listenPath: ext.server.listenPath.value }));
  result(
    `created: the gateway serves /petstore/ as OAS API ${OAS_ID} (the document names no id, so base64url of "${NS}/${OAS_API}"); finalizer ${OAS_FINALIZER} added; the status has the id and what the document says (${cost(created)}).`,
  );

  cmd(`kubectl create configmap ${OAS_API} --from-file=oas.json --dry-run=client -o yaml | kubectl apply -f -   # the listen path now /pets/`);
  cmd(`curl -s -X POST -H "Authorization: Bearer $WEBHOOK_TOKEN" -H 'content-type: application/json' --data @event.json localhost:8080/webhooks/audit`);
  more(`# event.json: what the API server's audit webhook sends for that write (deploy/audit/policy.yaml: ConfigMaps at the Metadata level)`);
  await kubectlConfigMap(p, OAS_API, 'oas.json', petstoreOas('/pets/'));
  const edited = await auditWebhook(p, configMapAuditEvent(OAS_API));
  const ran = edited.objects.map((o) => `${o.kind} ${o.namespace}/${o.name}`);
  expect(ran.length === 1, `the ConfigMap's event ran ${JSON.stringify(ran)}, expected only TykOasApiDefinition ${NS}/${OAS_API}`);
  expectSynced(entry(edited, 'TykOasApiDefinition', OAS_API), 'spec changed');
  expectCost(edited, 1, 1);
  const now = ((await tykAdmin(p, 'GET', path)) as GatewayOas)['x-tyk-api-gateway']?.server?.listenPath?.value;
  expect(now === '/pets/', `after the ConfigMap edit the gateway's listen path is ${now}`);
  expect(inCluster(p, 'TykOasApiDefinition', OAS_API)?.status?.listenPath === '/pets/', 'status.listenPath did not follow the document');
  result(`ConfigMap edited: its event ran only ${ran[0]}, the one resource whose record uses it: 1 write, 1 reload; the gateway serves /pets/ (${edited.durationMs} ms).`);
}

const STEPS: [string, (p: Playground) => Promise<void>][] = [
  ['Create an ApiDefinition and forward its watch event.', stepCreate],
  ['Edit its spec: a new target_url.', stepEdit],
  ['Edit the API on the gateway behind our back (drift).', stepDrift],
  ['Restart the gateway: it loses every API.', stepRestart],
  ['Create a SecurityPolicy for the API.', stepPolicy],
  ['Ask what a resync would do, without doing it (dry run).', stepDryRun],
  ['Delete the policy and the API.', stepDelete],
  ['Keep a Tyk OAS API in a ConfigMap, then edit the document.', stepOas],
];

// ── main ────────────────────────────────────────────────────────────────────────────────────

async function main(): Promise<number> {
  const started = Date.now();
  let at = 'start-up';
  try {
    say('gateway-reconciler demo: no cluster, gateway or Redis needed.');
    say();
    const p = await start();
    say('Started, all on 127.0.0.1:');
    say(`  Kubernetes API server (fake, Tyk Operator's CRDs)  ${p.kube.url}`);
    say(`  Tyk Gateway (fake, open-source gateway API)        ${p.tyk.url}`);
    say(`  gateway-reconciler (the real service and server)   ${p.url}   records in memory, no Redis`);
    cmd('curl -s localhost:8080/readyz');
    const ready = await http<{ ok?: boolean; checks?: Record<string, { ok: boolean; error?: string }> }>(p, 'GET', '/readyz');
    expect(ready.status === 200, `GET /readyz answered ${ready.status}: ${JSON.stringify(ready.body)}`);
    expect(p.svc.storeKind === 'memory', `the store is ${p.svc.storeKind}, expected the in-process one`);
    result(
      `ready: ${Object.entries(ready.body.checks ?? {})
        .map(([k, v]) => `${k} ${v.ok ? 'ok' : 'FAILED'}`)
        .join(', ')}.`,
    );
    for (const [i, [title, step]] of STEPS.entries()) {
      at = `step ${i + 1} (${title.replace(/\.$/, '')})`;
      say();
      say(`Step ${i + 1}. ${title}`);
      await step(p);
    }
    say();
    say(
      `Done: ${STEPS.length} steps in ${((Date.now() - started) / 1000).toFixed(1)} s. Over ${made.runs} runs gateway-reconciler made ${plural(made.writes, 'gateway write')} and ${plural(made.reloads, 'reload')}: one write per change, nothing for the dry run.`,
    );
    say('Next: the Quick start in README.md points the same service at your cluster and gateway.');
    return 0;
  } catch (err) {
    const reason = err instanceof Expectation ? err.message : err instanceof Error ? (err.stack ?? err.message) : String(err);
    process.stderr.write(`\ndemo: FAILED at ${at}: ${reason}\n`);
    return 1;
  } finally {
    for (const close of cleanups.reverse()) await close().catch(() => undefined);
  }
}

const asked = Number(process.env.DEMO_TIMEOUT_MS);
const timeoutMs = Number.isFinite(asked) && asked > 0 ? asked : 30_000;
const timer = setTimeout(() => {
  process.stderr.write(`\ndemo: FAILED: not finished after ${timeoutMs} ms\n`);
  process.exit(1);
}, timeoutMs);
const code = await main();
clearTimeout(timer);
process.exit(code);
