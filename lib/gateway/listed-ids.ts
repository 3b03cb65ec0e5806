/**
 * Objects of a gateway's full list known by their bytes. Each listed object's bytes get a
 * SHA-256 digest; the ids of the last complete list of each kind are kept by digest, so an
 * object listed again byte for byte is handed over with its id and digest and is not parsed
 * (ListedObject.body() parses it when the caller asks). A steady full run reads ~75 MB of
 * unchanged echo per 10,000 APIs: hashing those bytes costs a fraction of parsing them.
 *
 * Guarantees: the id handed over is the one parsing the same bytes gave; an object whose bytes
 * are new is parsed (and checked) as before. Only a reading that completed replaces the kind's
 * ids, so a list that failed part-way leaves the last complete one. Memory: one digest and id
 * per object of the last list of each kind. A process-local hint, never state: a new process
 * (or a changed object) parses, as a first run does. `sameAs` digests the bytes without their
 * leading own-id member, so replicas of one gateway can be compared without parsing.
 */
import { createHash, hash } from 'node:crypto';
import { parseItem } from '../platform/json-items.js';
import type { JsonObject, ListedObject } from './types.js';

export class ListedIds {
  private readonly byKind = new Map<string, ReadonlyMap<string, string>>();

  /**
   * A reading of one list of `kind`. `item` takes each object's bytes and returns its id (from
   * the last list, else `idOf` its parse, which throws for an object without one) and the
   * object; `done` keeps this reading's ids for the next list.
   */
  reading(kind: string, idOf: (item: JsonObject) => string): ListReading {
    const last = this.byKind.get(kind);
    const now = new Map<string, string>();
    return {
      item: (bytes, index) => {
        const digest = hash('sha256', bytes, 'base64');
        let parsed: JsonObject | undefined;
        let id = last?.get(digest);
        if (id === undefined) {
          parsed = parseItem(bytes, index) as JsonObject;
          id = idOf(parsed);
        }
        now.set(digest, id);
        let open = true;
        const listed: ListedObject = {
          digest,
          sameAs: () => {
            if (!open) throw new Error('a listed object was read after its visit');
            return withoutOwnId(bytes) ?? digest;
          },
          body: () => {
            if (!open) throw new Error('a listed object was read after its visit');
            parsed ??= parseItem(bytes, index) as JsonObject;
            return parsed;
          },
        };
        return { id, listed, close: () => (open = false) };
      },
      done: () => {
        this.byKind.set(kind, now);
      },
    };
  }
}

/** The object's leading `"id":"…"` member (a gateway's own object id: `{"id":"<hex>",…}`). */
const OWN_ID = Buffer.from('{"id":"');

/** The SHA-256 of `bytes` without their leading own-id member; undefined when they have none. */
function withoutOwnId(bytes: Buffer): string | undefined {
  if (!bytes.subarray(0, OWN_ID.length).equals(OWN_ID)) return undefined;
  const close = bytes.indexOf(0x22, OWN_ID.length); // the closing quote (an object id has no escapes)
  if (close < 0 || bytes[close + 1] !== 0x2c) return undefined; // followed by a comma: more members
  return createHash('sha256')
    .update(bytes.subarray(0, 1))
    .update(bytes.subarray(close + 2))
    .digest('base64');
}

export interface ListReading {
  item(bytes: Buffer, index: number): { id: string; listed: ListedObject; close(): void };
  done(): void;
}
