/**
 * The HTTPRoute as a composite kind (engine/composite.ts): routes attached to Gateways of ours
 * become ApiDefinitions in the cluster, which the ApiDefinition phase sends to the gateway in
 * the same run. The engine holds the loop (lock, re-read, decide again, write, record, release,
 * dirty passes, dry runs, a stopping process); this value says what differs:
 *
 * - load and reread (load.ts): the routes a run looks at, with the run's Gateway API world,
 *   their backends and the ApiDefinitions labelled for them;
 * - decide (decide.ts, pure): attachment and translation, as the engine's decision;
 * - report, record, status and Events (report.ts); a child found at a name a create was refused
 *   for is its own when it is labelled for the route; a child's memory is the hash of its managed view.
 */
import { type CompositeKind, compositePhase } from '../../engine/composite.js';
import { hashOf } from '../../engine/hash.js';
import { API_DEFINITION } from '../api-definition/kind.js';
import { labelledFor } from '../shared/generated.js';
import { decideRoute, ROUTE_GENERATOR, type RouteBecause } from './decide.js';
import { HTTP_ROUTE } from './kinds.js';
import { loadRoutes, type RouteEntry, readEntry } from './load.js';
import { recordOf, reportRoute, takenError, tellRoute } from './report.js';

export const ROUTE_COMPOSITE: CompositeKind<RouteEntry, RouteBecause> = {
  kind: HTTP_ROUTE,
  child: API_DEFINITION,
  objectOf: (e) => e.state.route,
  load: (ctx, scope) => loadRoutes(ctx, scope),
  reread: (ctx, e) => readEntry(ctx, e),
  decide: (_ctx, e) => decideRoute(e.state),
  isOwn: (e, child) => labelledFor(ROUTE_GENERATOR, child, e.name),
  viewOf: (e, child) => hashOf(ROUTE_GENERATOR.view(child, e.name)),
  takenError,
  recordOf,
  report: reportRoute,
  tell: tellRoute,
};

/** The engine's composite phase over ROUTE_COMPOSITE (phases.ts loads it on first use). */
export const ROUTE_COMPOSITE_PHASE = compositePhase(ROUTE_COMPOSITE);
