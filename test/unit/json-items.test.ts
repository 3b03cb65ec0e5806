import fc from 'fast-check';
import t from 'tap';
import { JsonItemsError, readJsonItems } from '../../lib/platform/json-items.js';

/** `text` as chunks of the given sizes (cycled), as a response body would arrive. */
async function* chunked(text: string, sizes: readonly number[]): AsyncIterable<Uint8Array> {
  const bytes = Buffer.from(text, 'utf8');
  let at = 0;
  for (let k = 0; at < bytes.length; k++) {
    const n = Math.max(1, sizes[k % sizes.length] ?? 1);
    yield new Uint8Array(bytes.subarray(at, at + n));
    at += n;
  }
}

async function items(text: string, sizes: readonly number[] = [7]): Promise<unknown[]> {
  const out: unknown[] = [];
  const n = await readJsonItems(chunked(text, sizes), (i) => out.push(i));
  if (n !== out.length) throw new Error('count differs');
  return out;
}

t.test('every item, as JSON.parse reads it, however the bytes are cut', async (t) => {
  const item = fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 5 });
  await fc.assert(
    fc.asyncProperty(fc.array(item, { maxLength: 8 }), fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 5 }), fc.boolean(), async (list, sizes, spaced) => {
      const text = JSON.stringify(list, null, spaced ? 2 : undefined);
      t.same(await items(text, sizes), JSON.parse(text));
    }),
    { numRuns: 300 },
  );
});

t.test('strings that look like structure, escapes and multi-byte characters across chunk edges', async (t) => {
  const list = [{ a: '}]{["', b: 'back\\slash \\" quote', c: 'é—😀', d: ['\\', '"'] }, { e: {} }, { f: [] }];
  for (const size of [1, 2, 3, 5]) t.same(await items(JSON.stringify(list), [size]), list, `chunks of ${size}`);
});

t.test('null and an empty list are no items', async (t) => {
  t.same(await items('null'), []);
  t.same(await items(' [ ] '), []);
  t.same(await items('[]', [1]), []);
});

t.test('what is not a list of objects is refused, saying what', async (t) => {
  const refused = async (text: string, pattern: RegExp, why: string): Promise<void> => {
    const err = await items(text).then(
      () => undefined,
      (e: unknown) => e,
    );
    t.ok(err instanceof JsonItemsError, `${why}: a JsonItemsError`);
    t.match((err as Error).message, pattern, why);
  };
  await refused('{"a":1}', /not a JSON array/, 'an object');
  await refused('[1,2]', /item 0 .* not an object/, 'scalars');
  await refused('[{"a":1},"x"]', /item 1 .* not an object/, 'a string after an object');
  await refused('[{"a":1}', /ends early/, 'cut short');
  await refused('[{"a":1},{"b":}]', /item 1 .* not valid JSON/, 'a malformed item');
  await refused('[{"a":1}] [', /after the end/, 'bytes after the list');
  await refused('', /not a JSON array/, 'nothing');
  await refused('nul', /not a JSON array/, 'a cut null');
  await refused('x[{"a":1}]', /not a JSON array/, 'garbage before the list');
});

t.test('an item handed over is not held: the callback sees it before the next is read', async (t) => {
  const seen: string[] = [];
  async function* body(): AsyncIterable<Uint8Array> {
    yield Buffer.from('[{"id":"a"},');
    seen.push('second chunk read');
    yield Buffer.from('{"id":"b"}]');
  }
  await readJsonItems(body(), (i) => seen.push(String(i.id)));
  t.same(seen, ['a', 'second chunk read', 'b']);
});
