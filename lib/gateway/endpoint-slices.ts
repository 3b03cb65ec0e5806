/**
 * The default gateway's replicas, from its Service's EndpointSlices (TYK_GATEWAY_SERVICE).
 *
 * The open-source Tyk Gateway keeps what is written through its API in files on each replica's
 * own disk, so each replica must be written to itself. `EndpointSliceDiscovery.discover()`
 * (and `discoverReplicas`, one discovery) lists the Service's EndpointSlices (label
 * `kubernetes.io/service-name=<name>`, in its namespace) and answers one Replica per ready
 * endpoint.
 *
 * Contract:
 * - discovery.k8s.io/v1 is asked first; where the API server answers 404 for a version
 *   (kube-apiserver 1.20 serves only v1beta1; 1.25 removed v1beta1) the other is asked, and
 *   the version that answered is asked first from then on, by this discovery object.
 * - A failed list throws (KubeApiError, KubeUnavailableError as the client throws them; both
 *   versions 404: a KubeApiError 404 saying so): never an empty list on error. A Service with
 *   no ready endpoint (or no EndpointSlice) is an empty list.
 * - Ready endpoints only: `conditions.ready` false excludes one; absent or null counts as
 *   ready, as the API says. Addresses of the slice's addressType only (IPv4, IPv6, FQDN as a
 *   host name); an endpoint's addresses are one backend (the API: "fungible"), so its first
 *   valid one is used. One replica per pod: a pod listed in several slices (dual stack, or a
 *   slice being replaced) is one replica, at its IPv4 address before its IPv6 one.
 * - The port: the slice's TCP port whose `name` is the setting's port name, or whose `port` is
 *   the setting's number (the endpoints' port: the Service's targetPort); without a port in the
 *   setting, the slice's only TCP port. A slice with ready endpoints and no such port, or
 *   several ports and none named, throws a GatewayUnavailableError naming TYK_GATEWAY_SERVICE.
 * - Replica name: the endpoint's Pod targetRef name, else the address. URL:
 *   `<scheme>://<address>:<port>`, an IPv6 address in brackets. Replicas are sorted by name,
 *   then URL, for a stable order.
 * Pure apart from the one LIST per discovery (two when a version answers 404).
 */
import { isIPv4, isIPv6 } from 'node:net';
import { ENDPOINT_SLICE, ENDPOINT_SLICE_V1BETA1 } from '../kube/kinds.js';
import type { KubeApi, KubeObject, ResourceKind } from '../kube/types.js';
import { GatewayUnavailableError, KubeApiError } from '../platform/errors.js';
import { isObject } from '../platform/guards.js';
import type { GatewayService } from './service-ref.js';

export interface Replica {
  /** stable name of the replica in logs, reports and messages: the pod's name (targetRef) or, without one, its address */
  readonly name: string;
  /** the base URL of this replica's Tyk API, e.g. https://10.0.0.7:8080 or http://[fd00::7]:8080 */
  readonly url: string;
}

export type { GatewayService };

/** The setting the discovery's errors name. */
export const SERVICE_SETTING = 'TYK_GATEWAY_SERVICE';

/** The label the EndpointSlice controller puts on a Service's slices. */
export const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';

/** The versions tried, in order, until one is not a 404. */
const VERSIONS: readonly ResourceKind[] = [ENDPOINT_SLICE, ENDPOINT_SLICE_V1BETA1];

export class EndpointSliceDiscovery {
  /** the version that answered last; asked first */
  private served?: ResourceKind;

  constructor(
    private readonly kube: KubeApi,
    private readonly service: GatewayService,
    private readonly scheme: 'http' | 'https',
  ) {}

  /** The version this object asks first now (v1 until a 404 said otherwise). */
  get version(): string {
    return (this.served ?? ENDPOINT_SLICE).version;
  }

  async discover(): Promise<Replica[]> {
    return replicasOf(await this.listSlices(), this.service, this.scheme);
  }

  private async listSlices(): Promise<KubeObject[]> {
    const order = this.served ? [this.served, ...VERSIONS.filter((v) => v !== this.served)] : VERSIONS;
    const labelSelector = `${SERVICE_NAME_LABEL}=${this.service.name}`;
    for (const kind of order) {
      try {
        const slices = await this.kube.list(kind, this.service.namespace, { labelSelector });
        this.served = kind;
        return slices;
      } catch (err) {
        if (!(err instanceof KubeApiError && err.status === 404)) throw err;
      }
    }
    throw new KubeApiError(404, `${SERVICE_SETTING} ${serviceName(this.service)}: the API server serves no EndpointSlices (neither discovery.k8s.io/v1 nor v1beta1 answered)`);
  }
}

/** One discovery (see the header); an EndpointSliceDiscovery keeps the version that answered for the next. */
export function discoverReplicas(kube: KubeApi, service: GatewayService, scheme: 'http' | 'https'): Promise<Replica[]> {
  return new EndpointSliceDiscovery(kube, service, scheme).discover();
}

function serviceName(service: GatewayService): string {
  return `${service.namespace}/${service.name}${service.port === undefined ? '' : `:${service.port}`}`;
}

const FAMILY_ORDER: Record<string, number> = { IPv4: 0, IPv6: 1, FQDN: 2 };
/** A host name (RFC 1123), an optional final dot. */
const HOST_NAME = /^(?=.{1,253}\.?$)[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*\.?$/i;

interface Candidate {
  name: string;
  address: string;
  family: number;
  port: number;
}

/** The replicas the slices list (see the header); pure. */
export function replicasOf(slices: readonly KubeObject[], service: GatewayService, scheme: 'http' | 'https'): Replica[] {
  const candidates: Candidate[] = [];
  for (const slice of slices) {
    const addressType = typeof slice.addressType === 'string' ? slice.addressType : '';
    const family = FAMILY_ORDER[addressType];
    if (family === undefined) continue;
    const ready = (Array.isArray(slice.endpoints) ? slice.endpoints : []).filter((e) => isObject(e) && isReady(e));
    if (ready.length === 0) continue;
    const port = portOf(slice, service);
    for (const endpoint of ready) {
      const address = firstAddress(endpoint, addressType);
      if (address === undefined) continue;
      candidates.push({ name: podName(endpoint) ?? address, address, family, port });
    }
  }
  // one per name (a pod in several slices), IPv4 first; then one per address
  candidates.sort((a, b) => compare(a.name, b.name) || a.family - b.family || compare(a.address, b.address) || a.port - b.port);
  const byName = new Map<string, Candidate>();
  for (const c of candidates) if (!byName.has(c.name)) byName.set(c.name, c);
  const seen = new Set<string>();
  const replicas: Replica[] = [];
  for (const c of byName.values()) {
    const url = `${scheme}://${c.family === 1 ? `[${c.address}]` : c.address}:${c.port}`;
    if (seen.has(url)) continue;
    seen.add(url);
    replicas.push({ name: c.name, url });
  }
  return replicas;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function isReady(endpoint: Record<string, unknown>): boolean {
  const conditions = endpoint.conditions;
  return !isObject(conditions) || conditions.ready !== false;
}

function podName(endpoint: Record<string, unknown>): string | undefined {
  const ref = endpoint.targetRef;
  if (!isObject(ref) || ref.kind !== 'Pod' || typeof ref.name !== 'string' || ref.name === '') return undefined;
  return ref.name;
}

function firstAddress(endpoint: Record<string, unknown>, addressType: string): string | undefined {
  const addresses = Array.isArray(endpoint.addresses) ? endpoint.addresses : [];
  for (const a of addresses) {
    if (typeof a !== 'string') continue;
    if (addressType === 'IPv4' && isIPv4(a)) return a;
    if (addressType === 'IPv6' && isIPv6(a)) return a.toLowerCase();
    if (addressType === 'FQDN' && HOST_NAME.test(a)) return a.toLowerCase().replace(/\.$/, '');
  }
  return undefined;
}

interface SlicePort {
  name: string;
  port: number;
}

/** The slice's port the setting means (see the header); throws when it has none, or cannot tell. */
function portOf(slice: KubeObject, service: GatewayService): number {
  const ports: SlicePort[] = (Array.isArray(slice.ports) ? slice.ports : []).flatMap((p): SlicePort[] => {
    if (!isObject(p) || (p.protocol !== undefined && p.protocol !== null && p.protocol !== 'TCP')) return [];
    if (typeof p.port !== 'number' || !Number.isInteger(p.port) || p.port < 1 || p.port > 65535) return [];
    return [{ name: typeof p.name === 'string' ? p.name : '', port: p.port }];
  });
  const wanted = service.port;
  const found = wanted === undefined ? (ports.length === 1 ? ports[0] : undefined) : ports.find((p) => (typeof wanted === 'number' ? p.port === wanted : p.name === wanted));
  if (found) return found.port;
  const listed = ports.length === 0 ? 'none' : ports.map((p) => (p.name === '' ? String(p.port) : `${p.name} (${p.port})`)).join(', ');
  const why =
    wanted === undefined
      ? ports.length === 0
        ? 'lists no TCP port'
        : `lists several ports (${listed}): name one, as ${service.namespace}/${service.name}:<port name or number>`
      : `has no TCP port ${typeof wanted === 'number' ? 'numbered' : 'named'} ${wanted} (its ports: ${listed})`;
  throw new GatewayUnavailableError(`${SERVICE_SETTING} ${serviceName(service)}: EndpointSlice ${slice.metadata.name} ${why}`);
}
