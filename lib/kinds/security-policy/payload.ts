/**
 * SecurityPolicy custom resource → Tyk policy body. Pure.
 *
 * - `id` is the policy's gateway id; `org_id` the configured org when there is one;
 * - `access_rights_array[] {name, namespace, kind, versions, …}` becomes Tyk's `access_rights`
 *   map, keyed by each referenced API's gateway id (an ApiDefinition's, or with `kind:
 *   TykOasApiDefinition` a Tyk OAS API's), with `api_id` and `api_name` filled in; an entry of
 *   another kind is refused, named;
 * - a reference that cannot be resolved yet (the API does not exist, is on another gateway,
 *   or has not been synced) makes the policy wait: building returns the missing references
 *   instead of a body, so a half-linked policy never reaches the gateway;
 * - fields only the operator knows (contextRef, access_rights_array, the Dashboard's _id) are
 *   not sent.
 */

import type { JsonObject } from '../../gateway/types.js';
import type { KubeObject } from '../../kube/types.js';
import { isObject } from '../../platform/guards.js';
import { type ApiRef, accessRefs, describeApiRef, entryKind } from '../shared/api-links.js';

/** What the run knows about an API a policy references. */
export type ApiResolution = { ok: true; id: string; name: string } | { ok: false; why: string };

export type PolicyPayloadResult = { ok: true; body: JsonObject; links: ApiRef[] } | { ok: false; reason: string } | { waiting: string; links: ApiRef[] };

const OPERATOR_ONLY = ['contextRef', 'access_rights_array', '_id'];
const ENTRY_OPERATOR_ONLY = ['name', 'namespace', 'kind'];

export function securityPolicyPayload(obj: KubeObject, id: string, orgId: string | undefined, resolve: (ref: ApiRef) => ApiResolution): PolicyPayloadResult {
  const spec = obj.spec;
  if (!isObject(spec)) return { ok: false, reason: 'spec is missing' };
  const links = accessRefs(obj);
  const accessRights: JsonObject = isObject(spec.access_rights) ? { ...spec.access_rights } : {};
  const missing: string[] = [];
  const entries = Array.isArray(spec.access_rights_array) ? spec.access_rights_array : [];
  for (const entry of entries) {
    if (!isObject(entry) || typeof entry.name !== 'string' || entry.name === '') continue;
    const kind = entryKind(entry);
    if (kind === undefined) {
      return { ok: false, reason: `access_rights_array entry ${entry.name} is a ${String(entry.kind)}; a policy grants ApiDefinitions and TykOasApiDefinitions` };
    }
    const ref: ApiRef = { kind, namespace: typeof entry.namespace === 'string' && entry.namespace !== '' ? entry.namespace : (obj.metadata.namespace ?? ''), name: entry.name };
    const api = resolve(ref);
    if (!api.ok) {
      missing.push(`${describeApiRef(ref)} ${api.why}`);
      continue;
    }
    const rights: JsonObject = {};
    for (const [k, v] of Object.entries(entry)) if (!ENTRY_OPERATOR_ONLY.includes(k)) rights[k] = v;
    accessRights[api.id] = { ...rights, api_id: api.id, api_name: api.name, versions: Array.isArray(entry.versions) && entry.versions.length > 0 ? entry.versions : ['Default'] };
  }
  if (missing.length > 0) return { waiting: `waiting for ${missing.join('; ')}`, links };
  const body: JsonObject = {};
  for (const [k, v] of Object.entries(spec)) if (!OPERATOR_ONLY.includes(k)) body[k] = v;
  body.id = id;
  if (orgId !== undefined && orgId !== '') body.org_id = orgId;
  body.access_rights = accessRights;
  return { ok: true, body, links };
}
