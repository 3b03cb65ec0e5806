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

  /** Whether the last complete list of `kind` on `gateway` left answers kept (none where the gateway's client gives no digests). */
  has(gateway: string, kind: string): boolean {
    return (this.lists.get(listKey(gateway, kind))?.size ?? 0) > 0;
  }

  /** Drops what the last list of `kind` on `gateway` left (a run that no longer reads there). */
  forget(gateway: string, kind: string): void {
    this.lists.delete(listKey(gateway, kind));
  }

  /** A reading of one full list of `kind` on `gateway`: `answer` each object, then `done`. */
  reading(gateway: string, kind: string): MemoReading {
    const key = listKey(gateway, kind);
    const last = this.lists.get(key);
    const now = new Map<string, Entry>();
    const known = (digest: string, sentKey: string, legacy: string | undefined): MemoAnswer | undefined => {
      const entry = now.get(digest) ?? last?.get(digest);
      if (!entry || entry.sentKey !== sentKey || entry.legacy !== legacy) return undefined;
      now.set(digest, entry);
      return { body: entry.body, hash: entry.hash };
    };
    return {
      answer: (digest, sentKey, legacy, compute) => {
        const kept = known(digest, sentKey, legacy);
        if (kept) return kept;
        const fresh = compute();
        now.set(digest, { body: Object.freeze(fresh.body), hash: fresh.hash, sentKey, legacy });
        return fresh;
      },
      knows: (digest) => now.has(digest) || last?.has(digest) === true,
      known,
      remember: (digest, sentKey, legacy, answer) => {
        now.set(digest, { body: Object.freeze(answer.body), hash: answer.hash, sentKey, legacy });
      },
      keep: (digest) => {
        const entry = digest === undefined ? undefined : last?.get(digest);
        if (digest !== undefined && entry && !now.has(digest)) now.set(digest, entry);
      },
      done: () => {
        this.lists.set(key, now);
      },
    };
  }
}

function listKey(gateway: string, kind: string): string {
  return `${gateway}\u0000${kind}`;
}

export interface MemoReading {
  /** The answer for the object of `digest` read for a body of `sentKey` and a legacy recorded hash: kept, else `compute`d and kept. */
  answer(digest: string, sentKey: string, legacy: string | undefined, compute: () => MemoAnswer): MemoAnswer;
  /** Whether some answer for the object of `digest` is kept (for any body sent). */
  knows(digest: string): boolean;
  /** The kept answer for the object of `digest` read for a body of `sentKey` and a legacy recorded hash; undefined when none is kept (nothing is computed). */
  known(digest: string, sentKey: string, legacy: string | undefined): MemoAnswer | undefined;
  /** Keeps `answer` for the object of `digest` read for a body of `sentKey` (a read-back computed it anyway). */
  remember(digest: string, sentKey: string, legacy: string | undefined, answer: MemoAnswer): void;
  /** The object of `digest` was listed but not read: what the last reading knew of it is kept. */
  keep(digest: string | undefined): void;
  done(): void;
}
