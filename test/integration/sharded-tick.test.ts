/**
 * A scheduled tick above SHARD_SIZE against the API server as it is (the fake, and a real
 * kube-apiserver on the real tier): the coordinator counts every kind with a metadata-only LIST
 * (kinds without objects answer `"items": null` on kube-apiserver 1.20), plans shards, and runs
 * them in this process, without a run-level error, every object synced once. The service sends
 * over undici's pooled client, as the scheduled full runs do (lib/main.ts, functions/schedule.ts):
 * every request the API server and the gateway saw came through it.
 */
import t from 'tap';
import type { KubeObject } from '../../lib/kube/types.js';
import { scheduledTick } from '../../lib/triggers/schedule.js';
import { startWorld } from '../harness/world.js';

const api = (name: string, namespace: string): KubeObject => ({
  apiVersion: 'tyk.tyk.io/v1alpha1',
  kind: 'ApiDefinition',
  metadata: { name, namespace },
  spec: { name, protocol: 'http', active: true, use_keyless: true, proxy: { target_url: 'http://httpbin.org', listen_path: `/${namespace}-${name}`, strip_listen_path: true } },
});

t.test('a tick above SHARD_SIZE is sharded: every kind counted (the empty ones too), no run error, every object synced', async (t) => {
  const w = await startWorld({ env: { SHARD_SIZE: '2' }, transport: 'undici' });
  t.teardown(() => w.close());
  for (const [name, namespace] of [
    ['one', 'default'],
    ['two', 'default'],
    ['three', 'sharded-b'],
  ] as const)
    await w.create(api(name, namespace));
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
