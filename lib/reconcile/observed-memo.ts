/**
 * What readObserved derived from the objects of a gateway's full list (each object's observed
 * hash and the slim body later stages read), kept by the digest of the object's bytes
 * (ListedObject.digest) together with what else the derivation took: the body we would send
 * (by `sentKey`, a hash that differs for different bodies) and a legacy recorded hash. Equal
 * digest, sentKey and legacy hash: the same answer, so the object need not be parsed nor
 * hashed again. A steady full run lists every object unchanged; this saves most of its cost.
 *
 * A cache of a pure function, never state: a hit gives what computing it again would, and a
 * miss computes it. Per gateway and kind, only the objects of the last complete list are kept
 * (a reading that failed part-way keeps the last complete one), so memory is bounded by one
 * list: what was answered, remembered (a read-back after our write), or kept (listed unread).
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
      remember: (digest, sentKey, legacy, answer) => {
        now.set(digest, { body: Object.freeze(answer.body), hash: answer.hash, sentKey, legacy });
      },
      keep: (digest) => {
        const known = digest === undefined ? undefined : last?.get(digest);
        if (digest !== undefined && known && !now.has(digest)) now.set(digest, known);
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
  /** Keeps `answer` for the object of `digest` read for a body of `sentKey` (a read-back computed it anyway). */
  remember(digest: string, sentKey: string, legacy: string | undefined, answer: MemoAnswer): void;
  /** The object of `digest` was listed but not read: what the last reading knew of it is kept. */
  keep(digest: string | undefined): void;
  done(): void;
}
