/**
 * CloudEvents 1.0 over HTTP → refs: binary mode (`ce-*` headers, the body is the data),
 * structured mode (`application/cloudevents+json`) and batches
 * (`application/cloudevents-batch+json`).
 *
 * The data may be:
 * - a Kubernetes object (Knative ApiServerSource `dev.knative.apiserver.resource.*`, or any
 *   forwarder that sends the object),
 * - a reference {apiVersion, kind, name, namespace} (ApiServerSource `dev.knative.apiserver.ref.*`),
 * - a WatchEvent {type, object},
 * - an Argo Events resource event {type, body, group, version, resource}.
 * The data's shape decides, not the event type, so forwarders we do not know also work when
 * they carry one of these. Only identities are used: the run re-reads everything.
 * Throws BadRequestError naming what is wrong.
 */

import { findForeignKind, findMakerKind, findWideKind } from '../kinds/registry.js';
import { BadRequestError } from '../platform/errors.js';
import { isObject, nonEmpty } from '../platform/guards.js';
import { ENDPOINT_SLICES, type EventItem, findDependencyKind } from './refs.js';
import { fromAnyShape } from './shapes.js';

export const CLOUDEVENTS_TYPES = ['application/cloudevents+json', 'application/cloudevents-batch+json'];

export interface CloudEventInput {
  headers: Record<string, string | undefined>;
  body: string;
}

export interface CloudEvent {
  id: string;
  source: string;
  type: string;
  subject?: string;
  data: unknown;
}

function mediaType(headers: CloudEventInput['headers']): string {
  return (headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
}

function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new BadRequestError(`body is not JSON: expected ${what}`);
  }
}

function fromStructured(raw: unknown, where: string): CloudEvent {
  if (!isObject(raw)) throw new BadRequestError(`${where}: a CloudEvent must be a JSON object`);
  const id = nonEmpty(raw.id);
  const source = nonEmpty(raw.source);
  const type = nonEmpty(raw.type);
  if (raw.specversion !== '1.0') throw new BadRequestError(`${where}: specversion must be "1.0"`);
  if (!id || !source || !type) throw new BadRequestError(`${where}: id, source and type are required`);
  let data: unknown = raw.data;
  if (data === undefined && typeof raw.data_base64 === 'string') {
    data = parseJson(Buffer.from(raw.data_base64, 'base64').toString('utf8'), `${where}: data_base64 holding JSON`);
  }
  if (typeof data === 'string' && /^\s*[[{]/.test(data)) data = parseJson(data, `${where}: data holding JSON`);
  return { id, source, type, subject: nonEmpty(raw.subject), data };
}

function fromBinary(input: CloudEventInput): CloudEvent {
  const h = input.headers;
  const id = h['ce-id'];
  const source = h['ce-source'];
  const type = h['ce-type'];
  if (h['ce-specversion'] !== '1.0') throw new BadRequestError('ce-specversion must be "1.0"');
  if (!id || !source || !type) throw new BadRequestError('ce-id, ce-source and ce-type headers are required');
  const data = input.body.trim() === '' ? undefined : parseJson(input.body, 'JSON event data');
  return { id, source, type, subject: h['ce-subject'], data };
}

/** The events in a request, in any of the three modes. */
export function parseCloudEvents(input: CloudEventInput): CloudEvent[] {
  const type = mediaType(input.headers);
  if (type === 'application/cloudevents-batch+json') {
    const batch = parseJson(input.body, 'a JSON array of CloudEvents');
    if (!Array.isArray(batch)) throw new BadRequestError('a CloudEvents batch must be a JSON array');
    return batch.map((e, i) => fromStructured(e, `event ${i + 1}`));
  }
  if (type === 'application/cloudevents+json') return [fromStructured(parseJson(input.body, 'a CloudEvent'), 'event')];
  if (input.headers['ce-specversion'] !== undefined || input.headers['ce-id'] !== undefined) return [fromBinary(input)];
  throw new BadRequestError('not a CloudEvent: send ce-* headers (binary mode) or content-type application/cloudevents+json');
}

/** Knative's subject: /apis/<group>/<version>/namespaces/<ns>/<plural>/<name>, or /apis/<group>/<version>/<plural>/<name> (cluster-scoped) */
function fromSubject(subject: string | undefined): EventItem | undefined {
  const cluster = /^\/apis\/([^/]+)\/[^/]+\/([^/]+)\/([^/]+)$/.exec(subject ?? '');
  if (cluster) {
    const wide = findWideKind(cluster[1]!, cluster[2]!);
    if (wide && cluster[2] === wide.plural) return { wide: { kind: wide.kind, name: cluster[3]! } };
  }
  const m = /^\/apis\/([^/]+)\/[^/]+\/namespaces\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(subject ?? '');
  if (!m) return undefined;
  const foreign = findForeignKind(m[1]!, m[3]!);
  if (foreign && m[3] === foreign.plural) return { object: { kind: foreign.kind, namespace: m[2]!, name: m[4]! } };
  const wide = findWideKind(m[1]!, m[3]!);
  if (wide && m[3] === wide.plural) return { wide: { kind: wide.kind, namespace: m[2]!, name: m[4]! } };
  if (m[1] === ENDPOINT_SLICES.group && m[3] === ENDPOINT_SLICES.plural) return { endpoints: { namespace: m[2]!, slice: m[4]! } };
  const dependency = findDependencyKind(m[3]!, m[1]);
  if (dependency !== undefined) return { dependency: { kind: dependency, namespace: m[2]!, name: m[4]! } };
  if (m[1] !== 'tyk.tyk.io' || findMakerKind(m[3]!) !== undefined) return { ignored: 'kind not reconciled' };
  return { object: { kind: m[3]!, namespace: m[2]!, name: m[4]! } };
}

/** One EventItem per CloudEvent, each carrying "source id" (unique per the spec) for dedupe. */
export function cloudEventItems(events: CloudEvent[]): EventItem[] {
  return events.map((ev, i) => {
    const item = fromAnyShape(ev.data, `event ${i + 1}`) ?? fromSubject(ev.subject) ?? { ignored: 'no Kubernetes object in the event' };
    return { ...item, id: `ce ${ev.source} ${ev.id}` };
  });
}
