/**
 * ApiDefinition custom resource → Tyk API definition body. Pure.
 *
 * What it does, as Tyk Operator did:
 * - sets `api_id` to the object's gateway id (lib/reconcile/ids.ts);
 * - sets `org_id` to the configured org (TYK_ORG) when one is configured, else keeps the spec's;
 * - defaults `version_data` to a single unversioned "Default" version when the spec gives no
 *   versions (a definition without versions is loaded by Tyk and then answers 403 to every call);
 * - drops the operator-only fields that are not part of Tyk's API definition.
 *
 * Fields that need something this service does not do yet (certificates and keys from
 * Secrets, OperatorContexts) make the object unsupported: building returns a reason instead
 * of a body, so nothing half-configured reaches the gateway.
 */
import type { KubeObject } from '../kube/types.js';
import type { JsonObject } from '../gateway/types.js';

/** Operator-only fields that need Secrets or contexts, with what each needs. */
const UNSUPPORTED_FIELDS: Record<string, string> = {
  contextRef: 'OperatorContext references are not supported yet',
  certificate_secret_names: 'certificates from Secrets are not supported yet',
  client_certificate_refs: 'client certificates from Secrets are not supported yet',
  upstream_certificate_refs: 'upstream certificates from Secrets are not supported yet',
  pinned_public_keys_refs: 'pinned public keys from Secrets are not supported yet',
};

export type PayloadResult = { ok: true; body: JsonObject } | { ok: false; reason: string };

function isEmpty(v: unknown): boolean {
  if (v === undefined || v === null || v === '') return true;
  if (Array.isArray(v)) return v.length === 0;
  if (typeof v === 'object') return Object.keys(v as object).length === 0;
  return false;
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

export function apiDefinitionPayload(obj: KubeObject, id: string, orgId: string | undefined): PayloadResult {
  const spec = obj.spec;
  if (!isPlainObject(spec)) return { ok: false, reason: 'spec is missing' };
  const problems = Object.keys(UNSUPPORTED_FIELDS)
    .filter((field) => !isEmpty(spec[field]))
    .map((field) => `${field}: ${UNSUPPORTED_FIELDS[field]}`);
  if (problems.length > 0) return { ok: false, reason: `unsupported: ${problems.join('; ')}` };

  const body = omit(spec, Object.keys(UNSUPPORTED_FIELDS));
  body.api_id = id;
  if (orgId !== undefined && orgId !== '') body.org_id = orgId;
  body.version_data = withDefaultVersions(spec.version_data);
  return { ok: true, body };
}
