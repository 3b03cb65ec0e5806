/**
 * /readyz answers from a check at most 5 s old whatever the request rate: a burst of requests
 * shares one check of each dependency (counted where it lands: the API-server fake, the Tyk
 * fake, Redis's own command log), answers within 5 s (injected clock) reuse it, success or
 * failure alike, and a request after that starts one new check.
 */
import { Redis } from 'ioredis';
import t from 'tap';
import { READINESS_MAX_AGE_MS } from '../../lib/service.js';
import { startWorld, type World } from '../harness/world.js';

interface Ready {
  status: string;
  checks: Record<string, { ok: boolean; error?: string }>;
}

const PROBE = /^\/tyk\/apis\/gateway-reconciler-readiness-probe$/;
const KUBE_PROBE = /\/apidefinitions$/;

/** Counts the PINGs Redis receives (MONITOR: every command any client sends it). */
async function redisPings(t: { teardown(fn: () => unknown): void }, url: string): Promise<() => number> {
  const client = new Redis(url, { maxRetriesPerRequest: 1 });
  const monitor = await client.monitor();
  let pings = 0;
  monitor.on('monitor', (_time: string, args: string[]) => {
    if (String(args[0]).toLowerCase() === 'ping') pings++;
  });
  t.teardown(() => {
    monitor.disconnect();
    client.disconnect();
  });
  // MONITOR shows commands sent after it started: one of ours marks that point
  const marker = new Redis(url, { maxRetriesPerRequest: 1 });
  await marker.ping();
  const deadline = Date.now() + 2_000;
  while (pings === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  marker.disconnect();
  const base = pings;
  return () => pings - base;
}

const counts = (w: World, pings: () => number) => ({ kube: w.kube.count('GET', KUBE_PROBE), gateway: w.tyk.count('GET', PROBE), store: pings() });

t.test('100 requests at once: one check of each dependency; within 5 s the same; after, one more', async (t) => {
  const w = await startWorld();
  t.teardown(() => w.close());
  const pings = await redisPings(t, w.redis.url);
  w.resetCounts();
  // the gateway answers slowly, so the burst is all in flight while the first check runs
  w.tyk.inject({ method: 'GET', path: PROBE, delayMs: 200 });

  const burst = await Promise.all(Array.from({ length: 100 }, () => w.inject<Ready>('GET', '/readyz')));
  t.same(new Set(burst.map((r) => r.statusCode)), new Set([200]), 'every request answered ready');
  t.same(counts(w, pings), { kube: 1, gateway: 1, store: 1 }, 'one check of each dependency for the whole burst');

  // the gateway's secret goes wrong: within 5 s the answer still comes from the check before
  w.tyk.inject({ method: 'GET', path: PROBE, status: 403, body: { status: 'error', message: 'Attempted administrative access with invalid or missing key!' }, times: Number.POSITIVE_INFINITY });
  // (the clock also moves with real time: 1.5 s is left for the requests themselves)
  w.clock.advance(READINESS_MAX_AGE_MS - 1_500);
  for (let i = 0; i < 20; i++) t.equal((await w.inject('GET', '/readyz')).statusCode, 200);
  t.same(counts(w, pings), { kube: 1, gateway: 1, store: 1 }, 'repeated requests within 5 s: no new check');

  w.clock.advance(1_501);
  const after = await Promise.all(Array.from({ length: 10 }, () => w.inject<Ready>('GET', '/readyz')));
  t.same(new Set(after.map((r) => r.statusCode)), new Set([503]), 'after 5 s a new check sees the failure');
  t.match(after[0]?.body.checks.gateway, { ok: false, error: /403/ });
  t.same(counts(w, pings), { kube: 2, gateway: 2, store: 2 }, 'one new check of each dependency');

  // a failed check is reused as well: a flood against a failing gateway costs it nothing more
  for (let i = 0; i < 20; i++) t.equal((await w.inject('GET', '/readyz')).statusCode, 503);
  t.same(counts(w, pings), { kube: 2, gateway: 2, store: 2 }, 'the failure is reused too');
});

t.test('a check still running after 5 s is shared, never doubled', async (t) => {
  const w = await startWorld();
  t.teardown(() => w.close());
  w.resetCounts();
  w.tyk.inject({ method: 'GET', path: PROBE, delayMs: 300 });
  const first = w.inject('GET', '/readyz');
  await new Promise((r) => setTimeout(r, 50));
  w.clock.advance(READINESS_MAX_AGE_MS * 2);
  const second = w.inject('GET', '/readyz');
  t.same([(await first).statusCode, (await second).statusCode], [200, 200]);
  t.equal(w.tyk.count('GET', PROBE), 1, 'the request that came while the check ran joined it');
});
