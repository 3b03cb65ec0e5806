/**
 * What a steady full run skips, and that skipping never changes an answer: ListedIds (a listed
 * object known by its bytes' digest is not parsed for its id), ObservedMemo (an answer kept for
 * the same digest, body and legacy hash is not computed again), and readJsonItemBytes.
 */
import { hash } from 'node:crypto';
import t from 'tap';
import { ListedIds } from '../../lib/gateway/listed-ids.js';
import type { JsonObject } from '../../lib/gateway/types.js';
import { JsonItemsError, parseItem, readJsonItemBytes } from '../../lib/platform/json-items.js';
import { type MemoAnswer, ObservedMemo } from '../../lib/scale/observed-memo.js';

const bytesOf = (o: unknown): Buffer => Buffer.from(JSON.stringify(o), 'utf8');

/** Reads `items` as one list through `ids`, counting the parses made for an id; `finish` false: the reading fails part-way (not done). */
function readList(ids: ListedIds, kind: string, items: readonly JsonObject[], finish = true) {
  let parses = 0;
  const reading = ids.reading(kind, (item) => {
    parses++;
    if (typeof item.api_id !== 'string') throw new Error('no api_id');
    return item.api_id;
  });
  const seen = items.map((item, i) => {
    const { id, listed, close } = reading.item(bytesOf(item), i);
    const body = listed.body();
    close();
    return { id, digest: listed.digest, body, listed };
  });
  if (finish) reading.done();
  return { parses, seen };
}

t.test('ListedIds: an object listed again byte for byte is known by its digest, not parsed for its id', async (t) => {
  const ids = new ListedIds();
  const a = { api_id: 'a', name: 'A' };
  const b = { api_id: 'b', name: 'B' };
  const first = readList(ids, 'api', [a, b]);
  t.equal(first.parses, 2, 'a first list parses every object');
  t.same(
    first.seen.map((s) => s.id),
    ['a', 'b'],
  );
  t.equal(first.seen[0]?.digest, hash('sha256', bytesOf(a), 'base64'), 'the digest is the SHA-256 of the object’s bytes');
  const second = readList(ids, 'api', [a, b]);
  t.equal(second.parses, 0, 'the same bytes: no parse for the id');
  t.same(
    second.seen.map((s) => [s.id, s.body]),
    [
      ['a', a],
      ['b', b],
    ],
    'the same ids, and body() parses on demand',
  );
  const changed = { api_id: 'a', name: 'A2' };
  const third = readList(ids, 'api', [changed, b]);
  t.equal(third.parses, 1, 'a changed object is parsed again');
  t.not(third.seen[0]?.digest, first.seen[0]?.digest, 'and has another digest');
  t.throws(() => third.seen[0]?.listed.body(), /after its visit/, 'body() is valid during the visit only');
});

t.test('ListedIds: only a complete reading replaces the ids; kinds are apart', async (t) => {
  const ids = new ListedIds();
  const a = { api_id: 'a' };
  readList(ids, 'api', [a]);
  t.equal(readList(ids, 'api', [{ api_id: 'z' }], false).parses, 1);
  t.equal(readList(ids, 'api', [a]).parses, 0, 'a reading that failed part-way left the last complete one');
  t.equal(readList(ids, 'policy', [a]).parses, 1, 'another kind knows nothing of it');
  readList(ids, 'api', [{ api_id: 'y' }]);
  t.equal(readList(ids, 'api', [a]).parses, 1, 'an object missing from the last complete list is forgotten');
});

t.test('ListedIds: an object without its id, or not JSON, fails as a parse would', async (t) => {
  const ids = new ListedIds();
  const reading = ids.reading('api', (item) => {
    if (typeof item.api_id !== 'string') throw new Error('an item has no api_id');
    return item.api_id;
  });
  t.throws(() => reading.item(bytesOf({ name: 'x' }), 0), /no api_id/);
  t.throws(() => reading.item(Buffer.from('{"api_id":}'), 1), JsonItemsError);
});

t.test('ObservedMemo: the same digest, body and legacy hash answer as before, without computing', async (t) => {
  const memo = new ObservedMemo();
  let computed = 0;
  const compute = (hash: string) => (): MemoAnswer => {
    computed++;
    return { body: { _id: hash }, hash };
  };
  const r1 = memo.reading('gw', 'api');
  t.same(r1.answer('d1', 's1', undefined, compute('h1')), { body: { _id: 'h1' }, hash: 'h1' });
  r1.done();
  t.equal(computed, 1);

  const r2 = memo.reading('gw', 'api');
  const kept = r2.answer('d1', 's1', undefined, compute('other'));
  t.same(kept, { body: { _id: 'h1' }, hash: 'h1' }, 'kept');
  t.equal(computed, 1, 'not computed again');
  t.ok(Object.isFrozen(kept.body), 'a kept body is shared between runs: frozen');
  t.equal(r2.answer('d2', 's1', undefined, compute('h2')).hash, 'h2', 'another digest: computed');
  t.equal(r2.answer('d1', 's2', undefined, compute('h3')).hash, 'h3', 'another body to send: computed');
  t.equal(r2.answer('d1', 's2', 'legacy', compute('h4')).hash, 'h4', 'another legacy recorded hash: computed');
  t.equal(computed, 4);
  r2.done();

  const r3 = memo.reading('gw', 'api');
  t.equal(r3.answer('d1', 's2', 'legacy', compute('x')).hash, 'h4', 'the last answer for a digest is the one kept');
  t.equal(memo.reading('other', 'api').answer('d1', 's2', 'legacy', compute('h5')).hash, 'h5', 'gateways are apart');
  t.equal(memo.reading('gw', 'policy').answer('d1', 's2', 'legacy', compute('h6')).hash, 'h6', 'kinds are apart');
});

t.test('ObservedMemo: knows and known answer from what is kept, computing nothing; has tells a complete reading', async (t) => {
  const memo = new ObservedMemo();
  t.equal(memo.has('gw', 'api'), false, 'nothing read yet');
  const r1 = memo.reading('gw', 'api');
  r1.answer('d1', 's1', undefined, () => ({ body: { a: 1 }, hash: 'h1' }));
  t.equal(memo.has('gw', 'api'), false, 'a reading not done is not kept');
  r1.done();
  t.equal(memo.has('gw', 'api'), true);
  t.equal(memo.has('gw', 'policy'), false, 'per kind');
  memo.reading('dashboard', 'api').done();
  t.equal(memo.has('dashboard', 'api'), false, 'a complete list that kept no answer (no digests): not had');
  const r2 = memo.reading('gw', 'api');
  t.equal(r2.knows('d1'), true, 'a digest of the last complete reading');
  t.equal(r2.knows('d2'), false);
  t.same(r2.known('d1', 's1', undefined), { body: { a: 1 }, hash: 'h1' });
  t.equal(r2.known('d1', 's2', undefined), undefined, 'another body to send: no answer, none computed');
  t.equal(r2.known('d1', 's1', 'legacy'), undefined, 'another legacy hash: no answer');
  t.equal(r2.known('d2', 's1', undefined), undefined, 'an unknown digest: no answer');
  r2.done();
  t.same(memo.reading('gw', 'api').known('d1', 's1', undefined), { body: { a: 1 }, hash: 'h1' }, 'what known answered is kept by the reading that asked');
  const r3 = memo.reading('gw', 'api');
  r3.answer('d3', 's', undefined, () => ({ body: {}, hash: 'h3' }));
  t.equal(r3.knows('d3'), true, 'what this reading computed is known to it');
});

t.test('ObservedMemo: only the last complete reading is kept', async (t) => {
  const memo = new ObservedMemo();
  let computed = 0;
  const compute = (): MemoAnswer => {
    computed++;
    return { body: {}, hash: 'h' };
  };
  const r1 = memo.reading('gw', 'api');
  r1.answer('d1', 's', undefined, compute);
  r1.done();
  memo.reading('gw', 'api').answer('d2', 's', undefined, compute);
  const r3 = memo.reading('gw', 'api');
  r3.answer('d1', 's', undefined, compute);
  t.equal(computed, 2, 'a reading never done left the last complete one');
  r3.done();
  memo.reading('gw', 'api').answer('d2', 's', undefined, compute);
  t.equal(computed, 3, 'what the last complete reading did not see is gone');
});

t.test('readJsonItemBytes: each item’s bytes, as JSON.parse would read them, however the body is cut', async (t) => {
  const list = [{ a: 1, s: 'x}]"\\' }, { b: [1, { c: '{' }] }, {}];
  const text = JSON.stringify(list, null, 1);
  for (const size of [1, 3, 7, 1000]) {
    const got: unknown[] = [];
    async function* chunks(): AsyncIterable<Uint8Array> {
      const all = Buffer.from(text);
      for (let i = 0; i < all.length; i += size) yield all.subarray(i, i + size);
    }
    const n = await readJsonItemBytes(chunks(), (bytes, index) => got.push([index, parseItem(Buffer.from(bytes), index)]));
    t.equal(n, 3);
    t.same(
      got,
      list.map((item, i) => [i, item]),
      `chunks of ${size}`,
    );
  }
  t.throws(() => parseItem(Buffer.from('{"a":'), 4), /item 4 of the list is not valid JSON/);
});

t.test('ObservedMemo: a read-back’s answer is remembered; an object listed but not read keeps what was known', async (t) => {
  const memo = new ObservedMemo();
  let computed = 0;
  const compute = (): MemoAnswer => {
    computed++;
    return { body: {}, hash: 'computed' };
  };
  const r1 = memo.reading('gw', 'api');
  r1.remember('d1', 's1', undefined, { body: { _id: 'x' }, hash: 'h1' });
  r1.remember('d2', 's2', undefined, { body: {}, hash: 'h2' });
  r1.done();

  const r2 = memo.reading('gw', 'api');
  t.same(r2.answer('d1', 's1', undefined, compute), { body: { _id: 'x' }, hash: 'h1' }, 'the next reading answers from what the read-back remembered');
  t.equal(computed, 0);
  r2.keep('d2');
  r2.keep('unknown');
  r2.keep(undefined);
  r2.done();

  const r3 = memo.reading('gw', 'api');
  t.equal(r3.answer('d2', 's2', undefined, compute).hash, 'h2', 'listed unread in between: still known');
  t.equal(r3.answer('unknown', 's2', undefined, compute).hash, 'computed', 'keeping what was never known adds nothing');
  t.equal(computed, 1);
});

t.test('ListedIds sameAs: the bytes without their leading own id, so replicas of one gateway compare without parsing', async (t) => {
  const ids = new ListedIds();
  const reading = ids.reading('api', (item) => String(item.api_id));
  const sameAsOf = (text: string): { sameAs: string; digest: string | undefined; parsed: boolean } => {
    let parsed = false;
    const { listed, close } = reading.item(Buffer.from(text), 0);
    const body = listed.body.bind(listed);
    listed.body = () => {
      parsed = true;
      return body();
    };
    const sameAs = listed.sameAs?.() ?? '';
    close();
    t.throws(() => listed.sameAs?.(), /after its visit/, 'valid during the visit only');
    return { sameAs, digest: listed.digest, parsed };
  };
  const one = sameAsOf('{"id":"6b0bac4ccac3975afc6b2433","api_id":"a","name":"A"}');
  const two = sameAsOf('{"id":"0123456789abcdef01234567","api_id":"a","name":"A"}');
  t.not(one.digest, two.digest, 'their bytes differ by the id each replica made up');
  t.equal(one.sameAs, two.sameAs, 'the same object');
  t.notOk(one.parsed || two.parsed, 'nothing parsed');
  t.equal(one.sameAs, hash('sha256', Buffer.from('{"api_id":"a","name":"A"}'), 'base64'), 'the digest of the bytes without that member');
  t.not(sameAsOf('{"id":"6b0bac4ccac3975afc6b2433","api_id":"a","name":"B"}').sameAs, one.sameAs, 'another object: another');
  const plain = sameAsOf('{"api_id":"a","name":"A"}');
  t.equal(plain.sameAs, plain.digest, 'no leading id: the digest itself');
  const only = sameAsOf('{"id":"x"}');
  t.equal(only.sameAs, only.digest, 'an id and nothing after it: the digest itself');
});
