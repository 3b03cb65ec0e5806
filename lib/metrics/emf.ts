/**
 * The CloudWatch sink (AWS Lambda): figures are gathered over one invocation and written by
 * `flush()` as Embedded Metric Format documents, one JSON line each on stdout, which
 * CloudWatch Logs turns into metrics in the namespace `GatewayReconciler`. Hand-written: the
 * format is a small JSON shape, and Powertools Metrics would add its commons package to every
 * bundle for the same lines.
 *
 * Per document: the figures sharing one label set, the labels as dimensions (plus `function`,
 * the Lambda's name, so stages and functions stay apart), counters summed, gauges last value,
 * histogram observations as a value array of at most 100 (the format's limit; more go to
 * further documents). Guarantees: `flush` writes nothing when nothing was recorded, and
 * empties the buffer even when the writer throws; never throws from `record`.
 */
import { type Figure, METRICS, type MetricsSink } from './catalogue.js';

export const EMF_NAMESPACE = 'GatewayReconciler';
const MAX_VALUES = 100;

interface Entry {
  labels: Record<string, string>;
  /** metric name → summed counter / last gauge / observations */
  values: Map<string, number | number[]>;
}

export class EmfMetrics implements MetricsSink {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly write: (line: string) => void = (line) => process.stdout.write(`${line}\n`),
    private readonly now: () => number = Date.now,
    private readonly functionName: string | undefined = process.env.AWS_LAMBDA_FUNCTION_NAME,
  ) {}

  record(figures: readonly Figure[]): void {
    for (const f of figures) {
      const labels = this.functionName === undefined ? { ...f.labels } : { function: this.functionName, ...f.labels };
      const key = Object.entries(labels)
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([k, v]) => `${k}=${v}`)
        .join('\0');
      const entry = this.entries.get(key) ?? { labels, values: new Map<string, number | number[]>() };
      this.entries.set(key, entry);
      const type = METRICS[f.name].type;
      const prior = entry.values.get(f.name);
      if (type === 'histogram') entry.values.set(f.name, [...((prior as number[] | undefined) ?? []), f.value]);
      else if (type === 'counter') entry.values.set(f.name, ((prior as number | undefined) ?? 0) + f.value);
      else entry.values.set(f.name, f.value);
    }
  }

  /** Writes what was recorded since the last flush, and forgets it. */
  flush(): void {
    const entries = [...this.entries.values()];
    this.entries.clear();
    const timestamp = this.now();
    for (const entry of entries) {
      for (const members of chunks(entry.values)) {
        const doc: Record<string, unknown> = {
          _aws: {
            Timestamp: timestamp,
            CloudWatchMetrics: [
              {
                Namespace: EMF_NAMESPACE,
                Dimensions: [Object.keys(entry.labels)],
                Metrics: [...members.keys()].map((name) => ({ Name: name, Unit: METRICS[name as keyof typeof METRICS].unit })),
              },
            ],
          },
          ...entry.labels,
        };
        for (const [name, value] of members) doc[name] = value;
        this.write(JSON.stringify(doc));
      }
    }
  }
}

/** The metrics of one label set as documents holding at most MAX_VALUES observations per metric. */
function chunks(values: Map<string, number | number[]>): Map<string, number | number[]>[] {
  const out: Map<string, number | number[]>[] = [new Map()];
  for (const [name, value] of values) {
    if (!Array.isArray(value)) {
      out[0]?.set(name, value);
      continue;
    }
    for (let i = 0; i < value.length; i += MAX_VALUES) {
      const at = i / MAX_VALUES;
      if (out[at] === undefined) out[at] = new Map();
      out[at].set(name, value.slice(i, i + MAX_VALUES));
    }
  }
  return out.filter((m) => m.size > 0);
}
