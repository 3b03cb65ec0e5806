/**
 * The parts of a sharded full run (shards.ts ShardPart), from what the coordinator counted
 * (coordinate.ts). Pure: no I/O, no clock; deterministic for the same input.
 *
 * `partition(counts, size, namesOf)`: from the number of objects per namespace (every kind a full
 * run looks at, and the records of namespaces that only have records left), parts of at most
 * `size` objects where it can: namespaces, in name order, packed together while they fit (at
 * most MAX_NAMESPACES_PER_SHARD each, so a message stays small); a namespace larger than `size`
 * cut into ⌈n/size⌉ ranges of names (`[from, to)`, in byte order, the order the API server lists
 * a namespace in), about `size` each, at the names the count saw (`namesOf`). The first range
 * has no `from`, the last no `to`: together they hold every name, those created after the count
 * too. (Apart from shards.ts, which every run loads: only a tick's coordinator needs this.)
 */

import { MAX_NAMESPACES_PER_SHARD, type ShardPart } from './shards.js';

/**
 * Parts of at most `size` objects each, covering every namespace in `counts`; deterministic for
 * the same input. `namesOf` gives a namespace's names as counted (an object's and its record's
 * once; a name used by several kinds once per kind), asked only of a namespace above `size`: its
 * ranges are cut between names, so one may be a little over where many kinds share a name.
 */
export function partition(counts: ReadonlyMap<string, number>, size: number, namesOf: (namespace: string) => readonly string[], maxNamespaces = MAX_NAMESPACES_PER_SHARD): ShardPart[] {
  if (!Number.isInteger(size) || size < 1) throw new RangeError(`shard size must be a positive integer, got ${size}`);
  const parts: ShardPart[] = [];
  let group: string[] = [];
  let load = 0;
  const flush = (): void => {
    if (group.length > 0) parts.push({ namespaces: group });
    group = [];
    load = 0;
  };
  for (const namespace of [...counts.keys()].sort(byCodeUnit)) {
    const n = Math.max(0, counts.get(namespace) ?? 0);
    if (n > size) {
      parts.push(...nameRanges(namespace, [...namesOf(namespace)].sort(byCodeUnit), Math.ceil(n / size)));
      continue;
    }
    if (group.length > 0 && (load + n > size || group.length >= maxNamespaces)) flush();
    group.push(namespace);
    load += n;
  }
  flush();
  return parts;
}

/**
 * `namespace` cut into at most `ranges` ranges of about as many of `sorted` each, each cut at
 * the first of a run of equal names; one part of the whole namespace when no cut can be made.
 */
export function nameRanges(namespace: string, sorted: readonly string[], ranges: number): ShardPart[] {
  const cuts: string[] = [];
  for (let k = 1; k < ranges; k++) {
    let at = Math.round((k * sorted.length) / ranges);
    while (at < sorted.length && at > 0 && sorted[at] === sorted[at - 1]) at++;
    const cut = sorted[at];
    if (at > 0 && cut !== undefined && (cuts.length === 0 || cut > (cuts[cuts.length - 1] as string))) cuts.push(cut);
  }
  if (cuts.length === 0) return [{ namespaces: [namespace] }];
  return [...cuts, undefined].map((to, i) => ({ namespace, ...(i > 0 ? { from: cuts[i - 1] as string } : {}), ...(to !== undefined ? { to } : {}) }));
}

function byCodeUnit(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
