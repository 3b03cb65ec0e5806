/**
 * A route's parents: which listeners of which Gateways of ours an HTTPRoute attaches to, with
 * the hostnames it serves on each, and the Accepted condition of each parentRef. Pure: no I/O,
 * no clock; the Gateways (evaluated) and the namespaces' labels come in as functions.
 *
 * - Only parentRefs naming a Gateway (group gateway.networking.k8s.io) whose class is ours get
 *   an Attachment; others, and Gateways that do not exist, are left out: their status is not ours.
 * - sectionName and port narrow the listeners; none left: Accepted=False `NoMatchingParent`.
 * - A listener attaches a route when it is accepted, allows the route's namespace (Same, All,
 *   or a Selector over the namespace's labels; labels unknown: not allowed) and the kind
 *   HTTPRoute: else `NotAllowedByListeners`. Of those, the ones whose hostname intersects the
 *   route's: none: `NoMatchingListenerHostname`.
 * - attachedRoutes counts a route once on each listener it attached to, whatever its backends.
 */
import type { KubeObject } from '../../kube/types.js';
import { isObject, nonEmpty, stringItems } from '../../platform/guards.js';
import { intersectHostnames } from './hostnames.js';
import type { GatewayEval, ListenerEval } from './listeners.js';
import { condition, GATEWAY_API_GROUP, HTTP_ROUTE, type Json, type Named, type NewCondition } from './model.js';

export interface ParentRefView {
  readonly index: number;
  readonly group: string;
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
  readonly sectionName?: string;
  readonly port?: number;
  /** the parentRef as written (status.parents[].parentRef echoes it) */
  readonly raw: Json;
}

/** parentRefs with defaults: group gateway.networking.k8s.io, kind Gateway, namespace the route's. */
export function parentRefsOf(route: KubeObject): ParentRefView[] {
  const namespace = route.metadata.namespace ?? '';
  const refs = Array.isArray(route.spec?.parentRefs) ? route.spec.parentRefs : [];
  const out: ParentRefView[] = [];
  refs.forEach((raw: unknown, index: number) => {
    if (!isObject(raw)) return;
    const sectionName = nonEmpty(raw.sectionName);
    const port = typeof raw.port === 'number' ? raw.port : undefined;
    out.push({
      index,
      group: typeof raw.group === 'string' ? raw.group : GATEWAY_API_GROUP,
      kind: typeof raw.kind === 'string' ? raw.kind : 'Gateway',
      namespace: nonEmpty(raw.namespace) ?? namespace,
      name: typeof raw.name === 'string' ? raw.name : '',
      ...(sectionName === undefined ? {} : { sectionName }),
      ...(port === undefined ? {} : { port }),
      raw,
    });
  });
  return out;
}

/** A parent Gateway as the wiring found it: `ours` when its class is a GatewayClass whose controllerName is ours. */
export interface ParentGateway {
  readonly gateway: KubeObject;
  readonly eval: GatewayEval;
  readonly ours: boolean;
  /** the OperatorContext whose gateway it stands for (its parameters); absent: the default gateway */
  readonly context?: Named;
  /** why the Gateway itself is not accepted (its parameters): every route asking for it is Pending, with this message */
  readonly notAccepted?: string;
}

export interface AttachedListener {
  readonly name: string;
  readonly port: number;
  readonly protocol: string;
  readonly hostnames: readonly string[];
  readonly certificates: readonly Named[];
  /** the Tyk port its routes are served on (`listen_port`); 0: Tyk's own */
  readonly tykPort: number;
}

export interface Attachment {
  readonly parentRef: ParentRefView;
  /** Accepted True `Accepted`, or False with NotAllowedByListeners | NoMatchingListenerHostname | NoMatchingParent | UnsupportedValue */
  readonly accepted: NewCondition;
  /** empty unless accepted */
  readonly listeners: readonly AttachedListener[];
  /** "namespace/name" of the route (so attachedRoutes counts a route once per listener) */
  readonly route?: string;
}

type Labels = Readonly<Record<string, string>>;

/** A LabelSelector (matchLabels, matchExpressions In/NotIn/Exists/DoesNotExist) against labels; an unknown operator matches nothing. */
export function selectorMatches(selector: Json | undefined, labels: Labels): boolean {
  if (selector === undefined) return false;
  const matchLabels = isObject(selector.matchLabels) ? selector.matchLabels : {};
  for (const [k, v] of Object.entries(matchLabels)) if (labels[k] !== v) return false;
  const expressions = Array.isArray(selector.matchExpressions) ? selector.matchExpressions.filter(isObject) : [];
  for (const e of expressions) {
    const key = typeof e.key === 'string' ? e.key : '';
    const values = stringItems(e.values);
    const has = Object.hasOwn(labels, key);
    const value = labels[key];
    switch (e.operator) {
      case 'In':
        if (!(has && value !== undefined && values.includes(value))) return false;
        break;
      case 'NotIn':
        if (has && value !== undefined && values.includes(value)) return false;
        break;
      case 'Exists':
        if (!has) return false;
        break;
      case 'DoesNotExist':
        if (has) return false;
        break;
      default:
        return false;
    }
  }
  return true;
}

function namespaceAllowed(l: ListenerEval, gatewayNamespace: string, routeNamespace: string, namespaceLabels: (namespace: string) => Labels | undefined): boolean {
  switch (l.allowedRoutes.from) {
    case 'All':
      return true;
    case 'Same':
      return routeNamespace === gatewayNamespace;
    case 'Selector': {
      const labels = namespaceLabels(routeNamespace);
      return labels !== undefined && selectorMatches(l.allowedRoutes.selector, labels);
    }
  }
}

function hostnamesOf(route: KubeObject): string[] {
  return stringItems(route.spec?.hostnames);
}

function refText(p: ParentRefView): string {
  const narrowed = [p.sectionName === undefined ? '' : ` sectionName ${p.sectionName}`, p.port === undefined ? '' : ` port ${p.port}`].join('');
  return `Gateway ${p.namespace}/${p.name}${narrowed}`;
}

function attachOne(route: KubeObject, parentRef: ParentRefView, parent: ParentGateway, namespaceLabels: (namespace: string) => Labels | undefined): Attachment {
  const routeKey = `${route.metadata.namespace ?? ''}/${route.metadata.name}`;
  const refused = (reason: string, message: string): Attachment => ({ parentRef, accepted: condition('Accepted', 'False', reason, message), listeners: [], route: routeKey });
  if (parent.notAccepted !== undefined) return refused('Pending', `${refText(parentRef)} is not accepted: ${parent.notAccepted}`);
  const candidates = parent.eval.listeners.filter((l) => (parentRef.sectionName === undefined || l.name === parentRef.sectionName) && (parentRef.port === undefined || l.port === parentRef.port));
  if (candidates.length === 0) return refused('NoMatchingParent', `${refText(parentRef)} has no such listener`);
  const gatewayNamespace = parent.gateway.metadata.namespace ?? '';
  const routeNamespace = route.metadata.namespace ?? '';
  const allowing = candidates.filter((l) => l.accepted && l.allowedRoutes.kinds.includes(HTTP_ROUTE) && namespaceAllowed(l, gatewayNamespace, routeNamespace, namespaceLabels));
  if (allowing.length === 0) return refused('NotAllowedByListeners', `no listener of ${refText(parentRef)} allows an HTTPRoute from namespace ${routeNamespace}`);
  const routeHosts = hostnamesOf(route);
  const listeners: AttachedListener[] = [];
  for (const l of allowing) {
    const hostnames = intersectHostnames(l.hostname, routeHosts);
    if (hostnames === undefined) continue;
    listeners.push({ name: l.name, port: l.port, protocol: l.protocol, hostnames, certificates: l.certificates, tykPort: l.tykPort });
  }
  if (listeners.length === 0) return refused('NoMatchingListenerHostname', `no listener of ${refText(parentRef)} has a hostname matching the route's hostnames (${routeHosts.join(', ')})`);
  return { parentRef, accepted: condition('Accepted', 'True', 'Accepted', `accepted by ${refText(parentRef)}`), listeners, route: routeKey };
}

/**
 * One Attachment per parentRef that names a Gateway of ours (others: left out, their status is
 * not ours). `gatewayOf` answers undefined for a Gateway that does not exist (left out too);
 * `namespaceLabels` the labels of a namespace (for allowedRoutes Selector), undefined if unknown.
 */
export function attachRoute(
  route: KubeObject,
  gatewayOf: (namespace: string, name: string) => ParentGateway | undefined,
  namespaceLabels: (namespace: string) => Readonly<Record<string, string>> | undefined,
): Attachment[] {
  const out: Attachment[] = [];
  for (const ref of parentRefsOf(route)) {
    if (ref.group !== GATEWAY_API_GROUP || ref.kind !== 'Gateway') continue;
    const parent = gatewayOf(ref.namespace, ref.name);
    if (parent === undefined || !parent.ours) continue;
    out.push(attachOne(route, ref, parent, namespaceLabels));
  }
  return out;
}

/** How many routes each listener of `gateway` has attached ("listener name" → count), over `attachments` of many routes. */
export function attachedRoutes(gateway: KubeObject, attachments: readonly Attachment[]): Map<string, number> {
  const namespace = gateway.metadata.namespace ?? '';
  const counts = new Map<string, number>();
  const listeners = Array.isArray(gateway.spec?.listeners) ? gateway.spec.listeners.filter(isObject) : [];
  for (const l of listeners) if (typeof l.name === 'string') counts.set(l.name, 0);
  const seen = new Set<string>();
  attachments.forEach((a, i) => {
    if (a.accepted.status !== 'True' || a.parentRef.namespace !== namespace || a.parentRef.name !== gateway.metadata.name) return;
    for (const l of a.listeners) {
      // a route with two parentRefs reaching the same listener counts once there
      const key = `${a.route ?? `#${i}`}\u0000${l.name}`;
      if (seen.has(key)) continue;
      seen.add(key);
      counts.set(l.name, (counts.get(l.name) ?? 0) + 1);
    }
  });
  return counts;
}
