/**
 * Canonical JSON, gateway ids, policy ↔ API references and the backoff curve, at the edges of
 * their rules (test/unit/ids-hash.test.ts and payload-compare-status.test.ts state the rules).
 */
import t from 'tap';
import { backoffMs, DEFAULT_BACKOFF, dispose, jitterOf, retryDelayMs } from '../../lib/engine/error-policy.js';
import { canonicalJson, hashOf } from '../../lib/engine/hash.js';
import { gatewayIdFor } from '../../lib/engine/ids.js';
import { API_DEFINITION } from '../../lib/kinds/api-definition/kind.js';
import { SECURITY_POLICY } from '../../lib/kinds/security-policy/kind.js';
import { accessRefs, referencingPolicies } from '../../lib/kinds/shared/api-links.js';
import { GatewayApiError, InvalidSpecError } from '../../lib/platform/errors.js';
import { apiDefinition, securityPolicy } from '../fixtures/builders.js';

t.test('canonical JSON: every kind of value, undefined members dropped wherever they are', async (t) => {
  t.equal(canonicalJson(undefined), 'null', 'nothing at all is null');
  t.equal(canonicalJson(null), 'null');
  t.equal(canonicalJson('x'), '"x"');
  t.equal(canonicalJson(1.5), '1.5');
  t.equal(canonicalJson(true), 'true');
  t.equal(canonicalJson([]), '[]');
  t.equal(canonicalJson({}), '{}');
  t.equal(canonicalJson([1, 2, 3]), '[1,2,3]');
  t.equal(canonicalJson({ a: undefined, b: 1, c: undefined, d: 2 }), '{"b":1,"d":2}');
  t.equal(canonicalJson({ a: undefined }), '{}');
  t.equal(canonicalJson({ 'a"b': [{ z: 1, y: [null] }] }), '{"a\\"b":[{"y":[null],"z":1}]}');
  t.equal(hashOf({ a: 1 }), '015abd7f5cc57a2dd94b7590f04ad808', 'sha256 of the canonical JSON, first 32 hex digits');
});

t.test('gateway id: a SecurityPolicy names it by spec.id, else status.pol_id', async (t) => {
  t.equal(gatewayIdFor(SECURITY_POLICY, securityPolicy('p').withId('pinned').withStatus({ pol_id: 'st' }).build()), 'pinned');
  t.equal(gatewayIdFor(SECURITY_POLICY, securityPolicy('p').withStatus({ pol_id: 'st', id: 'no' }).build()), 'st');
  t.equal(gatewayIdFor(API_DEFINITION, apiDefinition('httpbin').withStatus({ api_id: ' ' }).build()), 'ZGVmYXVsdC9odHRwYmlu', 'a blank status id is ignored');
  const noNamespace = apiDefinition('httpbin').build();
  delete noNamespace.metadata.namespace;
  t.equal(gatewayIdFor(API_DEFINITION, noNamespace), Buffer.from('/httpbin').toString('base64url'));
  const noSpec = apiDefinition('httpbin').build();
  delete noSpec.spec;
  t.equal(gatewayIdFor(API_DEFINITION, noSpec), 'ZGVmYXVsdC9odHRwYmlu', 'no spec: never throws, the default');
});

t.test('references: only named ApiDefinitions, namespace defaulting to the policy’s, once each, in order', async (t) => {
  const p = securityPolicy('p')
    .inNamespace('team-a')
    .patchSpec({
      access_rights_array: [
        { name: 'b', namespace: 'other' },
        'not an object',
        null,
        { name: 7 },
        { name: '' },
        { name: 'graph', kind: 'SuperGraph' },
        { name: 'a', kind: 'ApiDefinition' },
        { name: 'c', namespace: '' },
        { name: 'b', namespace: 'other', versions: ['v2'] },
      ],
    })
    .build();
  t.same(accessRefs(p), [
    { kind: 'ApiDefinition', namespace: 'other', name: 'b' },
    { kind: 'ApiDefinition', namespace: 'team-a', name: 'a' },
    { kind: 'ApiDefinition', namespace: 'team-a', name: 'c' },
  ]);
  t.same(
    accessRefs(
      securityPolicy('p')
        .patchSpec({ access_rights_array: { name: 'a' } })
        .build(),
    ),
    [],
    'not a list: no references',
  );
  const bare = securityPolicy('p').granting('a').build();
  delete bare.metadata.namespace;
  t.same(accessRefs({ ...bare, spec: { access_rights_array: [{ name: 'a' }] } }), [{ kind: 'ApiDefinition', namespace: '', name: 'a' }]);
});

t.test('referencing policies: live ones naming the API, sorted by namespace/name', async (t) => {
  const api = { kind: 'ApiDefinition' as const, namespace: 'default', name: 'a' };
  const policies = [
    securityPolicy('z').granting('a').build(),
    securityPolicy('m').inNamespace('team-b').granting('default/a').build(),
    securityPolicy('b').granting('a', 'x').build(),
    securityPolicy('gone').granting('a').deleting().build(),
    securityPolicy('other').granting('x').build(),
    securityPolicy('elsewhere').inNamespace('team-b').granting('a').build(),
  ];
  t.same(referencingPolicies(api, policies), [
    { namespace: 'default', name: 'b' },
    { namespace: 'default', name: 'z' },
    { namespace: 'team-b', name: 'm' },
  ]);
  const bare = securityPolicy('n').granting('default/a').build();
  delete bare.metadata.namespace;
  t.same(referencingPolicies(api, [bare]), [{ namespace: '', name: 'n' }]);
});

t.test('backoff: doubles per failure up to 2^30 times the base, never past the cap', async (t) => {
  const unbounded = { baseMs: 1, maxMs: Number.MAX_SAFE_INTEGER };
  t.equal(backoffMs(31, unbounded), 2 ** 30);
  t.equal(backoffMs(40, unbounded), 2 ** 30, 'the exponent stops at 30');
  t.equal(backoffMs(-3, unbounded), 1, 'no failure counted: the base');
  t.equal(backoffMs(4, { baseMs: 1000, maxMs: 5000 }), 5000);
  t.equal(backoffMs(3, { baseMs: 1000, maxMs: 4000 }), 4000, 'exactly at the cap');
  t.same(dispose(new GatewayApiError(500, 'x'), 3, 1000), { result: 'failed', retryAt: 1000 + 4 * DEFAULT_BACKOFF.baseMs }, 'default settings');
  t.same(dispose(new GatewayApiError(500, 'x'), 2, 0, { baseMs: 7, maxMs: 100 }), { result: 'failed', retryAt: 14 });
  t.same(dispose(new InvalidSpecError('bad'), 2, 0), { result: 'invalid' });
  t.same(DEFAULT_BACKOFF, { baseMs: 10_000, maxMs: 300_000, jitter: 0.2 });
});

t.test('jitter: a delay shortened by up to its fraction, fixed per object and attempt, spread across objects', async (t) => {
  const settings = { baseMs: 10_000, maxMs: 300_000, jitter: 0.2 };
  t.equal(retryDelayMs(1, settings), 10_000, 'without a key: the backoff as it is');
  t.equal(retryDelayMs(2, { ...settings, jitter: 0 }, 'k'), 20_000, 'no jitter');
  t.equal(retryDelayMs(2, { baseMs: 10_000, maxMs: 300_000 }, 'k'), 20_000, 'jitter absent');
  const keys = Array.from({ length: 200 }, (_, i) => `ApiDefinition/default/api-${i}`);
  const delays = keys.map((k) => retryDelayMs(1, settings, k));
  t.ok(
    delays.every((d) => d >= 8_000 && d <= 10_000),
    'within [80%, 100%] of the backoff',
  );
  t.ok(new Set(delays).size > 150, 'objects that failed together retry apart');
  t.ok(Math.min(...delays) < 8_500 && Math.max(...delays) > 9_500, 'over the whole window');
  t.equal(retryDelayMs(1, settings, keys[0]), delays[0], 'the same object and attempt wait the same');
  t.not(retryDelayMs(2, settings, keys[0]) / 2, delays[0], 'another attempt, another fraction');
  for (const k of keys) {
    const f = jitterOf(k, 1);
    if (f < 0 || f >= 1) t.fail(`jitterOf out of [0, 1): ${f}`);
  }
  t.ok(retryDelayMs(3, { ...settings, jitter: 5 }, 'k') >= 0, 'a jitter above 1 is taken as 1');
  t.equal(retryDelayMs(3, { ...settings, jitter: -1 }, 'k'), 40_000, 'below 0 as 0');
  t.same(dispose(new GatewayApiError(500, 'x'), 1, 1000, settings, 'k'), { result: 'failed', retryAt: 1000 + retryDelayMs(1, settings, 'k') });
});
