/**
 * The HTTP transport (./http.ts) over undici's pooled client: one undici Agent per target (a
 * Pool per origin) with keep-alive (idle connections closed after 10 s, or sooner when the
 * server's Keep-Alive header says so), pipelining 1 (one request per connection at a time, as
 * HTTP/1.1 servers expect), up to `connections` connections per origin (sized for the run's
 * concurrency), HTTP/1.1 only, the TLS settings on every https: connection; undici's
 * `request()` (the Agent's own), the body read as it arrives, aborted at the deadline. What full runs use (the
 * self-hosted server, the `schedule` and `shard` functions); the webhook functions never import
 * this module, so their bundles hold no undici (scripts/bundle.ts). Holds ./http.ts's contract:
 * the same answers, errors and messages as ./http-node.ts (a URL's credentials go as Basic
 * authorization, as Node sends them; repeated headers are joined as Node joins them). One
 * difference in how connections are used, not in what is answered: with pipelining 1, undici
 * hands a connection to the next request only a turn of the event loop after its answer (it
 * waits for a server that closes the connection though it said keep-alive), so a request sent in
 * the same turn takes another connection: a caller sending one request after the other uses
 * two connections, in turn, where Node's agent uses one.
 */
import { Agent, type Dispatcher } from 'undici';
import {
  closedTransport,
  cutOff,
  DEFAULT_CONNECTIONS,
  Deadline,
  deadlinePassed,
  failure,
  type HttpRequest,
  type HttpResponse,
  type HttpTransport,
  InFlight,
  KEEP_ALIVE_MS,
  prepare,
  readBody,
  retryingReset,
  type TlsOptions,
  type TransportFactory,
  tooLarge,
} from './http.js';

export interface UndiciTransportOptions {
  /** connections per origin: the run's concurrency; default 16 */
  connections?: number;
}

/** A factory of undici transports. */
export function undiciTransports(options: UndiciTransportOptions = {}): TransportFactory {
  return (tls) => new UndiciTransport(tls, options.connections ?? DEFAULT_CONNECTIONS);
}

export class UndiciTransport implements HttpTransport {
  readonly kind = 'undici';
  private readonly agent: Agent;
  private readonly inFlight = new InFlight();
  private closing?: Promise<void>;

  constructor(tls: TlsOptions, connections = DEFAULT_CONNECTIONS) {
    const connect: Record<string, unknown> = { timeout: 0 };
    for (const [k, v] of Object.entries(tls)) if (v !== undefined) connect[k] = v;
    this.agent = new Agent({
      connections,
      pipelining: 1,
      keepAliveTimeout: KEEP_ALIVE_MS,
      keepAliveMaxTimeout: KEEP_ALIVE_MS,
      // the deadline of each request (an abort) bounds connect, headers and body
      headersTimeout: 0,
      bodyTimeout: 0,
      allowH2: false,
      connect,
    });
  }

  get closed(): boolean {
    return this.closing !== undefined;
  }

  request(req: HttpRequest): Promise<HttpResponse> {
    return this.inFlight.track(retryingReset(req, (r) => this.attempt(r)));
  }

  close(): Promise<void> {
    this.closing ??= this.inFlight.settled().then(() => this.agent.close());
    return this.closing;
  }

  /** One exchange, failed (and aborted) at the deadline or when the answer is too long, whatever `consume` is doing then. */
  private attempt(req: HttpRequest): Promise<HttpResponse> {
    let timedOut = false;
    let failed = false;
    let stop: (err: unknown) => void = () => {};
    const stopped = new Promise<never>((_, reject) => {
      stop = reject;
    });
    stopped.catch(() => {});
    const controller = new AbortController();
    const fail = (err: unknown): void => {
      if (failed) return;
      failed = true;
      stop(err);
      controller.abort(err);
    };
    // one deadline for the whole exchange, never started again (an answer arriving moves it: Deadline)
    const deadline = new Deadline(req.timeoutMs, () => {
      timedOut = true;
      fail(deadlinePassed(req.timeoutMs));
    });
    const exchange = this.exchange(req, controller.signal, fail, () => failed, deadline);
    exchange.catch(() => {});
    return Promise.race([exchange, stopped])
      .catch((err: unknown) => {
        throw failure(req, err, timedOut);
      })
      .finally(() => deadline.clear());
  }

  private async exchange(req: HttpRequest, signal: AbortSignal, fail: (err: unknown) => void, failed: () => boolean, deadline: Deadline): Promise<HttpResponse> {
    if (this.closed) throw closedTransport();
    const { url, headers, body } = prepare(req);
    // as Node's http.request does with a URL's credentials
    if (url.username !== '' || url.password !== '') headers.authorization ??= `Basic ${Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString('base64')}`;
    // the Agent's own request() (undici's request() with this dispatcher): its bundle needs no more of undici (scripts/bundle.ts)
    const res = await this.agent.request({ origin: url.origin, path: `${url.pathname}${url.search}`, method: req.method, headers, body: body ?? null, signal }).catch(asNodeSays);
    // the body's errors reach whoever reads it; one left unread (destroyed below) has nobody to tell
    res.body.on('error', () => {});
    try {
      const max = req.maxResponseBytes;
      const declared = Number(res.headers['content-length']);
      if (max !== undefined && Number.isFinite(declared) && declared > max) throw tooLarge(req, declared, true);
      let received = 0;
      /** The body, counted; ends (the request failed) once more than allowed arrived. */
      const counted = async function* (stream: AsyncIterable<Uint8Array>): AsyncIterable<Uint8Array> {
        for await (const chunk of stream) {
          if (failed()) return;
          received += chunk.length;
          deadline.receivedBytes(chunk.length);
          if (max !== undefined && received > max) {
            fail(tooLarge(req, max, false));
            return;
          }
          yield chunk;
        }
      };
      const status = res.statusCode;
      const answerHeaders = nodeHeaders(res.headers);
      if (req.consume && status >= 200 && status < 300) return { status, headers: answerHeaders, json: await req.consume(counted(res.body)), text: '' };
      const chunks: Uint8Array[] = [];
      for await (const chunk of counted(res.body)) chunks.push(chunk);
      return { status, headers: answerHeaders, ...readBody(chunks) };
    } catch (err) {
      return asNodeSays(err);
    } finally {
      // whatever was not read is not waited for (the connection is closed, not reused)
      if (!res.body.readableEnded) res.body.destroy();
    }
  }
}

/** A connection closed under a request, as Node says it (ECONNRESET, retried once); other errors as they are. */
function asNodeSays(err: unknown): never {
  if ((err as { code?: string } | null)?.code === 'UND_ERR_SOCKET') throw cutOff();
  throw err;
}

/** undici's headers as Node's IncomingMessage gives them: repeated values joined by ", ", set-cookie a list. */
function nodeHeaders(headers: Dispatcher.ResponseData['headers']): HttpResponse['headers'] {
  const out: HttpResponse['headers'] = {};
  for (const [name, value] of Object.entries(headers)) out[name] = Array.isArray(value) && name !== 'set-cookie' ? value.join(', ') : value;
  return out;
}
