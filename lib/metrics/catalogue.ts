/**
 * The metrics this service publishes: one catalogue for both outputs, so the names and labels
 * a dashboard depends on are written once. Prometheus (./prometheus.ts) exposes each as
 * `gateway_reconciler_<name>`; on Lambda the same figures go to CloudWatch as Embedded Metric
 * Format lines (./emf.ts) under the name itself, with the labels as dimensions.
 *
 * Labels are bounded by construction: kinds, actions, results, triggers, methods and outcomes
 * are closed sets; `gateway` is "default" or one per OperatorContext; `route` is one of our
 * routes or "unmatched". Names and labels are a public contract (the README's Metrics table).
 */

export type MetricType = 'counter' | 'histogram' | 'gauge';

export interface MetricSpec {
  readonly type: MetricType;
  readonly help: string;
  readonly labels: readonly string[];
  /** CloudWatch's unit for the EMF output */
  readonly unit: 'Count' | 'Seconds' | 'None';
  /** histogram buckets, seconds */
  readonly buckets?: readonly number[];
}

export const METRIC_PREFIX = 'gateway_reconciler_';

/** Run durations reach from a webhook's single object (tens of ms) to a full run of thousands (minutes). */
const RUN_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900];
const REQUEST_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export const METRICS = {
  runs_total: {
    type: 'counter',
    help: 'Reconcile runs by trigger and outcome (ok: no run-level error; partial: a read or stage failed; failed: the run itself failed).',
    labels: ['trigger', 'outcome'],
    unit: 'Count',
  },
  run_duration_seconds: { type: 'histogram', help: 'Wall time of reconcile runs.', labels: ['trigger'], unit: 'Seconds', buckets: RUN_BUCKETS },
  objects_total: { type: 'counter', help: 'Objects looked at by runs, by kind, action and result.', labels: ['kind', 'action', 'result'], unit: 'Count' },
  drift_detected_total: { type: 'counter', help: 'Objects found changed (changed) or gone (missing) on the gateway after we had synced them.', labels: ['kind', 'drift'], unit: 'Count' },
  lock_contention_total: { type: 'counter', help: 'Objects deferred because another invocation held their lock.', labels: ['kind'], unit: 'Count' },
  gateway_writes_total: { type: 'counter', help: 'Gateway writes (creates, updates, deletes) made by runs.', labels: [], unit: 'Count' },
  gateway_reloads_total: { type: 'counter', help: 'Gateway reloads (hot reloads of a Tyk Gateway) issued by runs.', labels: [], unit: 'Count' },
  gateway_requests_total: {
    type: 'counter',
    help: 'Requests to gateways and Dashboards by gateway, method and outcome (2xx, 4xx, 5xx, unavailable).',
    labels: ['gateway', 'method', 'outcome'],
    unit: 'Count',
  },
  gateway_request_duration_seconds: { type: 'histogram', help: 'Wall time of requests to gateways and Dashboards.', labels: ['gateway', 'method'], unit: 'Seconds', buckets: REQUEST_BUCKETS },
  gateway_replicas: {
    type: 'gauge',
    help: "A gateway of several replicas (TYK_GATEWAY_SERVICE) as a run's last read found it: its ready replicas by state (served, or unreadable: left out of that run).",
    labels: ['gateway', 'state'],
    unit: 'Count',
  },
  last_full_run_success_timestamp_seconds: { type: 'gauge', help: 'When the last full run (all objects, not a dry run) finished without a run-level error, as Unix time.', labels: [], unit: 'None' },
  http_requests_total: { type: 'counter', help: 'HTTP requests to our routes (webhooks, /resync, probes, /metrics) by route and status code.', labels: ['route', 'status'], unit: 'Count' },
} as const satisfies Record<string, MetricSpec>;

export type MetricName = keyof typeof METRICS;

/** One measurement: add `value` to a counter, observe it in a histogram, or set a gauge to it. */
export interface Figure {
  readonly name: MetricName;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/** A request to a gateway or Dashboard, as the transport saw it. */
export interface GatewayCallFigure {
  /** the target: "default" or "context:<namespace>/<name>" */
  readonly gateway: string;
  readonly method: string;
  /** 2xx, 3xx, 4xx, 5xx, or unavailable (refused, reset, timed out) */
  readonly outcome: string;
  readonly seconds: number;
}

/**
 * Where figures go. Implementations never throw into the caller (a metric must not fail a
 * run) and hold no secrets (figures carry none).
 */
export interface MetricsSink {
  record(figures: readonly Figure[]): void;
  /** the Prometheus text exposition, when this sink serves one */
  exposition?(): Promise<{ contentType: string; text: string }>;
  /** writes what was gathered, for sinks that gather per invocation */
  flush?(): void;
}

/** A sink that drops every figure: for embedders and tests that do not look at metrics. */
export const discardMetrics: MetricsSink = { record: () => undefined };
