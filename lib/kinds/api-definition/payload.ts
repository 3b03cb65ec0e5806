/**
 * ApiDefinition custom resource → Tyk API definition body. Pure.
 *
 * What it does, as Tyk Operator did:
 * - sets `api_id` to the object's gateway id (lib/engine/ids.ts);
 * - sets `org_id` to the configured org (TYK_ORG) when one is configured, else keeps the spec's;
 * - defaults `version_data` to a single unversioned "Default" version when the spec gives no
 *   versions (a definition without versions is loaded by Tyk and then answers 403 to every call);
 * - drops the operator-only fields that are not part of Tyk's API definition;
 * - turns `jwt_default_policies` entries that name a SecurityPolicy ("namespace/name", as Tyk
 *   Operator takes them) into that policy's gateway id.
 *
 * - replaces the fields that name Secrets (certificate-refs.ts) with the certificate store ids
 *   the load stage resolved (`certificateFields`); the `*_refs` fields themselves are not sent.
 *
 * - GraphQL federation (`graphql.graph_ref`): the fields the load stage resolved from the
 *   SubGraph or SuperGraph (federation.ts, `graphqlFields`) are set over `graphql`, and
 *   `graph_ref` itself is not sent. Without them (or with an execution_mode that takes no graph)
 *   building returns a reason instead of a body, so nothing half-configured reaches the gateway.
 *
 * `contextRef` picks the gateway and is not sent.
 */

import type { JsonObject } from '../../gateway/types.js';
import type { KubeObject } from '../../kube/types.js';
import { isEmptyJson } from '../../platform/guards.js';
import { graphqlWith } from '../graphs/federation.js';
import { SECRET_REF_FIELDS } from '../shared/certificate-refs.js';

/** Operator-only fields that pick the gateway (handled by lib/gateway/targets.ts): not sent. */
const ROUTING_FIELDS = ['contextRef'];

export type PayloadResult = { ok: true; body: JsonObject } | { ok: false; reason: string };

/** How a `jwt_default_policies` entry naming a SecurityPolicy ("namespace/name") becomes its gateway id. */
export type PolicyIdOf = (namespace: string, name: string) => string;

/** "namespace/name" entries name SecurityPolicies (Tyk Operator's form); others are policy ids already. */
function jwtDefaultPolicies(value: unknown, policyIdOf: PolicyIdOf): unknown {
  if (!Array.isArray(value)) return value;
  return value.map((entry) => {
    if (typeof entry !== 'string') return entry;
    const m = /^([a-z0-9][-a-z0-9]*)\/([a-z0-9][-a-z0-9.]*)$/.exec(entry);
    return m ? policyIdOf(m[1]!, m[2]!) : entry;
  });
}

function isPlainObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function withDefaultVersions(versionData: unknown): JsonObject {
  const vd = isPlainObject(versionData) ? { ...versionData } : {};
  if (isPlainObject(vd.versions) && Object.keys(vd.versions).length > 0) return vd;
  const name = typeof vd.default_version === 'string' && vd.default_version !== '' ? vd.default_version : 'Default';
  return { ...vd, not_versioned: vd.not_versioned ?? true, default_version: name, versions: { [name]: { name } } };
}

function omit(obj: JsonObject, keys: string[]): JsonObject {
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(obj)) if (!keys.includes(k)) out[k] = v;
  return out;
}

export function apiDefinitionPayload(obj: KubeObject, id: string, orgId: string | undefined, policyIdOf?: PolicyIdOf, certificateFields: JsonObject = {}, graphqlFields?: JsonObject): PayloadResult {
  const spec = obj.spec;
  if (!isPlainObject(spec)) return { ok: false, reason: 'spec is missing' };
  const federated = isPlainObject(spec.graphql) && !isEmptyJson(spec.graphql.graph_ref);
  if (federated && graphqlFields === undefined) {
    return { ok: false, reason: 'unsupported: graphql.graph_ref: its SubGraph or SuperGraph was not resolved (execution_mode subgraph or supergraph)' };
  }

  const body = { ...omit(spec, [...ROUTING_FIELDS, ...SECRET_REF_FIELDS]), ...certificateFields };
  if (federated && graphqlFields !== undefined) body.graphql = graphqlWith(spec, graphqlFields);
  body.api_id = id;
  if (orgId !== undefined && orgId !== '') body.org_id = orgId;
  body.version_data = withDefaultVersions(spec.version_data);
  if (policyIdOf && body.jwt_default_policies !== undefined) body.jwt_default_policies = jwtDefaultPolicies(body.jwt_default_policies, policyIdOf);
  return { ok: true, body };
}
