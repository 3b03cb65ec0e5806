/**
 * The HTTP transport (./http.ts) over Node's own node:http / node:https: a keep-alive
 * http.Agent and https.Agent per target (up to `connections` sockets per origin, idle ones
 * closed after 10 s, or sooner when the server's Keep-Alive header says so), the TLS settings
 * on the https: one. What the webhook functions use: it loads nothing beyond Node's built-ins,
 * so their bundles stay small (scripts/bundle.ts). Holds ./http.ts's contract.
 */
import http from 'node:http';
import https from 'node:https';
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

export interface NodeTransportOptions {
  /** sockets per origin; default 16 */
  connections?: number;
}

/** A factory of Node transports. */
export function nodeTransports(options: NodeTransportOptions = {}): TransportFactory {
  return (tls) => new NodeTransport(tls, options.connections ?? DEFAULT_CONNECTIONS);
}

export class NodeTransport implements HttpTransport {
  readonly kind = 'node';
  private readonly plain: http.Agent;
  private readonly secure: https.Agent;
  private readonly inFlight = new InFlight();
  private closing?: Promise<void>;

  constructor(tls: TlsOptions, connections = DEFAULT_CONNECTIONS) {
    const pool = { keepAlive: true, maxSockets: connections, maxFreeSockets: connections, timeout: KEEP_ALIVE_MS, ...(tls.lookup ? { lookup: tls.lookup } : {}) };
    const secure: https.AgentOptions = { ...pool };
    for (const [k, v] of Object.entries(tls)) if (v !== undefined) (secure as Record<string, unknown>)[k] = v;
    this.plain = new http.Agent(pool);
    this.secure = new https.Agent(secure);
  }

  get closed(): boolean {
    return this.closing !== undefined;
  }

  request(req: HttpRequest): Promise<HttpResponse> {
    return this.inFlight.track(retryingReset(req, (r) => this.attempt(r)));
  }

  close(): Promise<void> {
    this.closing ??= this.inFlight.settled().then(() => {
      this.plain.destroy();
      this.secure.destroy();
    });
    return this.closing;
  }

  private attempt(req: HttpRequest): Promise<HttpResponse> {
    return new Promise<HttpResponse>((resolve, reject) => {
      let timedOut = false;
      let done = false;
      let outgoing: http.ClientRequest | undefined;
      const fail = (err: unknown): void => {
        if (done) return;
        done = true;
        deadline.clear();
        outgoing?.destroy();
        reject(failure(req, err, timedOut));
      };
      // one deadline for the whole exchange, never started again (an answer arriving moves it: Deadline)
      const deadline = new Deadline(req.timeoutMs, () => {
        timedOut = true;
        fail(deadlinePassed(req.timeoutMs));
      });
      const max = req.maxResponseBytes;
      let received = 0;
      /** Counts the bytes read; false (and the request failed) once they are more than allowed. */
      const within = (chunk: Uint8Array): boolean => {
        received += chunk.length;
        deadline.receivedBytes(chunk.length);
        if (max === undefined || received <= max) return true;
        fail(tooLarge(req, max, false));
        return false;
      };
      /** A streamed body, counted. */
      const counted = async function* (body: AsyncIterable<Uint8Array>): AsyncIterable<Uint8Array> {
        for await (const chunk of body) {
          if (done || !within(chunk)) return;
          yield chunk;
        }
      };
      let body: Buffer | undefined;
      try {
        if (this.closed) throw closedTransport();
        const prepared = prepare(req);
        body = prepared.body;
        const client = prepared.url.protocol === 'https:' ? https : http;
        const agent = prepared.url.protocol === 'https:' ? this.secure : this.plain;
        outgoing = client.request(prepared.url, { method: req.method, headers: prepared.headers, agent });
      } catch (err) {
        fail(err);
        return;
      }
      outgoing.on('error', fail);
      outgoing.once('response', (res) => {
        res.on('error', fail);
        res.once('close', () => {
          // the socket went away before the whole body arrived
          if (!res.complete) fail(cutOff());
        });
        const declared = Number(res.headers['content-length']);
        if (max !== undefined && Number.isFinite(declared) && declared > max) {
          fail(tooLarge(req, declared, true));
          return;
        }
        const status = res.statusCode ?? 0;
        const consume = req.consume;
        if (consume && status >= 200 && status < 300) {
          consume(counted(res)).then((json) => {
            if (done) return;
            done = true;
            deadline.clear();
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
          deadline.clear();
          resolve({ status, headers: res.headers, ...readBody(chunks) });
        });
      });
      outgoing.end(body);
    });
  }
}
