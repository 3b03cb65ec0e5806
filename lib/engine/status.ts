/**
 * The status we keep on each custom resource, compatible with Tyk Operator's, derived from
 * the record. Pure.
 *
 * - the kind's id field (statusIdField: none for a kind whose status names no id), and
 *   `latestTransaction {status, time, error}`;
 * - the fields its kind keeps equal to what a pass found (ManagedKind.statusExtra: e.g. the
 *   objects referencing it, or those it references).
 *
 * `statusPatch` returns undefined when the current status already says the same thing: the
 * time of the last transaction alone never causes a patch (design rule 8). Tyk Operator's own
 * CRD of one kind prunes `latestTransaction`; a status that holds our id but no
 * latestTransaction at all is taken as pruned, so it is not patched again and again.
 *
 * What the patch sends is valid under our CRDs and Tyk Operator's: an id that is not known yet
 * ('', e.g. the gateway's context cannot be read before the first sync) is left out, never sent
 * as "" (kube-apiserver 1.20 built with Go >= 1.16 refuses "" in a string field as null, 422);
 * a field to remove (no error, no links) is sent as null, which a merge patch removes.
 *
 * Conditions (conditions.ts) and `observedGeneration` go with every patch when `conditions`
 * is given. Whether they alone cause a patch depends on the CRD: ours keeps them, Tyk
 * Operator's prunes them. `pruned` (learnt from the API server's answer to an earlier patch,
 * kept in the record) says they are dropped, so they never cause a patch by themselves and a
 * pruning CRD is not patched in a loop; they still ride along with any other change, and the
 * caller (finalize) looks again when a new generation is written, so a CRD upgraded to ours is
 * noticed with the next spec change.
 */

import { nonEmpty } from '../platform/guards.js';
import type { SyncRecord } from '../store/types.js';
import { type ConditionFacts, conditionsFor } from './conditions.js';
import { canonicalJson } from './hash.js';
import type { ManagedKind } from './kind.js';

export type TransactionStatus = 'Successful' | 'Failed' | 'Pending';

export interface Transaction {
  status: TransactionStatus;
  time: string;
  error?: string;
}

export function transactionFor(record: SyncRecord): Transaction {
  const status: TransactionStatus = record.result === 'synced' ? 'Successful' : record.result === 'pending' || record.result === 'waiting' ? 'Pending' : 'Failed';
  return record.error ? { status, time: record.time, error: record.error } : { status, time: record.time };
}

/** An empty list and no list say the same thing; the patch removes the field for both. */
function norm(v: unknown): unknown {
  return v === undefined || (Array.isArray(v) && v.length === 0) ? null : v;
}

/** The conditions to keep: their facts, the pass's time (for transitions), and whether the CRD prunes them. */
export interface ConditionsInput {
  readonly facts: ConditionFacts;
  readonly time: string;
  readonly pruned: boolean;
}

/**
 * The merge patch for `status`, or undefined when nothing would change.
 * `id` is what the status names the gateway object by (the Dashboard's _id for pro policies);
 * `extra` are further fields to keep equal (links); `conditions`, Ready and Synced (absent:
 * conditions are not touched).
 */
export function statusPatch(
  kind: ManagedKind,
  current: Record<string, unknown> | undefined,
  record: SyncRecord,
  extra: Record<string, unknown> = {},
  id: string = record.id,
  conditions?: ConditionsInput,
): Record<string, unknown> | undefined {
  const tx = transactionFor(record);
  const cur = current ?? {};
  const hasTx = typeof cur.latestTransaction === 'object' && cur.latestTransaction !== null;
  const idSame = id === '' || nonEmpty(cur[kind.statusIdField]) === id;
  // pruned: no transaction under a known id (a different id is patched anyway, below), or, for a
  // status without an id, no transaction where the CRD is known to prune (a kind whose CRD's
  // status keeps nothing)
  const pruned = !hasTx && (id !== '' || record.conditionsPruned === true);
  const curTx = (hasTx ? cur.latestTransaction : {}) as Record<string, unknown>;
  const txSame = pruned || (nonEmpty(curTx.status) === tx.status && (nonEmpty(curTx.error) ?? '') === (tx.error ?? ''));
  const extraSame = Object.entries(extra).every(([k, v]) => canonicalJson(norm(cur[k])) === canonicalJson(norm(v)));
  const conds = conditions ? conditionsFor(record, conditions.facts, cur.conditions, conditions.time) : undefined;
  const condSame = conditions === undefined || conditions.pruned || (canonicalJson(cur.conditions) === canonicalJson(conds) && cur.observedGeneration === conditions.facts.generation);
  if (idSame && txSame && extraSame && condSame) return undefined;
  return {
    ...(id !== '' ? { [kind.statusIdField]: id } : {}),
    latestTransaction: { status: tx.status, time: tx.time, error: tx.error ?? null },
    ...Object.fromEntries(Object.entries(extra).map(([k, v]) => [k, norm(v)])),
    ...(conditions ? { conditions: conds, observedGeneration: conditions.facts.generation } : {}),
  };
}
