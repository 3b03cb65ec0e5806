/**
 * What a gateway serves → the resources that adopt it exactly. Pure: the gateway's objects
 * (as its list answers them) in, the custom resources, ConfigMaps and notes out.
 *
 * - A Tyk Classic API → an `ApiDefinition` whose spec is the definition with `api_id` pinned
 *   (the CRD's way to adopt an existing API); a Tyk OAS API → a `TykOasApiDefinition` and the
 *   `ConfigMap` holding its document (key `oas.json`), its id pinned in the document's
 *   `x-tyk-api-gateway.info.id`; a policy → a `SecurityPolicy` with `spec.id` pinned (on a
 *   Dashboard, the id the client lists it by: its own `id`, else its `_id`, which Tyk Operator
 *   and lib/gateway/tyk-dashboard.ts take for adoption).
 * - What the gateway adds itself is left out: the Go zero values its echo fills every field of
 *   its model with (absent and zero are the same to it), the object ids it makes up (a Classic
 *   API's `id`, a policy's `_id`, an OAS document's `info.dbId`), a Dashboard's timestamps
 *   (`date_created`, `last_updated`). What is left is what the
 *   object holds, so the payload code (lib/kinds/…/payload.ts) builds from the spec a body the
 *   gateway already agrees with on every field it names (checked by `exactness` in the tests).
 * - A policy's `access_rights` entry for an exported API becomes an `access_rights_array`
 *   entry naming that resource (kind, name, namespace); one for an API not exported stays in
 *   `access_rights` under its raw id, and a note says so.
 * - What cannot be expressed exactly gets a note (`Note`): kept as far as it can be, said once.
 *
 * Names: DNS-1123 labels from the API's or policy's name, unique among the APIs (both kinds)
 * and among the policies (names.ts). Objects are taken in the order of their names, then ids,
 * so the same gateway exports the same names.
 */

import { defaultId } from '../engine/ids.js';
import { TYK_EXTENSION, withoutOasFields } from '../gateway/oas.js';
import type { JsonObject } from '../gateway/types.js';
import type { KubeObject } from '../kube/types.js';
import { isObject, nonEmpty } from '../platform/guards.js';
import { NameSet } from './names.js';

/** What the gateway holds, as its lists answer it, by id. */
export interface GatewayContents {
  /** Tyk Classic APIs by api_id (an OAS API's Classic form, `is_oas: true`, is skipped) */
  readonly apis: ReadonlyMap<string, JsonObject>;
  /** Tyk OAS API documents by x-tyk-api-gateway.info.id */
  readonly oas: ReadonlyMap<string, JsonObject>;
  /** policies by the id the gateway client lists them by */
  readonly policies: ReadonlyMap<string, JsonObject>;
}

export interface ExportSettings {
  /** where the resources go */
  readonly namespace: string;
  /** TYK_ORG of the service that will import them, when set (its payload code sets org_id to it) */
  readonly orgId?: string;
}

/** One thing that could not be expressed exactly: about whom (an API's or policy's name), and what. */
export interface Note {
  readonly subject: string;
  readonly what: string;
}

/** One exported object, the notes about it, and its gateway id. */
export interface Exported {
  readonly object: KubeObject;
  readonly notes: readonly string[];
  /** the gateway id it adopts (none for a ConfigMap) */
  readonly id?: string;
}

export interface ExportResult {
  readonly resources: readonly Exported[];
  readonly notes: readonly Note[];
  /** some resource adopts an id other than its default one: the import needs ADOPT_NAMESPACES to hold the namespace */
  readonly needsAdoptNamespace: boolean;
}

/** The key the ConfigMap of an exported Tyk OAS API holds its document under. */
export const OAS_KEY = 'oas.json';

const GROUP_VERSION = 'tyk.tyk.io/v1alpha1';

/**
 * The value without its zero members (null, "", false, 0, and objects and arrays left empty),
 * at every depth of objects; array items are kept (their number matters), their own members
 * stripped unless none would be left. Undefined when nothing is left.
 */
export function withoutZeros(value: unknown): unknown {
  if (value === null || value === '' || value === false || value === 0) return undefined;
  // an item left empty stays whole: an empty object sent would be compared with the echo's whole item
  if (Array.isArray(value)) return value.length === 0 ? undefined : value.map((v) => (isObject(v) ? (withoutZeros(v) ?? v) : v));
  if (!isObject(value)) return value;
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(value)) {
    const kept = withoutZeros(v);
    if (kept !== undefined) out[k] = kept;
  }
  return Object.keys(out).length === 0 ? undefined : out;
}

function stripped(obj: JsonObject): JsonObject {
  return (withoutZeros(obj) as JsonObject | undefined) ?? {};
}

/** The fields our CRDs declare a type for: a value of another type is refused by the API server. */
const DECLARED: Readonly<Record<string, Readonly<Record<string, 'string' | 'boolean' | readonly string[]>>>> = {
  ApiDefinition: { name: 'string', api_id: 'string', active: 'boolean', domain: 'string' },
  SecurityPolicy: { id: 'string', name: 'string', active: 'boolean', state: ['active', 'draft', 'deny'] },
};

/** Drops the declared fields whose value our CRD would refuse, saying which. */
function fitSchema(kind: string, spec: JsonObject, notes: string[]): JsonObject {
  const out = { ...spec };
  for (const [field, type] of Object.entries(DECLARED[kind] ?? {})) {
    const v = out[field];
    if (v === undefined) continue;
    const fits = typeof type === 'string' ? typeof v === type : typeof v === 'string' && type.includes(v);
    if (fits) continue;
    delete out[field];
    notes.push(`${field}: ${JSON.stringify(v)} is not what the ${kind} CRD allows (${typeof type === 'string' ? `a ${type}` : type.join(', ')}); left out`);
  }
  if (kind === 'ApiDefinition' && isObject(out.proxy)) {
    const proxy = { ...out.proxy };
    for (const field of ['listen_path', 'target_url']) {
      if (proxy[field] !== undefined && typeof proxy[field] !== 'string') {
        notes.push(`proxy.${field}: ${JSON.stringify(proxy[field])} is not a string, as the ApiDefinition CRD requires; left out`);
        delete proxy[field];
      }
    }
    out.proxy = proxy;
  }
  return out;
}

/** What a Tyk Dashboard keeps of its own on APIs and policies (its object id, its timestamps): never ours to send. */
const DASHBOARD_OWNED = ['_id', 'date_created', 'last_updated'];

/** The certificate-id fields of a Classic API: ids in the gateway's store, which no Secret of the cluster holds. */
const CERTIFICATE_ID_FIELDS = ['certificates', 'client_certificates', 'upstream_certificates', 'pinned_public_keys'];

interface ApiEntry {
  readonly kind: 'ApiDefinition' | 'TykOasApiDefinition';
  readonly id: string;
  readonly name: string;
  /** the name a policy's api_name is built from on import */
  readonly grantName: string;
  readonly body: JsonObject;
}

function classicName(api: JsonObject): string {
  return nonEmpty(api.name) ?? '';
}

function oasInfo(doc: JsonObject): JsonObject {
  const ext = doc[TYK_EXTENSION];
  return isObject(ext) && isObject(ext.info) ? ext.info : {};
}

function oasName(doc: JsonObject): string {
  const info = isObject(doc.info) ? doc.info : {};
  return nonEmpty(oasInfo(doc).name) ?? nonEmpty(info.title) ?? '';
}

function sortedEntries(map: ReadonlyMap<string, JsonObject>, nameOf: (o: JsonObject) => string): [string, JsonObject][] {
  return [...map.entries()].sort(([ia, a], [ib, b]) => nameOf(a).localeCompare(nameOf(b)) || (ia < ib ? -1 : ia > ib ? 1 : 0));
}

function metadata(name: string, namespace: string): KubeObject['metadata'] {
  return { name, namespace };
}

function classicResource(id: string, api: JsonObject, name: string, settings: ExportSettings): Exported {
  const notes: string[] = [];
  const body = stripped(api);
  for (const owned of DASHBOARD_OWNED) delete body[owned];
  delete body.id;
  delete body.is_oas;
  body.api_id = id;
  for (const field of CERTIFICATE_ID_FIELDS) {
    if (body[field] !== undefined)
      notes.push(`${field}: kept as the gateway's certificate ids; no Secret of the cluster holds them (certificate_secret_names and the *_refs fields name Secrets instead)`);
  }
  const versionData = isObject(body.version_data) ? body.version_data : {};
  if (!isObject(versionData.versions) || Object.keys(versionData.versions).length === 0) {
    notes.push('version_data: the gateway holds no versions; the import adds the unversioned "Default" version (without one, Tyk answers 403 to every call)');
  }
  const org = nonEmpty(body.org_id);
  if (settings.orgId !== undefined && org !== undefined && org !== settings.orgId) {
    notes.push(`org_id: ${org} becomes ${settings.orgId} (TYK_ORG) on import`);
  }
  const spec = fitSchema('ApiDefinition', body, notes);
  return { object: { apiVersion: GROUP_VERSION, kind: 'ApiDefinition', metadata: metadata(name, settings.namespace), spec }, notes, id };
}

function oasResources(id: string, doc: JsonObject, name: string, settings: ExportSettings): Exported[] {
  const document = withoutOasFields(doc, ['dbId']);
  const configMap: KubeObject = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: metadata(name, settings.namespace),
    data: { [OAS_KEY]: `${JSON.stringify(document, null, 2)}\n` },
  };
  const api: KubeObject = {
    apiVersion: GROUP_VERSION,
    kind: 'TykOasApiDefinition',
    metadata: metadata(name, settings.namespace),
    spec: { tykOAS: { configmapRef: { name, namespace: settings.namespace, keyName: OAS_KEY } } },
  };
  return [
    { object: configMap, notes: [] },
    { object: api, notes: [], id },
  ];
}

/** A policy's access_rights entry as an access_rights_array entry naming `api`; notes where the import's entry will differ. */
function accessEntry(entry: JsonObject, api: ApiEntry, namespace: string, notes: string[]): JsonObject {
  const rights: JsonObject = {};
  for (const [k, v] of Object.entries(entry)) if (k !== 'api_id' && k !== 'api_name') rights[k] = v;
  const observedName = nonEmpty(entry.api_name) ?? '';
  if (observedName !== api.grantName) {
    notes.push(`access_rights[${api.id}].api_name: ${JSON.stringify(observedName)} becomes ${JSON.stringify(api.grantName)} (the name of the ${api.kind} it names) on import`);
  }
  const versions = Array.isArray(entry.versions) ? entry.versions : [];
  if (versions.length === 0) notes.push(`access_rights[${api.id}].versions: none on the gateway; the import grants ["Default"]`);
  return { name: api.name, namespace, ...(api.kind === 'TykOasApiDefinition' ? { kind: api.kind } : {}), ...rights };
}

function policyResource(id: string, policy: JsonObject, name: string, apis: ReadonlyMap<string, ApiEntry>, settings: ExportSettings): Exported {
  const notes: string[] = [];
  const body = stripped(policy);
  for (const owned of DASHBOARD_OWNED) delete body[owned];
  if (body.id === undefined) notes.push(`id: the policy has no id of its own; the import sets it to ${id} (its Dashboard _id), as Tyk Operator adopts a Dashboard policy`);
  body.id = id;
  const access = isObject(body.access_rights) ? body.access_rights : {};
  const kept: JsonObject = {};
  const array: JsonObject[] = [];
  for (const apiId of Object.keys(access).sort()) {
    const entry = isObject(access[apiId]) ? access[apiId] : {};
    const api = apis.get(apiId);
    if (api) array.push(accessEntry(entry, api, settings.namespace, notes));
    else {
      kept[apiId] = entry;
      notes.push(`access_rights: the API ${apiId} is not among the exported APIs; kept under its raw id in spec.access_rights`);
    }
  }
  delete body.access_rights;
  if (Object.keys(kept).length > 0) body.access_rights = kept;
  if (array.length > 0) body.access_rights_array = array;
  const org = nonEmpty(body.org_id);
  if (settings.orgId !== undefined && org !== undefined && org !== settings.orgId) {
    notes.push(`org_id: ${org} becomes ${settings.orgId} (TYK_ORG) on import`);
  }
  const spec = fitSchema('SecurityPolicy', body, notes);
  return { object: { apiVersion: GROUP_VERSION, kind: 'SecurityPolicy', metadata: metadata(name, settings.namespace), spec }, notes, id };
}

/** Every exported resource, the notes about them, and whether the import needs ADOPT_NAMESPACES. */
export function exportResources(contents: GatewayContents, settings: ExportSettings): ExportResult {
  const apiNames = new NameSet();
  const policyNames = new NameSet();
  const resources: Exported[] = [];
  const notes: Note[] = [];
  const apis = new Map<string, ApiEntry>();
  let needsAdoptNamespace = false;
  const adopts = (id: string, name: string) => {
    if (id !== defaultId(settings.namespace, name)) needsAdoptNamespace = true;
  };

  for (const [id, api] of sortedEntries(contents.apis, classicName)) {
    if (api.is_oas === true) continue;
    const name = apiNames.take(classicName(api), 'api');
    const exported = classicResource(id, api, name, settings);
    resources.push(exported);
    apis.set(id, { kind: 'ApiDefinition', id, name, grantName: nonEmpty(exported.object.spec?.name) ?? name, body: exported.object.spec ?? {} });
    for (const what of exported.notes) notes.push({ subject: classicName(api) || id, what });
    adopts(id, name);
  }
  for (const [id, doc] of sortedEntries(contents.oas, oasName)) {
    const name = apiNames.take(oasName(doc), 'api');
    resources.push(...oasResources(id, doc, name, settings));
    // a policy's api_name for a Tyk OAS API is its document's name (lib/kinds/shared/api-resolver.ts)
    apis.set(id, { kind: 'TykOasApiDefinition', id, name, grantName: nonEmpty(oasInfo(doc).name) ?? name, body: doc });
    adopts(id, name);
  }
  for (const [id, policy] of sortedEntries(contents.policies, (p) => nonEmpty(p.name) ?? '')) {
    const name = policyNames.take(nonEmpty(policy.name) ?? '', 'policy');
    const exported = policyResource(id, policy, name, apis, settings);
    resources.push(exported);
    for (const what of exported.notes) notes.push({ subject: nonEmpty(policy.name) ?? id, what });
    adopts(id, name);
  }
  return { resources, notes, needsAdoptNamespace };
}
