/**
 * Kinds the reconciler reads and never reconciles: where a resource's gateway connection comes
 * from (OperatorContext, and the Secret it names), where documents and certificates live
 * (ConfigMap, Secret), what it tells (Event), and where the default gateway's replicas are
 * (EndpointSlice, with TYK_GATEWAY_SERVICE: lib/gateway/endpoint-slices.ts), and what Gateway API
 * routes name (Service: a backend; Namespace: its labels, for a listener's route selector).
 */
import type { ResourceKind } from './types.js';

export const OPERATOR_CONTEXT: ResourceKind = { kind: 'OperatorContext', group: 'tyk.tyk.io', version: 'v1alpha1', plural: 'operatorcontexts' };
export const SECRET: ResourceKind = { kind: 'Secret', group: '', version: 'v1', plural: 'secrets' };
export const CONFIG_MAP: ResourceKind = { kind: 'ConfigMap', group: '', version: 'v1', plural: 'configmaps' };
export const EVENT: ResourceKind = { kind: 'Event', group: '', version: 'v1', plural: 'events' };
/** EndpointSlice, GA from Kubernetes 1.21. */
export const ENDPOINT_SLICE: ResourceKind = { kind: 'EndpointSlice', group: 'discovery.k8s.io', version: 'v1', plural: 'endpointslices' };
/** EndpointSlice as Kubernetes 1.17-1.24 serve it (1.20 serves only this version; 1.25 removed it). The fields read are the same. */
export const ENDPOINT_SLICE_V1BETA1: ResourceKind = { ...ENDPOINT_SLICE, version: 'v1beta1' };
/** A Service: an HTTPRoute's backend (its ports are read). */
export const SERVICE: ResourceKind = { kind: 'Service', group: '', version: 'v1', plural: 'services' };
/** A Namespace (cluster-scoped): its labels, for a Gateway listener's `allowedRoutes.namespaces.selector`. */
export const NAMESPACE: ResourceKind = { kind: 'Namespace', group: '', version: 'v1', plural: 'namespaces' };
