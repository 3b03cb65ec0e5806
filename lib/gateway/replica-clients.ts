/**
 * The pieces of the default gateway as its replicas (TYK_GATEWAY_SERVICE, TYK_MODE=ce): where
 * they are (`discover`, ./endpoint-slices.ts) and a client for each (`clientFor`), for
 * ReplicaGateway (./replicas.ts), which fans a run's calls out to them and owns the clients
 * (it closes those of replicas that left, and all of them when it is closed).
 *
 * Contract:
 * - `discover` lists the Service's ready endpoints (one EndpointSliceDiscovery, so the
 *   EndpointSlice version that answered is remembered); it throws when the list fails, never
 *   answers an empty list for an error.
 * - `clientFor(replica)`: a new TykGatewayClient for the replica's own URL (TYK_URL's scheme,
 *   the endpoint's address and port), with TYK_AUTH, its reload `node` (GET /tyk/reload: each
 *   replica reloads its own files), and, over https, its certificate checked against TYK_URL's
 *   host, not the pod address (TYK_TLS_INSECURE_SKIP_VERIFY still turns checking off).
 * - Messages name the replica (`gateway default/<pod>`); metrics count every replica's calls
 *   under the default gateway's name, so pods coming and going add no series.
 */

import type { KubeApi } from '../kube/types.js';
import type { TransportFactory } from '../platform/http.js';
import type { ConnectionSettings } from './connection.js';
import { EndpointSliceDiscovery, type GatewayService, type Replica } from './endpoint-slices.js';
import { DEFAULT_TARGET } from './targets.js';
import type { GatewayObserver } from './transport.js';
import { TykGatewayClient } from './tyk-ce.js';

export interface ReplicaPieces {
  /** the replicas now: the Service's ready endpoints */
  discover(): Promise<readonly Replica[]>;
  /** a client of one replica, for ReplicaGateway to keep (and close) */
  clientFor(replica: Replica): TykGatewayClient;
}

export interface ReplicaClientOptions {
  /** HTTP_TIMEOUT_MS */
  timeoutMs: number;
  /** GATEWAY_MAX_RESPONSE_BYTES */
  maxResponseBytes?: number;
  observe?: GatewayObserver;
  /** the CAs a replica's certificate must chain to (PEM); default the system's */
  ca?: string;
  /** the HTTP transport of the replicas' clients (lib/platform/http.ts); default Node's own */
  transport?: TransportFactory;
}

/** The discovery and the per-replica clients of the default gateway (see the header). */
export function replicaGateway(kube: KubeApi, tyk: ConnectionSettings, service: GatewayService, options: ReplicaClientOptions): ReplicaPieces {
  const base = new URL(tyk.url);
  const scheme = base.protocol === 'https:' ? 'https' : 'http';
  const discovery = new EndpointSliceDiscovery(kube, service, scheme);
  const observe = options.observe;
  return {
    discover: () => discovery.discover(),
    clientFor: (replica) =>
      new TykGatewayClient({
        name: `${DEFAULT_TARGET}/${replica.name}`,
        url: replica.url,
        secret: tyk.auth,
        insecureSkipVerify: tyk.insecureSkipVerify,
        timeoutMs: options.timeoutMs,
        reload: 'node',
        ...(scheme === 'https' ? { tlsServerName: base.hostname } : {}),
        ...(options.ca !== undefined ? { ca: options.ca } : {}),
        ...(options.transport ? { transport: options.transport } : {}),
        ...(options.maxResponseBytes !== undefined ? { maxResponseBytes: options.maxResponseBytes } : {}),
        ...(observe ? { observe: (call) => observe({ ...call, gateway: DEFAULT_TARGET }) } : {}),
      }),
  };
}
