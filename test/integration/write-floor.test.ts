/**
 * The bench's write floors (bench/write-floor.ts) against the loopback fakes: they send the
 * writes a full run that creates everything must make (and the read-back of a reload's
 * effect), and the fakes accept every one, so what
 * the bench measures is that work and not a string of refusals, at every concurrency the bench
 * measures them at; the best of a phase's floors is the one with the most objects a second. A
 * refusal throws, naming the request.
 */
import t from 'tap';
import { apiDefinition } from '../../bench/fixtures.js';
import { objectName } from '../../bench/shared.js';
import { bestWriteFloor, WRITE_FLOOR_CONCURRENCIES, WriteFloor, type WriteFloorObject } from '../../bench/write-floor.js';
import { defaultId } from '../../lib/engine/ids.js';
import { apiDefinitionPayload } from '../../lib/kinds/api-definition/payload.js';
import { startFakeKubeApiServer } from '../fakes/kube-apiserver.js';
import { startFakeTykGateway } from '../fakes/tyk-gateway.js';

const N = 12;

t.test('write floors: every create a first run makes, then every gateway write of a restart, all accepted', async (t) => {
  const [kube, tyk] = await Promise.all([startFakeKubeApiServer(), startFakeTykGateway()]);
  t.teardown(() => Promise.all([kube.close(), tyk.close()]));
  const objects: WriteFloorObject[] = Array.from({ length: N }, (_, i) => {
    const { namespace, name } = objectName(i);
    kube.put(apiDefinition(namespace, name, i));
    const id = defaultId(namespace, name);
    const built = apiDefinitionPayload(apiDefinition(namespace, name, i), id, undefined);
    if (!built.ok) throw new Error(built.reason);
    return { namespace, name, id, body: built.body };
  });
  const floor = new WriteFloor({ kubeUrl: kube.url, kubeToken: kube.token, tykUrl: tyk.url, tykSecret: tyk.secret }, 4);
  t.teardown(() => floor.close());

  const first = await floor.run(objects);
  // the list is read until it shows every API, before the statuses (the read-back they stand on)
  t.ok(first.requests >= N * 4 + 2 && first.requests <= N * 4 + 21, `four requests an object, one reload and the lists (${first.requests})`);
  t.ok(first.ms >= 0);
  for (const o of objects) {
    const stored = kube.getObject('apidefinitions', o.namespace, o.name);
    t.same(stored?.metadata.finalizers, ['finalizers.tyk.io/apidefinition'], `${o.name}: the finalizer`);
    t.equal(stored?.status?.api_id, o.id, `${o.name}: its status`);
  }
  t.equal(kube.listObjects('events').length, N, 'an Event each');
  await tyk.waitForReloads();
  t.same([...tyk.loaded('api').keys()].sort(), objects.map((o) => o.id).sort(), 'every API loaded after the one reload');

  // a second run names its Events anew (they stay in the API server)
  await floor.run(objects);
  t.equal(kube.listObjects('events').length, N * 2);

  tyk.restart();
  const restart = await floor.runGatewayOnly(objects);
  // the list is read again until it shows every API (the reload takes effect after its answer)
  t.ok(restart.requests >= N + 2 && restart.requests <= N + 21, `a write an object, one reload and the lists (${restart.requests})`);
  t.equal(tyk.files('api').size, N, 'every definition written again');

  const refused = new WriteFloor({ kubeUrl: kube.url, kubeToken: 'not-the-token', tykUrl: tyk.url, tykSecret: tyk.secret }, 4);
  t.teardown(() => refused.close());
  await t.rejects(refused.run(objects), /write floor: PATCH .*apidefinitions\/api-\d+: 401/, 'a refused write throws, naming the request');
});

t.test('at each concurrency the bench measures (8, 16, 32, 64): every gateway write accepted', async (t) => {
  const tyk = await startFakeTykGateway();
  t.teardown(() => tyk.close());
  const objects: WriteFloorObject[] = Array.from({ length: 70 }, (_, i) => {
    const { namespace, name } = objectName(i);
    const id = defaultId(namespace, name);
    const built = apiDefinitionPayload(apiDefinition(namespace, name, i), id, undefined);
    if (!built.ok) throw new Error(built.reason);
    return { namespace, name, id, body: built.body };
  });
  t.same(WRITE_FLOOR_CONCURRENCIES, [8, 16, 32, 64]);
  for (const concurrency of WRITE_FLOOR_CONCURRENCIES) {
    tyk.restart();
    const floor = new WriteFloor({ kubeUrl: 'http://127.0.0.1:9', kubeToken: 'unused', tykUrl: tyk.url, tykSecret: tyk.secret }, concurrency);
    try {
      const r = await floor.runGatewayOnly(objects);
      t.equal(tyk.files('api').size, objects.length, `concurrency ${concurrency}: every definition written`);
      t.ok(r.requests >= objects.length + 2, `concurrency ${concurrency}: ${r.requests} requests`);
    } finally {
      await floor.close();
    }
  }
});

t.test('the best write floor: the most objects a second; of equals, the lower concurrency', async (t) => {
  const figure = (concurrency: number, objectsPerSec: number) => ({ concurrency, objectsPerSec, ms: 1, requests: 1, cpuMs: 0, fakesCpuMs: 0 });
  t.equal(bestWriteFloor([]), undefined, 'none measured: none');
  t.same(bestWriteFloor([figure(8, 900), figure(16, 1_400), figure(32, 1_700), figure(64, 1_650)]), figure(32, 1_700));
  t.same(bestWriteFloor([figure(8, 1_000), figure(16, 1_000)]), figure(8, 1_000), 'a tie goes to the lower concurrency');
  t.same(bestWriteFloor([figure(64, 1_000), figure(8, 1_000)]), figure(8, 1_000), 'whatever the order');
});
