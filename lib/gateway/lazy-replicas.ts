/**
 * A gateway of several replicas whose code (./replicas.ts, ./endpoint-slices.ts and the replicas'
 * clients) is loaded on its first call, so a process without one never loads it (the webhook
 * bundles' size at start). Until then it has no replicas to report; afterwards every call and
 * `replicaStatus` is the loaded gateway's.
 */
import type { CertificateStore } from './certificates.js';
import type { Gateway, GatewayObjectKind, ReplicaStatus } from './types.js';

/** What `load` builds: a ReplicaGateway (./replicas.ts), closable. */
export type ReplicatedGateway = Gateway & { replicaStatus(of?: { readonly kind: GatewayObjectKind; readonly id: string }): ReplicaStatus; close(): Promise<void> };

export function lazyReplicas(name: string, load: () => Promise<ReplicatedGateway>): Gateway & { close(): Promise<void> } {
  let pending: Promise<ReplicatedGateway> | undefined;
  let built: ReplicatedGateway | undefined;
  const loaded = (): Promise<ReplicatedGateway> =>
    (pending ??= load().then((g) => {
      built = g;
      return g;
    }));
  const store = async (): Promise<CertificateStore> => {
    const certificates = (await loaded()).certificates;
    if (!certificates) throw new Error(`gateway ${name} has no certificate store`);
    return certificates;
  };
  return {
    name,
    reloadRequired: true,
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
    replicaStatus: (of) => built?.replicaStatus(of) ?? { replicas: [], unreadable: [] },
    close: async () => (pending ? (await pending).close() : undefined),
  };
}
