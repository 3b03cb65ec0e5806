/**
 * A token bucket per source (client address): `perMinute` requests a minute, with bursts up
 * to the same number. In-process, so each process (or Lambda container) limits on its own:
 * it protects the API server and the gateway from a misconfigured forwarder, it is not an
 * accounting tool. Time is injected. The table of sources is bounded (oldest dropped).
 */
import type { Clock } from '../platform/clock.js';

interface Bucket {
  tokens: number;
  at: number;
}

export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly perMinute: number,
    private readonly clock: Clock,
    private readonly maxSources = 10_000,
  ) {}

  /** 0 when the request may go ahead, else the milliseconds until it may. */
  take(source: string): number {
    if (this.perMinute <= 0) return 0;
    const now = this.clock.now();
    const rate = this.perMinute / 60_000;
    const b = this.buckets.get(source) ?? { tokens: this.perMinute, at: now };
    b.tokens = Math.min(this.perMinute, b.tokens + (now - b.at) * rate);
    b.at = now;
    this.buckets.delete(source);
    this.buckets.set(source, b);
    if (this.buckets.size > this.maxSources) this.buckets.delete(this.buckets.keys().next().value as string);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return Math.ceil((1 - b.tokens) / rate);
  }
}
