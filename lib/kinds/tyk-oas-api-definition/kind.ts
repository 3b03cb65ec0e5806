/**
 * TykOasApiDefinition (tyk.tyk.io/v1alpha1): a Tyk OAS API whose OpenAPI document lives in a
 * ConfigMap (spec.tykOAS.configmapRef); the document's `x-tyk-api-gateway.info.id` pins the
 * gateway id (payload.ts), so the spec has no id field. Names are Tyk Operator's.
 */
import type { ManagedKind } from '../../engine/kind.js';

export const TYK_OAS_API_DEFINITION: ManagedKind = {
  kind: 'TykOasApiDefinition',
  group: 'tyk.tyk.io',
  version: 'v1alpha1',
  plural: 'tykoasapidefinitions',
  finalizer: 'finalizers.tyk.io/tykoasapidefinition',
  gatewayKind: 'oas',
  statusIdField: 'id',
};
