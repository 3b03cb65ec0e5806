/**
 * The bench's write floors (bench/write-floor.ts) against the loopback fakes: they send the
 * writes a full run that creates everything must make, and the fakes accept every one, so what
 * the bench measures is that work and not a string of refusals. A refusal throws, naming the
 * request.
 */
import t from 'tap';
import { apiDefinition } from '../../bench/fixtures.js';
import { objectName } from '../../bench/shared.js';
import { WriteFloor, type WriteFloorObject } from '../../bench/write-floor.js';
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
  t.equal(first.requests, N * 4 + 1, 'four requests an object, and one reload');
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
