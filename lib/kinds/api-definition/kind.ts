/**
 * ApiDefinition (tyk.tyk.io/v1alpha1): a classic Tyk API. Group, version, plural and finalizer
 * are Tyk Operator's, part of the drop-in contract.
 */
import type { ManagedKind } from '../../engine/kind.js';

export const API_DEFINITION: ManagedKind = {
  kind: 'ApiDefinition',
  group: 'tyk.tyk.io',
  version: 'v1alpha1',
  plural: 'apidefinitions',
  finalizer: 'finalizers.tyk.io/apidefinition',
  gatewayKind: 'api',
  statusIdField: 'api_id',
  specIdField: 'api_id',
};
