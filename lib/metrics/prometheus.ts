/**
 * The Prometheus sink (self-hosted): figures go into prom-client metrics on a registry of
 * this sink's own (never prom-client's global one, so two services in one process, as in the
 * tests, count apart), exposed as the text format by `exposition()`, with prom-client's
 * default process and Node.js metrics beside ours.
 *
 * Guarantees: every catalogue metric is registered from the start (a counter that never
 * moved reads 0, not absent, so rate() and alerts work from the first scrape); label names
 * are the catalogue's. Throws nothing from `record`.
 */
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { type Figure, METRIC_PREFIX, METRICS, type MetricName, type MetricsSink } from './catalogue.js';

type Instrument = Counter | Histogram | Gauge;

export class PrometheusMetrics implements MetricsSink {
  readonly registry = new Registry();
  private readonly instruments = new Map<MetricName, Instrument>();

  constructor(options: { defaultMetrics?: boolean } = {}) {
    for (const [name, spec] of Object.entries(METRICS) as [MetricName, (typeof METRICS)[MetricName]][]) {
      const base = { name: METRIC_PREFIX + name, help: spec.help, labelNames: [...spec.labels], registers: [this.registry] };
      const instrument = spec.type === 'counter' ? new Counter(base) : spec.type === 'gauge' ? new Gauge(base) : new Histogram({ ...base, buckets: [...('buckets' in spec ? spec.buckets : [])] });
      this.instruments.set(name, instrument);
    }
    if (options.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry });
  }

  record(figures: readonly Figure[]): void {
    for (const f of figures) {
      const instrument = this.instruments.get(f.name);
      if (instrument instanceof Counter) instrument.inc(f.labels, f.value);
      else if (instrument instanceof Histogram) instrument.observe(f.labels, f.value);
      else instrument?.set(f.labels, f.value);
    }
  }

  async exposition(): Promise<{ contentType: string; text: string }> {
    return { contentType: this.registry.contentType, text: await this.registry.metrics() };
  }
}
