/**
 * The shapes an event's payload can take, recognised by shape alone. Pure. Each `from*`
 * returns the EventItem, or undefined when the payload is not of that shape; they throw
 * BadRequestError when it is of that shape but incomplete.
 *
 * - a Kubernetes object: {apiVersion, kind, metadata: {name, namespace}}; a core Secret or
 *   ConfigMap, a SubGraph or a SuperGraph is a `dependency` (the objects built from it are looked
 *   at); a networking.k8s.io Ingress an `Ingress` object, a gateway.networking.k8s.io HTTPRoute
 *   an `HTTPRoute` one, a Gateway or GatewayClass a `wide` item (a full run); any other
 *   non-tyk.tyk.io kind ignored (a tyk.tyk.io "Ingress" too)
 * - a reference: {apiVersion, kind, name, namespace} (Knative ApiServerSource, Reference mode)
 * - a WatchEvent: {type: ADDED|MODIFIED|DELETED|BOOKMARK|ERROR, object}
 * - an Argo Events resource event: {type: ADD|UPDATE|DELETE, body, group, version, resource}
 */

import { findForeignKind, findMakerKind, findWideKind } from '../kinds/registry.js';
import { BadRequestError } from '../platform/errors.js';
import { isObject, nonEmpty } from '../platform/guards.js';
import { ENDPOINT_SLICES, type EventItem, findDependencyKind } from './refs.js';

const WATCH_TYPES = new Set(['ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK', 'ERROR']);
const ARGO_TYPES = new Set(['ADD', 'UPDATE', 'DELETE']);

/** A Kubernetes object or reference; undefined when `obj` has neither shape. */
function fromObject(obj: unknown, where: string): EventItem | undefined {
  if (!isObject(obj)) return undefined;
  const meta = isObject(obj.metadata) ? obj.metadata : undefined;
  const apiVersion = nonEmpty(obj.apiVersion);
  const kind = nonEmpty(obj.kind);
  if (!apiVersion || !kind || (!meta && !('name' in obj))) return undefined;
  const dependency = findDependencyKind(kind, apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : '');
  const group = apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : '';
  const foreign = group === '' ? undefined : findForeignKind(group, kind);
  const wide = group === '' ? undefined : findWideKind(group, kind);
  if (wide) {
    const namespace = nonEmpty(meta ? meta.namespace : obj.namespace);
    const name = nonEmpty(meta ? meta.name : obj.name);
    return { wide: { kind: wide.kind, ...(namespace ? { namespace } : {}), ...(name ? { name } : {}) } };
  }
  if (apiVersion.startsWith(`${ENDPOINT_SLICES.group}/`) && kind === ENDPOINT_SLICES.kind) {
    const namespace = nonEmpty(meta ? meta.namespace : obj.namespace);
    if (!namespace) throw new BadRequestError(`${where}: the object's namespace is required`);
    const slice = nonEmpty(meta ? meta.name : obj.name);
    const service = meta && isObject(meta.labels) ? nonEmpty(meta.labels[ENDPOINT_SLICES.serviceLabel]) : undefined;
    return { endpoints: { namespace, ...(slice !== undefined ? { slice } : {}), ...(service !== undefined ? { service } : {}) } };
  }
  if (foreign) {
    const name = nonEmpty(meta ? meta.name : obj.name);
    const namespace = nonEmpty(meta ? meta.namespace : obj.namespace);
    if (!name || !namespace) throw new BadRequestError(`${where}: the object's name and namespace are required`);
    return { object: { kind: foreign.kind, namespace, name } };
  }
  // only networking.k8s.io's Ingress is one (gateway.networking.k8s.io's HTTPRoute): another group's kind of that name is not ours
  if ((!apiVersion.startsWith('tyk.tyk.io/') && dependency === undefined) || findMakerKind(kind) !== undefined) return { ignored: 'kind not reconciled' };
  const name = nonEmpty(meta ? meta.name : obj.name);
  const namespace = nonEmpty(meta ? meta.namespace : obj.namespace);
  if (!name || !namespace) throw new BadRequestError(`${where}: the object's name and namespace are required`);
  return dependency === undefined ? { object: { kind, namespace, name } } : { dependency: { kind: dependency, namespace, name } };
}

export function fromWatchEvent(ev: unknown, where: string): EventItem | undefined {
  if (!isObject(ev) || typeof ev.type !== 'string' || !WATCH_TYPES.has(ev.type)) return undefined;
  if (ev.type === 'BOOKMARK') return { ignored: 'bookmark' };
  if (ev.type === 'ERROR') return { ignored: 'watch error' };
  const item = fromObject(ev.object, where);
  if (!item) throw new BadRequestError(`${where}: a ${ev.type} event needs an object with apiVersion, kind and metadata`);
  return item;
}

export function fromArgoEvent(ev: unknown, where: string): EventItem | undefined {
  if (!isObject(ev) || typeof ev.type !== 'string' || !ARGO_TYPES.has(ev.type) || !isObject(ev.body) || typeof ev.resource !== 'string') {
    return undefined;
  }
  const foreign = typeof ev.group === 'string' && (findForeignKind(ev.group, ev.resource) !== undefined || findWideKind(ev.group, ev.resource) !== undefined);
  const slices = ev.group === ENDPOINT_SLICES.group && ev.resource === ENDPOINT_SLICES.plural;
  if (ev.group !== 'tyk.tyk.io' && !foreign && !slices && !(typeof ev.group === 'string' && findDependencyKind(ev.resource, ev.group) !== undefined)) return { ignored: 'kind not reconciled' };
  const item = fromObject(ev.body, where);
  if (!item) throw new BadRequestError(`${where}: an Argo Events resource event's body must be the Kubernetes object`);
  return item;
}

/** Any of the four shapes; undefined when the payload is none of them. */
export function fromAnyShape(data: unknown, where: string): EventItem | undefined {
  return fromWatchEvent(data, where) ?? fromArgoEvent(data, where) ?? fromObject(data, where);
}
