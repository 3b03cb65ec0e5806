/**
 * One shard of a sharded full run (lib/triggers/schedule.ts sends them): the usual run over
 * the shard's objects (RunRequest.shard), from an SQS message (the `shard` Lambda, through
 * `shardBatch`) or a POST /shards (`shardEndpoint`: any other deliverer, such as a Knative
 * Eventing trigger with retries and a dead-letter sink). A shard done counts itself done for its
 * tick (Service.shardDone), and the tick's last one sets the full run's success metric.
 *
 * A shard has failed, and is delivered again (after the queue's visibility timeout; to the
 * dead-letter queue after its bound), when:
 * - its message is malformed (logged, without the body; it will fail every time: the DLQ keeps it);
 * - the run threw (the store is unavailable, the process is stopping);
 * - the run did not get to all its objects: deferred because time ran out, the process stopped
 *   or the store went (objects another run holds the lock of are not: that run takes them up);
 * - the run has a run-level error (a listing failed: what it lists was not looked at).
 * Objects that failed on their own (a gateway refusing one) are recorded with their backoff, as
 * in any run, and the next tick retries them: the shard itself has done its work. A failed
 * shard's objects are as the run left them: what it did not start is untouched, nothing is
 * deleted on doubt, and the next delivery (or tick) takes them up where it stopped.
 */

import type { RunReport } from '../engine/types.js';
import { describeError, errorCode } from '../platform/errors.js';
import { describeShard, parseShardMessage, type Shard, shardScope } from '../scale/shards.js';
import type { Service } from '../service.js';
import type { HttpInput, HttpOutput, HttpRoute } from './io.js';
import { deadlineWithin } from './schedule.js';

/** Deferred for these reasons, an object was not got to (the run's own limit, not another run's lock). */
const NOT_DONE: ReadonlySet<string> = new Set(['out of time', 'shutting down', 'store unavailable']);

/** How one shard ended: done, or why it must be delivered again (with the report when it ran). */
export type ShardOutcome = { readonly ok: true; readonly shard: Shard; readonly report: RunReport } | { readonly ok: false; readonly why: string; readonly shard?: Shard; readonly report?: RunReport };

/** Runs one shard; throws what the run throws (ShuttingDownError, StoreUnavailableError). */
export async function runShard(svc: Service, shard: Shard, deadline?: number): Promise<ShardOutcome> {
  const report = await svc.run({ trigger: 'schedule', scope: shardScope(shard), shard, ...(deadline !== undefined ? { deadline } : {}) });
  const notDone = report.objects.filter((o) => o.result === 'deferred' && NOT_DONE.has(o.reason)).length;
  const why =
    notDone > 0
      ? `${notDone} objects not got to (${report.objects.find((o) => o.result === 'deferred' && NOT_DONE.has(o.reason))?.reason})`
      : report.errors.length > 0
        ? `run error: ${report.errors[0]?.stage}: ${report.errors[0]?.message}`
        : undefined;
  if (why !== undefined) return { ok: false, why, shard, report };
  await svc.shardDone(shard);
  return { ok: true, shard, report };
}

/** An SQS record, as Lambda's event source mapping delivers it (the fields read here). */
export interface SqsRecord {
  messageId: string;
  body: string;
  attributes?: { ApproximateReceiveCount?: string };
  [key: string]: unknown;
}

export interface SqsEvent {
  Records?: SqsRecord[];
}

/** What Lambda's event source mapping takes back (functionResponseType ReportBatchItemFailures): the messages to deliver again. */
export interface SqsBatchResponse {
  batchItemFailures: { itemIdentifier: string }[];
}

/**
 * The shards of an SQS event, one after the other; each failed one (see the header) is reported
 * by its message id, the others are deleted by Lambda. One never affects another: a malformed
 * message or a thrown run fails that message only. `observe` sees each outcome (tests).
 */
export async function shardBatch(svc: Service, event: SqsEvent, remainingMs: number | undefined, observe?: (outcome: ShardOutcome, record: SqsRecord) => void): Promise<SqsBatchResponse> {
  const deadline = deadlineWithin(svc, remainingMs);
  const failures: { itemIdentifier: string }[] = [];
  const records = Array.isArray(event?.Records) ? event.Records : [];
  if (records.length === 0) svc.log.warn({}, 'an SQS event without records');
  for (const record of records) {
    const attempt = Number(record.attributes?.ApproximateReceiveCount ?? '1');
    const log = svc.log.child({ messageId: record.messageId, attempt });
    let outcome: ShardOutcome;
    try {
      const shard = parseShardMessage(typeof record.body === 'string' ? record.body : '');
      log.info({ shard: describeShard(shard), tick: shard.runId }, 'shard started');
      outcome = await runShard(svc, shard, deadline);
    } catch (err) {
      outcome = { ok: false, why: `${errorCode(err)}: ${describeError(err)}` };
    }
    if (outcome.ok) {
      log.info({ shard: describeShard(outcome.shard), counts: outcome.report.counts, writes: outcome.report.gateway.writes }, 'shard done');
    } else {
      // delivered again after the visibility timeout; after the queue's bound, to its dead-letter queue
      log.error({ shard: outcome.shard ? describeShard(outcome.shard) : undefined, why: outcome.why, counts: outcome.report?.counts }, 'shard failed: it will be delivered again');
      if (typeof record.messageId === 'string' && record.messageId !== '') failures.push({ itemIdentifier: record.messageId });
    }
    observe?.(outcome, record);
  }
  return { batchItemFailures: failures };
}

/**
 * POST /shards: one shard message as the body (what the queue would carry), run at once.
 * Requires RESYNC_TOKEN (checked before the body is read). 200 with the report when the shard is done; 503 (with the report)
 * when it must be delivered again; 400 for a malformed message.
 */
export const shardEndpoint: HttpRoute = { guard: 'resync', handle: runPostedShard };

async function runPostedShard(svc: Service, input: HttpInput): Promise<HttpOutput> {
  const shard = parseShardMessage(input.body);
  const outcome = await runShard(svc, shard);
  if (outcome.ok) return { statusCode: 200, body: outcome.report };
  return {
    statusCode: 503,
    headers: { 'retry-after': '60' },
    body: { error: `shard ${describeShard(shard)} not done: ${outcome.why}; deliver it again`, code: 'SHARD_INCOMPLETE', report: outcome.report },
  };
}
