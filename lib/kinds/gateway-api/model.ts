/**
 * Gateway API: the types and names the pure modules of this folder share (hostnames.ts,
 * listeners.ts, attach.ts, translate.ts, status.ts). Types and constants only: no I/O, no clock.
 *
 * A decision states a condition as a NewCondition (type, status, reason, a one-line message);
 * status.ts adds observedGeneration and lastTransitionTime when it writes one.
 */
import type { KubeObject } from '../../kube/types.js';

export type { KubeObject };

export const GATEWAY_API_GROUP = 'gateway.networking.k8s.io';
/** GATEWAY_CONTROLLER_NAME's default: the GatewayClass controllerName we serve. */
export const DEFAULT_CONTROLLER_NAME = 'tyk.io/gateway-reconciler';
/** The one route kind we serve. */
export const HTTP_ROUTE = 'HTTPRoute';

export type Json = Record<string, unknown>;

export type ConditionStatus = 'True' | 'False' | 'Unknown';

/** A condition as a decision states it; observedGeneration and lastTransitionTime are added by status.ts. */
export interface NewCondition {
  readonly type: string;
  readonly status: ConditionStatus;
  readonly reason: string;
  readonly message: string;
}

export interface GatewayApiSettings {
  /** GATEWAY_CONTROLLER_NAME: the GatewayClass controllerName we serve */
  readonly controllerName: string;
  /** GATEWAY_ADDRESSES: the gateway's public addresses, each an IP or a hostname, for Gateway status.addresses */
  readonly addresses: readonly string[];
  /** GATEWAY_HTTP_PORT: the Tyk port HTTP listeners' routes are served on (`listen_port`); 0 or absent: Tyk's own listen port */
  readonly httpPort?: number;
  /** GATEWAY_HTTPS_PORT: the Tyk port HTTPS listeners' routes are served on; 0: Tyk's own listen port; absent: DEFAULT_HTTPS_PORT */
  readonly httpsPort?: number;
}

/** Where HTTPS routes are served unless GATEWAY_HTTPS_PORT says otherwise: 8443, as Tyk Operator's TLS Ingresses. */
export const DEFAULT_HTTPS_PORT = 8443;

/** The Tyk port (`listen_port`) a listener's routes are served on; 0: Tyk's own listen port. */
export function tykPortFor(protocol: string, settings: GatewayApiSettings): number {
  return protocol === 'HTTPS' ? (settings.httpsPort ?? DEFAULT_HTTPS_PORT) : (settings.httpPort ?? 0);
}

export const DEFAULT_GATEWAY_API_SETTINGS: GatewayApiSettings = { controllerName: DEFAULT_CONTROLLER_NAME, addresses: [] };

export interface Named {
  readonly namespace: string;
  readonly name: string;
}

/** A condition, its message made one line and never empty. */
export function condition(type: string, status: ConditionStatus, reason: string, message: string): NewCondition {
  const line = message.replace(/\s+/g, ' ').trim();
  return { type, status, reason, message: line === '' ? reason : line };
}
