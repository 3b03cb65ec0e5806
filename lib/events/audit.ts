/**
 * audit.k8s.io/v1 EventList → EventItems, as the API server's audit webhook sends it.
 *
 * Takes only stage ResponseComplete writes (create, update, patch, delete, deletecollection)
 * of tyk.tyk.io resources, of networking.k8s.io Ingresses and gateway.networking.k8s.io
 * HTTPRoutes (no other group's), of Gateways and GatewayClasses (`wide`: a full run), and of
 * the resources ours are built from (Secrets, ConfigMaps, Services, SubGraphs, SuperGraphs,
 * ReferenceGrants: an EventItem `dependency`, by name; only the objectRef is read, so a
 * Metadata audit level is enough and Secret data never needs to be in the audit log); skips
 * requests that failed
 * (responseStatus.code >= 300), dry runs, the status subresource, and requests made by our own identity (`ownUsername`: our finalizer
 * patches come back as audit events). Each item carries its auditID, so a batch the API server
 * resends is recognised. A create whose objectRef has no name takes it from responseObject
 * (or requestObject) when the audit level recorded it, else the run covers the namespace;
 * deletecollection covers the namespace. Only identities are used: the run re-reads.
 * Throws BadRequestError naming what is wrong when the body is not an EventList.
 */

import { findForeignKind, findKind, findWideKind } from '../kinds/registry.js';
import { BadRequestError } from '../platform/errors.js';
import { isObject, nonEmpty } from '../platform/guards.js';
import { ENDPOINT_SLICES, type EventItem, findDependencyKind } from './refs.js';

const WRITE_VERBS = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);

export function parseAuditEventList(text: string, ownUsername?: string): EventItem[] {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new BadRequestError('body is not JSON: expected an audit.k8s.io/v1 EventList');
  }
  if (!isObject(body) || body.kind !== 'EventList' || !Array.isArray(body.items)) {
    throw new BadRequestError('expected an audit.k8s.io EventList with items');
  }
  if (typeof body.apiVersion !== 'string' || !body.apiVersion.startsWith('audit.k8s.io/')) {
    throw new BadRequestError(`expected apiVersion audit.k8s.io/v1, got ${JSON.stringify(body.apiVersion)}`);
  }
  return body.items.map((ev, i) => {
    if (!isObject(ev)) throw new BadRequestError(`items[${i}] is not an audit Event`);
    const item = auditItem(ev, ownUsername);
    const id = nonEmpty(ev.auditID);
    // the same auditID appears once per stage; only ResponseComplete is taken, so it is unique here
    return id === undefined ? item : { ...item, id: `audit ${id}` };
  });
}

function auditItem(ev: Record<string, unknown>, ownUsername: string | undefined): EventItem {
  if (ev.stage !== 'ResponseComplete') return { ignored: 'stage not ResponseComplete' };
  if (!WRITE_VERBS.has(nonEmpty(ev.verb) ?? '')) return { ignored: 'read-only verb' };
  const ref = isObject(ev.objectRef) ? ev.objectRef : undefined;
  if (!ref) return { ignored: 'kind not reconciled' };
  const resource = nonEmpty(ref.resource) ?? '';
  const group = nonEmpty(ref.apiGroup);
  const dependency = findDependencyKind(resource, group ?? '');
  const foreign = findForeignKind(group ?? '', resource);
  const wide = findWideKind(group ?? '', resource);
  const slices = group === ENDPOINT_SLICES.group && resource === ENDPOINT_SLICES.plural;
  if (dependency === undefined && !foreign && !wide && !slices && (group !== 'tyk.tyk.io' || findKind(resource) === undefined)) return { ignored: 'kind not reconciled' };
  if (nonEmpty(ref.subresource) === 'status') return { ignored: 'status subresource' };
  const code = isObject(ev.responseStatus) ? ev.responseStatus.code : undefined;
  if (typeof code === 'number' && code >= 300) return { ignored: 'request failed' };
  if (/[?&]dryRun=/.test(nonEmpty(ev.requestURI) ?? '')) return { ignored: 'dry run' };
  const user = isObject(ev.user) ? nonEmpty(ev.user.username) : undefined;
  if (ownUsername !== undefined && user === ownUsername) return { ignored: 'our own request' };
  const namespace = nonEmpty(ref.namespace);
  if (wide) {
    const named = nonEmpty(ref.name);
    return { wide: { kind: wide.kind, ...(namespace ? { namespace } : {}), ...(named ? { name: named } : {}) } };
  }
  if (!namespace) return { ignored: 'no namespace' };
  const name = nonEmpty(ref.name) ?? nameFrom(ev.responseObject) ?? nameFrom(ev.requestObject);
  if (slices) {
    // written by the endpoints controller; its labels (the Service) only at the Request level
    const service = serviceOf(ev.responseObject) ?? serviceOf(ev.requestObject);
    return { endpoints: { namespace, ...(name !== undefined ? { slice: name } : {}), ...(service !== undefined ? { service } : {}) } };
  }
  if (dependency !== undefined) {
    // which of ours use a Secret is known by name only; a nameless write of one changes nothing we can find
    if (name === undefined || ev.verb === 'deletecollection') return { ignored: 'dependency without a name' };
    return { dependency: { kind: dependency, namespace, name } };
  }
  const kind = foreign ? foreign.kind : resource;
  if (name === undefined || ev.verb === 'deletecollection') return { namespace: { kind, namespace } };
  return { object: { kind, namespace, name } };
}

function serviceOf(obj: unknown): string | undefined {
  return isObject(obj) && isObject(obj.metadata) && isObject(obj.metadata.labels) ? nonEmpty(obj.metadata.labels[ENDPOINT_SLICES.serviceLabel]) : undefined;
}

function nameFrom(obj: unknown): string | undefined {
  return isObject(obj) && isObject(obj.metadata) ? nonEmpty(obj.metadata.name) : undefined;
}
