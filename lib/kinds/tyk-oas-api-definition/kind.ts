/**
 * TykOasApiDefinition (tyk.tyk.io/v1alpha1): a Tyk OAS API whose OpenAPI document lives in a
 * ConfigMap (spec.tykOAS.configmapRef); the document's `x-tyk-api-gateway.info.id` pins the
 * gateway id (payload.ts), so the spec has no id field. Names are Tyk Operator's. Its ids are
 * shared with classic APIs (one owner each); live policies granting it hold its deletion. What
 * it is built from: build.ts.
 */
import type { ManagedKind } from '../../engine/kind.js';
import { apiStatusExtra } from '../shared/api-kind.js';
import { HELD_BY_POLICIES } from '../shared/held-by-policies.js';
import { beginTykOasApis } from './build.js';
import { tykOasReferences } from './references.js';

export const TYK_OAS_API_DEFINITION: ManagedKind = {
  kind: 'TykOasApiDefinition',
  group: 'tyk.tyk.io',
  version: 'v1alpha1',
  plural: 'tykoasapidefinitions',
  finalizer: 'finalizers.tyk.io/tykoasapidefinition',
  gatewayKind: 'oas',
  statusIdField: 'id',
  ownerSpace: 'api',
  idWithoutGateway: true,
  heldBy: HELD_BY_POLICIES,
  references: (obj) => tykOasReferences(obj),
  statusExtra: (facts) => apiStatusExtra('linkedByPolicies', facts),
  begin: (ctx, objects) => beginTykOasApis(ctx, objects),
};
