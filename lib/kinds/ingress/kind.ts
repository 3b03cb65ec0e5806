/**
 * Kubernetes Ingresses of our class (INGRESS_CLASS): never sent to a gateway, turned into
 * ApiDefinitions in the cluster (phase.ts), with Tyk Operator's finalizer; and the finalizer
 * Tyk Operator put on template ApiDefinitions while an Ingress names them.
 */
import type { ResourceKind } from '../../kube/types.js';

export const INGRESS: ResourceKind & { readonly finalizer: string } = {
  kind: 'Ingress',
  group: 'networking.k8s.io',
  version: 'v1',
  plural: 'ingresses',
  finalizer: 'finalizers.tyk.io/ingress',
};

/** Tyk Operator's finalizer on ApiDefinitions labelled `template: "true"`, held while an Ingress names them. */
export const TEMPLATE_FINALIZER = 'finalizers.tyk.io/template';

/** "Ingress" or "ingresses", case-insensitively: how events and /resync name the kind. */
export function isIngressKind(name: string): boolean {
  const n = name.toLowerCase();
  return n === 'ingress' || n === 'ingresses';
}
