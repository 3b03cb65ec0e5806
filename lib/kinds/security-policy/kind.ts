/** SecurityPolicy (tyk.tyk.io/v1alpha1): a Tyk policy. Names are Tyk Operator's. */
import type { ManagedKind } from '../../engine/kind.js';

export const SECURITY_POLICY: ManagedKind = {
  kind: 'SecurityPolicy',
  group: 'tyk.tyk.io',
  version: 'v1alpha1',
  plural: 'securitypolicies',
  finalizer: 'finalizers.tyk.io/securitypolicy',
  gatewayKind: 'policy',
  statusIdField: 'pol_id',
  specIdField: 'id',
};
