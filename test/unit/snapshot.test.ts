/**
 * A tick's snapshot of a gateway (lib/scale/snapshot.ts) in shards' parts: the writer puts each
 * entry with the shard that holds the object its default id names, every other id with the
 * rest; a shard's reader reads its own part and the rest, and nothing else; a part or rest that
 * is missing makes the snapshot unusable for that gateway (the shard lists it), said once.
 */
import t from 'tap';
import { defaultId } from '../../lib/engine/ids.js';
import { REGISTRY } from '../../lib/kinds/registry.js';
import { partition } from '../../lib/scale/partition.js';
import { partIndex, placeByDefaultId, SnapshotReader, SnapshotWriter, snapshotKey } from '../../lib/scale/snapshot.js';
import { MemoryStore } from '../../lib/store/memory.js';
import { capturingLogger } from '../harness/log.js';

const RUN = 'tick-1';
const TTL = 60_000;

/** Namespace a holds x, y and z (two ranges of names at a size of 2), b holds w (a shard of its own). */
function parts() {
  return partition(
    new Map([
      ['a', 3],
      ['b', 1],
    ]),
    2,
    (ns) => (ns === 'a' ? ['z', 'x', 'y'] : ['w']),
  );
}

async function written(store: MemoryStore): Promise<ReturnType<typeof parts>> {
  const ps = parts();
  const writer = new SnapshotWriter('2026-11-29T00:00:00Z', REGISTRY.managed, ps.length, placeByDefaultId(ps));
  const apis = writer.listing('api');
  for (const [ns, name] of [
    ['a', 'x'],
    ['a', 'y'],
    ['a', 'z'],
    ['b', 'w'],
  ] as const)
    apis.add(defaultId(ns, name), { api_id: defaultId(ns, name), name });
  apis.add('pinned-id', { api_id: 'pinned-id', name: 'pinned' });
  apis.keep();
  // a listing that failed part-way is never kept
  writer.listing('policy').add(defaultId('b', 'p'), { id: 'p' });
  t.same(writer.kindsAdded, ['api']);
  t.equal(writer.objects, 5);
  const texts = writer.texts(RUN, 'default');
  t.same(
    texts.map((x) => x.key),
    [0, 1, 2, 'rest'].map((p) => snapshotKey(RUN, 'default', p as number | 'rest')),
    "one value per shard, the rest's last",
  );
  for (const { key, text } of texts) await store.putBlob(key, text, TTL);
  return ps;
}

t.test("each shard reads its own objects' entries and the rest's, not the others'", async (t) => {
  const store = new MemoryStore();
  const ps = await written(store);
  const where = partIndex(ps);
  const log = capturingLogger();
  for (let i = 0; i < ps.length; i++) {
    const seen = await new SnapshotReader(store, RUN, i, log).observed('default', 'api');
    const mine = [
      ['a', 'x'],
      ['a', 'y'],
      ['a', 'z'],
      ['b', 'w'],
    ].filter(([ns, name]) => where(ns as string, name as string) === i);
    t.same([...(seen?.keys() ?? [])].sort(), [...mine.map(([ns, name]) => defaultId(ns as string, name as string)), 'pinned-id'].sort(), `shard ${i}: its own and the rest`);
  }
  const b = await new SnapshotReader(store, RUN, where('b', 'w') as number, log).observed('default', 'api');
  t.match(b?.get(defaultId('b', 'w')), { hash: /^[0-9a-f]{32}$/, ids: {} }, 'an entry as the writer made it');
  t.equal(await new SnapshotReader(store, RUN, 0, log).observed('default', 'policy'), undefined, 'a kind not kept: the snapshot cannot say');
  t.equal(log.entries.filter((e) => e.level === 'warn').length, 0);
});

t.test('without its own part or the rest, a shard has no snapshot of the gateway', async (t) => {
  const store = new MemoryStore();
  await written(store);
  const log = capturingLogger();
  await store.putBlob(snapshotKey(RUN, 'default', 'rest'), 'not json', TTL);
  const reader = new SnapshotReader(store, RUN, 2, log);
  t.equal(await reader.observed('default', 'api'), undefined, 'the rest unreadable');
  t.equal(await reader.observed('default', 'api'), undefined, 'asked again: the same');
  t.match(
    log.entries.filter((e) => e.level === 'warn'),
    [{ msg: 'no snapshot of this gateway: the shard lists it itself', why: 'unreadable', gateway: 'default', runId: RUN }],
    'said once',
  );
  t.equal(await new SnapshotReader(store, RUN, 7, log).observed('default', 'api'), undefined, 'a part that was never written');
  t.match(log.entries.at(-1), { why: 'missing or expired' });
});
