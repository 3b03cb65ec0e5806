/**
 * The shapes an event's payload can take, recognised by shape alone, each turned into a ref
 * on the intake. Pure. Returns false when the payload is none of them; throws
 * BadRequestError when it is one of them but incomplete.
 *
 * - a Kubernetes object: {apiVersion, kind, metadata: {name, namespace}}
 * - a reference: {apiVersion, kind, name, namespace} (Knative ApiServerSource, Reference mode)
 * - a WatchEvent: {type: ADDED|MODIFIED|DELETED|BOOKMARK|ERROR, object}
 * - an Argo Events resource event: {type: ADD|UPDATE|DELETE, body, group, version, resource}
 */
import { BadRequestError } from '../errors.js';
import { type IntakeBuilder, isObject, str } from './refs.js';

const WATCH_TYPES = new Set(['ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK', 'ERROR']);
const ARGO_TYPES = new Set(['ADD', 'UPDATE', 'DELETE']);

/** Adds the object's ref when it is one of ours; false when `obj` is not object-shaped. */
export function takeObject(intake: IntakeBuilder, obj: unknown, where: string): boolean {
  if (!isObject(obj)) return false;
  const meta = isObject(obj.metadata) ? obj.metadata : undefined;
  const apiVersion = str(obj.apiVersion);
  const kind = str(obj.kind);
  const name = str(meta?.name) ?? str(obj.name);
  const namespace = str(meta?.namespace) ?? str(obj.namespace);
  if (!apiVersion || !kind || (!meta && !('name' in obj))) return false;
  if (!apiVersion.startsWith('tyk.tyk.io/')) {
    intake.ignore('kind not reconciled');
    return true;
  }
  if (!name || !namespace) throw new BadRequestError(`${where}: the object's name and namespace are required`);
  intake.addObject(kind, namespace, name);
  return true;
}

export function isWatchEvent(v: unknown): v is { type: string; object?: unknown } {
  return isObject(v) && typeof v.type === 'string' && WATCH_TYPES.has(v.type) && ('object' in v || v.type === 'BOOKMARK');
}

export function isArgoEvent(v: unknown): v is { type: string; body: unknown; group?: unknown; resource?: unknown } {
  return isObject(v) && typeof v.type === 'string' && ARGO_TYPES.has(v.type) && isObject(v.body) && typeof v.resource === 'string';
}

export function takeWatchEvent(intake: IntakeBuilder, ev: { type: string; object?: unknown }, where: string): void {
  if (ev.type === 'BOOKMARK') return intake.ignore('bookmark');
  if (ev.type === 'ERROR') return intake.ignore('watch error');
  if (!takeObject(intake, ev.object, where)) throw new BadRequestError(`${where}: object with apiVersion, kind and metadata is required`);
}

export function takeArgoEvent(intake: IntakeBuilder, ev: { body: unknown; group?: unknown }, where: string): void {
  if (ev.group !== 'tyk.tyk.io') return intake.ignore('kind not reconciled');
  if (!takeObject(intake, ev.body, where)) throw new BadRequestError(`${where}: body must be the Kubernetes object`);
}

/** Any of the four shapes; false when the payload is none of them. */
export function takeResourceShape(intake: IntakeBuilder, data: unknown, where: string): boolean {
  if (isWatchEvent(data)) {
    takeWatchEvent(intake, data, where);
    return true;
  }
  if (isArgoEvent(data)) {
    takeArgoEvent(intake, data, where);
    return true;
  }
  return takeObject(intake, data, where);
}
