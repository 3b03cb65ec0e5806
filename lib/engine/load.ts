/**
 * The load stage, for one kind: desired state from the API server, the records, the gateway
 * each object goes to, what we would send, and the observed state from each gateway. Returns
 * one immutable `Loaded` per object for `decide`.
 *
 * Guarantees: a failed read marks the affected objects with `readError` (or the run with an
 * error) and never turns into "absent"; a record whose resource a complete listing lacks is
 * confirmed gone by a GET 404 before it becomes a deletion candidate; gateway state is read
 * per gateway, with one GET per object for a few and one LIST for many.
 *
 * In a shard run (RunRequest.shard): listings keep the shard's objects only (a range's names),
 * records of other shards are not orphans here, the first decision takes observed state from the
 * tick's snapshot (snapshot.ts) where it has the gateway and kind, and gateway objects are
 * otherwise read one by one, unless a listing was asked for (no snapshot).
 */

import type { CertificateStore } from '../gateway/certificates.js';
import type { GatewayTarget } from '../gateway/targets.js';
import { GATEWAY_OBJECT_NAMES, type Gateway, type JsonObject, type ListedObject } from '../gateway/types.js';
import type { RefFrom } from '../kube/reference-grants.js';
import type { KubeObject, NamespacedName, ResourceKind } from '../kube/types.js';
import { type FieldDifference, sentFieldDifferences } from '../platform/compare.js';
import type { AheadItem, AheadList, ListsAhead } from '../scale/list-ahead.js';
import { getLimit } from '../scale/list-sizes.js';
import type { MemoAnswer, MemoReading } from '../scale/observed-memo.js';
import type { SnapshotReader } from '../scale/snapshot.js';
import type { SyncRecord } from '../store/types.js';
import { forEachYielding, mapLimit } from './concurrency.js';
import type { Loaded } from './decide.js';
import { hashOf, isLegacyHash, managedHash } from './hash.js';
import { gatewayIdFor } from './ids.js';
import { depthProblem, thrownProblem } from './input-limits.js';
import { type Building, type Built, type CrossRef, type KindPass, type KindPhase, type ManagedKind, type ObjectRef, type PassObject, type PassReads, refString } from './kind.js';
import { hasOwners, ownerKey } from './owners.js';
import type { ObservedState } from './plan.js';
import type { RunContext } from './run-context.js';
import type { RunScope } from './types.js';

/** An object as the API server read found it: the resource (null: gone), or why it could not be read. */
export interface Found {
  readonly kind: ManagedKind;
  readonly ref: ObjectRef;
  readonly key: string;
  readonly obj: KubeObject | null | undefined;
  readonly readError?: unknown;
}

export function found(kind: ManagedKind, ref: ObjectRef, obj: KubeObject | null | undefined, readError?: unknown): Found {
  return { kind, ref, key: refString(ref), obj, readError };
}

/** GETs one object: null on 404, the error kept otherwise. */
export async function getOne(ctx: RunContext, kind: ManagedKind, ref: ObjectRef): Promise<Found> {
  if (!ctx.watched(ref.namespace)) return found(kind, ref, undefined);
  try {
    return found(kind, ref, await ctx.deps.kube.get(kind, ref.namespace, ref.name));
  } catch (err) {
    return found(kind, ref, undefined, err);
  }
}

/**
 * Desired objects of `kind` in `scope` (the part of the request's scope for this kind: its refs
 * are of `kind`, see run.ts scopeFor); `complete` when every listing asked for succeeded.
 */
export async function loadDesired(ctx: RunContext, kind: ManagedKind, scope: RunScope): Promise<{ found: Found[]; complete: boolean }> {
  const all = scope.all === true;
  const namespaces: (string | undefined)[] = all ? (ctx.settings.namespaces ? [...ctx.settings.namespaces] : [undefined]) : listedNamespaces(ctx, scope);
  let complete = true;
  const listed: Found[] = [];
  for (const ns of namespaces) {
    try {
      const perNamespace = new Map<string, number>(ns === undefined ? [] : [[ns, 0]]);
      // a shard run decides its own objects only (a range: its names of the namespace), and drops the others page by page
      let dropped = false;
      const owned = (obj: KubeObject): boolean => {
        const mine = ctx.owns(obj.metadata.namespace ?? '', obj.metadata.name);
        if (!mine) dropped = true;
        return mine;
      };
      const range = ns === undefined ? undefined : await ctx.listRange(kind, ns);
      for (const obj of await ctx.deps.kube.list(kind, ns, { keep: owned, ...(range ? { range } : {}) })) {
        const namespace = obj.metadata.namespace ?? '';
        perNamespace.set(namespace, (perNamespace.get(namespace) ?? 0) + 1);
        listed.push(found(kind, { kind, namespace, name: obj.metadata.name }, obj));
      }
      // a namespace's size is known only from a listing that kept all of it
      if (!dropped) for (const [namespace, count] of perNamespace) ctx.deps.listSizes?.seenInNamespace(kind.kind, namespace, count);
    } catch (err) {
      complete = false;
      if (notServed(kind, err)) ctx.log.info({ kind: kind.kind }, `${kind.plural} are not served by the API server (CRD not installed): none looked at`);
      else ctx.runError(`list ${kind.plural}${ns ? ` in ${ns}` : ''}`, err);
    }
  }
  if (all) return { found: listed, complete };
  const inListed = new Set(namespaces);
  const refs = dedupe((scope.refs ?? []).filter((r) => !inListed.has(r.namespace)));
  const named = await readObjects(
    ctx,
    refs.map((ref) => ({ kind, ref, key: refString(ref) })),
  );
  return { found: [...listed, ...named], complete };
}

/**
 * A LIST the API server answered 404: the kind's CRD is not installed. For a kind whose CRD may
 * be missing (crdOptional), that is no objects rather than a failed run; the listing still
 * counts as incomplete, so no record of the kind becomes a deletion on it.
 */
export function notServed(kind: ManagedKind, err: unknown): boolean {
  return kind.crdOptional === true && (err as { status?: unknown } | undefined)?.status === 404;
}

function listedNamespaces(ctx: RunContext, scope: RunScope): string[] {
  return [...new Set(scope.namespaces ?? [])].filter((ns) => ctx.watched(ns));
}

function dedupe(refs: readonly ObjectRef[]): ObjectRef[] {
  const seen = new Map<string, ObjectRef>();
  for (const r of refs) seen.set(refString(r), r);
  return [...seen.values()];
}

/**
 * Records whose resource the listing did not return; the caller asks only after a complete
 * listing. Each is confirmed with a GET: only a 404 makes it a deletion candidate; an object
 * created since the list is kept.
 */
export async function loadOrphans(ctx: RunContext, kind: ManagedKind, scope: RunScope, listed: readonly Found[]): Promise<Found[]> {
  const base = `${kind.kind}/`;
  const prefixes = scope.all ? [base] : listedNamespaces(ctx, scope).map((ns) => `${base}${ns}/`);
  const known = new Set(listed.map((i) => i.key));
  const refs: ObjectRef[] = [];
  for (const prefix of prefixes) {
    for (const key of await ctx.recordKeys(prefix)) {
      if (known.has(key)) continue;
      const [, namespace, name] = key.split('/');
      if (namespace === undefined || name === undefined || !ctx.watched(namespace) || !ctx.owns(namespace, name)) continue;
      refs.push({ kind, namespace, name });
    }
  }
  return mapLimit(refs, ctx.settings.concurrency, (ref) => getOne(ctx, kind, ref));
}

/** Which object: its kind, reference and key (its lock's and its record's), without what was read of it. */
export type Identity = Pick<Found, 'kind' | 'ref' | 'key'>;

/**
 * Reads named objects from the API server, per kind and namespace: a GET each for up to
 * getThreshold of them (or a tenth of what the namespace last listed, list-sizes.ts), one
 * (paginated) LIST of the namespace for more, which stops after the page past their last name
 * (the API server lists a namespace in name order). A LIST complete up to there that
 * lacks an object confirms it gone; a failed one fails its objects (never makes them absent).
 * An object of an unwatched namespace is not read (as getOne). In the order given. Used for
 * the named objects of a run, and to re-read writers under their locks.
 */
export async function readObjects(ctx: RunContext, objects: readonly Identity[]): Promise<Found[]> {
  const groups = new Map<string, Identity[]>();
  for (const f of objects) {
    const key = `${f.kind.kind}\u0000${f.ref.namespace}`;
    const group = groups.get(key);
    if (group) group.push(f);
    else groups.set(key, [f]);
  }
  const out = new Map<string, Found>();
  const single: Identity[] = [];
  for (const group of groups.values()) {
    const { kind, ref } = group[0] as Identity;
    if (group.length <= getLimit(ctx.settings.getThreshold, ctx.deps.listSizes?.inNamespace(kind.kind, ref.namespace)) || !ctx.watched(ref.namespace)) {
      single.push(...group);
      continue;
    }
    try {
      // only the group's objects are kept of the namespace, as its pages are read; the pages come
      // in name order, so the listing stops after the one past the group's last name
      const wanted = new Set(group.map((f) => f.ref.name));
      const last = [...wanted].reduce((a, b) => (b > a ? b : a));
      const { NameRange } = await import('../scale/list-ranges.js');
      const listed = await ctx.deps.kube.list(kind, ref.namespace, { keep: (o) => wanted.has(o.metadata.name), range: new NameRange(`${last}\u0000`) });
      const current = new Map(listed.map((o) => [o.metadata.name, o]));
      // the list is complete up to the group's last name (or it threw), so an object it lacks is confirmed gone
      for (const f of group) out.set(f.key, found(kind, f.ref, current.get(f.ref.name) ?? null));
    } catch (err) {
      for (const f of group) out.set(f.key, found(kind, f.ref, undefined, err));
    }
  }
  for (const f of await mapLimit(single, ctx.settings.concurrency, (i) => getOne(ctx, i.kind, i.ref))) out.set(f.key, f);
  return objects.map((f) => out.get(f.key) as Found);
}

/** What the load stage needs besides the objects: the kind's view of the phase, whether to LIST the gateway, and the scale hints. */
export interface LoadContext {
  /** the kind's view of this phase (ManagedKind.begin): what a pass of it builds from */
  readonly phase: KindPhase;
  readonly preferList: boolean;
  /** a shard run's first decision: observed state from the tick's snapshot where it has it (never under a lock) */
  readonly snapshot?: SnapshotReader;
  /** a full run's first decision: gateway lists started before the API server was read (list-ahead.ts) */
  readonly listsAhead?: ListsAhead;
}

type Draft = { -readonly [K in keyof Loaded]: Loaded[K] };

/** Records, gateway, desired and observed state of `objects`, as one Loaded each. */
export async function loadState(ctx: RunContext, objects: readonly Found[], lc: LoadContext): Promise<Loaded[]> {
  const drafts: Draft[] = objects.map((f) => ({ ...f, watched: ctx.watched(f.ref.namespace), record: null }));
  const readable = drafts.filter((d) => d.readError === undefined);
  const records = await ctx.deps.store.getRecords(readable.map((d) => d.key));
  readable.forEach((d, i) => {
    d.record = records[i] ?? null;
  });
  await mapLimit(drafts, ctx.settings.concurrency, (d) => resolveTarget(ctx, d));
  await mapLimit(drafts, ctx.settings.concurrency, (d) => checkReferences(ctx, d));
  // a gateway that cannot hold the kind at all: nothing is read or built there
  for (const d of drafts) if (d.target && d.kind.unsupportedOn) d.readError ??= d.kind.unsupportedOn(d.target);
  const pass = await lc.phase.pass(passReads(ctx, drafts), drafts);
  await forEachYielding(drafts, (d) => computeDesired(d, pass));
  await loadObserved(ctx, drafts, pass, lc.preferList, lc.snapshot, lc.listsAhead);
  await checkCertificates(ctx, drafts);
  await loadOwners(ctx, drafts);
  if (pass.referencedBy) {
    const holdersOf = pass.referencedBy.bind(pass);
    await mapLimit(drafts, ctx.settings.concurrency, async (d) => {
      const holders = await holdersOf(d);
      if (holders !== undefined) d.referencedBy = holders;
    });
  }
  return drafts;
}

/**
 * The owner of each object's id on its gateway (owners.ts), for the kinds whose ids have
 * owners: one round trip for all of them. An object without a gateway or an id, or whose state
 * could not be read, has none read.
 */
async function loadOwners(ctx: RunContext, drafts: Draft[]): Promise<void> {
  const wanted = drafts.flatMap((d) => {
    const id = d.desired?.id ?? d.record?.id ?? '';
    return d.target && d.readError === undefined && id !== '' && hasOwners(d.kind) ? [{ d, key: ownerKey(d.target.name, d.kind, id) }] : [];
  });
  if (wanted.length === 0) return;
  const owners = await ctx.deps.store.owners(wanted.map((w) => w.key));
  wanted.forEach((w, i) => {
    w.d.owner = owners[i] ?? null;
  });
}

/**
 * Where an object goes: its contextRef's gateway (or the default); for a vanished object,
 * the gateway its record names. A contextRef that changed since the last sync leaves the old
 * gateway in `previousTarget`.
 */
async function resolveTarget(ctx: RunContext, d: Draft): Promise<void> {
  // an object that could not be read has neither (getOne; its record is not read)
  if (!d.obj && !d.record) return;
  const resolution = d.obj ? await ctx.resolver.forObject(d.obj) : await ctx.resolver.byName(d.record?.gateway);
  if ('error' in resolution) {
    d.targetError = resolution.error;
    if (resolution.refusal) d.targetRefusal = resolution.refusal;
    return;
  }
  d.target = resolution;
  // a vanished object went to its record's gateway, so only an existing one can have moved
  const recorded = d.record?.gateway ?? 'default';
  if (d.record && recorded !== resolution.name && wasWritten(d.record)) d.previousTarget = recorded;
}

/**
 * The references of a live object that name a namespace (its kind's `references`), each checked
 * against the ReferenceGrants there before anything in that namespace is read: the first one
 * refused makes the object Failed (RefNotPermitted) with no gateway, so nothing it names is read
 * or built, and nothing is written or deleted on that account.
 */
async function checkReferences(ctx: RunContext, d: Draft): Promise<void> {
  if (!building(d) || !d.kind.references) return;
  await refuseUnlessGranted(ctx, d, { group: d.kind.group, kind: d.kind.kind, namespace: d.ref.namespace }, d.kind.references(d.obj));
}

/** Makes `d` Failed (RefNotPermitted, no gateway: nothing more is read or built for it) at the first of `refs` no grant permits to `from`. */
async function refuseUnlessGranted(ctx: RunContext, d: Draft, from: RefFrom, refs: readonly CrossRef[]): Promise<void> {
  for (const r of refs) {
    const checked = await ctx.resolver.grants.check(r.field, from, r.to);
    if (checked.ok) continue;
    if ('refused' in checked) refuse(d, checked.refused);
    else unresolved(d, checked.error);
    return;
  }
}

/** `d` loses its gateway, so nothing more is read or built for it: Failed with `message`. */
function unresolved(d: Draft, message: string): void {
  d.targetError = message;
  const without: Draft = d;
  delete without.target;
}

/** `d` refused: RefNotPermitted, `message` saying why. */
function refuse(d: Draft, message: string): void {
  unresolved(d, message);
  d.targetRefusal = 'RefNotPermitted';
}

/** The record says the object reached its gateway at some point (so a move must clean up there). */
function wasWritten(record: SyncRecord): boolean {
  return record.id !== '' && (record.observedHash !== '' || record.result === 'pending');
}

/** A live object whose desired state is to be built: readable, with a gateway, not being deleted. */
function building(d: PassObject): d is Building {
  return !!d.obj && !!d.target && d.readError === undefined && !d.obj.metadata.deletionTimestamp;
}

/** The reads a kind's pass makes through this stage (PassReads), over `drafts`. */
function passReads(ctx: RunContext, drafts: readonly Draft[]): PassReads {
  const draftOf = new Map<PassObject, Draft>(drafts.map((d) => [d, d]));
  return {
    building,
    get: (kind, namesOf) => readDependencies(ctx, drafts, kind, namesOf),
    list: (kind, namespacesOf) => listDependencies(ctx, drafts, kind, namespacesOf),
    refuseUnlessGranted: async (o, from, refs) => {
      const d = draftOf.get(o);
      if (d) await refuseUnlessGranted(ctx, d, from, refs);
    },
    refuse: (o, message) => {
      const d = draftOf.get(o);
      if (d) refuse(d, message);
    },
    mayReference: async (field, from, to) => {
      const checked = await ctx.resolver.grants.check(field, from, to);
      return checked.ok || 'error' in checked;
    },
  };
}

/**
 * Reads, once each, the objects (`kind`) that `namesOf` says each draft's desired state is built
 * from ("namespace/name" → the object, null on 404). A failed read makes every draft naming that
 * object unreadable (`readError`): nothing is decided on it, nothing deleted.
 */
async function readDependencies(ctx: RunContext, drafts: readonly Draft[], kind: ResourceKind, namesOf: (d: Building) => readonly NamespacedName[]): Promise<Map<string, KubeObject | null>> {
  const wanted = new Map<string, { namespace: string; name: string; users: Draft[] }>();
  for (const d of drafts) {
    if (!building(d)) continue;
    for (const { namespace, name } of namesOf(d)) {
      const key = `${namespace}/${name}`;
      const entry = wanted.get(key) ?? { namespace, name, users: [] };
      entry.users.push(d);
      wanted.set(key, entry);
    }
  }
  const read = new Map<string, KubeObject | null>();
  await mapLimit([...wanted.entries()], ctx.settings.concurrency, async ([key, w]) => {
    try {
      read.set(key, await ctx.deps.kube.get(kind, w.namespace, w.name));
    } catch (err) {
      for (const d of w.users) d.readError ??= err;
    }
  });
  return read;
}

/**
 * Lists, once per namespace, the objects (`kind`) that `namespacesOf` says each draft's desired
 * state is built from. A failed list makes every draft that needs it unreadable.
 */
async function listDependencies(ctx: RunContext, drafts: readonly Draft[], kind: ResourceKind, namespacesOf: (d: Building) => readonly string[]): Promise<Map<string, KubeObject[]>> {
  const wanted = new Map<string, Draft[]>();
  for (const d of drafts) {
    if (!building(d)) continue;
    for (const ns of new Set(namespacesOf(d))) wanted.set(ns, [...(wanted.get(ns) ?? []), d]);
  }
  const listed = new Map<string, KubeObject[]>();
  await mapLimit([...wanted.entries()], ctx.settings.concurrency, async ([ns, users]) => {
    try {
      listed.set(ns, await ctx.deps.kube.list(kind, ns));
    } catch (err) {
      for (const d of users) d.readError ??= err;
    }
  });
  return listed;
}

/**
 * What we would send, and the DesiredState plan reads (the kind's build). The build stage's
 * boundary: a resource nested deeper than MAX_SPEC_DEPTH, a built document as deep, or anything
 * thrown while building or hashing one object makes that object invalid (input-limits.ts), and
 * every other object is built as usual.
 */
function computeDesired(d: Draft, pass: KindPass): void {
  const obj = d.obj;
  const target = d.target;
  if (!obj || !target || d.readError !== undefined) return;
  try {
    const deep = depthProblem('the resource', obj);
    let built: Built = deep !== undefined ? { id: d.record?.id || gatewayIdFor(d.kind, obj), invalid: deep } : pass.build(d as Building);
    const deepBody = built.body === undefined ? undefined : depthProblem('the document built from it', built.body);
    if (deepBody !== undefined) built = { id: built.id, invalid: deepBody, ...(built.uses ? { uses: built.uses } : {}) };
    setDesired(d, obj, built);
  } catch (err) {
    setDesired(d, obj, { id: d.record?.id || idFor(d.kind, obj, target), invalid: thrownProblem('built', err) });
  }
}

/** The id a kind's resource asks for on `target`. */
export function idFor(kind: ManagedKind, obj: KubeObject, target: GatewayTarget): string {
  return kind.desiredId ? kind.desiredId(obj, target) : gatewayIdFor(kind, obj);
}

function setDesired(d: Draft, obj: KubeObject, built: Built): void {
  const { id, body, contentHash } = built;
  d.body = body;
  d.sentKey = undefined;
  d.uses = built.uses;
  d.certificates = built.body !== undefined && built.certificates && built.certificates.length > 0 ? built.certificates : undefined;
  d.statusFields = built.statusFields;
  d.links = built.links;
  d.desired = {
    id,
    // the Secrets' content counts: a rotated certificate is a change even where its id is not
    hash:
      built.hash ??
      (body
        ? contentHash === undefined
          ? hashOf(body)
          : hashOf({ body, certificates: contentHash })
        : built.invalid !== undefined && contentHash !== undefined
          ? // an invalid graph is judged again when what it was built from changes, not only its spec
            hashOf({ spec: obj.spec ?? null, inputs: contentHash })
          : hashOf(obj.spec ?? null)),
    generation: obj.metadata.generation ?? 0,
    deleting: obj.metadata.deletionTimestamp !== undefined && obj.metadata.deletionTimestamp !== null,
    hasFinalizer: (obj.metadata.finalizers ?? []).includes(d.kind.finalizer),
    invalid: built.invalid,
    waiting: built.waiting,
  };
  // a hash of the body (and the certificates' content): different bodies, different hashes
  if (body && built.hash === undefined) d.sentKey = d.desired.hash;
}

/** One gateway object to read: which gateway, which kind, which id. */
export interface ObservedRead {
  readonly gateway: Gateway;
  /** the gateway's name, for errors */
  readonly gatewayName: string;
  readonly kind: ManagedKind;
  readonly id: string;
  /**
   * Set: the answer carries the observed hash (observedState, from the body we would send and
   * the recorded hash) and only the slim body later stages read, so a LIST of many objects is
   * reduced as it is read instead of being held whole.
   */
  readonly summarize?: {
    readonly sent: JsonObject | undefined;
    readonly recorded: string | undefined;
    /** a hash that differs for different `sent` bodies: with it, a listed object's answer can come from the ObservedMemo */
    readonly sentKey?: string;
  };
  /**
   * Set (a read-back after our write): each object is reduced as it is read, as a summarized
   * read is, to its slim body, its observed hash for `sent` (no recorded hash: the record is
   * about to be replaced) and what settle needs of the whole echo (`ReadBackFacts`), so a
   * read-back of 10,000 objects never holds 10,000 whole echoes; a listed object's answer is
   * remembered in the ObservedMemo for the next run's reading, which then need not parse it
   * (with `sentKey`).
   */
  readonly readBack?: { readonly sent: JsonObject | undefined; readonly sentKey?: string };
}

/** A summarized read's recorded hash when it is a legacy (whole-object) one: the memo keys answers by it too. */
function legacyOf(read: ObservedRead): string | undefined {
  const recorded = read.summarize?.recorded;
  return recorded !== undefined && isLegacyHash(recorded) ? recorded : undefined;
}

/** What a read-back takes from the whole echo before it is dropped. */
export interface ReadBackFacts {
  /**
   * The whole echo's identity for a sharded run's snapshot (snapshot.ts compares it): the
   * SHA-256 digest of its bytes where it was listed (the gateway client computed it anyway),
   * else hashOf the echo (a GET)
   */
  readonly wholeHash: string;
  /** the echo's differences from the body sent (sentFieldDifferences) */
  readonly differences: readonly FieldDifference[];
}

/** What a read found: the body (null: confirmed absent; slim for a summarized read or a read-back) and its hash, with a read-back's facts; or the error. */
export type ObservedAnswer = { readonly body: JsonObject | null; readonly hash?: string; readonly readBack?: ReadBackFacts } | { readonly error: unknown };

/**
 * Reads gateway objects, per gateway and kind: one GET each for a few, one LIST for many
 * (or when `preferList`). A failed LIST is a run error and fails every read it covered. A
 * shard run reads one by one unless `preferList`: a LIST would read the whole gateway for a
 * small part of it, once per shard.
 */
export async function readObserved(ctx: RunContext, reads: readonly ObservedRead[], preferList: boolean, ahead?: ListsAhead): Promise<ObservedAnswer[]> {
  const answers = new Array<ObservedAnswer>(reads.length);
  const getThreshold = ctx.request.shard ? Infinity : ctx.settings.getThreshold;
  const groups = new Map<Gateway, Map<ManagedKind, number[]>>();
  reads.forEach((r, i) => {
    const byKind = groups.get(r.gateway) ?? new Map<ManagedKind, number[]>();
    groups.set(r.gateway, byKind);
    const indexes = byKind.get(r.kind);
    if (indexes) indexes.push(i);
    else byKind.set(r.kind, [i]);
  });
  const answerOf = (read: ObservedRead, body: JsonObject | null, digest?: string): ObservedAnswer => {
    if (read.readBack && body) {
      const { sent } = read.readBack;
      return {
        body: slimObserved(read.kind, body),
        hash: observedState(read.id, body, sent).hash,
        readBack: { wholeHash: digest ?? hashOf(body), differences: sentFieldDifferences(sent, body) },
      };
    }
    if (!read.summarize || !body) return { body };
    const { sent, recorded } = read.summarize;
    return { body: slimObserved(read.kind, body), hash: observedState(read.id, body, sent, recorded).hash };
  };
  // an object listed byte for byte as before, read for the same body, answers as it did (observed-memo.ts)
  const answerOfListed = (read: ObservedRead, item: ListedObject, memo: MemoReading | undefined): ObservedAnswer => {
    if (read.readBack) {
      const answer = answerOf(read, item.body(), item.digest);
      const { sentKey } = read.readBack;
      if (memo && item.digest !== undefined && sentKey !== undefined && 'hash' in answer && answer.body && answer.hash !== undefined) {
        memo.remember(item.digest, sentKey, undefined, { body: answer.body, hash: answer.hash });
      }
      return answer;
    }
    const sentKey = read.summarize?.sentKey;
    if (!memo || item.digest === undefined || sentKey === undefined) return answerOf(read, item.body());
    return memo.answer(item.digest, sentKey, legacyOf(read), () => answerOf(read, item.body()) as MemoAnswer);
  };
  // an object of a list read ahead: from its kept body, else from the memo; undefined when neither can say
  const answerOfAhead = (read: ObservedRead, item: AheadItem, memo: MemoReading | undefined): ObservedAnswer | undefined => {
    const { body, digest } = item;
    if (body) return answerOfListed(read, { ...(digest !== undefined ? { digest } : {}), body: () => body }, memo);
    const sentKey = read.summarize?.sentKey;
    if (read.readBack || !memo || digest === undefined || sentKey === undefined) return undefined;
    return memo.known(digest, sentKey, legacyOf(read));
  };
  // the reads of one gateway and kind from a list read ahead (list-ahead.ts); those it cannot answer are read as usual
  const fromAhead = async (gw: Gateway, kind: ManagedKind, indexes: readonly number[], byId: ReadonlyMap<string, number[]>, early: Promise<AheadList>): Promise<void> => {
    const { items, memo } = await early;
    const again: number[] = [];
    for (const item of items) {
      const wanted = byId.get(item.id);
      if (!wanted) memo?.keep(item.digest);
      else
        for (const i of wanted) {
          const answer = answerOfAhead(reads[i] as ObservedRead, item, memo);
          if (answer) answers[i] = answer;
          else again.push(i);
        }
    }
    memo?.done();
    ctx.deps.listSizes?.seen(gw.name, kind.gatewayKind, items.length);
    const readAgain = new Set(again);
    for (const i of indexes) if (!readAgain.has(i)) answers[i] ??= { body: null };
    if (again.length === 0) return;
    const more = await readObserved(
      ctx,
      again.map((i) => reads[i] as ObservedRead),
      false,
    );
    again.forEach((i, j) => {
      answers[i] = more[j] as ObservedAnswer;
    });
  };
  for (const [gw, byKind] of groups) {
    for (const [kind, indexes] of byKind) {
      if (preferList || indexes.length > getLimit(getThreshold, ctx.deps.listSizes?.of(gw.name, kind.gatewayKind))) {
        const byId = new Map<string, number[]>();
        for (const i of indexes) {
          const id = (reads[i] as ObservedRead).id;
          const same = byId.get(id);
          if (same) same.push(i);
          else byId.set(id, [i]);
        }
        try {
          const early = ahead?.take(gw.name, kind.gatewayKind);
          if (early) {
            await fromAhead(gw, kind, indexes, byId, early);
            continue;
          }
          if (kind.listedWhole === true) {
            // such a list answers the ids asked (e.g. the Dashboard's portal), it is not read item by item
            const all = await gw.list(kind.gatewayKind);
            for (const i of indexes) answers[i] = answerOf(reads[i] as ObservedRead, all.get((reads[i] as ObservedRead).id) ?? null);
            continue;
          }
          // each listed object is answered (and reduced) as it is read; what no read wants is dropped
          let listed = 0;
          const memo = ctx.deps.observedMemo?.reading(gw.name, kind.gatewayKind);
          await gw.list(kind.gatewayKind, (id, item) => {
            listed++;
            const wanted = byId.get(id);
            // an object no read wants keeps what the memo knew of it, as long as its bytes stay the same
            if (!wanted) memo?.keep(item.digest);
            else for (const i of wanted) answers[i] = answerOfListed(reads[i] as ObservedRead, item, memo);
          });
          memo?.done();
          ctx.deps.listSizes?.seen(gw.name, kind.gatewayKind, listed);
          for (const i of indexes) answers[i] ??= { body: null };
        } catch (error) {
          const name = (reads[indexes[0] as number] as ObservedRead).gatewayName;
          ctx.runError(`list ${GATEWAY_OBJECT_NAMES[kind.gatewayKind].many} on gateway ${name}`, error);
          for (const i of indexes) answers[i] = { error };
        }
        continue;
      }
      await mapLimit(indexes, ctx.settings.concurrency, async (i) => {
        try {
          answers[i] = answerOf(reads[i] as ObservedRead, await gw.get(kind.gatewayKind, (reads[i] as ObservedRead).id));
        } catch (error) {
          answers[i] = { error };
        }
      });
    }
  }
  return answers;
}

/**
 * The observed state of each object with a gateway. Only a readable object that exists or has
 * a record gets one (resolveTarget), and so has an id: desired (computeDesired), else recorded.
 */
async function loadObserved(ctx: RunContext, drafts: Draft[], pass: KindPass, preferList: boolean, snapshot: SnapshotReader | undefined, ahead: ListsAhead | undefined): Promise<void> {
  // an object whose Secret could not be read has no desired state and is not decided on
  const all = drafts.filter((d) => d.target !== undefined && d.readError === undefined && !observedWithoutRead(pass, d));
  const wanted = snapshot ? await fromSnapshot(snapshot, all) : all;
  const answers = await readObserved(
    ctx,
    wanted.map((d) => ({
      gateway: (d.target as GatewayTarget).gateway,
      gatewayName: (d.target as GatewayTarget).name,
      kind: d.kind,
      id: (d.desired?.id ?? d.record?.id) as string,
      summarize: { sent: d.body, recorded: d.record?.observedHash, ...(d.sentKey !== undefined ? { sentKey: d.sentKey } : {}) },
    })),
    preferList,
    ahead,
  );
  wanted.forEach((d, i) => {
    const answer = answers[i] as ObservedAnswer;
    if ('error' in answer) {
      d.readError = answer.error;
      return;
    }
    d.observedBody = answer.body;
    if (answer.body) d.observed = { id: (d.desired?.id ?? d.record?.id) as string, hash: answer.hash as string };
  });
}

/**
 * Sets the observed state of the drafts the snapshot can answer for (its gateway and kind were
 * listed by the coordinator): unchanged (the record's hashes, the snapshot's id fields in
 * `observedBody`) when the whole object hashes as the record's read-back did, or absent when
 * the snapshot lacks it. Returns the drafts it cannot answer for, to be read from the gateway.
 */
async function fromSnapshot(snapshot: SnapshotReader, drafts: readonly Draft[]): Promise<Draft[]> {
  const rest: Draft[] = [];
  for (const d of drafts) {
    const entries = await snapshot.observed((d.target as GatewayTarget).name, d.kind.gatewayKind);
    if (!entries) {
      rest.push(d);
      continue;
    }
    const id = (d.desired?.id ?? d.record?.id) as string;
    const entry = entries.get(id);
    if (!entry) {
      d.observedBody = null;
      continue;
    }
    // the snapshot hashes the whole object (and has its bytes' digest); the record's observedHash
    // is a managed one (hash.ts), so the snapshot speaks for an object only when it matches the
    // whole read-back the record kept (a listed one's digest, a GET's hashOf): then nothing at
    // all changed since (a record of before managed hashes kept the whole hash as its
    // observedHash). Else the object is read, and its managed hash decides.
    const whole = d.record?.observedWholeHash ?? (d.record && isLegacyHash(d.record.observedHash) ? d.record.observedHash : undefined);
    if (whole === undefined || (whole !== entry.hash && whole !== entry.digest)) {
      rest.push(d);
      continue;
    }
    d.observedBody = { ...entry.ids };
    d.observed = { id, hash: (d.record as SyncRecord).observedHash };
  }
  return rest;
}

/**
 * Which certificates an object's body names are missing from its gateway's store (a fact:
 * decide.ts observedOf makes them drift, so the object is written again and uploads them).
 * What the store has is not uploaded again by a write.
 * One listing per gateway, only where some API names a certificate; a failed listing is a run
 * error and changes nothing (a certificate not known to be missing is taken to be there).
 */
async function checkCertificates(ctx: RunContext, drafts: Draft[]): Promise<void> {
  const byGateway = new Map<string, { target: GatewayTarget; store: CertificateStore; users: Draft[] }>();
  for (const d of drafts) {
    const store = d.target?.gateway.certificates;
    if (!d.certificates || d.certificates.length === 0 || !d.observed || !d.target || !store) continue;
    const entry = byGateway.get(d.target.name) ?? { target: d.target, store, users: [] };
    entry.users.push(d);
    byGateway.set(d.target.name, entry);
  }
  for (const { target, store, users } of byGateway.values()) {
    let present: Set<string>;
    try {
      present = new Set(await store.listCertificates(target.orgId ?? ''));
    } catch (err) {
      ctx.runError(`list certificates on gateway ${target.name}`, err);
      continue;
    }
    for (const d of users) {
      const missing = (d.certificates ?? []).map((c) => c.id).filter((id) => !present.has(id));
      if (missing.length > 0) d.missingCertificates = missing;
      // a write uploads only what the store lacks (one it loses meanwhile is drift the next run sees)
      d.certificates = (d.certificates ?? []).filter((c) => !present.has(c.id));
    }
  }
}

/** Sets the observed state of an object its kind knows without a read (KindPass.observedWithoutRead); false: read it. */
function observedWithoutRead(pass: KindPass, d: Draft): boolean {
  const known = pass.observedWithoutRead?.(d);
  if (known === undefined) return false;
  d.observedBody = known.body;
  if (known.observed !== undefined) d.observed = known.observed;
  return true;
}

/**
 * The observed state of what the gateway reports as `body`: its managed hash given the body we
 * would send (hash.ts), or the hash of all of it when we would send none (nothing compares it
 * then). A record kept before managed hashes (`recorded`, a legacy hash) is compared as it was
 * made: when the whole body still hashes to it, the object is unchanged and its hash stays the
 * recorded one (the next write records a managed hash).
 */
export function observedState(id: string, body: JsonObject, sent?: JsonObject, recorded?: string): ObservedState {
  if (!sent) return { id, hash: hashOf(body) };
  if (recorded !== undefined && isLegacyHash(recorded) && hashOf(body) === recorded) return { id, hash: recorded };
  return { id, hash: managedHash(body, sent) };
}

/**
 * What later stages read of an observed body (finalize.ts statusId: the Dashboard's `_id`, a
 * kind's native id), so a run over many objects does not hold every echo until it ends.
 */
export function slimObserved(kind: ManagedKind, body: JsonObject): JsonObject {
  const out: JsonObject = {};
  if (body._id !== undefined) out._id = body._id;
  const native = kind.nativeIdField;
  if (native !== undefined && body[native] !== undefined) out[native] = body[native];
  return out;
}
