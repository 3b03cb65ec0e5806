/**
 * Kubernetes Events about our objects, one Event per distinct thing said, with a count, as
 * client-go's event recorder aggregates them.
 *
 * Contract:
 * - Naming: one Event object per (involved object uid, type, reason, message). Its name is
 *   `<object name>.<16 hex digits of sha256(uid, type, reason, message)>` (the object name cut
 *   so the whole stays a valid name), so every run and every process that says the same thing
 *   about the same object finds the same Event, and a new object of the same name (a new uid)
 *   starts afresh.
 * - Messages are made one line, secrets masked (the values given as `secrets`, bearer tokens,
 *   credentials in URLs, `token=`/`password:`-style pairs), and cut to 1024 bytes (the API's
 *   limit for a note) before naming: what is hashed is what is stored.
 * - First occurrence: created (core/v1) with count 1, firstTimestamp = lastTimestamp = now.
 *   A repeat: merge-patched with count + 1 and lastTimestamp = now, carrying the
 *   resourceVersion last seen as a precondition. 409 AlreadyExists at create → read it, then
 *   patch; 404 at patch (the API server's event TTL expired it) → create; 409 Conflict at
 *   patch (another process bumped it) → read, then patch again. At most 4 attempts, then throws.
 * - The count and resourceVersion of recent Events are remembered in this process (bounded,
 *   least recently used out), so a repeat costs one PATCH; a process that does not remember
 *   (after a restart, another replica, a Lambda cold start) pays a create answered 409, a GET
 *   and the PATCH.
 * - `eventName` and `eventMessage` are pure; EventRecorder does I/O only through the EventSink
 *   it is given (KubeClient implements it over HTTP). Errors of the sink other than the answers
 *   above propagate; the caller decides that an Event is never worth failing a run for.
 */
import { createHash } from 'node:crypto';
import type { KubeObject } from './types.js';

export type EventType = 'Normal' | 'Warning';

/** A core/v1 Event, the fields we write and read. */
export interface KubeEvent {
  apiVersion: 'v1';
  kind: 'Event';
  metadata: { name: string; namespace: string; resourceVersion?: string; [key: string]: unknown };
  involvedObject: { apiVersion: string; kind: string; name: string; namespace: string; uid?: string; resourceVersion?: string };
  type: EventType;
  reason: string;
  message: string;
  source: { component: string; host?: string };
  reportingComponent: string;
  reportingInstance: string;
  firstTimestamp: string;
  lastTimestamp: string;
  count: number;
  [key: string]: unknown;
}

/** The Event API, as the recorder needs it. Other failures than those named throw. */
export interface EventSink {
  /** The Event, or null when there is none (404). */
  getEvent(namespace: string, name: string): Promise<KubeEvent | null>;
  /** Creates it; 'exists' when an Event of that name exists (409 AlreadyExists). */
  createEvent(namespace: string, event: KubeEvent): Promise<KubeEvent | 'exists'>;
  /** Merge-patches it; 'gone' on 404, 'conflict' on 409 (a stale resourceVersion). */
  patchEvent(namespace: string, name: string, patch: Record<string, unknown>): Promise<KubeEvent | 'gone' | 'conflict'>;
}

export interface EventRecorderOptions {
  /** source.component and reportingComponent */
  component: string;
  /** reportingInstance and source.host: which process (a pod's or host's name) */
  instance: string;
  /** epoch ms */
  now: () => number;
  /** values never to appear in a message (TYK_AUTH, tokens) */
  secrets?: readonly string[];
  /** Events remembered for cheap repeats; default 4096 (as client-go's cache) */
  cacheSize?: number;
}

export interface RecordedEvent {
  name: string;
  count: number;
}

/** Longest message the API takes for an Event's note, in bytes. */
export const MESSAGE_LIMIT_BYTES = 1024;
const NAME_LIMIT = 253;
const HASH_LENGTH = 16;
const MAX_ATTEMPTS = 4;

/** The deterministic name of the Event saying (type, reason, message) about `obj`. */
export function eventName(obj: KubeObject, type: EventType, reason: string, message: string): string {
  const { uid, namespace = '', name } = obj.metadata;
  const identity = uid ?? `${obj.apiVersion}/${obj.kind}/${namespace}/${name}`;
  const hash = createHash('sha256').update([identity, type, reason, message].join('\u0000')).digest('hex').slice(0, HASH_LENGTH);
  // a DNS subdomain: at most 253 characters, starting and ending with a letter or digit
  const base = name.slice(0, NAME_LIMIT - HASH_LENGTH - 1).replace(/[^a-z0-9]+$/, '');
  return `${base === '' ? 'object' : base}.${hash}`;
}

/** One line, secrets masked, at most 1024 bytes of UTF-8 (cut on a character boundary, marked with "…"). */
export function eventMessage(raw: string, secrets: readonly string[] = []): string {
  let m = raw;
  for (const s of secrets) if (s.length >= 4) m = m.split(s).join('[redacted]');
  m = m
    // credentials in URLs: scheme://user:password@host
    .replace(/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@]*@/gi, '$1[redacted]@')
    // header-like and key=value pairs, with the scheme of an Authorization value
    .replace(/\b((?:x-tyk-authorization|authorization|tyk_auth|[a-z_-]*token|secret|password|api[_-]?key)["']?\s*[:=]\s*["']?)(?:(?:bearer|basic)\s+)?[^\s,;"'&]+/gi, '$1[redacted]')
    // a bearer token anywhere else
    .replace(/\b(bearer)\s+(?!\[redacted\])[^\s,;"']+/gi, '$1 [redacted]')
    .replace(/\s+/g, ' ')
    .trim();
  return truncateUtf8(m, MESSAGE_LIMIT_BYTES);
}

function truncateUtf8(s: string, limit: number): string {
  if (Buffer.byteLength(s, 'utf8') <= limit) return s;
  const ellipsis = '…';
  let budget = limit - Buffer.byteLength(ellipsis, 'utf8');
  let out = '';
  for (const ch of s) {
    const size = Buffer.byteLength(ch, 'utf8');
    if (size > budget) break;
    out += ch;
    budget -= size;
  }
  return out + ellipsis;
}

interface Known {
  count: number;
  resourceVersion?: string;
}

export class EventRecorder {
  private readonly known = new Map<string, Known>();
  private readonly cacheSize: number;

  constructor(
    private readonly sink: EventSink,
    private readonly options: EventRecorderOptions,
  ) {
    this.cacheSize = options.cacheSize ?? 4096;
  }

  /** Says (type, reason, message) about `obj`: creates its Event, or counts one more. */
  async record(obj: KubeObject, type: EventType, reason: string, rawMessage: string): Promise<RecordedEvent> {
    const message = eventMessage(rawMessage, this.options.secrets);
    const namespace = obj.metadata.namespace ?? 'default';
    const name = eventName(obj, type, reason, message);
    const key = `${namespace}/${name}`;
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const now = new Date(this.options.now()).toISOString();
      const known = this.known.get(key);
      if (known === undefined) {
        const created = await this.sink.createEvent(namespace, this.newEvent(obj, namespace, name, type, reason, message, now));
        if (created !== 'exists') return this.remember(key, created);
        // told before, by another process or one that forgot: read it, then count one more
        const current = await this.sink.getEvent(namespace, name);
        if (current !== null) this.remember(key, current);
        continue;
      }
      const patch = { count: known.count + 1, lastTimestamp: now, metadata: known.resourceVersion ? { resourceVersion: known.resourceVersion } : {} };
      const patched = await this.sink.patchEvent(namespace, name, patch);
      if (patched === 'gone') {
        this.known.delete(key);
        continue;
      }
      if (patched === 'conflict') {
        const current = await this.sink.getEvent(namespace, name);
        if (current === null) this.known.delete(key);
        else this.remember(key, current);
        continue;
      }
      return this.remember(key, patched);
    }
    throw new Error(`event ${namespace}/${name}: still conflicting after ${MAX_ATTEMPTS} attempts`);
  }

  private newEvent(obj: KubeObject, namespace: string, name: string, type: EventType, reason: string, message: string, now: string): KubeEvent {
    const { component, instance } = this.options;
    const { uid, resourceVersion } = obj.metadata;
    return {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name, namespace },
      involvedObject: {
        apiVersion: obj.apiVersion,
        kind: obj.kind,
        name: obj.metadata.name,
        namespace,
        ...(uid !== undefined ? { uid } : {}),
        ...(resourceVersion !== undefined ? { resourceVersion } : {}),
      },
      type,
      reason,
      message,
      source: { component, host: instance },
      reportingComponent: component,
      reportingInstance: instance,
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
    };
  }

  private remember(key: string, event: KubeEvent): RecordedEvent {
    const count = typeof event.count === 'number' && event.count > 0 ? event.count : 1;
    this.known.delete(key);
    this.known.set(key, { count, ...(event.metadata.resourceVersion !== undefined ? { resourceVersion: event.metadata.resourceVersion } : {}) });
    while (this.known.size > this.cacheSize) this.known.delete(this.known.keys().next().value as string);
    return { name: event.metadata.name, count };
  }
}
