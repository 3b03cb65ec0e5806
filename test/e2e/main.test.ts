/**
 * The self-hosted process (lib/main.ts, what `npm start` runs), as a child process:
 * bad settings → one line each naming the setting, exit 2, no stack trace;
 * good settings → it serves, and the node-cron schedule reconciles on its own.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { type FakeKubeApiServer, startFakeKubeApiServer } from '../fakes/kube-apiserver.js';
import { type FakeTykGateway, startFakeTykGateway } from '../fakes/tyk-gateway.js';
import { apiDefinition } from '../fixtures/builders.js';
import { type Child, runTs } from '../harness/child.js';
import { freePort, startRedis } from '../harness/redis.js';

const MAIN = new URL('../../lib/main.ts', import.meta.url).pathname;
const TOKEN = 'main-test-token-0123456789';

function start(env: Record<string, string>): Child {
  return runTs(MAIN, env);
}

/** The fakes a started process talks to, closed when the test ends, and the settings that point it at them. */
async function fakesFor(t: { teardown(fn: () => unknown): void }): Promise<{ kube: FakeKubeApiServer; tyk: FakeTykGateway; env: Record<string, string> }> {
  const [kube, tyk] = await Promise.all([startFakeKubeApiServer(), startFakeTykGateway()]);
  const dir = await mkdtemp(join(tmpdir(), 'gr-main-'));
  t.teardown(async () => {
    await Promise.all([kube.close(), tyk.close()]);
    await rm(dir, { recursive: true, force: true });
  });
  const env = { KUBECONFIG: await kube.writeKubeconfig(dir), TYK_URL: tyk.url, TYK_AUTH: tyk.secret, WEBHOOK_TOKEN: TOKEN, RESYNC_TOKEN: TOKEN, HOST: '127.0.0.1' };
  return { kube, tyk, env };
}

t.test('a missing setting: one line naming it, exit 2', async (t) => {
  const p = start({ TYK_AUTH: 'secret-value-xyz', WEBHOOK_TOKEN: TOKEN, RESYNC_TOKEN: TOKEN });
  t.equal(await p.code, 2);
  t.equal(p.err(), 'gateway-reconciler: TYK_URL: is required (the gateway admin URL, e.g. http://tyk-gateway:8080)\n');
  t.equal(p.out(), '');
});

t.test('malformed settings: one line each, no secret, no stack', async (t) => {
  const p = start({ TYK_URL: 'http://tyk', TYK_AUTH: 'secret-value-xyz', WEBHOOK_TOKEN: 'short-secret', RESYNC_TOKEN: TOKEN, PORT: 'eighty' });
  t.equal(await p.code, 2);
  const lines = p.err().trim().split('\n');
  t.same(
    lines.map((l) => l.split(':')[1]?.trim()),
    ['WEBHOOK_TOKEN', 'PORT'],
  );
  t.notMatch(p.err(), /short-secret|secret-value-xyz|at .*\.ts/);
});

t.test('no kubeconfig and not in a cluster: one line naming KUBECONFIG', async (t) => {
  const p = start({ TYK_URL: 'http://tyk', TYK_AUTH: 'k', ALLOW_UNAUTHENTICATED: 'true' });
  t.equal(await p.code, 2);
  t.match(p.err(), /^gateway-reconciler: KUBECONFIG: .*not running in a cluster\n$/);
});

t.test('with everything set it serves, and the schedule reconciles', async (t) => {
  const { kube, tyk, env } = await fakesFor(t);
  kube.put(apiDefinition('scheduled').build());
  const port = await freePort();
  const p = start({
    ...env,
    PORT: String(port),
    RESYNC_SCHEDULE: '* * * * * *',
    LOG_LEVEL: 'info',
  });
  t.teardown(() => p.kill());
  const id = Buffer.from('default/scheduled').toString('base64url');
  // generous bounds: starting tsx and loading every module takes long on a busy machine
  const until = async (done: () => boolean, ms: number, poll?: () => Promise<void>) => {
    const deadline = Date.now() + ms;
    await poll?.();
    while (!done() && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      await poll?.();
    }
    return done();
  };
  t.ok(await until(() => /"msg":"listening"/.test(p.out()), 60_000), `it listens (stderr: ${p.err()})`);
  t.ok(await until(() => tyk.loaded('api').has(id), 30_000), 'the scheduled run created the API');
  const health = await fetch(`http://127.0.0.1:${port}/healthz`);
  t.equal(health.status, 200);
  const resync = await fetch(`http://127.0.0.1:${port}/resync`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` } });
  t.equal(resync.status, 200);
  // the first scheduled run may still be settling when its API shows: poll until it is counted
  const scrape = async () => (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  let text = '';
  const counted = /gateway_reconciler_runs_total\{trigger="schedule",outcome="ok"\} [1-9]/;
  t.ok(
    await until(
      () => counted.test(text),
      30_000,
      async () => {
        text = await scrape();
      },
    ),
    'the scheduled runs are counted on /metrics (open without METRICS_TOKEN)',
  );
  t.match(text, /gateway_reconciler_runs_total\{trigger="resync",outcome="ok"\} 1/);
  t.match(text, /gateway_reconciler_gateway_writes_total [1-9]/);
  t.match(text, /process_resident_memory_bytes/, "with prom-client's process metrics");
  p.kill();
  t.equal(await p.code, 0, 'SIGTERM stops it cleanly');
  t.match(p.out(), /"msg":"listening"/);
  t.match(p.out(), /REDIS_URL is not set/, 'says it runs with the in-process store');
  t.notMatch(p.out() + p.err(), new RegExp(`${tyk.secret}|${TOKEN}`), 'no secret in the logs');
});

t.test('SIGTERM during a scheduled run: the run finishes its write, records it, and the process exits; no run starts after', async (t) => {
  const { kube, tyk, env } = await fakesFor(t);
  kube.put(apiDefinition('slow').build());
  // the scheduled run's write takes 1.5 s: SIGTERM arrives while it is in flight
  tyk.inject({ method: 'POST', path: '/tyk/apis', delayMs: 1_500 });
  const p = start({
    ...env,
    PORT: String(await freePort()),
    RESYNC_SCHEDULE: '* * * * * *',
    SHUTDOWN_GRACE_MS: '20000',
    LOG_LEVEL: 'info',
  });
  t.teardown(() => p.kill('SIGKILL'));
  const deadline = Date.now() + 60_000;
  while (tyk.count('POST', '/tyk/apis') === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  t.equal(tyk.count('POST', '/tyk/apis'), 1, `the write is in flight (stderr: ${p.err()})`);
  p.kill('SIGTERM');
  t.equal(await p.code, 0, 'it exits cleanly');
  const lines = p
    .out()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { msg: string; drained?: boolean; counts?: Record<string, number> });
  const stopping = lines.findIndex((l) => l.msg === 'stopping');
  t.ok(stopping >= 0, 'it said it was stopping');
  const after = lines.slice(stopping);
  t.match(
    after.filter((l) => l.msg === 'run finished'),
    [{ counts: { synced: 1 } }],
    'the run in flight finished, synced; no other run finished after the signal',
  );
  t.match(after.at(-1), { msg: 'stopped', drained: true });
  t.ok(tyk.loaded('api').has(Buffer.from('default/slow').toString('base64url')), 'the API is served');
  t.equal(tyk.count('POST', '/tyk/apis'), 1, 'one write');
  t.match(kube.getObject('apidefinitions', 'default', 'slow')?.status, { latestTransaction: { status: 'Successful' } }, 'its status was written before the exit');
});

t.test('SIGKILL between the gateway writes and the status patches: after a restart the next run converges, each API once', async (t) => {
  const { kube, tyk, env: fakes } = await fakesFor(t);
  const redis = await startRedis();
  t.teardown(() => (redis.owned ? redis.stop() : undefined));
  const names = ['a', 'b', 'c'];
  for (const n of names) kube.put(apiDefinition(n).build());
  // the status patches never answer: the process is killed while it waits for them
  kube.inject({ method: 'PATCH', path: /\/status$/, hang: true, times: Infinity });
  const env = {
    ...fakes,
    REDIS_URL: redis.url,
    RESYNC_SCHEDULE: '* * * * * *',
    LOG_LEVEL: 'warn',
  };
  const first = start({ ...env, PORT: String(await freePort()) });
  t.teardown(() => first.kill('SIGKILL'));
  const waitFor = async (done: () => boolean, ms: number) => {
    const deadline = Date.now() + ms;
    while (!done() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    return done();
  };
  t.ok(await waitFor(() => kube.count('PATCH', /\/status$/) > 0, 60_000), `the first process wrote the APIs and is patching statuses (stderr: ${first.err()})`);
  t.equal(tyk.loaded('api').size, 3, 'the three APIs are on the gateway');
  first.kill('SIGKILL');
  t.equal(await first.code, null, 'killed');
  t.equal(kube.getObject('apidefinitions', 'default', 'a')?.status?.api_id, undefined, 'no status was written');
  kube.clearFaults();

  const started = Date.now();
  const second = start({ ...env, PORT: String(await freePort()) });
  t.teardown(() => second.kill('SIGKILL'));
  const converged = () => names.every((n) => kube.getObject('apidefinitions', 'default', n)?.status?.latestTransaction !== undefined);
  t.ok(await waitFor(converged, 60_000), `the restarted process converged within a minute (${Math.round((Date.now() - started) / 1000)} s)`);
  for (const n of names) {
    const id = Buffer.from(`default/${n}`).toString('base64url');
    t.match(kube.getObject('apidefinitions', 'default', n)?.status, { api_id: id, latestTransaction: { status: 'Successful' } }, `${n}: status right`);
  }
  t.equal(tyk.loaded('api').size, 3, 'each API exactly once on the gateway');
  t.equal(tyk.count('POST', '/tyk/apis'), 3, 'and written once: the records saved before the kill say they are current');
  second.kill('SIGTERM');
  t.equal(await second.code, 0);
});
