/**
 * The Ingress phase's reads: which Ingresses a run looks at, and for each what decideIngress
 * needs (the Ingress, its template, the ApiDefinitions labelled for it, its record).
 *
 * - Ingresses: listed per watched namespace for a full or namespace run; read one by one when
 *   named (an event, /resync), or when an event names an ApiDefinition an Ingress's record uses
 *   (its template, or one it generated: the store's uses index). A record or a generated
 *   ApiDefinition whose Ingress a complete listing lacks is confirmed gone with a GET first.
 * - ApiDefinitions labelled `tyk.io/ingress`: one labelSelector LIST per listed namespace (or
 *   cluster-wide), only when some Ingress there is ours; per named Ingress, a LIST of its own.
 * - Templates: one GET per distinct template a live Ingress of our class names.
 * Under the Ingress's lock (`readEntry`) the same for one Ingress, plus a GET of each name its
 * plan would create, so a name something else holds is seen before a POST.
 *
 * Guarantees: a failed read marks the entries it concerns (`readError`): nothing is decided on
 * them. A shard run keeps the shard's Ingresses only. Ingresses of other classes that were never ours produce no entry (or an ignored one).
 */

import { mapLimit } from '../../engine/concurrency.js';
import type { RunContext } from '../../engine/run-context.js';
import type { RunScope } from '../../engine/types.js';
import type { KubeObject } from '../../kube/types.js';
import type { SyncRecord } from '../../store/types.js';
import { API_DEFINITION } from '../api-definition/kind.js';
import { groupByLabel } from '../shared/generated.js';
import { type Got, objectKeys, readOr } from '../shared/object-keys.js';
import { INGRESS_LABEL, type IngressSettings, isOurClass, templateNameOf } from './apis.js';
import { decideIngress, type IngressState } from './decide.js';
import { INGRESS } from './kind.js';

const KEYS = objectKeys(INGRESS.kind);

export interface IngressEntry {
  readonly namespace: string;
  readonly name: string;
  /** "Ingress/<namespace>/<name>": its record and lock */
  readonly key: string;
  readonly record: SyncRecord | null;
  readonly state: IngressState;
  /** reading it, its template or its ApiDefinitions failed: nothing is decided */
  readonly readError?: unknown;
}

export interface IngressLoad {
  /** namespace → its Ingresses (every class), for each namespace listed completely; '*' when all were listed in one */
  readonly listed: ReadonlyMap<string, readonly KubeObject[]>;
  readonly entries: readonly IngressEntry[];
}

/** A live Ingress of our class, or one we took on (finalizer), or one we have a record of: worth reading further. */
function relevant(obj: KubeObject | null, record: SyncRecord | null, settings: IngressSettings): boolean {
  if (record) return true;
  return !!obj && (isOurClass(obj, settings.className) || (obj.metadata.finalizers ?? []).includes(INGRESS.finalizer));
}

export async function loadIngresses(ctx: RunContext, scope: RunScope, settings: IngressSettings): Promise<IngressLoad> {
  const all = scope.all === true;
  const namespaces: (string | undefined)[] = all ? (ctx.settings.namespaces ? [...ctx.settings.namespaces] : [undefined]) : [...new Set(scope.namespaces ?? [])].filter((ns) => ctx.watched(ns));
  const listed = new Map<string, KubeObject[]>();
  const found = new Map<string, Got>();
  for (const ns of namespaces) {
    try {
      const items = await ctx.deps.kube.list(INGRESS, ns);
      listed.set(ns ?? '*', items);
      for (const o of items) found.set(KEYS.of(o.metadata.namespace ?? '', o.metadata.name), { obj: o });
    } catch (err) {
      ctx.runError(`list ingresses${ns ? ` in ${ns}` : ''}`, err);
    }
  }
  const covered = (ns: string) => listed.has('*') || listed.has(ns);
  // named: by the scope, and by the records that use an ApiDefinition the scope names (a template, a generated one)
  const named = new Set((scope.cluster ?? []).filter((r) => r.kind.kind === INGRESS.kind).map((r) => KEYS.of(r.namespace, r.name)));
  const apiUses = (scope.refs ?? []).filter((r) => r.kind.kind === API_DEFINITION.kind).map((r) => `${API_DEFINITION.kind}/${r.namespace}/${r.name}`);
  if (apiUses.length > 0) for (const users of await ctx.deps.store.recordsUsing(apiUses)) for (const k of users) if (k.startsWith(KEYS.prefix)) named.add(k);
  // records of listed namespaces: one the listing lacks is confirmed gone with a GET
  const recorded = new Map<string, string[]>();
  for (const ns of namespaces) {
    if (!listed.has(ns ?? '*')) continue;
    const keys = await ctx.recordKeys(ns === undefined ? KEYS.prefix : `${KEYS.prefix}${ns}/`);
    recorded.set(ns ?? '*', keys);
    for (const k of keys) if (!found.has(k)) named.add(k);
  }
  await readNamed(
    ctx,
    [...named].flatMap((k) => {
      const r = KEYS.split(k);
      return r && ctx.watched(r.namespace) && !found.has(k) ? [r] : [];
    }),
    found,
  );

  // ApiDefinitions labelled for Ingresses, in bulk where Ingresses were listed (only where one is ours)
  const generated = new Map<string, Map<string, KubeObject>>();
  const failedNs = new Map<string, unknown>();
  for (const ns of namespaces) {
    if (!listed.has(ns ?? '*')) continue;
    const mine = [...found.entries()].some(([k, g]) => (ns === undefined || KEYS.split(k)?.namespace === ns) && 'obj' in g && relevant(g.obj, null, settings));
    if (!mine && (recorded.get(ns ?? '*') ?? []).length === 0) continue;
    try {
      const byOwner = groupByLabel(await ctx.deps.kube.list(API_DEFINITION, ns, { labelSelector: INGRESS_LABEL }), INGRESS_LABEL);
      for (const [k, m] of byOwner) generated.set(k, m);
      // generated for an Ingress the listing lacks: its Ingress is confirmed gone first
      const lost = [...byOwner.keys()].map((k) => ({ namespace: k.slice(0, k.indexOf('/')), name: k.slice(k.indexOf('/') + 1) }));
      await readNamed(
        ctx,
        lost.filter((r) => !found.has(KEYS.of(r.namespace, r.name)) && ctx.watched(r.namespace)),
        found,
      );
    } catch (err) {
      ctx.runError(`list apidefinitions labelled ${INGRESS_LABEL}${ns ? ` in ${ns}` : ''}`, err);
      failedNs.set(ns ?? '*', err);
    }
  }
  // a shard run decides its own Ingresses only (a range: its names of the namespace)
  for (const k of [...found.keys()]) {
    const r = KEYS.split(k);
    if (r && !ctx.owns(r.namespace, r.name)) found.delete(k);
  }
  const keys = [...found.keys()];
  const stored = await ctx.deps.store.getRecords(keys);
  const records = new Map(keys.map((k, i) => [k, stored[i] ?? null]));
  const templates = new Map<string, Promise<Got>>();
  const entries: IngressEntry[] = [];
  await mapLimit([...found.entries()], ctx.settings.concurrency, async ([key, got]) => {
    const { namespace, name } = KEYS.split(key) as { namespace: string; name: string };
    const record = records.get(key) ?? null;
    const base = { namespace, name, key, record };
    const empty: IngressState = { namespace, name, ingress: null, template: undefined, current: new Map(), memory: record?.generated ?? {}, managed: record !== null };
    if ('error' in got) {
      entries.push({ ...base, state: empty, readError: got.error });
      return;
    }
    const bulk = covered(namespace) ? generated.get(`${namespace}/${name}`) : undefined;
    if (!relevant(got.obj, record, settings) && bulk === undefined) return;
    const bulkError = covered(namespace) ? (failedNs.get(namespace) ?? failedNs.get('*')) : undefined;
    if (bulkError !== undefined) {
      entries.push({ ...base, state: { ...empty, ingress: got.obj }, readError: bulkError });
      return;
    }
    const current = covered(namespace) ? (bulk ?? new Map<string, KubeObject>()) : undefined;
    entries.push(await complete(ctx, { ...base, state: { ...empty, ingress: got.obj } }, settings, current, templates));
  });
  entries.sort((a, b) => a.key.localeCompare(b.key));
  return { listed, entries };
}

/** GETs Ingresses one by one into `found` (a 404 is null). */
async function readNamed(ctx: RunContext, refs: readonly { namespace: string; name: string }[], found: Map<string, Got>): Promise<void> {
  const results = await mapLimit(refs, ctx.settings.concurrency, (r) => readOr(() => ctx.deps.kube.get(INGRESS, r.namespace, r.name)));
  refs.forEach((r, i) => found.set(KEYS.of(r.namespace, r.name), results[i] as Got));
}

/**
 * Fills in an entry's template and ApiDefinitions (`current`: already listed in bulk; else one
 * LIST of its own); with `probe`, also what is at each name its plan would create.
 */
async function complete(
  ctx: RunContext,
  e: IngressEntry,
  settings: IngressSettings,
  current: ReadonlyMap<string, KubeObject> | undefined,
  templates: Map<string, Promise<Got>> = new Map(),
  probe = false,
): Promise<IngressEntry> {
  const { namespace, name } = e;
  const ingress = e.state.ingress;
  let byName: Map<string, KubeObject | null>;
  try {
    byName = new Map(current ?? (await ctx.deps.kube.list(API_DEFINITION, namespace, { labelSelector: `${INGRESS_LABEL}=${name}` })).map((o) => [o.metadata.name, o]));
  } catch (err) {
    return { ...e, readError: err };
  }
  let template: KubeObject | null | undefined;
  const templateName = ingress && !ingress.metadata.deletionTimestamp && isOurClass(ingress, settings.className) ? templateNameOf(ingress) : undefined;
  if (templateName !== undefined) {
    // one GET per template and run, however many Ingresses name it
    const cacheKey = `${namespace}/${templateName}`;
    const pending = templates.get(cacheKey) ?? readOr(() => ctx.deps.kube.get(API_DEFINITION, namespace, templateName));
    templates.set(cacheKey, pending);
    const got = await pending;
    if ('error' in got) return { ...e, state: { ...e.state, current: byName }, readError: got.error };
    template = got.obj;
  }
  let state: IngressState = { ...e.state, template, current: byName };
  if (probe) {
    const d = decideIngress(state, settings);
    const creates = d.what === 'upsert' ? d.steps.filter((s) => s.op === 'create').map((s) => s.name) : [];
    const seen = await mapLimit(creates, ctx.settings.concurrency, (n) => readOr(() => ctx.deps.kube.get(API_DEFINITION, namespace, n)));
    const failure = seen.find((g): g is { error: unknown } => 'error' in g);
    if (failure) return { ...e, state, readError: failure.error };
    creates.forEach((n, i) => byName.set(n, (seen[i] as { obj: KubeObject | null }).obj));
    state = { ...state, current: byName };
  }
  return { ...e, state };
}

/** Under the lock: the Ingress read again, with its template, its ApiDefinitions and the names its plan would create. */
export async function readEntry(ctx: RunContext, e: IngressEntry, settings: IngressSettings): Promise<IngressEntry> {
  const got = await readOr(() => ctx.deps.kube.get(INGRESS, e.namespace, e.name));
  if ('error' in got) return { ...e, readError: got.error };
  const fresh: IngressEntry = { namespace: e.namespace, name: e.name, key: e.key, record: e.record, state: { ...e.state, ingress: got.obj, template: undefined, current: new Map() } };
  return complete(ctx, fresh, settings, undefined, new Map(), true);
}

/** Whether `obj` is a live Ingress of our class naming `template`. */
export function namesTemplate(obj: KubeObject, template: string, settings: IngressSettings): boolean {
  return !obj.metadata.deletionTimestamp && isOurClass(obj, settings.className) && templateNameOf(obj) === template;
}
