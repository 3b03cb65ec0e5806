/**
 * One HTTP round trip over undici with a hard timeout, for the API-server and gateway
 * clients. Guarantees: resolves with status and parsed JSON (or raw text) for any HTTP
 * answer; rejects with a TransportError for anything that is not an HTTP answer (refused,
 * reset, dropped, timed out). Never puts request headers (which carry secrets) into errors.
 */
import { Agent, type Dispatcher, request } from 'undici';

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
  dispatcher?: Dispatcher;
  /**
   * Reads a 2xx answer's body as it arrives instead of as one text: its result is `json`, and
   * `text` is ''. (Other answers are read as text, for their messages.) What it throws fails
   * the request.
   */
  consume?: (body: AsyncIterable<Uint8Array>) => Promise<unknown>;
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
  const e = err as { code?: string; cause?: { code?: string } } | null;
  const code = e?.code ?? e?.cause?.code;
  return code === 'ECONNRESET' || code === 'UND_ERR_SOCKET' || code === 'EPIPE';
}

async function attempt(req: HttpRequest): Promise<HttpResponse> {
  const headers: Record<string, string> = { accept: 'application/json', ...req.headers };
  let body: string | undefined;
  if (req.rawBody !== undefined) {
    body = req.rawBody;
    headers['content-type'] = req.contentType ?? 'text/plain';
  } else if (req.body !== undefined) {
    body = JSON.stringify(req.body);
    headers['content-type'] = req.contentType ?? 'application/json';
  }
  const signal = AbortSignal.timeout(req.timeoutMs);
  try {
    const res = await request(req.url, {
      method: req.method,
      headers,
      body,
      signal,
      dispatcher: req.dispatcher,
      headersTimeout: req.timeoutMs,
      bodyTimeout: req.timeoutMs,
    });
    if (req.consume && res.statusCode >= 200 && res.statusCode < 300) return { status: res.statusCode, headers: res.headers, json: await req.consume(res.body), text: '' };
    const text = await res.body.text();
    return { status: res.statusCode, headers: res.headers, json: parseJson(text), text };
  } catch (err) {
    const timedOut = signal.aborted || isTimeout(err);
    const what = timedOut ? `timed out after ${req.timeoutMs} ms` : transportReason(err);
    throw new TransportError(`${req.method} ${redactUrl(req.url)}: ${what}`, timedOut, { cause: err });
  }
}

function parseJson(text: string): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function isTimeout(err: unknown): boolean {
  const code = (err as { code?: string } | null)?.code;
  return code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT';
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
  ca?: string | Buffer;
  cert?: string | Buffer;
  key?: string | Buffer;
  rejectUnauthorized?: boolean;
  servername?: string;
}

/** An undici Agent with the given TLS settings and keep-alive. */
export function makeAgent(tls: TlsOptions, connections = 16): Agent {
  const connect: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(tls)) if (v !== undefined) connect[k] = v;
  return new Agent({ connect, connections, keepAliveTimeout: 10_000 });
}
