/**
 * Fault injection and call counting for the in-memory ports (./kube.ts, ./gateway.ts), in the
 * spirit of test/fakes/faults.ts, one level up: faults match port operations (`upsert`,
 * `list`, ...) instead of HTTP calls, and throw the error classes our real clients throw.
 *
 * Contract: every call is logged (in order) before any fault is looked at. Every matching
 * fault sees each call; the first one still due (past `afterCalls`, below `times`, default 1)
 * fires: its `hook` is awaited, then `delayMs` is slept on the port's clock, then `error`, if
 * any, is thrown; without `error` the call then proceeds normally.
 */
import type { Clock } from '../../lib/platform/clock.js';

/** How a fault fails a call: the peer unreachable, or an HTTP answer with this status. */
export type FailHow = { unavailable: true } | { status: number };

/** What a call to a port looked like. */
export interface PortCall<Op extends string = string> {
  op: Op;
  /** the resource kind (kube: "ApiDefinition"; gateway: "api" | "policy") */
  kind?: string;
  namespace?: string;
  name?: string;
  /** gateway object id */
  id?: string;
}

export interface PortFault<Op extends string = string> {
  /** the operation; undefined or "*" for any */
  op?: Op | '*';
  kind?: string;
  /** a further condition on the call */
  match?: (call: PortCall<Op>) => boolean;
  /** the error to throw (a new one per call) */
  error?: (call: PortCall<Op>) => Error;
  /** awaited before the call goes on (block it on a promise you control) */
  hook?: (call: PortCall<Op>) => Promise<void> | void;
  /** slept on the port's clock before the call goes on */
  delayMs?: number;
  /** how many matching calls it affects; default 1 (Infinity for all) */
  times?: number;
  /** let this many matching calls through first; default 0 */
  afterCalls?: number;
}

export interface PortFaultHandle {
  cancel(): void;
  readonly fired: number;
}

interface State<Op extends string> {
  spec: PortFault<Op>;
  seen: number;
  fired: number;
  cancelled: boolean;
}

function matches<Op extends string>(spec: PortFault<Op>, call: PortCall<Op>): boolean {
  if (spec.op !== undefined && spec.op !== '*' && spec.op !== call.op) return false;
  if (spec.kind !== undefined && spec.kind !== call.kind) return false;
  return spec.match?.(call) ?? true;
}

export class PortFaults<Op extends string> {
  private faults: State<Op>[] = [];
  private log: PortCall<Op>[] = [];

  constructor(private readonly clock: Clock) {}

  inject(spec: PortFault<Op>): PortFaultHandle {
    const state: State<Op> = { spec, seen: 0, fired: 0, cancelled: false };
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

  /** Logs the call, then applies the fault due for it (if any). */
  async enter(call: PortCall<Op>): Promise<void> {
    this.log.push(call);
    let chosen: State<Op> | undefined;
    for (const f of this.faults) {
      if (f.cancelled || !matches(f.spec, call)) continue;
      f.seen += 1;
      if (!chosen && f.seen > (f.spec.afterCalls ?? 0) && f.fired < (f.spec.times ?? 1)) {
        chosen = f;
        f.fired += 1;
      }
    }
    if (!chosen) return;
    const { hook, delayMs, error } = chosen.spec;
    if (hook) await hook(call);
    if (delayMs !== undefined && delayMs > 0) await this.clock.sleep(delayMs);
    if (error) throw error(call);
  }

  get calls(): readonly PortCall<Op>[] {
    return [...this.log];
  }

  /** Calls of this operation (and kind, when given). */
  count(op?: Op, kind?: string): number {
    return this.log.filter((c) => (op === undefined || c.op === op) && (kind === undefined || c.kind === kind)).length;
  }

  resetCalls(): void {
    this.log = [];
  }
}
