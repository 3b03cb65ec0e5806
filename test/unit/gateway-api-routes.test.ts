/**
 * HTTPRoutes against Gateways (lib/kinds/gateway-api/attach.ts, translate.ts): which listeners
 * a route attaches to and its Accepted condition per parentRef, the routes each listener
 * counts, and the ApiDefinition specs its rules become (listen path, domain, targets, headers,
 * rewrites), its ResolvedRefs, and what Tyk cannot serve. Groups named after a Gateway API
 * conformance test assert what that test asserts, at this pure level.
 */
import t from 'tap';
import { type Attachment, attachedRoutes, attachRoute, type ParentGateway, parentRefsOf, selectorMatches } from '../../lib/kinds/gateway-api/attach.js';
import { evaluateGateway, type GatewayReads } from '../../lib/kinds/gateway-api/listeners.js';
import { DEFAULT_GATEWAY_API_SETTINGS, type Json, type NewCondition } from '../../lib/kinds/gateway-api/model.js';
import {
  type BackendFacts,
  backendServicesOf,
  durationMs,
  MAX_TARGETS,
  pathProblem,
  type RouteApi,
  type RouteTranslation,
  TIMEOUT_METHODS,
  targetList,
  translateRoute,
} from '../../lib/kinds/gateway-api/translate.js';
import type { KubeObject } from '../../lib/kube/types.js';

const INFRA = 'gateway-conformance-infra';
const WEB = 'gateway-conformance-web-backend';
const S = DEFAULT_GATEWAY_API_SETTINGS;

// ---- Gateways

interface ListenerOpts {
  readonly hostname?: string;
  readonly from?: 'Same' | 'All' | 'Selector';
  readonly selector?: Json;
  readonly kinds?: readonly Json[];
}
function listener(name: string, port: number, protocol: string, o: ListenerOpts = {}): Json {
  const namespaces: Json = { from: o.from ?? 'Same', ...(o.selector === undefined ? {} : { selector: o.selector }) };
  const allowedRoutes: Json = { namespaces, ...(o.kinds === undefined ? {} : { kinds: o.kinds }) };
  return { name, port, protocol, allowedRoutes, ...(o.hostname === undefined ? {} : { hostname: o.hostname }) };
}
const http = (name: string, port: number, o: ListenerOpts = {}) => listener(name, port, 'HTTP', o);
const https = (name: string, port: number, certificateRefs: readonly Json[], o: ListenerOpts = {}) => ({ ...listener(name, port, 'HTTPS', o), tls: { certificateRefs } });

function gateway(name: string, listeners: readonly Json[], namespace = INFRA): KubeObject {
  return { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', metadata: { name, namespace, generation: 1 }, spec: { gatewayClassName: 'tyk', listeners: [...listeners] } };
}

const everySecret: GatewayReads = { secrets: new Map(), permitted: () => true };
function parent(gw: KubeObject, reads: GatewayReads = everySecret, ours = true): ParentGateway {
  return { gateway: gw, eval: evaluateGateway(gw, reads, S), ours };
}

/** The conformance suite's base Gateways. */
const SAME_NAMESPACE = gateway('same-namespace', [http('http', 80)]);
const ALL_NAMESPACES = gateway('all-namespaces', [http('http', 80, { from: 'All' })]);
const BACKEND_NAMESPACES = gateway('backend-namespaces', [http('http', 80, { from: 'Selector', selector: { matchLabels: { 'gateway-conformance': 'backend' } } })]);

const NAMESPACE_LABELS: Record<string, Record<string, string>> = {
  [INFRA]: { 'kubernetes.io/metadata.name': INFRA, 'gateway-conformance': 'infra' },
  [WEB]: { 'kubernetes.io/metadata.name': WEB, 'gateway-conformance': 'backend' },
};
const labelsOf = (ns: string) => NAMESPACE_LABELS[ns];

function gatewaysOf(...parents: ParentGateway[]) {
  return (namespace: string, name: string) => parents.find((p) => p.gateway.metadata.namespace === namespace && p.gateway.metadata.name === name);
}
const BASE = gatewaysOf(parent(SAME_NAMESPACE), parent(ALL_NAMESPACES), parent(BACKEND_NAMESPACES));

// ---- Routes

function route(name: string, o: { namespace?: string; parentRefs: readonly Json[]; hostnames?: readonly string[]; rules?: readonly Json[] }): KubeObject {
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: { name, namespace: o.namespace ?? INFRA, generation: 1 },
    spec: {
      parentRefs: [...o.parentRefs],
      ...(o.hostnames === undefined ? {} : { hostnames: [...o.hostnames] }),
      rules: [...(o.rules ?? [rule({ backendRefs: [backend('infra-backend-v1', 8080)] })])],
    },
  };
}
const ref = (name: string, extra: Json = {}): Json => ({ name, ...extra });
const prefix = (value: string): Json => ({ path: { type: 'PathPrefix', value } });
const backend = (name: string, port: number, extra: Json = {}): Json => ({ name, port, ...extra });
function rule(o: { matches?: readonly Json[]; backendRefs?: readonly Json[]; filters?: readonly Json[]; extra?: Json }): Json {
  return { ...(o.matches === undefined ? {} : { matches: [...o.matches] }), ...(o.filters === undefined ? {} : { filters: [...o.filters] }), backendRefs: [...(o.backendRefs ?? [])], ...o.extra };
}

/** The conformance suite's Services: each serves port 8080. */
function facts(permitted: (namespace: string, name: string) => boolean = () => false): BackendFacts & { asked: string[] } {
  const services = new Map<string, readonly { port: number }[] | null>();
  for (const s of ['infra-backend-v1', 'infra-backend-v2', 'infra-backend-v3']) services.set(`${INFRA}/${s}`, [{ port: 8080 }]);
  services.set(`${WEB}/web-backend`, [{ port: 8080 }]);
  const asked: string[] = [];
  return {
    services,
    permitted: (ns, n) => {
      asked.push(`${ns}/${n}`);
      return permitted(ns, n);
    },
    asked,
  };
}

const accepted = (a: Attachment) => `${a.accepted.status} ${a.accepted.reason}`;
const cond = (c: NewCondition) => `${c.status} ${c.reason}`;
const target = (name: string, ns = INFRA) => `http://${name}.${ns}.svc:8080`;

function attachOne(r: KubeObject, gatewayOf = BASE): Attachment {
  const all = attachRoute(r, gatewayOf, labelsOf);
  if (all.length !== 1 || all[0] === undefined) throw new Error(`expected one attachment, got ${all.length}`);
  return all[0];
}

function serve(r: KubeObject, gatewayOf = BASE, backends: BackendFacts = facts()): { attachment: Attachment; translation: RouteTranslation } {
  const attachment = attachOne(r, gatewayOf);
  return { attachment, translation: translateRoute(r, attachment.listeners, backends) };
}

/** The traffic facts of each ApiDefinition: name, domain, listen path, targets. */
function traffic(apis: readonly RouteApi[]): Json[] {
  return apis
    .map((a) => {
      const proxy = a.spec.proxy as Json;
      return { name: a.spec.name, domain: a.spec.domain, listen_path: proxy.listen_path, target_url: proxy.target_url, ...(proxy.target_list === undefined ? {} : { target_list: proxy.target_list }) };
    })
    .sort((a, b) => String(a.name).localeCompare(String(b.name)));
}

function proxyOf(api: RouteApi | undefined): Json {
  return (api?.spec.proxy as Json | undefined) ?? {};
}

function versionOf(api: RouteApi | undefined): Json {
  const vd = api?.spec.version_data as Json | undefined;
  return ((vd?.versions as Json | undefined)?.Default as Json | undefined) ?? {};
}

// ---- parentRefs and attachment

t.test('parentRefsOf: defaults, and the parentRef as written', async (t) => {
  const r = route('r', { parentRefs: [ref('gw'), { group: 'example.com', kind: 'Thing', name: 'x', namespace: 'other', sectionName: 's', port: 8080 }] });
  if (Array.isArray(r.spec?.parentRefs)) r.spec.parentRefs.push('not an object');
  t.same(parentRefsOf(r), [
    { index: 0, group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: INFRA, name: 'gw', raw: { name: 'gw' } },
    {
      index: 1,
      group: 'example.com',
      kind: 'Thing',
      namespace: 'other',
      name: 'x',
      sectionName: 's',
      port: 8080,
      raw: { group: 'example.com', kind: 'Thing', name: 'x', namespace: 'other', sectionName: 's', port: 8080 },
    },
  ]);
});

t.test('parentRefs that are not a Gateway of ours are left out', async (t) => {
  const theirs = gateway('theirs', [http('http', 80)]);
  const gatewayOf = gatewaysOf(parent(SAME_NAMESPACE), parent(theirs, everySecret, false));
  const r = route('r', {
    parentRefs: [ref('theirs'), ref('missing'), { kind: 'Service', name: 'same-namespace' }, { group: 'example.com', kind: 'Gateway', name: 'same-namespace' }, ref('same-namespace')],
  });
  const all = attachRoute(r, gatewayOf, labelsOf);
  t.same(
    all.map((a) => a.parentRef.index),
    [4],
    "only the parentRef naming a Gateway of ours: another controller's, a missing Gateway, another kind or group are not ours to report",
  );
});

t.test('HTTPRouteSimpleSameNamespace: attached to the listener, served on any host at /', async (t) => {
  const r = route('gateway-conformance-infra-test', { parentRefs: [ref('same-namespace')] });
  const { attachment, translation } = serve(r);
  t.equal(accepted(attachment), 'True Accepted');
  t.same(attachment.listeners, [{ name: 'http', port: 80, protocol: 'HTTP', hostnames: [], certificates: [], tykPort: 0 }]);
  t.equal(cond(translation.resolvedRefs), 'True ResolvedRefs');
  t.same(translation.unsupported, []);
  t.equal(translation.apis.length, 1);
  const api = translation.apis[0];
  t.match(api?.key, /^[0-9a-f]{9}$/, 'a key of 9 hex digits');
  t.same(api?.spec, {
    name: `${INFRA}/gateway-conformance-infra-test */`,
    use_keyless: true,
    active: true,
    protocol: 'http',
    proxy: { listen_path: '/', strip_listen_path: false, preserve_host_header: true, target_url: target('infra-backend-v1') },
    version_data: { not_versioned: true, default_version: 'Default', versions: { Default: { name: 'Default' } } },
  });
  t.equal(api?.spec.domain, undefined, 'no hostname: no domain (any host)');
  t.same(attachedRoutes(SAME_NAMESPACE, [attachment]), new Map([['http', 1]]));
});

t.test('HTTPRouteMatching (path prefixes): one ApiDefinition per prefix, each to its backend', async (t) => {
  const r = route('matching', {
    parentRefs: [ref('same-namespace')],
    rules: [rule({ matches: [prefix('/')], backendRefs: [backend('infra-backend-v1', 8080)] }), rule({ matches: [prefix('/v2')], backendRefs: [backend('infra-backend-v2', 8080)] })],
  });
  const { translation } = serve(r);
  t.same(translation.unsupported, []);
  t.same(traffic(translation.apis), [
    { name: `${INFRA}/matching */`, domain: undefined, listen_path: '/', target_url: target('infra-backend-v1') },
    { name: `${INFRA}/matching */v2`, domain: undefined, listen_path: '/v2', target_url: target('infra-backend-v2') },
  ]);
  t.ok(
    translation.apis.every((a) => (a.spec.proxy as Json).strip_listen_path === false),
    'the path goes upstream unchanged',
  );
  const sorted = [...translation.apis].sort((a, b) => (a.key < b.key ? -1 : 1));
  t.same(
    translation.apis.map((a) => a.key),
    sorted.map((a) => a.key),
    'apis sorted by key',
  );
  t.same(translateRoute(r, attachOne(r).listeners, facts()), translation, 'deterministic');
  const trailing = route('m', { parentRefs: [ref('same-namespace')], rules: [rule({ matches: [prefix('/v2/')], backendRefs: [backend('infra-backend-v2', 8080)] })] });
  t.equal(proxyOf(serve(trailing).translation.apis[0]).listen_path, '/v2', 'a trailing slash of a prefix is ignored');
  const implicit = route('m', { parentRefs: [ref('same-namespace')], rules: [rule({ matches: [{ path: { type: 'PathPrefix' } }, {}], backendRefs: [backend('infra-backend-v2', 8080)] })] });
  t.same(
    serve(implicit).translation.apis.map((a) => (a.spec.proxy as Json).listen_path),
    ['/'],
    'a match without a path is the prefix /; the same match twice is served once',
  );
});

const INTERSECTION = gateway('httproute-hostname-intersection', [
  http('listener-1', 80, { hostname: 'very.specific.com' }),
  http('listener-2', 80, { hostname: '*.wildcard.io' }),
  http('listener-3', 80, { hostname: '*.anotherwildcard.io' }),
]);
const INTERSECTION_ALL = gateway('httproute-hostname-intersection-all', [http('listener-1', 80)]);

t.test('HTTPRouteHostnameIntersection: the hostnames served are the intersection, each its domain', async (t) => {
  const gatewayOf = gatewaysOf(parent(INTERSECTION), parent(INTERSECTION_ALL));
  const on = (name: string, hostnames: string[], path: string, backendName: string) =>
    serve(route(name, { parentRefs: [ref('httproute-hostname-intersection')], hostnames, rules: [rule({ matches: [prefix(path)], backendRefs: [backend(backendName, 8080)] })] }), gatewayOf);

  const s1 = on('specific-host-matches-listener-specific-host', ['non.matching.com', '*.nonmatchingwildcard.io', 'very.specific.com'], '/s1', 'infra-backend-v1');
  t.equal(accepted(s1.attachment), 'True Accepted');
  t.same(
    s1.attachment.listeners.map((l) => [l.name, l.hostnames]),
    [['listener-1', ['very.specific.com']]],
  );
  t.same(traffic(s1.translation.apis), [
    { name: `${INFRA}/specific-host-matches-listener-specific-host very.specific.com/s1`, domain: 'very.specific.com', listen_path: '/s1', target_url: target('infra-backend-v1') },
  ]);

  const s2 = on('specific-host-matches-listener-wildcard-host', ['non.matching.com', 'wildcard.io', 'foo.wildcard.io', 'bar.wildcard.io', 'foo.bar.wildcard.io'], '/s2', 'infra-backend-v2');
  t.same(
    traffic(s2.translation.apis).map((a) => a.domain),
    ['bar.wildcard.io', 'foo.bar.wildcard.io', 'foo.wildcard.io'],
    'each matching host its own ApiDefinition; wildcard.io itself is not served',
  );

  const s3 = on('wildcard-host-matches-listener-specific-host', ['non.matching.com', '*.specific.com'], '/s3', 'infra-backend-v3');
  t.same(
    traffic(s3.translation.apis).map((a) => a.domain),
    ['very.specific.com'],
    "the listener's specific host, not the route's wildcard",
  );

  const s4 = on('wildcard-host-matches-listener-wildcard-host', ['*.anotherwildcard.io'], '/s4', 'infra-backend-v1');
  t.same(
    traffic(s4.translation.apis).map((a) => a.domain),
    ['{?:.+}.anotherwildcard.io'],
    'a wildcard as a pattern of one or more labels',
  );

  const s5 = on('no-intersecting-hosts', ['specific.but.wrong.com', 'wildcard.io'], '/s5', 'infra-backend-v2');
  t.equal(accepted(s5.attachment), 'False NoMatchingListenerHostname');
  t.same(s5.attachment.listeners, []);
  t.same(s5.translation.apis, [], 'nothing served');

  const all = serve(
    route('httproute-hostname-intersection-all', { parentRefs: [ref('httproute-hostname-intersection-all')], hostnames: ['first.com', 'sub.first.com', 'second.com', 'sub.second.com'] }),
    gatewayOf,
  );
  t.same(
    traffic(all.translation.apis).map((a) => a.domain),
    ['first.com', 'second.com', 'sub.first.com', 'sub.second.com'],
    "a listener without a hostname serves the route's",
  );
  t.ok(
    [s1, s2, s3, s4, all].every((s) => s.translation.apis.every((a) => proxyOf(a).preserve_host_header === true)),
    'the backend sees the Host the client sent (the conformance echo checks it)',
  );
  t.same(
    attachedRoutes(INTERSECTION, [s1.attachment, s2.attachment, s3.attachment, s4.attachment, s5.attachment]),
    new Map([
      ['listener-1', 2],
      ['listener-2', 1],
      ['listener-3', 1],
    ]),
  );
});

t.test('HTTPRouteListenerHostnameMatching: sectionName picks the listener, its hostname the domain', async (t) => {
  const gw = gateway('httproute-listener-hostname-matching', [
    http('listener-1', 80, { hostname: 'bar.com' }),
    http('listener-2', 80, { hostname: 'foo.bar.com' }),
    http('listener-3', 80, { hostname: '*.bar.com' }),
    http('listener-4', 80, { hostname: '*.foo.com' }),
  ]);
  const gatewayOf = gatewaysOf(parent(gw));
  const on = (name: string, sections: string[], backendName: string) =>
    serve(route(name, { parentRefs: sections.map((s) => ref('httproute-listener-hostname-matching', { sectionName: s })), rules: [rule({ backendRefs: [backend(backendName, 8080)] })] }), gatewayOf);
  const v1 = on('backend-v1', ['listener-1'], 'infra-backend-v1');
  t.same(traffic(v1.translation.apis), [{ name: `${INFRA}/backend-v1 bar.com/`, domain: 'bar.com', listen_path: '/', target_url: target('infra-backend-v1') }]);
  const v2 = on('backend-v2', ['listener-2'], 'infra-backend-v2');
  t.same(
    traffic(v2.translation.apis).map((a) => a.domain),
    ['foo.bar.com'],
  );
  const v3route = route('backend-v3', {
    parentRefs: [ref('httproute-listener-hostname-matching', { sectionName: 'listener-3' }), ref('httproute-listener-hostname-matching', { sectionName: 'listener-4' })],
    rules: [rule({ backendRefs: [backend('infra-backend-v3', 8080)] })],
  });
  const both = attachRoute(v3route, gatewayOf, labelsOf);
  t.same(both.map(accepted), ['True Accepted', 'True Accepted'], 'one Attachment per parentRef');
  t.same(
    traffic(
      translateRoute(
        v3route,
        both.flatMap((a) => a.listeners),
        facts(),
      ).apis,
    ).map((a) => a.domain),
    ['{?:.+}.bar.com', '{?:.+}.foo.com'],
    "each listener's wildcard as its domain",
  );
  t.same(
    attachedRoutes(gw, [v1.attachment, v2.attachment, ...both]),
    new Map([
      ['listener-1', 1],
      ['listener-2', 1],
      ['listener-3', 1],
      ['listener-4', 1],
    ]),
  );
});

t.test('HTTPRouteCrossNamespace: a route of the backend namespace on a Gateway selecting it', async (t) => {
  const r = route('cross-namespace', { namespace: WEB, parentRefs: [ref('backend-namespaces', { namespace: INFRA })], rules: [rule({ backendRefs: [backend('web-backend', 8080)] })] });
  const b = facts();
  const { attachment, translation } = serve(r, BASE, b);
  t.equal(accepted(attachment), 'True Accepted');
  t.equal(cond(translation.resolvedRefs), 'True ResolvedRefs');
  t.same(traffic(translation.apis), [{ name: `${WEB}/cross-namespace */`, domain: undefined, listen_path: '/', target_url: target('web-backend', WEB) }]);
  t.same(b.asked, [], "a backend of the route's own namespace needs no ReferenceGrant");
});

t.test('HTTPRouteReferenceGrant: a backend in another namespace, permitted', async (t) => {
  const r = route('reference-grant', { parentRefs: [ref('same-namespace')], rules: [rule({ backendRefs: [backend('web-backend', 8080, { namespace: WEB })] })] });
  const b = facts((ns, n) => ns === WEB && n === 'web-backend');
  const { attachment, translation } = serve(r, BASE, b);
  t.equal(accepted(attachment), 'True Accepted');
  t.equal(cond(translation.resolvedRefs), 'True ResolvedRefs');
  t.same(
    traffic(translation.apis).map((a) => a.target_url),
    [target('web-backend', WEB)],
  );
  t.same(b.asked, [`${WEB}/web-backend`]);
});

t.test('HTTPRouteInvalidCrossNamespaceBackendRef: RefNotPermitted, still accepted, nothing served', async (t) => {
  const r = route('invalid-cross-namespace-backend-ref', { parentRefs: [ref('same-namespace')], rules: [rule({ backendRefs: [backend('web-backend', 8080, { namespace: WEB })] })] });
  const { attachment, translation } = serve(r);
  t.equal(accepted(attachment), 'True Accepted');
  t.equal(cond(translation.resolvedRefs), 'False RefNotPermitted');
  t.match(translation.resolvedRefs.message, /backendRefs\[0\].*web-backend/);
  t.same(translation.apis, [], 'no valid backend: no ApiDefinition');
  t.same(attachedRoutes(SAME_NAMESPACE, [attachment]), new Map([['http', 1]]), 'it still counts on the listener');
});

t.test('HTTPRouteInvalidNonExistentBackendRef: BackendNotFound', async (t) => {
  const r = route('invalid-nonexistent-backend-ref', { parentRefs: [ref('same-namespace')], rules: [rule({ backendRefs: [backend('nonexistent', 8080)] })] });
  const { attachment, translation } = serve(r);
  t.equal(accepted(attachment), 'True Accepted');
  t.equal(cond(translation.resolvedRefs), 'False BackendNotFound');
  t.same(translation.apis, []);
  const wrongPort = serve(route('p', { parentRefs: [ref('same-namespace')], rules: [rule({ backendRefs: [backend('infra-backend-v1', 9999)] })] })).translation;
  t.equal(cond(wrongPort.resolvedRefs), 'False BackendNotFound', 'a port the Service does not have');
  t.match(wrongPort.resolvedRefs.message, /no port 9999/);
  const noPort = serve(route('p', { parentRefs: [ref('same-namespace')], rules: [rule({ backendRefs: [{ name: 'infra-backend-v1' }] })] })).translation;
  t.equal(cond(noPort.resolvedRefs), 'False BackendNotFound', 'no port');
});

t.test('HTTPRouteInvalidBackendRefUnknownKind: InvalidKind, the backend dropped', async (t) => {
  const r = route('invalid-backend-ref-unknown-kind', {
    parentRefs: [ref('same-namespace')],
    rules: [rule({ backendRefs: [backend('infra-backend-v1', 8080, { group: 'unknown.example.com', kind: 'NonExistent' })] })],
  });
  const { attachment, translation } = serve(r);
  t.equal(accepted(attachment), 'True Accepted');
  t.equal(cond(translation.resolvedRefs), 'False InvalidKind');
  t.same(translation.apis, []);
  const mixed = serve(
    route('m', {
      parentRefs: [ref('same-namespace')],
      rules: [rule({ backendRefs: [backend('x', 8080, { kind: 'ConfigMap' }), backend('nonexistent', 8080), backend('infra-backend-v1', 8080)] })],
    }),
  ).translation;
  t.equal(cond(mixed.resolvedRefs), 'False InvalidKind', "the first problem's reason");
  t.match(mixed.resolvedRefs.message, /backendRefs\[0\].*ConfigMap.*; .*backendRefs\[1\].*does not exist/, 'the message names each');
  t.same(
    traffic(mixed.apis).map((a) => [a.target_url, a.target_list]),
    [[target('infra-backend-v1'), undefined]],
    'the valid backend is still served alone',
  );
});

t.test('HTTPRouteWeight: targets in proportion to their weights, weight 0 left out', async (t) => {
  const r = route('weighted-backends', {
    parentRefs: [ref('same-namespace')],
    rules: [rule({ backendRefs: [backend('infra-backend-v1', 8080, { weight: 70 }), backend('infra-backend-v2', 8080, { weight: 30 }), backend('infra-backend-v3', 8080, { weight: 0 })] })],
  });
  const { translation } = serve(r);
  const proxy = translation.apis[0]?.spec.proxy as Json;
  t.equal(proxy.enable_load_balancing, true);
  const list = proxy.target_list as string[];
  t.equal(list.length, 10, 'weights divided by their GCD (10)');
  t.equal(list.filter((x) => x === target('infra-backend-v1')).length, 7);
  t.equal(list.filter((x) => x === target('infra-backend-v2')).length, 3);
  t.notOk(list.includes(target('infra-backend-v3')), 'weight 0: never sent traffic');
  t.equal(proxy.target_url, target('infra-backend-v1'), 'target_url: the first');
  t.same(
    targetList([
      { url: 'a', weight: 1 },
      { url: 'b', weight: 1 },
    ]),
    ['a', 'b'],
    'equal weights: once each',
  );
  t.same(targetList([{ url: 'a', weight: 0 }]), [], 'all weight 0: no target');
  const skewed = targetList([
    { url: 'a', weight: 1 },
    { url: 'b', weight: 1_000_000 },
  ]);
  t.ok(skewed.length <= MAX_TARGETS + 1 && skewed.includes('a'), 'extreme weights are scaled to a bounded list, each target kept');
  const zero = serve(route('z', { parentRefs: [ref('same-namespace')], rules: [rule({ backendRefs: [backend('infra-backend-v1', 8080, { weight: 0 })] })] })).translation;
  t.same(zero.apis, [], 'every weight 0: no ApiDefinition');
  t.equal(cond(zero.resolvedRefs), 'True ResolvedRefs', 'yet every ref resolved');
});

const MODIFY = (kind: 'requestHeaderModifier' | 'responseHeaderModifier', withAdd: boolean): Json => ({
  type: kind === 'requestHeaderModifier' ? 'RequestHeaderModifier' : 'ResponseHeaderModifier',
  [kind]: {
    set: [{ name: 'X-Header-Set', value: 'set-overwrites-values' }],
    remove: ['X-Header-Remove'],
    ...(withAdd ? { add: [{ name: 'X-Header-Add', value: 'add-appends-values' }] } : {}),
  },
});

t.test('HTTPRouteRequestHeaderModifier: set and remove served, add unsupported', async (t) => {
  const served = serve(
    route('request-header-modifier', {
      parentRefs: [ref('same-namespace')],
      rules: [rule({ matches: [prefix('/set')], filters: [MODIFY('requestHeaderModifier', false)], backendRefs: [backend('infra-backend-v1', 8080)] })],
    }),
  ).translation;
  t.same(served.unsupported, []);
  t.same(versionOf(served.apis[0]), { name: 'Default', global_headers: { 'X-Header-Set': 'set-overwrites-values' }, global_headers_remove: ['X-Header-Remove'] });
  t.equal(served.apis[0]?.spec.response_processors, undefined, 'no response processor without response headers');
  const add = serve(
    route('request-header-modifier', { parentRefs: [ref('same-namespace')], rules: [rule({ filters: [MODIFY('requestHeaderModifier', true)], backendRefs: [backend('infra-backend-v1', 8080)] })] }),
  );
  t.same(add.translation.unsupported, ['spec.rules[0].filters[0].requestHeaderModifier.add: adding a header is not supported by Tyk (it replaces a header, it cannot append to one); use set']);
  t.same(add.translation.apis, [], 'an unsupported line: the route is not served at all');
  t.equal(accepted(add.attachment), 'True Accepted', "the parent's Accepted is the wiring's to turn into UnsupportedValue");
});

t.test('HTTPRouteResponseHeaderModifier: set and remove served, add unsupported', async (t) => {
  const served = serve(
    route('response-header-modifier', { parentRefs: [ref('same-namespace')], rules: [rule({ filters: [MODIFY('responseHeaderModifier', false)], backendRefs: [backend('infra-backend-v1', 8080)] })] }),
  ).translation;
  t.same(versionOf(served.apis[0]), { name: 'Default', global_response_headers: { 'X-Header-Set': 'set-overwrites-values' }, global_response_headers_remove: ['X-Header-Remove'] });
  t.same(served.apis[0]?.spec.response_processors, [{ name: 'header_injector' }], 'the response processor Tyk before 5.3 needs to apply them');
  const add = serve(
    route('response-header-modifier', { parentRefs: [ref('same-namespace')], rules: [rule({ filters: [MODIFY('responseHeaderModifier', true)], backendRefs: [backend('infra-backend-v1', 8080)] })] }),
  ).translation;
  t.match(add.unsupported, [/^spec\.rules\[0\]\.filters\[0\]\.responseHeaderModifier\.add: /]);
  t.same(add.apis, []);
});

const rewrite = (path: Json): Json => ({ type: 'URLRewrite', urlRewrite: { path } });

t.test('HTTPRouteRewritePath (prefix): the listen path stripped, the replacement before the rest', async (t) => {
  const r = route('rewrite-path', {
    parentRefs: [ref('same-namespace')],
    rules: [
      rule({ matches: [prefix('/prefix/one')], filters: [rewrite({ type: 'ReplacePrefixMatch', replacePrefixMatch: '/one' })], backendRefs: [backend('infra-backend-v1', 8080)] }),
      rule({ matches: [prefix('/strip-prefix')], filters: [rewrite({ type: 'ReplacePrefixMatch', replacePrefixMatch: '/' })], backendRefs: [backend('infra-backend-v1', 8080)] }),
    ],
  });
  const { translation } = serve(r);
  t.same(translation.unsupported, []);
  const byPath = new Map(translation.apis.map((a) => [(a.spec.proxy as Json).listen_path, a.spec.proxy as Json]));
  t.same(
    byPath.get('/prefix/one'),
    { listen_path: '/prefix/one', strip_listen_path: true, preserve_host_header: true, target_url: `${target('infra-backend-v1')}/one` },
    '/prefix/one/two goes upstream as /one/two',
  );
  t.same(
    byPath.get('/strip-prefix'),
    { listen_path: '/strip-prefix', strip_listen_path: true, preserve_host_header: true, target_url: `${target('infra-backend-v1')}/` },
    '/strip-prefix/x goes upstream as /x',
  );
  const balanced = serve(
    route('rw', {
      parentRefs: [ref('same-namespace')],
      rules: [
        rule({
          matches: [prefix('/p')],
          filters: [rewrite({ type: 'ReplacePrefixMatch', replacePrefixMatch: '/q' })],
          backendRefs: [backend('infra-backend-v1', 8080), backend('infra-backend-v2', 8080)],
        }),
      ],
    }),
  ).translation;
  t.same(proxyOf(balanced.apis[0]).target_list, [`${target('infra-backend-v1')}/q`, `${target('infra-backend-v2')}/q`], "the replacement on each target's path");
});

t.test('HTTPRouteDisallowedKind: a listener for TLSRoutes only does not take an HTTPRoute', async (t) => {
  const tlsOnly = gateway('tlsroutes-only', [{ ...listener('tls', 443, 'TLS', { kinds: [{ kind: 'TLSRoute' }] }), tls: { mode: 'Passthrough' } }]);
  const a = attachOne(route('disallowed-kind', { parentRefs: [ref('tlsroutes-only')] }), gatewaysOf(parent(tlsOnly)));
  t.equal(accepted(a), 'False NotAllowedByListeners');
  t.same(a.listeners, []);
  t.same(attachedRoutes(tlsOnly, [a]), new Map([['tls', 0]]), 'the Gateway counts no route');
  const httpForTls = gateway('http-tls-kinds', [http('http', 80, { kinds: [{ kind: 'TLSRoute' }] })]);
  t.equal(accepted(attachOne(route('r', { parentRefs: [ref('http-tls-kinds')] }), gatewaysOf(parent(httpForTls)))), 'False NotAllowedByListeners', 'an HTTP listener that allows only other kinds');
});

t.test('HTTPRouteInvalidParentRefNotMatchingListenerPort: NoMatchingParent', async (t) => {
  const r = route('httproute-listener-not-matching-route-port', { parentRefs: [ref('same-namespace', { namespace: INFRA, port: 81 })] });
  const { attachment, translation } = serve(r);
  t.equal(accepted(attachment), 'False NoMatchingParent');
  t.equal(cond(translation.resolvedRefs), 'True ResolvedRefs');
  t.same(translation.apis, []);
  t.same(attachedRoutes(SAME_NAMESPACE, [attachment]), new Map([['http', 0]]));
  t.equal(accepted(attachOne(route('r', { parentRefs: [ref('same-namespace', { port: 80 })] }))), 'True Accepted', 'the right port attaches');
});

t.test('HTTPRouteInvalidParentRefNotMatchingSectionName: NoMatchingParent', async (t) => {
  const r = route('httproute-listener-not-matching-section-name', { parentRefs: [ref('same-namespace', { port: 80, sectionName: 'http1' })] });
  const { attachment } = serve(r);
  t.equal(accepted(attachment), 'False NoMatchingParent');
  t.same(attachedRoutes(SAME_NAMESPACE, [attachment]), new Map([['http', 0]]));
});

t.test('HTTPRouteInvalidParentRefSectionNameNotMatchingPort: NoMatchingParent', async (t) => {
  const gw = gateway('gateway-with-one-not-matching-port-and-section-name-route', [http('http', 80, { from: 'All', kinds: [{ kind: 'HTTPRoute' }] })]);
  const r = route('httproute-listener-section-name-not-matching-port', { parentRefs: [ref('gateway-with-one-not-matching-port-and-section-name-route', { sectionName: 'http', port: 81 })] });
  const a = attachOne(r, gatewaysOf(parent(gw)));
  t.equal(accepted(a), 'False NoMatchingParent');
  t.same(attachedRoutes(gw, [a]), new Map([['http', 0]]));
});

t.test('HTTPRouteInvalidCrossNamespaceParentRef: a Gateway allowing its own namespace only', async (t) => {
  const r = route('invalid-cross-namespace-parent-ref', { namespace: WEB, parentRefs: [ref('same-namespace', { namespace: INFRA })], rules: [rule({ backendRefs: [backend('web-backend', 8080)] })] });
  const { attachment, translation } = serve(r);
  t.equal(accepted(attachment), 'False NotAllowedByListeners');
  t.equal(cond(translation.resolvedRefs), 'True ResolvedRefs');
  t.same(translation.apis, []);
  t.same(attachedRoutes(SAME_NAMESPACE, [attachment]), new Map([['http', 0]]));
  t.equal(accepted(attachOne(route('r', { namespace: WEB, parentRefs: [ref('all-namespaces', { namespace: INFRA })] }))), 'True Accepted', 'from All: attached');
});

t.test('allowedRoutes Selector: matchLabels and matchExpressions; unknown labels allow nothing', async (t) => {
  const labels = { team: 'a', tier: 'web' };
  t.ok(selectorMatches({ matchLabels: { team: 'a' } }, labels));
  t.notOk(selectorMatches({ matchLabels: { team: 'b' } }, labels));
  t.ok(selectorMatches({ matchExpressions: [{ key: 'tier', operator: 'In', values: ['web', 'api'] }] }, labels));
  t.notOk(selectorMatches({ matchExpressions: [{ key: 'tier', operator: 'In', values: ['api'] }] }, labels));
  t.notOk(selectorMatches({ matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['web'] }] }, labels));
  t.ok(selectorMatches({ matchExpressions: [{ key: 'zone', operator: 'NotIn', values: ['x'] }] }, labels), 'NotIn: a missing label is not in');
  t.ok(selectorMatches({ matchExpressions: [{ key: 'team', operator: 'Exists' }] }, labels));
  t.notOk(selectorMatches({ matchExpressions: [{ key: 'zone', operator: 'Exists' }] }, labels));
  t.ok(selectorMatches({ matchExpressions: [{ key: 'zone', operator: 'DoesNotExist' }] }, labels));
  t.notOk(selectorMatches({ matchExpressions: [{ key: 'team', operator: 'DoesNotExist' }] }, labels));
  t.notOk(selectorMatches({ matchExpressions: [{ key: 'team', operator: 'Gt', values: ['1'] }] }, labels), 'an unknown operator matches nothing');
  t.ok(selectorMatches({}, labels), 'an empty selector selects every namespace');
  t.notOk(selectorMatches(undefined, labels), 'no selector: nothing');
  const r = route('r', { namespace: 'unknown-ns', parentRefs: [ref('backend-namespaces', { namespace: INFRA })] });
  t.equal(accepted(attachOne(r)), 'False NotAllowedByListeners', 'labels unknown: not allowed');
  const infra = route('r', { parentRefs: [ref('backend-namespaces')] });
  t.equal(accepted(attachOne(infra)), 'False NotAllowedByListeners', "a namespace the selector does not select, the Gateway's own included");
});

t.test('a listener that is not accepted takes no route', async (t) => {
  const conflicted = gateway('conflicted', [http('a', 80), http('b', 80)]);
  t.equal(accepted(attachOne(route('r', { parentRefs: [ref('conflicted', { sectionName: 'a' })] }), gatewaysOf(parent(conflicted)))), 'False NotAllowedByListeners');
});

t.test('GatewayWithAttachedRoutes: routes counted per listener, unresolved ones too', async (t) => {
  const INFRA_ONLY = { from: 'Selector' as const, selector: { matchLabels: { 'kubernetes.io/metadata.name': INFRA } } };
  const one = gateway('gateway-with-one-attached-route', [http('http', 80, { kinds: [{ kind: 'HTTPRoute' }], ...INFRA_ONLY })]);
  const two = gateway('gateway-with-two-attached-routes', [http('http', 80, { hostname: 'foo.example.com', kinds: [{ kind: 'HTTPRoute' }], ...INFRA_ONLY })]);
  const unresolved = gateway('unresolved-gateway-with-one-attached-unresolved-route', [
    https('tls', 443, [{ group: '', kind: 'Secret', name: 'does-not-exist' }], {
      from: 'Selector',
      selector: { matchLabels: { 'kubernetes.io/metadata.name': INFRA } },
      kinds: [{ kind: 'HTTPRoute' }],
    }),
  ]);
  const noSecrets: GatewayReads = { secrets: new Map([[`${INFRA}/does-not-exist`, 'missing']]), permitted: () => false };
  const gatewayOf = gatewaysOf(parent(one), parent(two), parent(unresolved, noSecrets));
  const attach = (r: KubeObject) => attachRoute(r, gatewayOf, labelsOf);
  const r1 = attach(route('http-route-1', { parentRefs: [ref('gateway-with-one-attached-route')] }));
  const r2 = attach(route('http-route-2', { parentRefs: [ref('gateway-with-two-attached-routes')] }));
  const r3 = attach(route('http-route-3', { parentRefs: [ref('gateway-with-two-attached-routes')] }));
  const notAccepted = attach(route('http-route-not-accepted', { parentRefs: [ref('gateway-with-two-attached-routes')], hostnames: ['not-accepted.test.com'] }));
  const r4route = route('http-route-4', {
    parentRefs: [ref('unresolved-gateway-with-one-attached-unresolved-route', { sectionName: 'tls' })],
    rules: [rule({ backendRefs: [backend('does-not-exist', 8080)] })],
  });
  const r4 = attach(r4route);
  const all = [...r1, ...r2, ...r3, ...notAccepted, ...r4];
  t.same(attachedRoutes(one, all), new Map([['http', 1]]));
  t.same(attachedRoutes(two, all), new Map([['http', 2]]));
  t.same(notAccepted.map(accepted), ['False NoMatchingListenerHostname']);
  const tls = parent(unresolved, noSecrets).eval.listeners[0];
  t.equal(tls?.conditions.find((c) => c.type === 'Programmed')?.status, 'False', 'the listener with an unresolved certificate is not programmed');
  t.equal(tls?.conditions.find((c) => c.type === 'ResolvedRefs')?.status, 'False');
  t.same(attachedRoutes(unresolved, all), new Map([['tls', 1]]), 'yet the route attached to it counts');
  const r4translation = translateRoute(r4route, r4[0]?.listeners ?? [], facts());
  t.equal(r4translation.resolvedRefs.status, 'False', 'the route reports its unresolved backend');
  const served = translateRoute(route('r', { parentRefs: [] }), r4[0]?.listeners ?? [], facts());
  t.same(served.apis, [], 'an HTTPS listener without a resolved certificate serves nothing, even a valid backend');
  t.same(
    [...r2, ...r3].map((a) => a.listeners[0]?.hostnames),
    [['foo.example.com'], ['foo.example.com']],
    "routes without hostnames serve the listener's",
  );
  const twice = attach(route('twice', { parentRefs: [ref('gateway-with-one-attached-route'), ref('gateway-with-one-attached-route', { sectionName: 'http' })] }));
  t.equal(twice.length, 2);
  t.same(attachedRoutes(one, twice), new Map([['http', 1]]), 'a route reaching a listener through two parentRefs counts once');
});

t.test('HTTPS listeners: protocol https and every certificate of the listener, by name in the route namespace, namespace/name in another', async (t) => {
  const gw = gateway('secure', [
    https(
      'https',
      443,
      [
        { group: '', kind: 'Secret', name: 'local' },
        { group: '', kind: 'Secret', name: 'far', namespace: WEB },
      ],
      { hostname: 'secure.example.com', from: 'All' },
    ),
  ]);
  const reads: GatewayReads = {
    secrets: new Map([
      [`${INFRA}/local`, 'tls'],
      [`${WEB}/far`, 'tls'],
    ]),
    permitted: () => true,
  };
  const { translation } = serve(route('r', { parentRefs: [ref('secure')] }), gatewaysOf(parent(gw, reads)));
  const spec = translation.apis[0]?.spec;
  t.equal(spec?.protocol, 'https');
  t.same(spec?.certificate_secret_names, ['local', `${WEB}/far`], 'a certificate of another namespace named with its namespace');
  t.equal(spec?.domain, 'secure.example.com');
  t.equal(spec?.name, `${INFRA}/r secure.example.com/`);

  // a route of another namespace, whose rule names a backend there: none of the listener's certificates is its own
  const base = facts();
  const backends: BackendFacts = { ...base, services: new Map([...base.services, ['elsewhere/svc', [{ port: 80 }]]]) };
  const far = serve(
    route('f', { namespace: 'elsewhere', parentRefs: [{ ...ref('secure'), namespace: INFRA }], rules: [rule({ backendRefs: [backend('svc', 80)] })] }),
    gatewaysOf(parent(gw, reads)),
    backends,
  );
  t.equal(far.attachment.accepted.status, 'True', 'attached (the listener takes routes from All namespaces)');
  t.equal(far.translation.resolvedRefs.status, 'True', 'its backend resolves');
  t.same(
    far.translation.apis.map((a) => a.spec.certificate_secret_names),
    [[`${INFRA}/local`, `${WEB}/far`]],
    'a route of another namespace is served with the listener’s certificates, each named with its namespace',
  );
  const none = serve(route('n', { parentRefs: [ref('secure')] }), gatewaysOf(parent(gw, { secrets: new Map(), permitted: () => true })));
  t.equal(none.attachment.accepted.status, 'True', 'attached to a listener whose certificates did not resolve');
  t.same(none.translation.apis, [], 'an HTTPS listener without a certificate serves nothing');
});

t.test('keys: stable, one per protocol, host and match; listeners of one protocol sharing a host make one ApiDefinition', async (t) => {
  const gw = gateway('two', [http('a', 80, { hostname: 'a.com' }), http('b', 8080, { hostname: 'a.com' })]);
  const r = route('r', {
    parentRefs: [ref('two')],
    hostnames: ['a.com'],
    rules: [rule({ matches: [prefix('/x'), prefix('/y')], backendRefs: [backend('infra-backend-v1', 8080)] }), rule({ matches: [prefix('/x')], backendRefs: [backend('infra-backend-v2', 8080)] })],
  });
  const { attachment, translation } = serve(r, gatewaysOf(parent(gw)));
  t.equal(attachment.listeners.length, 2, 'attached to both listeners');
  t.same(translation.apis.map((a) => proxyOf(a).listen_path).sort(), ['/x', '/y'], 'Tyk serves a domain and listen path once whatever the port: two listeners, one ApiDefinition per path');
  t.equal(new Set(translation.apis.map((a) => a.key)).size, 2);
  t.ok(
    translation.apis.filter((a) => proxyOf(a).listen_path === '/x').every((a) => proxyOf(a).target_url === target('infra-backend-v1')),
    'the first rule wins an identical match',
  );
  const again = serve(r, gatewaysOf(parent(gw))).translation;
  t.same(
    again.apis.map((a) => a.key),
    translation.apis.map((a) => a.key),
  );
});

t.test('Tyk ports: HTTPS routes on GATEWAY_HTTPS_PORT (8443 by default), HTTP ones on GATEWAY_HTTP_PORT (Tyk’s own by default); a host on both is served over HTTPS', async (t) => {
  const both = gateway('both', [
    http('http', 80, { hostname: 'a.com' }),
    https('https', 443, [{ group: '', kind: 'Secret', name: 'tls' }], { hostname: 'a.com' }),
    http('other', 8080, { hostname: 'b.com' }),
  ]);
  const reads: GatewayReads = { secrets: new Map([[`${INFRA}/tls`, 'tls']]), permitted: () => true };
  const r = route('r', { parentRefs: [ref('both')], rules: [rule({ matches: [prefix('/p')], backendRefs: [backend('infra-backend-v1', 8080)] })] });
  const byDomain = (apis: readonly RouteApi[]) => new Map(apis.map((a) => [String(a.spec.domain), a.spec]));
  const defaults = byDomain(serve(r, gatewaysOf(parent(both, reads))).translation.apis);
  t.same([...defaults.keys()].sort(), ['a.com', 'b.com']);
  t.match(defaults.get('a.com'), { protocol: 'https', listen_port: 8443 }, 'a.com on both listeners: served once, over TLS, on 8443');
  t.match(defaults.get('b.com'), { protocol: 'http' });
  t.equal(defaults.get('b.com')?.listen_port, undefined, 'HTTP on Tyk’s own port: no listen_port');
  const evaluated = (settings: typeof S) => ({ gateway: both, eval: evaluateGateway(both, reads, settings), ours: true });
  const moved = byDomain(serve(r, gatewaysOf(evaluated({ ...S, httpPort: 8081, httpsPort: 0 }))).translation.apis);
  t.equal(moved.get('a.com')?.listen_port, undefined, 'GATEWAY_HTTPS_PORT=0: HTTPS on Tyk’s own port (use_ssl)');
  t.equal(moved.get('b.com')?.listen_port, 8081, 'GATEWAY_HTTP_PORT');
});

t.test('backendServicesOf: the Services to read, deduplicated, sorted', async (t) => {
  const r = route('r', {
    parentRefs: [ref('same-namespace')],
    rules: [rule({ backendRefs: [backend('b', 80), backend('a', 80, { namespace: WEB }), backend('x', 80, { kind: 'ConfigMap' })] }), rule({ backendRefs: [backend('b', 81)] })],
  });
  t.same(backendServicesOf(r), [`${INFRA}/b`, `${WEB}/a`]);
});

// ---- What Tyk cannot serve: each a line, and the route not served

function unsupportedOf(r: Json): RouteTranslation {
  return serve(route('unsupported', { parentRefs: [ref('same-namespace')], rules: [{ backendRefs: [backend('infra-backend-v1', 8080)], ...r }] })).translation;
}

const exact = (value: string): Json => ({ path: { type: 'Exact', value } });

t.test('HTTPRouteExactPathMatching (unsupported): Exact paths are UnsupportedValue, naming each, and nothing is served', async (t) => {
  // Tyk's listen paths are prefixes: an API at /one would also take /one/example, which the test expects to be a 404
  const tr = serve(
    route('exact-matching', {
      parentRefs: [ref('same-namespace')],
      rules: [rule({ matches: [exact('/one')], backendRefs: [backend('infra-backend-v1', 8080)] }), rule({ matches: [exact('/two')], backendRefs: [backend('infra-backend-v2', 8080)] })],
    }),
  ).translation;
  t.same(tr.unsupported, [
    'spec.rules[0].matches[0].path: Exact paths are not supported by Tyk (only PathPrefix)',
    'spec.rules[1].matches[0].path: Exact paths are not supported by Tyk (only PathPrefix)',
  ]);
  t.same(tr.apis, []);
  const regex = unsupportedOf({ matches: [prefix('/ok'), { path: { type: 'RegularExpression', value: '/r.*' } }] });
  t.match(regex.unsupported, [/^spec\.rules\[0\]\.matches\[1\]\.path: RegularExpression/]);
  t.same(regex.apis, [], 'one unsupported match: nothing of the route is served');
});

t.test('HTTPRoutePathMatchOrder (unsupported): its Exact matches are named; its prefixes are not served alone', async (t) => {
  const tr = serve(
    route('path-matching-order', {
      parentRefs: [ref('same-namespace')],
      rules: [
        rule({ matches: [exact('/match')], backendRefs: [backend('infra-backend-v1', 8080)] }),
        rule({ matches: [exact('/match/exact')], backendRefs: [backend('infra-backend-v2', 8080)] }),
        rule({ matches: [prefix('/match/')], backendRefs: [backend('infra-backend-v3', 8080)] }),
        rule({ matches: [prefix('/match/prefix/one')], backendRefs: [backend('infra-backend-v2', 8080)] }),
      ],
    }),
  ).translation;
  t.same(
    tr.unsupported.map((l) => l.split(':')[0]),
    ['spec.rules[0].matches[0].path', 'spec.rules[1].matches[0].path'],
  );
  t.same(tr.apis, [], 'the prefixes alone would send /match to v3, which the route gives to v1');
});

t.test('unsupported: header, query parameter and method matches', async (t) => {
  const tr = unsupportedOf({ matches: [{ ...prefix('/'), headers: [{ name: 'version', value: 'one' }] }, { queryParams: [{ name: 'q', value: '1' }] }, { method: 'GET' }] });
  t.same(tr.unsupported, [
    'spec.rules[0].matches[0].headers: header matches are not supported by Tyk',
    'spec.rules[0].matches[1].queryParams: query parameter matches are not supported by Tyk',
    'spec.rules[0].matches[2].method: method matches are not supported by Tyk',
  ]);
  t.same(tr.apis, []);
});

const redirect = (requestRedirect: Json): Json => ({ type: 'RequestRedirect', requestRedirect });

for (const [test, filter] of [
  ['HTTPRouteRedirectHostAndStatus', redirect({ statusCode: 301, hostname: 'example.org' })],
  ['HTTPRouteRedirectPath', redirect({ path: { type: 'ReplacePrefixMatch', replacePrefixMatch: '/replacement-prefix' } })],
  ['HTTPRouteRedirectPort', redirect({ port: 8083 })],
  ['HTTPRouteRedirectScheme', redirect({ scheme: 'https' })],
  ['HTTPRouteRedirectPortAndScheme', redirect({ port: 8080, scheme: 'https', hostname: 'example.org' })],
] as const) {
  t.test(`${test} (unsupported): RequestRedirect is UnsupportedValue, and nothing is served`, async (t) => {
    // a redirect keeps the request's path (or the rest of it), which no static reply of Tyk's can
    const tr = unsupportedOf({ matches: [prefix('/redirect')], filters: [filter] });
    t.same(tr.unsupported, ['spec.rules[0].filters[0]: RequestRedirect is not supported by Tyk']);
    t.same(tr.apis, []);
  });
}

t.test('unsupported: mirrors', async (t) => {
  const tr = unsupportedOf({ filters: [{ type: 'RequestMirror', requestMirror: { backendRef: { name: 'infra-backend-v2', port: 8080 } } }] });
  t.same(tr.unsupported, ['spec.rules[0].filters[0]: RequestMirror is not supported by Tyk']);
});

t.test('HTTPRouteTimeoutRequest, HTTPRouteTimeoutBackendRequest: the shorter timeout, whole seconds, every method and path', async (t) => {
  const served = (timeouts: Json) => {
    const tr = serve(
      route('timeout', { parentRefs: [ref('same-namespace')], rules: [rule({ matches: [prefix('/request-timeout')], backendRefs: [backend('infra-backend-v1', 8080)], extra: { timeouts } })] }),
    ).translation;
    t.same(tr.unsupported, [], JSON.stringify(timeouts));
    return versionOf(tr.apis[0]);
  };
  const expected = (timeout: number) => ({
    name: 'Default',
    use_extended_paths: true,
    extended_paths: { hard_timeouts: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD', 'CONNECT', 'TRACE'].map((method) => ({ path: '.*', method, timeout })) },
  });
  t.same(served({ request: '10s' }), expected(10), 'request: 10s');
  t.same(served({ backendRequest: '2s' }), expected(2), 'backendRequest alone');
  t.same(served({ request: '1m30s', backendRequest: '45s' }), expected(45), 'the shorter of the two');
  t.same(served({ request: '1h' }), expected(3600), 'hours');
  t.same(served({ request: '2s500ms500ms' }), expected(3), 'the parts added up');
  t.same(served({ request: '0s' }), { name: 'Default' }, '0s: no timeout');
  t.same(served({ request: '0s', backendRequest: '5s' }), expected(5), 'a zero request timeout leaves the backend one');
  t.same(TIMEOUT_METHODS, ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD', 'CONNECT', 'TRACE'], 'every method Tyk Operator’s schema allows');
  t.equal(durationMs('1h2m3s4ms'), 3_723_004);
  t.equal(durationMs('500ms'), 500);
  for (const bad of ['', '10', '1.5s', '1d', '123456s', '1s1s1s1s1s', '-1s']) t.equal(durationMs(bad), undefined, `${JSON.stringify(bad)} is not a duration`);
});

t.test('timeouts Tyk cannot keep are named, and nothing is served', async (t) => {
  const sub = unsupportedOf({ timeouts: { request: '500ms' } });
  t.same(sub.unsupported, ["spec.rules[0].timeouts.request: 500ms is not whole seconds (Tyk's enforced timeouts are in seconds)"]);
  t.same(sub.apis, []);
  const bad = unsupportedOf({ timeouts: { backendRequest: 'soon', idle: '1s' } });
  t.same(bad.unsupported, ['spec.rules[0].timeouts.backendRequest: "soon" is not a Gateway API duration (such as 10s, 1m30s, 500ms)', 'spec.rules[0].timeouts.idle: idle is not supported by Tyk']);
  t.same(unsupportedOf({ timeouts: 'x' }).unsupported, [], 'timeouts that are not an object ask for nothing');
});

t.test('HTTPRouteRewritePath (full path, unsupported): ReplaceFullPath is UnsupportedValue', async (t) => {
  const full = unsupportedOf({ matches: [prefix('/full/one')], filters: [rewrite({ type: 'ReplaceFullPath', replaceFullPath: '/one' })] });
  t.same(full.unsupported, ['spec.rules[0].filters[0].urlRewrite.path: ReplaceFullPath is not supported by Tyk (only ReplacePrefixMatch)']);
  t.same(full.apis, []);
});

t.test('HTTPRouteRewriteHost (unsupported): a hostname rewrite is UnsupportedValue', async (t) => {
  // Tyk sends the client's Host or its target's, never another one
  const host = unsupportedOf({ matches: [prefix('/one')], filters: [{ type: 'URLRewrite', urlRewrite: { hostname: 'one.example.org' } }] });
  t.same(host.unsupported, ['spec.rules[0].filters[0].urlRewrite.hostname: rewriting the host is not supported by Tyk']);
  t.same(host.apis, []);
});

t.test('unsupported: other filters, backend filters, other rule fields', async (t) => {
  const tr = unsupportedOf({
    filters: [
      { type: 'ExtensionRef', extensionRef: { group: 'x', kind: 'Y', name: 'z' } },
      { type: 'CORS', cors: {} },
    ],
    backendRefs: [backend('infra-backend-v1', 8080, { filters: [MODIFY('requestHeaderModifier', false)] })],
    retry: { attempts: 2 },
  });
  t.same(tr.unsupported, [
    'spec.rules[0].retry: retry is not supported by Tyk',
    'spec.rules[0].backendRefs[0].filters: filters on a backend are not supported by Tyk',
    'spec.rules[0].filters[0]: ExtensionRef is not supported',
    'spec.rules[0].filters[1]: CORS is not supported',
  ]);
  t.same(tr.apis, []);
  t.equal(cond(tr.resolvedRefs), 'True ResolvedRefs', 'ResolvedRefs is still stated');
});

t.test('a PathPrefix the specification refuses (rules a CEL-less API server lets through) is named, and nothing is served', async (t) => {
  for (const [value, problem] of [
    ['app', /must be an absolute path/],
    ['/a//b', /must not contain '\/\/'/],
    ['/a/./b', /must not contain '\/\.\/'/],
    ['/a/../b', /must not contain '\/\.\.\/'/],
    ['/a%2fb', /must not contain '%2f'/],
    ['/a%2Fb', /must not contain '%2F'/],
    ['/a#b', /must not contain '#'/],
    ['/a/..', /must not end with '\/\.\.'/],
    ['/a/.', /must not end with '\/\.'/],
    ['/a b', /holds a character a path may not/],
  ] as const) {
    t.match(pathProblem(value), problem, value);
    const { translation } = serve(
      route('r', { parentRefs: [ref('same-namespace')], rules: [rule({ matches: [{ path: { type: 'PathPrefix', value } }], backendRefs: [backend('infra-backend-v1', 8080)] })] }),
    );
    t.same(translation.apis, [], `${value}: not served`);
    t.match(translation.unsupported, [/^spec\.rules\[0\]\.matches\[0\]\.path: /], `${value}: the field named`);
  }
  for (const value of ['/', '/a', '/a/b/', "/a-b_c.d~e!$&'()*+,;=:@", '/caf%C3%A9']) t.equal(pathProblem(value), undefined, `${value} is a path`);
});
