/**
 * A gateway whose client is built on its first call (`load`), so a process that never calls it
 * never loads its code (the webhook bundles' size at start): the Dashboard client, and a
 * gateway of several replicas (./replicas.ts, ./endpoint-slices.ts and their clients). Every
 * call, a list's visitor included, is the loaded gateway's; `close` closes it if it was built.
 * With `replicas`, `replicaStatus` is the loaded gateway's too (before it is loaded: no
 * replicas to report).
 */
import { GatewayUnsupportedError } from '../platform/errors.js';
import type { CertificateStore } from './certificates.js';
import type { Gateway, GatewayObjectKind, ReplicaStatus } from './types.js';

export type ClosableGateway = Gateway & { close(): Promise<void> };

/** What a gateway of several replicas is once loaded (a ReplicaGateway). */
export type ReplicatedGateway = ClosableGateway & { replicaStatus(of?: { readonly kind: GatewayObjectKind; readonly id: string }): ReplicaStatus };

export function lazyGateway(name: string, reloadRequired: boolean, load: () => Promise<ClosableGateway>): ClosableGateway;
export function lazyGateway(name: string, reloadRequired: boolean, load: () => Promise<ReplicatedGateway>, options: { replicas: true }): ClosableGateway;
export function lazyGateway(name: string, reloadRequired: boolean, load: () => Promise<ClosableGateway>, options: { replicas?: true } = {}): ClosableGateway {
  let pending: Promise<ClosableGateway> | undefined;
  let built: ClosableGateway | undefined;
  const loaded = (): Promise<ClosableGateway> =>
    (pending ??= load().then((g) => {
      built = g;
      return g;
    }));
  const store = async (): Promise<CertificateStore> => {
    const certificates = (await loaded()).certificates;
    if (!certificates) throw new GatewayUnsupportedError(501, `gateway ${name} has no certificate store`);
    return certificates;
  };
  const gateway: ClosableGateway = {
    name,
    reloadRequired,
    list: async (kind, visit) => (await loaded()).list(kind, visit),
    get: async (kind, id) => (await loaded()).get(kind, id),
    upsert: async (kind, id, body, hint) => (await loaded()).upsert(kind, id, body, hint),
    remove: async (kind, id) => (await loaded()).remove(kind, id),
    reload: async () => (await loaded()).reload(),
    ping: async () => (await loaded()).ping(),
    certificates: {
      uploadCertificate: async (pem, orgId) => (await store()).uploadCertificate(pem, orgId),
      hasCertificate: async (id) => (await store()).hasCertificate(id),
      removeCertificate: async (id, orgId) => (await store()).removeCertificate(id, orgId),
      listCertificates: async (orgId) => (await store()).listCertificates(orgId),
    },
    close: async () => (pending ? (await pending).close() : undefined),
  };
  if (options.replicas) gateway.replicaStatus = (of) => (built as ReplicatedGateway | undefined)?.replicaStatus(of) ?? { replicas: [], unreadable: [] };
  return gateway;
}
