/**
 * The Run's public types: what a trigger asks for (RunRequest, RunScope), the settings and
 * ports a run is given (RunSettings, RunDeps), and what it answers (RunReport). Types only.
 * Triggers and adapters import these, never the orchestrator's internals.
 */

import type { GatewayTargets } from '../gateway/targets.js';
import type { KubeApi } from '../kube/types.js';
import type { Clock } from '../platform/clock.js';
import type { Logger } from '../platform/log.js';
import type { ListSizes } from '../scale/list-sizes.js';
import type { ObservedMemo } from '../scale/observed-memo.js';
import type { Shard } from '../scale/shards.js';
import type { Store } from '../store/types.js';
import type { FieldChange } from './changes.js';
import type { BackoffSettings } from './error-policy.js';
import type { ClusterRef, KindRegistry, ObjectRef } from './kind.js';
import type { Action, Reason } from './plan.js';

export interface SettleSettings {
  /** how long a pass may wait for its writes to become visible */
  budgetMs: number;
  /** first wait after a reload before reading back; doubles up to maxDelayMs */
  initialDelayMs: number;
  maxDelayMs: number;
  /** a reload not visible after this long is re-issued (a gateway can lose one silently) */
  reloadEveryMs: number;
}

export interface RunSettings {
  /** WATCH_NAMESPACE; undefined means all namespaces */
  namespaces?: readonly string[];
  concurrency: number;
  /** how long a lock lives unless renewed: what a crashed holder costs its objects */
  lockTtlMs: number;
  /** how often (real time: the store's TTLs are) a run renews the locks it holds; 0: never */
  lockRenewMs: number;
  /** up to this many objects, state is read with one GET each; above, with LISTs */
  getThreshold: number;
  settle: SettleSettings;
  maxDirtyPasses: number;
  backoff: BackoffSettings;
  /** with a deadline, writes are applied (locked, written, settled, released) in chunks of this size */
  deadlineChunk: number;
  /**
   * GATEWAY_MAX_CONCURRENT_WRITES: writes in flight toward one gateway from every invocation
   * together (slots in the store); max 0: no limit. A slot lives slotTtlMs unless released; a
   * write that finds no slot within waitMs fails as the gateway being unavailable (retried).
   */
  gatewayWrites: { max: number; slotTtlMs: number; waitMs: number };
  /** MAX_DELETES_PER_RUN: a run that would delete more gateway objects holds all its deletions; 0: no limit */
  maxDeletesPerRun: number;
  /**
   * ADOPT_NAMESPACES: namespaces whose resources may adopt a gateway object no resource owns
   * under an id other than their default one (`*`: every namespace); absent: none
   */
  adoptNamespaces?: readonly string[];
  /** settings a kind reads (by its folder's name: e.g. a class of objects to serve, ports); the engine passes them on unread */
  kindSettings?: Readonly<Record<string, unknown>>;
}

/**
 * A process-wide stop (SIGTERM): once `deadline` is set (epoch ms on the run's clock), runs
 * start no further gateway write, and what they wrote settles and is recorded by then.
 */
export interface StopSignal {
  readonly deadline: number | undefined;
}

export interface RunDeps {
  /** the kinds a run serves and the order of its phases (lib/kinds/registry.ts) */
  kinds: KindRegistry;
  /** the process is stopping; absent: it never does */
  stop?: StopSignal;
  kube: KubeApi;
  targets: GatewayTargets;
  store: Store;
  clock: Clock;
  log: Logger;
  settings: RunSettings;
  /** what this process saw the gateways' lists return, to choose GETs or a LIST (list-sizes.ts); absent: getThreshold alone */
  listSizes?: ListSizes;
  /** what this process derived from listed gateway objects, by their bytes (observed-memo.ts); absent: each is parsed and hashed */
  observedMemo?: ObservedMemo;
  /** continue tokens a range shard left for the next range of its namespace (lib/scale/list-ranges.ts); absent: each range lists from the first page */
  listHandover?: Map<string, string>;
}

/**
 * Which objects a run looks at: everything (`all`), whole namespaces (listed), and single
 * objects (read one by one). An empty scope looks at nothing.
 */
export interface RunScope {
  all?: boolean;
  namespaces?: readonly string[];
  refs?: readonly ObjectRef[];
  /** single cluster-only objects (ClusterRef: each kind's phase takes its own) */
  cluster?: readonly ClusterRef[];
}

export type Trigger = 'schedule' | 'watch' | 'audit' | 'resync' | 'cloudevents' | 'admission';

export interface RunRequest {
  trigger: Trigger;
  scope: RunScope;
  dryRun?: boolean;
  /**
   * A dry run that needs only the decisions (an admission review's verdict): no field changes,
   * so no gateway object is read again for them (preview.ts).
   */
  decisionsOnly?: boolean;
  /**
   * Epoch ms by which the run must be done (a Lambda's time limit). Writes are then applied in
   * chunks; a chunk not started by the deadline is left, unlocked and untouched, to the next run.
   */
  deadline?: number;
  /**
   * One shard of a sharded full run (shards.ts; its scope is the shard's namespaces): the run
   * decides only the shard's objects (a range's names, whatever its listings return), makes
   * the first decision from the tick's snapshot of the gateways (snapshot.ts), and reads gateway
   * objects one by one (a shard is a small part of a gateway) where a full run would list them.
   */
  shard?: Shard;
  /**
   * The last phase to run (a Phase's name): the run stops after it. A dry run that previews one
   * kind needs only the phases up to its own (an admission review's: lib/triggers/admission.ts).
   */
  until?: string;
}

export type ObjectResult =
  | 'synced'
  | 'unchanged'
  | 'diverged'
  | 'pending'
  | 'waiting'
  | 'failed'
  | 'invalid'
  | 'deleted'
  | 'deferred'
  | 'backoff'
  | 'planned'
  | 'skipped'
  /** tyk.tyk.io/reconcile-paused: nothing written or deleted; what would have been is the action and reason */
  | 'paused'
  /** a deletion held by MAX_DELETES_PER_RUN */
  | 'held';

export type ReportReason =
  | Reason
  | 'read failed'
  | 'not supported by gateway'
  | 'not watched'
  | 'gateway unavailable'
  /** a reference into another namespace without a ReferenceGrant, or a context URL CONTEXT_URL_ALLOW refuses */
  | 'not permitted'
  | 'out of time'
  | 'shutting down'
  | 'store unavailable'
  /** held kinds (cluster only): the finalizer was missing, the status changed, a deletion held while other objects use it */
  | 'finalizer missing'
  | 'status changed'
  | 'in use'
  /** an object that was ours now has another class: what it generated goes */
  | 'ingress class changed'
  /** a route that was ours names no Gateway of ours any more: what it generated goes */
  | 'parent changed'
  /** a blueprint object's deletion, held while objects of another kind name it */
  | 'referenced by ingresses'
  /** refused before any write (owners.ts): another resource owns the id; an unowned object not to adopt; an older resource's listen path */
  | 'IdClaimed'
  | 'AdoptionNotPermitted'
  | 'ListenPathClash'
  /** a deletion that leaves the gateway object alone: another resource owns it, or nothing says it is ours */
  | 'not owned';

export interface ObjectReport {
  kind: string;
  namespace: string;
  name: string;
  /** the gateway: "default" or "context:<namespace>/<name>" */
  gateway?: string;
  id: string;
  action: Action;
  reason: ReportReason;
  result: ObjectResult;
  error?: string;
  code?: string;
  /** the API server refused the status patch (the object keeps its old status): its message */
  statusError?: string;
  /**
   * a dry run's planned write only: what it would change on the gateway, field by field
   * (changes.ts; secrets masked); empty for a deletion (the object goes)
   */
  changes?: FieldChange[];
}

export interface RunReport {
  runId: string;
  trigger: Trigger;
  dryRun: boolean;
  startedAt: string;
  durationMs: number;
  /**
   * gateway writes and reloads made by this run, over all gateways (a dry run: those its planned
   * writes would make); a gateway of several replicas: its replicas, and those its last read could not reach
   */
  gateway: { writes: number; reloads: number; replicas?: { gateway: string; replicas: readonly string[]; unreadable: readonly string[] }[] };
  objects: ObjectReport[];
  errors: { stage: string; code: string; message: string }[];
  counts: Partial<Record<ObjectResult, number>>;
}
