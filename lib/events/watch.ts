/**
 * Kubernetes WatchEvents → refs. Accepts one event `{type, object}`, a JSON array of them, or
 * newline-delimited JSON (what `kubectl get -w -o json` and watch streams produce).
 * ADDED, MODIFIED and DELETED name their object; BOOKMARK is ignored; ERROR is counted.
 * Only the object's identity is used: the run re-reads everything (never trusts the payload).
 * Throws BadRequestError naming what is wrong when the body is not WatchEvents.
 */
import { BadRequestError } from '../errors.js';
import { IntakeBuilder, type Intake, isObject, str } from './refs.js';

const TYPES = new Set(['ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK', 'ERROR']);

export function parseJsonOrLines(text: string, what: string): unknown[] {
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

export function parseWatchEvents(text: string): Intake {
  const events = parseJsonOrLines(text, 'a WatchEvent, an array of them, or one per line');
  const intake = new IntakeBuilder();
  events.forEach((ev, i) => {
    if (!isObject(ev) || typeof ev.type !== 'string' || !TYPES.has(ev.type)) {
      throw new BadRequestError(`event ${i + 1}: not a WatchEvent (needs type ADDED, MODIFIED, DELETED, BOOKMARK or ERROR)`);
    }
    if (ev.type === 'BOOKMARK') return intake.ignore('bookmark');
    if (ev.type === 'ERROR') return intake.ignore('watch error');
    const obj = ev.object;
    const meta = isObject(obj) ? obj.metadata : undefined;
    if (!isObject(obj) || !isObject(meta)) throw new BadRequestError(`event ${i + 1}: object.metadata is missing`);
    const kind = str(obj.kind);
    const apiVersion = str(obj.apiVersion);
    const name = str(meta.name);
    const namespace = str(meta.namespace);
    if (!kind || !apiVersion) throw new BadRequestError(`event ${i + 1}: object.kind and object.apiVersion are required`);
    if (!apiVersion.startsWith('tyk.tyk.io/')) return intake.ignore('kind not reconciled');
    if (!name || !namespace) throw new BadRequestError(`event ${i + 1}: object.metadata.name and .namespace are required`);
    intake.addObject(kind, namespace, name);
  });
  return intake.build();
}
