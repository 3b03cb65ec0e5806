/**
 * lib/engine/changes.ts: the fields of the body a write would send that differ from what the
 * gateway has (paths, arrays by index, empty values equal, fields only the gateway has not
 * compared), and secrets masked by their keys.
 */
import t from 'tap';
import { fieldChanges, MASK, SECRET_KEY } from '../../lib/engine/changes.js';

t.test('only the fields of the body sent, each changed one by its path', async (t) => {
  const sent = { name: 'a', proxy: { listen_path: '/a', target_url: 'http://x' }, tags: ['one', 'two'] };
  const observed = { name: 'a', proxy: { listen_path: '/old', target_url: 'http://x', extra: 1 }, tags: ['one', 'three'], gateway_own: true };
  t.same(fieldChanges(sent, observed), [
    { path: 'proxy.listen_path', before: '/old', after: '/a' },
    { path: 'tags[1]', before: 'three', after: 'two' },
  ]);
  t.same(fieldChanges(sent, structuredClone(sent)), [], 'the same body: no change');
  t.same(fieldChanges({ a: { b: 1 } }, { a: { b: 1 }, c: 2 }), [], 'what only the gateway has is not compared');
});

t.test('nothing observed: every leaf of the body, nothing before', async (t) => {
  t.same(fieldChanges({ b: { c: [1, { d: 'x' }] }, a: true }, undefined), [
    { path: 'a', after: true },
    { path: 'b.c[0]', after: 1 },
    { path: 'b.c[1].d', after: 'x' },
  ]);
  t.same(fieldChanges({}, undefined), [], 'an empty body: nothing');
});

t.test('empty values are equal; an empty value sent over a full one is a change', async (t) => {
  t.same(fieldChanges({ a: '', b: null, c: [], d: {} }, { a: null, c: {}, d: [] }), []);
  t.same(fieldChanges({ a: '' }, { a: 'was' }), [{ path: 'a', before: 'was', after: '' }]);
  t.same(fieldChanges({ a: {} }, { a: { x: 1 } }), [{ path: 'a', before: { x: 1 }, after: {} }]);
});

t.test('arrays of other lengths: member by member up to the longer', async (t) => {
  t.same(fieldChanges({ a: [1, 2, 3] }, { a: [1] }), [
    { path: 'a[1]', after: 2 },
    { path: 'a[2]', after: 3 },
  ]);
  t.same(fieldChanges({ a: [1] }, { a: [1, 2] }), [{ path: 'a[1]', before: 2 }]);
});

t.test('other types: one change with both values whole', async (t) => {
  t.same(fieldChanges({ a: { x: 1 } }, { a: 'text' }), [{ path: 'a', before: 'text', after: { x: 1 } }]);
  t.same(fieldChanges({ a: [1] }, { a: { x: 1 } }), [{ path: 'a', before: { x: 1 }, after: [1] }]);
  t.same(fieldChanges({ a: 1 }, { a: '1' }), [{ path: 'a', before: '1', after: 1 }], 'a number is not its text');
  t.same(fieldChanges('x', 'y'), [{ path: '(root)', before: 'y', after: 'x' }]);
});

t.test('a key that is not a plain name is quoted in brackets', async (t) => {
  t.same(fieldChanges({ h: { 'X-Foo': 'a', 'a.b c': 'b' } }, {}), [
    { path: 'h.X-Foo', after: 'a' },
    { path: 'h["a.b c"]', after: 'b' },
  ]);
});

t.test('secrets are masked by key, on both sides and below a secret key', async (t) => {
  for (const key of ['secret', 'hmac_secret', 'password', 'Passwd', 'token', 'access_token', 'api_key', 'privateKey', 'Authorization', 'auth_header', 'jwt_source', 'credentials']) {
    t.ok(SECRET_KEY.test(key), key);
  }
  for (const key of ['name', 'listen_path', 'keys_list', 'use_keyless', 'target_url', 'X-Plain', 'jwt_signing_method']) t.notOk(SECRET_KEY.test(key), key);
  t.same(fieldChanges({ h: { Authorization: 'Bearer new', other: 'x' } }, { h: { Authorization: 'Bearer old', other: 'x' } }), [{ path: 'h.Authorization', before: MASK, after: MASK }]);
  t.same(fieldChanges({ secrets: { a: 'v1', b: ['v2'] } }, undefined), [
    { path: 'secrets.a', after: MASK },
    { path: 'secrets.b[0]', after: MASK },
  ]);
  t.same(fieldChanges({ token: 'same' }, { token: 'same' }), [], 'an unchanged secret is not listed');
  t.notMatch(JSON.stringify(fieldChanges({ x: { password: 'p4ss' } }, { x: { password: 'old-p4ss' } })), /p4ss/);
});

t.test('any depth, without recursion', async (t) => {
  let sent: unknown = 'leaf';
  for (let i = 0; i < 12_000; i++) sent = { n: sent };
  const changes = fieldChanges(sent, undefined);
  t.equal(changes.length, 1);
  t.equal(changes[0]?.after, 'leaf');
});
