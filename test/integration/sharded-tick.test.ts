/**
 * A scheduled tick above SHARD_SIZE against the API server as it is (the fake, and a real
 * kube-apiserver on the real tier): the coordinator counts every kind with a metadata-only LIST
 * (kinds without objects answer `"items": null` on kube-apiserver 1.20), plans shards, and runs
 * them in this process, without a run-level error, every object synced once. The service sends
 * over undici's pooled client, as the scheduled full runs do (lib/main.ts, functions/schedule.ts):
 * every request the API server and the gateway saw came through it. A namespace above SHARD_SIZE
 * is cut into ranges of names: each range's listing stops after the page that reaches its end,
 * and the next begins at that page with the continue token the API server gave the one before.
 * A webhook's run over everything (a GatewayClass changed) is a full run too, sharded the same way.
 */
import t from 'tap';
import type { KubeObject } from '../../lib/kube/types.js';
import { scheduledTick } from '../../lib/triggers/schedule.js';
import { capturingLogger } from '../harness/log.js';
import { startWorld, type World } from '../harness/world.js';

const api = (name: string, namespace: string): KubeObject => ({
  apiVersion: 'tyk.tyk.io/v1alpha1',
  kind: 'ApiDefinition',
  metadata: { name, namespace },
  spec: { name, protocol: 'http', active: true, use_keyless: true, proxy: { target_url: 'http://httpbin.org', listen_path: `/${namespace}-${name}`, strip_listen_path: true } },
});

/** Two ApiDefinitions in default and one in sharded-b: more than a SHARD_SIZE of 2. */
async function createThree(w: World): Promise<void> {
  for (const [name, namespace] of [
    ['one', 'default'],
    ['two', 'default'],
    ['three', 'sharded-b'],
  ] as const)
    await w.create(api(name, namespace));
}

t.test('a tick above SHARD_SIZE is sharded: every kind counted (the empty ones too), no run error, every object synced', async (t) => {
  const w = await startWorld({ env: { SHARD_SIZE: '2' }, transport: 'undici' });
  t.teardown(() => w.close());
  await createThree(w);
  w.kube.resetCalls();
  w.tyk.resetCalls();
  const sent = { ...w.transportRequests };
  const tick = await scheduledTick(w.svc);
  t.match(tick.sharded, { queued: false, objects: 3 }, 'sharded, in this process');
  t.ok((tick.sharded?.shards ?? 0) >= 2, 'into shards of at most SHARD_SIZE objects a range of names allows');
  t.same(tick.report?.errors, [], 'no run-level error: the kinds without objects counted as empty');
  t.same(tick.report?.counts, { synced: 3 });
  t.equal(w.transportRequests.node, sent.node, "nothing over Node's transport");
  const undici = w.transportRequests.undici - sent.undici;
  t.ok(w.tyk.calls.length > 0, 'the gateway was called');
  if (w.kube.kind === 'fake') t.equal(undici, w.kube.calls.length + w.tyk.calls.length, `every call the API server and the gateway saw came over undici (${undici})`);
  else t.ok(undici >= w.tyk.calls.length, 'the gateway calls came over undici');
});

t.test('a namespace above SHARD_SIZE in ranges of names: each range begins where the one before stopped, with the API server\u2019s own token', async (t) => {
  const w = await startWorld({ env: { SHARD_SIZE: '3' }, kubePageSize: 2 });
  t.teardown(() => w.close());
  const names = Array.from({ length: 8 }, (_, i) => `r-${i}`);
  for (const name of names) await w.create(api(name, 'ranged'));
  const first = await scheduledTick(w.svc);
  t.match(first.sharded, { shards: 3, objects: 8, queued: false }, 'three ranges: before r-3, r-3 to r-5, from r-5');
  t.same(first.report?.errors, []);
  t.same(first.report?.counts, { synced: 8 });
  t.same(first.report?.objects.map((o) => o.name).sort(), names, 'each object once');

  // a quiet tick: the ranges' listings of the namespace, pages of 2 (the count lists every namespace at once)
  w.kube.resetCalls();
  const quiet = await scheduledTick(w.svc);
  t.same(quiet.report?.counts, { unchanged: 8 });
  const pages = w.kube.calls.filter((c) => c.method === 'GET' && c.path.endsWith('/namespaces/ranged/apidefinitions'));
  t.equal(pages.length, 6, 'pages [r-0 r-1] [r-2 r-3] | [r-2 r-3] [r-4 r-5] | [r-4 r-5] [r-6 r-7]: the 4 pages about once each, not 12');
  t.same(
    pages.map((c) => c.query.continue !== undefined && c.query.continue !== ''),
    [false, true, true, true, true, true],
    'the second and third ranges began at a token',
  );
});

t.test('a webhook run over everything (a GatewayClass changed) above SHARD_SIZE is sharded as a tick is', async (t) => {
  const log = capturingLogger();
  const w = await startWorld({ env: { SHARD_SIZE: '2' }, log });
  t.teardown(() => w.close());
  await createThree(w);
  log.entries.length = 0;
  const res = await w.watch({ type: 'MODIFIED', object: { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'GatewayClass', metadata: { name: 'tyk' } } });
  t.equal(res.statusCode, 200);
  t.match(res.body.report, { trigger: 'watch', errors: [], counts: { synced: 3 } }, 'every object, in one report');
  t.ok(
    log.entries.some((e) => e.msg === 'full run sharded'),
    'the coordinator cut it into shards',
  );
  t.equal(log.entries.filter((e) => e.msg === 'run finished' && typeof e.shard === 'string').length, 2, 'two shard runs, one per namespace');
  t.equal(log.entries.filter((e) => e.msg === 'run finished' && e.shard === undefined).length, 0, 'and no run over everything');
});
