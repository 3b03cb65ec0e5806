/**
 * The decision: plan(desired?, observed?, record?) → action and reason. Pure: no clock, no I/O.
 *
 * - desired: the custom resource as the reconciler would send it, or undefined when the API
 *   server confirmed (404) that it is gone. A failed read never reaches plan.
 * - observed: the gateway object under the desired id (or the recorded id when desired is
 *   gone), or undefined when the gateway confirmed it does not have it.
 * - record: what we remembered after our last sync, or undefined.
 *
 * Never plans a DELETE for an object we have no claim on: a resource being deleted must carry
 * our finalizer, a vanished resource must have a record (design rule 5). Plans WAIT for an
 * object whose dependencies are missing, and leaves what the gateway has alone meanwhile.
 * A record from another gateway (the resource's contextRef changed) is the caller's to
 * handle: plan is given the record for the object's current gateway only.
 */
import type { SyncRecord } from '../store/types.js';

export type Action = 'CREATE' | 'UPDATE' | 'DELETE' | 'NOOP' | 'WAIT';

export type Reason =
  | 'created in cluster'
  | 'adopted from gateway'
  | 'spec changed'
  | 'id changed'
  | 'drifted on gateway'
  | 'missing on gateway'
  | 'not yet visible on gateway'
  | 'retrying after failure'
  | 'deleted in cluster'
  | 'already gone'
  | 'unchanged'
  | 'invalid spec'
  | 'invalid spec unchanged'
  | 'not managed'
  | 'waiting for dependency'
  | 'referenced by policies'
  | 'referenced by catalogues'
  | 'moved to another gateway'
  | 'dependency ready'
  | 'template';

export interface DesiredState {
  /** gateway id the object should have */
  id: string;
  /** hash of the body we would send; for an invalid spec, of the spec itself */
  hash: string;
  generation: number;
  /** deletionTimestamp is set */
  deleting: boolean;
  /** our finalizer is on the object */
  hasFinalizer: boolean;
  /** why the spec cannot be sent, when it cannot */
  invalid?: string;
  /** what the object waits for (an object it references not synced yet), when it waits */
  waiting?: string;
}

export interface ObservedState {
  id: string;
  /** hash of everything the gateway reports for the object */
  hash: string;
}

export interface Plan {
  action: Action;
  reason: Reason;
  /** the gateway id the action applies to */
  id: string;
  /** a previously recorded id to remove from the gateway once the write succeeded */
  retireId?: string;
}

export function plan(desired?: DesiredState, observed?: ObservedState, record?: SyncRecord): Plan {
  if (desired === undefined) {
    if (record === undefined) return { action: 'NOOP', reason: 'not managed', id: observed?.id ?? '' };
    return { action: 'DELETE', reason: observed ? 'deleted in cluster' : 'already gone', id: record.id };
  }
  const id = desired.id;
  if (desired.deleting) {
    if (!desired.hasFinalizer) return { action: 'NOOP', reason: 'not managed', id };
    return { action: 'DELETE', reason: observed ? 'deleted in cluster' : 'already gone', id };
  }
  if (desired.invalid !== undefined) {
    const known = record?.result === 'invalid' && record.desiredHash === desired.hash;
    return { action: 'NOOP', reason: known ? 'invalid spec unchanged' : 'invalid spec', id };
  }
  if (desired.waiting !== undefined) return { action: 'WAIT', reason: 'waiting for dependency', id };
  const write: Action = observed ? 'UPDATE' : 'CREATE';
  if (record === undefined) return { action: write, reason: observed ? 'adopted from gateway' : 'created in cluster', id };
  if (record.id !== '' && record.id !== id) return { action: write, reason: 'id changed', id, retireId: record.id };
  if (record.result === 'waiting') return { action: write, reason: 'dependency ready', id };
  if (record.desiredHash !== desired.hash) return { action: write, reason: 'spec changed', id };
  if (record.result === 'invalid') return { action: 'NOOP', reason: 'invalid spec unchanged', id };
  if (!observed) return { action: 'CREATE', reason: 'missing on gateway', id };
  if (record.result === 'failed') return { action: 'UPDATE', reason: 'retrying after failure', id };
  if (record.result === 'pending') return { action: 'UPDATE', reason: 'not yet visible on gateway', id };
  if (record.observedHash !== observed.hash) return { action: 'UPDATE', reason: 'drifted on gateway', id };
  return { action: 'NOOP', reason: 'unchanged', id };
}
