/**
 * Fault injection and call matching shared by the loopback fakes (the
 * Kubernetes API server and the Tyk gateway).
 *
 * A fault matches calls by method, pathname and an optional predicate. Every
 * matching fault sees each call; the first one still due (past `afterCalls`,
 * below `times`) fires for it. What a fired fault does to the response is
 * partly shared (delay, drop, hang: `withholdResponse`) and partly the fake's
 * own (the body of an injected status).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

/** What a fault (or `count`) matches against: a recorded call. */
export interface MatchableCall {
  /** upper case */
  method: string;
  /** the URL pathname */
  path: string;
}

export interface FaultSpec<C extends MatchableCall = MatchableCall> {
  /** match this HTTP method only (case-insensitive; "*" for any) */
  method?: string;
  /** match the pathname: a RegExp, or a string for an exact match */
  path?: RegExp | string;
  /** a further condition on the call */
  match?: (call: C) => boolean;
  /** answer with this status (the body defaults to the fake's error body for the code) */
  status?: number;
  /** body for `status`; a string is sent verbatim, anything else as JSON */
  body?: unknown;
  headers?: Record<string, string>;
  /** wait this long first; alone, the request is then served normally */
  delayMs?: number;
  /** destroy the socket without answering */
  drop?: boolean;
  /** never answer (until the fake is closed) */
  hang?: boolean;
  /** how many matching calls it affects; default 1 (Infinity for all) */
  times?: number;
  /** let this many matching calls through first; default 0 */
  afterCalls?: number;
}

export interface FaultHandle {
  cancel(): void;
  /** how many calls this fault has affected so far */
  readonly fired: number;
}

interface FaultState<C extends MatchableCall> {
  readonly spec: FaultSpec<C>;
  seen: number;
  fired: number;
  cancelled: boolean;
}

/** The faults injected into one fake. */
export class FaultBook<C extends MatchableCall> {
  private faults: FaultState<C>[] = [];

  inject(spec: FaultSpec<C>): FaultHandle {
    const state: FaultState<C> = { spec, seen: 0, fired: 0, cancelled: false };
    this.faults.push(state);
    return {
      cancel: () => {
        state.cancelled = true;
      },
      get fired() {
        return state.fired;
      },
    };
  }

  clear(): void {
    this.faults = [];
  }

  /** Every matching fault sees the call; the first one still due fires, and is returned. */
  take(call: C): FaultSpec<C> | undefined {
    let chosen: FaultState<C> | undefined;
    for (const f of this.faults) {
      if (f.cancelled || !faultMatches(f.spec, call)) continue;
      f.seen += 1;
      if (!chosen && f.seen > (f.spec.afterCalls ?? 0) && f.fired < (f.spec.times ?? 1)) {
        chosen = f;
        f.fired += 1;
      }
    }
    return chosen?.spec;
  }
}

/** What `withholdResponse` needs from the fake. */
export interface FaultTransport {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  /** waits (the fake ends the wait early when it closes) */
  delay(ms: number): Promise<void>;
  /** whether the fake is closing or closed */
  closed(): boolean;
  /** where a hung response is kept until the fake closes */
  readonly hung: Set<ServerResponse>;
}

/**
 * Applies a fault's delay, then its drop (also when the fake closed meanwhile)
 * or hang. Returns true when the response was dropped or withheld; false when
 * the fake should go on (answer `status`, or serve the request normally).
 */
export async function withholdResponse<C extends MatchableCall>(spec: FaultSpec<C>, t: FaultTransport): Promise<boolean> {
  if (spec.delayMs !== undefined && spec.delayMs > 0) await t.delay(spec.delayMs);
  if (t.closed() || spec.drop) {
    t.req.socket.destroy();
    return true;
  }
  if (spec.hang) {
    t.hung.add(t.res);
    t.res.on('close', () => t.hung.delete(t.res));
    return true;
  }
  return false;
}

/** Method matching: undefined or "*" for any, else case-insensitive equality. */
export function methodMatches(want: string | undefined, method: string): boolean {
  return want === undefined || want === '*' || want.toUpperCase() === method.toUpperCase();
}

/** Pathname matching: undefined for any, a string for an exact match, a RegExp to test. */
export function pathMatches(want: RegExp | string | undefined, path: string): boolean {
  if (want === undefined) return true;
  return typeof want === 'string' ? want === path : want.test(path);
}

/** How many of `calls` match this method and path (see `methodMatches`, `pathMatches`). */
export function countCalls(calls: readonly MatchableCall[], method: string | undefined, path?: RegExp | string): number {
  return calls.filter((c) => methodMatches(method, c.method) && pathMatches(path, c.path)).length;
}

function faultMatches<C extends MatchableCall>(spec: FaultSpec<C>, call: C): boolean {
  return methodMatches(spec.method, call.method) && pathMatches(spec.path, call.path) && (spec.match?.(call) ?? true);
}
