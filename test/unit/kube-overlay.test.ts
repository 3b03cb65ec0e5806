/**
 * OverlayKube (lib/kube/overlay.ts): reads answer as if the overlaid objects were stored (a get
 * of one, a list with them in place of the stored ones or added, under the same label selector
 * and metadata-only rules), everything else is the base's answer, and every write is refused.
 */
import t from 'tap';
import { API_DEFINITION } from '../../lib/kinds/api-definition/kind.js';
import { CONFIG_MAP } from '../../lib/kube/kinds.js';
import { labelSelectorTest, OverlayKube } from '../../lib/kube/overlay.js';
import type { KubeApi } from '../../lib/kube/types.js';
import { KubeApiError, OverlayWriteError } from '../../lib/platform/errors.js';
import { apiDefinition } from '../fixtures/builders.js';
import { FakeClock } from '../harness/clock.js';
import { MemoryKube } from '../memory/kube.js';

function base(): MemoryKube {
  const kube = new MemoryKube({ clock: new FakeClock() });
  kube.put(apiDefinition('stored').build());
  kube.put(apiDefinition('replaced').withLabels({ team: 'a' }).build());
  kube.put(apiDefinition('elsewhere').inNamespace('team-b').build());
  return kube;
}

t.test('get: the overlaid object, a copy each time; others from the server', async (t) => {
  const kube = base();
  const next = apiDefinition('replaced').withSpec({ name: 'next' }).build();
  const o = new OverlayKube(kube, [{ kind: API_DEFINITION, object: next }]);
  const got = await o.get(API_DEFINITION, 'default', 'replaced');
  t.equal(got?.spec?.name, 'next');
  if (got?.spec) got.spec.name = 'mutated';
  t.equal((await o.get(API_DEFINITION, 'default', 'replaced'))?.spec?.name, 'next', 'a copy: the caller cannot change the overlay');
  t.equal((await o.get(API_DEFINITION, 'default', 'stored'))?.metadata.name, 'stored');
  t.equal(await o.get(API_DEFINITION, 'default', 'absent'), null);
  t.equal(await o.get(CONFIG_MAP, 'default', 'replaced'), null, 'another kind of the same name is not overlaid');
});

t.test('list: in place of the stored one or added, in its namespace only, under the label selector and keep; metadata only when asked', async (t) => {
  const kube = base();
  const o = new OverlayKube(kube, [
    { kind: API_DEFINITION, object: apiDefinition('replaced').withLabels({ team: 'b' }).build() },
    { kind: API_DEFINITION, object: apiDefinition('added').withLabels({ team: 'a' }).build() },
  ]);
  const names = (list: { metadata: { name: string } }[]) => list.map((x) => x.metadata.name).sort();
  t.same(names(await o.list(API_DEFINITION, 'default')), ['added', 'replaced', 'stored']);
  t.same(names(await o.list(API_DEFINITION)), ['added', 'elsewhere', 'replaced', 'stored'], 'all namespaces');
  t.same(names(await o.list(API_DEFINITION, 'team-b')), ['elsewhere'], 'another namespace: none of ours');
  t.same(names(await o.list(API_DEFINITION, 'default', { labelSelector: 'team=a' })), ['added'], 'the stored "replaced" had team=a; the overlaid one does not');
  t.same(names(await o.list(API_DEFINITION, 'default', { labelSelector: 'team!=a' })), ['replaced', 'stored']);
  t.same(names(await o.list(API_DEFINITION, 'default', { labelSelector: '!team' })), ['stored']);
  const meta = (await o.list(API_DEFINITION, 'default', { metadataOnly: true })).find((x) => x.metadata.name === 'added');
  t.equal(meta?.spec, undefined, 'metadata only');
  t.same(await new OverlayKube(kube, []).list(API_DEFINITION, 'default'), await kube.list(API_DEFINITION, 'default'), 'nothing overlaid: the server’s answer');
  // keep: the overlaid objects are held to it as the stored ones are
  t.same(names(await o.list(API_DEFINITION, 'default', { keep: (x) => x.metadata.name !== 'added' })), ['replaced', 'stored'], 'an overlaid object keep drops is dropped');
  t.same(names(await o.list(API_DEFINITION, 'default', { keep: (x) => x.metadata.labels?.team === 'a' })), ['added'], 'the overlaid version is the one held to it (the stored "replaced" had team=a)');
});

t.test('labelSelectorTest: the terms the server takes; another is a 400', async (t) => {
  t.ok(labelSelectorTest(undefined)({}));
  t.ok(labelSelectorTest('a,b==1, c!=2')({ a: 'x', b: '1', c: '3' }));
  t.notOk(labelSelectorTest('a=1')({ a: '2' }));
  t.throws(() => labelSelectorTest('a in (1,2)'), KubeApiError);
});

t.test('every write is refused, and the server is never written', async (t) => {
  const kube = base();
  const o: KubeApi = new OverlayKube(kube, []);
  const obj = apiDefinition('stored').build();
  const calls: [string, () => Promise<unknown>][] = [
    ['create', () => o.createObject(API_DEFINITION, 'default', obj)],
    ['replace', () => o.replaceObject(API_DEFINITION, obj)],
    ['delete', () => o.deleteObject(API_DEFINITION, 'default', 'stored')],
    ['status', () => o.patchStatus(API_DEFINITION, obj, {})],
    ['add finalizer', () => o.addFinalizer(API_DEFINITION, obj, 'f')],
    ['remove finalizer', () => o.removeFinalizer(API_DEFINITION, obj, 'f')],
    ['event', () => o.recordEvent(obj, 'Normal', 'R', 'm')],
  ];
  for (const [what, call] of calls) await t.rejects(call(), OverlayWriteError, what);
  t.equal(kube.count('createObject') + kube.count('replaceObject') + kube.count('deleteObject') + kube.count('patchStatus') + kube.count('recordEvent'), 0, 'nothing reached the server');
  t.equal(await o.whoAmI(), await kube.whoAmI(), 'who we are: the server’s answer');
});
