/**
 * Gateway API hostnames (lib/kinds/gateway-api/hostnames.ts): a listener's hostname against a
 * host (wildcards of one or more labels), the route/listener intersection, Tyk's domain.
 */
import t from 'tap';
import { hostnameMatches, intersectHostnames, tykDomain } from '../../lib/kinds/gateway-api/hostnames.js';

t.test('a listener hostname matches a host', async (t) => {
  t.ok(hostnameMatches(undefined, 'anything.example.com'), 'no listener hostname: any host');
  t.ok(hostnameMatches('foo.com', 'foo.com'));
  t.ok(hostnameMatches('Foo.COM', 'foo.com'), 'without regard to case');
  t.notOk(hostnameMatches('foo.com', 'bar.foo.com'), 'a name matches only itself');
  t.ok(hostnameMatches('*.wildcard.io', 'foo.wildcard.io'));
  t.ok(hostnameMatches('*.wildcard.io', 'foo.bar.wildcard.io'), 'a wildcard matches more than one label');
  t.notOk(hostnameMatches('*.wildcard.io', 'wildcard.io'), 'never the parent domain itself');
  t.notOk(hostnameMatches('*.wildcard.io', 'foowildcard.io'), 'a label boundary, not a suffix of characters');
  t.ok(hostnameMatches('*.io', '*.wildcard.io'), 'a narrower wildcard is matched by a broader one');
  t.notOk(hostnameMatches('*.wildcard.io', '*.io'), 'a broader wildcard is not matched by a narrower one');
  t.ok(hostnameMatches('*.wildcard.io', '*.wildcard.io'));
});

t.test('intersectHostnames: the hostnames a route serves on a listener', async (t) => {
  t.same(intersectHostnames(undefined, []), [], 'both unset: any host');
  t.same(intersectHostnames('foo.com', []), ['foo.com'], "a route without hostnames serves the listener's");
  t.same(intersectHostnames(undefined, ['a.com', 'b.com', 'a.com']), ['a.com', 'b.com'], "a listener without a hostname: the route's, deduplicated");
  t.equal(intersectHostnames('foo.com', ['bar.com']), undefined, 'no intersection');
  t.same(intersectHostnames('very.specific.com', ['non.matching.com', '*.nonmatchingwildcard.io', 'very.specific.com']), ['very.specific.com']);
  t.same(intersectHostnames('*.wildcard.io', ['non.matching.com', 'wildcard.io', 'foo.wildcard.io', 'bar.wildcard.io', 'foo.bar.wildcard.io']), [
    'foo.wildcard.io',
    'bar.wildcard.io',
    'foo.bar.wildcard.io',
  ]);
  t.same(intersectHostnames('very.specific.com', ['non.matching.com', '*.specific.com']), ['very.specific.com'], "a route wildcard over the listener's name: the listener's name");
  t.same(intersectHostnames('*.anotherwildcard.io', ['*.anotherwildcard.io']), ['*.anotherwildcard.io']);
  t.same(intersectHostnames('*.io', ['*.wildcard.io']), ['*.wildcard.io'], 'two wildcards: the narrower');
  t.same(intersectHostnames('*.wildcard.io', ['*.io']), ['*.wildcard.io'], 'two wildcards: the narrower, whichever side it is on');
  t.same(intersectHostnames('*.io', ['a.io', '*.io', 'b.a.io']), ['a.io', '*.io', 'b.a.io'], "in the route's order");
});

t.test("tykDomain: a wildcard as one or more labels of Tyk's host template", async (t) => {
  t.equal(tykDomain('foo.com'), 'foo.com');
  t.equal(tykDomain('*.example.com'), '{?:.+}.example.com');
  const pattern = new RegExp(`^${tykDomain('*.example.com').replace('{?:.+}', '.+').replaceAll('.example', '\\.example')}$`);
  t.ok(pattern.test('a.b.example.com'), 'as a pattern it takes several labels');
  t.notOk(pattern.test('example.com'), 'and not the domain itself');
});
