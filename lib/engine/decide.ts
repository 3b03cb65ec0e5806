/**
 * The decision: one pure function per object and pass. `decide(loaded, moment)` takes
 * everything the load stage found (desired, observed, record, gateway, the objects that
 * reference it) and one clock reading, and returns the whole Decision, one tagged union on
 * `what`: `quiet` (nothing is written; its outcome, the record to save, what holds it back:
 * backoff, referencing objects, a missing dependency, a pause), `upsert` (the body to send,
 * the owner claim made first) or `remove` (what to delete, the owner entry to release); a
 * write carries the record it leads to (`next`). Every variant has the action and reason,
 * and whether the status is patched. `recordAfter` says, as purely, what the record becomes
 * once the write's outcome is known. Consumers match `what` exhaustively (`exhaustive`: a
 * variant left out does not compile). No I/O, no clock of its own.
 *
 * Rules (design.md): nothing is deleted on doubt (a failed read is `read failed`, never
 * absent; a deletion waits while the objects its kind names as holders reference it, or
 * while they cannot be listed); a record
 * from another gateway makes the object new here and retires it there; a failed object waits
 * out its backoff unless its spec, id or gateway changed or the trigger is a resync; a
 * steady state writes nothing. Ownership (owners.ts) comes before any write: an id another
 * resource owns, an unowned gateway object not to adopt, or a lost contest makes the object
 * Failed with that reason and writes nothing; a deletion removes only what the resource owns;
 * a write claims its id first (apply.ts), a done removal releases it (finalize.ts).
 */

import type { GatewayTarget, Refusal as ReferenceRefusal } from '../gateway/targets.js';
import type { JsonObject } from '../gateway/types.js';
import { type KubeObject, type NamespacedName, nsName } from '../kube/types.js';
import { describeDifferences, type FieldDifference } from '../platform/compare.js';
import { describeError, errorCode, GatewayUnsupportedError, OwnershipError } from '../platform/errors.js';
import type { Owner, SyncRecord } from '../store/types.js';
import type { CertificateUpload } from './certificate-text.js';
import { PAUSE_ANNOTATION, pausedMessage } from './conditions.js';
import { type BackoffSettings, dispose } from './error-policy.js';
import { hashOf, managedHash } from './hash.js';
import { gatewayIdFor } from './ids.js';
import { thrownProblem } from './input-limits.js';
import type { ManagedKind, ObjectRef } from './kind.js';
import { type OwnershipFacts, ownedBy, ownerFor, ownerKey, type Refusal, recordedHere, refusalOf } from './owners.js';
import { type Action, type DesiredState, type ObservedState, plan } from './plan.js';
import { refusalCode } from './refusals.js';
import type { ObjectResult, ReportReason, Trigger } from './types.js';

/** What the load stage found about one object, for one pass. */
export interface Loaded {
  readonly kind: ManagedKind;
  readonly ref: ObjectRef;
  /** "<Kind>/<namespace>/<name>" */
  readonly key: string;
  /** the custom resource; null when the API server confirmed it gone; undefined when not read */
  readonly obj: KubeObject | null | undefined;
  /** its namespace is one we watch */
  readonly watched: boolean;
  /** reading its desired or observed state failed: nothing is decided on it */
  readonly readError?: unknown;
  /** what we remembered after the last sync */
  readonly record: SyncRecord | null;
  /** where it goes now (or, when it is gone, where it was) */
  readonly target?: GatewayTarget;
  /** why its gateway cannot be resolved (a missing OperatorContext or Secret), or what it references is refused */
  readonly targetError?: string;
  /** targetError is a refusal (a reference without a ReferenceGrant, a context URL not permitted): its reason */
  readonly targetRefusal?: ReferenceRefusal;
  /** the gateway its record names, when its contextRef moved it elsewhere */
  readonly previousTarget?: string;
  readonly desired?: DesiredState;
  /** what we would send */
  readonly body?: JsonObject;
  /** the desired hash, when it was made from `body` (different bodies, different keys): the ObservedMemo's key for it */
  readonly sentKey?: string;
  /** the record's `links`: keys of the objects it references (its kind's build) */
  readonly links?: readonly string[];
  /**
   * the gateway object under its id: null when the gateway confirmed it absent, undefined when
   * not read; from a shard's snapshot (snapshot.ts), only its id fields, null when the snapshot lacks it
   */
  readonly observedBody?: JsonObject | null;
  readonly observed?: ObservedState;
  /** the live objects whose references hold its deletion (its kind's heldBy); null when they could not be listed */
  readonly referencedBy?: readonly NamespacedName[] | null;
  /** what its desired state was built from (Secrets, certificates): the record's `uses`; undefined when not computed */
  readonly uses?: readonly string[];
  /** the certificates its body names that its gateway's store lacks, to upload before it is written */
  readonly certificates?: readonly CertificateUpload[];
  /** the ids of certificates its body names that its gateway's store lacks: drift (observedOf) */
  readonly missingCertificates?: readonly string[];
  /** status fields its kind's build gave (KindModule.statusExtra reads them) */
  readonly statusFields?: Readonly<Record<string, unknown>>;
  /** the owner the store has for its id on its gateway (owners.ts): null when none, undefined when not read (no gateway or id, or a kind without owners) */
  readonly owner?: Owner | null;
  /** refused by the phase's contest over ids and listen paths (owners.ts contest) */
  readonly refusal?: Refusal;
}

/** The one clock reading and the trigger a pass decides with. */
export interface Moment {
  readonly now: number;
  readonly trigger: Trigger;
  readonly backoff: BackoffSettings;
  /** ADOPT_NAMESPACES: where an object the gateway has and no resource owns may be adopted from (`*`: anywhere) */
  readonly adopt?: readonly string[];
}

/** A previous gateway object to remove once the write is done: an old id, or the object on its old gateway. */
export interface Retire {
  readonly id: string;
  /** the other gateway's name; absent: the object's own gateway */
  readonly gateway?: string;
}

/** The record fields a write's outcome does not change. */
export type RecordBase = Omit<SyncRecord, 'result' | 'error' | 'failures' | 'retryAt' | 'time'>;

/** What every decision says, whatever it does. */
interface Decided {
  readonly action: Action;
  readonly reason: ReportReason;
  /** the gateway id the action applies to */
  readonly id: string;
  /** the gateway's name; absent when unknown */
  readonly gateway?: string;
  /** the status is patched from the record this pass ends with (a quiet object's now, a write's from recordAfter), when it changes */
  readonly patchStatus: boolean;
  /** further status fields to keep equal (linked_by_policies, linked_apis) */
  readonly statusExtra?: Readonly<Record<string, unknown>>;
  /** the pass's clock reading, and as ISO time (the records' transaction time) */
  readonly at: number;
  readonly time: string;
}

/** What holds an object back from a write it would otherwise make. */
export type Hold = 'backoff' | 'policies' | 'dependency' | 'paused' | 'delete-limit';

/** The outcome of a decision that writes nothing: known now. */
export interface QuietOutcome {
  readonly result: ObjectResult;
  readonly error?: string;
  readonly code?: string;
  /** a record to save; absent: the stored one stays */
  readonly save?: SyncRecord;
}

/** A write's record, by its outcome (recordAfter). */
export interface Next {
  readonly base: RecordBase;
  /** failures counted if this write fails (the error policy turns them into a retry time) */
  readonly failures: number;
  readonly backoff: BackoffSettings;
}

/** The owner entry of the object's id on its gateway (owners.ts), under `key`, claimed for the resource `as`. */
export interface OwnerClaim {
  readonly key: string;
  readonly as: Owner;
}

/** The body to send, and what goes with it. */
export interface Upsert {
  readonly body: JsonObject;
  readonly addFinalizer: boolean;
  /**
   * The gateway already holds this body, in every field it has (an object adopted as it is: no
   * record, and its managed hash is the body's own): the id is claimed, the finalizer added and
   * the record saved as for a write, and nothing is sent.
   */
  readonly inPlace?: true;
  readonly retire?: Retire;
  /** certificates to have in the gateway's store before the body is sent */
  readonly certificates?: readonly CertificateUpload[];
}

/** What a removal takes away. */
export interface Remove {
  /** the gateway has it, so a DELETE is sent */
  readonly present: boolean;
  /** the resource is being deleted and carries our finalizer: remove it once gone */
  readonly removeFinalizer: boolean;
  readonly retire?: Retire;
}

/**
 * What is decided for one object, by what it does: nothing written (`quiet`: its outcome is
 * known now), or a gateway write (`upsert`, `remove`: its outcome decides the record, `next`).
 * Every consumer matches `what` exhaustively (`exhaustive` in a switch's default).
 */
export type Decision = Decided &
  (
    | {
        readonly what: 'quiet';
        readonly outcome: QuietOutcome;
        /** what holds it back from a write it would otherwise make */
        readonly hold?: Hold;
        /** an unchanged object our record says we wrote whose owner entry is missing: claimed again, without a write */
        readonly reclaim?: OwnerClaim;
      }
    | {
        readonly what: 'upsert';
        readonly write: Upsert;
        readonly next: Next;
        /** claimed before anything is written (apply.ts); absent: its kind's ids have no owners, or none was read */
        readonly claim?: OwnerClaim;
      }
    | {
        readonly what: 'remove';
        readonly write: Remove;
        readonly next: Next;
        /** the owner key released once the removal is done (finalize.ts); absent: nothing of it is ours to release */
        readonly release?: string;
      }
  );

export type QuietDecision = Extract<Decision, { readonly what: 'quiet' }>;
export type WriteDecision = Extract<Decision, { readonly what: 'upsert' | 'remove' }>;

/** The default of a switch over Decision's variants: `tsc` fails here when one is not handled. */
export function exhaustive(_: never): never {
  throw new Error('internal: a decision of no known variant');
}

/** Whether `d` writes to the gateway. */
export function isWrite(d: Decision): d is WriteDecision {
  switch (d.what) {
    case 'quiet':
      return false;
    case 'upsert':
    case 'remove':
      return true;
    default:
      return exhaustive(d);
  }
}

/** What holds `d` back from a write it would otherwise make (only a decision that writes nothing is held). */
export function holdOf(d: Decision): Hold | undefined {
  switch (d.what) {
    case 'quiet':
      return d.hold;
    case 'upsert':
    case 'remove':
      return undefined;
    default:
      return exhaustive(d);
  }
}

const WRITES: ReadonlySet<Action> = new Set(['CREATE', 'UPDATE', 'DELETE']);

/** Reasons a failed object does not wait out its backoff for: the user changed something. */
const BYPASS_BACKOFF: ReadonlySet<ReportReason> = new Set(['spec changed', 'id changed', 'moved to another gateway']);

/**
 * The object's gateway id as far as it is known: desired, recorded, else, for an
 * kind whose id follows from the resource alone, the one its resource names (spec, status or the default), which needs no
 * gateway (an API whose context cannot be resolved still has one). A policy's id can depend on
 * its gateway (a Dashboard names it by its own _id), so without a gateway it stays ''.
 */
function idOf(l: Loaded): string {
  return l.desired?.id || l.record?.id || (l.obj && l.kind.idWithoutGateway ? gatewayIdFor(l.kind, l.obj) : '');
}

/**
 * The observed state a decision compares: what the gateway reports, and, when certificates the
 * body names are missing from the gateway's store, a hash that says so (they are drift: the
 * object is written again and its certificates uploaded).
 */
export function observedOf(l: Loaded): ObservedState | undefined {
  const missing = l.missingCertificates ?? [];
  if (!l.observed || missing.length === 0) return l.observed;
  return { id: l.observed.id, hash: hashOf({ observed: l.observed.hash, missingCertificates: missing }) };
}

/** The decided id, else idOf. */
export function knownId(l: Loaded, d: Decision): string {
  return d.id || idOf(l);
}

/**
 * The decide stage's boundary: `decide`, and when it throws for this object, the decision for
 * its spec found invalid (the error, bounded: input-limits.ts); when even that throws, the
 * object is reported invalid and nothing is written or recorded. Never throws: one object
 * never stops the others' decisions.
 */
export function decideContained(l: Loaded, m: Moment): Decision {
  try {
    return decide(l, m);
  } catch (err) {
    const problem = thrownProblem('decided', err);
    if (l.obj && l.desired) {
      try {
        return decide({ ...l, body: undefined, desired: { ...l.desired, invalid: problem, waiting: undefined } }, m);
      } catch {
        // told below, without a record
      }
    }
    const id = l.desired?.id ?? l.record?.id ?? '';
    const gateway = l.target?.name ?? l.record?.gateway;
    return {
      at: m.now,
      time: new Date(m.now).toISOString(),
      gateway,
      action: 'NOOP',
      reason: 'invalid spec',
      id,
      what: 'quiet',
      outcome: { result: 'invalid', error: problem, code: 'INVALID_SPEC' },
      patchStatus: false,
    };
  }
}

export function decide(l: Loaded, m: Moment): Decision {
  const time = new Date(m.now).toISOString();
  const gateway = l.target?.name ?? l.record?.gateway;
  const common = { at: m.now, time, gateway };
  const targetId = l.desired?.id ?? l.record?.id ?? '';

  if (l.readError !== undefined) {
    const err = l.readError;
    const unsupported = err instanceof GatewayUnsupportedError;
    // the gateway lacks what the kind needs: the record and status say Failed, as for an unreachable context
    const say = unsupported && l.obj && !l.desired?.deleting ? failedRecord(l, describeError(err), time) : undefined;
    return {
      ...common,
      action: 'NOOP',
      reason: unsupported ? 'not supported by gateway' : 'read failed',
      id: targetId,
      what: 'quiet',
      outcome: { result: 'failed', error: describeError(err), code: errorCode(err), save: say?.save },
      patchStatus: say !== undefined,
      ...statusExtraOf(l),
    };
  }
  if (l.obj === undefined && !l.watched) {
    return { ...common, action: 'NOOP', reason: 'not watched', id: targetId, what: 'quiet', outcome: { result: 'skipped' }, patchStatus: false };
  }
  if (l.targetError !== undefined) {
    // the object's gateway cannot be reached through its context, or a reference is refused:
    // say so, write and delete nothing, look again every run (a grant added is seen at once)
    const say = l.obj ? failedRecord(l, l.targetError, time, l.targetRefusal) : undefined;
    return {
      ...common,
      action: 'NOOP',
      reason: l.targetRefusal ? 'not permitted' : 'gateway unavailable',
      id: targetId,
      what: 'quiet',
      outcome: { result: 'failed', error: l.targetError, code: l.targetRefusal ? refusalCode(l.targetRefusal) : 'GATEWAY_CONTEXT', save: say?.save },
      patchStatus: say !== undefined && !l.desired?.deleting,
      ...statusExtraOf(l),
    };
  }
  if (l.kind.blueprintLabel !== undefined && l.obj?.metadata.labels?.[l.kind.blueprintLabel] === 'true' && !l.record) {
    // a blueprint for other objects is never one of its own
    return { ...common, action: 'NOOP', reason: 'template', id: targetId, what: 'quiet', outcome: { result: 'skipped' }, patchStatus: false };
  }

  // A record from another gateway says nothing about this one: plan as new here, retire there.
  const moved = l.previousTarget !== undefined;
  const p = plan(l.desired, observedOf(l), moved ? undefined : (l.record ?? undefined));
  let action: Action = p.action;
  let reason: ReportReason = moved && WRITES.has(p.action) && p.action !== 'DELETE' ? 'moved to another gateway' : p.reason;
  let waitReason = l.desired?.waiting;
  let hold: Hold | undefined = p.action === 'WAIT' ? 'dependency' : undefined;
  const heldBy = l.kind.heldBy;
  if (heldBy && action === 'DELETE' && l.referencedBy !== undefined && (l.referencedBy === null || l.referencedBy.length > 0)) {
    // a deletion waits while the objects referencing it live (or cannot be listed)
    action = 'WAIT';
    reason = heldBy.reason;
    hold = 'policies';
    waitReason =
      l.referencedBy === null ? `deletion held: the ${heldBy.many} referencing it could not be listed` : `deletion held: still referenced by ${heldBy.kind} ${l.referencedBy.map(nsName).join(', ')}`;
  }
  const id = p.id;
  const base = recordBase(l, id);
  const extra = statusExtraOf(l);

  if (l.obj?.metadata.annotations?.[PAUSE_ANNOTATION] === 'true') {
    // paused: report what would be done (drift included), write and delete nothing, keep the finalizer
    return { ...common, action, reason, id, what: 'quiet', hold: 'paused', outcome: { result: 'paused', error: pausedMessage(action, reason) }, patchStatus: l.record !== null, ...extra };
  }

  const facts = ownershipFacts(l, id);
  // before a write; what an earlier run wrote stays as it is until it writes again (Tyk reports a clash it renamed: Diverged)
  if (action === 'CREATE' || action === 'UPDATE') {
    const refusal = l.refusal ?? (facts ? refusalOf(facts, m.adopt) : undefined);
    if (refusal) return refused(l, refusal, common, id, time, extra);
  }
  if (!WRITES.has(action)) {
    // an object we wrote whose owner entry is missing (records from before owners, a flushed store) claims it again
    // (not by the loser of a contest: the winner claims it)
    const reclaim = facts && facts.owner === null && reason === 'unchanged' && !l.refusal && l.obj && !l.desired?.deleting && recordedHere(facts) ? { reclaim: ownerClaim(facts, l.obj) } : {};
    return { ...common, action, reason, id, what: 'quiet', hold, ...quietOutcome(l, action, reason, waitReason, base, time), ...reclaim, ...extra };
  }

  const failures = (l.record?.result === 'failed' ? l.record.failures : 0) + 1;
  const next: Next = { base, failures, backoff: m.backoff };
  const r = l.record;
  if (r?.result === 'failed' && r.retryAt !== undefined && m.trigger !== 'resync' && !BYPASS_BACKOFF.has(reason) && m.now < r.retryAt) {
    return { ...common, action, reason, id, what: 'quiet', hold: 'backoff', outcome: { result: 'backoff', error: r.error }, patchStatus: false, ...extra };
  }
  // a kind whose id change its write carries out (a portal catalogue's released entries) retires nothing on its own gateway
  const retire: Retire | undefined =
    l.previousTarget !== undefined && l.record ? { id: l.record.id, gateway: l.previousTarget } : p.retireId !== undefined && l.kind.idChangeInBody !== true ? { id: p.retireId } : undefined;
  const retireField = retire ? { retire } : {};
  if (action === 'DELETE') {
    // plan deletes a resource that is still there only when it is being deleted and carries our finalizer
    const removeFinalizer = l.desired?.deleting === true;
    // a gateway object that is not ours (another resource owns it, or neither an owner entry nor our record says it is ours) stays
    const ours = facts === undefined || ownedBy(facts.owner, l.key) || (facts.owner === null && recordedHere(facts));
    const present = l.observed !== undefined && ours;
    const release = facts && ours ? { release: ownerKey(facts.gateway, facts.kind, facts.id) } : {};
    const why: ReportReason = ours ? reason : 'not owned';
    return { ...common, action, reason: why, id, what: 'remove', write: { present, removeFinalizer, ...retireField }, patchStatus: false, next, ...release };
  }
  // plan writes only a valid spec that waits for nothing, and the load stage built its body
  if (!l.body || !l.obj) throw new Error(`internal: ${l.key} planned ${action} without a body`);
  const addFinalizer = !(l.obj.metadata.finalizers ?? []).includes(l.kind.finalizer);
  const certificates = l.certificates && l.certificates.length > 0 ? { certificates: l.certificates } : {};
  const claim = facts ? { claim: ownerClaim(facts, l.obj) } : {};
  // adopted from the gateway, which holds exactly what would be sent: nothing to send (an import's first run writes nothing)
  if (reason === 'adopted from gateway' && !retire && l.observed !== undefined && l.observed.hash === managedHash(l.body, l.body)) {
    return { ...common, action: 'NOOP', reason, id, what: 'upsert', write: { body: l.body, addFinalizer, inPlace: true }, patchStatus: true, next, ...claim, ...extra };
  }
  return { ...common, action, reason, id, what: 'upsert', write: { body: l.body, addFinalizer, ...retireField, ...certificates }, patchStatus: true, next, ...claim, ...extra };
}

/** What the ownership rules (owners.ts) look at, where the load stage read the owner of the object's id. */
function ownershipFacts(l: Loaded, id: string): OwnershipFacts | undefined {
  if (l.owner === undefined || !l.target || id === '') return undefined;
  return { kind: l.kind, key: l.key, obj: l.obj, record: l.record, gateway: l.target.name, id, present: l.observedBody !== null && l.observedBody !== undefined, owner: l.owner };
}

/** The owner entry of the object's id, for `obj`, its resource. */
function ownerClaim(f: OwnershipFacts, obj: KubeObject): OwnerClaim {
  return { key: ownerKey(f.gateway, f.kind, f.id), as: ownerFor(f.key, obj) };
}

/** The stable codes of the refusals (lib/platform/errors.ts OwnershipError). */
const REFUSAL_CODES: Record<Refusal['reason'], OwnershipError['code']> = { IdClaimed: 'ID_CLAIMED', AdoptionNotPermitted: 'ADOPTION_NOT_PERMITTED', ListenPathClash: 'LISTEN_PATH_CLASH' };
const REFUSAL_OF_CODE = Object.fromEntries(Object.entries(REFUSAL_CODES).map(([reason, code]) => [code, reason])) as Record<OwnershipError['code'], Refusal['reason']>;

/**
 * An object refused before any write (owners.ts): Failed, with the refusal as its reason. Its
 * record keeps the id and gateway of what it last wrote (none: ''), so nothing of it is
 * mistaken for ours; it is saved only when it says something new.
 */
function refused(l: Loaded, refusal: Refusal, common: Pick<Decided, 'at' | 'time' | 'gateway'>, id: string, time: string, extra: ReturnType<typeof statusExtraOf>): Decision {
  const same = l.record?.result === 'failed' && l.record.refusal === refusal.reason && l.record.error === refusal.message;
  const kept = l.record ? { gateway: l.record.gateway } : {};
  const save: SyncRecord | undefined =
    same || !l.obj ? undefined : { ...recordBase(l, l.record?.id ?? ''), ...kept, refusal: refusal.reason, result: 'failed', error: refusal.message, failures: 0, time };
  return {
    ...common,
    action: 'NOOP',
    reason: refusal.reason,
    id,
    what: 'quiet',
    outcome: { result: 'failed', error: refusal.message, code: REFUSAL_CODES[refusal.reason], ...(save ? { save } : {}) },
    patchStatus: !!l.obj && (save !== undefined || l.record !== null),
    ...extra,
  };
}

/** The status fields its kind keeps equal to what this pass found (ManagedKind.statusExtra). */
function statusExtraOf(l: Loaded): { statusExtra?: Readonly<Record<string, unknown>> } {
  const extra = l.kind.statusExtra?.(l);
  return extra !== undefined && Object.keys(extra).length > 0 ? { statusExtra: extra } : {};
}

/** The record fields every outcome of this pass shares. */
function recordBase(l: Loaded, id: string): RecordBase {
  const keepPrevious = l.previousTarget === undefined;
  const gateway = l.target?.name ?? l.record?.gateway;
  const links = l.links ? [...l.links] : keepPrevious ? l.record?.links : undefined;
  const uses = l.uses ? [...l.uses] : keepPrevious ? l.record?.uses : undefined;
  return {
    key: l.key,
    id,
    gateway,
    links,
    ...(uses && uses.length > 0 ? { uses } : {}),
    generation: l.desired?.generation ?? l.record?.generation ?? 0,
    desiredHash: l.desired?.hash ?? l.record?.desiredHash ?? '',
    observedHash: keepPrevious ? (l.record?.observedHash ?? '') : '',
    ...(keepPrevious && l.record?.observedWholeHash !== undefined ? { observedWholeHash: l.record.observedWholeHash } : {}),
    ...(l.record?.conditionsPruned ? { conditionsPruned: true } : {}),
  };
}

/** A failed record for an object whose gateway is unavailable or whose reference is refused; the stored one stays when it says the same. */
function failedRecord(l: Loaded, error: string, time: string, refusal?: ReferenceRefusal): { save?: SyncRecord } {
  const same = l.record?.result === 'failed' && l.record.error === error && l.record.refusal === refusal;
  if (same) return {};
  return { save: { ...recordBase(l, idOf(l)), result: 'failed', error, failures: 0, time, ...(refusal ? { refusal } : {}) } };
}

function quietOutcome(l: Loaded, action: Action, reason: ReportReason, waitReason: string | undefined, base: RecordBase, time: string): { outcome: QuietOutcome; patchStatus: boolean } {
  let save: SyncRecord | undefined;
  if (reason === 'invalid spec' && l.desired && l.obj) save = { ...base, result: 'invalid', error: l.desired.invalid, failures: 0, time };
  if (action === 'WAIT' && l.obj) {
    const same = l.record?.result === 'waiting' && l.record.error === waitReason;
    // a wait keeps the hashes of the last sync, so the write it waits for is still seen as one
    const keep =
      l.record && l.record.result !== 'waiting'
        ? { desiredHash: l.record.desiredHash, observedHash: l.record.observedHash, ...(l.record.observedWholeHash !== undefined ? { observedWholeHash: l.record.observedWholeHash } : {}) }
        : {};
    if (!same) save = { ...base, result: 'waiting', error: waitReason, failures: 0, time, ...keep };
  }
  const record = save ?? l.record;
  const patchStatus = record !== null && !!l.obj && (!l.desired?.deleting || action === 'WAIT');
  const result: ObjectResult = action === 'WAIT' ? 'waiting' : reason.startsWith('invalid') ? 'invalid' : reason === 'not managed' ? 'skipped' : 'unchanged';
  const error = action === 'WAIT' ? waitReason : record?.error;
  return { outcome: { result, error, save }, patchStatus };
}

/** The base with the previous record's uses added (each once). */
function withPreviousUses(base: RecordBase, previous: SyncRecord | null): RecordBase {
  const old = previous?.uses ?? [];
  if (old.length === 0) return base;
  return { ...base, uses: [...new Set([...(base.uses ?? []), ...old])] };
}

/** What a carried-out write led to. */
export type Happened =
  | { readonly failed: unknown }
  | { readonly visible: false }
  | { readonly visible: true; readonly observedHash: string; readonly observedWholeHash?: string; readonly differences: readonly FieldDifference[] };

/**
 * The record after a write (null: the object is gone and its record goes), and its result.
 * Pure: the error policy (error-policy.ts) says whether a failure is terminal (invalid) or
 * transient (failed, retried after its backoff); a failed DELETE keeps the hash of the spec
 * last sent.
 */
export function recordAfter(d: WriteDecision, l: Loaded, happened: Happened): { record: SyncRecord | null; result: ObjectResult } {
  // until a write is seen on the gateway, what the previous API used may still be in use there
  const confirmed = 'visible' in happened && happened.visible;
  const next = confirmed ? d.next : { ...d.next, base: withPreviousUses(d.next.base, l.record) };
  const remove = removes(d);
  if ('failed' in happened && happened.failed instanceof OwnershipError) {
    // refused by a claim made since the decision (a concurrent run's): as a refusal decided here, nothing of it is ours
    const kept = l.record ? { id: l.record.id, gateway: l.record.gateway } : { id: '' };
    const refusal = REFUSAL_OF_CODE[happened.failed.code];
    return { record: { ...next.base, ...kept, refusal, result: 'failed', error: describeError(happened.failed), failures: 0, time: d.time }, result: 'failed' };
  }
  if ('failed' in happened) {
    const disposition = dispose(happened.failed, next.failures, d.at, next.backoff, l.key);
    const result = disposition.result;
    const record: SyncRecord = {
      ...next.base,
      result,
      error: describeError(happened.failed),
      failures: next.failures,
      ...(disposition.retryAt !== undefined ? { retryAt: disposition.retryAt } : {}),
      ...(remove && l.record ? { desiredHash: l.record.desiredHash } : {}),
      time: d.time,
    };
    return { record, result };
  }
  if (!happened.visible) {
    const error = remove ? 'deleted on the gateway, still visible after reload; will retry' : 'written to the gateway, not yet visible after reload; will retry';
    return { record: { ...next.base, result: 'pending', error, failures: 0, time: d.time }, result: 'pending' };
  }
  if (remove) return { record: null, result: 'deleted' };
  const seen = { observedHash: happened.observedHash, ...(happened.observedWholeHash !== undefined ? { observedWholeHash: happened.observedWholeHash } : {}) };
  if (happened.differences.length === 0) return { record: { ...next.base, ...seen, result: 'synced', failures: 0, time: d.time }, result: 'synced' };
  const error = `gateway changed what was sent: ${describeDifferences([...happened.differences])}`;
  return { record: { ...next.base, ...seen, result: 'diverged', error, failures: 0, time: d.time }, result: 'diverged' };
}

/** Whether a write removes the object (else it sends its body). */
function removes(d: WriteDecision): boolean {
  switch (d.what) {
    case 'remove':
      return true;
    case 'upsert':
      return false;
    default:
      return exhaustive(d);
  }
}
