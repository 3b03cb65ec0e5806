/**
 * The HTTP transport's contract, for the API-server and gateway clients: one interface
 * (`HttpTransport`, made per target by a `TransportFactory` from its TLS settings) and the pieces
 * both implementations share. Implementations: ./http-node.ts (Node's own node:http /
 * node:https; the webhook functions' bundles, which must load little at start) and
 * ./http-undici.ts (undici's pooled client; full runs). Each lives in its own module, so a
 * bundle that imports only the Node one holds no undici. This module imports neither.
 *
 * Contract of `request()` (test/integration/http-transport-contract.test.ts holds both to it):
 * resolves with status, headers and parsed JSON (or raw text) for any HTTP answer; rejects with
 * a TransportError for anything that is not an HTTP answer (refused, reset, dropped, timed out,
 * a closed transport), saying whether it timed out; the timeout is one deadline for the whole
 * exchange (connect, headers and the whole body, also a body read as it arrives: a server
 * sending a byte now and then is cut off at the deadline, not kept waiting for), which each
 * whole MiB of the answer received moves BODY_MS_PER_MIB later (`Deadline`: a gateway's list of
 * hundreds of MB that keeps arriving faster than 1 MiB/s is read whole); `consume`
 * reads a 2xx body as it arrives, and what it throws fails the request; with
 * `maxResponseBytes`, an answer longer than that is refused (ResponseTooLargeError) as soon as
 * its Content-Length or the bytes read so far say so, and nothing more is read. A reset before
 * the whole answer (a pooled keep-alive socket the server had already closed) is retried once
 * on a fresh connection: every call this project makes is safe to repeat (reads, upserts,
 * deletes, merge patches, resourceVersion-guarded patches). Never puts request headers (which
 * carry secrets) or the URL's credentials and query into errors. Headers come as Node gives
 * them (lower-case names, repeated values joined by ", ", set-cookie a list). A transport
 * pools keep-alive connections (requests one after the other reuse them: Node's use one,
 * undici's two in turn, see ./http-undici.ts) with its TLS settings (CA, client certificate and key,
 * verification, SNI name, the name a certificate is checked against), for http: and https:
 * URLs alike; its close() refuses new requests and lets those in flight finish first.
 */
import type { LookupFunction } from 'node:net';
import type { PeerCertificate } from 'node:tls';

export interface HttpResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** parsed JSON when the body is JSON, else undefined */
  json: unknown;
  text: string;
}

export interface HttpRequest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  url: string;
  headers?: Record<string, string>;
  /** sent as JSON */
  body?: unknown;
  /** sent as it is (a PEM, say), instead of `body` */
  rawBody?: string;
  contentType?: string;
  timeoutMs: number;
  /**
   * Reads a 2xx answer's body as it arrives instead of as one text: its result is `json`, and
   * `text` is ''. (Other answers are read as text, for their messages.) What it throws fails
   * the request. The timeout bounds the whole body as it bounds any other.
   */
  consume?: (body: AsyncIterable<Uint8Array>) => Promise<unknown>;
  /** the most bytes of an answer's body read; a longer answer is a ResponseTooLargeError. Default: no limit */
  maxResponseBytes?: number;
}

/** One target's connection pool with its TLS settings (see the header). */
export interface HttpTransport {
  /** which implementation: `node` (./http-node.ts) or `undici` (./http-undici.ts) */
  readonly kind: TransportKind;
  request(req: HttpRequest): Promise<HttpResponse>;
  /** close() was called: new requests are refused */
  readonly closed: boolean;
  /** Refuses new requests, lets those in flight finish (each is bounded by its timeout), then closes every connection. */
  close(): Promise<void>;
}

export type TransportKind = 'node' | 'undici';

/** Makes a target's transport from its TLS settings; chosen where the service is built, passed to the clients. */
export type TransportFactory = (tls: TlsOptions) => HttpTransport;

export class TransportError extends Error {
  constructor(
    message: string,
    readonly timedOut: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'TransportError';
  }
}

/** An answer longer than the request's `maxResponseBytes`: refused, the rest of it not read. */
export class ResponseTooLargeError extends Error {
  constructor(
    message: string,
    readonly limit: number,
  ) {
    super(message);
    this.name = 'ResponseTooLargeError';
  }
}

export interface TlsOptions {
  /** how host names are resolved for new connections (a context's UrlPolicy check); default the system's */
  lookup?: LookupFunction;
  ca?: string | Buffer;
  cert?: string | Buffer;
  key?: string | Buffer;
  rejectUnauthorized?: boolean;
  servername?: string;
  /** checks the server's certificate against a name (Node's tls.checkServerIdentity); default against `servername`, else the URL's host */
  checkServerIdentity?: (host: string, cert: PeerCertificate) => Error | undefined;
}

/** How long an idle pooled connection is kept. */
export const KEEP_ALIVE_MS = 10_000;

/** Connections per origin, unless a factory is told otherwise. */
export const DEFAULT_CONNECTIONS = 16;

/** A request as it goes on the wire: the URL checked (http: or https:), the body encoded, its headers. */
export interface Prepared {
  url: URL;
  headers: Record<string, string>;
  body: Buffer | undefined;
}

/** Checks the URL and encodes the body; throws (for `failure`) on a bad URL or protocol. */
export function prepare(req: HttpRequest): Prepared {
  const headers: Record<string, string> = { accept: 'application/json', ...req.headers };
  let body: Buffer | undefined;
  if (req.rawBody !== undefined) {
    body = Buffer.from(req.rawBody);
    headers['content-type'] = req.contentType ?? 'text/plain';
  } else if (req.body !== undefined) {
    body = Buffer.from(JSON.stringify(req.body));
    headers['content-type'] = req.contentType ?? 'application/json';
  }
  if (body !== undefined) headers['content-length'] = String(body.length);
  const url = new URL(req.url);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw Object.assign(new Error(`unsupported protocol ${url.protocol}`), { code: 'ERR_INVALID_PROTOCOL' });
  return { url, headers, body };
}

/** What a closed transport's request fails with (as a TransportError's cause). */
export function closedTransport(): Error {
  return Object.assign(new Error('the HTTP agent is closed'), { code: 'ERR_AGENT_CLOSED' });
}

/** How much later each whole MiB of an answer received moves its exchange's deadline, ms. */
export const BODY_MS_PER_MIB = 1_000;
const MIB = 1024 * 1024;

/**
 * One exchange's deadline: `timeoutMs` after it started, moved BODY_MS_PER_MIB later by each
 * whole MiB of the answer received, so an answer that keeps arriving faster than 1 MiB/s is
 * never cut off, and one sent a byte now and then is, at `timeoutMs`. `passed` runs once, when
 * it passes; never after `clear()`. Real time, as the socket's.
 */
export class Deadline {
  private readonly startedAt = performance.now();
  private received = 0;
  private timer: NodeJS.Timeout;

  constructor(
    private readonly timeoutMs: number,
    private readonly passed: () => void,
  ) {
    this.timer = setTimeout(() => this.check(), timeoutMs);
  }

  /** Counts `bytes` more of the answer. */
  receivedBytes(bytes: number): void {
    this.received += bytes;
  }

  clear(): void {
    clearTimeout(this.timer);
  }

  private check(): void {
    const left = this.startedAt + this.timeoutMs + Math.floor(this.received / MIB) * BODY_MS_PER_MIB - performance.now();
    if (left > 0) this.timer = setTimeout(() => this.check(), left);
    else this.passed();
  }
}

/** What a request fails with once its deadline passed (as a TransportError's cause). */
export function deadlinePassed(timeoutMs: number): Error {
  return Object.assign(new Error(`no complete answer within ${timeoutMs} ms`), { code: 'ETIMEDOUT' });
}

/** What a connection closed before the whole answer arrived fails with (as a TransportError's cause). */
export function cutOff(): Error {
  return Object.assign(new Error('the connection closed before the whole answer arrived'), { code: 'ECONNRESET' });
}

/** A failure as the contract gives it: a ResponseTooLargeError as it is, anything else a TransportError naming the request without secrets. */
export function failure(req: HttpRequest, err: unknown, timedOut: boolean): Error {
  if (err instanceof ResponseTooLargeError) return err;
  const what = timedOut ? `timed out after ${req.timeoutMs} ms` : transportReason(err);
  return new TransportError(`${req.method} ${redactUrl(req.url)}: ${what}`, timedOut, { cause: err });
}

/** The refusal of an answer above `maxResponseBytes`: `bytes` is its Content-Length (`known`), else the limit it went past. */
export function tooLarge(req: HttpRequest, bytes: number, known: boolean): ResponseTooLargeError {
  const max = req.maxResponseBytes ?? 0;
  return new ResponseTooLargeError(`${req.method} ${redactUrl(req.url)}: the answer ${known ? 'is' : 'is more than'} ${bytes} bytes, above the limit of ${max} bytes`, max);
}

/** A whole body as the contract gives it: text (UTF-8, a byte order mark dropped, as a fetch body's text()) and its JSON. */
export function readBody(chunks: readonly Uint8Array[]): { text: string; json: unknown } {
  const text = new TextDecoder().decode(Buffer.concat(chunks));
  return { text, json: parseJson(text) };
}

function parseJson(text: string): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Runs `attempt`, and once more when it failed with a reset before the whole answer (see the header). */
export async function retryingReset(req: HttpRequest, attempt: (req: HttpRequest) => Promise<HttpResponse>): Promise<HttpResponse> {
  try {
    return await attempt(req);
  } catch (err) {
    if (err instanceof TransportError && !err.timedOut && isReset(err.cause)) return attempt(req);
    throw err;
  }
}

/** Node's and undici's names for a connection the server closed or reset. */
const RESETS = new Set(['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET']);

function isReset(err: unknown): boolean {
  const code = (err as { code?: string } | null)?.code;
  return code !== undefined && RESETS.has(code);
}

function transportReason(err: unknown): string {
  const e = err as { code?: string; message?: string; cause?: { code?: string; message?: string } } | null;
  const code = e?.cause?.code ?? e?.code;
  const message = e?.cause?.message ?? e?.message ?? String(err);
  return code && !message.includes(code) ? `${code} ${message}` : message;
}

/** The URL without credentials or query, for messages. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return '(invalid url)';
  }
}

/** The requests a transport has in flight, which its close() waits for. */
export class InFlight {
  private readonly requests = new Set<Promise<unknown>>();

  /** Counts a request as in flight until it settles. */
  track<T>(request: Promise<T>): Promise<T> {
    this.requests.add(request);
    const forget = (): void => {
      this.requests.delete(request);
    };
    request.then(forget, forget);
    return request;
  }

  /** Settles once every request now in flight has. */
  settled(): Promise<unknown> {
    return Promise.allSettled([...this.requests]);
  }
}
