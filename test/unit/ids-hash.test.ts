import t from 'tap';
import { API_DEFINITION } from '../../lib/kinds.js';
import { canonicalJson, hashOf } from '../../lib/reconcile/hash.js';
import { defaultId, gatewayIdFor } from '../../lib/reconcile/ids.js';
import { apiDefinition } from '../fixtures/builders.js';

t.test('default id is base64url without padding of namespace/name (Tyk Operator scheme)', async (t) => {
  t.equal(defaultId('default', 'httpbin'), 'ZGVmYXVsdC9odHRwYmlu');
  // lengths that would need padding in standard base64, and characters that differ in base64url
  t.equal(defaultId('a', 'b'), 'YS9i');
  t.equal(defaultId('ns', 'n'), 'bnMvbg');
  t.notMatch(defaultId('team-x', 'api?>>'), /[=+/]/);
  t.equal(Buffer.from(defaultId('team-x', 'api?>>'), 'base64url').toString(), 'team-x/api?>>');
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
