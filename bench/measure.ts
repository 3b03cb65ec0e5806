/**
 * What the bench measures in the measured process besides wall time: its memory, its store
 * round trips, and its runs (through the metrics sink the service reports to). Bench code
 * only: lib is measured through its public seams (the Store interface, MetricsSink), never
 * changed for it.
 *
 * Memory: the kernel's peak RSS of this process (VmHWM in /proc/self/status) is reset before
 * each phase by writing 5 to /proc/self/clear_refs (Linux 4.0+), so each phase's peak is exact
 * and its own, including peaks during long synchronous work that a timer-based sampler cannot
 * see. getrusage's maxRSS cannot be reset (monotonic per process), so it is reported for
 * reference only. Where clear_refs is not writable, the peak falls back to a 20 ms sampler of
 * process.memoryUsage.rss() (a lower bound). The heap peak is always sampled (20 ms, on this
 * thread: a lower bound too).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { getHeapStatistics } from 'node:v8';
import { Redis } from 'ioredis';
import type { Figure, MetricsSink } from '../lib/metrics/catalogue.js';
import type { Store } from '../lib/store/types.js';

export function mb(bytes: number): number {
  return Math.round(bytes / 2 ** 20);
}

/** Resets the kernel's peak-RSS mark of this process; false when this kernel or sandbox does not allow it. */
export function resetPeakRss(): boolean {
  try {
    writeFileSync('/proc/self/clear_refs', '5');
    return true;
  } catch {
    return false;
  }
}

/** The kernel's peak RSS of this process since the last reset (VmHWM), MB; undefined off Linux. */
export function kernelPeakRssMb(): number | undefined {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : undefined;
  } catch {
    return undefined;
  }
}

export interface MemoryWindow {
  /** RSS when the phase started (after gc), MB */
  rssBeforeMb: number;
  /** V8 heap used and committed, and external memory (Buffers, ...), when the phase started, MB */
  heapUsedBeforeMb: number;
  heapTotalBeforeMb: number;
  externalBeforeMb: number;
  /** peak RSS during the phase, MB: the kernel's (exact) or, failing that, the sampler's */
  peakRssMb: number;
  peakRssSource: 'kernel' | 'sampled';
  /** highest heapUsed the sampler saw, MB */
  heapPeakMb: number;
  /** getrusage maxRSS of the process so far (monotonic: includes every earlier phase), MB */
  maxRssSoFarMb: number;
}

/** Starts a memory window; the returned function ends it. */
export function memoryWindow(): () => MemoryWindow {
  const before = process.memoryUsage();
  const kernel = resetPeakRss();
  let rss = 0;
  let heap = 0;
  // cheap calls only (process.memoryUsage() costs ~0.3 ms with a large heap): the heap, and the RSS only without the kernel's mark
  const sample = (): void => {
    if (!kernel) rss = Math.max(rss, process.memoryUsage.rss());
    heap = Math.max(heap, getHeapStatistics().used_heap_size);
  };
  sample();
  const timer = setInterval(sample, 20);
  return () => {
    clearInterval(timer);
    sample();
    const hwm = kernel ? kernelPeakRssMb() : undefined;
    return {
      rssBeforeMb: mb(before.rss),
      heapUsedBeforeMb: mb(before.heapUsed),
      heapTotalBeforeMb: mb(before.heapTotal),
      externalBeforeMb: mb(before.external),
      peakRssMb: hwm ?? mb(rss),
      peakRssSource: hwm === undefined ? 'sampled' : 'kernel',
      heapPeakMb: mb(heap),
      maxRssSoFarMb: Math.round(process.resourceUsage().maxRSS / 1024),
    };
  };
}

/**
 * Counts the calls made through the Store interface, by method; a call whose list argument is
 * empty (getRecords([]), markSeen([]), ...: both stores answer those without a round trip) is
 * counted apart, under `<method>([])`.
 */
export class StoreCounter {
  calls: Record<string, number> = {};

  wrap(store: Store): Store {
    return new Proxy(store, {
      get: (target, prop, receiver) => {
        const value = Reflect.get(target, prop, receiver) as unknown;
        if (typeof value !== 'function' || typeof prop !== 'string') return value;
        return (...args: unknown[]) => {
          const list = args.find((a) => Array.isArray(a)) as unknown[] | undefined;
          const key = list !== undefined && list.length === 0 ? `${prop}([])` : prop;
          this.calls[key] = (this.calls[key] ?? 0) + 1;
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
  }

  reset(): void {
    this.calls = {};
  }
}

/** Redis's own count of the commands it ran (INFO commandstats), to see what the store's calls cost there. */
export class RedisCommandCounter {
  private readonly redis: Redis;

  constructor(url: string) {
    this.redis = new Redis(url, { maxRetriesPerRequest: 1 });
  }

  async snapshot(): Promise<Record<string, number>> {
    const text = await this.redis.info('commandstats');
    const out: Record<string, number> = {};
    for (const m of text.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) out[m[1] as string] = Number(m[2]);
    return out;
  }

  /** Commands run between `before` and now, without the INFO calls themselves. */
  async since(before: Record<string, number>): Promise<Record<string, number>> {
    const after = await this.snapshot();
    const out: Record<string, number> = {};
    for (const [cmd, n] of Object.entries(after)) {
      const d = n - (before[cmd] ?? 0) - (cmd === 'info' ? 1 : 0);
      if (d > 0) out[cmd] = d;
    }
    return out;
  }

  close(): Promise<void> {
    return this.redis.quit().then(() => undefined);
  }
}

/**
 * Store round trips of a phase: one per call of the Store interface (each of its methods is one
 * round trip by contract), except calls with an empty list (none) and listRecordKeys, which on
 * Redis is a SCAN loop: there, the SCANs Redis counted.
 */
export function storeRoundTrips(calls: Readonly<Record<string, number>>, redisCommands: Readonly<Record<string, number>> | undefined): number {
  let n = 0;
  for (const [method, count] of Object.entries(calls)) {
    // reachable() makes no round trip (its contract); calls with an empty list make none either
    if (method === 'reachable' || method === 'close' || method.endsWith('([])')) continue;
    n += method === 'listRecordKeys' && redisCommands ? Math.max(count, redisCommands.scan ?? 0) : count;
  }
  return n;
}

/** The service's metrics, kept: runs by trigger and their durations, objects by action and result, lock contention. */
export class CountingMetrics implements MetricsSink {
  runs: Record<string, number> = {};
  runSeconds: number[] = [];
  objects: Record<string, number> = {};
  lockContention = 0;

  record(figures: readonly Figure[]): void {
    for (const f of figures) {
      if (f.name === 'runs_total') this.runs[f.labels.trigger ?? '?'] = (this.runs[f.labels.trigger ?? '?'] ?? 0) + f.value;
      else if (f.name === 'run_duration_seconds') this.runSeconds.push(f.value);
      else if (f.name === 'objects_total') {
        const key = `${f.labels.action}/${f.labels.result}`;
        this.objects[key] = (this.objects[key] ?? 0) + f.value;
      } else if (f.name === 'lock_contention_total') this.lockContention += f.value;
    }
  }

  reset(): void {
    this.runs = {};
    this.runSeconds = [];
    this.objects = {};
    this.lockContention = 0;
  }
}
