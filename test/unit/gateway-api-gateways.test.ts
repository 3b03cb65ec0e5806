/**
 * A Gateway evaluated and its status (lib/kinds/gateway-api/listeners.ts, status.ts): protocols,
 * route kinds, conflicts, TLS certificate references and ReferenceGrants, the Gateway's and each
 * listener's conditions, and the statuses written (times kept while a status holds, other
 * controllers' route parents kept, addresses, the GatewayClass's versions, sameStatus).
 */
import t from 'tap';
import { certificateRefsOf, evaluateGateway, type GatewayReads, type ListenerEval, type SecretRef } from '../../lib/kinds/gateway-api/listeners.js';
import { DEFAULT_CONTROLLER_NAME, DEFAULT_GATEWAY_API_SETTINGS, type Json, type NewCondition } from '../../lib/kinds/gateway-api/model.js';
import { classStatus, gatewayStatus, routeParents, sameStatus, withTimes } from '../../lib/kinds/gateway-api/status.js';
import type { KubeObject } from '../../lib/kube/types.js';

const INFRA = 'gateway-conformance-infra';
const WEB = 'gateway-conformance-web-backend';
const S = DEFAULT_GATEWAY_API_SETTINGS;

interface ListenerOpts {
  readonly hostname?: string;
  readonly from?: 'Same' | 'All' | 'Selector';
  readonly kinds?: readonly Json[];
  readonly tls?: Json;
}

function listener(name: string, port: number, protocol: string, o: ListenerOpts = {}): Json {
  const allowedRoutes: Json = { namespaces: { from: o.from ?? 'Same' } };
  if (o.kinds !== undefined) allowedRoutes.kinds = o.kinds;
  return { name, port, protocol, allowedRoutes, ...(o.hostname === undefined ? {} : { hostname: o.hostname }), ...(o.tls === undefined ? {} : { tls: o.tls }) };
}
const http = (name: string, port: number, o: ListenerOpts = {}) => listener(name, port, 'HTTP', o);
const https = (name: string, port: number, certificateRefs: readonly Json[], o: ListenerOpts = {}) => listener(name, port, 'HTTPS', { ...o, tls: { mode: 'Terminate', certificateRefs, ...o.tls } });
const secret = (name: string, namespace?: string): Json => ({ group: '', kind: 'Secret', name, ...(namespace === undefined ? {} : { namespace }) });

function gateway(o: { name?: string; namespace?: string; listeners: readonly Json[]; addresses?: readonly Json[] }): KubeObject {
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: { name: o.name ?? 'gw', namespace: o.namespace ?? INFRA, generation: 1 },
    spec: { gatewayClassName: 'tyk', listeners: [...o.listeners], ...(o.addresses === undefined ? {} : { addresses: [...o.addresses] }) },
  };
}

/** Secrets as the wiring read them, and which cross-namespace refs a ReferenceGrant permits. */
function reads(secrets: Record<string, 'tls' | 'invalid' | 'missing'> = {}, permitted: (ref: SecretRef) => boolean = () => false): GatewayReads & { asked: SecretRef[] } {
  const asked: SecretRef[] = [];
  return {
    secrets: new Map(Object.entries(secrets)),
    permitted: (ref) => {
      asked.push(ref);
      return permitted(ref);
    },
    asked,
  };
}

function cond(l: { conditions: readonly NewCondition[] }, type: string): NewCondition | undefined {
  return l.conditions.find((c) => c.type === type);
}

function statusOf(l: { conditions: readonly NewCondition[] }, type: string): string {
  const c = cond(l, type);
  return c === undefined ? 'absent' : `${c.status} ${c.reason}`;
}

function only(ls: readonly ListenerEval[], name: string): ListenerEval {
  const l = ls.find((x) => x.name === name);
  if (l === undefined) throw new Error(`no listener ${name}`);
  return l;
}

const HTTPROUTE = [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute' }];

t.test('an HTTP listener: accepted, programmed, HTTPRoute by default, from Same by default', async (t) => {
  const gw = gateway({ listeners: [{ name: 'web', port: 80, protocol: 'HTTP' }] });
  const ev = evaluateGateway(gw, reads(), S);
  const l = only(ev.listeners, 'web');
  t.same(
    l.conditions.map((c) => c.type),
    ['Accepted', 'Conflicted', 'ResolvedRefs', 'Programmed'],
    'all four conditions, in order',
  );
  t.equal(statusOf(l, 'Accepted'), 'True Accepted');
  t.equal(statusOf(l, 'Conflicted'), 'False NoConflicts');
  t.equal(statusOf(l, 'ResolvedRefs'), 'True ResolvedRefs');
  t.equal(statusOf(l, 'Programmed'), 'True Programmed');
  t.ok(l.accepted && l.programmed);
  t.same(l.supportedKinds, HTTPROUTE);
  t.same(l.allowedRoutes, { from: 'Same', kinds: ['HTTPRoute'] });
  t.same(
    ev.conditions.map((c) => `${c.type} ${c.status} ${c.reason}`),
    ['Accepted True Accepted', 'Programmed True Programmed'],
  );
  for (const c of [...ev.conditions, ...l.conditions]) t.match(c.message, /^[^\n]+$/, `${c.type}: a message of one line`);
});

t.test('a listener of another protocol is not accepted and supports no kinds', async (t) => {
  const ev = evaluateGateway(gateway({ listeners: [listener('tcp', 9000, 'TCP'), http('web', 80)] }), reads(), S);
  const tcp = only(ev.listeners, 'tcp');
  t.equal(statusOf(tcp, 'Accepted'), 'False UnsupportedProtocol');
  t.equal(statusOf(tcp, 'Programmed'), 'False Invalid');
  t.same(tcp.supportedKinds, []);
  t.notOk(tcp.accepted);
  t.equal(statusOf(ev, 'Accepted'), 'True Accepted', 'one valid listener is enough for the Gateway');
  t.equal(statusOf(ev, 'Programmed'), 'True Programmed');
});

t.test('no valid listener: the Gateway is not accepted (ListenersNotValid) nor programmed', async (t) => {
  const ev = evaluateGateway(gateway({ listeners: [listener('tls', 443, 'TLS', { tls: { mode: 'Passthrough' } })] }), reads(), S);
  t.equal(statusOf(ev, 'Accepted'), 'False ListenersNotValid');
  t.equal(statusOf(ev, 'Programmed'), 'False Invalid');
});

t.test('spec.addresses: Accepted=False UnsupportedAddress', async (t) => {
  const ev = evaluateGateway(gateway({ listeners: [http('web', 80)], addresses: [{ type: 'IPAddress', value: '10.0.0.1' }] }), reads(), S);
  t.equal(statusOf(ev, 'Accepted'), 'False UnsupportedAddress');
  t.equal(statusOf(ev, 'Programmed'), 'False Invalid');
  t.ok(only(ev.listeners, 'web').programmed, 'its listeners are still evaluated');
});

t.test('no listener programmed: the Gateway is accepted but not programmed', async (t) => {
  const ev = evaluateGateway(gateway({ listeners: [https('tls', 443, [secret('does-not-exist')])] }), reads(), S);
  t.equal(statusOf(ev, 'Accepted'), 'True Accepted');
  t.equal(statusOf(ev, 'Programmed'), 'False Invalid');
});

t.test('GatewayInvalidRouteKind: unsupported route kinds are named, the supported ones kept', async (t) => {
  const onlyInvalid = evaluateGateway(gateway({ listeners: [http('http', 80, { from: 'All', kinds: [{ kind: 'InvalidRoute' }] })] }), reads(), S);
  const l1 = only(onlyInvalid.listeners, 'http');
  t.equal(statusOf(l1, 'ResolvedRefs'), 'False InvalidRouteKinds');
  t.same(l1.supportedKinds, [], 'gateway-only-invalid-route-kind: no supportedKinds');
  t.match(cond(l1, 'ResolvedRefs')?.message, /InvalidRoute/);
  t.equal(statusOf(l1, 'Programmed'), 'False Invalid');
  t.same(l1.allowedRoutes.kinds, [], 'no route kind may attach');
  const mixed = evaluateGateway(gateway({ listeners: [http('http', 80, { from: 'All', kinds: [{ kind: 'InvalidRoute' }, { kind: 'HTTPRoute' }] })] }), reads(), S);
  const l2 = only(mixed.listeners, 'http');
  t.equal(statusOf(l2, 'ResolvedRefs'), 'False InvalidRouteKinds');
  t.same(l2.supportedKinds, HTTPROUTE, 'gateway-supported-and-invalid-route-kind: HTTPRoute listed');
  t.same(l2.allowedRoutes.kinds, ['HTTPRoute']);
  t.ok(l2.accepted, 'still accepted: HTTPRoutes attach');
  const otherGroup = evaluateGateway(gateway({ listeners: [http('http', 80, { kinds: [{ group: 'example.com', kind: 'HTTPRoute' }] })] }), reads(), S);
  t.equal(statusOf(only(otherGroup.listeners, 'http'), 'ResolvedRefs'), 'False InvalidRouteKinds', 'an HTTPRoute of another group is another kind');
});

t.test('conflicts: same port, protocol and hostname; same port, different protocols', async (t) => {
  const host = evaluateGateway(gateway({ listeners: [http('a', 80, { hostname: 'foo.com' }), http('b', 80, { hostname: 'foo.com' }), http('c', 80, { hostname: 'bar.com' })] }), reads(), S);
  for (const name of ['a', 'b']) {
    const l = only(host.listeners, name);
    t.equal(statusOf(l, 'Conflicted'), 'True HostnameConflict', `${name}: conflicted`);
    t.notOk(l.accepted, `${name}: routes do not attach`);
    t.equal(statusOf(l, 'Accepted'), 'False HostnameConflict');
    t.equal(statusOf(l, 'Programmed'), 'False Invalid');
  }
  t.equal(statusOf(only(host.listeners, 'c'), 'Conflicted'), 'False NoConflicts', 'another hostname on the port is distinct');
  t.equal(statusOf(host, 'Accepted'), 'True ListenersNotValid', 'the Gateway is accepted with its distinct listener, and says some are not valid');
  t.match(cond(host, 'Accepted')?.message, /a, b conflict.*accepted: c/, 'naming the conflicted and the accepted');
  t.equal(statusOf(host, 'Programmed'), 'True Programmed');
  t.ok(only(host.listeners, 'c').programmed);
  const noHost = evaluateGateway(gateway({ listeners: [http('a', 80), http('b', 80)] }), reads(), S);
  t.equal(statusOf(only(noHost.listeners, 'b'), 'Conflicted'), 'True HostnameConflict', 'two listeners without hostname conflict');
  const proto = evaluateGateway(gateway({ listeners: [http('a', 8080), https('b', 8080, [secret('cert')]), http('c', 80)] }), reads({ [`${INFRA}/cert`]: 'tls' }), S);
  t.equal(statusOf(only(proto.listeners, 'a'), 'Conflicted'), 'True ProtocolConflict');
  t.equal(statusOf(only(proto.listeners, 'b'), 'Conflicted'), 'True ProtocolConflict');
  t.equal(statusOf(only(proto.listeners, 'c'), 'Conflicted'), 'False NoConflicts');
  const ports = evaluateGateway(gateway({ listeners: [http('a', 80), http('b', 81)] }), reads(), S);
  t.ok(
    ports.listeners.every((l) => l.programmed),
    'different ports never conflict',
  );
});

t.test('HTTPS: certificates resolved from Secrets of the same namespace', async (t) => {
  const r = reads({ [`${INFRA}/cert`]: 'tls' });
  const ev = evaluateGateway(gateway({ listeners: [https('https', 443, [secret('cert')], { hostname: 'secure.example.com' })] }), r, S);
  const l = only(ev.listeners, 'https');
  t.equal(statusOf(l, 'ResolvedRefs'), 'True ResolvedRefs');
  t.equal(statusOf(l, 'Programmed'), 'True Programmed');
  t.same(l.certificates, [{ namespace: INFRA, name: 'cert' }]);
  t.equal(l.hostname, 'secure.example.com');
  t.same(r.asked, [], 'a ReferenceGrant is not asked about for the same namespace');
});

t.test('HTTPS: each bad certificate ref is InvalidCertificateRef', async (t) => {
  const cases: [string, Json[], Record<string, 'tls' | 'invalid' | 'missing'>][] = [
    ['no certificateRefs', [], {}],
    ['a Secret that does not exist', [secret('gone')], { [`${INFRA}/gone`]: 'missing' }],
    ['a Secret not read at all', [secret('unread')], {}],
    ['a Secret without tls.crt and tls.key', [secret('opaque')], { [`${INFRA}/opaque`]: 'invalid' }],
    ['a ConfigMap', [{ group: '', kind: 'ConfigMap', name: 'cert' }], { [`${INFRA}/cert`]: 'tls' }],
    ['a Secret of another group', [{ group: 'example.com', kind: 'Secret', name: 'cert' }], { [`${INFRA}/cert`]: 'tls' }],
  ];
  for (const [what, refs, secrets] of cases) {
    const l = only(evaluateGateway(gateway({ listeners: [https('https', 443, refs)] }), reads(secrets), S).listeners, 'https');
    t.equal(statusOf(l, 'ResolvedRefs'), 'False InvalidCertificateRef', what);
    t.equal(statusOf(l, 'Programmed'), 'False Invalid', `${what}: not programmed`);
    t.ok(l.accepted, `${what}: still accepted (routes attach)`);
    t.same(l.certificates, [], `${what}: no certificate`);
  }
  const two = only(
    evaluateGateway(gateway({ listeners: [https('https', 443, [secret('good'), secret('opaque'), secret('far', WEB)])] }), reads({ [`${INFRA}/good`]: 'tls', [`${INFRA}/opaque`]: 'invalid' }), S)
      .listeners,
    'https',
  );
  t.equal(statusOf(two, 'ResolvedRefs'), 'False InvalidCertificateRef', "the first problem's reason");
  t.match(cond(two, 'ResolvedRefs')?.message, /certificateRefs\[1\].*; .*certificateRefs\[2\].*ReferenceGrant/, 'the message names each problem');
  t.same(two.certificates, [{ namespace: INFRA, name: 'good' }], 'those that resolved are kept');
});

t.test('HTTPS: tls.mode Passthrough is not supported', async (t) => {
  const l = only(evaluateGateway(gateway({ listeners: [https('https', 443, [secret('cert')], { tls: { mode: 'Passthrough' } })] }), reads({ [`${INFRA}/cert`]: 'tls' }), S).listeners, 'https');
  t.equal(statusOf(l, 'Accepted'), 'False UnsupportedValue');
  t.notOk(l.accepted);
});

t.test("certificateRefsOf: every listener's refs with defaults and field paths", async (t) => {
  const gw = gateway({ listeners: [http('web', 80), https('a', 443, [{ name: 'one' }, secret('two', WEB)], { hostname: 'a.com' })] });
  t.same(certificateRefsOf(gw), [
    { field: 'spec.listeners[1].tls.certificateRefs[0]', group: '', kind: 'Secret', namespace: INFRA, name: 'one' },
    { field: 'spec.listeners[1].tls.certificateRefs[1]', group: '', kind: 'Secret', namespace: WEB, name: 'two' },
  ]);
});

const crossGateway = () => gateway({ listeners: [https('https', 443, [secret('certificate', WEB)], { from: 'All' })] });

t.test('GatewaySecretMissingReferenceGrant: RefNotPermitted', async (t) => {
  const r = reads({ [`${WEB}/certificate`]: 'tls' });
  const l = only(evaluateGateway(crossGateway(), r, S).listeners, 'https');
  t.equal(statusOf(l, 'ResolvedRefs'), 'False RefNotPermitted');
  t.same(l.supportedKinds, HTTPROUTE);
  t.same(l.certificates, [], 'a Secret not permitted is not served');
  t.same(
    r.asked.map((x) => `${x.namespace}/${x.name}`),
    [`${WEB}/certificate`],
    'the grant is asked about for the ref into another namespace',
  );
});

t.test('GatewaySecretInvalidReferenceGrant: a grant for another Secret permits nothing here', async (t) => {
  const grantsOnly = (ref: SecretRef) => ref.name === 'not-the-certificate';
  const l = only(evaluateGateway(crossGateway(), reads({ [`${WEB}/certificate`]: 'tls' }, grantsOnly), S).listeners, 'https');
  t.equal(statusOf(l, 'ResolvedRefs'), 'False RefNotPermitted');
  t.equal(statusOf(l, 'Programmed'), 'False Invalid');
});

t.test('GatewaySecretReferenceGrantAllInNamespace: a grant to every Secret of the namespace', async (t) => {
  const everySecretOfWeb = (ref: SecretRef) => ref.namespace === WEB && ref.kind === 'Secret';
  const ev = evaluateGateway(crossGateway(), reads({ [`${WEB}/certificate`]: 'tls' }, everySecretOfWeb), S);
  const l = only(ev.listeners, 'https');
  t.equal(statusOf(l, 'Accepted'), 'True Accepted');
  t.equal(statusOf(l, 'ResolvedRefs'), 'True ResolvedRefs');
  t.equal(statusOf(l, 'Programmed'), 'True Programmed');
  t.same(l.certificates, [{ namespace: WEB, name: 'certificate' }]);
  t.equal(statusOf(ev, 'Programmed'), 'True Programmed');
});

t.test('GatewaySecretReferenceGrantSpecific: a grant naming the Secret', async (t) => {
  const thatSecret = (ref: SecretRef) => ref.namespace === WEB && ref.name === 'certificate';
  const l = only(evaluateGateway(crossGateway(), reads({ [`${WEB}/certificate`]: 'tls' }, thatSecret), S).listeners, 'https');
  t.equal(statusOf(l, 'ResolvedRefs'), 'True ResolvedRefs');
  t.equal(statusOf(l, 'Programmed'), 'True Programmed');
});

const NOW = '2026-01-02T03:04:05Z';
const EARLIER = '2025-12-31T00:00:00Z';

t.test('withTimes: observedGeneration, and a transition time kept while the status holds', async (t) => {
  const current = [
    { type: 'Accepted', status: 'True', reason: 'Accepted', message: 'old', observedGeneration: 1, lastTransitionTime: EARLIER },
    { type: 'Programmed', status: 'True', reason: 'Programmed', message: 'old', observedGeneration: 1, lastTransitionTime: EARLIER },
  ];
  const next: NewCondition[] = [
    { type: 'Accepted', status: 'True', reason: 'Accepted', message: 'new' },
    { type: 'Programmed', status: 'False', reason: 'Invalid', message: 'no' },
    { type: 'ResolvedRefs', status: 'True', reason: 'ResolvedRefs', message: 'yes' },
  ];
  t.same(withTimes(current, next, 2, NOW), [
    { type: 'Accepted', status: 'True', reason: 'Accepted', message: 'new', observedGeneration: 2, lastTransitionTime: EARLIER },
    { type: 'Programmed', status: 'False', reason: 'Invalid', message: 'no', observedGeneration: 2, lastTransitionTime: NOW },
    { type: 'ResolvedRefs', status: 'True', reason: 'ResolvedRefs', message: 'yes', observedGeneration: 2, lastTransitionTime: NOW },
  ]);
  t.same(
    withTimes('not a list', next.slice(0, 1), 3, NOW).map((c) => c.lastTransitionTime),
    [NOW],
    'anything unreadable as conditions: now',
  );
});

t.test('routeParents: other controllers kept, ours replaced, times kept', async (t) => {
  const theirs = { parentRef: { name: 'other-gw' }, controllerName: 'example.com/other', conditions: [{ type: 'Accepted', status: 'True' }] };
  const mineBefore = {
    parentRef: { name: 'gw', sectionName: 'web' },
    controllerName: DEFAULT_CONTROLLER_NAME,
    conditions: [{ type: 'Accepted', status: 'True', reason: 'Accepted', message: 'x', observedGeneration: 1, lastTransitionTime: EARLIER }],
  };
  const stale = { parentRef: { name: 'removed-gw' }, controllerName: DEFAULT_CONTROLLER_NAME, conditions: [] };
  const accepted: NewCondition = { type: 'Accepted', status: 'True', reason: 'Accepted', message: 'y' };
  const resolved: NewCondition = { type: 'ResolvedRefs', status: 'False', reason: 'BackendNotFound', message: 'z' };
  const out = routeParents([theirs, mineBefore, stale], [{ parentRef: { name: 'gw', sectionName: 'web' }, conditions: [accepted, resolved] }], DEFAULT_CONTROLLER_NAME, 2, NOW);
  t.equal(out.length, 2, 'our entry for a parent no longer ours to report is dropped');
  t.same(out[0], theirs, "another controller's entry as it was");
  t.same(out[1], {
    parentRef: { name: 'gw', sectionName: 'web' },
    controllerName: DEFAULT_CONTROLLER_NAME,
    conditions: [
      { ...accepted, observedGeneration: 2, lastTransitionTime: EARLIER },
      { ...resolved, observedGeneration: 2, lastTransitionTime: NOW },
    ],
  });
  const again = routeParents(out, [{ parentRef: { name: 'gw', sectionName: 'web' }, conditions: [accepted, resolved] }], DEFAULT_CONTROLLER_NAME, 2, '2030-01-01T00:00:00Z');
  t.ok(sameStatus(again, out), 'a steady state writes the same parents');
});

t.test('gatewayStatus: conditions, listeners with attachedRoutes and supportedKinds, addresses', async (t) => {
  const gw = gateway({ listeners: [http('web', 80), listener('tcp', 9000, 'TCP')] });
  const ev = evaluateGateway(gw, reads(), S);
  const settings = { ...S, addresses: ['203.0.113.7', 'gw.example.com', '2001:db8::1', '999.1.1.1'] };
  const status = gatewayStatus(undefined, ev, new Map([['web', 2]]), settings, 4, NOW);
  t.same(status.addresses, [
    { type: 'IPAddress', value: '203.0.113.7' },
    { type: 'Hostname', value: 'gw.example.com' },
    { type: 'IPAddress', value: '2001:db8::1' },
    { type: 'Hostname', value: '999.1.1.1' },
  ]);
  const listeners = status.listeners as Json[];
  t.same(
    listeners.map((l) => [l.name, l.attachedRoutes, l.supportedKinds]),
    [
      ['web', 2, HTTPROUTE],
      ['tcp', 0, []],
    ],
  );
  t.same(
    (status.conditions as Json[]).map((c) => [c.type, c.status, c.observedGeneration, c.lastTransitionTime]),
    [
      ['Accepted', 'True', 4, NOW],
      ['Programmed', 'True', 4, NOW],
    ],
  );
  t.same(gatewayStatus(undefined, ev, new Map(), S, 4, NOW).addresses, [], 'no GATEWAY_ADDRESSES: none listed');
  const later = gatewayStatus(status, ev, new Map([['web', 2]]), settings, 4, '2030-01-01T00:00:00Z');
  t.ok(sameStatus(later, status), 'a steady state: the same status, times kept, listeners matched by name');
  t.notOk(sameStatus(gatewayStatus(status, ev, new Map([['web', 3]]), settings, 4, NOW), status), 'a new route count is a change');
});

t.test('classStatus: Accepted, and SupportedVersion from the bundle version', async (t) => {
  const types = (s: Json) => (s.conditions as Json[]).map((c) => `${c.type} ${c.status} ${c.reason}`);
  t.same(types(classStatus(undefined, 'v1.6.1', 1, NOW)), ['Accepted True Accepted', 'SupportedVersion True SupportedVersion']);
  t.same(types(classStatus(undefined, 'v2.0.0', 1, NOW)), ['Accepted True Accepted', 'SupportedVersion False UnsupportedVersion']);
  t.same(types(classStatus(undefined, undefined, 1, NOW)), ['Accepted True Accepted', 'SupportedVersion Unknown Pending']);
  const first = classStatus(undefined, 'v1.6.1', 1, EARLIER);
  t.ok(sameStatus(classStatus(first, 'v1.6.1', 1, NOW), first), 'steady: nothing changes');
});

t.test('sameStatus: key order does not matter, values and array order do', async (t) => {
  t.ok(sameStatus({ a: 1, b: [1, 2] }, { b: [1, 2], a: 1 }));
  t.notOk(sameStatus({ a: 1, b: [1, 2] }, { a: 1, b: [2, 1] }));
  t.notOk(sameStatus({ a: 1 }, { a: '1' }));
  t.ok(sameStatus(undefined, undefined));
});
