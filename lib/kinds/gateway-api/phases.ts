/**
 * Gateway API's steps of a run: first, HTTPRoutes attached to Gateways of ours become
 * ApiDefinitions in the cluster (the engine's composite phase over ROUTE_COMPOSITE, phase.ts);
 * those it wrote or let go join the ApiDefinition phase, so they reach the gateway in the same
 * run. Then our GatewayClasses' and Gateways' statuses (gateways.ts). Both load their code on
 * first use, so a function's bundle does not carry it at start.
 */
import type { Phase, RegistryEntry } from '../../engine/kind.js';
import { GATEWAY, GATEWAY_CLASS, HTTP_ROUTE } from './kinds.js';

export const ROUTE_PHASE: Phase = {
  name: HTTP_ROUTE.plural,
  async run(ctx) {
    const { ROUTE_COMPOSITE_PHASE } = await import('./phase.js');
    return ROUTE_COMPOSITE_PHASE.run(ctx);
  },
};

export const GATEWAY_STATUS: Phase = {
  name: 'gateway api status',
  async run(ctx) {
    const { GATEWAY_STATUS_PHASE } = await import('./gateways.js');
    return GATEWAY_STATUS_PHASE.run(ctx);
  },
};

/**
 * The registry line: routes before the ApiDefinition phase that sends what they make, then the
 * statuses of classes and Gateways. A Gateway or GatewayClass changed may concern a route of
 * any namespace: an event about one runs everything.
 */
export const GATEWAY_API_ENTRY: RegistryEntry = { cluster: [HTTP_ROUTE], wide: [GATEWAY_CLASS, GATEWAY], phases: [ROUTE_PHASE, GATEWAY_STATUS] };
