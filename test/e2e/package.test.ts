/**
 * The Lambda artifacts: `npm run bundle` builds one self-contained bundle per function, each
 * loads in a plain Node process (no tsx, no node_modules lookups it could not satisfy on
 * Lambda) and exports `handler`; the watch bundle answers a real request against the loopback
 * fakes; the webhook bundles stay under a size limit and leave out what they do not run (the
 * AWS SDK is the runtime's, and only the schedule reaches the SQS sender);
 * `osls package` (offline, no AWS credentials) zips exactly one artifact per function in
 * serverless.yml, holding its bundle and nothing else of the repository, and the template holds
 * the shard queue, its dead-letter queue, the shard function's event source and the schedule's
 * permission to send.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import yaml from 'js-yaml';
import t from 'tap';
import { startFakeKubeApiServer } from '../fakes/kube-apiserver.js';
import { startFakeTykDashboard } from '../fakes/tyk-dashboard.js';
import { startFakeTykGateway } from '../fakes/tyk-gateway.js';
import { apiDefinition } from '../fixtures/builders.js';
import { startRedis } from '../harness/redis.js';

const ROOT = resolve(import.meta.dirname, '../..');
const BUILD = join(ROOT, '.build');
const KUBECONFIG = 'deploy/lambda/kubeconfig.yaml';
/** The functions the API server or a sender calls on every change (the admission review included): each within WEBHOOK_LIMIT_KB at start. */
const WEBHOOKS = ['watch', 'audit', 'cloudevents', 'admission'];
/**
 * Code a webhook function loads at start (index.mjs and the chunks it imports statically): at
 * most 400 KB, the cold-start target (bench/coldstart.ts holds the same). Measured: ~370 KB
 * (esbuild 0.28, target node24, minified; ioredis 6, @kubernetes/client-node 2), against 957 KB
 * before lib/platform/http.ts left undici and Lambda's logger left pino, and 1,550 KB without any of the
 * trimming in scripts/bundle.ts.
 */
const WEBHOOK_LIMIT_KB = 400;
/** The functions that run full runs (functions/schedule.ts, functions/shard.ts), over HTTP_CLIENT's transport; the others always keep Node's own. */
const FULL_RUNS = ['schedule', 'shard'];
const TOKEN = 'package-test-token-0123456789';

/**
 * This environment, minus tap's hooks and any AWS credentials. Tap wraps child_process to put
 * its loaders back into a child's NODE_OPTIONS whatever env it is given; `_TAPJS_PROCESSINFO_
 * COVERAGE_=0` is its switch to record no coverage there, so the bundles (which are not our
 * sources) and the scripts run here stay out of the coverage report.
 */
function cleanEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v === undefined || /^(NODE_OPTIONS|NODE_V8_COVERAGE|TAP.*|_TAPJS.*|AWS_(ACCESS_KEY_ID|SECRET_ACCESS_KEY|SESSION_TOKEN|PROFILE))$/.test(k)) continue;
    env[k] = v;
  }
  return { ...env, _TAPJS_PROCESSINFO_COVERAGE_: '0', AWS_SHARED_CREDENTIALS_FILE: '/nonexistent/credentials', AWS_CONFIG_FILE: '/nonexistent/config', ...extra };
}

function run(cmd: string, args: string[], env: Record<string, string>, input?: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done, fail) => {
    const child = spawn(cmd, args, { cwd: ROOT, env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.once('error', fail);
    child.once('close', (code) => done({ code, stdout, stderr }));
    child.stdin.end(input ?? '');
  });
}

/** Runs an ES module given as text in a plain `node` (no tap, no tsx); resolves its stdout's last line as JSON. */
async function node<T>(source: string, env: Record<string, string>): Promise<T> {
  const r = await run(process.execPath, ['--input-type=module'], env, source);
  if (r.code !== 0) throw new Error(`node exited with ${r.code}: ${r.stderr.slice(-3_000)}`);
  return JSON.parse(r.stdout.trim().split('\n').pop() ?? 'null') as T;
}

/** The file names in a zip archive (from its central directory). */
function zipEntries(path: string): string[] {
  const buf = readFileSync(path);
  let eocd = buf.length - 22;
  while (eocd >= 0 && buf.readUInt32LE(eocd) !== 0x06054b50) eocd--;
  if (eocd < 0) throw new Error(`${path} is not a zip archive`);
  const count = buf.readUInt16LE(eocd + 10);
  let p = buf.readUInt32LE(eocd + 16);
  const names: string[] = [];
  for (let i = 0; i < count; i++) {
    if (buf.readUInt32LE(p) !== 0x02014b50) throw new Error(`${path}: bad central directory entry ${i}`);
    const nameLen = buf.readUInt16LE(p + 28);
    const extraLen = buf.readUInt16LE(p + 30);
    const commentLen = buf.readUInt16LE(p + 32);
    names.push(buf.toString('utf8', p + 46, p + 46 + nameLen));
    p += 46 + nameLen + extraLen + commentLen;
  }
  return names;
}

interface Metafile {
  outputs: Record<string, { bytes: number; inputs: Record<string, { bytesInOutput: number }>; imports: { path: string; kind: string; external?: boolean }[] }>;
}

/** What loads when a bundle is imported (its index.mjs and the chunks it imports statically): bytes and inputs. */
function loadedAtStart(name: string): { bytes: number; inputs: string[]; lazyInputs: string[]; bytesOf: (pattern: RegExp) => number } {
  const meta = JSON.parse(readFileSync(join(BUILD, 'meta', `${name}.json`), 'utf8')) as Metafile;
  const eager = new Set<string>();
  const visit = (file: string): void => {
    if (eager.has(file) || !meta.outputs[file]) return;
    eager.add(file);
    for (const i of meta.outputs[file].imports) if (i.kind === 'import-statement' && !i.external) visit(i.path);
  };
  visit(`.build/${name}/index.mjs`);
  let bytes = 0;
  const inputs: string[] = [];
  const lazyInputs: string[] = [];
  const inputBytes = new Map<string, number>();
  for (const [file, out] of Object.entries(meta.outputs)) {
    if (file.endsWith('.map')) continue;
    const used = Object.entries(out.inputs).filter(([, i]) => i.bytesInOutput > 0);
    if (eager.has(file)) {
      bytes += out.bytes;
      inputs.push(...used.map(([p]) => p));
      for (const [p, i] of used) inputBytes.set(p, (inputBytes.get(p) ?? 0) + i.bytesInOutput);
    } else lazyInputs.push(...used.map(([p]) => p));
  }
  const bytesOf = (pattern: RegExp): number => [...inputBytes].reduce((n, [p, b]) => (pattern.test(p) ? n + b : n), 0);
  return { bytes, inputs, lazyInputs, bytesOf };
}

/** functions/*.ts that export a `handler` function, imported from source (an oracle independent of esbuild's scan). */
async function handlerSources(): Promise<string[]> {
  const names: string[] = [];
  for (const f of readdirSync(join(ROOT, 'functions'))
    .filter((f) => f.endsWith('.ts'))
    .sort()) {
    const mod = (await import(pathToFileURL(join(ROOT, 'functions', f)).href)) as Record<string, unknown>;
    if (typeof mod.handler === 'function') names.push(f.replace(/\.ts$/, ''));
  }
  return names;
}

interface Sls {
  functions: Record<string, { handler: string; package?: { patterns?: string[] } }>;
}
const sls = yaml.load(readFileSync(join(ROOT, 'serverless.yml'), 'utf8')) as Sls;
/** serverless.yml function → the bundle its handler names (.build/<bundle>/index.handler) */
const bundleOf = (fn: string): string => {
  const m = /^\.build\/([\w-]+)\/index\.handler$/.exec(sls.functions[fn]?.handler ?? '');
  if (!m) throw new Error(`functions.${fn}.handler is not .build/<name>/index.handler`);
  return m[1] as string;
};

t.test('npm run bundle: one working bundle per function, small where it matters', { timeout: 180_000 }, async (t) => {
  const built = await run('npm', ['run', 'bundle'], cleanEnv());
  t.equal(built.code, 0, `npm run bundle exits 0${built.code === 0 ? '' : `: ${built.stderr.slice(-2_000)}`}`);
  t.match(built.stdout, /loaded at start/, 'prints the size table');

  const expected = await handlerSources();
  t.ok(expected.includes('watch') && expected.includes('schedule'), `functions with a handler: ${expected.join(', ')}`);
  const bundles = readdirSync(BUILD)
    .filter((d) => d !== 'meta')
    .sort();
  t.same(bundles, expected, 'one bundle per functions/*.ts exporting handler, none other');
  t.same([...new Set(Object.keys(sls.functions).map(bundleOf))].sort(), expected, "serverless.yml's handlers use every bundle, and only bundles that exist");

  // each bundle loads in a plain Node process and exports a handler
  const urls = Object.fromEntries(bundles.map((b) => [b, pathToFileURL(join(BUILD, b, 'index.mjs')).href]));
  const loaded = await node<Record<string, { handler: string; exports: string[] }>>(
    `const urls = ${JSON.stringify(urls)}; const out = {};
     for (const [name, url] of Object.entries(urls)) { const m = await import(url); out[name] = { handler: typeof m.handler, exports: Object.keys(m) }; }
     console.log(JSON.stringify(out));`,
    cleanEnv(),
  );
  for (const b of bundles) t.equal(loaded[b]?.handler, 'function', `${b}: index.mjs exports handler (${loaded[b]?.exports.join(', ')})`);

  // sizes, and what stays out
  for (const name of bundles) {
    const { bytes, inputs, lazyInputs, bytesOf } = loadedAtStart(name);
    t.notOk(
      inputs.some((p) => /^(test|bench|scripts)\//.test(p)),
      `${name}: no test, bench or script code`,
    );
    if (name === 'healthz') {
      t.ok(bytes < 2_048, `healthz: ${bytes} bytes, nothing but itself`);
      continue;
    }
    t.notOk(inputs.includes('lib/gateway/tyk-dashboard.ts'), `${name}: the Tyk Dashboard client is not loaded at start`);
    t.ok(lazyInputs.includes('lib/gateway/tyk-dashboard.ts'), `${name}: it is in a chunk loaded on first use`);
    t.notOk(
      inputs.some((p) => /node_modules\/(@theguild\/federation-composition|graphql)\//.test(p) || p === 'lib/kinds/graphs/compose.ts'),
      `${name}: GraphQL composition (graphql, @theguild/federation-composition) is not loaded at start`,
    );
    t.ok(lazyInputs.includes('lib/kinds/graphs/compose.ts'), `${name}: it is in a chunk loaded when a supergraph is built`);
    t.notOk(inputs.includes('lib/kinds/graphs/phase.ts') || inputs.includes('lib/engine/held-finalizers.ts'), `${name}: the SubGraph and SuperGraph step is not loaded at start`);
    t.ok(lazyInputs.includes('lib/kinds/graphs/phase.ts'), `${name}: it is in a chunk loaded when a run has graphs to look at`);
    t.notOk(
      inputs.some((p) => p.includes('@kubernetes/client-node/dist/gen/models/')),
      `${name}: no generated Kubernetes models`,
    );
    t.notOk(
      inputs.some((p) => /node_modules\/(node-fetch|whatwg-url|tr46|ws|tar-fs)\//.test(p)),
      `${name}: no node-fetch, whatwg-url, tr46, ws, tar-fs`,
    );
    if (FULL_RUNS.includes(name)) {
      // HTTP_CLIENT=undici: loaded when the service is built with it, never at start
      t.notOk(
        inputs.some((p) => /node_modules\/undici\//.test(p) || p === 'lib/platform/http-undici.ts'),
        `${name}: no undici at start`,
      );
      t.ok(lazyInputs.includes('lib/platform/http-undici.ts'), `${name}: undici's pooled client is in a chunk loaded with HTTP_CLIENT=undici`);
      t.ok(
        lazyInputs.some((p) => p.endsWith('node_modules/undici/lib/dispatcher/agent.js')),
        `${name}: undici's Agent is in the bundle`,
      );
      t.notOk(
        [...inputs, ...lazyInputs].some((p) => /node_modules\/undici\/(index\.js|lib\/(web\/(websocket|eventsource|cache)|mock|cache|interceptor)\/)/.test(p)),
        `${name}: of undici, only the Agent and its request() (scripts/bundle.ts trimUndici): no entry point, WebSocket, EventSource, caches, mocks or interceptors`,
      );
    } else
      t.notOk(
        inputs.some((p) => /node_modules\/undici\//.test(p) || p === 'lib/platform/http-undici.ts'),
        `${name}: no undici (lib/platform/http-node.ts is node:http and node:https; @kubernetes/client-node's fetch dispatchers are left out)`,
      );
    t.notOk(
      inputs.some((p) => /node_modules\/(pino|sonic-boom|thread-stream|pino-std-serializers|@pinojs\/redact)\//.test(p)),
      `${name}: no pino (Lambda logs through lib/platform/log-lines.ts)`,
    );
    t.ok(inputs.includes('lib/platform/log-lines.ts'), `${name}: lib/platform/log-lines.ts is its logger`);
    t.notOk(
      inputs.some((p) => /node_modules\/(socks|socks-proxy-agent|ip-address|smart-buffer|hpagent|jsonpath-plus|openid-client|oauth4webapi|debug)\//.test(p)),
      `${name}: no proxy agents, no ioredis debug, and the legacy auth providers' libraries not at start`,
    );
    t.notOk(
      inputs.some((p) => /node_modules\/ioredis\/built\/(cluster|connectors\/SentinelConnector)\//.test(p)),
      `${name}: no Redis Cluster or Sentinel client (one Redis)`,
    );
    const cron = bytesOf(/node_modules\/node-cron\//);
    t.ok(cron < 8 * 1024, `${name}: of node-cron, only the expression validator lib/platform/config.ts uses (${cron} bytes), not the scheduler`);
    t.notOk(
      inputs.some((p) => /^lib\/(main|server)\.ts$|^lib\/metrics\/prometheus\.ts$/.test(p)),
      `${name}: none of the self-hosted server's modules`,
    );
    for (const provider of ['oidc', 'gcp', 'azure']) {
      t.ok(
        lazyInputs.some((p) => p.endsWith(`@kubernetes/client-node/dist/${provider}_auth.js`)),
        `${name}: the ${provider} auth provider is in a chunk loaded on first use`,
      );
    }
    t.notOk(
      inputs.some((p) => p.includes('node_modules/fastify/')),
      `${name}: no fastify (the server is not a function)`,
    );
    t.notOk(
      inputs.some((p) => p.includes('node_modules/prom-client/')),
      `${name}: no prom-client (Lambda's metrics are EMF lines)`,
    );
    t.ok([...inputs, ...lazyInputs].includes('lib/metrics/emf.ts'), `${name}: the EMF writer is in the bundle`);
    // the AWS SDK comes from the Lambda runtime, and only the schedule (the shards' sender) reaches it, on demand
    t.notOk(
      [...inputs, ...lazyInputs].some((p) => p.includes('node_modules/@aws-sdk/') || p.includes('node_modules/@smithy/')),
      `${name}: no AWS SDK code in the bundle (external)`,
    );
    t.notOk(inputs.includes('lib/triggers/sqs.ts'), `${name}: the SQS sender is not loaded at start`);
    if (name === 'schedule') t.ok(lazyInputs.includes('lib/triggers/sqs.ts'), 'schedule: the SQS sender is in a chunk loaded when shards are sent');
    else t.notOk(lazyInputs.includes('lib/triggers/sqs.ts'), `${name}: cannot reach the SQS sender`);
    t.notOk(inputs.includes('lib/scale/coordinate.ts'), `${name}: the tick's coordinator is not loaded at start`);
    if (WEBHOOKS.includes(name)) t.ok(bytes <= WEBHOOK_LIMIT_KB * 1024, `${name}: ${Math.round(bytes / 1024)} KB loaded at start (limit ${WEBHOOK_LIMIT_KB} KB)`);
  }

  // the watch bundle, as Lambda would run it, against the fakes: KubeConfig from a file, a
  // token, Redis, the gateway (the trimmed @kubernetes/client-node does its part)
  const [kube, tyk, dashboard, redis] = await Promise.all([startFakeKubeApiServer(), startFakeTykGateway(), startFakeTykDashboard(), startRedis()]);
  const dir = await mkdtemp(join(tmpdir(), 'gr-package-'));
  t.teardown(async () => {
    await Promise.all([kube.close(), tyk.close(), dashboard.close(), redis.owned ? redis.stop() : Promise.resolve()]);
    await rm(dir, { recursive: true, force: true });
  });
  kube.put(apiDefinition('bundled').build());
  const body = JSON.stringify({ type: 'ADDED', object: { apiVersion: 'tyk.tyk.io/v1alpha1', kind: 'ApiDefinition', metadata: { name: 'bundled', namespace: 'default' } } });
  const event = {
    version: '2.0',
    routeKey: 'POST /webhooks/watch',
    rawPath: '/webhooks/watch',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    requestContext: { http: { method: 'POST', sourceIp: '10.0.0.1' } },
    body,
    isBase64Encoded: false,
  };
  const env = cleanEnv({ KUBECONFIG: await kube.writeKubeconfig(dir), TYK_URL: tyk.url, TYK_AUTH: tyk.secret, WEBHOOK_TOKEN: TOKEN, RESYNC_TOKEN: TOKEN, REDIS_URL: redis.url, LOG_LEVEL: 'silent' });
  const answer = await node<{ statusCode: number; body: string }>(
    `const { handler } = await import(${JSON.stringify(urls.watch)});
     const r = await handler(${JSON.stringify(event)});
     process.stdout.write(JSON.stringify(r) + '\\n', () => process.exit(0));`,
    env,
  );
  t.equal(answer.statusCode, 200, `the watch bundle answers 200: ${answer.body.slice(0, 300)}`);
  t.match(JSON.parse(answer.body), { accepted: 1, report: { objects: [{ name: 'bundled', action: 'CREATE', result: 'synced' }] } });
  t.ok(tyk.loaded('api').has('ZGVmYXVsdC9idW5kbGVk'), 'the API is on the gateway');
  t.equal((kube.getObject('apidefinitions', 'default', 'bundled')?.status as { api_id?: string } | undefined)?.api_id, 'ZGVmYXVsdC9idW5kbGVk', 'and its status says so');

  // the schedule bundle: a full run over undici's pooled client (HTTP_CLIENT=undici), as bundled (trimUndici), from its chunk
  kube.put(apiDefinition('scheduled').build());
  const scheduled = await node<{ counts: Record<string, number>; errors: number }>(
    `const { handler } = await import(${JSON.stringify(urls.schedule)});
     const r = await handler({ time: '2026-01-01T00:00:00Z' }, { getRemainingTimeInMillis: () => 60_000 });
     process.stdout.write(JSON.stringify(r) + '\\n', () => process.exit(0));`,
    { ...env, HTTP_CLIENT: 'undici' },
  );
  t.match(scheduled, { counts: { synced: 1, unchanged: 1 }, errors: 0 }, `the schedule bundle's full run: ${JSON.stringify(scheduled)}`);
  t.ok(tyk.loaded('api').has('ZGVmYXVsdC9zY2hlZHVsZWQ'), 'its API is on the gateway');

  // pro mode: the Tyk Dashboard client comes from its chunk, loaded on first use
  kube.put(apiDefinition('on-dashboard').build());
  const proEvent = { ...event, body: body.replaceAll('"bundled"', '"on-dashboard"') };
  const pro = await node<{ statusCode: number; body: string }>(
    `const { handler } = await import(${JSON.stringify(urls.watch)});
     const r = await handler(${JSON.stringify(proEvent)});
     process.stdout.write(JSON.stringify(r) + '\\n', () => process.exit(0));`,
    { ...env, TYK_MODE: 'pro', TYK_URL: dashboard.url, TYK_AUTH: dashboard.secret, TYK_ORG: dashboard.orgId },
  );
  t.match(
    JSON.parse(pro.body),
    { report: { objects: [{ name: 'on-dashboard', action: 'CREATE', result: 'synced' }] } },
    `pro mode through the lazily loaded Dashboard client: ${pro.body.slice(0, 300)}`,
  );
  t.ok(
    [...dashboard.apis().values()].some((a) => JSON.stringify(a).includes('ZGVmYXVsdC9vbi1kYXNoYm9hcmQ')),
    'the API is on the Dashboard',
  );

  // a kubeconfig naming a legacy auth provider: its plugin comes from its chunk, loaded on first
  // use, and authenticates (an OIDC id-token still valid, a GCP access-token not expired: no refresh)
  const expires = Math.floor(Date.now() / 1000) + 3_600;
  const b64url = (o: object): string => Buffer.from(JSON.stringify(o)).toString('base64url');
  const idToken = `${b64url({ alg: 'none', typ: 'JWT' })}.${b64url({ iss: 'https://issuer.example', sub: 'reconciler', exp: expires })}.sig`;
  const authKube = await startFakeKubeApiServer({ token: idToken });
  t.teardown(() => authKube.close());
  for (const [provider, config] of [
    ['oidc', { 'client-id': 'gateway-reconciler', 'id-token': idToken, 'idp-issuer-url': 'https://issuer.example' }],
    ['gcp', { 'access-token': idToken, expiry: new Date(expires * 1000).toISOString() }],
  ] as const) {
    const name = `via-${provider}`;
    authKube.put(apiDefinition(name).build());
    const kubeconfig = join(dir, `kubeconfig-${provider}`);
    const withProvider = authKube.kubeconfigYaml().replace(/^ {4}token: .*$/m, `    auth-provider:\n      name: ${provider}\n      config: ${JSON.stringify(config)}`);
    t.notMatch(withProvider, /^ {4}token:/m, `${provider}: the kubeconfig has no token of its own`);
    await writeFile(kubeconfig, withProvider);
    const viaProvider = await node<{ statusCode: number; body: string }>(
      `const { handler } = await import(${JSON.stringify(urls.watch)});
       const r = await handler(${JSON.stringify({ ...event, body: body.replaceAll('"bundled"', JSON.stringify(name)) })});
       process.stdout.write(JSON.stringify(r) + '\\n', () => process.exit(0));`,
      { ...env, KUBECONFIG: kubeconfig },
    );
    t.match(
      JSON.parse(viaProvider.body),
      { report: { objects: [{ name, action: 'CREATE', result: 'synced' }] } },
      `a kubeconfig with the ${provider} auth provider: its lazily loaded plugin authenticates (${viaProvider.body.slice(0, 200)})`,
    );
  }

  // without the kubeconfig (a package deployed before deploy/lambda/kubeconfig.yaml was made), a clear 500
  const missing = await node<{ statusCode: number; body: string }>(
    `const { handler } = await import(${JSON.stringify(urls.health)});
     const r = await handler({ version: '2.0', rawPath: '/readyz', headers: {}, requestContext: { http: { method: 'GET' } } });
     process.stdout.write(JSON.stringify(r) + '\\n', () => process.exit(0));`,
    { ...env, KUBECONFIG: '/var/task/deploy/lambda/kubeconfig.yaml' },
  );
  t.equal(missing.statusCode, 500);
  t.match(JSON.parse(missing.body), { error: /^misconfigured: KUBECONFIG: ENOENT/ });
});

t.test('osls package, offline and without AWS credentials: one artifact per function, only its bundle', { timeout: 180_000 }, async (t) => {
  const started = Date.now();
  const packaged = await run(join(ROOT, 'node_modules', '.bin', 'osls'), ['package'], cleanEnv({ SLS_TELEMETRY_DISABLED: '1' }));
  t.equal(packaged.code, 0, `osls package exits 0${packaged.code === 0 ? '' : `: ${(packaged.stdout + packaged.stderr).slice(-3_000)}`}`);
  t.comment(`osls package took ${Date.now() - started} ms`);

  const dir = join(ROOT, '.serverless');
  const functions = Object.keys(sls.functions).sort();
  t.same(
    readdirSync(dir)
      .filter((f) => f.endsWith('.zip'))
      .sort(),
    functions.map((f) => `${f}.zip`),
    'one zip per function',
  );
  const kubeconfigExists = existsSync(join(ROOT, KUBECONFIG));
  for (const fn of functions) {
    const bundle = bundleOf(fn);
    const entries = zipEntries(join(dir, `${fn}.zip`));
    t.ok(entries.includes(`.build/${bundle}/index.mjs`), `${fn}.zip holds .build/${bundle}/index.mjs`);
    const stray = entries.filter((e) => !(e.startsWith(`.build/${bundle}/`) && e.endsWith('.mjs')) && e !== KUBECONFIG);
    t.same(stray, [], `${fn}.zip holds only its bundle (and the kubeconfig)`);
    t.same(
      entries.filter((e) => /(^|\/)(test|tests|bench|node_modules)\/|\.test\.|\.ts$|\.map$/.test(e)),
      [],
      `${fn}.zip: no tests, sources, maps or node_modules`,
    );
    // biome-ignore lint/suspicious/noTemplateCurlyInString: Serverless's own variable syntax, matched as written
    const wantsKubeconfig = sls.functions[fn]?.package?.patterns?.includes('${self:custom.kubeconfig}') ?? false;
    if (fn !== 'healthz') t.ok(wantsKubeconfig, `${fn}: packages the kubeconfig`);
    t.equal(entries.includes(KUBECONFIG), wantsKubeconfig && kubeconfigExists, `${fn}.zip: kubeconfig ${wantsKubeconfig && kubeconfigExists ? 'included' : 'absent'}`);
  }

  // the template: handlers, runtime, timeouts, the schedule, the routes, settings by reference
  const template = JSON.parse(readFileSync(join(dir, 'cloudformation-template-update-stack.json'), 'utf8')) as { Resources: Record<string, { Type: string; Properties: Record<string, unknown> }> };
  const resources = Object.values(template.Resources);
  const lambdas = resources.filter((r) => r.Type === 'AWS::Lambda::Function').map((r) => r.Properties);
  t.same(lambdas.map((p) => p.Handler).sort(), functions.map((f) => sls.functions[f]?.handler).sort(), 'one Lambda function per handler');
  for (const p of lambdas) {
    t.equal(p.Runtime, 'nodejs24.x', `${String(p.Handler)}: nodejs24.x`);
    const vars = ((p.Environment as { Variables?: Record<string, string> } | undefined)?.Variables ?? {}) as Record<string, string>;
    if (p.Handler === '.build/schedule/index.handler') {
      t.equal(p.Timeout, 300);
      t.equal(p.ReservedConcurrentExecutions, 1);
    } else if (p.Handler === '.build/shard/index.handler') t.equal(p.Timeout, 300, 'shard: 300 s, as the schedule');
    else t.ok((p.Timeout as number) <= 29, `${String(p.Handler)}: timeout ${String(p.Timeout)} s, under API Gateway's 30 s`);
    if (p.Handler !== '.build/schedule/index.handler') t.equal(vars.SHARD_QUEUE_URL, undefined, `${String(p.Handler)}: no SHARD_QUEUE_URL`);
    if (p.Handler === '.build/healthz/index.handler') {
      t.same(vars, {}, 'healthz gets no settings or secrets');
      continue;
    }
    for (const name of ['TYK_URL', 'TYK_AUTH', 'TYK_ORG', 'WEBHOOK_TOKEN', 'RESYNC_TOKEN', 'REDIS_URL']) {
      t.equal(vars[name], `{{resolve:ssm:/gateway-reconciler/${name}}}`, `${String(p.Handler)}: ${name} is a CloudFormation dynamic reference`);
    }
    t.equal(vars.KUBECONFIG, `/var/task/${KUBECONFIG}`);
  }
  const routes = resources
    .filter((r) => r.Type === 'AWS::ApiGatewayV2::Route')
    .map((r) => r.Properties.RouteKey)
    .sort();
  t.same(routes, ['GET /healthz', 'GET /readyz', 'POST /admission', 'POST /resync', 'POST /webhooks/audit', 'POST /webhooks/cloudevents', 'POST /webhooks/watch']);
  const rules = resources.filter((r) => r.Type === 'AWS::Events::Rule').map((r) => r.Properties.ScheduleExpression);
  t.same(rules, ['rate(5 minutes)']);

  // the shards of a full run: the queue, its dead-letter queue, the shard function's event source, who may send
  const entries = Object.entries(template.Resources);
  const queues = entries.filter(([, r]) => r.Type === 'AWS::SQS::Queue');
  t.equal(queues.length, 2, 'two queues: the shards and their dead letters');
  const [queueId, queue] = queues.find(([, r]) => r.Properties.RedrivePolicy !== undefined) ?? [];
  const [dlqId, dlq] = queues.find(([, r]) => r.Properties.RedrivePolicy === undefined) ?? [];
  if (!queueId || !queue || !dlqId || !dlq) throw new Error('no shard queue with a redrive policy, or no dead-letter queue');
  const getAtt = (id: string) => ({ 'Fn::GetAtt': [id, 'Arn'] });
  t.same(queue.Properties.RedrivePolicy, { deadLetterTargetArn: getAtt(dlqId), maxReceiveCount: 3 }, 'a failing shard goes to the dead-letter queue after 3 deliveries');
  const shardFn = entries.find(([, r]) => r.Type === 'AWS::Lambda::Function' && r.Properties.Handler === '.build/shard/index.handler');
  if (!shardFn) throw new Error('no shard function');
  const timeout = shardFn[1].Properties.Timeout as number;
  t.ok((queue.Properties.VisibilityTimeout as number) >= 6 * timeout, `visibility timeout ${String(queue.Properties.VisibilityTimeout)} s ≥ 6 × the shard function's ${timeout} s`);
  t.ok((queue.Properties.MessageRetentionPeriod as number) >= 3 * (queue.Properties.VisibilityTimeout as number), 'a message outlives its three deliveries');
  t.ok((dlq.Properties.MessageRetentionPeriod as number) >= 7 * 24 * 3600, 'dead letters are kept a week or more');
  const mappings = resources.filter((r) => r.Type === 'AWS::Lambda::EventSourceMapping').map((r) => r.Properties);
  t.match(
    mappings,
    [{ EventSourceArn: getAtt(queueId), FunctionName: getAtt(shardFn[0]), BatchSize: 1, FunctionResponseTypes: ['ReportBatchItemFailures'], Enabled: true }],
    'the shard function reads the queue, one message at a time, reporting failures per message',
  );
  const schedule = entries.find(([, r]) => r.Type === 'AWS::Lambda::Function' && r.Properties.Handler === '.build/schedule/index.handler');
  if (!schedule) throw new Error('no schedule function');
  t.same((schedule[1].Properties.Environment as { Variables: Record<string, unknown> }).Variables.SHARD_QUEUE_URL, { Ref: queueId }, "the schedule gets the queue's URL");
  const roleId = ((schedule[1].Properties.Role as { 'Fn::GetAtt'?: string[] })['Fn::GetAtt'] ?? [])[0] as string;
  const statements = (id: string) =>
    ((template.Resources[id]?.Properties.Policies ?? []) as { PolicyDocument: { Statement: { Effect: string; Action: string | string[]; Resource: unknown }[] } }[]).flatMap(
      (p) => p.PolicyDocument.Statement,
    );
  const sends = (id: string) => statements(id).filter((s) => s.Effect === 'Allow' && [s.Action].flat().some((a) => a === 'sqs:SendMessage' || a === 'sqs:*'));
  t.not(roleId, 'IamRoleLambdaExecution', 'the schedule has a role of its own');
  t.same(
    sends(roleId).map((s) => s.Resource),
    [getAtt(queueId)],
    'it may send to the shard queue, and only there',
  );
  t.same(sends('IamRoleLambdaExecution'), [], "the other functions' role may not send");
  t.match(template.Resources[roleId]?.Properties, { AssumeRolePolicyDocument: { Statement: [{ Principal: { Service: 'lambda.amazonaws.com' }, Action: 'sts:AssumeRole' }] } });
});
