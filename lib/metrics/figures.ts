/**
 * What a run, an HTTP request or a gateway request adds to the metrics, as Figures
 * (./catalogue.ts). Pure: the same inputs give the same figures; sinks do the I/O.
 *
 * A run's figures come from its RunReport, the same facts the report and the log give:
 * objects by kind/action/result, drift (reason "drifted on gateway" → changed, "missing on
 * gateway" → missing), lock contention (deferred because another invocation held the lock;
 * "out of time", "shutting down" and "store unavailable" are not contention), writes and reloads (made: a dry run's, what it would cost, are not counted). Its outcome is ok when the report has
 * no run-level error, partial when it has some, failed when the run threw. A gateway of several
 * replicas sets its replicas gauge: served, and unreadable (left out of the run). A full run (scope
 * all, not a dry run) that ends ok sets the last-success gauge to `nowMs`.
 */
import type { RunReport, RunRequest } from '../engine/types.js';
import type { Figure, GatewayCallFigure } from './catalogue.js';

/** Deferred for these reasons, an object met no lock of another invocation. */
const NOT_CONTENTION: ReadonlySet<string> = new Set(['out of time', 'shutting down', 'store unavailable']);

export type RunOutcome = { report: RunReport } | { failed: true };

export function runFigures(request: RunRequest, outcome: RunOutcome, seconds: number, nowMs: number): Figure[] {
  const trigger = request.trigger;
  if (!('report' in outcome)) {
    return [
      { name: 'runs_total', labels: { trigger, outcome: 'failed' }, value: 1 },
      { name: 'run_duration_seconds', labels: { trigger }, value: seconds },
    ];
  }
  const { report } = outcome;
  const ok = report.errors.length === 0;
  const out: Figure[] = [
    { name: 'runs_total', labels: { trigger, outcome: ok ? 'ok' : 'partial' }, value: 1 },
    { name: 'run_duration_seconds', labels: { trigger }, value: seconds },
  ];
  const tally = new Map<string, Figure>();
  const add = (name: Figure['name'], labels: Record<string, string>): void => {
    const key = `${name}\0${Object.values(labels).join('\0')}`;
    const f = tally.get(key);
    tally.set(key, { name, labels, value: (f?.value ?? 0) + 1 });
  };
  for (const o of report.objects) {
    add('objects_total', { kind: o.kind, action: o.action, result: o.result });
    if (o.reason === 'drifted on gateway') add('drift_detected_total', { kind: o.kind, drift: 'changed' });
    if (o.reason === 'missing on gateway') add('drift_detected_total', { kind: o.kind, drift: 'missing' });
    if (o.result === 'deferred' && !NOT_CONTENTION.has(o.reason)) add('lock_contention_total', { kind: o.kind });
  }
  out.push(...tally.values());
  // a dry run's writes and reloads are what it would cost, none made
  const made = request.dryRun === true ? { writes: 0, reloads: 0 } : report.gateway;
  if (made.writes > 0) out.push({ name: 'gateway_writes_total', labels: {}, value: made.writes });
  if (made.reloads > 0) out.push({ name: 'gateway_reloads_total', labels: {}, value: made.reloads });
  for (const r of report.gateway.replicas ?? []) {
    out.push({ name: 'gateway_replicas', labels: { gateway: r.gateway, state: 'served' }, value: r.replicas.length - r.unreadable.length });
    out.push({ name: 'gateway_replicas', labels: { gateway: r.gateway, state: 'unreadable' }, value: r.unreadable.length });
  }
  if (ok && request.scope.all === true && request.dryRun !== true) {
    out.push({ name: 'last_full_run_success_timestamp_seconds', labels: {}, value: Math.floor(nowMs / 1000) });
  }
  return out;
}

/** Our routes, for the `route` label; anything else is "unmatched" (a scanner's paths must not grow the label set). */
const ROUTES: ReadonlySet<string> = new Set(['/webhooks/watch', '/webhooks/audit', '/webhooks/cloudevents', '/resync', '/shards', '/schedule', '/healthz', '/readyz', '/metrics']);

export function requestFigures(route: string, status: number): Figure[] {
  return [{ name: 'http_requests_total', labels: { route: ROUTES.has(route) ? route : 'unmatched', status: String(status) }, value: 1 }];
}

export function gatewayCallFigures(call: GatewayCallFigure): Figure[] {
  return [
    { name: 'gateway_requests_total', labels: { gateway: call.gateway, method: call.method, outcome: call.outcome }, value: 1 },
    { name: 'gateway_request_duration_seconds', labels: { gateway: call.gateway, method: call.method }, value: call.seconds },
  ];
}
