/**
 * Gateway API statuses as they are written: a route's status.parents, a Gateway's status, a
 * GatewayClass's status, each built from a decision's conditions and the status now held.
 * Pure: no I/O; the time is passed in (`now`, an ISO string).
 *
 * - Every condition carries the object's generation; its lastTransitionTime is the current one
 *   while its status stays the same, else `now`.
 * - A route's parents written by other controllers are kept as they are, ours replaced.
 * - The Gateway's addresses are GATEWAY_ADDRESSES, each an IPAddress or a Hostname; none
 *   configured: an empty list (addresses are optional; Programmed does not wait for them).
 * - sameStatus compares as JSON, without regard to key order: a steady state patches nothing.
 */
import { canonicalJson } from '../../engine/hash.js';
import { isObject } from '../../platform/guards.js';
import type { GatewayEval } from './listeners.js';
import { condition, type GatewayApiSettings, type Json, type NewCondition } from './model.js';

export interface StatusCondition extends NewCondition {
  readonly observedGeneration: number;
  readonly lastTransitionTime: string;
}

function items(v: unknown): Json[] {
  return Array.isArray(v) ? v.filter(isObject) : [];
}

/** `next` with observedGeneration, keeping each condition's lastTransitionTime from `current` when its status did not change (else `now`). */
export function withTimes(current: unknown, next: readonly NewCondition[], generation: number, now: string): StatusCondition[] {
  const held = items(current);
  return next.map((c) => {
    const was = held.find((h) => h.type === c.type);
    const keep = was !== undefined && was.status === c.status && typeof was.lastTransitionTime === 'string' && was.lastTransitionTime !== '';
    return { type: c.type, status: c.status, reason: c.reason, message: c.message, observedGeneration: generation, lastTransitionTime: keep ? String(was.lastTransitionTime) : now };
  });
}

/** The route's status.parents: other controllers' entries kept as they are, ours (controllerName) replaced by `ours`, in a stable order. */
export function routeParents(current: unknown, ours: readonly { parentRef: Json; conditions: readonly NewCondition[] }[], controllerName: string, generation: number, now: string): Json[] {
  const held = items(current);
  const others = held.filter((p) => p.controllerName !== controllerName);
  const mine = held.filter((p) => p.controllerName === controllerName);
  const written = ours.map((o) => {
    const was = mine.find((p) => sameStatus(p.parentRef, o.parentRef));
    return { parentRef: o.parentRef, controllerName, conditions: withTimes(was?.conditions, o.conditions, generation, now) };
  });
  return [...others, ...written];
}

const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

/** An address as Gateway status.addresses lists it: an IP (v4, or v6 with a colon) or a hostname. */
export function addressOf(value: string): Json {
  const v4 = IPV4.exec(value);
  const ip = v4?.slice(1).every((o) => Number(o) <= 255) === true || value.includes(':');
  return { type: ip ? 'IPAddress' : 'Hostname', value };
}

/** The Gateway's status: conditions, listeners (with attachedRoutes and supportedKinds), addresses (type IPAddress or Hostname). */
export function gatewayStatus(current: unknown, ev: GatewayEval, attached: ReadonlyMap<string, number>, settings: GatewayApiSettings, generation: number, now: string): Json {
  const cur = isObject(current) ? current : {};
  const heldListeners = items(cur.listeners);
  return {
    addresses: settings.addresses.map(addressOf),
    conditions: withTimes(cur.conditions, ev.conditions, generation, now),
    listeners: ev.listeners.map((l) => ({
      name: l.name,
      supportedKinds: l.supportedKinds.map((k) => ({ group: k.group, kind: k.kind })),
      attachedRoutes: attached.get(l.name) ?? 0,
      conditions: withTimes(heldListeners.find((h) => h.name === l.name)?.conditions, l.conditions, generation, now),
    })),
  };
}

/**
 * A GatewayClass's status: Accepted=True `Accepted` (False `InvalidParameters` with
 * `invalidParameters`, saying why); SupportedVersion=True `SupportedVersion` when `bundleVersion`
 * starts with 'v1.', False `UnsupportedVersion` otherwise, Unknown `Pending` when undefined.
 */
export function classStatus(current: unknown, bundleVersion: string | undefined, generation: number, now: string, invalidParameters?: string): Json {
  const cur = isObject(current) ? current : {};
  let supported: NewCondition;
  if (bundleVersion === undefined) supported = condition('SupportedVersion', 'Unknown', 'Pending', "the Gateway API CRDs' bundle version is not known yet");
  else if (bundleVersion.startsWith('v1.')) supported = condition('SupportedVersion', 'True', 'SupportedVersion', `Gateway API ${bundleVersion} is supported`);
  else supported = condition('SupportedVersion', 'False', 'UnsupportedVersion', `Gateway API ${bundleVersion} is not supported (only v1.x)`);
  const accepted = invalidParameters === undefined ? condition('Accepted', 'True', 'Accepted', 'the GatewayClass is accepted') : condition('Accepted', 'False', 'InvalidParameters', invalidParameters);
  return { ...cur, conditions: withTimes(cur.conditions, [accepted, supported], generation, now) };
}

/** Whether two statuses are the same (so a steady state patches nothing). */
export function sameStatus(a: unknown, b: unknown): boolean {
  return canonicalJson(a) === canonicalJson(b);
}
