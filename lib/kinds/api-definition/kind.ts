/**
 * ApiDefinition (tyk.tyk.io/v1alpha1): a classic Tyk API. Group, version, plural and finalizer
 * are Tyk Operator's, part of the drop-in contract. Its ids are shared with Tyk OAS APIs (one
 * owner each); live policies granting it hold its deletion; an ApiDefinition labelled
 * `template: "true"` is a blueprint for Ingresses, never an API of its own; its listen path
 * and domain belong to the oldest resource serving them on a gateway. What it is built from:
 * build.ts.
 */
import type { ManagedKind } from '../../engine/kind.js';
import { apiStatusExtra } from '../shared/api-kind.js';
import { HELD_BY_POLICIES } from '../shared/held-by-policies.js';
import { beginApiDefinitions } from './build.js';
import { apiRoute } from './route.js';

export const API_DEFINITION: ManagedKind = {
  kind: 'ApiDefinition',
  group: 'tyk.tyk.io',
  version: 'v1alpha1',
  plural: 'apidefinitions',
  finalizer: 'finalizers.tyk.io/apidefinition',
  gatewayKind: 'api',
  statusIdField: 'api_id',
  specIdField: 'api_id',
  ownerSpace: 'api',
  idWithoutGateway: true,
  heldBy: HELD_BY_POLICIES,
  blueprintLabel: 'template',
  route: (body) => apiRoute(body),
  statusExtra: (facts) => apiStatusExtra('linked_by_policies', facts),
  begin: (ctx) => beginApiDefinitions(ctx),
};
