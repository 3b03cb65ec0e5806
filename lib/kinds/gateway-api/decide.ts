/**
 * The decision for one HTTPRoute, from what the load found, in the engine's composite
 * vocabulary (engine/composite.ts). Pure: no clock, no I/O.
 *
 * - ignore: no parentRef names a Gateway of ours, and it was never ours (no finalizer, no
 *   record, nothing generated); or gone with nothing of ours left.
 * - remove (because: teardown): being deleted, gone (404), or no longer attached to a Gateway of
 *   ours after being ours (`released`): every ApiDefinition it generated goes, then (while it
 *   exists) our finalizer. Nothing is deleted that is not labelled for and owned by it.
 * - upsert / quiet (because: sync): its parents (attach.ts) and its rules (translate.ts) make
 *   the ApiDefinitions it should have, for each gateway its parents stand for (a Gateway's
 *   OperatorContext: its `contextRef`); a route with anything Tyk cannot serve has none (it is
 *   not half-served: its parents say UnsupportedValue). The finalizer goes on before anything is
 *   created. Nothing to change: quiet (its status may still change: report.ts).
 * - paused (the annotation tyk.tyk.io/reconcile-paused: "true"): a write or removal becomes
 *   quiet, holding what it would have done (reported; nothing written, deleted or patched).
 */
import { createHash } from 'node:crypto';
import type { ChildMemory, ChildStep, CompositeDecision, CompositeWrite } from '../../engine/composite.js';
import { PAUSE_ANNOTATION } from '../../engine/conditions.js';
import type { KubeObject } from '../../kube/types.js';
import { API_DEFINITION } from '../api-definition/kind.js';
import { type Diff, diffGenerated, type Generator, ownedBy, ownerRefs, teardownGenerated, type Wanted } from '../shared/generated.js';
import { type AttachedListener, type Attachment, attachRoute } from './attach.js';
import { HTTP_ROUTE, ROUTE_LABEL } from './kinds.js';
import { GATEWAY_API_GROUP, type Named } from './model.js';
import { type BackendFacts, type RouteApi, type RouteTranslation, translateRoute } from './translate.js';
import type { GatewayWorld } from './world.js';

type Json = Record<string, unknown>;

export interface RouteState {
  readonly namespace: string;
  readonly name: string;
  /** null: the API server confirmed it gone */
  readonly route: KubeObject | null;
  readonly world: GatewayWorld;
  /** the Services its backendRefs name, as read */
  readonly backends: BackendFacts;
  /** every ApiDefinition labelled for it, and what is at each name its plan needs (null: free) */
  readonly current: ReadonlyMap<string, KubeObject | null>;
  /** what the record remembers of our writes */
  readonly memory: Readonly<Record<string, ChildMemory>>;
  /** we have a record of managing it */
  readonly managed: boolean;
}

export type RouteTeardown = 'deleted' | 'gone' | 'released';

/** Why a route's decision is what it is (report.ts reads it). */
export type RouteBecause =
  | {
      readonly reason: 'sync';
      readonly attachments: readonly Attachment[];
      readonly translation: RouteTranslation;
      /** what is wrong with the route as a whole (a name too long): nothing is generated or deleted */
      readonly problems: readonly string[];
      readonly wanted: readonly Wanted[];
      readonly diff: Diff;
    }
  | { readonly reason: 'teardown'; readonly why: RouteTeardown }
  /** the pause annotation holds what would be written (reported, nothing written or deleted) */
  | { readonly reason: 'paused'; readonly held: CompositeWrite<RouteBecause> };

export type RouteDecision = CompositeDecision<RouteBecause>;

const MAX_NAME = 253;
const MAX_LABEL_VALUE = 63;

function isRouteOwner(ref: Json, routeName: string): boolean {
  const group = typeof ref.apiVersion === 'string' ? ref.apiVersion.split('/')[0] : '';
  return ref.kind === HTTP_ROUTE.kind && ref.name === routeName && group === GATEWAY_API_GROUP;
}

/** The HTTPRoute as a generator of ApiDefinitions: what it manages of one is its spec, its label and its ownerReference. */
export const ROUTE_GENERATOR: Generator = {
  label: ROUTE_LABEL,
  isOwnerRef: isRouteOwner,
  view(obj, routeName) {
    const owner = ownerRefs(obj).find((r) => isRouteOwner(r, routeName));
    return { spec: obj.spec ?? {}, route: obj.metadata.labels?.[ROUTE_LABEL], owner: owner ?? null };
  },
};

/** The name of the ApiDefinition `key` of a route: `<namespace>-<route>-<key>`. */
export function generatedName(namespace: string, route: string, key: string): string {
  return `${namespace}-${route}-${key}`;
}

function wantedOf(route: KubeObject, apis: readonly RouteApi[]): Wanted[] {
  const namespace = route.metadata.namespace ?? '';
  const owner = {
    apiVersion: `${HTTP_ROUTE.group}/${HTTP_ROUTE.version}`,
    kind: HTTP_ROUTE.kind,
    name: route.metadata.name,
    uid: route.metadata.uid ?? '',
    controller: true,
    blockOwnerDeletion: true,
  };
  return apis.map((api) => {
    const name = generatedName(namespace, route.metadata.name, api.key);
    return {
      name,
      object: {
        apiVersion: `${API_DEFINITION.group}/${API_DEFINITION.version}`,
        kind: API_DEFINITION.kind,
        metadata: { name, namespace, labels: { [ROUTE_LABEL]: route.metadata.name }, ownerReferences: [owner] },
        spec: api.spec,
      },
    };
  });
}

/** What is wrong with the route as a whole: names it cannot generate under. */
function nameProblems(route: KubeObject): string[] {
  const whole = `HTTPRoute ${route.metadata.namespace ?? ''}/${route.metadata.name}`;
  if (route.metadata.name.length > MAX_LABEL_VALUE) return [`${whole}: its name is longer than ${MAX_LABEL_VALUE} characters, too long for the label ${ROUTE_LABEL}`];
  if (generatedName(route.metadata.namespace ?? '', route.metadata.name, '123456789').length > MAX_NAME)
    return [`${whole}: the ApiDefinition names it needs (<namespace>-<name>-<hash>) are longer than ${MAX_NAME} characters`];
  return [];
}

export function decideRoute(s: RouteState): RouteDecision {
  const d = decideUnpaused(s);
  if (s.route?.metadata.annotations?.[PAUSE_ANNOTATION] !== 'true') return d;
  return d.what === 'upsert' || d.what === 'remove' ? { what: 'quiet', because: { reason: 'paused', held: d } } : d;
}

function decideUnpaused(s: RouteState): RouteDecision {
  const route = s.route;
  const owns = [...s.current.values()].some((o) => o !== null && ownedBy(ROUTE_GENERATOR, o, s.name));
  const teardown = () => teardownGenerated(ROUTE_GENERATOR, s.name, s.current);
  if (route === null) return s.managed || owns ? removal('gone', teardown(), false) : { what: 'ignore' };
  const hasFinalizer = (route.metadata.finalizers ?? []).includes(HTTP_ROUTE.finalizer);
  const wasOurs = hasFinalizer || s.managed || owns;
  if (route.metadata.deletionTimestamp) return wasOurs ? removal('deleted', teardown(), hasFinalizer) : { what: 'ignore' };
  const attachments = attachRoute(
    route,
    (namespace, name) => s.world.gateways.get(`${namespace}/${name}`),
    (namespace) => s.world.namespaceLabels(namespace),
  );
  if (attachments.length === 0) return wasOurs ? removal('released', teardown(), hasFinalizer) : { what: 'ignore' };
  const translation = translateRoute(
    route,
    attachments.flatMap((a) => a.listeners),
    s.backends,
  );
  const problems = nameProblems(route);
  const wanted = translation.unsupported.length > 0 || problems.length > 0 ? [] : dedupe(wantedOf(route, apisByGateway(route, attachments, s)));
  const diff = diffGenerated(ROUTE_GENERATOR, s.name, wanted, s.current, s.memory, { complete: problems.length === 0 });
  const addFinalizer = !hasFinalizer && (wanted.length > 0 || owns);
  const because = { reason: 'sync', attachments, translation, problems, wanted, diff } as const;
  return diff.steps.length > 0 || addFinalizer ? { what: 'upsert', because, steps: diff.steps, addFinalizer } : { what: 'quiet', because };
}

/**
 * The route's ApiDefinitions for each gateway its parents stand for: those of Gateways of the
 * default gateway as translated; those of a Gateway standing for an OperatorContext with its
 * `contextRef`, under a key of their own (so one route can be served by several gateways).
 */
function apisByGateway(route: KubeObject, attachments: readonly Attachment[], s: RouteState): RouteApi[] {
  const groups = new Map<string, { context?: Named; listeners: AttachedListener[] }>();
  for (const a of attachments) {
    const context = s.world.gateways.get(`${a.parentRef.namespace}/${a.parentRef.name}`)?.context;
    const key = context ? `${context.namespace}/${context.name}` : '';
    const group = groups.get(key) ?? { ...(context ? { context } : {}), listeners: [] };
    group.listeners.push(...a.listeners);
    groups.set(key, group);
  }
  return [...groups.entries()].flatMap(([key, g]) => {
    const apis = translateRoute(route, g.listeners, s.backends).apis;
    const context = g.context;
    if (!context) return apis;
    return apis.map((api) => ({ key: shortHash(`${key}\u0000${api.key}`), spec: { ...api.spec, contextRef: { name: context.name, namespace: context.namespace } } }));
  });
}

function shortHash(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex').slice(0, 9);
}

/** One wanted object per name (a listener reached through two parentRefs makes the same one). */
function dedupe(wanted: readonly Wanted[]): Wanted[] {
  const seen = new Map<string, Wanted>();
  for (const w of wanted) if (!seen.has(w.name)) seen.set(w.name, w);
  return [...seen.values()];
}

function removal(why: RouteTeardown, steps: readonly ChildStep[], removeFinalizer: boolean): RouteDecision {
  const because = { reason: 'teardown', why } as const;
  return steps.length > 0 || removeFinalizer ? { what: 'remove', because, steps, removeFinalizer } : { what: 'quiet', because };
}
