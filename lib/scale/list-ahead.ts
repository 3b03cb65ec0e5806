/**
 * A gateway's full list started ahead of the reads it will answer. A full run's first decision
 * lists every page of the API server before it knows what to read on the gateway, then lists
 * the gateway: one after the other. Where this process has listed a kind on a gateway before and
 * kept answers by digest (so the run will very likely list it again, and know most of it by its
 * bytes), the run starts that list first and pages through the API server while the list
 * arrives; readObserved then answers the reads from it (run.ts listAhead, load.ts fromAhead).
 *
 * The list's objects are kept small until the reads are known: an object the ObservedMemo knows
 * by its digest keeps its id and digest only; another keeps its parsed body too, up to
 * `maxBodies` of them (past that, id and digest only).
 *
 * Guarantees: it is the one list readObserved would have sent; a read it cannot answer (neither
 * a kept body nor the memo's answer for the body the run would send) is handed back and read
 * the usual way (a GET each for a few, a list for many), never guessed; a list that failed fails
 * the reads it covers, as a later list would (the error is raised where the reads take it, never
 * unhandled); an object a complete list lacks is absent; a list no read takes is reported
 * (`untaken`), so that it is not sent again.
 * Memory: an id and a digest per listed object, at most `maxBodies` parsed bodies. */
import type { Gateway, GatewayObjectKind, JsonObject } from '../gateway/types.js';
import type { MemoReading } from './observed-memo.js';

/** One listed object as kept: its id, its bytes' digest, and its body where the memo does not know the digest. */
export interface AheadItem {
  readonly id: string;
  readonly digest: string | undefined;
  readonly body?: JsonObject;
}

/** A list read ahead: its objects in list order, and the memo reading that saw them (to answer and then close). */
export interface AheadList {
  readonly items: readonly AheadItem[];
  readonly memo: MemoReading | undefined;
}

/** Up to how many listed objects the memo does not know keep their parsed bodies (~2 KB to ~30 KB each). */
export const AHEAD_MAX_BODIES = 2_000;

export class ListsAhead {
  private readonly lists = new Map<string, { gateway: string; kind: GatewayObjectKind; listed: Promise<AheadList> }>();

  /** Starts listing `kind` on `gateway`; `memo` (a reading of the gateway's kind) tells which objects need no body. */
  start(gateway: Gateway, kind: GatewayObjectKind, memo: MemoReading | undefined, maxBodies = AHEAD_MAX_BODIES): void {
    const key = keyOf(gateway.name, kind);
    if (this.lists.has(key)) return;
    const items: AheadItem[] = [];
    let bodies = 0;
    const listed = gateway
      .list(kind, (id, item) => {
        const known = item.digest !== undefined && memo?.knows(item.digest) === true;
        if (known || bodies >= maxBodies) items.push({ id, digest: item.digest });
        else {
          bodies++;
          items.push({ id, digest: item.digest, body: item.body() });
        }
      })
      .then((): AheadList => ({ items, memo }));
    // taken later (or never): its failure is raised where it is taken, never as an unhandled rejection
    listed.catch(() => undefined);
    this.lists.set(key, { gateway: gateway.name, kind, listed });
  }

  /** The list of `kind` on the gateway named `gateway`, if one was started and not yet taken; each is taken once. */
  take(gateway: string, kind: GatewayObjectKind): Promise<AheadList> | undefined {
    const key = keyOf(gateway, kind);
    const started = this.lists.get(key);
    this.lists.delete(key);
    return started?.listed;
  }

  /** The lists started and not taken (no read wanted them: a list sent for nothing). */
  untaken(): { gateway: string; kind: GatewayObjectKind }[] {
    return [...this.lists.values()].map(({ gateway, kind }) => ({ gateway, kind }));
  }
}

function keyOf(gateway: string, kind: GatewayObjectKind): string {
  return `${gateway}\u0000${kind}`;
}
