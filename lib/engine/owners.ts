/**
 * One owner per gateway object. Pure: no clock, no I/O.
 *
 * Each gateway object id (an API of either kind, a policy) on each gateway has at most one
 * owning resource, kept in the store (Store.claimOwner, under `ownerKey`) with the resource's
 * uid. Classic and OAS APIs share one id space (Tyk keeps both under /tyk/apis).
 *
 * - `refusalOf` (decide.ts asks it before any write): a resource naming an id another resource
 *   owns is refused (IdClaimed); an object the gateway has that no resource owns, and that is
 *   not ours by our own record, is adopted only under the resource's default id (base64url of
 *   its namespace/name) or from a namespace in ADOPT_NAMESPACES (`*`: all), else refused
 *   (AdoptionNotPermitted).
 * - `contest` (once per phase, over everything it loaded): where several resources name the
 *   same id on one gateway, the store's owner among them keeps it, else the oldest
 *   (metadata.creationTimestamp, then the lowest uid), so ownership rebuilt after the store
 *   lost it is the same on every run; the others are refused (IdClaimed). Where several
 *   objects serve the same route (their kind's `route`: domain and listen path) on one gateway, the oldest keeps it,
 *   the others are refused (ListenPathClash, naming their own field).
 *
 * Messages name the owning resource only when it is in the refused resource's own namespace:
 * they never tell a tenant what another namespace holds.
 */

import type { JsonObject } from '../gateway/types.js';
import type { KubeObject } from '../kube/types.js';
import type { Owner, SyncRecord } from '../store/types.js';
import { defaultId } from './ids.js';
import type { ManagedKind, Route } from './kind.js';

export type RefusalReason = 'IdClaimed' | 'AdoptionNotPermitted' | 'ListenPathClash';

/** Why an object is refused before any write: the reason its status, conditions and Event carry, and the message. */
export interface Refusal {
  readonly reason: RefusalReason;
  readonly message: string;
}

/** The kinds whose gateway ids have owners. */
export function hasOwners(kind: ManagedKind): boolean {
  return kind.ownerSpace !== undefined;
}

/** The store key of the owner of `id` on `gateway`: APIs of both kinds share one id space. */
export function ownerKey(gateway: string, kind: ManagedKind, id: string): string {
  return `${gateway}/${kind.ownerSpace ?? kind.gatewayKind}/${id}`;
}

/** The owner a resource claims as: its key ("<Kind>/<namespace>/<name>") and uid. */
export function ownerFor(key: string, obj: KubeObject): Owner {
  return { ref: key, uid: obj.metadata.uid ?? '' };
}

/** What the ownership rules look at of one object. */
export interface OwnershipFacts {
  readonly kind: ManagedKind;
  readonly key: string;
  readonly obj: KubeObject | null | undefined;
  readonly record: SyncRecord | null;
  /** the gateway it goes to */
  readonly gateway: string;
  /** the id it would write */
  readonly id: string;
  /** the gateway has an object under that id */
  readonly present: boolean;
  /** the owner the store has for that id on that gateway (null: none) */
  readonly owner: Owner | null;
}

/** The resource key's namespace ("<Kind>/<namespace>/<name>"). */
function namespaceOfKey(key: string): string {
  return key.split('/')[1] ?? '';
}

/** Our own record says we wrote this id to this gateway for this resource. */
export function recordedHere(f: Pick<OwnershipFacts, 'record' | 'gateway' | 'id'>): boolean {
  const r = f.record;
  return r !== null && r.id === f.id && (r.gateway ?? 'default') === f.gateway && r.refusal === undefined;
}

/** The owner is the resource itself (by its key: a name is unique while it exists). */
export function ownedBy(owner: Owner | null, key: string): boolean {
  return owner !== null && owner.ref === key;
}

function claimedMessage(id: string, gateway: string, owner: string, own: string): string {
  const who = namespaceOfKey(owner) === namespaceOfKey(own) ? `by ${owner}` : 'by another resource';
  return `the id ${id} on gateway ${gateway} is owned ${who}; choose another spec id (or none)`;
}

/**
 * Whether a write of `f` is refused, and why (undefined: it may write). `adopt` is
 * ADOPT_NAMESPACES (`*` for all; undefined or empty: none).
 */
export function refusalOf(f: OwnershipFacts, adopt: readonly string[] | undefined): Refusal | undefined {
  if (!hasOwners(f.kind) || f.id === '') return undefined;
  if (f.owner !== null) {
    if (ownedBy(f.owner, f.key)) return undefined;
    return { reason: 'IdClaimed', message: claimedMessage(f.id, f.gateway, f.owner.ref, f.key) };
  }
  if (!f.present || recordedHere(f)) return undefined;
  const namespace = f.obj?.metadata.namespace ?? namespaceOfKey(f.key);
  if (f.obj && f.id === defaultId(namespace, f.obj.metadata.name)) return undefined;
  if (adopt?.includes('*') || adopt?.includes(namespace)) return undefined;
  return {
    reason: 'AdoptionNotPermitted',
    message: `the gateway ${f.gateway} has an object under the id ${f.id} that no resource owns; it is adopted only under this resource's default id (${defaultId(namespace, f.obj?.metadata.name ?? '')}) or from a namespace in ADOPT_NAMESPACES`,
  };
}

/** One contestant: a live resource about to be built for a gateway. */
export interface Contestant {
  readonly key: string;
  readonly kind: ManagedKind;
  readonly obj: KubeObject;
  readonly gateway: string;
  readonly id: string;
  readonly owner: Owner | null;
  /** what would be sent (its kind's `route` reads the domain and listen path from it) */
  readonly body: Readonly<Record<string, unknown>> | undefined;
}

/** Older first: creationTimestamp (absent: youngest), then uid. */
export function olderFirst(a: KubeObject, b: KubeObject): number {
  const at = Date.parse(a.metadata.creationTimestamp ?? '');
  const bt = Date.parse(b.metadata.creationTimestamp ?? '');
  const x = Number.isNaN(at) ? Number.POSITIVE_INFINITY : at;
  const y = Number.isNaN(bt) ? Number.POSITIVE_INFINITY : bt;
  if (x !== y) return x < y ? -1 : 1;
  const ua = a.metadata.uid ?? '';
  const ub = b.metadata.uid ?? '';
  return ua < ub ? -1 : ua > ub ? 1 : 0;
}

function groupBy<T>(items: readonly T[], keyOf: (t: T) => string | undefined): T[][] {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const k = keyOf(item);
    if (k === undefined) continue;
    const group = groups.get(k);
    if (group) group.push(item);
    else groups.set(k, [item]);
  }
  return [...groups.values()].filter((g) => g.length > 1);
}

/** The route a contestant's body serves (its kind's `route`), as a key: gateway, domain, path; undefined when it serves none. */
function routeKey(c: Contestant): string | undefined {
  const route = c.body ? c.kind.route?.(c.body) : undefined;
  if (route === undefined || route.path === '') return undefined;
  return `${c.gateway}\u0000${route.domain}\u0000${route.path}`;
}

/**
 * The refusals a phase's contestants lead to, by resource key (see the header): the losers of
 * each id, then of each domain and listen path among the rest.
 */
export function contest(contestants: readonly Contestant[]): Map<string, Refusal> {
  const refused = new Map<string, Refusal>();
  for (const group of groupBy(contestants, (c) => (hasOwners(c.kind) && c.id !== '' ? ownerKey(c.gateway, c.kind, c.id) : undefined))) {
    const stored = group.find((c) => ownedBy(c.owner, c.key));
    const winner = stored ?? [...group].sort((a, b) => olderFirst(a.obj, b.obj))[0];
    for (const c of group) {
      if (c === winner || !winner) continue;
      refused.set(c.key, { reason: 'IdClaimed', message: claimedMessage(c.id, c.gateway, winner.key, c.key) });
    }
  }
  const rest = contestants.filter((c) => !refused.has(c.key));
  for (const group of groupBy(rest, routeKey)) {
    const [oldest, ...younger] = [...group].sort((a, b) => olderFirst(a.obj, b.obj));
    if (!oldest) continue;
    for (const c of younger) {
      const route = c.kind.route?.(c.body as JsonObject) as Route;
      const domain = route.domain !== '' ? ` on domain ${route.domain}` : '';
      const who = namespaceOfKey(oldest.key) === namespaceOfKey(c.key) ? oldest.key : 'an older resource';
      refused.set(c.key, {
        reason: 'ListenPathClash',
        message: `${route.field} ${route.path}${domain} is already served on gateway ${c.gateway} by ${who}; choose another listen path or domain`,
      });
    }
  }
  return refused;
}
