/**
 * Objects one resource generates in the cluster (an Ingress's or an HTTPRoute's
 * ApiDefinitions): which are its own, what of them it manages, and the writes that make them
 * match a plan. Pure: no clock, no I/O. Each generating kind describes itself as a Generator.
 *
 * - Labelled for the generator (its label naming it): ours to write. Labelled and controlled
 *   by it (an ownerReference it recognises): ours to delete. Nothing else is ever written or
 *   deleted: a desired name held by an object not labelled for it is `taken`.
 * - diff: desired vs what the cluster has → create (a free name), update (one PUT when the
 *   managed view differs, or differs from what we last wrote and saw: `memory`), delete (only
 *   objects it owns, never on an incomplete plan, never a name the plan holds).
 * - teardown: everything it owns that is not already being deleted.
 */
import type { ChildMemory, ChildStep } from '../../engine/composite.js';
import { hashOf } from '../../engine/hash.js';
import type { KubeObject } from '../../kube/types.js';
import { isObject } from '../../platform/guards.js';

type Json = Record<string, unknown>;

/** What differs between generating kinds. */
export interface Generator {
  /** the label on a generated object naming its generator */
  readonly label: string;
  /** whether an ownerReference names the generator called `name` */
  isOwnerRef(ref: Json, name: string): boolean;
  /** what the generator manages of a generated object (its memory is the hash of this) */
  view(obj: KubeObject, name: string): Json;
}

/** One desired generated object. */
export interface Wanted {
  readonly name: string;
  /** name, namespace, labels, ownerReference, spec */
  readonly object: KubeObject;
}

export interface Diff {
  readonly steps: readonly ChildStep[];
  /** desired names held by an object not labelled for (or controlled by something other than) the generator */
  readonly taken: readonly string[];
  /** desired names whose object is being deleted: created again once it is gone */
  readonly terminating: readonly string[];
  /** names up to date, with their view hashes (what the record remembers) */
  readonly unchanged: ReadonlyMap<string, ChildMemory>;
}

export function ownerRefs(obj: KubeObject): Json[] {
  return Array.isArray(obj.metadata.ownerReferences) ? obj.metadata.ownerReferences.filter(isObject) : [];
}

/** Labelled for the generator `name`: ours to write. */
export function labelledFor(g: Generator, obj: KubeObject, name: string): boolean {
  return obj.metadata.labels?.[g.label] === name;
}

/** Labelled for and controlled by the generator `name`: ours to delete. */
export function ownedBy(g: Generator, obj: KubeObject, name: string): boolean {
  return labelledFor(g, obj, name) && ownerRefs(obj).some((r) => g.isOwnerRef(r, name));
}

/** `current` with `desired`'s spec, labels and ownerReference over it: the body of one PUT; undefined when another object controls it. */
function updated(g: Generator, current: KubeObject, desired: KubeObject, name: string): KubeObject | undefined {
  const others = ownerRefs(current).filter((r) => !g.isOwnerRef(r, name));
  if (others.some((r) => r.controller === true)) return undefined;
  const { status: _status, ...rest } = current;
  return {
    ...rest,
    metadata: { ...current.metadata, labels: { ...current.metadata.labels, ...desired.metadata.labels }, ownerReferences: [...others, ...ownerRefs(desired)] },
    spec: desired.spec ?? {},
  };
}

/**
 * `wanted` vs `current` (every object labelled for the generator, and what is at each desired
 * name; null: free). `keep`: names not to delete though not wanted (held paths); `complete`:
 * false when the plan could not be made, so nothing is deleted.
 */
export function diffGenerated(
  g: Generator,
  name: string,
  wanted: readonly Wanted[],
  current: ReadonlyMap<string, KubeObject | null>,
  memory: Readonly<Record<string, ChildMemory>>,
  plan: { readonly complete: boolean; readonly keep?: readonly string[] },
): Diff {
  const steps: ChildStep[] = [];
  const taken: string[] = [];
  const terminating: string[] = [];
  const unchanged = new Map<string, ChildMemory>();
  for (const want of wanted) {
    const cur = current.get(want.name) ?? null;
    if (cur === null) {
      steps.push({ op: 'create', name: want.name, object: want.object });
      continue;
    }
    if (!labelledFor(g, cur, name)) {
      taken.push(want.name);
      continue;
    }
    if (cur.metadata.deletionTimestamp) {
      terminating.push(want.name);
      continue;
    }
    const sent = hashOf(g.view(want.object, name));
    const seen = hashOf(g.view(cur, name));
    const mem = memory[want.name];
    if (sent === seen || (mem?.sent === sent && mem.seen === seen)) {
      unchanged.set(want.name, { sent, seen });
      continue;
    }
    const body = updated(g, cur, want.object, name);
    if (body === undefined) taken.push(want.name);
    else steps.push({ op: 'update', name: want.name, object: body });
  }
  if (plan.complete) {
    const keep = new Set([...wanted.map((a) => a.name), ...(plan.keep ?? [])]);
    for (const [n, cur] of [...current.entries()].sort(([a], [b]) => a.localeCompare(b))) {
      if (cur === null || keep.has(n) || cur.metadata.deletionTimestamp || !ownedBy(g, cur, name)) continue;
      steps.push({ op: 'delete', name: n, uid: cur.metadata.uid ?? '' });
    }
  }
  return { steps, taken, terminating, unchanged };
}

/** Everything the generator `name` owns that is not already being deleted: what deleting (or releasing) it removes. */
export function teardownGenerated(g: Generator, name: string, current: ReadonlyMap<string, KubeObject | null>): ChildStep[] {
  return [...current.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .flatMap(([n, cur]): ChildStep[] => (cur && !cur.metadata.deletionTimestamp && ownedBy(g, cur, name) ? [{ op: 'delete', name: n, uid: cur.metadata.uid ?? '' }] : []));
}

/** The ApiDefinitions labelled `label`, by name, grouped by "namespace/<label value>". */
export function groupByLabel(objects: readonly KubeObject[], label: string): Map<string, Map<string, KubeObject>> {
  const out = new Map<string, Map<string, KubeObject>>();
  for (const o of objects) {
    const owner = o.metadata.labels?.[label];
    if (owner === undefined) continue;
    const k = `${o.metadata.namespace ?? ''}/${owner}`;
    out.set(k, (out.get(k) ?? new Map()).set(o.metadata.name, o));
  }
  return out;
}
