/**
 * audit.k8s.io/v1 EventList → refs, as the API server's audit webhook sends it.
 *
 * Takes only stage ResponseComplete events about resources of group tyk.tyk.io; skips
 * requests that failed (responseStatus.code >= 300), dry runs, and the status subresource
 * (our own status patches). A create whose objectRef has no name takes it from
 * responseObject when the audit level recorded it, else the run covers the namespace;
 * deletecollection covers the namespace. Only identities are used: the run re-reads.
 * Throws BadRequestError naming what is wrong when the body is not an EventList.
 */
import { BadRequestError } from '../errors.js';
import { findKind } from '../reconcile/kinds.js';
import { IntakeBuilder, type Intake, isObject, str } from './refs.js';

export function parseAuditEventList(text: string): Intake {
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
  const intake = new IntakeBuilder();
  body.items.forEach((ev, i) => {
    if (!isObject(ev)) throw new BadRequestError(`items[${i}] is not an audit Event`);
    takeEvent(intake, ev);
  });
  return intake.build();
}

const WRITE_VERBS = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);

function takeEvent(intake: IntakeBuilder, ev: Record<string, unknown>): void {
  if (ev.stage !== 'ResponseComplete') return intake.ignore('stage not ResponseComplete');
  if (!WRITE_VERBS.has(str(ev.verb) ?? '')) return intake.ignore('read-only verb');
  const ref = isObject(ev.objectRef) ? ev.objectRef : undefined;
  if (!ref || str(ref.apiGroup) !== 'tyk.tyk.io') return intake.ignore('kind not reconciled');
  const resource = str(ref.resource) ?? '';
  if (findKind(resource) === undefined) return intake.ignore('kind not reconciled');
  if (str(ref.subresource) === 'status') return intake.ignore('status subresource');
  const code = isObject(ev.responseStatus) ? ev.responseStatus.code : undefined;
  if (typeof code === 'number' && code >= 300) return intake.ignore('request failed');
  if (/[?&]dryRun=/.test(str(ev.requestURI) ?? '')) return intake.ignore('dry run');
  const namespace = str(ref.namespace);
  if (!namespace) return intake.ignore('no namespace');
  const name = str(ref.name) ?? nameFrom(ev.responseObject) ?? nameFrom(ev.requestObject);
  if (name === undefined || ev.verb === 'deletecollection') return intake.addNamespace(resource, namespace);
  intake.addObject(resource, namespace, name);
}

function nameFrom(obj: unknown): string | undefined {
  return isObject(obj) && isObject(obj.metadata) ? str(obj.metadata.name) : undefined;
}
