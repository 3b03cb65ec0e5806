/**
 * MAX_DELETES_PER_RUN: the guard against a mass deletion (a namespace removed by mistake, a
 * WATCH_NAMESPACE typo, records that outlived their cluster). Pure.
 *
 * A gateway deletion is a decided DELETE that sends one (the gateway has the object); an
 * object moving to another id or gateway retires its old copy as part of a write and is not
 * counted. The limit covers the whole run: its phases, in the registry's order,
 * count against one allowance, and a phase whose deletions would take the run beyond it holds
 * every deletion of its own: each becomes `held`, with a message that names the numbers and
 * the setting; nothing about it is written (record, finalizer and gateway object stay), so a
 * later run with the limit raised, or with fewer deletions pending, carries it out.
 *
 * A sharded tick's shards are runs of their own but share one allowance: each phase of a shard
 * that passes its own limit then claims its deletions against the tick's (Store.claim, keyed by
 * the tick's run id, in lib/engine/run.ts); a refused claim holds that phase's deletions
 * with `tickLimitError`. So a tick deletes at most MAX_DELETES_PER_RUN in all, whichever shards
 * get there first; the others' wait for a later tick.
 */
import type { Planned } from './apply.js';
import { type Decision, exhaustive } from './decide.js';

export interface DeleteLimit {
  /** MAX_DELETES_PER_RUN; 0: no limit */
  readonly max: number;
  /** gateway deletions this run already let through in earlier phases */
  readonly used: number;
}

export interface Limited {
  readonly planned: Planned[];
  /** gateway deletions in this phase (let through, or held) */
  readonly deletions: number;
  /** whether they were held */
  readonly held: boolean;
}

type Removal = Extract<Decision, { what: 'remove' }>;

/** A decided DELETE that sends one to the gateway. */
export function isGatewayDeletion(d: Decision): boolean {
  return gatewayDeletion(d) !== undefined;
}

/** `d`, when it is a removal that sends a DELETE to the gateway. */
function gatewayDeletion(d: Decision): Removal | undefined {
  switch (d.what) {
    case 'remove':
      return d.write.present ? d : undefined;
    case 'quiet':
    case 'upsert':
      return undefined;
    default:
      return exhaustive(d);
  }
}

export function limitDeletions(planned: readonly Planned[], limit: DeleteLimit): Limited {
  const deletions = planned.filter((p) => isGatewayDeletion(p.decision)).length;
  const total = limit.used + deletions;
  if (limit.max === 0 || total <= limit.max) return { planned: [...planned], deletions, held: false };
  const error = `deletion held: this run would delete ${total} objects from the gateway, more than MAX_DELETES_PER_RUN=${limit.max}; raise the limit (0 turns it off) or delete fewer at a time`;
  return { planned: holdDeletions(planned, error), deletions, held: true };
}

/** Every gateway deletion of `planned` held with `error`; the rest as they were. */
export function holdDeletions(planned: readonly Planned[], error: string): Planned[] {
  return planned.map((p) => {
    const removal = gatewayDeletion(p.decision);
    return removal ? { loaded: p.loaded, decision: held(removal, error) } : p;
  });
}

/** Why a shard's deletions are held when the tick's allowance cannot take them. */
export function tickLimitError(deletions: number, max: number): string {
  return `deletion held: with the other shards of this full run, these ${deletions} deletions from the gateway would go over MAX_DELETES_PER_RUN=${max} (it counts the whole tick); raise the limit (0 turns it off) or delete fewer at a time`;
}

/** A removal held: it writes nothing, and its outcome is `held` with `error` (record, finalizer and gateway object stay). */
function held(d: Removal, error: string): Decision {
  const { what: _, write: _w, next: _n, release: _r, ...decided } = d;
  return { ...decided, what: 'quiet', hold: 'delete-limit', outcome: { result: 'held', error }, patchStatus: false };
}
