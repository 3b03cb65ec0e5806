/**
 * A check shared by its callers: concurrent calls share the one in flight (single flight), and
 * its result is reused by calls within `maxAgeMs` of when it started, so however often it is
 * asked for, it runs at most once per `maxAgeMs` (plus the time of a check still running) and
 * never twice at once. A result is reused whatever it says, a failure as much as a success:
 * callers that ask at a high rate cost the checked dependencies nothing more. Time is read from
 * the injected Clock (./clock.ts).
 */
import type { Clock } from './clock.js';

export class SharedCheck<T> {
  private last: { readonly startedAt: number; readonly result: Promise<T>; settled: boolean } | undefined;

  constructor(
    private readonly clock: Clock,
    private readonly maxAgeMs: number,
    private readonly check: () => Promise<T>,
  ) {}

  /** The check in flight, or the last one if it started at most `maxAgeMs` ago, else a new one. */
  get(): Promise<T> {
    const now = this.clock.now();
    const last = this.last;
    if (last !== undefined && (!last.settled || now - last.startedAt <= this.maxAgeMs)) return last.result;
    const result = this.check();
    const entry = { startedAt: now, result, settled: false };
    const settle = () => {
      entry.settled = true;
    };
    result.then(settle, settle);
    this.last = entry;
    return result;
  }
}
