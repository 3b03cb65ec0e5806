/**
 * The storm's senders, in a process of their own (started by bench/run.ts over IPC, ./ipc.ts):
 * the cluster's users, the API server's audit webhook backend and a watch forwarder, playing a
 * storm plan (./storm-plan.ts) against the fakes and the reconciler's listening HTTP server.
 *
 * - Users: each happening is a write of the ApiDefinition (a spec edit or an annotation) at its
 *   planned time, not waiting for earlier ones, through the fakes process's back door (POST
 *   /write: stored as an API write would be, without the fake's costly schema validation; see
 *   bench/fakes-child.ts).
 * - Audit backend: when a write has been answered its audit event (stage ResponseComplete,
 *   verb patch, Metadata level, the user's name) joins a buffer; every `auditEveryMs` the
 *   buffer's first `auditBatchMax` events are POSTed to /webhooks/audit as one EventList,
 *   without waiting for earlier deliveries (kube-apiserver's batch backend sends each batch
 *   in a goroutine of its own, at its throttle's rate).
 * - Watch forwarder: when a write has been answered, the object as written is POSTed alone to
 *   /webhooks/watch as a MODIFIED WatchEvent, at once (one request per event, concurrently).
 *
 * Latency of a webhook answer: from just before the request is handed to undici (a keep-alive
 * pool per sender: the watch forwarder's holds up to 64 connections, a request waiting for a free
 * one counts in its latency; the audit backend's is not limited; both are kept from the warm-up,
 * as a running sender keeps them) to the end of the answer's body, measured
 * here, away from the reconciler's event loop. This process's own event-loop delay is
 * reported too: if it is large, latencies include the senders' lag.
 */
import { randomUUID } from 'node:crypto';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { Agent, request } from 'undici';
import { serve } from './ipc.js';
import { isReset, objectName, percentile, type UserWrite } from './shared.js';
import { type StormPlan, warmupPlan } from './storm-plan.js';

export interface StormArgs {
  plan: StormPlan;
  /** the fakes process's back door for users' writes (Endpoints.usersUrl) */
  usersUrl: string;
  webhookUrl: string;
  webhookToken: string;
}

export interface Latencies {
  count: number;
  /** answers by HTTP status (0: no answer) */
  statuses: Record<string, number>;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

export interface StormResult {
  /** from the first planned write to the last webhook answer, ms */
  durationMs: number;
  /** when the last event was handed to its sender, ms after the start */
  lastEventSentMs: number;
  userWrites: number;
  userWriteFailures: number;
  /** how long the fakes process took to store a user's write, ms: how busy the fakes were */
  userWriteMs: { p50: number; p99: number; max: number };
  events: { audit: number; watch: number };
  deliveries: { audit: number; watch: number };
  /** largest audit delivery, events */
  largestAuditBatch: number;
  answers: { all: Latencies; audit: Latencies; watch: Latencies };
  /** per second of the storm (by when the request was sent): answers and their p99, ms */
  perSecond: { second: number; answers: number; p99: number }[];
  /** the slowest answers: when each was sent (ms after the start) and how long it took */
  slowest: { at: number; ms: number; kind: string }[];
  /** this process's event-loop delay while it sent, ms */
  senderLoopDelay: { p50: number; p99: number; max: number };
  /** a sample of failed answers' bodies */
  failures: string[];
  /** requests that got no answer (reset, refused): how long after sending they failed, ms */
  unanswered: { count: number; minMs: number; maxMs: number };
  /** the objects of the runs' reports, by result (an object reported by several runs counts once per run) */
  reported: Record<string, number>;
  /** a sample of the distinct errors the reports gave */
  reportedErrors: string[];
}

interface Answer {
  kind: 'audit' | 'watch';
  sentAt: number;
  ms: number;
  status: number;
}

function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}

export function latencies(answers: readonly { ms: number; status: number }[]): Latencies {
  const sorted = answers.map((a) => a.ms).sort((a, b) => a - b);
  const statuses: Record<string, number> = {};
  for (const a of answers) statuses[String(a.status)] = (statuses[String(a.status)] ?? 0) + 1;
  return { count: sorted.length, statuses, p50: round(percentile(sorted, 50)), p90: round(percentile(sorted, 90)), p99: round(percentile(sorted, 99)), max: round(sorted[sorted.length - 1] ?? 0) };
}

function auditEvent(namespace: string, name: string, edit: boolean, now: Date): Record<string, unknown> {
  const time = now.toISOString().replace('Z', '000Z');
  return {
    kind: 'Event',
    apiVersion: 'audit.k8s.io/v1',
    level: 'Metadata',
    auditID: randomUUID(),
    stage: 'ResponseComplete',
    requestURI: `/apis/tyk.tyk.io/v1alpha1/namespaces/${namespace}/apidefinitions/${name}?fieldManager=${edit ? 'kubectl-edit' : 'argocd-controller'}`,
    verb: 'patch',
    user: edit
      ? { username: 'alice@example.com', groups: ['platform-team', 'system:authenticated'] }
      : { username: 'system:serviceaccount:argocd:argocd-application-controller', groups: ['system:serviceaccounts', 'system:serviceaccounts:argocd', 'system:authenticated'] },
    sourceIPs: ['10.0.12.7'],
    userAgent: edit ? 'kubectl/v1.30.2 (linux/amd64) kubernetes/3b6a5c2' : 'argocd-application-controller/v2.11.3 (linux/amd64)',
    objectRef: { resource: 'apidefinitions', namespace, name, apiGroup: 'tyk.tyk.io', apiVersion: 'v1alpha1' },
    responseStatus: { metadata: {}, code: 200 },
    requestReceivedTimestamp: time,
    stageTimestamp: time,
    annotations: { 'authorization.k8s.io/decision': 'allow', 'authorization.k8s.io/reason': 'RBAC: allowed by ClusterRoleBinding "platform-admins"' },
  };
}

/** The senders' connection pools, kept from the warm-up to the storm (as a running sender keeps them); closed by `close`. */
let pools: { usersAgent: Agent; auditAgent: Agent; watchAgent: Agent } | undefined;

function senders(): NonNullable<typeof pools> {
  pools ??= {
    usersAgent: new Agent({ keepAliveTimeout: 10_000, connections: 64 }),
    auditAgent: new Agent({ keepAliveTimeout: 30_000 }),
    watchAgent: new Agent({ keepAliveTimeout: 30_000, connections: 64 }),
  };
  return pools;
}

export async function runStorm(args: StormArgs): Promise<StormResult> {
  const { plan } = args;
  const { usersAgent, auditAgent, watchAgent } = senders();
  const loop = monitorEventLoopDelay({ resolution: 5 });
  const answers: Answer[] = [];
  const failures: string[] = [];
  const inFlight = new Set<Promise<void>>();
  const auditBuffer: Record<string, unknown>[] = [];
  let userWrites = 0;
  const userWriteMs: number[] = [];
  let userWriteFailures = 0;
  let auditEvents = 0;
  let watchEvents = 0;
  let largestAuditBatch = 0;
  let lastEventSentMs = 0;
  let t0 = 0;

  const reported: Record<string, number> = {};
  const reportedErrors = new Set<string>();
  const tally = (text: string): void => {
    const body = JSON.parse(text) as { report?: { objects?: { result?: string; error?: string }[] } | null };
    for (const o of body.report?.objects ?? []) {
      reported[o.result ?? '?'] = (reported[o.result ?? '?'] ?? 0) + 1;
      if (o.error !== undefined && reportedErrors.size < 5) reportedErrors.add(o.error.slice(0, 300));
    }
  };

  const track = (p: Promise<void>): void => {
    inFlight.add(p);
    void p.finally(() => inFlight.delete(p));
  };

  const deliver = (kind: 'audit' | 'watch', body: string): void => {
    const sentAt = performance.now();
    lastEventSentMs = sentAt - t0;
    track(
      (async () => {
        let status = 0;
        try {
          const res = await request(`${args.webhookUrl}/webhooks/${kind}`, {
            method: 'POST',
            headers: { authorization: `Bearer ${args.webhookToken}`, 'content-type': 'application/json' },
            body,
            dispatcher: kind === 'audit' ? auditAgent : watchAgent,
            headersTimeout: 300_000,
            bodyTimeout: 300_000,
          });
          status = res.statusCode;
          const text = await res.body.text();
          // 202: taken, the run follows (WEBHOOK_ANSWER=accepted, the default); 200: answered with the run's report
          if (status !== 200 && status !== 202 && failures.length < 5) failures.push(`${kind} ${status}: ${text.slice(0, 300)}`);
          if (status === 200) tally(text);
        } catch (err) {
          if (failures.length < 5) failures.push(`${kind}: ${err instanceof Error ? err.message : String(err)}`);
        }
        answers.push({ kind, sentAt: sentAt - t0, ms: performance.now() - sentAt, status });
      })(),
    );
  };

  const write = async (index: number, rate: number | undefined, seq: number): Promise<void> => {
    const { namespace, name } = objectName(index);
    const body: UserWrite = rate === undefined ? { namespace, name, touch: String(seq) } : { namespace, name, rate };
    const started = performance.now();
    try {
      const send = () => request(`${args.usersUrl}/write`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), dispatcher: usersAgent });
      // once more after a reset pooled socket (the write is an upsert: safe to repeat)
      const res = await send().catch((err: unknown) => (isReset(err) ? send() : Promise.reject(err)));
      const text = await res.body.text();
      if (res.statusCode !== 200) throw new Error(`write ${namespace}/${name}: ${res.statusCode} ${text.slice(0, 200)}`);
      userWrites++;
      userWriteMs.push(performance.now() - started);
      auditBuffer.push(auditEvent(namespace, name, rate !== undefined, new Date()));
      auditEvents++;
      watchEvents++;
      deliver('watch', `{"type":"MODIFIED","object":${text}}`);
    } catch (err) {
      userWriteFailures++;
      if (failures.length < 5) failures.push(err instanceof Error ? err.message : String(err));
    }
  };

  let writesDone = false;
  const auditDeliveries = { count: 0 };
  const auditLoop = (async () => {
    while (!writesDone || auditBuffer.length > 0) {
      await sleep(plan.settings.auditEveryMs);
      if (auditBuffer.length === 0) continue;
      const batch = auditBuffer.splice(0, plan.settings.auditBatchMax);
      largestAuditBatch = Math.max(largestAuditBatch, batch.length);
      auditDeliveries.count++;
      deliver('audit', JSON.stringify({ kind: 'EventList', apiVersion: 'audit.k8s.io/v1', metadata: {}, items: batch }));
    }
  })();

  loop.enable();
  t0 = performance.now();
  const writes: Promise<void>[] = [];
  let seq = 0;
  for (const h of plan.happenings) {
    const wait = t0 + h.at - performance.now();
    if (wait > 1) await sleep(wait);
    writes.push(write(h.index, h.rate, ++seq));
  }
  await Promise.all(writes);
  writesDone = true;
  await auditLoop;
  while (inFlight.size > 0) await Promise.all([...inFlight]);
  const durationMs = performance.now() - t0;
  loop.disable();

  const seconds = Math.ceil(plan.settings.durationMs / 1000) + 1;
  const perSecond = Array.from({ length: seconds }, (_, s) => {
    const mine = answers.filter((a) => Math.min(seconds - 1, Math.floor(a.sentAt / 1000)) === s);
    return { second: s, answers: mine.length, p99: latencies(mine).p99 };
  }).filter((s) => s.answers > 0);
  const ns = (v: number): number => round(v / 1e6);
  return {
    durationMs: Math.round(durationMs),
    lastEventSentMs: Math.round(lastEventSentMs),
    userWrites,
    userWriteFailures,
    userWriteMs: (() => {
      const l = latencies(userWriteMs.map((ms) => ({ ms, status: 200 })));
      return { p50: l.p50, p99: l.p99, max: l.max };
    })(),
    events: { audit: auditEvents, watch: watchEvents },
    deliveries: { audit: auditDeliveries.count, watch: answers.filter((a) => a.kind === 'watch').length },
    largestAuditBatch,
    answers: { all: latencies(answers), audit: latencies(answers.filter((a) => a.kind === 'audit')), watch: latencies(answers.filter((a) => a.kind === 'watch')) },
    perSecond,
    slowest: [...answers]
      .sort((a, b) => b.ms - a.ms)
      .slice(0, 12)
      .map((a) => ({ at: Math.round(a.sentAt), ms: Math.round(a.ms), kind: a.kind })),
    senderLoopDelay: { p50: ns(loop.percentile(50)), p99: ns(loop.percentile(99)), max: ns(loop.max) },
    failures,
    unanswered: (() => {
      const ms = answers.filter((a) => a.status === 0).map((a) => a.ms);
      return { count: ms.length, minMs: Math.round(ms.length ? Math.min(...ms) : 0), maxMs: Math.round(ms.length ? Math.max(...ms) : 0) };
    })(),
    reported,
    reportedErrors: [...reportedErrors],
  };
}

const handlers = {
  /** answers once this process has started (so its start is not in the measured window) */
  ready: (): boolean => true,
  run: (args: StormArgs): Promise<StormResult> => runStorm(args),
  /** the warm-up (storm-plan.ts, warmupPlan) played through the same senders, its result for the log only */
  warm: (args: StormArgs): Promise<StormResult> => runStorm({ ...args, plan: warmupPlan(args.plan) }),
  close: async (): Promise<void> => {
    const open = pools;
    pools = undefined;
    if (open) await Promise.allSettled([open.usersAgent.close(), open.auditAgent.close(), open.watchAgent.close()]);
  },
};

export type StormApi = typeof handlers;

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) serve(handlers);
