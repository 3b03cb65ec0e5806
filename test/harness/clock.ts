/**
 * A Clock that only moves when a test moves it.
 *
 * Guarantees: now() changes only through advance() and set(); sleep(ms) resolves when the
 * clock reaches the time it was asked for, sleepers waking in deadline order (ties in the
 * order they went to sleep); sleep(ms <= 0) resolves at once. Woken code runs after
 * advance()/set() return, so it sees the final time, not its own deadline.
 * Assumes: one clock per test; nothing here touches real time.
 */
import type { Clock } from '../../lib/platform/clock.js';

interface Sleeper {
  at: number;
  seq: number;
  wake: () => void;
}

/** 2024-01-01T00:00:00Z: a fixed, readable start so failures are reproducible. */
const DEFAULT_START = Date.UTC(2024, 0, 1);

export class FakeClock implements Clock {
  private time: number;
  private sleepers: Sleeper[] = [];
  private seq = 0;

  constructor(start: number = DEFAULT_START) {
    this.time = start;
  }

  now(): number {
    return this.time;
  }

  sleep(ms: number): Promise<void> {
    if (ms <= 0) return Promise.resolve();
    return new Promise((wake) => {
      this.sleepers.push({ at: this.time + ms, seq: this.seq++, wake });
    });
  }

  /** Moves time forward by `ms` and wakes every sleeper whose time came. */
  advance(ms: number): void {
    if (ms < 0) throw new RangeError(`FakeClock.advance: ms must be >= 0, got ${ms}`);
    this.set(this.time + ms);
  }

  /** Sets the absolute time (epoch ms) and wakes every sleeper whose time came. */
  set(ms: number): void {
    this.time = ms;
    this.wakeDue();
  }

  /** How many sleepers are still waiting (handy to assert nothing is left pending). */
  get pending(): number {
    return this.sleepers.length;
  }

  private wakeDue(): void {
    const due = this.sleepers.filter((s) => s.at <= this.time).sort((a, b) => a.at - b.at || a.seq - b.seq);
    this.sleepers = this.sleepers.filter((s) => s.at > this.time);
    for (const sleeper of due) sleeper.wake();
  }
}
