/**
 * The load stage of a run, for one kind: desired state from the API server, the records, the
 * gateway each object goes to, what we would send, and the observed state from each gateway.
 *
 * Guarantees: a failed read marks the affected items with `readError` (or the run with an
 * error) and never turns into "absent"; a record whose resource a complete listing lacks is
 * confirmed gone by a GET 404 before it becomes a deletion candidate; gateway state is read
 * per gateway, with one GET per object for a few and one LIST for many.
 */
import type { GatewayTarget } from '../gateway/targets.js';
import type { JsonObject } from '../gateway/types.js';
import type { KubeObject } from '../kube/types.js';
import type { SyncRecord } from '../store/types.js';
import { apiDefinitionPayload } from './api-payload.js';
import { mapLimit } from './concurrency.js';
import { hashOf } from './hash.js';
import { defaultId, gatewayIdFor } from './ids.js';
import { API_DEFINITION, type ManagedKind, type ObjectRef, refString, SECURITY_POLICY } from '../kinds.js';
import type { NamespacedName } from './links.js';
import { plan } from './plan.js';
import { type ApiResolution, securityPolicyPayload } from './policy-payload.js';
import type { Item, RunContext } from './run-context.js';
import type { RunScope } from './types.js';

export function newItem(kind: ManagedKind, ref: ObjectRef, obj?: KubeObject | null): Item {
  return { kind, ref, key: refString(ref), ...(obj !== undefined ? { obj } : {}) };
}

/** Desired objects of `kind` in `scope`; `complete` when every listing asked for succeeded. */
export async function loadDesired(ctx: RunContext, kind: ManagedKind, scope: RunScope): Promise<{ items: Item[]; complete: boolean }> {
  const all = scope.all === true;
  const namespaces: (string | undefined)[] = all
    ? ctx.settings.namespaces
      ? [...ctx.settings.namespaces]
      : [undefined]
    : [...new Set(scope.namespaces ?? [])].filter((ns) => ctx.watched(ns));
  let complete = true;
  const items: Item[] = [];
  for (const ns of namespaces) {
    try {
      for (const obj of await ctx.deps.kube.list(kind, ns)) {
        items.push(newItem(kind, { kind, namespace: obj.metadata.namespace ?? '', name: obj.metadata.name }, obj));
      }
    } catch (err) {
      complete = false;
      ctx.runError(`list ${kind.plural}${ns ? ` in ${ns}` : ''}`, err);
    }
  }
  if (all) return { items, complete };
  const listed = new Set(namespaces);
  const single = dedupe((scope.refs ?? []).filter((r) => r.kind.kind === kind.kind && !listed.has(r.namespace))).map((ref) => newItem(kind, ref));
  await mapLimit(single, ctx.settings.concurrency, async (item) => {
    if (!ctx.watched(item.ref.namespace)) return;
    try {
      item.obj = await ctx.deps.kube.get(kind, item.ref.namespace, item.ref.name);
    } catch (err) {
      item.readError = err;
    }
  });
  return { items: [...items, ...single], complete };
}

function dedupe(refs: readonly ObjectRef[]): ObjectRef[] {
  const seen = new Map<string, ObjectRef>();
  for (const r of refs) seen.set(refString(r), r);
  return [...seen.values()];
}

/**
 * Records whose resource the (complete) listing did not return. Each is confirmed with a GET:
 * only a 404 makes it a deletion candidate; an object created since the list is kept.
 */
export async function loadOrphans(ctx: RunContext, kind: ManagedKind, scope: RunScope, listed: Item[]): Promise<Item[]> {
  const base = `${kind.kind}/`;
  const prefixes = scope.all ? [base] : [...new Set(scope.namespaces ?? [])].filter((ns) => ctx.watched(ns)).map((ns) => `${base}${ns}/`);
  const known = new Set(listed.map((i) => i.key));
  const orphans: Item[] = [];
  for (const prefix of prefixes) {
    for (const key of await ctx.deps.store.listRecordKeys(prefix)) {
      if (known.has(key)) continue;
      const [, namespace, name] = key.split('/');
      if (namespace === undefined || name === undefined || !ctx.watched(namespace)) continue;
      orphans.push(newItem(kind, { kind, namespace, name }));
    }
  }
  await mapLimit(orphans, ctx.settings.concurrency, async (item) => {
    try {
      item.obj = await ctx.deps.kube.get(kind, item.ref.namespace, item.ref.name);
    } catch (err) {
      item.readError = err;
    }
  });
  return orphans;
}

export async function loadRecords(ctx: RunContext, items: Item[]): Promise<void> {
  if (items.length === 0) return;
  const records = await ctx.deps.store.getRecords(items.map((i) => i.key));
  items.forEach((item, i) => {
    item.record = records[i] ?? null;
  });
}

/**
 * Where each object goes: its contextRef's gateway (or the default); for a vanished object,
 * the gateway its record names. A contextRef that changed since the last sync leaves the old
 * gateway in `previousTarget`.
 */
export async function loadTargets(ctx: RunContext, items: Item[]): Promise<void> {
  await mapLimit(items, ctx.settings.concurrency, async (item) => {
    item.target = undefined;
    item.targetError = undefined;
    item.previousTarget = undefined;
    if (item.readError !== undefined) return;
    if (!item.obj && !item.record) return;
    const resolution = item.obj ? await ctx.resolver.forObject(item.obj) : await ctx.resolver.byName(item.record?.gateway);
    if ('error' in resolution) {
      item.targetError = resolution.error;
      return;
    }
    item.target = resolution;
    const recorded = item.record?.gateway ?? 'default';
    if (item.obj && item.record && recorded !== resolution.name && wasWritten(item.record)) item.previousTarget = recorded;
  });
}

/** The record says the object reached its gateway at some point (so a move must clean up there). */
function wasWritten(record: SyncRecord): boolean {
  return record.id !== '' && (record.observedHash !== '' || record.result === 'pending');
}

/** The id the object should have on its gateway (kind and mode aware). */
function desiredId(item: Item, obj: KubeObject): string {
  // On the Dashboard, status.pol_id holds the Dashboard's own _id; our policy id is spec.id or the default.
  if (item.kind === SECURITY_POLICY && item.target?.mode === 'pro') {
    const pinned = obj.spec?.id;
    return typeof pinned === 'string' && pinned.trim() !== '' ? pinned : defaultId(obj.metadata.namespace ?? '', obj.metadata.name);
  }
  return gatewayIdFor(item.kind, obj);
}

/**
 * What we would send, and the DesiredState plan reads. Policies resolve their ApiDefinition
 * references through `resolveApi`; an unresolved one makes the policy wait.
 */
export function computeDesired(
  ctx: RunContext,
  item: Item,
  resolveApi: (ref: NamespacedName, target: GatewayTarget) => ApiResolution,
  policies: readonly KubeObject[] = [],
): void {
  item.desired = undefined;
  item.body = undefined;
  item.links = undefined;
  const obj = item.obj;
  if (!obj || !item.target) return;
  const id = desiredId(item, obj);
  const orgId = item.target.orgId;
  const target = item.target;
  let body: JsonObject | undefined;
  let invalid: string | undefined;
  let waiting: string | undefined;
  if (item.kind === API_DEFINITION) {
    const policyIdOf = (namespace: string, name: string) => policyId(policies, namespace, name, target.mode);
    const payload = apiDefinitionPayload(obj, id, orgId, policyIdOf);
    if (payload.ok) body = payload.body;
    else invalid = payload.reason;
  } else {
    const payload = securityPolicyPayload(obj, id, orgId, (ref) => resolveApi(ref, target));
    if ('waiting' in payload) {
      waiting = payload.waiting;
      item.links = payload.links;
    } else if (payload.ok) {
      body = payload.body;
      item.links = payload.links;
    } else invalid = payload.reason;
  }
  item.body = body;
  item.desired = {
    id,
    hash: body ? hashOf(body) : hashOf(obj.spec ?? null),
    generation: obj.metadata.generation ?? 0,
    deleting: obj.metadata.deletionTimestamp !== undefined && obj.metadata.deletionTimestamp !== null,
    hasFinalizer: (obj.metadata.finalizers ?? []).includes(item.kind.finalizer),
    ...(invalid !== undefined ? { invalid } : {}),
    ...(waiting !== undefined ? { waiting } : {}),
  };
}

/** A SecurityPolicy's gateway id, as an ApiDefinition's jwt_default_policies needs it. */
function policyId(policies: readonly KubeObject[], namespace: string, name: string, mode: GatewayTarget['mode']): string {
  const p = policies.find((x) => x.metadata.namespace === namespace && x.metadata.name === name);
  const str = (v: unknown) => (typeof v === 'string' && v.trim() !== '' ? v : undefined);
  const pinned = str(p?.spec?.id);
  const recorded = str(p?.status?.pol_id);
  // the Dashboard knows policies by its own _id (status.pol_id); the Gateway by our id
  return (mode === 'pro' ? (recorded ?? pinned) : (pinned ?? recorded)) ?? defaultId(namespace, name);
}

/** The id whose gateway object matters for this item. */
export function targetId(item: Item): string | undefined {
  return item.desired?.id ?? item.record?.id ?? undefined;
}

/**
 * Reads the gateway objects of `items`, per gateway: one GET each for a few, one LIST for
 * many (or when `preferList`). A failed read marks the affected items with readError.
 */
export async function loadObserved(ctx: RunContext, items: Item[], preferList = false): Promise<void> {
  const wanted = items.filter((i) => i.readError === undefined && i.target && targetId(i) !== undefined && (i.obj || i.record));
  const groups = new Map<GatewayTarget['gateway'], Item[]>();
  for (const item of wanted) {
    const gw = item.target!.gateway;
    groups.set(gw, [...(groups.get(gw) ?? []), item]);
  }
  for (const [gw, group] of groups) {
    const byKind = new Map<ManagedKind, Item[]>();
    for (const item of group) byKind.set(item.kind, [...(byKind.get(item.kind) ?? []), item]);
    for (const [kind, list] of byKind) {
      if (preferList || list.length > ctx.settings.getThreshold) {
        try {
          const all = await gw.list(kind.gatewayKind);
          for (const item of list) setObserved(item, all.get(targetId(item) as string) ?? null);
        } catch (err) {
          ctx.runError(`list ${kind.gatewayKind === 'policy' ? 'policies' : 'APIs'} on gateway ${list[0]!.target!.name}`, err);
          for (const item of list) item.readError = err;
        }
        continue;
      }
      await mapLimit(list, ctx.settings.concurrency, async (item) => {
        try {
          setObserved(item, await gw.get(kind.gatewayKind, targetId(item) as string));
        } catch (err) {
          item.readError = err;
        }
      });
    }
  }
}

function setObserved(item: Item, body: JsonObject | null): void {
  item.observedBody = body;
  item.observed = body ? { id: targetId(item) as string, hash: hashOf(body) } : undefined;
}

/** The plan for an item, from what load found. */
export function planItem(ctx: RunContext, item: Item): void {
  const id = targetId(item) ?? '';
  if (item.readError !== undefined || (item.obj === undefined && !ctx.watched(item.ref.namespace))) {
    item.plan = { action: 'NOOP', reason: 'not managed', id };
    return;
  }
  if (item.targetError !== undefined) {
    item.plan = { action: 'NOOP', reason: 'not managed', id };
    return;
  }
  if (item.obj?.metadata.labels?.template === 'true' && !item.record) {
    // Tyk Operator's ingress templates are blueprints, never APIs of their own
    item.plan = { action: 'NOOP', reason: 'template', id };
    return;
  }
  // A record from another gateway says nothing about this one: plan as new here, retire there.
  const record = item.previousTarget !== undefined ? undefined : (item.record ?? undefined);
  item.plan = plan(item.desired, item.observed, record);
  if (item.previousTarget !== undefined && item.plan.action !== 'NOOP' && item.plan.action !== 'WAIT' && item.plan.action !== 'DELETE') {
    item.plan = { ...item.plan, reason: 'moved to another gateway' };
  }
  if (item.desired?.waiting !== undefined && item.plan.action === 'WAIT') item.waitReason = item.desired.waiting;
}
