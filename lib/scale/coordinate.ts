/**
 * The coordinator of a full run (a tick, a resync of everything, a webhook's run over
 * everything: lib/triggers/schedule.ts asks it first): counts what the run would look at and,
 * when that is more than one invocation should carry (SHARD_SIZE), prepares the tick's shards
 * instead of running.
 *
 * 1. Count, cheaply: every kind a full run lists (the managed kinds, SubGraphs and SuperGraphs,
 *    Ingresses) in the watched namespaces, paged and as metadata only (ListOptions.metadataOnly),
 *    plus the keys of the records in the store, so a namespace whose resources are all gone
 *    (records left: deletions to confirm) has a shard too. An object and its record count once.
 *    A kind the API server does not serve counts nothing; a listing that fails makes the count
 *    incomplete, and the tick an ordinary full run (which reports the failure as it always does).
 * 2. Up to SHARD_SIZE objects: nothing more (the caller runs the ordinary full run).
 * 3. Else, under a new run id: partition the per-namespace counts (partition.ts) into the
 *    tick's shards (a namespace above SHARD_SIZE into ranges of the names counted); list each
 *    gateway once (the default one and every OperatorContext's; one listing per gateway kind
 *    the counted kinds use) and keep the snapshot of what it held (snapshot.ts)
 *    in the store with a ttl, each shard's objects in a value of its own; a gateway or kind that
 *    cannot be listed is left out (its shards list it themselves).
 * 4. The cluster-wide work a full run does once: the certificate sweep (certificates we uploaded
 *    that no record uses, on every gateway) is done here, once per tick, before any shard of the
 *    tick starts (as a full run's sweep, it runs after every run of the previous tick, and may
 *    meet webhook runs). Everything else is namespaced, so its shard does it: Ingresses, the
 *    SubGraphs and SuperGraphs, the portal kinds, orphans (every namespace with objects or
 *    records is in exactly one shard, or cut by name into ranges); what a shard reads across
 *    namespaces (every SecurityPolicy, the SuperGraphs, the catalogues) is read, never written.
 *
 * Throws only StoreUnavailableError (the snapshot cannot be kept, or the records not counted).
 */

import { collectCertificates } from '../engine/certificates.js';
import { mapLimit } from '../engine/concurrency.js';
import type { ManagedKind } from '../engine/kind.js';
import { RunContext } from '../engine/run-context.js';
import type { RunDeps } from '../engine/types.js';
import { isPortalGatewayKind } from '../gateway/portal.js';
import type { GatewayTarget } from '../gateway/targets.js';
import type { Gateway, GatewayObjectKind } from '../gateway/types.js';
import { OPERATOR_CONTEXT } from '../kube/kinds.js';
import type { ResourceKind } from '../kube/types.js';
import { StoreUnavailableError } from '../platform/errors.js';
import { partition } from './partition.js';
import { type Shard, type ShardPart, shardsOf } from './shards.js';
import { placeByDefaultId, SNAPSHOT_TTL_MS, SnapshotWriter } from './snapshot.js';

/** Every kind a full run lists, and so counts. */

export interface TickCount {
  /** distinct objects (resources and records) per watched namespace */
  readonly perNamespace: ReadonlyMap<string, number>;
  /** the names counted in a namespace (a name once per kind that has it), for cutting it into ranges */
  readonly namesOf: (namespace: string) => string[];
  readonly total: number;
  /** the gateway kinds of the managed kinds that have objects or records */
  readonly gatewayKinds: ReadonlySet<GatewayObjectKind>;
  /** every listing succeeded */
  readonly complete: boolean;
}

export type TickPlan =
  | { readonly sharded: false; readonly objects: number; readonly why: 'small' | 'count incomplete' }
  | {
      readonly sharded: true;
      readonly runId: string;
      readonly objects: number;
      readonly shards: readonly Shard[];
      /** the gateways snapshotted, and the objects they held */
      readonly snapshot: { readonly gateways: readonly string[]; readonly objects: number };
      /** what failed on the way (a gateway not listed, a sweep not done): the shards fall back */
      readonly errors: readonly { stage: string; code: string; message: string }[];
    };

/** Counts, and prepares the shards when there is more than `shardSize`. */
export async function planTick(deps: RunDeps, shardSize: number): Promise<TickPlan> {
  const ctx = new RunContext(deps, { trigger: 'schedule', scope: {} });
  const count = await countObjects(ctx);
  if (!count.complete) {
    ctx.log.warn({ objects: count.total }, 'could not count every kind: an ordinary full run instead of shards');
    return { sharded: false, objects: count.total, why: 'count incomplete' };
  }
  if (count.total <= shardSize) return { sharded: false, objects: count.total, why: 'small' };
  const parts = partition(count.perNamespace, shardSize, count.namesOf);
  const targets = await gatewayTargets(ctx);
  const snapshot = await takeSnapshot(ctx, targets, count.gatewayKinds, parts);
  await collectCertificates(
    ctx,
    [],
    targets.map((t) => t.name),
  );
  const shards = shardsOf(ctx.runId, parts);
  ctx.log.info({ objects: count.total, shards: shards.length, namespaces: count.perNamespace.size, snapshot }, 'full run sharded');
  return { sharded: true, runId: ctx.runId, objects: count.total, shards, snapshot, errors: ctx.errors };
}

/** The objects a full run would look at, per namespace (see the module's header, 1). */
export async function countObjects(ctx: RunContext): Promise<TickCount> {
  const keys = new Set<string>();
  const usedKinds = new Set<string>();
  let complete = true;
  const namespaces: (string | undefined)[] = ctx.settings.namespaces ? [...ctx.settings.namespaces] : [undefined];
  const countedKinds: readonly ResourceKind[] = [...ctx.kinds.managed, ...ctx.kinds.cluster];
  for (const kind of countedKinds) {
    for (const ns of namespaces) {
      try {
        for (const o of await ctx.deps.kube.list(kind, ns, { metadataOnly: true })) {
          keys.add(`${kind.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`);
          usedKinds.add(kind.kind);
        }
      } catch (err) {
        // a kind whose CRD is not installed has no objects
        if ((err as { status?: unknown } | undefined)?.status === 404) break;
        complete = false;
        ctx.runError(`count ${kind.plural}${ns ? ` in ${ns}` : ''}`, err);
      }
    }
  }
  const counted = new Set(countedKinds.map((k) => k.kind));
  for (const key of await ctx.deps.store.listRecordKeys('')) {
    const [kind, namespace, name] = key.split('/');
    if (kind === undefined || namespace === undefined || name === undefined || !counted.has(kind)) continue;
    keys.add(key);
    usedKinds.add(kind);
  }
  const perNamespace = new Map<string, number>();
  for (const key of keys) {
    const namespace = key.split('/')[1] as string;
    if (ctx.watched(namespace)) perNamespace.set(namespace, (perNamespace.get(namespace) ?? 0) + 1);
  }
  const namesOf = (namespace: string): string[] => {
    const names: string[] = [];
    for (const key of keys) {
      const [, ns, name] = key.split('/');
      if (ns === namespace && name !== undefined) names.push(name);
    }
    return names;
  };
  let total = 0;
  for (const n of perNamespace.values()) total += n;
  const gatewayKinds = new Set(ctx.kinds.managed.filter((k: ManagedKind) => usedKinds.has(k.kind)).map((k) => k.gatewayKind));
  return { perNamespace, namesOf, total, gatewayKinds, complete };
}

/** The default gateway and every OperatorContext's that resolves (one that does not is its objects' failure, in their shard). */
async function gatewayTargets(ctx: RunContext): Promise<GatewayTarget[]> {
  const targets: GatewayTarget[] = [ctx.deps.targets.defaultTarget];
  const namespaces: (string | undefined)[] = ctx.settings.namespaces ? [...ctx.settings.namespaces] : [undefined];
  for (const ns of namespaces) {
    let contexts: { namespace: string; name: string }[];
    try {
      contexts = (await ctx.deps.kube.list(OPERATOR_CONTEXT, ns, { metadataOnly: true })).map((o) => ({ namespace: o.metadata.namespace ?? '', name: o.metadata.name }));
    } catch (err) {
      // not served (no CRD), or not allowed (an RBAC without list): the default gateway's snapshot only; shards list the others
      const status = (err as { status?: unknown } | undefined)?.status;
      if (status === 404 || status === 403) ctx.log.info({ status }, 'OperatorContexts not listed: only the default gateway is in the snapshot');
      else ctx.runError(`list operatorcontexts${ns ? ` in ${ns}` : ''}`, err);
      continue;
    }
    for (const c of contexts) {
      const resolved = await ctx.resolver.byName(`context:${c.namespace}/${c.name}`);
      if ('error' in resolved) ctx.log.info({ context: `${c.namespace}/${c.name}`, err: resolved.error }, 'OperatorContext not usable: not in the snapshot');
      else targets.push(resolved);
    }
  }
  return targets;
}

/**
 * Lists each gateway once per kind and keeps what it held, per target name (targets sharing a
 * gateway client share its listings). Portal kinds are listed on Dashboards only; an
 * APIDescription has nothing to list. Each object is reduced to its snapshot entry as it is read.
 */
async function takeSnapshot(ctx: RunContext, targets: readonly GatewayTarget[], kinds: ReadonlySet<GatewayObjectKind>, parts: readonly ShardPart[]): Promise<{ gateways: string[]; objects: number }> {
  const takenAt = new Date(ctx.deps.clock.now()).toISOString();
  const place = placeByDefaultId(parts);
  const byGateway = new Map<Gateway, GatewayTarget[]>();
  for (const t of targets) byGateway.set(t.gateway, [...(byGateway.get(t.gateway) ?? []), t]);
  const done: string[] = [];
  let objects = 0;
  for (const [gateway, sharing] of byGateway) {
    const mode = sharing[0]?.mode;
    const wanted = [...kinds].filter((k) => k !== 'portal-description' && (mode === 'pro' || !isPortalGatewayKind(k)));
    const writer = new SnapshotWriter(takenAt, ctx.kinds.managed, parts.length, place);
    for (const kind of wanted) {
      const listing = writer.listing(kind);
      try {
        // the portal's lists answer by id (portal.ts), the others are read item by item
        if (isPortalGatewayKind(kind)) for (const [id, body] of await gateway.list(kind)) listing.add(id, body);
        else await gateway.list(kind, (id, item) => listing.add(id, item.body(), item.digest));
        listing.keep();
      } catch (err) {
        ctx.runError(`snapshot ${kind} of gateway ${sharing.map((t) => t.name).join(', ')}`, err);
      }
    }
    if (writer.kindsAdded.length === 0) continue;
    for (const target of sharing) {
      try {
        // a shard needs its own value and the rest's: one that is missing makes it list the gateway itself
        await mapLimit(writer.texts(ctx.runId, target.name), ctx.settings.concurrency, ({ key, text }) => ctx.deps.store.putBlob(key, text, SNAPSHOT_TTL_MS));
      } catch (err) {
        if (err instanceof StoreUnavailableError) throw err;
        ctx.runError(`keep the snapshot of gateway ${target.name}`, err);
        continue;
      }
      done.push(target.name);
      objects += writer.objects;
    }
  }
  return { gateways: done, objects };
}
