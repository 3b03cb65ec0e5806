/**
 * The schedule: a full run over everything, on RESYNC_SCHEDULE (self-hosted, lib/main.ts) or
 * on an EventBridge schedule (Lambda, functions/schedule.ts). Finds what missed events would
 * have told us, and undoes drift on the gateway side.
 *
 * A tick first asks the coordinator (lib/scale/coordinate.ts) how much there is. Up to
 * SHARD_SIZE objects it is one ordinary full run, as always. Above, the coordinator has listed
 * each gateway once, kept a snapshot, done the tick's cluster-wide work and cut the objects into
 * shards (lib/scale/shards.ts), and the tick hands them on:
 * - with a ShardQueue (SHARD_QUEUE_URL: SQS, ./shard-queue.ts), one message per shard; each is run by
 *   the `shard` function (functions/shard.ts, ./shards.ts), retried by the queue when it fails;
 * - without one (self-hosted, Knative, or a Lambda without a queue), here, one shard after the
 *   other (one shard's objects in memory at a time), the shards' reports merged into one, as
 *   the full run's would be; a shard not started by the deadline is a run-level error, and its
 *   objects wait for the next tick, untouched.
 *
 * POST /resync with nothing named (./resync.ts) and a webhook's run over everything
 * (Service.runEvents) are full runs too, sharded the same way above SHARD_SIZE, their shards
 * always run here (their caller waits for the report), under their own trigger (a resync's
 * ignore retry backoff, as any resync does).
 *
 * Given the time left (a Lambda invocation's remaining time), `deadlineWithin` sets a
 * deadline that keeps DEADLINE_MARGIN_MS back for the last writes to settle and records to be saved:
 * objects it has not started by then are left, untouched and unlocked, to the next tick;
 * nothing is cut off half-way.
 */

import type { ObjectReport, ObjectResult, RunReport, Trigger } from '../engine/types.js';
import type { TickPlan } from '../scale/coordinate.js';
import { describeShard, type Shard, shardScope } from '../scale/shards.js';
import type { Service } from '../service.js';

/** Time kept back from the deadline for settling and saving what was started. */
const DEADLINE_MARGIN_MS = 30_000;

/** Where a tick's shards go: a queue whose consumers run them (SQS: ./sqs.ts). */
export interface ShardQueue {
  /** Sends every shard, or throws ShardQueueError saying how many could not be sent. */
  send(shards: readonly Shard[]): Promise<void>;
}

/** A sharded tick, in short: its run id (the snapshot's), the shards, the objects counted. */
export interface ShardedTick {
  readonly runId: string;
  readonly shards: number;
  readonly objects: number;
  /** the shards went to the queue (true) or ran in this process */
  readonly queued: boolean;
}

/** What a tick did: a report (an ordinary full run, or the shards run here, merged), and the shards when it was sharded. */
export type TickOutcome = { readonly report: RunReport; readonly sharded?: ShardedTick } | { readonly report?: undefined; readonly sharded: ShardedTick };

/** The deadline (on the service's clock) of a run that has `remainingMs` left; undefined: none. */
export function deadlineWithin(svc: Service, remainingMs: number | undefined): number | undefined {
  return remainingMs === undefined ? undefined : svc.now() + Math.max(0, remainingMs - DEADLINE_MARGIN_MS);
}

/** Who asked for a full run: the schedule, a webhook's run over everything (retry backoff holds), or a person's POST /resync with nothing named (it does not). */
export type FullRunTrigger = Trigger;

/**
 * One full run: an ordinary one, or its shards sent to `queue` (or run here without one). The
 * runs, and the merged report, are under `trigger` (default `schedule`).
 */
export async function scheduledTick(svc: Service, options: { deadline?: number; queue?: ShardQueue; trigger?: FullRunTrigger } = {}): Promise<TickOutcome> {
  const { deadline, queue, trigger = 'schedule' } = options;
  const plan = await svc.planTick();
  if (!plan.sharded) return { report: await svc.run({ trigger, scope: { all: true }, ...(deadline !== undefined ? { deadline } : {}) }) };
  const sharded = { runId: plan.runId, shards: plan.shards.length, objects: plan.objects };
  if (queue) {
    await queue.send(plan.shards);
    svc.log.info({ ...sharded, snapshot: plan.snapshot, errors: plan.errors.length }, 'full run sharded: shards sent');
    return { sharded: { ...sharded, queued: true } };
  }
  return { report: await runHere(svc, plan, trigger, deadline), sharded: { ...sharded, queued: false } };
}

/** A full run, stopping between chunks of writes at `deadline` when one is given; sharded in this process above SHARD_SIZE. */
export async function scheduledRun(svc: Service, deadline?: number): Promise<RunReport> {
  return (await fullRunHere(svc, { ...(deadline !== undefined ? { deadline } : {}) })).report;
}

/** A full run in this process (no queue, so there is always a report), sharded above SHARD_SIZE. */
export async function fullRunHere(svc: Service, options: { deadline?: number; trigger?: FullRunTrigger } = {}): Promise<{ report: RunReport; sharded?: ShardedTick }> {
  const outcome = await scheduledTick(svc, options);
  return outcome as { report: RunReport; sharded?: ShardedTick };
}

/** The shards, one after the other in this process; their reports merged under the tick's run id. */
async function runHere(svc: Service, plan: Extract<TickPlan, { sharded: true }>, trigger: FullRunTrigger, deadline: number | undefined): Promise<RunReport> {
  const started = svc.now();
  const reports: RunReport[] = [];
  const errors: RunReport['errors'] = [...plan.errors];
  for (const shard of plan.shards) {
    if (deadline !== undefined && svc.now() >= deadline) {
      errors.push({ stage: `shard ${describeShard(shard)}`, code: 'OUT_OF_TIME', message: 'not started before the deadline: its objects wait for the next tick' });
      continue;
    }
    // a shard that throws (the store is gone, the process is stopping) ends the tick: the next shards would meet the same
    reports.push(await svc.run({ trigger, scope: shardScope(shard), shard, ...(deadline !== undefined ? { deadline } : {}) }));
  }
  const merged = mergeReports(plan.runId, started, svc.now(), reports, errors, trigger);
  if (merged.errors.length === 0) svc.recordFullRunSuccess();
  svc.log.info({ runId: plan.runId, shards: plan.shards.length, counts: merged.counts, writes: merged.gateway.writes, errors: merged.errors.length }, 'sharded full run finished');
  return merged;
}

/** The shards' reports as one full run's. */
export function mergeReports(runId: string, startedAt: number, endedAt: number, reports: readonly RunReport[], extraErrors: RunReport['errors'] = [], trigger: FullRunTrigger = 'schedule'): RunReport {
  const objects: ObjectReport[] = reports.flatMap((r) => r.objects);
  objects.sort((a, b) => `${a.kind}/${a.namespace}/${a.name}`.localeCompare(`${b.kind}/${b.namespace}/${b.name}`));
  const counts: Partial<Record<ObjectResult, number>> = {};
  for (const o of objects) counts[o.result] = (counts[o.result] ?? 0) + 1;
  return {
    runId,
    trigger,
    dryRun: false,
    startedAt: new Date(startedAt).toISOString(),
    durationMs: endedAt - startedAt,
    gateway: { writes: reports.reduce((n, r) => n + r.gateway.writes, 0), reloads: reports.reduce((n, r) => n + r.gateway.reloads, 0) },
    objects,
    errors: [...extraErrors, ...reports.flatMap((r) => r.errors)],
    counts,
  };
}
