/**
 * The HTTPRoute phase's reads: which routes a run looks at, and for each what decideRoute needs
 * (the route, the run's Gateway API world, its backend Services, the ApiDefinitions labelled
 * for it, its record).
 *
 * - Routes: listed per watched namespace for a full or namespace run (not at all while no
 *   GatewayClass is ours: then only the routes our records name are read); read one by one when
 *   named (an event, /resync). A record whose route a complete listing lacks is confirmed gone
 *   with a GET first. A shard run keeps the shard's routes only.
 * - The world (world.ts): once per run; when it cannot be read, every route is unreadable and
 *   nothing is decided (so nothing generated is deleted because a read failed).
 * - Backends: a Service in another namespace is read only when a ReferenceGrant there opens it
 *   (CROSS_NAMESPACE_REFS); each Service is read once per run.
 * - ApiDefinitions labelled `tyk.io/httproute`: one LIST per namespace with a relevant route
 *   (or one for a named route). Under the lock (`readEntry`): the same for one route, fresh,
 *   plus a GET of each name its plan would create.
 *
 * Guarantees: a failed read marks the entries it concerns (`readError`).
 */
import { mapLimit } from '../../engine/concurrency.js';
import type { RunContext } from '../../engine/run-context.js';
import type { RunScope } from '../../engine/types.js';
import { SERVICE } from '../../kube/kinds.js';
import type { KubeObject } from '../../kube/types.js';
import { isObject } from '../../platform/guards.js';
import type { SyncRecord } from '../../store/types.js';
import { API_DEFINITION } from '../api-definition/kind.js';
import { groupByLabel } from '../shared/generated.js';
import { type Got, objectKeys, readOr } from '../shared/object-keys.js';
import { decideRoute, type RouteState } from './decide.js';
import { HTTP_ROUTE, ROUTE_LABEL } from './kinds.js';
import { type BackendFacts, backendServicesOf } from './translate.js';
import { type GatewayWorld, worldOf } from './world.js';

const KEYS = objectKeys(HTTP_ROUTE.kind);

export interface RouteEntry {
  readonly namespace: string;
  readonly name: string;
  /** "HTTPRoute/<namespace>/<name>": its record and lock */
  readonly key: string;
  readonly record: SyncRecord | null;
  readonly state: RouteState;
  readonly readError?: unknown;
}

type Ports = readonly { readonly port: number; readonly name?: string }[] | null;

const SERVICES = Symbol('httproute backends');

const EMPTY_WORLD: GatewayWorld = { classes: new Map(), gateways: new Map(), namespaceLabels: () => undefined, invalidClasses: new Map() };
const NO_BACKENDS: BackendFacts = { services: new Map(), permitted: () => false };

/** Whether a parentRef of `route` names a Gateway of ours. */
function namesOurGateway(route: KubeObject, world: GatewayWorld): boolean {
  const refs = Array.isArray(route.spec?.parentRefs) ? route.spec.parentRefs.filter(isObject) : [];
  return refs.some((r) => {
    const namespace = typeof r.namespace === 'string' ? r.namespace : (route.metadata.namespace ?? '');
    return world.gateways.get(`${namespace}/${String(r.name)}`)?.ours === true;
  });
}

function relevant(obj: KubeObject | null, record: SyncRecord | null, world: GatewayWorld): boolean {
  if (record) return true;
  return !!obj && ((obj.metadata.finalizers ?? []).includes(HTTP_ROUTE.finalizer) || namesOurGateway(obj, world));
}

export async function loadRoutes(ctx: RunContext, scope: RunScope): Promise<readonly RouteEntry[]> {
  const all = scope.all === true;
  const namespaces: (string | undefined)[] = all ? (ctx.settings.namespaces ? [...ctx.settings.namespaces] : [undefined]) : [...new Set(scope.namespaces ?? [])].filter((ns) => ctx.watched(ns));
  const named = new Set((scope.cluster ?? []).filter((r) => r.kind.kind === HTTP_ROUTE.kind).map((r) => KEYS.of(r.namespace, r.name)));
  if (namespaces.length === 0 && named.size === 0) return [];
  const read = await worldOf(ctx);
  // without a class of ours, only routes we made something for are looked at (their records)
  const idle = 'world' in read && read.world.classes.size === 0;
  const found = new Map<string, Got>();
  const listed = new Set<string>();
  for (const ns of idle ? [] : namespaces) {
    try {
      for (const o of await ctx.deps.kube.list(HTTP_ROUTE, ns)) found.set(KEYS.of(o.metadata.namespace ?? '', o.metadata.name), { obj: o });
      listed.add(ns ?? '*');
    } catch (err) {
      // no HTTPRoute CRD: no routes (a record of one is then confirmed gone by a GET below, which fails as well)
      if ((err as { status?: unknown } | undefined)?.status === 404) listed.add(ns ?? '*');
      else ctx.runError(`list httproutes${ns ? ` in ${ns}` : ''}`, err);
    }
  }
  for (const ns of namespaces) {
    if (!idle && !listed.has(ns ?? '*')) continue;
    for (const k of await ctx.recordKeys(ns === undefined ? KEYS.prefix : `${KEYS.prefix}${ns}/`)) if (!found.has(k)) named.add(k);
  }
  const toGet = [...named].flatMap((k) => {
    const r = KEYS.split(k);
    return r && ctx.watched(r.namespace) && !found.has(k) ? [r] : [];
  });
  const got = await mapLimit(toGet, ctx.settings.concurrency, (r) => readOr(() => ctx.deps.kube.get(HTTP_ROUTE, r.namespace, r.name)));
  toGet.forEach((r, i) => found.set(KEYS.of(r.namespace, r.name), got[i] as Got));
  for (const k of [...found.keys()]) {
    const r = KEYS.split(k);
    if (r && !ctx.owns(r.namespace, r.name)) found.delete(k);
  }
  const keys = [...found.keys()];
  const stored = await ctx.deps.store.getRecords(keys);
  const records = new Map(keys.map((k, i) => [k, stored[i] ?? null]));
  const world = 'world' in read ? read.world : EMPTY_WORLD;
  const entries: RouteEntry[] = [];
  // ApiDefinitions labelled for routes, one LIST per namespace that has a relevant route
  const generated = new Map<string, Promise<Map<string, Map<string, KubeObject>> | { error: unknown }>>();
  const labelled = (namespace: string) => {
    let pending = generated.get(namespace);
    if (!pending) {
      pending = ctx.deps.kube.list(API_DEFINITION, namespace, { labelSelector: ROUTE_LABEL }).then(
        (items) => groupByLabel(items, ROUTE_LABEL),
        (error: unknown) => ({ error }),
      );
      generated.set(namespace, pending);
    }
    return pending;
  };
  await mapLimit([...found.entries()], ctx.settings.concurrency, async ([key, g]) => {
    const { namespace, name } = KEYS.split(key) as { namespace: string; name: string };
    const record = records.get(key) ?? null;
    const empty: RouteState = { namespace, name, route: null, world, backends: NO_BACKENDS, current: new Map(), memory: record?.generated ?? {}, managed: record !== null };
    const base = { namespace, name, key, record };
    if ('error' in g) return void entries.push({ ...base, state: empty, readError: g.error });
    if ('error' in read) return void entries.push({ ...base, state: { ...empty, route: g.obj }, readError: read.error });
    const ofNs = await labelled(namespace);
    if ('error' in ofNs) return void entries.push({ ...base, state: { ...empty, route: g.obj }, readError: ofNs.error });
    const current = ofNs.get(`${namespace}/${name}`);
    if (!relevant(g.obj, record, world) && current === undefined) return;
    entries.push(await withBackends(ctx, { ...base, state: { ...empty, route: g.obj, current: new Map(current ?? []) } }));
  });
  entries.sort((a, b) => a.key.localeCompare(b.key));
  return entries;
}

/** The entry with its route's backend Services read (once per run each; across namespaces only where a grant opens them). */
async function withBackends(ctx: RunContext, e: RouteEntry, fresh = false): Promise<RouteEntry> {
  const route = e.state.route;
  if (!route || route.metadata.deletionTimestamp) return e;
  const cache = ctx.shared(SERVICES, () => new Map<string, Promise<Ports>>());
  const services = new Map<string, Ports>();
  const permitted = new Set<string>();
  try {
    for (const ref of backendServicesOf(route)) {
      const at = ref.indexOf('/');
      const namespace = ref.slice(0, at);
      const name = ref.slice(at + 1);
      if (namespace !== e.namespace) {
        const from = { group: HTTP_ROUTE.group, kind: HTTP_ROUTE.kind, namespace: e.namespace };
        const check = await ctx.resolver.grants.check('spec.rules[].backendRefs[]', from, { group: '', kind: SERVICE.kind, namespace, name });
        if ('error' in check) throw new Error(check.error);
        if (!check.ok) continue;
        permitted.add(ref);
      }
      let pending = fresh ? undefined : cache.get(ref);
      if (!pending) {
        pending = ctx.deps.kube.get(SERVICE, namespace, name).then(portsOf);
        cache.set(ref, pending);
      }
      services.set(ref, await pending);
    }
  } catch (err) {
    return { ...e, readError: err };
  }
  const backends: BackendFacts = { services, permitted: (namespace, name) => namespace === e.namespace || permitted.has(`${namespace}/${name}`) };
  return { ...e, state: { ...e.state, backends } };
}

function portsOf(service: KubeObject | null): Ports {
  if (!service) return null;
  const ports = Array.isArray(service.spec?.ports) ? service.spec.ports.filter(isObject) : [];
  return ports.flatMap((p) => (typeof p.port === 'number' ? [{ port: p.port, ...(typeof p.name === 'string' ? { name: p.name } : {}) }] : []));
}

/** Under the lock: the route read again, with its backends and ApiDefinitions, and what is at each name its plan would create. */
export async function readEntry(ctx: RunContext, e: RouteEntry): Promise<RouteEntry> {
  const got = await readOr(() => ctx.deps.kube.get(HTTP_ROUTE, e.namespace, e.name));
  if ('error' in got) return { ...e, readError: got.error };
  let current: Map<string, KubeObject | null>;
  try {
    current = new Map((await ctx.deps.kube.list(API_DEFINITION, e.namespace, { labelSelector: `${ROUTE_LABEL}=${e.name}` })).map((o) => [o.metadata.name, o]));
  } catch (err) {
    return { ...e, readError: err };
  }
  const fresh = await withBackends(ctx, { namespace: e.namespace, name: e.name, key: e.key, record: e.record, state: { ...e.state, route: got.obj, current } }, true);
  if (fresh.readError !== undefined) return fresh;
  const d = decideRoute(fresh.state);
  const creates = d.what === 'upsert' ? d.steps.filter((s) => s.op === 'create').map((s) => s.name) : [];
  const seen = await mapLimit(creates, ctx.settings.concurrency, (n) => readOr(() => ctx.deps.kube.get(API_DEFINITION, e.namespace, n)));
  const failure = seen.find((g): g is { error: unknown } => 'error' in g);
  if (failure) return { ...fresh, readError: failure.error };
  creates.forEach((n, i) => current.set(n, (seen[i] as { obj: KubeObject | null }).obj));
  return { ...fresh, state: { ...fresh.state, current } };
}
