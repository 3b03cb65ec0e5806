/**
 * One HTTP round trip over Node's own node:http / node:https with a hard timeout, for the
 * API-server and gateway clients. Guarantees: resolves with status, headers and parsed JSON
 * (or raw text) for any HTTP answer; rejects with a TransportError for anything that is not
 * an HTTP answer (refused, reset, dropped, timed out, a closed agent); the timeout is one
 * deadline for the whole exchange (connect, headers and the whole body, also a body read as it
 * arrives: a server sending a byte now and then is cut off at the deadline, not kept waiting
 * for); with `maxResponseBytes`, an answer longer than that is refused (ResponseTooLargeError)
 * as soon as its Content-Length or the bytes read so far say so, and nothing more is read.
 * Never puts request headers (which carry secrets) or the URL's credentials and query into
 * errors. `makeAgent` gives a keep-alive connection pool with TLS settings (CA, client
 * certificate and key, verification, SNI name, the name a certificate is checked against), for http: and https: URLs alike; its close()
 * lets requests in flight finish first.
 */
import http from 'node:http';
import https from 'node:https';
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
  /** the connection pool (makeAgent); default Node's global agents */
  agent?: HttpAgent;
  /**
   * Reads a 2xx answer's body as it arrives instead of as one text: its result is `json`, and
   * `text` is ''. (Other answers are read as text, for their messages.) What it throws fails
   * the request. The timeout bounds the whole body as it bounds any other.
   */
  consume?: (body: AsyncIterable<Uint8Array>) => Promise<unknown>;
  /** the most bytes of an answer's body read; a longer answer is a ResponseTooLargeError. Default: no limit */
  maxResponseBytes?: number;
}

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

/**
 * One request; a connection reset before any answer (a pooled keep-alive socket the server
 * had already closed) is retried once on a fresh connection. Every call this project makes is
 * safe to repeat: reads, upserts, deletes, merge patches, and resourceVersion-guarded patches.
 */
export async function httpRequest(req: HttpRequest): Promise<HttpResponse> {
  try {
    return await attempt(req);
  } catch (err) {
    if (err instanceof TransportError && !err.timedOut && isReset(err.cause)) return attempt(req);
    throw err;
  }
}

function isReset(err: unknown): boolean {
  const code = (err as { code?: string } | null)?.code;
  return code === 'ECONNRESET' || code === 'EPIPE';
}

function attempt(req: HttpRequest): Promise<HttpResponse> {
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
  const exchange = new Promise<HttpResponse>((resolve, reject) => {
    let timedOut = false;
    let done = false;
    let outgoing: http.ClientRequest | undefined;
    const fail = (err: unknown): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      outgoing?.destroy();
      if (err instanceof ResponseTooLargeError) {
        reject(err);
        return;
      }
      const what = timedOut ? `timed out after ${req.timeoutMs} ms` : transportReason(err);
      reject(new TransportError(`${req.method} ${redactUrl(req.url)}: ${what}`, timedOut, { cause: err }));
    };
    const expire = (): void => {
      timedOut = true;
      fail(Object.assign(new Error(`no complete answer within ${req.timeoutMs} ms`), { code: 'ETIMEDOUT' }));
    };
    // one deadline for the whole exchange, never started again
    const timer = setTimeout(expire, req.timeoutMs);
    const max = req.maxResponseBytes;
    const tooLarge = (bytes: number, known: boolean): ResponseTooLargeError =>
      new ResponseTooLargeError(`${req.method} ${redactUrl(req.url)}: the answer ${known ? 'is' : 'is more than'} ${bytes} bytes, above the limit of ${max} bytes`, max ?? 0);
    let received = 0;
    /** Counts the bytes read; false (and the request failed) once they are more than allowed. */
    const within = (chunk: Uint8Array): boolean => {
      received += chunk.length;
      if (max === undefined || received <= max) return true;
      fail(tooLarge(max, false));
      return false;
    };
    /** A streamed body, counted. */
    const counted = async function* (body: AsyncIterable<Uint8Array>): AsyncIterable<Uint8Array> {
      for await (const chunk of body) {
        if (done || !within(chunk)) return;
        yield chunk;
      }
    };
    try {
      if (req.agent?.closed) throw Object.assign(new Error('the HTTP agent is closed'), { code: 'ERR_AGENT_CLOSED' });
      const url = new URL(req.url);
      const client = url.protocol === 'https:' ? https : url.protocol === 'http:' ? http : undefined;
      if (!client) throw Object.assign(new Error(`unsupported protocol ${url.protocol}`), { code: 'ERR_INVALID_PROTOCOL' });
      outgoing = client.request(url, { method: req.method, headers, ...(req.agent ? { agent: req.agent.forProtocol(url.protocol) } : {}) });
    } catch (err) {
      fail(err);
      return;
    }
    outgoing.on('error', fail);
    outgoing.once('response', (res) => {
      res.on('error', fail);
      res.once('close', () => {
        // the socket went away before the whole body arrived
        if (!res.complete) fail(Object.assign(new Error('the connection closed before the whole answer arrived'), { code: 'ECONNRESET' }));
      });
      const declared = Number(res.headers['content-length']);
      if (max !== undefined && Number.isFinite(declared) && declared > max) {
        fail(tooLarge(declared, true));
        return;
      }
      const status = res.statusCode ?? 0;
      const consume = req.consume;
      if (consume && status >= 200 && status < 300) {
        consume(counted(res)).then((json) => {
          if (done) return;
          done = true;
          clearTimeout(timer);
          resolve({ status, headers: res.headers, json, text: '' });
        }, fail);
        return;
      }
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => {
        if (within(c)) chunks.push(c);
      });
      res.once('end', () => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        // TextDecoder, as a fetch body's text(): UTF-8, a byte order mark dropped
        const text = new TextDecoder().decode(Buffer.concat(chunks));
        resolve({ status: res.statusCode ?? 0, headers: res.headers, json: parseJson(text), text });
      });
    });
    outgoing.end(body);
  });
  return req.agent ? req.agent.track(exchange) : exchange;
}

function parseJson(text: string): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
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
const KEEP_ALIVE_MS = 10_000;

/**
 * A keep-alive connection pool: up to `connections` sockets per origin, idle ones closed after
 * 10 s (or sooner, when the server's Keep-Alive header says so); the TLS settings apply to
 * https: origins.
 */
export class HttpAgent {
  private readonly plain: http.Agent;
  private readonly secure: https.Agent;
  private readonly inFlight = new Set<Promise<unknown>>();
  private closing?: Promise<void>;

  constructor(tls: TlsOptions, connections = 16) {
    const pool = { keepAlive: true, maxSockets: connections, maxFreeSockets: connections, timeout: KEEP_ALIVE_MS, ...(tls.lookup ? { lookup: tls.lookup } : {}) };
    const secure: https.AgentOptions = { ...pool };
    for (const [k, v] of Object.entries(tls)) if (v !== undefined) (secure as Record<string, unknown>)[k] = v;
    this.plain = new http.Agent(pool);
    this.secure = new https.Agent(secure);
  }

  /** close() was called: new requests are refused. */
  get closed(): boolean {
    return this.closing !== undefined;
  }

  /** Node's agent for a URL's protocol ("http:" or "https:"). */
  forProtocol(protocol: string): http.Agent {
    return protocol === 'https:' ? this.secure : this.plain;
  }

  /** Counts a request as in flight until it settles (close() waits for it). */
  track<T>(request: Promise<T>): Promise<T> {
    this.inFlight.add(request);
    const forget = (): void => {
      this.inFlight.delete(request);
    };
    request.then(forget, forget);
    return request;
  }

  /** Refuses new requests, lets those in flight finish (each is bounded by its timeout), then closes every socket. */
  close(): Promise<void> {
    this.closing ??= Promise.allSettled([...this.inFlight]).then(() => {
      this.plain.destroy();
      this.secure.destroy();
    });
    return this.closing;
  }
}

/** A keep-alive HttpAgent with the given TLS settings. */
export function makeAgent(tls: TlsOptions, connections = 16): HttpAgent {
  return new HttpAgent(tls, connections);
}
