/**
 * The status we keep on each custom resource, compatible with Tyk Operator's
 * (`status.api_id`, `status.latestTransaction {status, time, error}`), derived from the record.
 * Pure. `statusPatch` returns undefined when the current status already says the same thing
 * (the time of the last transaction alone never causes a patch: design rule 8).
 */
import type { SyncRecord } from '../store/types.js';
import type { ManagedKind } from './kinds.js';

export type TransactionStatus = 'Successful' | 'Failed' | 'Pending';

export interface Transaction {
  status: TransactionStatus;
  time: string;
  error?: string;
}

export function transactionFor(record: SyncRecord): Transaction {
  const status: TransactionStatus =
    record.result === 'synced' ? 'Successful' : record.result === 'pending' ? 'Pending' : 'Failed';
  return record.error ? { status, time: record.time, error: record.error } : { status, time: record.time };
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

/** The merge patch for `status`, or undefined when nothing would change. */
export function statusPatch(
  kind: ManagedKind,
  current: Record<string, unknown> | undefined,
  record: SyncRecord,
): Record<string, unknown> | undefined {
  const tx = transactionFor(record);
  const cur = (current ?? {}) as Record<string, unknown>;
  const curTx = (cur.latestTransaction ?? {}) as Record<string, unknown>;
  const same =
    str(cur[kind.statusIdField]) === record.id &&
    str(curTx.status) === tx.status &&
    (str(curTx.error) ?? '') === (tx.error ?? '');
  if (same) return undefined;
  return {
    [kind.statusIdField]: record.id,
    latestTransaction: { status: tx.status, time: tx.time, error: tx.error ?? null },
  };
}
