/**
 * HTTP plumbing shared by the loopback fakes (the Kubernetes API server, the
 * Tyk gateway and the Tyk Dashboard): reading a request body, starting a
 * server on 127.0.0.1, parsing a body that may or may not be JSON, copying a
 * stored JSON value, and the log of calls each fake keeps for its tests.
 */
import type { IncomingMessage } from 'node:http';
import type { AddressInfo, Server } from 'node:net';
import rfdc from 'rfdc';
import { countCalls, type MatchableCall } from './faults.js';

const copy = rfdc();

/**
 * A deep copy of a JSON value (what the fakes store and answer: objects, arrays, primitives).
 * rfdc, not structuredClone: the fakes copy every object they store and answer, and
 * structuredClone's serialise-and-rebuild took ~17% of the API-server fake's CPU in the bench.
 */
export function cloneJson<T>(v: T): T {
  return copy(v);
}

/** The whole request body, as UTF-8 text ('' when there is none). */
export function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/** Starts `server` listening on 127.0.0.1 (a free port unless `port`); resolves with the port. */
export async function listenOnLoopback(server: Server, port = 0): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  return (server.address() as AddressInfo).port;
}

/** A body as JSON when it parses, else the text itself; undefined for ''. */
export function parseLoose(raw: string): unknown {
  if (raw === '') return undefined;
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return raw;
  }
}

/**
 * Gives a logged call its `body`: the request's text as `parseLoose` reads it, parsed when first
 * read (by a test, a fault's match or the bench's counts), not on every request. The fakes parse
 * the body again for their own handling; most logged bodies are never looked at, and parsing
 * each twice cost the bench's fakes a noticeable part of their CPU. Reads as a plain data
 * property (spreads, deep equality, JSON); assigning replaces it.
 */
export function setBody(call: { body?: unknown }, raw: string): void {
  if (raw === '') return;
  const settle = (value: unknown): unknown => {
    Object.defineProperty(call, 'body', { value, writable: true, enumerable: true, configurable: true });
    return value;
  };
  Object.defineProperty(call, 'body', {
    enumerable: true,
    configurable: true,
    get: () => settle(parseLoose(raw)),
    set: (value: unknown) => settle(value),
  });
}

/** Whether a call is a POST, PUT or DELETE on a pathname matching `path`. */
export function isWriteTo(path: RegExp): (call: MatchableCall) => boolean {
  return (call) => WRITE_METHODS.has(call.method) && path.test(call.path);
}

const WRITE_METHODS: ReadonlySet<string> = new Set(['POST', 'PUT', 'DELETE']);

/** The calls a fake received, in order. */
export class CallLog<C extends MatchableCall> {
  /** The live list: `clear` empties it in place. */
  readonly entries: C[] = [];

  push(call: C): void {
    this.entries.push(call);
  }

  /** Shallow copies of the calls so far. */
  snapshot(): C[] {
    return this.entries.map((c) => ({ ...c }));
  }

  /** Calls with this method (case-insensitive; "*" or undefined for any) and path (see `countCalls`). */
  count(method?: string, path?: RegExp | string): number {
    return countCalls(this.entries, method, path);
  }

  /** How many calls `isWrite` accepts (e.g. `isWriteTo(pattern)`). */
  writes(isWrite: (call: C) => boolean): number {
    return this.entries.filter(isWrite).length;
  }

  clear(): void {
    this.entries.length = 0;
  }
}
