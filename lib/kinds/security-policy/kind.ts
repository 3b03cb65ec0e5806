/**
 * SecurityPolicy (tyk.tyk.io/v1alpha1): a Tyk policy. Names are Tyk Operator's. Its ids have one
 * owner each; on a Dashboard its status shows the Dashboard's own `_id`. What it is built from:
 * build.ts.
 */
import type { ManagedKind } from '../../engine/kind.js';
import { beginSecurityPolicies, policyDesiredId, policyStatusExtra } from './build.js';
import { policyReferences } from './references.js';

export const SECURITY_POLICY: ManagedKind = {
  kind: 'SecurityPolicy',
  group: 'tyk.tyk.io',
  version: 'v1alpha1',
  plural: 'securitypolicies',
  finalizer: 'finalizers.tyk.io/securitypolicy',
  gatewayKind: 'policy',
  statusIdField: 'pol_id',
  specIdField: 'id',
  nativeIdIfAny: '_id',
  ownerSpace: 'policy',
  desiredId: (obj, target) => policyDesiredId(obj, target),
  references: (obj) => policyReferences(obj),
  statusExtra: (facts) => policyStatusExtra(facts),
  begin: (ctx, objects) => beginSecurityPolicies(ctx, objects),
};
