/**
 * CONTEXT_URL_ALLOW and the rules for an OperatorContext's URL (lib/gateway/url-policy.ts):
 * the entries it takes and refuses; the shape refused whatever it says; loopback, link-local and
 * unspecified hosts (IPv4 and IPv6, by address or through the resolver) refused unless named;
 * with the list set, only what it names; the connect-path lookup refusing a forbidden address
 * a name resolves to after the check (rebinding).
 */
import type { LookupFunction } from 'node:net';
import t from 'tap';
import { isForbiddenAddress, parseUrlAllow, type Resolve, UrlPolicy, urlShapeRefusal } from '../../lib/gateway/url-policy.js';

const fixed =
  (table: Record<string, string[]>): Resolve =>
  async (host) => {
    const found = table[host];
    if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return found.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };

function allow(value: string) {
  const parsed = parseUrlAllow(value);
  if (parsed.problems.length > 0) throw new Error(parsed.problems.join('; '));
  return parsed.entries;
}

t.test('parseUrlAllow: hosts, host:port, IPv6, CIDRs; one problem per bad entry; blank is no list', async (t) => {
  t.same(parseUrlAllow(undefined), { problems: [] });
  t.same(parseUrlAllow(' , '), { problems: [] });
  const ok = parseUrlAllow('tyk-gateway.tyk, Dashboard.Example:3000, 127.0.0.1, [::1]:8080, ::1, 10.0.0.0/8, fd00::/8');
  t.same(ok.problems, []);
  t.same(
    ok.entries?.map((e) => ('cidr' in e ? e.cidr : e)),
    [{ host: 'tyk-gateway.tyk' }, { host: 'dashboard.example', port: 3000 }, { host: '127.0.0.1' }, { host: '::1', port: 8080 }, { host: '::1' }, '10.0.0.0/8', 'fd00::/8'],
  );
  const bad = parseUrlAllow('10.0.0.0/33, 300.1.1.1/8, host/path, a b, x:0, user@host, ok.example');
  t.equal(bad.problems.length, 6, bad.problems.join(' | '));
  t.match(bad.problems[0], /"10\.0\.0\.0\/33" is not a CIDR/);
  t.match(bad.problems[4], /port outside 1-65535/);
  t.same(
    bad.entries?.map((e) => ('cidr' in e ? e.cidr : e)),
    [{ host: 'ok.example' }],
  );
});

t.test('the shape: userinfo, a query or a fragment (empty ones too) are refused', async (t) => {
  t.equal(urlShapeRefusal('http://tyk:8080'), undefined);
  t.equal(urlShapeRefusal('https://tyk.example/base/'), undefined);
  t.match(urlShapeRefusal('http://169.254.169.254/latest#'), /fragment/);
  t.match(urlShapeRefusal('http://tyk/x#y'), /fragment/);
  t.match(urlShapeRefusal('http://tyk/?'), /query/);
  t.match(urlShapeRefusal('http://tyk/?a=1'), /query/);
  t.match(urlShapeRefusal('http://u:p@tyk/'), /user information/);
  t.match(urlShapeRefusal('http://@tyk/'), /user information/);
  t.match(urlShapeRefusal('not a url'), /not a valid URL/);
});

t.test('forbidden addresses: loopback, link-local, unspecified, in both families and IPv4-mapped', async (t) => {
  for (const a of ['127.0.0.1', '127.9.9.9', '169.254.169.254', '0.0.0.0', '::1', '::', 'fe80::1', 'febf::1', '::ffff:127.0.0.1', '::ffff:169.254.1.1']) t.ok(isForbiddenAddress(a), a);
  for (const a of ['10.0.0.1', '192.168.1.1', '8.8.8.8', 'fd00::1', '2001:db8::1', 'fec0::1', 'not-an-address']) t.notOk(isForbiddenAddress(a), a);
});

t.test('without CONTEXT_URL_ALLOW: a host that is or resolves to a forbidden address is refused; others pass', async (t) => {
  const policy = new UrlPolicy(undefined, fixed({ 'tyk.internal': ['10.1.2.3'], 'rebind.example': ['10.1.2.3', '127.0.0.1'], 'meta.example': ['169.254.169.254'] }));
  t.equal(await policy.refusal('http://tyk.internal:8080'), undefined);
  t.equal(await policy.refusal('http://10.9.9.9'), undefined);
  t.match(await policy.refusal('http://127.0.0.1:8080'), /loopback, link-local or unspecified/);
  t.match(await policy.refusal('http://[::1]:8080'), /loopback/);
  t.match(await policy.refusal('http://[fe80::1]/'), /link-local/);
  t.match(await policy.refusal('http://0.0.0.0/'), /unspecified/);
  t.match(await policy.refusal('http://meta.example/'), /loopback, link-local or unspecified/, 'through the resolver');
  t.match(await policy.refusal('http://rebind.example/'), /loopback/, 'any one forbidden address refuses the host');
  t.match(await policy.refusal('http://nowhere.example/'), /does not resolve/);
  t.match(await policy.refusal('http://tyk.internal/#'), /fragment/);
});

t.test('with CONTEXT_URL_ALLOW: what it names passes (a loopback gateway included), anything else is refused', async (t) => {
  const policy = new UrlPolicy(
    allow('127.0.0.1:9000, tyk.internal, 10.0.0.0/8, [::1]:9001'),
    fixed({ 'tyk.internal': ['127.0.0.1'], 'svc.cluster': ['10.4.4.4'], 'mixed.example': ['10.4.4.4', '192.168.0.1'] }),
  );
  t.equal(await policy.refusal('http://127.0.0.1:9000'), undefined, 'host:port');
  t.match(await policy.refusal('http://127.0.0.1:9009'), /not named by CONTEXT_URL_ALLOW/, 'another port');
  t.equal(await policy.refusal('http://tyk.internal:1234'), undefined, 'a host named without a port: any port, even resolving to loopback');
  t.equal(await policy.refusal('http://svc.cluster'), undefined, 'every address in an allowed CIDR');
  t.match(await policy.refusal('http://mixed.example'), /not named/, 'one address outside the CIDR');
  t.equal(await policy.refusal('http://[::1]:9001'), undefined, 'IPv6 host:port');
  t.match(await policy.refusal('http://8.8.8.8'), /not named/);
  t.match(await policy.refusal('http://unknown.example'), /does not resolve/);
  t.match(await policy.refusal('http://127.0.0.1:9000/?x'), /query/, 'the shape is refused whatever the list says');
});

/** Calls a lookup function as net.connect does, and answers what it said. */
function lookup(fn: LookupFunction, host: string, all = false): Promise<{ err: (Error & { code?: string }) | null; address?: unknown; family?: unknown }> {
  return new Promise((resolve) => {
    (fn as unknown as (h: string, o: object, cb: (err: Error | null, address?: unknown, family?: unknown) => void) => void)(host, { all }, (err, address, family) =>
      resolve({ err: err as (Error & { code?: string }) | null, address, family }),
    );
  });
}

t.test('the connect path: each connection re-resolves and refuses a forbidden address (rebinding), before connecting', async (t) => {
  let answer = ['10.1.2.3'];
  const policy = new UrlPolicy(undefined, async () => answer.map((address) => ({ address, family: 4 as const })));
  const fn = policy.lookupFor('http://flip.example:8080');
  t.same(await lookup(fn, 'flip.example'), { err: null, address: '10.1.2.3', family: 4 });
  t.same((await lookup(fn, 'flip.example', true)).address, [{ address: '10.1.2.3', family: 4 }], 'all: true answers every address');
  answer = ['127.0.0.1'];
  const rebound = await lookup(fn, 'flip.example');
  t.equal(rebound.err?.code, 'EACCES');
  t.match(rebound.err?.message, /connection refused by CONTEXT_URL_ALLOW: .*loopback/);
  answer = [];
  t.match((await lookup(fn, 'flip.example')).err?.message, /does not resolve/);
  const failing = new UrlPolicy(undefined, async () => {
    throw new Error('resolver down');
  });
  t.match((await lookup(failing.lookupFor('http://x.example'), 'x.example')).err?.message, /resolver down/);
  // an address literal is checked as it is, with the allow list's port
  const allowed = new UrlPolicy(allow('127.0.0.1:9000'));
  t.equal((await lookup(allowed.lookupFor('http://127.0.0.1:9000'), '127.0.0.1')).err, null);
  t.match((await lookup(allowed.lookupFor('http://127.0.0.1:9001'), '127.0.0.1')).err?.message, /not named by CONTEXT_URL_ALLOW/);
  t.same(await lookup(new UrlPolicy(undefined).lookupFor('https://[2001:db8::1]/'), '[2001:db8::1]'), { err: null, address: '2001:db8::1', family: 6 });
});
