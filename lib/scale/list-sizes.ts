/**
 * How many objects each gateway's last full LIST returned, per kind, and each namespace's on the
 * API server, as this process saw them: a hint for reading a few objects with a GET each rather
 * than listing them all (readObserved for the gateways, readObjects for the API server).
 *
 * A hint only: never a source of state. Unknown (a new process, a gateway not yet listed), the
 * run falls back on RunSettings.getThreshold alone; stale, it costs time, never correctness
 * (GETs and a LIST answer the same).
 *
 * Why: a LIST costs the whole gateway (every object serialised, sent and parsed: 10,000 APIs
 * are ~75 MB), a GET one object and a round trip. So on a large gateway, a webhook run over a
 * few hundred objects is cheaper by GETs, and a storm's coalesced runs no longer list the whole
 * gateway each.
 */

/** A LIST costs about as much as this many GETs per object it returns (a round trip's fixed cost against an object's transfer and parse). */
export const LISTED_PER_GET = 10;

export class ListSizes {
  private readonly sizes = new Map<string, number>();
  private readonly namespaces = new Map<string, number>();

  /** A complete LIST of `kind` (a resource kind) held `count` objects in `namespace`. */
  seenInNamespace(kind: string, namespace: string, count: number): void {
    this.namespaces.set(`${kind}\u0000${namespace}`, count);
  }

  /** How many objects of `kind` the last LIST found in `namespace`; undefined when none was seen. */
  inNamespace(kind: string, namespace: string): number | undefined {
    return this.namespaces.get(`${kind}\u0000${namespace}`);
  }

  /** A complete LIST of `kind` on `gateway` returned `count` objects. */
  seen(gateway: string, kind: string, count: number): void {
    this.sizes.set(`${gateway}\u0000${kind}`, count);
  }

  /** How many objects of `kind` the last LIST on `gateway` returned; undefined when none was seen. */
  of(gateway: string, kind: string): number | undefined {
    return this.sizes.get(`${gateway}\u0000${kind}`);
  }
}

/** Up to how many reads of one gateway and kind (or one namespace and kind) are GETs: the configured threshold, or more where a LIST would read many times that. */
export function getLimit(getThreshold: number, listSize: number | undefined): number {
  return Math.max(getThreshold, Math.floor((listSize ?? 0) / LISTED_PER_GET));
}
