/**
 * A Gateway evaluated: each listener's conditions (Accepted, Conflicted, ResolvedRefs,
 * Programmed, always all four, in that order), the route kinds it supports, the certificates
 * it serves, and the Gateway's own conditions (Accepted, Programmed). Pure: no I/O, no clock;
 * what the cluster holds (Secrets, ReferenceGrants) comes in as GatewayReads.
 *
 * - Protocols HTTP and HTTPS are served, for HTTPRoute only. Another protocol: Accepted=False
 *   `UnsupportedProtocol`, no supported kinds. HTTPS terminates TLS only (`tls.mode`
 *   Passthrough: Accepted=False `UnsupportedValue`).
 * - allowedRoutes.kinds naming a kind we do not serve: ResolvedRefs=False `InvalidRouteKinds`,
 *   supportedKinds lists the served ones among those named. Unnamed: HTTPRoute.
 * - Listeners on one port with different protocols: Conflicted=True `ProtocolConflict`; with the
 *   same protocol and hostname: `HostnameConflict`. A conflicted listener is not accepted (its
 *   Accepted=False gives the conflict's reason) and no route attaches to it.
 * - HTTPS certificateRefs: each a core Secret (else `InvalidCertificateRef`), in the Gateway's
 *   namespace or permitted by a ReferenceGrant (else `RefNotPermitted`), holding tls.crt and
 *   tls.key (else `InvalidCertificateRef`); none at all: `InvalidCertificateRef`. ResolvedRefs
 *   takes the first problem's reason, its message names each. A listener with unresolved refs
 *   is still accepted: routes attach to it (and are counted), it is just not Programmed.
 * - Programmed per listener: accepted, resolved, not conflicted. The Gateway: Accepted unless
 *   it asks for spec.addresses (`UnsupportedAddress`: we cannot assign addresses) or no listener
 *   is accepted (`ListenersNotValid`); accepted with conflicted listeners, its reason is still
 *   `ListenersNotValid` (the Gateway CRD requires it), the message naming them. Programmed
 *   when accepted with at least one listener programmed. Programmed does not wait for
 *   addresses: with GATEWAY_ADDRESSES empty, the status lists none (they are optional) and the
 *   Gateway is still Programmed.
 * - Each listener's routes are served on one Tyk port (`tykPort`): GATEWAY_HTTPS_PORT for HTTPS
 *   (default 8443), GATEWAY_HTTP_PORT for HTTP (default 0, Tyk's own listen port). A Tyk port
 *   serves one protocol, so HTTP and HTTPS routes need two; the listener's own `port` is the one
 *   clients use in front of the gateway.
 */
import type { KubeObject } from '../../kube/types.js';
import { isObject, nonEmpty } from '../../platform/guards.js';
import { condition, GATEWAY_API_GROUP, type GatewayApiSettings, HTTP_ROUTE, type Json, type Named, type NewCondition, tykPortFor } from './model.js';

export interface SecretRef {
  readonly field: string;
  readonly group: string;
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
}

/** What the wiring read for those refs. */
export interface GatewayReads {
  /** "namespace/name" → 'tls' (a Secret with non-empty tls.crt and tls.key), 'invalid' (exists, not that), 'missing' (404) */
  readonly secrets: ReadonlyMap<string, 'tls' | 'invalid' | 'missing'>;
  /** whether a ReferenceGrant lets the Gateway's namespace use the Secret; asked only for refs into another namespace */
  permitted(ref: SecretRef): boolean;
}

export interface AllowedRoutes {
  readonly from: 'Same' | 'All' | 'Selector';
  readonly selector?: Json;
  readonly kinds: readonly string[];
}

export interface ListenerEval {
  readonly name: string;
  readonly protocol: string;
  readonly port: number;
  readonly hostname?: string;
  /** routes may attach: supported protocol, not conflicted */
  readonly accepted: boolean;
  /** Accepted, ResolvedRefs and not Conflicted */
  readonly programmed: boolean;
  readonly supportedKinds: readonly { readonly group: string; readonly kind: string }[];
  /** Accepted, Conflicted, ResolvedRefs, Programmed (each listener has all four) */
  readonly conditions: readonly NewCondition[];
  /** HTTPS: the Secrets that resolved (to serve its TLS) */
  readonly certificates: readonly Named[];
  readonly allowedRoutes: AllowedRoutes;
  /** the Tyk port its routes are served on (GATEWAY_HTTP_PORT / GATEWAY_HTTPS_PORT); 0: Tyk's own */
  readonly tykPort: number;
}

export interface GatewayEval {
  readonly conditions: readonly NewCondition[];
  readonly listeners: readonly ListenerEval[];
}

const SUPPORTED_PROTOCOLS = new Set(['HTTP', 'HTTPS']);

function items(v: unknown): Json[] {
  return Array.isArray(v) ? v.filter(isObject) : [];
}

function listenersOf(gateway: KubeObject): Json[] {
  return items(gateway.spec?.listeners);
}

function str(v: unknown, fallback: string): string {
  return typeof v === 'string' ? v : fallback;
}

/** Every listener's tls.certificateRefs, namespace defaulted to the Gateway's, with its field path (`spec.listeners[1].tls.certificateRefs[0]`). */
export function certificateRefsOf(gateway: KubeObject): SecretRef[] {
  const namespace = gateway.metadata.namespace ?? '';
  return listenersOf(gateway).flatMap((l, i) => {
    const tls = isObject(l.tls) ? l.tls : {};
    return items(tls.certificateRefs).map(
      (ref, j): SecretRef => ({
        field: `spec.listeners[${i}].tls.certificateRefs[${j}]`,
        group: str(ref.group, ''),
        kind: str(ref.kind, 'Secret'),
        namespace: nonEmpty(ref.namespace) ?? namespace,
        name: str(ref.name, ''),
      }),
    );
  });
}

interface Problem {
  readonly reason: string;
  readonly message: string;
}

function allowedRoutesOf(l: Json): { allowed: Omit<AllowedRoutes, 'kinds'>; named: { group: string; kind: string }[] | undefined } {
  const ar = isObject(l.allowedRoutes) ? l.allowedRoutes : {};
  const ns = isObject(ar.namespaces) ? ar.namespaces : {};
  const from: AllowedRoutes['from'] = ns.from === 'All' || ns.from === 'Selector' ? ns.from : 'Same';
  const allowed: Omit<AllowedRoutes, 'kinds'> = from === 'Selector' && isObject(ns.selector) ? { from, selector: ns.selector } : { from };
  const named = Array.isArray(ar.kinds) ? items(ar.kinds).map((k) => ({ group: str(k.group, GATEWAY_API_GROUP), kind: str(k.kind, '') })) : undefined;
  return { allowed, named };
}

function conflictOf(all: readonly Json[], i: number): Problem | undefined {
  const me = all[i] ?? {};
  const others = all.filter((o, j) => j !== i && o.port === me.port);
  const other = others.find((o) => o.protocol !== me.protocol);
  if (other !== undefined) return { reason: 'ProtocolConflict', message: `port ${String(me.port)} is also served as ${str(other.protocol, '?')} by listener ${str(other.name, '?')}` };
  const host = nonEmpty(me.hostname);
  const same = others.find((o) => nonEmpty(o.hostname) === host);
  if (same !== undefined) {
    return { reason: 'HostnameConflict', message: `listener ${str(same.name, '?')} also serves ${me.protocol} on port ${String(me.port)} for ${host ?? 'any hostname'}` };
  }
  return undefined;
}

function certificateProblems(gateway: KubeObject, refs: readonly SecretRef[], reads: GatewayReads): { problems: Problem[]; certificates: Named[] } {
  const namespace = gateway.metadata.namespace ?? '';
  const problems: Problem[] = [];
  const certificates: Named[] = [];
  for (const ref of refs) {
    const at = `${ref.field} (${ref.namespace}/${ref.name})`;
    if (ref.group !== '' || ref.kind !== 'Secret') {
      problems.push({ reason: 'InvalidCertificateRef', message: `${ref.field}: ${ref.group === '' ? 'core' : ref.group} ${ref.kind} is not a Secret` });
      continue;
    }
    if (ref.namespace !== namespace && !reads.permitted(ref)) {
      problems.push({ reason: 'RefNotPermitted', message: `${at}: no ReferenceGrant in ${ref.namespace} lets Gateways of ${namespace} use this Secret` });
      continue;
    }
    const found = reads.secrets.get(`${ref.namespace}/${ref.name}`) ?? 'missing';
    if (found === 'missing') problems.push({ reason: 'InvalidCertificateRef', message: `${at}: the Secret does not exist` });
    else if (found === 'invalid') problems.push({ reason: 'InvalidCertificateRef', message: `${at}: the Secret has no non-empty tls.crt and tls.key` });
    else certificates.push({ namespace: ref.namespace, name: ref.name });
  }
  return { problems, certificates };
}

function evaluateListener(gateway: KubeObject, all: readonly Json[], i: number, refs: readonly SecretRef[], reads: GatewayReads, settings: GatewayApiSettings): ListenerEval {
  const l = all[i] ?? {};
  const name = str(l.name, '');
  const protocol = str(l.protocol, '');
  const port = typeof l.port === 'number' ? l.port : 0;
  const hostname = nonEmpty(l.hostname);
  const supported = SUPPORTED_PROTOCOLS.has(protocol);
  const { allowed, named } = allowedRoutesOf(l);
  const served = (k: { group: string; kind: string }) => supported && k.group === GATEWAY_API_GROUP && k.kind === HTTP_ROUTE;
  const kinds = named === undefined ? (supported ? [HTTP_ROUTE] : []) : [...new Set(named.filter(served).map((k) => k.kind))];
  const resolveProblems: Problem[] = [];
  const invalidKinds = (named ?? []).filter((k) => !served(k));
  if (invalidKinds.length > 0) {
    resolveProblems.push({
      reason: 'InvalidRouteKinds',
      message: `allowedRoutes.kinds: ${invalidKinds.map((k) => `${k.group}/${k.kind}`).join(', ')} not supported (only ${GATEWAY_API_GROUP}/${HTTP_ROUTE})`,
    });
  }
  let acceptProblem: Problem | undefined;
  if (!supported) acceptProblem = { reason: 'UnsupportedProtocol', message: `protocol ${protocol || '(none)'} is not supported (only HTTP and HTTPS)` };
  let certificates: Named[] = [];
  if (supported && protocol === 'HTTPS') {
    const tls = isObject(l.tls) ? l.tls : {};
    const mode = str(tls.mode, 'Terminate');
    if (mode !== 'Terminate') acceptProblem = { reason: 'UnsupportedValue', message: `tls.mode ${mode} is not supported (only Terminate)` };
    const mine = refs.filter((r) => r.field.startsWith(`spec.listeners[${i}].`));
    if (mine.length === 0) resolveProblems.push({ reason: 'InvalidCertificateRef', message: 'an HTTPS listener needs tls.certificateRefs' });
    const checked = certificateProblems(gateway, mine, reads);
    resolveProblems.push(...checked.problems);
    certificates = checked.certificates;
  }
  const conflict = conflictOf(all, i);
  if (acceptProblem === undefined && conflict !== undefined) acceptProblem = conflict;
  const accepted = acceptProblem === undefined;
  const resolved = resolveProblems.length === 0;
  const programmed = accepted && resolved && conflict === undefined;
  const conditions: NewCondition[] = [
    accepted ? condition('Accepted', 'True', 'Accepted', 'the listener is accepted') : condition('Accepted', 'False', acceptProblem?.reason ?? 'Invalid', acceptProblem?.message ?? ''),
    conflict === undefined ? condition('Conflicted', 'False', 'NoConflicts', 'no conflicts') : condition('Conflicted', 'True', conflict.reason, conflict.message),
    resolved
      ? condition('ResolvedRefs', 'True', 'ResolvedRefs', 'all references resolved')
      : condition('ResolvedRefs', 'False', resolveProblems[0]?.reason ?? 'Invalid', resolveProblems.map((p) => p.message).join('; ')),
    programmed ? condition('Programmed', 'True', 'Programmed', 'the listener is served') : condition('Programmed', 'False', 'Invalid', 'the listener is not served: see its other conditions'),
  ];
  return {
    name,
    protocol,
    port,
    ...(hostname === undefined ? {} : { hostname }),
    accepted,
    programmed,
    supportedKinds: kinds.map((kind) => ({ group: GATEWAY_API_GROUP, kind })),
    conditions,
    certificates,
    allowedRoutes: { ...allowed, kinds },
    tykPort: tykPortFor(protocol, settings),
  };
}

export function evaluateGateway(gateway: KubeObject, reads: GatewayReads, settings: GatewayApiSettings): GatewayEval {
  const all = listenersOf(gateway);
  const refs = certificateRefsOf(gateway);
  const listeners = all.map((_, i) => evaluateListener(gateway, all, i, refs, reads, settings));
  const addresses = Array.isArray(gateway.spec?.addresses) && gateway.spec.addresses.length > 0;
  const anyAccepted = listeners.some((l) => l.accepted);
  const conflicted = listeners.filter((l) => l.conditions.some((c) => c.type === 'Conflicted' && c.status === 'True'));
  let accepted: NewCondition;
  if (addresses) accepted = condition('Accepted', 'False', 'UnsupportedAddress', 'spec.addresses is not supported: the gateway cannot be assigned addresses');
  else if (!anyAccepted) accepted = condition('Accepted', 'False', 'ListenersNotValid', "no listener is valid: see the listeners' conditions");
  else if (conflicted.length > 0) {
    // the Gateway CRD: ListenersNotValid whenever listeners conflict, naming the conflicted and the accepted
    const names = (ls: readonly ListenerEval[]) => ls.map((l) => l.name).join(', ');
    accepted = condition('Accepted', 'True', 'ListenersNotValid', `listeners ${names(conflicted)} conflict and are not accepted; accepted: ${names(listeners.filter((l) => l.accepted))}`);
  } else accepted = condition('Accepted', 'True', 'Accepted', 'the Gateway is accepted');
  const programmed =
    accepted.status === 'True' && listeners.some((l) => l.programmed)
      ? condition('Programmed', 'True', 'Programmed', 'the Gateway is served')
      : condition('Programmed', 'False', 'Invalid', accepted.status === 'True' ? 'no listener is programmed' : 'the Gateway is not accepted');
  return { conditions: [accepted, programmed], listeners };
}
