/**
 * What the developer portal's desired states are built from, read once per run and phase
 * (payload.ts builds them, purely): the APIDescriptions the catalogues name, the
 * SecurityPolicies the entries publish (with their records: a policy must be synced on the same
 * gateway, and its Dashboard `_id` is its status.pol_id), every PortalAPICatalogue and
 * PortalConfig of the watched namespaces (ownership of entries, one configuration per gateway,
 * deletions of descriptions held by the catalogues that list them) and the records of the
 * catalogues (what each owns on the Dashboard).
 *
 * One PortalRun per run (phases.ts): lists are read at most once; descriptions the description
 * phase looked at are taken from it, the others read with a GET each; policies come from the
 * run's policy list, except those the policy phase wrote in this run (their status.pol_id may be
 * new), which are read again. `prepare` (from view.ts, for each pass of a portal phase) reads
 * what the pass's objects need and decides their desired states; a read that fails marks the
 * objects that needed it (`readError`: nothing is decided on them, nothing deleted), a failed
 * catalogue list every catalogue of the pass and every held deletion of a description.
 * A portal kind whose gateway is a Tyk Gateway gets GatewayUnsupportedError (portalUnsupported)
 * as its read error, without a call to the gateway.
 */

import { mapLimit } from '../../engine/concurrency.js';
import { defaultId } from '../../engine/ids.js';
import { type ManagedKind, type ObjectRef, type PassObject, refString } from '../../engine/kind.js';
import { notServed } from '../../engine/load.js';
import type { RunContext } from '../../engine/run-context.js';
import type { GatewayTarget } from '../../gateway/targets.js';
import type { KubeObject } from '../../kube/types.js';
import { nonBlank } from '../../platform/guards.js';
import { SECURITY_POLICY } from '../security-policy/kind.js';
import { type NamespacedName, nsName } from '../shared/api-links.js';
import { API_DESCRIPTION, PORTAL_API_CATALOGUE, PORTAL_CONFIG } from './kinds.js';
import {
  catalogueDesired,
  configurationDesired,
  type DeclaredEntries,
  declaredEntries,
  descriptionDesired,
  mergedItem,
  type OtherCatalogue,
  olderFirst,
  ownedIds,
  type PolicyResolution,
  type PortalBuilt,
  type ResolvePolicy,
  refOf,
} from './payload.js';

/** What prepare reads of the load stage's objects, and marks unreadable (the engine's PassObject). */
export type PortalDraft = PassObject;

/** What a phase's load gets from the portal: desired states and, for descriptions, who holds them. */
export interface PortalLoad {
  prepare(drafts: PortalDraft[]): Promise<void>;
  /** the desired state prepare decided for a live object (undefined: none) */
  built(key: string): PortalBuilt | undefined;
  /** the live PortalAPICatalogues listing a description; null when they could not be listed */
  referencedBy(key: string): readonly NamespacedName[] | null | undefined;
}

type Read<T> = { ok: true; value: T } | { ok: false; error: unknown };

const key = (r: NamespacedName): string => nsName(r);
const objKey = (o: KubeObject): string => `${o.metadata.namespace ?? ''}/${o.metadata.name}`;

/** The descriptions a catalogue's apis[] names. */
function descriptionRefs(obj: KubeObject): NamespacedName[] {
  const items = Array.isArray(obj.spec?.apis) ? obj.spec.apis : [];
  return items.flatMap((i) => refOf((i as Record<string, unknown> | null)?.apiDescriptionRef, obj.metadata.namespace ?? '') ?? []);
}

export class PortalRun implements PortalLoad {
  private catalogueList?: Promise<Read<KubeObject[]>>;
  private configList?: Promise<Read<KubeObject[]>>;
  /** descriptions by "namespace/name": as the description phase found them, or read */
  private readonly descriptions = new Map<string, Read<KubeObject | null>>();
  private readonly policyReads = new Map<string, Promise<Read<KubeObject | null>>>();
  private readonly decided = new Map<string, PortalBuilt>();
  private readonly holders = new Map<string, readonly NamespacedName[] | null>();

  /**
   * @param policies the run's SecurityPolicy list (undefined: it failed; policies are then read one by one)
   * @param rewritten "namespace/name" of the policies the policy phase wrote in this run
   */
  constructor(
    private readonly ctx: RunContext,
    private readonly policies: readonly KubeObject[] | undefined,
    private readonly rewritten: ReadonlySet<string>,
  ) {}

  /** Descriptions the description phase looked at (as it found them): not read again. */
  seen(descriptions: readonly { ref: ObjectRef; obj: KubeObject | null | undefined }[]): void {
    for (const d of descriptions) if (d.obj !== undefined) this.descriptions.set(key(d.ref), { ok: true, value: d.obj });
  }

  /** Every PortalAPICatalogue of the watched namespaces; undefined when they could not be listed. */
  async catalogues(): Promise<KubeObject[] | undefined> {
    this.catalogueList ??= this.listAll(PORTAL_API_CATALOGUE);
    const r = await this.catalogueList;
    return r.ok ? r.value : undefined;
  }

  /**
   * The catalogues (live or not) that list one of `descriptions`, or publish one of `policies`
   * (inline, or through the description they list: read for that, once each), both "namespace/name".
   */
  async followers(descriptions: ReadonlySet<string>, policies: ReadonlySet<string>): Promise<NamespacedName[]> {
    if (descriptions.size === 0 && policies.size === 0) return [];
    const all = (await this.catalogues()) ?? [];
    if (policies.size > 0) await this.readDescriptions(all.flatMap(descriptionRefs));
    const follows = (c: KubeObject): boolean => {
      const ns = c.metadata.namespace ?? '';
      const items = Array.isArray(c.spec?.apis) ? (c.spec.apis as unknown[]) : [];
      return items.some((raw) => {
        const item = (raw ?? {}) as Record<string, unknown>;
        const desc = refOf(item.apiDescriptionRef, ns);
        if (desc !== undefined && descriptions.has(key(desc))) return true;
        const pol = refOf(mergedItem(item, (desc && this.descriptionNow(desc)) ?? undefined).policyRef, ns);
        return pol !== undefined && policies.has(key(pol));
      });
    };
    return all.filter(follows).map((c) => ({ namespace: c.metadata.namespace ?? '', name: c.metadata.name }));
  }

  built(k: string): PortalBuilt | undefined {
    return this.decided.get(k);
  }

  referencedBy(k: string): readonly NamespacedName[] | null | undefined {
    return this.holders.get(k);
  }

  async prepare(drafts: PortalDraft[]): Promise<void> {
    const live = drafts.filter((d): d is PortalDraft & { obj: KubeObject; target: GatewayTarget } => !!d.obj && !!d.target && d.readError === undefined);
    const building = live.filter((d) => !d.obj.metadata.deletionTimestamp);
    const descs = building.filter((d) => d.kind === API_DESCRIPTION);
    const cats = drafts.filter((d) => d.kind === PORTAL_API_CATALOGUE && d.readError === undefined && (d.obj || d.record));
    const confs = live.filter((d) => d.kind === PORTAL_CONFIG);

    // what the catalogues' entries are made of
    const needs = new Map<PortalDraft, { descriptions: NamespacedName[]; policies: NamespacedName[] }>();
    for (const d of building.filter((x) => x.kind === PORTAL_API_CATALOGUE)) needs.set(d, { descriptions: descriptionRefs(d.obj), policies: [] });
    await this.readDescriptions([...needs.values()].flatMap((n) => n.descriptions));
    for (const [d, n] of needs) {
      for (const r of n.descriptions) {
        const read = await this.descriptionRead(r);
        if (!read.ok) d.readError ??= read.error;
      }
      const items = Array.isArray(d.obj?.spec?.apis) ? (d.obj.spec.apis as unknown[]) : [];
      for (const raw of items) {
        const item = (raw ?? {}) as Record<string, unknown>;
        const descRef = refOf(item.apiDescriptionRef, d.ref.namespace);
        const desc = descRef ? await this.descriptionRead(descRef) : undefined;
        const merged = mergedItem(item, desc?.ok && desc.value ? desc.value : undefined);
        const pol = refOf(merged.policyRef, d.ref.namespace);
        if (pol) n.policies.push(pol);
      }
    }
    for (const d of descs) {
      const pol = refOf(d.obj.spec?.policyRef, d.ref.namespace);
      needs.set(d, { descriptions: [], policies: pol ? [pol] : [] });
    }
    const resolve = await this.policyResolver(needs);

    for (const d of live.filter((x) => x.kind === API_DESCRIPTION)) {
      if (d.readError !== undefined) continue;
      this.decided.set(
        d.key,
        descriptionDesired(d.obj, defaultId(d.ref.namespace, d.ref.name), (r) => resolve(r, d.target)),
      );
    }
    // held deletions of descriptions
    const deleting = live.filter((d) => d.kind === API_DESCRIPTION && d.obj.metadata.deletionTimestamp);
    if (deleting.length > 0) {
      const all = await this.catalogues();
      for (const d of deleting) {
        const holders = all?.filter((c) => !c.metadata.deletionTimestamp && descriptionRefs(c).some((r) => key(r) === key(d.ref)));
        this.holders.set(d.key, holders === undefined ? null : holders.map((c) => ({ namespace: c.metadata.namespace ?? '', name: c.metadata.name })));
      }
    }
    if (cats.length > 0) await this.decideCatalogues(cats, resolve);
    if (confs.length > 0) await this.decideConfigurations(confs);
  }

  // --- catalogues ----------------------------------------------------------------

  private async decideCatalogues(cats: PortalDraft[], resolve: (r: NamespacedName, t: GatewayTarget) => PolicyResolution): Promise<void> {
    await this.catalogues();
    const listed = (await this.catalogueList) as Read<KubeObject[]>;
    // who owns which entry is unknown: nothing is decided, nothing released or deleted
    if (!listed.ok) {
      for (const d of cats) d.readError ??= listed.error;
      return;
    }
    const all = listed.value;
    const inBatch = new Map(cats.map((d) => [key(d.ref), d]));
    const others = all.filter((c) => !inBatch.has(objKey(c)));
    const records = await this.ctx.deps.store.getRecords(others.map((c) => refString({ kind: PORTAL_API_CATALOGUE, namespace: c.metadata.namespace ?? '', name: c.metadata.name })));
    const targets = await mapLimit(others, this.ctx.settings.concurrency, async (c) => {
      const t = await this.ctx.resolver.forObject(c);
      return 'error' in t ? undefined : t.name;
    });
    // what each one owns (its record, on its gateway), declares (decided below for the batch) and where it goes
    interface Party {
      obj: KubeObject;
      gateway: string | undefined;
      owns: string[];
      declared?: DeclaredEntries;
    }
    const parties = new Map<string, Party>();
    others.forEach((c, i) => {
      const rec = records[i] ?? null;
      const gateway = targets[i];
      const owns = rec && (rec.gateway ?? 'default') === gateway ? ownedIds(rec.id) : [];
      parties.set(objKey(c), { obj: c, gateway, owns });
    });
    for (const d of cats) {
      if (!d.obj) continue;
      const gateway = d.target?.name;
      const rec = d.record;
      const owns = rec && d.previousTarget === undefined && (rec.gateway ?? 'default') === gateway ? ownedIds(rec.id) : [];
      const declared =
        d.target && !d.obj.metadata.deletionTimestamp
          ? declaredEntries(
              d.obj,
              (r) => this.descriptionNow(r),
              (r) => resolve(r, d.target as GatewayTarget),
            )
          : undefined;
      parties.set(key(d.ref), { obj: d.obj, gateway, owns, ...(declared ? { declared } : {}) });
    }
    const declares = (p: Party): string[] => (p.declared === undefined ? p.owns : p.declared.ok ? p.declared.entries.map((e) => String(e.policy_id)) : p.owns);
    for (const d of cats) {
      const me = parties.get(key(d.ref));
      if (!d.obj || !d.target || !me) continue;
      const mine = me.obj;
      const rivals: OtherCatalogue[] = [...parties.entries()]
        .filter(([k, p]) => k !== key(d.ref) && p.gateway === d.target?.name && !p.obj.metadata.deletionTimestamp)
        .map(([k, p]) => ({ key: k, before: olderFirst(p.obj, mine) < 0, declares: new Set(declares(p)), holds: new Set([...declares(p), ...p.owns]) }));
      const declared = me.declared ?? { ok: true, entries: [], aliases: [] };
      this.decided.set(d.key, catalogueDesired(d.obj, declared, rivals, me.owns, d.target.orgId));
    }
  }

  // --- configurations --------------------------------------------------------------

  private async decideConfigurations(confs: (PortalDraft & { obj: KubeObject; target: GatewayTarget })[]): Promise<void> {
    this.configList ??= this.listAll(PORTAL_CONFIG);
    const listed = await this.configList;
    if (!listed.ok) {
      for (const d of confs) d.readError ??= listed.error;
      return;
    }
    const inBatch = new Set(confs.map((d) => key(d.ref)));
    const everyone = [...listed.value.filter((c) => !inBatch.has(objKey(c))), ...confs.map((d) => d.obj)].filter((c) => !c.metadata.deletionTimestamp);
    const gateways = await mapLimit(everyone, this.ctx.settings.concurrency, async (c) => {
      const t = await this.ctx.resolver.forObject(c);
      return 'error' in t ? undefined : t.name;
    });
    for (const d of confs) {
      const owner = everyone.filter((c, i) => gateways[i] === d.target.name && olderFirst(c, d.obj) < 0).sort(olderFirst)[0];
      this.decided.set(d.key, configurationDesired(d.obj, owner ? objKey(owner) : undefined));
    }
  }

  // --- reads ---------------------------------------------------------------------

  private listAll(kind: ManagedKind): Promise<Read<KubeObject[]>> {
    return (async (): Promise<Read<KubeObject[]>> => {
      try {
        const namespaces = this.ctx.settings.namespaces ? [...this.ctx.settings.namespaces] : [undefined];
        const all: KubeObject[] = [];
        for (const ns of namespaces) all.push(...(await this.ctx.deps.kube.list(kind, ns)));
        return { ok: true, value: all };
      } catch (error) {
        if (notServed(kind, error)) return { ok: true, value: [] };
        this.ctx.runError(`list ${kind.plural}`, error);
        return { ok: false, error };
      }
    })();
  }

  private async readDescriptions(refs: readonly NamespacedName[]): Promise<void> {
    const distinct = [...new Map(refs.map((r) => [key(r), r])).values()];
    await mapLimit(distinct, this.ctx.settings.concurrency, (r) => this.descriptionRead(r));
  }

  /** One description, read once per run (an unwatched namespace's: as if it did not exist). */
  private async descriptionRead(r: NamespacedName): Promise<Read<KubeObject | null>> {
    const known = this.descriptions.get(key(r));
    if (known !== undefined) return known;
    const read = await this.getObject(API_DESCRIPTION, r);
    this.descriptions.set(key(r), read);
    return read;
  }

  /** A description already read (prepare reads every one it needs first); null when it was not found. */
  private descriptionNow(r: NamespacedName): KubeObject | null {
    const known = this.descriptions.get(key(r));
    return known?.ok ? known.value : null;
  }

  private async getObject(kind: ManagedKind, r: NamespacedName): Promise<Read<KubeObject | null>> {
    if (!this.ctx.watched(r.namespace)) return { ok: true, value: null };
    try {
      return { ok: true, value: await this.ctx.deps.kube.get(kind, r.namespace, r.name) };
    } catch (error) {
      return { ok: false, error };
    }
  }

  /**
   * How the drafts' policies resolve (see the header). A policy that could not be read marks the
   * drafts that need it.
   */
  private async policyResolver(needs: ReadonlyMap<PortalDraft, { policies: NamespacedName[] }>): Promise<(r: NamespacedName, target: GatewayTarget) => PolicyResolution> {
    const refs = new Map<string, NamespacedName>();
    for (const n of needs.values()) for (const r of n.policies) refs.set(key(r), r);
    const listed = new Map((this.policies ?? []).map((p) => [objKey(p), p]));
    await mapLimit([...refs.values()], this.ctx.settings.concurrency, async (r) => {
      if (this.policyReads.has(key(r))) return;
      const fromList = listed.get(key(r));
      const fresh = this.policies === undefined || this.rewritten.has(key(r)) || !fromList;
      this.policyReads.set(key(r), fresh ? this.getObject(SECURITY_POLICY, r) : Promise.resolve({ ok: true, value: fromList }));
    });
    const reads = new Map<string, Read<KubeObject | null>>();
    for (const [k] of refs) reads.set(k, await (this.policyReads.get(k) as Promise<Read<KubeObject | null>>));
    for (const [d, n] of needs) {
      for (const r of n.policies) {
        const read = reads.get(key(r));
        if (read && !read.ok) d.readError ??= read.error;
      }
    }
    const keys = [...refs.values()].map((r) => refString({ kind: SECURITY_POLICY, namespace: r.namespace, name: r.name }));
    const recs = await this.ctx.deps.store.getRecords(keys);
    const recordOf = new Map([...refs.keys()].map((k, i) => [k, recs[i] ?? null]));
    return (r, target) => {
      const read = reads.get(key(r));
      const obj = read?.ok ? read.value : null;
      if (!obj) return { ok: false, why: 'does not exist' };
      if (obj.metadata.deletionTimestamp) return { ok: false, why: 'is being deleted' };
      const rec = recordOf.get(key(r));
      const polId = nonBlank(obj.status?.pol_id);
      if (!rec || (rec.result !== 'synced' && rec.result !== 'diverged') || polId === undefined) return { ok: false, why: 'is not synced yet' };
      if ((rec.gateway ?? 'default') !== target.name) return { ok: false, why: `is on another gateway (${rec.gateway ?? 'default'})` };
      return { ok: true, id: polId, ownId: rec.id };
    };
  }
}

export type { ResolvePolicy };
