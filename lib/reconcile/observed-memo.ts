/**
 * What readObserved derived from the objects of a gateway's full list (each object's observed
 * hash and the slim body later stages read), kept by the digest of the object's bytes
 * (ListedObject.digest) together with what else the derivation took: the body we would send
 * (by `sentKey`, a hash that differs for different bodies) and a legacy recorded hash. Equal
 * digest, sentKey and legacy hash: the same answer, so the object need not be parsed nor
 * hashed again. A steady full run lists every object unchanged; this saves most of its cost.
 *
 * A cache of a pure function, never state: a hit gives what computing it again would, and a
 * miss computes it. Per gateway and kind, only the last complete list's entries are kept (a
 * reading that failed part-way keeps the last complete one), so memory is bounded by one list.
 * Its answers are frozen: shared between runs, they must not be changed.
 */
import type { JsonObject } from '../gateway/types.js';

/** What a summarized read of one listed object answers. */
export interface MemoAnswer {
  readonly body: JsonObject;
  readonly hash: string;
}

interface Entry extends MemoAnswer {
  readonly sentKey: string;
  readonly legacy: string | undefined;
}

export class ObservedMemo {
  private readonly lists = new Map<string, ReadonlyMap<string, Entry>>();

  /** A reading of one full list of `kind` on `gateway`: `answer` each object, then `done`. */
  reading(gateway: string, kind: string): MemoReading {
    const key = `${gateway}\u0000${kind}`;
    const last = this.lists.get(key);
    const now = new Map<string, Entry>();
    return {
      answer: (digest, sentKey, legacy, compute) => {
        const known = now.get(digest) ?? last?.get(digest);
        if (known && known.sentKey === sentKey && known.legacy === legacy) {
          now.set(digest, known);
          return { body: known.body, hash: known.hash };
        }
        const fresh = compute();
        now.set(digest, { body: Object.freeze(fresh.body), hash: fresh.hash, sentKey, legacy });
        return fresh;
      },
      done: () => {
        this.lists.set(key, now);
      },
    };
  }
}

export interface MemoReading {
  /** The answer for the object of `digest` read for a body of `sentKey` and a legacy recorded hash: kept, else `compute`d and kept. */
  answer(digest: string, sentKey: string, legacy: string | undefined, compute: () => MemoAnswer): MemoAnswer;
  done(): void;
}
