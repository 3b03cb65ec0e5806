/**
 * Gateway API's kinds as this reconciler serves them: GatewayClass (cluster-scoped) and Gateway
 * (status only: nothing of them is sent anywhere), and HTTPRoute, a composite kind whose
 * ApiDefinitions in the cluster the ApiDefinition phase sends (phase.ts). The standard
 * channel's served versions: v1 for all three.
 */
import type { ClusterKind } from '../../engine/kind.js';
import type { ResourceKind } from '../../kube/types.js';
import { GATEWAY_API_GROUP } from './model.js';

export const GATEWAY_CLASS: ResourceKind = { kind: 'GatewayClass', group: GATEWAY_API_GROUP, version: 'v1', plural: 'gatewayclasses' };
export const GATEWAY: ResourceKind = { kind: 'Gateway', group: GATEWAY_API_GROUP, version: 'v1', plural: 'gateways' };
/** HTTPRoute, with our finalizer: its ApiDefinitions go before it does. */
export const HTTP_ROUTE: ClusterKind = { kind: 'HTTPRoute', group: GATEWAY_API_GROUP, version: 'v1', plural: 'httproutes', finalizer: 'finalizers.tyk.io/httproute' };

/** The label on an ApiDefinition an HTTPRoute generated: the route's name. */
export const ROUTE_LABEL = 'tyk.io/httproute';
