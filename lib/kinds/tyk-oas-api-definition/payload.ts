/**
 * TykOasApiDefinition custom resource → Tyk OAS API document. Pure: the ConfigMap, the Secrets
 * and the versions' ids are read by the load stage and handed in.
 *
 * - `configMapRefOf(obj)`: the ConfigMap the document lives in (`spec.tykOAS.configmapRef`; its
 *   namespace defaults to the resource's), and the record use naming it ("ConfigMap/<ns>/<name>").
 * - `oasDocumentOf(ref, configMap)`: the document under `keyName` (in `data`, or base64 in
 *   `binaryData`), parsed. A missing ConfigMap or key, text that is not JSON, or a document
 *   without an `x-tyk-api-gateway` object is refused, named, and nothing is built.
 * - `oasIdOf(doc, obj)`: the gateway id: the document's `x-tyk-api-gateway.info.id`, else the
 *   id in status (Tyk Operator's, or ours), else base64url of "namespace/name" (ids.ts).
 * - `tykOasPayload(doc, id, overrides)`: the document with our id in `info.id` and what the
 *   resource's own fields set over it, as the CRD describes them:
 *   `spec.clientCertificate {enabled, allowlist}` → `server.clientCertificate` (the allowlist's
 *   Secrets become certificate ids, certificate-refs.ts, added to the ids the document lists); `spec.versioning` →
 *   `info.versioning`, each version's TykOasApiDefinition named by its gateway id.
 * - `oasStatusFields(...)`: the status fields Tyk Operator's CRD has besides the id and the
 *   transaction: name, listen path, target URL, custom domain, enabled, and the hashes of the
 *   ConfigMap's content, the spec and the document sent.
 * Never throws; messages name the ConfigMap and key, never quote the document.
 */

import { hashOf } from '../../engine/hash.js';
import { gatewayIdFor } from '../../engine/ids.js';
import { MAX_DOCUMENT_BYTES, sizeProblem } from '../../engine/input-limits.js';
import { oasApiId, TYK_EXTENSION, withOasId } from '../../gateway/oas.js';
import type { JsonObject } from '../../gateway/types.js';
import type { KubeObject } from '../../kube/types.js';
import { isObject, nonEmpty, stringItems } from '../../platform/guards.js';
import type { ApiResolution } from '../security-policy/payload.js';
import { type ApiRef, describeApiRef } from '../shared/api-links.js';
import { TYK_OAS_API_DEFINITION } from './kind.js';

export interface ConfigMapRef {
  readonly namespace: string;
  readonly name: string;
  readonly keyName: string;
  /** "ConfigMap/<namespace>/<name>": the record use an event about the ConfigMap is routed by */
  readonly use: string;
}

export function configMapUse(namespace: string, name: string): string {
  return `ConfigMap/${namespace}/${name}`;
}

/** The spec's ConfigMap reference; a reason when it has none usable (the CRD requires name and keyName). */
export function configMapRefOf(obj: KubeObject): ConfigMapRef | { invalid: string } {
  const tykOAS = obj.spec?.tykOAS;
  const ref = isObject(tykOAS) ? tykOAS.configmapRef : undefined;
  const name = isObject(ref) ? nonEmpty(ref.name) : undefined;
  const keyName = isObject(ref) ? nonEmpty(ref.keyName) : undefined;
  if (!isObject(ref) || name === undefined || keyName === undefined) return { invalid: 'spec.tykOAS.configmapRef needs a name and a keyName' };
  const namespace = nonEmpty(ref.namespace) ?? obj.metadata.namespace ?? '';
  return { namespace, name, keyName, use: configMapUse(namespace, name) };
}

export type OasDocument =
  | { readonly ok: true; readonly doc: JsonObject; readonly contentHash: string }
  /** the ConfigMap does not exist (yet): the API waits for it, as for a Secret */
  | { readonly ok: false; readonly waiting: string }
  | { readonly ok: false; readonly invalid: string };

/** The document `ref` names in `configMap` (null: the API server said it does not exist). */
export function oasDocumentOf(ref: ConfigMapRef, configMap: KubeObject | null): OasDocument {
  const where = `ConfigMap ${ref.namespace}/${ref.name}`;
  if (configMap === null) return { ok: false, waiting: `${where} does not exist` };
  const text = textOf(configMap, ref.keyName);
  if (text === undefined) return { ok: false, invalid: `${where} has no key ${ref.keyName}` };
  const big = sizeProblem(`${where} key ${ref.keyName}`, Buffer.byteLength(text), MAX_DOCUMENT_BYTES);
  if (big !== undefined) return { ok: false, invalid: big };
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return { ok: false, invalid: `${where} key ${ref.keyName} is not valid JSON` };
  }
  if (!isObject(doc)) return { ok: false, invalid: `${where} key ${ref.keyName} is not a JSON object` };
  if (!isObject(doc[TYK_EXTENSION])) return { ok: false, invalid: `${where} key ${ref.keyName} has no ${TYK_EXTENSION} object: a Tyk OAS API needs one` };
  return { ok: true, doc, contentHash: hashOf(text) };
}

function textOf(configMap: KubeObject, key: string): string | undefined {
  const data = configMap.data;
  if (isObject(data) && typeof data[key] === 'string') return data[key];
  const binary = configMap.binaryData;
  if (isObject(binary) && typeof binary[key] === 'string') return Buffer.from(binary[key], 'base64').toString('utf8');
  return undefined;
}

/** The gateway id: the document's, else the status's, else the default. */
export function oasIdOf(doc: JsonObject | undefined, obj: KubeObject): string {
  return oasApiId(doc) ?? gatewayIdFor(TYK_OAS_API_DEFINITION, obj);
}

/** The references spec.versioning.versions names (kind defaults to TykOasApiDefinition, namespace to the resource's). */
export function versionRefsOf(obj: KubeObject): { name: string; ref: ApiRef }[] {
  const versioning = obj.spec?.versioning;
  const versions = isObject(versioning) && Array.isArray(versioning.versions) ? versioning.versions : [];
  const out: { name: string; ref: ApiRef }[] = [];
  for (const v of versions) {
    if (!isObject(v) || !isObject(v.tykOasApiDefinitionRef)) continue;
    const r = v.tykOasApiDefinitionRef;
    const name = nonEmpty(r.name);
    if (name === undefined) continue;
    const kind = r.kind === 'ApiDefinition' ? 'ApiDefinition' : 'TykOasApiDefinition';
    out.push({ name: nonEmpty(v.name) ?? name, ref: { kind, namespace: nonEmpty(r.namespace) ?? obj.metadata.namespace ?? '', name } });
  }
  return out;
}

/** What the resource's own fields put over the document, resolved by the load stage. */
export interface OasOverrides {
  /** the store ids of spec.clientCertificate.allowlist's Secrets, in order */
  readonly clientCertificates?: readonly string[];
  /** how a version's API is known: its gateway id, or why not yet */
  readonly resolveVersion?: (ref: ApiRef) => ApiResolution;
}

export type OasPayload = { readonly ok: true; readonly body: JsonObject } | { readonly ok: false; readonly invalid: string } | { readonly ok: false; readonly waiting: string };

export function tykOasPayload(obj: KubeObject, doc: JsonObject, id: string, overrides: OasOverrides = {}): OasPayload {
  const body = withOasId(doc, id);
  const ext = body[TYK_EXTENSION] as JsonObject;
  const spec = obj.spec ?? {};
  if (isObject(spec.clientCertificate)) {
    const cc = spec.clientCertificate;
    const server = isObject(ext.server) ? { ...ext.server } : {};
    const current = isObject(server.clientCertificate) ? server.clientCertificate : {};
    server.clientCertificate = {
      ...current,
      ...(typeof cc.enabled === 'boolean' ? { enabled: cc.enabled } : {}),
      ...(overrides.clientCertificates !== undefined ? { allowlist: [...new Set([...stringItems(current.allowlist), ...overrides.clientCertificates])] } : {}),
    };
    ext.server = server;
  }
  if (isObject(spec.versioning)) {
    const v = spec.versioning;
    const versions: JsonObject[] = [];
    const missing: string[] = [];
    for (const { name, ref } of versionRefsOf(obj)) {
      if (ref.kind !== 'TykOasApiDefinition') return { ok: false, invalid: `spec.versioning.versions: ${name} names an ApiDefinition; a Tyk OAS API's versions are TykOasApiDefinitions` };
      const resolved = overrides.resolveVersion?.(ref) ?? { ok: false, why: 'could not be read' };
      if (resolved.ok) versions.push({ name, id: resolved.id });
      else missing.push(`${describeApiRef(ref)} ${resolved.why}`);
    }
    if (missing.length > 0) return { ok: false, waiting: `waiting for ${missing.join('; ')}` };
    const info = isObject(ext.info) ? { ...ext.info } : {};
    const current = isObject(info.versioning) ? info.versioning : {};
    const pick = (k: string) => (v[k] !== undefined ? { [k]: v[k] } : {});
    info.versioning = { ...current, ...pick('enabled'), ...pick('name'), ...pick('default'), ...pick('location'), ...pick('key'), versions };
    ext.info = info;
  }
  return { ok: true, body };
}

/** The status fields besides id and transaction; absent values are removed from the status (null). */
export function oasStatusFields(obj: KubeObject, sent: JsonObject | undefined, configMapHash: string | undefined): Record<string, unknown> {
  const ext = sent && isObject(sent[TYK_EXTENSION]) ? sent[TYK_EXTENSION] : {};
  const info = isObject(ext.info) ? ext.info : {};
  const server = isObject(ext.server) ? ext.server : {};
  const upstream = isObject(ext.upstream) ? ext.upstream : {};
  const listenPath = isObject(server.listenPath) ? nonEmpty(server.listenPath.value) : undefined;
  const domain = isObject(server.customDomain) && server.customDomain.enabled !== false ? nonEmpty(server.customDomain.name) : undefined;
  const state = isObject(info.state) ? info.state : {};
  return {
    name: nonEmpty(info.name) ?? null,
    listenPath: listenPath ?? null,
    targetURL: nonEmpty(upstream.url) ?? null,
    domain: domain ?? null,
    enabled: sent ? state.active === true : null,
    latestConfigMapHash: configMapHash ?? null,
    latestCRDSpecHash: hashOf(obj.spec ?? null),
    latestTykSpecHash: sent ? hashOf(sent) : null,
  };
}
