/**
 * The Run: one pipeline for every trigger (design.md, "One pipeline for every trigger").
 *
 *   for each phase of the registry, in order: load ─► decide ─► apply ─► settle ─► report
 *
 * The registry (RunDeps.kinds, lib/kinds/registry.ts) gives the phases in dependency order:
 * a kind's phase (phase.ts runKind, the same for every kind) and what follows one (a kind's
 * objects made in the cluster, a sweep, a refresh of statuses). A phase reads what earlier ones
 * ended with (RunContext.outcomes) and asks later ones to look at more objects
 * (RunContext.follow), so an object created in the same run as what it needs finds it synced.
 *
 * A shard of a sharded full run (RunRequest.shard, lib/triggers/schedule.ts) is this pipeline over
 * the shard's namespaces, deciding only the shard's objects: what a phase adds to a later one
 * joins only when it is the shard's (phase.ts owned), as a full run finds those in its own
 * listings; what a full run does once per tick is the coordinator's (lib/scale/coordinate.ts).
 * A run may stop after a named phase (RunRequest.until): a preview of one kind.
 *
 * Guarantees: nothing is deleted from a gateway because a read failed or was partial; an
 * object whose read failed is reported and left alone; object failures are reported, never
 * thrown. Throws only StoreUnavailableError: without records and locks no safe decision can be
 * made. Names no kind.
 */
import { type GatewayCalls, sumCalls } from './calls.js';
import { DEFAULT_BACKOFF } from './error-policy.js';
import { finishReport, RunContext } from './run-context.js';
import type { ObjectReport, RunDeps, RunReport, RunRequest, RunSettings } from './types.js';

export type { ObjectReport, RunDeps, RunReport, RunRequest, RunSettings } from './types.js';

export const DEFAULT_RUN_SETTINGS: RunSettings = {
  concurrency: 8,
  lockTtlMs: 15_000,
  lockRenewMs: 5_000,
  getThreshold: 20,
  settle: { budgetMs: 20_000, initialDelayMs: 250, maxDelayMs: 4_000, reloadEveryMs: 3_000 },
  maxDirtyPasses: 5,
  backoff: DEFAULT_BACKOFF,
  deadlineChunk: 500,
  maxDeletesPerRun: 50,
  gatewayWrites: { max: 16, slotTtlMs: 30_000, waitMs: 60_000 },
};

/**
 * The default gateway's replicas, where it has several: a replica its last read could not
 * reach is a run error (nothing was written to it; the next run tries it again).
 */
function replicasOf(ctx: RunContext): NonNullable<RunReport['gateway']['replicas']> {
  const target = ctx.deps.targets.defaultTarget;
  const status = target.gateway.replicaStatus?.();
  if (status === undefined) return [];
  for (const u of status.unreadable) ctx.runProblem(`gateway ${target.name} replica ${u.replica}`, u.code, `could not be read, so nothing was written to it: ${u.error}`);
  return [{ gateway: target.name, replicas: status.replicas, unreadable: status.unreadable.map((u) => u.replica) }];
}

export async function runReconcile(deps: RunDeps, request: RunRequest): Promise<RunReport> {
  const ctx = new RunContext(deps, request);
  const reports = new Map<string, ObjectReport>();
  const calls: GatewayCalls[] = [];
  for (const phase of deps.kinds.phases) {
    const result = await phase.run(ctx);
    // one report per object: a later step's report of an object takes the place of an earlier one's
    for (const r of result.reports) reports.set(`${r.kind}/${r.namespace}/${r.name}`, r);
    if (result.calls) calls.push(result.calls);
    if (request.until === phase.name) break;
  }
  return finishReport(ctx, [...reports.values()], sumCalls(calls), replicasOf(ctx));
}
