/**
 * KubeApi over HTTP: @kubernetes/client-node's KubeConfig supplies the server and the
 * credentials (kubeconfig file or in-cluster service account, token refresh and exec plugins
 * included); requests go over the transport the service chose (lib/platform/http.ts: Node's own by
 * default, undici's for full runs), made with the kubeconfig's TLS settings (made again when they
 * change), with a timeout on every call.
 *
 * Guarantees (see ./types.ts): get → null only on 404; list follows `continue` to the end or
 * throws (an expired continue token restarts the list, at most twice); finalizer changes
 * carry the resourceVersion they were computed from and re-read and retry on 409; Events are
 * aggregated by ./events.ts (one Event per distinct thing said, a count for repeats), over the
 * EventSink methods here (GET, POST and merge PATCH of core/v1 Events). createObject,
 * replaceObject (PUT under resourceVersion) and deleteObject (with a uid precondition) are
 * single attempts, for the ApiDefinitions an Ingress generates; a 409 is a KubeConflictError.
 * Throws KubeApiError, KubeConflictError, KubeUnavailableError; their messages never carry
 * credentials.
 */
import { hostname } from 'node:os';
import type { KubeConfig } from '@kubernetes/client-node';
import { KubeApiError, KubeConflictError, KubeUnavailableError } from '../platform/errors.js';
import { type HttpResponse, type HttpTransport, TransportError, type TransportFactory } from '../platform/http.js';
import { nodeTransports } from '../platform/http-node.js';
import { EventRecorder, type EventSink, type EventType, type KubeEvent, type RecordedEvent } from './events.js';
import { EVENT } from './kinds.js';
import type { KubeApi, KubeObject, ListOptions, ResourceKind } from './types.js';

export interface KubeClientOptions {
  /** per-request timeout; default 10 s */
  timeoutMs?: number;
  /** items per list page; default 500 */
  pageSize?: number;
  /** attempts for a finalizer change that keeps meeting 409; default 5 */
  conflictRetries?: number;
  /** the clock of Event timestamps (epoch ms); default Date.now */
  now?: () => number;
  /** values never to appear in an Event's message (TYK_AUTH, tokens) */
  secrets?: readonly string[];
  /** reportingInstance of our Events; default the host name (the pod's name in Kubernetes) */
  instance?: string;
  /** makes the connection pool (lib/platform/http.ts), chosen where the service is built; default Node's own (lib/platform/http-node.ts) */
  transport?: TransportFactory;
}

type Query = Record<string, string | number | undefined>;

interface HttpsOpts {
  headers?: Record<string, string | string[] | number | undefined>;
  ca?: string | Buffer;
  cert?: string | Buffer;
  key?: string | Buffer;
  rejectUnauthorized?: boolean;
  servername?: string;
  auth?: string;
}

export class KubeClient implements KubeApi, EventSink {
  private readonly timeoutMs: number;
  private readonly pageSize: number;
  private readonly conflictRetries: number;
  private readonly transports: TransportFactory;
  private transport?: { transport: HttpTransport; fingerprint: string };
  private readonly events: EventRecorder;

  constructor(
    private readonly kc: KubeConfig,
    options: KubeClientOptions = {},
  ) {
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.pageSize = options.pageSize ?? 500;
    this.conflictRetries = options.conflictRetries ?? 5;
    this.transports = options.transport ?? nodeTransports();
    this.events = new EventRecorder(this, {
      component: 'gateway-reconciler',
      instance: (options.instance ?? hostname()).slice(0, 128),
      now: options.now ?? Date.now,
      secrets: options.secrets ?? [],
    });
  }

  /** The API server URL (no credentials), for logs and /readyz. */
  get server(): string {
    return this.kc.getCurrentCluster()?.server ?? '';
  }

  async get(kind: ResourceKind, namespace: string, name: string): Promise<KubeObject | null> {
    const res = await this.call('GET', objectPath(kind, namespace, name));
    if (res.status === 404) return null;
    return this.expectObject(res, 'get', kind, name);
  }

  async list(kind: ResourceKind, namespace?: string, options: ListOptions = {}): Promise<KubeObject[]> {
    const range = namespace === undefined ? undefined : options.range;
    for (let restart = 0; ; restart++) {
      const items: KubeObject[] = [];
      // a range begins where the range before it stopped, unless that token was too old
      let cont: string | undefined = restart === 0 ? range?.startAt || undefined : undefined;
      let expired = false;
      range?.begin();
      do {
        const asked = cont;
        const res = await this.call('GET', collectionPath(kind, namespace), {
          query: { labelSelector: options.labelSelector, limit: this.pageSize, continue: cont },
          ...(options.metadataOnly ? { accept: METADATA_ONLY } : {}),
        });
        if (res.status === 410 && cont !== undefined && restart < 2) {
          expired = true;
          break;
        }
        const list = this.expectOk(res, 'list', kind, namespace ?? '(all namespaces)') as { items?: unknown; metadata?: { continue?: string } };
        // an empty metadata-only list is `"items": null` on kube-apiserver 1.20: no items
        if (list.items === null) list.items = [];
        if (!Array.isArray(list.items)) throw new KubeApiError(res.status, `list ${kind.plural}: answer has no items`);
        // a built-in kind's list items carry no apiVersion and kind (the list does): put them back
        const apiVersion = kind.group === '' ? kind.version : `${kind.group}/${kind.version}`;
        for (const o of list.items as KubeObject[]) {
          const item = o.apiVersion && o.kind ? o : { ...o, apiVersion, kind: kind.kind };
          if (options.keep === undefined || options.keep(item)) items.push(item);
          range?.seen(item.metadata?.name);
        }
        cont = list.metadata?.continue || undefined;
        if (range?.reached()) {
          if (asked !== undefined) range?.stoppedAt(asked);
          break;
        }
      } while (cont !== undefined);
      if (!expired) return items;
    }
  }

  async createObject(kind: ResourceKind, namespace: string, obj: KubeObject): Promise<KubeObject> {
    const res = await this.call('POST', collectionPath(kind, namespace), { body: { ...obj, metadata: { ...obj.metadata, namespace } } });
    if (res.status === 409) throw this.toError(res, 'create', kind, obj.metadata.name);
    return this.expectObject(res, 'create', kind, obj.metadata.name);
  }

  async replaceObject(kind: ResourceKind, obj: KubeObject): Promise<KubeObject> {
    const { namespace = '', name } = obj.metadata;
    const res = await this.call('PUT', objectPath(kind, namespace, name), { body: obj });
    return this.expectObject(res, 'update', kind, name);
  }

  async deleteObject(kind: ResourceKind, namespace: string, name: string, preconditions: { uid?: string } = {}): Promise<'deleted' | 'terminating' | 'not found'> {
    const body = { kind: 'DeleteOptions', apiVersion: 'v1', ...(preconditions.uid !== undefined ? { preconditions: { uid: preconditions.uid } } : {}) };
    const res = await this.call('DELETE', objectPath(kind, namespace, name), { body });
    if (res.status === 404) return 'not found';
    const answer = this.expectOk(res, 'delete', kind, name) as { kind?: unknown; metadata?: { deletionTimestamp?: unknown; finalizers?: unknown } };
    // a custom resource removed at once answers a Status; one its finalizers keep, the object, marked
    const kept = answer.kind !== 'Status' && typeof answer.metadata?.deletionTimestamp === 'string' && Array.isArray(answer.metadata.finalizers) && answer.metadata.finalizers.length > 0;
    return kept ? 'terminating' : 'deleted';
  }

  /** Says (type, reason, message) about `obj` in a Kubernetes Event, aggregated (see ./events.ts). */
  recordEvent(obj: KubeObject, type: EventType, reason: string, message: string): Promise<RecordedEvent> {
    return this.events.record(obj, type, reason, message);
  }

  // ── EventSink (./events.ts): the core/v1 Event API ──

  async getEvent(namespace: string, name: string): Promise<KubeEvent | null> {
    const res = await this.call('GET', objectPath(EVENT, namespace, name));
    if (res.status === 404) return null;
    return this.expectObject(res, 'get', EVENT, name) as unknown as KubeEvent;
  }

  async createEvent(namespace: string, event: KubeEvent): Promise<KubeEvent | 'exists'> {
    const res = await this.call('POST', collectionPath(EVENT, namespace), { body: event });
    if (res.status === 409 && (res.json as { reason?: string } | undefined)?.reason === 'AlreadyExists') return 'exists';
    return this.expectObject(res, 'create', EVENT, event.metadata.name) as unknown as KubeEvent;
  }

  async patchEvent(namespace: string, name: string, patch: Record<string, unknown>): Promise<KubeEvent | 'gone' | 'conflict'> {
    const res = await this.call('PATCH', objectPath(EVENT, namespace, name), { body: patch, contentType: 'application/merge-patch+json' });
    if (res.status === 404) return 'gone';
    if (res.status === 409) return 'conflict';
    return this.expectObject(res, 'patch', EVENT, name) as unknown as KubeEvent;
  }

  async whoAmI(): Promise<string> {
    const res = await this.call('POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', {
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
    });
    const username = (res.json as { status?: { userInfo?: { username?: unknown } } } | undefined)?.status?.userInfo?.username;
    if (res.status >= 300 || typeof username !== 'string') {
      throw new KubeApiError(res.status, `SelfSubjectReview: ${res.status} ${(res.json as { message?: string } | undefined)?.message ?? 'no user name in the answer'}`);
    }
    return username;
  }

  async ping(kind: ResourceKind, namespace?: string): Promise<void> {
    const res = await this.call('GET', collectionPath(kind, namespace), { query: { limit: 1 } });
    this.expectOk(res, 'list', kind, namespace ?? '(all namespaces)');
  }

  async patchStatus(kind: ResourceKind, obj: KubeObject, status: Record<string, unknown>): Promise<KubeObject> {
    const name = obj.metadata.name;
    const res = await this.call('PATCH', `${objectPath(kind, obj.metadata.namespace ?? '', name)}/status`, {
      body: { status },
      contentType: 'application/merge-patch+json',
    });
    return this.expectObject(res, 'patch status of', kind, name);
  }

  async addFinalizer(kind: ResourceKind, obj: KubeObject, finalizer: string): Promise<KubeObject> {
    const result = await this.changeFinalizers(kind, obj, (list) => (list.includes(finalizer) ? undefined : [...list, finalizer]));
    if (result === null) throw new KubeApiError(404, `${kind.plural} "${obj.metadata.name}" is gone`);
    return result;
  }

  async removeFinalizer(kind: ResourceKind, obj: KubeObject, finalizer: string): Promise<KubeObject | null> {
    return this.changeFinalizers(kind, obj, (list) => (list.includes(finalizer) ? list.filter((f) => f !== finalizer) : undefined));
  }

  /** Applies `change` to the finalizer list under resourceVersion, re-reading on 409. */
  private async changeFinalizers(kind: ResourceKind, obj: KubeObject, change: (current: string[]) => string[] | undefined): Promise<KubeObject | null> {
    let current: KubeObject | null = obj;
    for (let attempt = 0; ; attempt++) {
      if (current === null) return null;
      const next = change(current.metadata.finalizers ?? []);
      if (next === undefined) return current;
      const { namespace = '', name, resourceVersion } = current.metadata;
      const res = await this.call('PATCH', objectPath(kind, namespace, name), {
        body: { metadata: { finalizers: next, resourceVersion } },
        contentType: 'application/merge-patch+json',
      });
      if (res.status === 404) return null;
      if (res.status !== 409) return this.expectObject(res, 'update finalizers of', kind, name);
      if (attempt + 1 >= this.conflictRetries) throw this.toError(res, 'update finalizers of', kind, name);
      current = await this.get(kind, namespace, name);
    }
  }

  private expectObject(res: HttpResponse, verb: string, kind: ResourceKind, name: string): KubeObject {
    const body = this.expectOk(res, verb, kind, name) as KubeObject;
    if (typeof body?.metadata?.name !== 'string') throw new KubeApiError(res.status, `${verb} ${kind.plural} "${name}": answer is not an object`);
    return body;
  }

  private expectOk(res: HttpResponse, verb: string, kind: ResourceKind, name: string): unknown {
    if (res.status >= 200 && res.status < 300 && res.json !== undefined) return res.json;
    throw this.toError(res, verb, kind, name);
  }

  private toError(res: HttpResponse, verb: string, kind: ResourceKind, name: string): KubeApiError {
    const status = res.json as { message?: string; reason?: string } | undefined;
    const detail = status?.message ?? (res.text.slice(0, 200) || `HTTP ${res.status}`);
    const message = `${verb} ${kind.plural} "${name}": ${res.status} ${detail}`;
    const context = { reason: status?.reason };
    return res.status === 409 ? new KubeConflictError(409, message, { context }) : new KubeApiError(res.status, message, { context });
  }

  private async call(method: 'GET' | 'PATCH' | 'POST' | 'PUT' | 'DELETE', path: string, options: { query?: Query; body?: unknown; contentType?: string; accept?: string } = {}): Promise<HttpResponse> {
    const opts: HttpsOpts = {};
    await this.kc.applyToHTTPSOptions(opts as never);
    const server = this.server;
    if (server === '') throw new KubeUnavailableError('kubeconfig has no current cluster');
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(opts.headers ?? {})) if (v !== undefined) headers[k.toLowerCase()] = String(v);
    if (opts.auth) headers.authorization = `Basic ${Buffer.from(opts.auth).toString('base64')}`;
    if (options.accept) headers.accept = options.accept;
    try {
      return await this.transportFor(opts).request({
        method,
        url: joinUrl(server, path, options.query),
        headers,
        body: options.body,
        contentType: options.contentType,
        timeoutMs: this.timeoutMs,
      });
    } catch (err) {
      if (err instanceof TransportError) throw new KubeUnavailableError(`API server: ${err.message}`, { cause: err });
      throw err;
    }
  }

  private transportFor(opts: HttpsOpts): HttpTransport {
    const fingerprint = [opts.ca, opts.cert, opts.key, opts.rejectUnauthorized, opts.servername].map((v) => String(v ?? '')).join('\u0000');
    if (this.transport?.fingerprint !== fingerprint) {
      void this.transport?.transport.close();
      this.transport = {
        fingerprint,
        transport: this.transports({ ca: opts.ca, cert: opts.cert, key: opts.key, rejectUnauthorized: opts.rejectUnauthorized, servername: opts.servername }),
      };
    }
    return this.transport.transport;
  }

  async close(): Promise<void> {
    await this.transport?.transport.close();
    this.transport = undefined;
  }
}

/** A list of metadata only (ListOptions.metadataOnly), else the full list: Kubernetes' content negotiation for PartialObjectMetadataList. */
const METADATA_ONLY = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json';

function seg(s: string): string {
  return encodeURIComponent(s);
}

function groupPrefix(kind: ResourceKind): string {
  return kind.group === '' ? `/api/${kind.version}` : `/apis/${kind.group}/${kind.version}`;
}

function collectionPath(kind: ResourceKind, namespace?: string): string {
  return namespace === undefined ? `${groupPrefix(kind)}/${kind.plural}` : `${groupPrefix(kind)}/namespaces/${seg(namespace)}/${kind.plural}`;
}

/** A namespace of '' is a cluster-scoped object's (no namespace segment). */
function objectPath(kind: ResourceKind, namespace: string, name: string): string {
  return `${collectionPath(kind, namespace === '' ? undefined : namespace)}/${seg(name)}`;
}

function joinUrl(server: string, path: string, query?: Query): string {
  const url = new URL(server.replace(/\/+$/, '') + path);
  for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
  return url.toString();
}
