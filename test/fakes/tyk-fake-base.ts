/**
 * What the two Tyk fakes (the gateway and the Dashboard) share: the loopback
 * server, the request intake (URL, body, the call log), fault injection and
 * how a reply goes out. Each fake adds its routes (`handle`) and its error
 * body (`errorReply`, also used for an injected `status` without a `body`).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { FaultBook, type FaultHandle, type FaultSpec, withholdResponse } from './faults.js';
import { CallLog, isWriteTo, readBody, setBody } from './http-plumbing.js';

export interface CallRecord {
  method: string;
  /** The URL pathname. */
  path: string;
  query: Record<string, string>;
  /** The request body, parsed as JSON when it is JSON, else the text; absent when empty. */
  body?: unknown;
  /** 0 while unanswered, and for dropped or hung calls. */
  status: number;
}

export interface Reply {
  status: number;
  body: unknown;
  raw?: boolean;
  headers?: Record<string, string>;
}

/** An answer with a JSON body. */
export function reply(status: number, body: unknown): Reply {
  return { status, body };
}

/** The Tyk Gateway's error answer (ApiStatusMessage): `{"status":"error","message":...}`. */
export function gatewayError(status: number, message: string): Reply {
  return reply(status, { status: 'error', message });
}

/** The Tyk Dashboard's error answer (ApiResponse): `{"Status":"Error","Message":...,"Meta":null}`. */
export function dashboardError(status: number, message: string): Reply {
  return reply(status, { Status: 'Error', Message: message, Meta: null });
}

export abstract class TykFakeBase {
  readonly server: Server;
  readonly callLog = new CallLog<CallRecord>();
  private readonly faults = new FaultBook<CallRecord>();
  private readonly sleepTimers = new Set<NodeJS.Timeout>();
  private readonly hung = new Set<ServerResponse>();
  private readonly isWrite: (call: CallRecord) => boolean;
  private writesInFlight = 0;
  private peakWrites = 0;
  private closed = false;

  /**
   * @param origin the base for parsing request URLs
   * @param writePath the pathnames whose POST, PUT and DELETE `writes()` counts
   */
  protected constructor(
    private readonly origin: string,
    writePath: RegExp,
  ) {
    this.isWrite = isWriteTo(writePath);
    this.server = createServer((req, res) => this.onRequest(req, res));
  }

  /** The fake's answer to a request no fault answered. */
  protected abstract handle(req: IncomingMessage, url: URL, method: string, raw: string): Reply | Promise<Reply>;

  /** The fake's error reply for `status`. */
  protected abstract errorReply(status: number, message: string): Reply;

  // --- faults and calls ----------------------------------------------------

  inject(spec: FaultSpec<CallRecord>): FaultHandle {
    return this.faults.inject(spec);
  }

  clearFaults(): void {
    this.faults.clear();
  }

  count(method?: string, path?: RegExp | string): number {
    return this.callLog.count(method, path);
  }

  writes(): number {
    return this.callLog.writes(this.isWrite);
  }

  // --- HTTP ----------------------------------------------------------------

  private onRequest(req: IncomingMessage, res: ServerResponse): void {
    this.receive(req, res).catch((err: unknown) => {
      if (!res.headersSent && !res.destroyed) res.writeHead(500).end(String(err));
    });
  }

  private async receive(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', this.origin);
    const raw = await readBody(req);
    const call: CallRecord = {
      method: (req.method ?? 'GET').toUpperCase(),
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      status: 0,
    };
    setBody(call, raw);
    this.callLog.push(call);
    const write = this.isWrite(call);
    if (write) this.peakWrites = Math.max(this.peakWrites, ++this.writesInFlight);
    try {
      const fault = this.faults.take(call);
      if (fault && (await this.applyFault(req, res, call, fault))) return;
      this.send(res, call, await this.handle(req, url, call.method, raw));
    } finally {
      if (write) this.writesInFlight--;
    }
  }

  /** The most writes this fake was answering at once (since the start, or the last resetPeak). */
  peakConcurrentWrites(): number {
    return this.peakWrites;
  }

  resetPeak(): void {
    this.peakWrites = this.writesInFlight;
  }

  /** Returns true when the fault answered (or withheld) the response. */
  private async applyFault(req: IncomingMessage, res: ServerResponse, call: CallRecord, f: FaultSpec<CallRecord>): Promise<boolean> {
    const transport = { req, res, delay: (ms: number) => this.sleep(ms), closed: () => this.closed, hung: this.hung };
    if (await withholdResponse(f, transport)) return true;
    if (f.status === undefined) return false;
    const headers = f.headers ?? {};
    const r: Reply = f.body === undefined ? { ...this.errorReply(f.status, 'injected fault'), headers } : { status: f.status, body: f.body, raw: typeof f.body === 'string', headers };
    this.send(res, call, r);
    return true;
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.sleepTimers.delete(timer);
        resolve();
      }, ms);
      this.sleepTimers.add(timer);
    });
  }

  private send(res: ServerResponse, call: CallRecord, r: Reply): void {
    if (res.headersSent || res.destroyed) return;
    call.status = r.status;
    const text = r.raw ? String(r.body) : JSON.stringify(r.body);
    const length = String(Buffer.byteLength(text));
    res.writeHead(r.status, { 'Content-Type': 'application/json', ...r.headers, 'Content-Length': length });
    res.end(text);
  }

  /** Ends the pending waits, hung responses and connections, then closes the server. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.onClose();
    for (const t of this.sleepTimers) clearTimeout(t);
    this.sleepTimers.clear();
    for (const res of this.hung) res.socket?.destroy();
    this.hung.clear();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Called once, first thing in `close`. */
  protected onClose(): void {}
}
