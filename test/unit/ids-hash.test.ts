import t from 'tap';
import { canonicalJson, hashOf, isLegacyHash, managedHash, projectedJson } from '../../lib/engine/hash.js';
import { defaultId, gatewayIdFor } from '../../lib/engine/ids.js';
import { API_DEFINITION } from '../../lib/kinds/api-definition/kind.js';
import { namedByDefaultId } from '../../lib/scale/snapshot.js';
import { apiDefinition } from '../fixtures/builders.js';

t.test('default id is base64url without padding of namespace/name (Tyk Operator scheme)', async (t) => {
  t.equal(defaultId('default', 'httpbin'), 'ZGVmYXVsdC9odHRwYmlu');
  // lengths that would need padding in standard base64, and characters that differ in base64url
  t.equal(defaultId('a', 'b'), 'YS9i');
  t.equal(defaultId('ns', 'n'), 'bnMvbg');
  t.notMatch(defaultId('team-x', 'api?>>'), /[=+/]/);
  t.equal(Buffer.from(defaultId('team-x', 'api?>>'), 'base64url').toString(), 'team-x/api?>>');
});

t.test('a default id names its object back; any other id names none', async (t) => {
  t.same(namedByDefaultId('ZGVmYXVsdC9odHRwYmlu'), { namespace: 'default', name: 'httpbin' });
  for (const [ns, name] of [
    ['a', 'b'],
    ['team-x', 'api.v2'],
    ['ns', 'n/with/slashes'],
  ])
    t.same(namedByDefaultId(defaultId(ns as string, name as string)), { namespace: ns, name }, `${ns}/${name}: back`);
  t.equal(namedByDefaultId('my-pinned-id'), undefined, 'a pinned id that decodes to no "namespace/name"');
  t.equal(namedByDefaultId(Buffer.from('/name').toString('base64url')), undefined, 'no namespace');
  t.equal(namedByDefaultId(Buffer.from('ns/').toString('base64url')), undefined, 'no name');
  t.equal(namedByDefaultId(`${defaultId('a', 'b')}=`), undefined, 'padded: not how a default id is written');
  t.equal(namedByDefaultId(''), undefined);
  t.equal(namedByDefaultId('5f0c2d7e8b1a4c3d9e6f7a8b'), undefined, "a Dashboard's hex id");
});

t.test('gateway id: spec.api_id, then status.api_id, then the default', async (t) => {
  const base = apiDefinition('httpbin');
  t.equal(gatewayIdFor(API_DEFINITION, base.build()), 'ZGVmYXVsdC9odHRwYmlu');
  t.equal(gatewayIdFor(API_DEFINITION, apiDefinition('httpbin').withStatus({ api_id: 'from-status' }).build()), 'from-status');
  t.equal(gatewayIdFor(API_DEFINITION, apiDefinition('httpbin').withStatus({ api_id: 'from-status' }).withApiId('pinned').build()), 'pinned');
  t.equal(gatewayIdFor(API_DEFINITION, apiDefinition('httpbin').withApiId('  ').build()), 'ZGVmYXVsdC9odHRwYmlu', 'blank spec id ignored');
});

t.test('canonical JSON: key order never changes the hash, array order does', async (t) => {
  t.equal(canonicalJson({ b: 1, a: { d: [1, 2], c: null } }), '{"a":{"c":null,"d":[1,2]},"b":1}');
  t.equal(hashOf({ a: 1, b: { c: 2, d: 3 } }), hashOf({ b: { d: 3, c: 2 }, a: 1 }));
  t.not(hashOf({ a: [1, 2] }), hashOf({ a: [2, 1] }));
  t.equal(hashOf({ a: 1, u: undefined }), hashOf({ a: 1 }), 'undefined members are dropped');
  t.not(hashOf({ a: '1' }), hashOf({ a: 1 }));
  t.match(hashOf({}), /^[0-9a-f]{32}$/);
  t.equal(canonicalJson([undefined, 'x']), '[null,"x"]');
});

t.test('projected JSON: what of an echo we sent, canonical', async (t) => {
  const echo = { b: { c: 2, d: 3 }, a: 1, e: [{ x: 1, y: 2 }], f: { g: 1 }, h: [1, 2], z: 'gateway' };
  const sent = { e: [{ x: 0 }], a: 0, b: { c: 0 }, f: {}, h: [1], q: 5 };
  t.equal(projectedJson(echo, sent), '{"a":1,"b":{"c":2},"e":[{"x":1}],"f":{"g":1},"h":[1,2]}');
  t.equal(projectedJson(echo, 'scalar'), canonicalJson(echo), 'a scalar sent: the echo whole');
  t.equal(projectedJson([1, { a: 1, b: 2 }], [0, { a: 0 }]), '[1,{"a":1}]', 'arrays element by element when lengths agree');
  t.equal(projectedJson({ a: [1] }, { a: { x: 1 } }), '{"a":[1]}', 'an array where an object was sent: whole');
  t.equal(projectedJson({ a: { x: 1 } }, { a: [1] }), '{"a":{"x":1}}', 'an object where an array was sent: whole');
  t.equal(projectedJson({ a: 1, b: undefined }, { a: undefined, b: 1 }), '{}', 'undefined on either side is absent');
  t.equal(projectedJson(null, { a: 1 }), 'null');
});

t.test('managed hash: an edit of what we sent changes it, anything else does not', async (t) => {
  const sent = { name: 'a', proxy: { listen_path: '/a/' } };
  const echo = { name: 'a', proxy: { listen_path: '/a/', strip: false }, active: true };
  const h = managedHash(echo, sent);
  t.match(h, /^m:[0-9a-f]{32}$/);
  t.equal(managedHash({ ...echo, active: false, extra: 1 }, sent), h);
  t.equal(managedHash({ active: true, proxy: { strip: true, listen_path: '/a/' }, name: 'a' }, sent), h, 'key order and unsent members do not count');
  t.not(managedHash({ ...echo, proxy: { listen_path: '/b/', strip: false } }, sent), h);
  t.not(managedHash({ ...echo, name: 'b' }, sent), h);
  t.not(managedHash({ proxy: echo.proxy, active: true }, sent), h, 'a member we sent, gone');
  t.ok(isLegacyHash(hashOf(echo)));
  t.notOk(isLegacyHash(h));
  t.notOk(isLegacyHash(''), 'no hash is not a legacy one');
});
