/**
 * Kubernetes WatchEvents → EventItems. Accepts one event `{type, object}`, a JSON array of
 * them, or newline-delimited JSON (what `kubectl get -w -o json` and watch streams produce).
 * ADDED, MODIFIED and DELETED name their object; BOOKMARK is ignored; ERROR is counted.
 * Argo Events' resource events ({type: ADD|UPDATE|DELETE, body, group, version, resource})
 * are recognised by shape on this route too.
 * Only the object's identity is used: the run re-reads everything (never trusts the payload).
 * Throws BadRequestError naming what is wrong when the body is not WatchEvents.
 */
import { BadRequestError } from '../platform/errors.js';
import type { EventItem } from './refs.js';
import { fromArgoEvent, fromWatchEvent } from './shapes.js';

function parseJsonOrLines(text: string, what: string): unknown[] {
  const trimmed = text.trim();
  if (trimmed === '') throw new BadRequestError(`empty body: expected ${what}`);
  try {
    const parsed: unknown = JSON.parse(trimmed);
    return Array.isArray(parsed) ? parsed : [parsed];
  } catch {
    return trimmed
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '')
      .map((line, i) => {
        try {
          return JSON.parse(line) as unknown;
        } catch {
          throw new BadRequestError(`line ${i + 1} is not JSON: expected ${what}`);
        }
      });
  }
}

export function parseWatchEvents(text: string): EventItem[] {
  return parseJsonOrLines(text, 'a WatchEvent, an array of them, or one per line').map((ev, i) => {
    const where = `event ${i + 1}`;
    const item = fromWatchEvent(ev, where) ?? fromArgoEvent(ev, where);
    if (!item) throw new BadRequestError(`${where}: not a WatchEvent (needs type ADDED, MODIFIED, DELETED, BOOKMARK or ERROR, and object)`);
    return item;
  });
}
