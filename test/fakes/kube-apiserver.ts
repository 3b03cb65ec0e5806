/**
 * A loopback fake of the Kubernetes API server, for tests: a real HTTP server on 127.0.0.1 that
 * our client and @kubernetes/client-node talk to exactly as to a kube-apiserver. Nothing in it is
 * a mock; tests seed and inspect it through a small direct API and can inject faults.
 *
 * What it models (as the real server behaves, error bodies included):
 * - bearer-token auth (401 Status; /version and the health endpoints also answer anonymously);
 * - generic resources: namespaced or cluster-scoped, custom (`/apis/{group}/{version}/...`) and
 *   built-in (`/api/v1/...`); discovery documents for what is registered. Custom resources come
 *   from CRD YAML (`crds`, default our deploy/crds; see ./crd-schema.ts); Secret, ConfigMap and
 *   Event are built in; Gateway API's ReferenceGrant is served (v1beta1) only when its CRD is
 *   among `crds` (REFERENCE_GRANT_CRD), and otherwise answers 404, as a cluster without it;
 * - object metadata: uid, creationTimestamp, a global resourceVersion bumped on every real write
 *   (a write that changes nothing is not a write: same resourceVersion, no watch event), generation
 *   (custom resources only: 1 on create, bumped when anything but metadata and status changes, and
 *   once when deletion is first requested, as the real store does);
 * - custom resources under their CRD's structural schema, in the real server's order, on every
 *   create, PUT and patch of the object and of its status: the patch is applied to the stored
 *   object; then decoding prunes unknown fields at every depth (not under
 *   x-kubernetes-preserve-unknown-fields or additionalProperties; unknown metadata fields too),
 *   drops null map values whose schema is neither nullable nor defaulted, and applies
 *   `default`s; then status is dropped (create) or taken from the stored object (main-resource
 *   update) or the rest is (status update); then the whole object is validated: type (integer
 *   is not number), required, enum, nullable, x-kubernetes-int-or-string, items,
 *   additionalProperties, bounds, lengths, pattern, item and property counts,
 *   multipleOf, the formats the server checks (date-time, date, byte, uuid*, password; int32,
 *   int64 and the like are not checked), x-kubernetes-list-type map/set (ratcheted; on status
 *   updates too, as 1.26+ does and 1.20 did not), plus name and metadata rules. A violation is a 422 Invalid Status with kube-openapi's messages and one
 *   cause per error (field paths as 1.20 prints them: list indices left out, except for
 *   list-type errors). Pruned paths come back in a `Warning` header (`fieldValidation=Strict`
 *   turns them into a 400), as 1.27+ does;
 * - "" in a typed, non-nullable field is refused as null (`... must be of type string: "null"`),
 *   as kube-apiserver 1.20 built with Go >= 1.16 does (`emptyStringIsNull`, default on);
 * - metadata beyond names (./builtin-validation.ts): label keys and values, ownerReferences
 *   (required fields, one controller), on every kind; the built-in networking.k8s.io/v1 Ingress
 *   (namespaced, a status subresource, generation bumped by spec changes) with its own
 *   validation (rules, hosts, paths and pathType, backends and ports, TLS, the class annotation
 *   and field not both set on create);
 * - optimistic concurrency: PUT needs metadata.resourceVersion (custom resources; 422 without it,
 *   409 when stale), a resourceVersion carried by a merge or JSON patch is a precondition too;
 * - PATCH: merge patch as evanphx/json-patch applies RFC 7386 (a null removes the field, also in
 *   status: it is not validated as a value; nulls in what the patch adds are pruned), JSON patch
 *   (RFC 6902, `test` failing → 422), strategic merge only for built-in types (415 for custom
 *   resources);
 * - create (201, AlreadyExists, generateName, name validation, namespace mismatch, a
 *   resourceVersion in the body → 500), DELETE with finalizers (deletionTimestamp, grace 0),
 *   delete-during-update when the last finalizer goes, no new finalizers while deleting,
 *   Events whose involvedObject.namespace is not their own refused (422), as the real server's
 *   legacy Event validation does,
 *   deletionTimestamp immutable, delete preconditions, deletecollection;
 * - list: sorted by etcd key (namespace/name, byte order), limit/continue with expirable tokens
 *   (410 Expired), remainingItemCount, label selectors (=, ==, !=, in, notin, exists, !exists),
 *   field selectors (metadata.name, metadata.namespace, and per-type fields), metadata only for
 *   `Accept: application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1` (an empty one
 *   with `"items": null`, as kube-apiserver 1.20 answers it);
 * - watch: replay from a bounded history, 410 as an ERROR event when the resourceVersion is too old,
 *   synthetic ADDED events without a resourceVersion, selector transitions (an object leaving the
 *   selector is DELETED), bookmarks on demand, timeoutSeconds.
 *
 * What it does not model: TLS and other auth methods, RBAC, namespaces as objects (any namespace
 * exists), admission webhooks, CRD versions other than the storage version (and conversion),
 * CEL rules (x-kubernetes-validations), allOf/anyOf/oneOf/not, the formats it does not check
 * (a CRD using any of these fails to load, so nothing is silently skipped), validation
 * ratcheting (1.28+), embedded resources, the scale subresource, server-side apply (415), dryRun, managedFields, protobuf/YAML bodies (415), resourceVersion semantics on GET
 * and LIST (always the current state), consistent snapshots across list pages, garbage
 * collection (propagationPolicy is ignored; Foreground/Orphan add no finalizer), strategic merge
 * directives (strategic merge is treated as a merge patch for built-in types). Answers (not
 * watches) carry a Content-Length where the real server chunks its large ones; clients read both
 * alike.
 *
 * Cost: reads and merge patches work on the stored object itself, without copying it first (a
 * stored object is replaced by a write, never changed in place), a write stores the copy it
 * made, and the keys of each type are kept in list order until one comes or goes, so a page of
 * a list is not a sort of every object.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ingressErrors, metadataErrors } from './builtin-validation.js';
import { type CrdResource, type CrdSchema, DEFAULT_CRD_DIR, type FieldError, loadCrds } from './crd-schema.js';
import { type FaultSpec as BaseFaultSpec, FaultBook, type FaultHandle, withholdResponse } from './faults.js';
import { CallLog, cloneJson as clone, listenOnLoopback, readBody, setBody } from './http-plumbing.js';

export type { FaultHandle } from './faults.js';

// ---------------------------------------------------------------------------------------------
// Public types

/** A kind of resource the fake serves. */
export interface ResourceType {
  /** '' for the core group (served under /api/v1) */
  group: string;
  version: string;
  kind: string;
  plural: string;
  /** default `${kind}List` */
  listKind?: string;
  /** default true */
  namespaced?: boolean;
  /** built-in (not a custom resource): default `group === ''`. Built-in types allow PUT without
   * resourceVersion, accept strategic merge patches, keep no generation, are not pruned, and their
   * list items carry no apiVersion/kind. */
  builtin?: boolean;
  /** serves `/status` and isolates status from the main resource; default false */
  statusSubresource?: boolean;
  /** keep metadata.generation; default `!builtin` */
  generation?: boolean;
  /** the structural schema (custom resources): pruning, defaulting and validation follow it.
   * Undefined: no schema (only unknown top-level fields are pruned, nothing is validated). */
  schema?: CrdSchema;
  /** field selectors supported beyond metadata.name and metadata.namespace */
  selectableFields?: readonly string[];
  /** a built-in type's own validation of a create (`old` undefined) or main-resource update */
  validate?: (obj: Record<string, unknown>, old: Record<string, unknown> | undefined) => FieldError[];
}

export interface FakeObjectMeta {
  name: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  finalizers?: string[];
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  [key: string]: unknown;
}

/** An object as the fake stores and returns it (compatible with lib/kube/types KubeObject). */
export interface FakeKubeObject {
  apiVersion: string;
  kind: string;
  metadata: FakeObjectMeta;
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
  [key: string]: unknown;
}

/** What `put` accepts: metadata.name may be replaced by generateName; namespace defaults to "default". */
export interface FakeObjectInput {
  apiVersion: string;
  kind: string;
  metadata: Partial<FakeObjectMeta>;
  [key: string]: unknown;
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

/** A Kubernetes WatchEvent, as a watch stream (or POST /webhooks/watch) carries it. */
export interface WatchEvent {
  type: WatchEventType;
  object: FakeKubeObject;
}

export type WatchEventListener = (event: WatchEvent, resource: Readonly<ResourceType>) => void;

/** One request the fake received. `status` is 0 while unanswered, or when dropped/hung. */
export interface FakeCall {
  method: string;
  /** the URL pathname */
  path: string;
  query: Record<string, string>;
  contentType?: string;
  /** the request body, parsed as JSON when it is JSON, else the text; absent when empty */
  body?: unknown;
  status: number;
}

/** A fault to inject; a `status` without `body` answers with a Status object for the code. */
export type FaultSpec = BaseFaultSpec<FakeCall>;

export interface FakeKubeApiServerOptions {
  /** the bearer token required; default random */
  token?: string;
  /** default 0 (a free port) */
  port?: number;
  /** register the built-in kinds Secret, ConfigMap and Event; default true */
  defaultResources?: boolean;
  /** CustomResourceDefinition YAML files, or directories of them, whose kinds are served with
   * their schemas; default our own, deploy/crds. `[]` serves no custom resource. */
  crds?: readonly string[];
  /** more resource types (a type with the same group and plural replaces one registered before) */
  resources?: readonly ResourceType[];
  /**
   * An empty string in a field whose schema has a type and is not nullable is refused as if it
   * were null (422 `... must be of type string: "null"`); default true. kube-apiserver 1.20 does
   * this when built with Go 1.16 or later, as the Debian package this project builds is
   * (kubernetes/kubernetes#99804, fixed in 1.21 by kube-openapi#230); the official 1.20 build
   * (Go 1.15) and 1.21+ accept "". On by default so that what we send passes both.
   */
  emptyStringIsNull?: boolean;
  /** how many write events the watch history keeps; default 1000 */
  watchHistorySize?: number;
  /** the clock for creation and deletion timestamps; default the real one */
  now?: () => Date;
  /** the namespace of the kubeconfig context; default "default" */
  contextNamespace?: string;
  /** who the token belongs to, as SelfSubjectReview answers; default a service account's name */
  username?: string;
}

/** Gateway API's ReferenceGrant CRD (v1beta1, the upstream schema's fields): add it to `crds` to serve ReferenceGrants. */
export const REFERENCE_GRANT_CRD = fileURLToPath(new URL('../fixtures/crds/referencegrants.yaml', import.meta.url));
/** Gateway API's GatewayClass, Gateway and HTTPRoute CRDs (v1, the tests' structural schema of the fields we read and write): add it to `crds` to serve them. */
export const GATEWAY_API_CRDS = fileURLToPath(new URL('../fixtures/crds/gateway-api.yaml', import.meta.url));

// ---------------------------------------------------------------------------------------------
// Built-in resource types (custom resources come from CRDs: see ./crd-schema.ts)

/** The built-in kinds we use. */
export const BUILTIN_RESOURCE_TYPES: readonly ResourceType[] = [
  {
    group: 'networking.k8s.io',
    version: 'v1',
    kind: 'Ingress',
    plural: 'ingresses',
    builtin: true,
    statusSubresource: true,
    // the real strategy sets generation 1 on create and bumps it when the spec changes
    generation: true,
    validate: (obj, old) => ingressErrors(obj, old === undefined),
  },
  { group: '', version: 'v1', kind: 'Secret', plural: 'secrets', selectableFields: ['type'] },
  { group: '', version: 'v1', kind: 'ConfigMap', plural: 'configmaps' },
  // an HTTPRoute's backends, and the namespaces a Gateway listener selects routes from by label
  { group: '', version: 'v1', kind: 'Service', plural: 'services', statusSubresource: true },
  { group: '', version: 'v1', kind: 'Namespace', plural: 'namespaces', namespaced: false, statusSubresource: true },
  {
    group: '',
    version: 'v1',
    kind: 'Event',
    plural: 'events',
    selectableFields: [
      'involvedObject.kind',
      'involvedObject.namespace',
      'involvedObject.name',
      'involvedObject.uid',
      'involvedObject.apiVersion',
      'involvedObject.resourceVersion',
      'involvedObject.fieldPath',
      'reason',
      'reportingComponent',
      'source',
      'type',
    ],
  },
];

/** A CRD as a resource type. */
export function crdResourceType(crd: CrdResource): ResourceType {
  return {
    group: crd.group,
    version: crd.version,
    kind: crd.kind,
    plural: crd.plural,
    listKind: crd.listKind,
    namespaced: crd.namespaced,
    statusSubresource: crd.statusSubresource,
    schema: crd.schema,
  };
}

interface ResolvedType {
  readonly spec: Readonly<ResourceType>;
  /** "plural.group", or "plural" for the core group */
  readonly id: string;
  readonly group: string;
  readonly version: string;
  readonly apiVersion: string;
  readonly kind: string;
  readonly listKind: string;
  readonly plural: string;
  readonly namespaced: boolean;
  readonly builtin: boolean;
  readonly statusSubresource: boolean;
  readonly generation: boolean;
  readonly schema: CrdSchema | undefined;
  readonly selectableFields: readonly string[];
}

function resolveType(spec: ResourceType): ResolvedType {
  const builtin = spec.builtin ?? spec.group === '';
  return {
    spec: { ...spec },
    id: spec.group ? `${spec.plural}.${spec.group}` : spec.plural,
    group: spec.group,
    version: spec.version,
    apiVersion: spec.group ? `${spec.group}/${spec.version}` : spec.version,
    kind: spec.kind,
    listKind: spec.listKind ?? `${spec.kind}List`,
    plural: spec.plural,
    namespaced: spec.namespaced ?? true,
    builtin,
    statusSubresource: spec.statusSubresource ?? false,
    generation: spec.generation ?? !builtin,
    schema: spec.schema,
    selectableFields: ['metadata.name', 'metadata.namespace', ...(spec.selectableFields ?? [])],
  };
}

/** "apidefinitions.tyk.tyk.io", or "secrets" for core: how the server names a resource in messages. */
function qualifiedResource(t: ResolvedType): string {
  return t.group ? `${t.plural}.${t.group}` : t.plural;
}

/** "ApiDefinition.tyk.tyk.io", or "Secret" for core. */
function qualifiedKind(t: ResolvedType): string {
  return t.group ? `${t.kind}.${t.group}` : t.kind;
}

// ---------------------------------------------------------------------------------------------
// JSON helpers

type Obj = Record<string, unknown>;

function isObject(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((x, i) => deepEqual(x, b[i]));
  }
  if (isObject(a) && isObject(b)) {
    const ka = Object.keys(a);
    const kb = Object.keys(b);
    return ka.length === kb.length && ka.every((k) => Object.hasOwn(b, k) && deepEqual(a[k], b[k]));
  }
  return false;
}

function metaOf(obj: Obj): Obj {
  if (!isObject(obj.metadata)) obj.metadata = {};
  return obj.metadata as Obj;
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

function finalizersOf(obj: Obj): string[] {
  const f = metaOf(obj).finalizers;
  return Array.isArray(f) ? f.filter((x): x is string => typeof x === 'string') : [];
}

function objectKey(namespace: string | undefined, name: string): string {
  return `${namespace ?? ''}/${name}`;
}

function keyOf(obj: Obj): string {
  const m = metaOf(obj);
  return objectKey(str(m.namespace), String(m.name));
}

/** The index of the first of `sorted` (in key order) whose key is `start` or after it. */
function firstAtOrAfter(sorted: readonly Obj[], start: string): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (keyOf(sorted[mid] as Obj) < start) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** RFC 3339 with second precision, as metav1.Time serialises. */
function rfc3339(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

// ---------------------------------------------------------------------------------------------
// Errors, as Status objects

class ApiError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string | undefined,
    message: string,
    readonly details?: Obj,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
  }

  toStatus(): Obj {
    const body: Obj = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: this.message };
    if (this.reason) body.reason = this.reason;
    if (this.details) body.details = this.details;
    body.code = this.code;
    return body;
  }
}

function resourceDetails(t: ResolvedType, name: string): Obj {
  return t.group ? { name, group: t.group, kind: t.plural } : { name, kind: t.plural };
}

const errors = {
  unauthorized: () => new ApiError(401, 'Unauthorized', 'Unauthorized'),
  notFound: (t: ResolvedType, name: string) => new ApiError(404, 'NotFound', `${qualifiedResource(t)} "${name}" not found`, resourceDetails(t, name)),
  noSuchPath: () => new ApiError(404, 'NotFound', 'the server could not find the requested resource', {}),
  alreadyExists: (t: ResolvedType, name: string) => new ApiError(409, 'AlreadyExists', `${qualifiedResource(t)} "${name}" already exists`, resourceDetails(t, name)),
  conflict: (t: ResolvedType, name: string, why: string) => new ApiError(409, 'Conflict', `Operation cannot be fulfilled on ${qualifiedResource(t)} "${name}": ${why}`, resourceDetails(t, name)),
  staleResourceVersion: (t: ResolvedType, name: string) => errors.conflict(t, name, 'the object has been modified; please apply your changes to the latest version and try again'),
  badRequest: (message: string) => new ApiError(400, 'BadRequest', message),
  methodNotAllowed: () => new ApiError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource', {}),
  unsupportedMediaType: (accepted: readonly string[]) =>
    new ApiError(415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: ${accepted.join(', ')}`),
  /** What the server answers for any JSON patch it cannot apply (a failed `test` included). */
  patchNotApplied: () => new ApiError(422, 'Invalid', 'the server rejected our request due to an error in our request', {}),
  expired: (message: string) => new ApiError(410, 'Expired', message),
  internal: (message: string) => new ApiError(500, 'InternalError', `Internal error occurred: ${message}`),
};

/** 422 Invalid, formatted as field.ErrorList.ToAggregate() is. `kindName` is a qualified kind. */
function invalid(kindName: string, detailsKind: string, t: ResolvedType, name: string, errs: FieldError[]): ApiError {
  const parts = [...new Set(errs.map((e) => `${e.field}: ${e.message}`))]; // ToAggregate drops repeats
  const joined = parts.length === 1 ? parts[0] : `[${parts.join(', ')}]`;
  // metav1.StatusDetails' and StatusCause's field order, as the server serialises them
  const causes = errs.map((e) => ({ reason: e.reason, message: e.message, field: e.field }));
  const details: Obj = t.group ? { name, group: t.group, kind: detailsKind, causes } : { name, kind: detailsKind, causes };
  return new ApiError(422, 'Invalid', `${kindName} "${name}" is invalid: ${joined}`, details);
}

const goQuote = (s: string): string => JSON.stringify(s);

function invalidOnKind(t: ResolvedType, name: string, errs: FieldError[]): ApiError {
  return invalid(qualifiedKind(t), t.kind, t, name, errs);
}

const fieldErrors = {
  invalid: (field: string, value: string, detail: string): FieldError => ({
    field,
    reason: 'FieldValueInvalid',
    message: `Invalid value: ${value}: ${detail}`,
  }),
  forbidden: (field: string, detail: string): FieldError => ({
    field,
    reason: 'FieldValueForbidden',
    message: `Forbidden: ${detail}`,
  }),
  required: (field: string, detail: string): FieldError => ({
    field,
    reason: 'FieldValueRequired',
    message: `Required value: ${detail}`,
  }),
};

/** The Status body a fault answers with when it gives none. */
function faultStatus(code: number): Obj {
  const known: Record<number, [string, string]> = {
    400: ['BadRequest', 'the server rejected our request for an unknown reason'],
    401: ['Unauthorized', 'Unauthorized'],
    403: ['Forbidden', 'the server does not allow access to the requested resource'],
    404: ['NotFound', 'the server could not find the requested resource'],
    409: ['Conflict', 'the server reported a conflict'],
    410: ['Expired', 'the resource version is too old'],
    429: ['TooManyRequests', 'the server has received too many requests and has asked us to try again later'],
    500: ['InternalError', 'Internal error occurred: injected fault'],
    503: ['ServiceUnavailable', 'the server is currently unable to handle the request'],
    504: ['Timeout', 'the server was unable to return a response in the time allotted, but may still be processing the request'],
  };
  const [reason, message] = known[code] ?? [code >= 500 ? 'InternalError' : 'BadRequest', `injected fault (${code})`];
  return new ApiError(code, reason, message).toStatus();
}

// ---------------------------------------------------------------------------------------------
// Patches

/** Deep copy without nulls (evanphx/json-patch's pruneNulls: object members and list items). */
function withoutNulls(v: unknown): unknown {
  if (Array.isArray(v)) return v.filter((x) => x !== null).map(withoutNulls);
  if (!isObject(v)) return clone(v);
  return Object.fromEntries(
    Object.entries(v)
      .filter(([, x]) => x !== null)
      .map(([k, x]) => [k, withoutNulls(x)]),
  );
}

/**
 * A JSON merge patch as kube-apiserver applies it (evanphx/json-patch MergePatch, RFC 7386):
 * a null removes the member; what the patch adds where the target has nothing, null or a
 * non-object loses its nulls (in lists too); a list or scalar patched over an object is taken
 * as it is.
 */
function mergePatch(target: Obj, patch: Obj): Obj {
  const result: Obj = { ...target };
  for (const [k, v] of Object.entries(patch)) {
    const cur = result[k];
    if (v === null) delete result[k];
    else if (!isObject(cur)) result[k] = withoutNulls(v);
    else result[k] = isObject(v) ? mergePatch(cur, v) : clone(v);
  }
  return result;
}

class PatchFailed extends Error {}

function parsePointer(pointer: unknown): string[] {
  if (typeof pointer !== 'string') throw new PatchFailed('path is not a string');
  if (pointer === '') return [];
  if (!pointer.startsWith('/')) throw new PatchFailed(`invalid pointer ${pointer}`);
  return pointer
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function arrayIndex(token: string, length: number, allowEnd: boolean): number {
  if (allowEnd && token === '-') return length;
  if (!/^(0|[1-9]\d*)$/.test(token)) throw new PatchFailed(`invalid array index ${token}`);
  const i = Number(token);
  if (i > length || (!allowEnd && i === length)) throw new PatchFailed(`array index ${i} out of bounds`);
  return i;
}

function getAt(doc: unknown, tokens: readonly string[]): unknown {
  let cur = doc;
  for (const token of tokens) {
    if (Array.isArray(cur)) cur = cur[arrayIndex(token, cur.length, false)];
    else if (isObject(cur) && Object.hasOwn(cur, token)) cur = cur[token];
    else throw new PatchFailed(`path not found at ${token}`);
  }
  return cur;
}

/** Applies one mutation at the parent of `tokens`; returns the new document (for root changes). */
function mutateAt(doc: unknown, tokens: readonly string[], op: 'add' | 'remove' | 'replace', value?: unknown): unknown {
  if (tokens.length === 0) {
    if (op === 'remove') throw new PatchFailed('cannot remove the root');
    return value;
  }
  const parent = getAt(doc, tokens.slice(0, -1));
  const last = tokens[tokens.length - 1] as string;
  if (Array.isArray(parent)) {
    const i = arrayIndex(last, parent.length, op === 'add');
    if (op === 'add') parent.splice(i, 0, value);
    else if (op === 'remove') parent.splice(i, 1);
    else parent[i] = value;
  } else if (isObject(parent)) {
    if (op !== 'add' && !Object.hasOwn(parent, last)) throw new PatchFailed(`path not found at ${last}`);
    if (op === 'remove') delete parent[last];
    else parent[last] = value;
  } else {
    throw new PatchFailed('parent is not a container');
  }
  return doc;
}

/** RFC 6902 JSON patch; throws PatchFailed. */
function applyJsonPatch(document: unknown, ops: readonly unknown[]): unknown {
  let doc = clone(document);
  for (const raw of ops) {
    if (!isObject(raw)) throw new PatchFailed('operation is not an object');
    const path = parsePointer(raw.path);
    const needsValue = raw.op === 'add' || raw.op === 'replace' || raw.op === 'test';
    if (needsValue && !Object.hasOwn(raw, 'value')) throw new PatchFailed('missing value');
    switch (raw.op) {
      case 'add':
      case 'replace':
        doc = mutateAt(doc, path, raw.op, clone(raw.value));
        break;
      case 'remove':
        doc = mutateAt(doc, path, 'remove');
        break;
      case 'test':
        if (!deepEqual(getAt(doc, path), raw.value)) throw new PatchFailed('test failed');
        break;
      case 'move':
      case 'copy': {
        const from = parsePointer(raw.from);
        const value = clone(getAt(doc, from));
        if (raw.op === 'move') {
          if (path.length > from.length && from.every((t, i) => path[i] === t)) {
            throw new PatchFailed('cannot move into a child of itself');
          }
          doc = mutateAt(doc, from, 'remove');
        }
        doc = mutateAt(doc, path, 'add', value);
        break;
      }
      default:
        throw new PatchFailed(`unknown operation ${String(raw.op)}`);
    }
  }
  return doc;
}

// ---------------------------------------------------------------------------------------------
// Selectors

interface LabelRequirement {
  key: string;
  op: 'exists' | '!exists' | '=' | '!=' | 'in' | 'notin';
  values: string[];
}

const LABEL_KEY = '[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?';
const LABEL_VALUE = '([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?';

function splitTopLevel(s: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '(') depth++;
    else if (s[i] === ')') depth--;
    else if (s[i] === ',' && depth === 0) {
      out.push(s.slice(start, i));
      start = i + 1;
    }
  }
  out.push(s.slice(start));
  return out.map((x) => x.trim());
}

function parseLabelSelector(selector: string | undefined): LabelRequirement[] {
  if (!selector || selector.trim() === '') return [];
  return splitTopLevel(selector).map((term) => {
    let m = new RegExp(`^!\\s*(${LABEL_KEY})$`).exec(term);
    if (m) return { key: m[1] as string, op: '!exists', values: [] };
    m = new RegExp(`^(${LABEL_KEY})\\s+(in|notin)\\s+\\(([^)]*)\\)$`).exec(term);
    if (m) {
      const values = (m[4] as string).split(',').map((v) => v.trim());
      return { key: m[1] as string, op: m[3] as 'in' | 'notin', values };
    }
    m = new RegExp(`^(${LABEL_KEY})\\s*(==|=|!=)\\s*(${LABEL_VALUE})$`).exec(term);
    if (m) return { key: m[1] as string, op: m[3] === '!=' ? '!=' : '=', values: [m[4] as string] };
    m = new RegExp(`^(${LABEL_KEY})$`).exec(term);
    if (m) return { key: m[1] as string, op: 'exists', values: [] };
    throw errors.badRequest(`unable to parse requirement: found '${term}', expected: key, !key, key=value, key!=value, key in (...), key notin (...)`);
  });
}

function matchesLabels(reqs: readonly LabelRequirement[], obj: Obj): boolean {
  const raw = metaOf(obj).labels;
  const labels: Obj = isObject(raw) ? raw : {};
  return reqs.every((r) => {
    const has = Object.hasOwn(labels, r.key);
    const value = has ? String(labels[r.key]) : undefined;
    switch (r.op) {
      case 'exists':
        return has;
      case '!exists':
        return !has;
      case '=':
        return value === r.values[0];
      case '!=':
        return value !== r.values[0];
      case 'in':
        return value !== undefined && r.values.includes(value);
      case 'notin':
        return value === undefined || !r.values.includes(value);
    }
  });
}

interface FieldRequirement {
  field: string;
  negate: boolean;
  value: string;
}

function parseFieldSelector(selector: string | undefined, t: ResolvedType): FieldRequirement[] {
  if (!selector || selector.trim() === '') return [];
  return selector.split(',').map((term) => {
    const m = /^\s*([^=!\s]+)\s*(==|=|!=)\s*(.*?)\s*$/.exec(term);
    if (!m) throw errors.badRequest(`invalid selector: '${selector}'; can't understand '${term}'`);
    const field = m[1] as string;
    if (!t.selectableFields.includes(field)) throw errors.badRequest(`field label not supported: ${field}`);
    return { field, negate: m[2] === '!=', value: m[3] as string };
  });
}

function fieldValue(obj: Obj, path: string): string {
  let cur: unknown = obj;
  for (const part of path.split('.')) cur = isObject(cur) ? cur[part] : undefined;
  return cur === undefined || cur === null ? '' : typeof cur === 'object' ? JSON.stringify(cur) : String(cur);
}

function matchesFields(reqs: readonly FieldRequirement[], obj: Obj): boolean {
  return reqs.every((r) => (fieldValue(obj, r.field) === r.value) !== r.negate);
}

// ---------------------------------------------------------------------------------------------
// Continue tokens: base64 of {"v":"meta.k8s.io/v1","rv":N,"start":"<key>\u0000"}, as etcd3's are.

interface ContinueToken {
  rv: number;
  start: string;
}

function encodeContinue(rv: number, lastKey: string): string {
  return Buffer.from(JSON.stringify({ v: 'meta.k8s.io/v1', rv, start: `${lastKey}\u0000` })).toString('base64');
}

function decodeContinue(token: string): ContinueToken {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(token, 'base64').toString('utf8'));
  } catch {
    throw errors.badRequest('continue key is not valid: illegal base64 data or malformed JSON');
  }
  if (!isObject(parsed) || parsed.v !== 'meta.k8s.io/v1') {
    throw errors.badRequest('continue key is not valid: server does not recognize this encoded key');
  }
  if (typeof parsed.rv !== 'number' || typeof parsed.start !== 'string' || parsed.start === '') {
    throw errors.badRequest('continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)');
  }
  return { rv: parsed.rv, start: parsed.start };
}

const EXPIRED_CONTINUE =
  'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.';

// ---------------------------------------------------------------------------------------------
// Validation of names (metadata.name of namespaced custom resources and core kinds we serve)

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

function nameErrors(name: string): FieldError[] {
  if (name.length > 253) {
    return [fieldErrors.invalid('metadata.name', goQuote(name), 'must be no more than 253 characters')];
  }
  if (!DNS1123_SUBDOMAIN.test(name)) {
    return [
      fieldErrors.invalid(
        'metadata.name',
        goQuote(name),
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
      ),
    ];
  }
  return [];
}

// ---------------------------------------------------------------------------------------------
// Storage preparation: what the real server does to an object before it stores it

const OBJECT_META_FIELDS = new Set([
  'name',
  'generateName',
  'namespace',
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
  'labels',
  'annotations',
  'ownerReferences',
  'finalizers',
  'managedFields',
]);

const CUSTOM_RESOURCE_FIELDS = new Set(['apiVersion', 'kind', 'metadata', 'spec', 'status']);

/** Drops what the schema does not know, at every depth; returns the dropped field paths. */
function prune(t: ResolvedType, obj: Obj): string[] {
  const dropped: string[] = [];
  const meta = metaOf(obj);
  for (const k of Object.keys(meta)) {
    if (!OBJECT_META_FIELDS.has(k)) {
      delete meta[k];
      dropped.push(`metadata.${k}`);
    }
  }
  if (t.builtin) return dropped;
  if (t.schema) return [...dropped, ...t.schema.prune(obj)];
  for (const k of Object.keys(obj)) {
    if (!CUSTOM_RESOURCE_FIELDS.has(k)) {
      delete obj[k];
      dropped.push(k);
    }
  }
  return dropped;
}

/** Secret: stringData is merged into data; data must be base64; type defaults to Opaque. */
function normalizeSecret(obj: Obj): void {
  const data: Obj = isObject(obj.data) ? { ...obj.data } : {};
  if (isObject(obj.stringData)) {
    for (const [k, v] of Object.entries(obj.stringData)) data[k] = Buffer.from(String(v), 'utf8').toString('base64');
  }
  delete obj.stringData;
  for (const [k, v] of Object.entries(data)) {
    if (typeof v !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(v) || v.length % 4 !== 0) {
      throw errors.badRequest(`Secret in version "v1" cannot be handled as a Secret: illegal base64 data in data.${k}`);
    }
  }
  if (Object.keys(data).length > 0) obj.data = data;
  if (typeof obj.type !== 'string' || obj.type === '') obj.type = 'Opaque';
}

/**
 * Event (core/v1, without eventTime: the form client-go's core recorder and we write): what
 * the API server's legacy validation checks, involvedObject.namespace equal to the Event's own
 * namespace (an empty one only in "default"). Events with eventTime have other rules
 * (reportingController, action, the 1 KiB note), not modelled: they pass unchecked.
 */
function validateEvent(t: ResolvedType, obj: Obj): void {
  if (obj.eventTime !== undefined && obj.eventTime !== null) return;
  const meta = metaOf(obj);
  const involved = isObject(obj.involvedObject) ? obj.involvedObject : {};
  const want = str(involved.namespace) ?? '';
  const namespace = str(meta.namespace) ?? '';
  if (want === '' ? namespace !== '' && namespace !== 'default' : want !== namespace) {
    throw invalidOnKind(t, String(meta.name ?? ''), [fieldErrors.invalid('involvedObject.namespace', goQuote(want), 'does not match event.namespace')]);
  }
}

function normalize(t: ResolvedType, obj: Obj): void {
  if (t.group === '' && t.kind === 'Secret') normalizeSecret(obj);
  if (t.group === '' && t.kind === 'Event') validateEvent(t, obj);
}

/** What changes generation: everything but metadata (and status, when it is a subresource). */
function generationContent(t: ResolvedType, obj: Obj): Obj {
  const rest: Obj = { ...obj };
  delete rest.metadata;
  delete rest.apiVersion;
  delete rest.kind;
  if (t.statusSubresource) delete rest.status;
  return rest;
}

// ---------------------------------------------------------------------------------------------
// The server

interface HistoryEntry {
  readonly rv: number;
  readonly typeId: string;
  readonly type: WatchEventType;
  /** the stored object after the write (for DELETED: the last state, with the deletion's rv) */
  readonly object: Obj;
  /** the stored object before the write */
  readonly prev: Obj | undefined;
}

interface Watcher {
  readonly type: ResolvedType;
  readonly namespace: string | undefined;
  readonly labels: LabelRequirement[];
  readonly fields: FieldRequirement[];
  readonly name: string | undefined;
  readonly bookmarks: boolean;
  readonly res: ServerResponse;
  timer?: NodeJS.Timeout;
}

interface Ctx {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly call: FakeCall;
  readonly raw: string;
}

type ResourceRoute = {
  type: ResolvedType;
  namespace: string | undefined;
  name: string | undefined;
  subresource: string | undefined;
};

type Route = { kind: 'resource'; route: ResourceRoute } | { kind: 'json'; body: Obj } | { kind: 'text'; body: string };

const SELF_SUBJECT_REVIEWS = '/apis/authentication.k8s.io/v1/selfsubjectreviews';

const ANONYMOUS_PATHS = new Set(['/version', '/healthz', '/livez', '/readyz']);

/** Characters the real server uses for generated names. */
const NAME_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

const PATCH_TYPES_CUSTOM = ['application/json-patch+json', 'application/merge-patch+json', 'application/apply-patch+yaml'];
const PATCH_TYPES_BUILTIN = ['application/json-patch+json', 'application/merge-patch+json', 'application/strategic-merge-patch+json', 'application/apply-patch+yaml'];
const BODY_TYPES = ['application/json', 'application/yaml', 'application/vnd.kubernetes.protobuf'];

function mediaType(contentType: string | undefined): string {
  return (contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
}

function isTrue(v: string | undefined): boolean {
  return v !== undefined && /^(1|t|true)$/i.test(v);
}

export class FakeKubeApiServer {
  private readonly callLog = new CallLog<FakeCall>();
  /** Every request received, in order. */
  readonly calls: FakeCall[] = this.callLog.entries;
  readonly token: string;

  private readonly server: Server;
  private readonly types = new Map<string, ResolvedType>();
  private readonly objects = new Map<string, Map<string, Obj>>();
  /** Each type's keys in etcd order, kept until a key comes or goes (lists page through it). */
  private readonly sortedKeys = new Map<string, string[]>();
  private readonly history: HistoryEntry[] = [];
  private readonly historySize: number;
  private readonly watchers = new Set<Watcher>();
  private readonly listeners = new Set<WatchEventListener>();
  private readonly hung = new Set<ServerResponse>();
  private readonly delays = new Set<{ timer: NodeJS.Timeout; resolve: () => void }>();
  private readonly faults = new FaultBook<FakeCall>();
  private readonly now: () => Date;
  private readonly contextNamespace: string;
  private readonly emptyStringIsNull: boolean;
  /** the token's user, for SelfSubjectReview */
  readonly username: string;
  private rv = 0;
  /** watches from a resourceVersion below this are answered 410 */
  private historyFloor = 0;
  /** continue tokens minted below this resourceVersion are answered 410 */
  private continueFloor = 0;
  private nameSeq = 0;
  private port = 0;
  private closing: Promise<void> | undefined;

  constructor(options: FakeKubeApiServerOptions = {}) {
    this.token = options.token ?? randomBytes(24).toString('hex');
    this.historySize = options.watchHistorySize ?? 1000;
    this.now = options.now ?? (() => new Date());
    this.contextNamespace = options.contextNamespace ?? 'default';
    this.username = options.username ?? 'system:serviceaccount:gateway-reconciler:gateway-reconciler';
    this.emptyStringIsNull = options.emptyStringIsNull ?? true;
    if (options.defaultResources ?? true) BUILTIN_RESOURCE_TYPES.forEach((t) => this.registerResource(t));
    loadCrds(options.crds ?? [DEFAULT_CRD_DIR]).forEach((crd) => this.registerResource(crdResourceType(crd)));
    options.resources?.forEach((t) => this.registerResource(t));
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((err: unknown) => this.sendError(res, undefined, err));
    });
  }

  /** Starts listening on 127.0.0.1. */
  async listen(port = 0): Promise<void> {
    this.port = await listenOnLoopback(this.server, port);
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** The current (latest) resourceVersion. */
  get resourceVersion(): string {
    return String(this.rv);
  }

  /** How many watch streams are open. */
  get watchCount(): number {
    return this.watchers.size;
  }

  // ---- lifecycle ------------------------------------------------------------------------------

  /** A kubeconfig for this server: one cluster, one token user, current-context set. The cluster
   * has `insecure-skip-tls-verify: true` because @kubernetes/client-node 1.x refuses a plain
   * http:// server without it ("HTTP protocol is not allowed when skipTLSVerify is not set"). */
  kubeconfigYaml(): string {
    return [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      '- name: fake',
      '  cluster:',
      `    server: ${goQuote(this.url)}`,
      // @kubernetes/client-node refuses http:// servers unless this is set
      '    insecure-skip-tls-verify: true',
      'users:',
      '- name: fake',
      '  user:',
      `    token: ${goQuote(this.token)}`,
      'contexts:',
      '- name: fake',
      '  context:',
      '    cluster: fake',
      '    user: fake',
      `    namespace: ${goQuote(this.contextNamespace)}`,
      'current-context: fake',
      'preferences: {}',
      '',
    ].join('\n');
  }

  /** Writes the kubeconfig to `dir/filename` (mode 0600) and returns its path. */
  async writeKubeconfig(dir: string, filename = 'kubeconfig'): Promise<string> {
    await mkdir(dir, { recursive: true });
    const path = join(dir, filename);
    await writeFile(path, this.kubeconfigYaml(), { mode: 0o600 });
    return path;
  }

  /** Ends open watches and hung requests, then closes the server. Idempotent. */
  close(): Promise<void> {
    this.closing ??= new Promise<void>((resolve) => {
      this.closeWatches();
      for (const res of this.hung) res.destroy();
      this.hung.clear();
      for (const d of this.delays) {
        clearTimeout(d.timer);
        d.resolve();
      }
      this.delays.clear();
      if (!this.server.listening) return resolve();
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
    return this.closing;
  }

  // ---- resource types -------------------------------------------------------------------------

  registerResource(type: ResourceType): void {
    const t = resolveType(type);
    this.types.set(t.id, t);
    if (!this.objects.has(t.id)) this.objects.set(t.id, new Map());
  }

  /** Stops serving a type (as when its CRD is not installed); its objects are forgotten. */
  unregisterResource(resource: string): void {
    const t = this.typeByName(resource);
    this.types.delete(t.id);
    this.objects.delete(t.id);
    this.sortedKeys.delete(t.id);
  }

  // ---- direct test API (no HTTP) -----------------------------------------------------------------

  /** Creates or replaces an object as given (status and finalizers included; not pruned, not
   * validated: a way to seed what a real cluster may already hold); assigns resourceVersion,
   * and uid, creationTimestamp and generation unless given. Emits ADDED or MODIFIED. */
  put(input: FakeObjectInput): FakeKubeObject {
    const t = this.typeForObject(input.apiVersion, input.kind);
    const obj = clone(input) as Obj;
    const meta = metaOf(obj);
    if (t.namespaced) meta.namespace = str(meta.namespace) ?? 'default';
    else delete meta.namespace;
    if (!str(meta.name)) {
      const generateName = str(meta.generateName);
      if (!generateName) throw new Error('put: metadata.name or metadata.generateName is required');
      meta.name = this.generateName(t, generateName, str(meta.namespace));
    }
    const prev = this.bucket(t).get(keyOf(obj));
    const prevMeta = prev ? metaOf(prev) : {};
    meta.uid = str(meta.uid) ?? str(prevMeta.uid) ?? randomUUID();
    meta.creationTimestamp = str(meta.creationTimestamp) ?? str(prevMeta.creationTimestamp) ?? this.timestamp();
    if (t.generation && typeof meta.generation !== 'number') {
      const prevGen = typeof prevMeta.generation === 'number' ? prevMeta.generation : 0;
      const changed = !prev || !deepEqual(generationContent(t, prev), generationContent(t, obj));
      meta.generation = prev ? prevGen + (changed ? 1 : 0) : 1;
    }
    return clone(this.store(t, obj, prev)) as FakeKubeObject;
  }

  /** A copy of the stored object, or undefined. `resource` is a plural ("apidefinitions") or "plural.group". */
  getObject(resource: string, namespace: string | undefined, name: string): FakeKubeObject | undefined {
    const t = this.typeByName(resource);
    const obj = this.bucket(t).get(objectKey(t.namespaced ? namespace : undefined, name));
    return obj ? (clone(obj) as FakeKubeObject) : undefined;
  }

  /** Copies of the stored objects, in list order, in one namespace or all. */
  listObjects(resource: string, namespace?: string): FakeKubeObject[] {
    const t = this.typeByName(resource);
    return this.select(t, namespace, [], []).map((o) => clone(o) as FakeKubeObject);
  }

  /** Removes an object at once, finalizers or not. Emits DELETED. Returns whether it existed. */
  remove(resource: string, namespace: string | undefined, name: string): boolean {
    const t = this.typeByName(resource);
    const obj = this.bucket(t).get(objectKey(t.namespaced ? namespace : undefined, name));
    if (!obj) return false;
    this.storeDelete(t, obj);
    return true;
  }

  /** What DELETE does: sets deletionTimestamp when finalizers remain, else removes.
   * Returns the object as it is afterwards, or undefined when it is gone (or never existed). */
  markDeleting(resource: string, namespace: string | undefined, name: string): FakeKubeObject | undefined {
    const t = this.typeByName(resource);
    const obj = this.bucket(t).get(objectKey(t.namespaced ? namespace : undefined, name));
    if (!obj) return undefined;
    const result = this.deleteObject(t, obj);
    return result.removed ? undefined : (clone(result.object) as FakeKubeObject);
  }

  /** Calls `listener` after every write (ADDED, MODIFIED, DELETED) of any type. Returns an unsubscribe. */
  onEvent(listener: WatchEventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Makes every continue token minted so far answer 410 Expired. */
  expireContinueTokens(): void {
    this.rv += 1; // an unused resourceVersion, so that lists minted from now on stay valid
    this.continueFloor = this.rv;
  }

  /** Forgets the watch history, as an etcd compaction does: watches from an older
   * resourceVersion than the current one get 410. */
  compactWatchHistory(): void {
    this.history.length = 0;
    this.historyFloor = this.rv;
  }

  /** Sends a BOOKMARK (current resourceVersion) to every watch that asked for bookmarks. */
  sendBookmarks(): void {
    for (const w of this.watchers) if (w.bookmarks) this.writeEvent(w, { type: 'BOOKMARK', object: this.bookmark(w.type) });
  }

  /** Ends every open watch stream cleanly, as the server does when a watch times out. */
  closeWatches(): void {
    for (const w of [...this.watchers]) this.endWatch(w);
  }

  // ---- faults and calls ------------------------------------------------------------------------

  inject(spec: FaultSpec): FaultHandle {
    return this.faults.inject(spec);
  }

  clearFaults(): void {
    this.faults.clear();
  }

  /** How many calls were made with this method (case-insensitive; "*" for any) and path. */
  count(method: string, path?: RegExp | string): number {
    return this.callLog.count(method, path);
  }

  resetCalls(): void {
    this.callLog.clear();
  }

  // ---- HTTP -----------------------------------------------------------------------------------

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake.invalid');
    const call: FakeCall = {
      method: (req.method ?? 'GET').toUpperCase(),
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      status: 0,
    };
    if (req.headers['content-type']) call.contentType = req.headers['content-type'];
    this.callLog.push(call);
    const raw = await readBody(req);
    setBody(call, raw);
    const ctx: Ctx = { req, res, call, raw };

    const fault = this.faults.take(call);
    if (fault && (await this.applyFault(ctx, fault))) return;
    if (this.closing) {
      res.destroy();
      return;
    }
    try {
      this.authenticate(req, url.pathname);
      if (url.pathname === SELF_SUBJECT_REVIEWS) return this.serveSelfSubjectReview(ctx);
      this.route(ctx, this.resolvePath(url.pathname));
    } catch (err) {
      this.sendError(res, call, err);
    }
  }

  private authenticate(req: IncomingMessage, pathname: string): void {
    const header = req.headers.authorization;
    if (header === undefined && ANONYMOUS_PATHS.has(pathname)) return;
    const m = /^Bearer\s+(.+)$/i.exec(header ?? '');
    if (!m || m[1] !== this.token) throw errors.unauthorized();
  }

  private resolvePath(pathname: string): Route {
    const segs = pathname.split('/').slice(1).map(decodeURIComponent);
    if (segs[segs.length - 1] === '' && segs.length > 1) segs.pop();
    const [first, ...rest] = segs;
    if (segs.length === 1 && ANONYMOUS_PATHS.has(pathname)) {
      return pathname === '/version' ? { kind: 'json', body: VERSION_INFO } : { kind: 'text', body: 'ok' };
    }
    if (first === 'api') {
      if (rest.length === 0) return { kind: 'json', body: this.apiVersions() };
      if (rest[0] !== 'v1') throw errors.noSuchPath();
      if (rest.length === 1) return this.resourceList('', 'v1');
      return { kind: 'resource', route: this.resourceRoute('', 'v1', rest.slice(1)) };
    }
    if (first === 'apis') {
      const [group, version, ...more] = rest;
      if (group === undefined) return { kind: 'json', body: this.apiGroupList() };
      if (version === undefined) return { kind: 'json', body: this.apiGroup(group) };
      if (more.length === 0) return this.resourceList(group, version);
      return { kind: 'resource', route: this.resourceRoute(group, version, more) };
    }
    throw errors.noSuchPath();
  }

  private resourceRoute(group: string, version: string, segs: string[]): ResourceRoute {
    const find = (plural: string | undefined): ResolvedType => {
      const t = this.types.get(group ? `${plural}.${group}` : String(plural));
      if (!t || t.version !== version) throw errors.noSuchPath();
      return t;
    };
    if (segs[0] === 'namespaces' && segs.length >= 3) {
      const [, namespace, plural, name, subresource, ...extra] = segs;
      const type = find(plural);
      if (!type.namespaced || extra.length > 0) throw errors.noSuchPath();
      return { type, namespace, name, subresource };
    }
    const [plural, name, subresource, ...extra] = segs;
    const type = find(plural);
    if (extra.length > 0 || (type.namespaced && name !== undefined)) throw errors.noSuchPath();
    return { type, namespace: undefined, name, subresource };
  }

  /** POST only; answers who the bearer token belongs to (authentication.k8s.io/v1, GA in 1.28). */
  private serveSelfSubjectReview(ctx: Ctx): void {
    if (ctx.call.method !== 'POST') throw errors.methodNotAllowed();
    const userInfo = { username: this.username, groups: ['system:serviceaccounts', 'system:authenticated'] };
    this.sendJson(ctx, 201, { kind: 'SelfSubjectReview', apiVersion: 'authentication.k8s.io/v1', metadata: { creationTimestamp: null }, status: { userInfo } });
  }

  private route(ctx: Ctx, route: Route): void {
    const method = ctx.call.method;
    if (route.kind !== 'resource') {
      if (method !== 'GET') throw errors.methodNotAllowed();
      if (route.kind === 'json') this.sendJson(ctx, 200, route.body);
      else this.sendText(ctx, 200, route.body);
      return;
    }
    const { type, namespace, name, subresource } = route.route;
    if (subresource !== undefined && (subresource !== 'status' || !type.statusSubresource)) throw errors.noSuchPath();
    const q = ctx.call.query;
    if (name === undefined) {
      if (method === 'GET') return isTrue(q.watch) ? this.serveWatch(ctx, type, namespace) : this.serveList(ctx, type, namespace);
      if (type.namespaced && namespace === undefined) throw errors.methodNotAllowed();
      if (method === 'POST') return this.serveCreate(ctx, type, namespace);
      if (method === 'DELETE') return this.serveDeleteCollection(ctx, type, namespace);
      throw errors.methodNotAllowed();
    }
    if (method === 'GET') {
      if (isTrue(q.watch)) return this.serveWatch(ctx, type, namespace, name);
      return this.sendJson(ctx, 200, this.mustPeek(type, namespace, name));
    }
    if (method === 'PUT') return this.serveReplace(ctx, type, namespace, name, subresource === 'status');
    if (method === 'PATCH') return this.servePatch(ctx, type, namespace, name, subresource === 'status');
    if (method === 'DELETE' && subresource === undefined) return this.serveDelete(ctx, type, namespace, name);
    throw errors.methodNotAllowed();
  }

  // ---- handlers -------------------------------------------------------------------------------

  private serveList(ctx: Ctx, t: ResolvedType, namespace: string | undefined): void {
    const q = ctx.call.query;
    const labels = parseLabelSelector(q.labelSelector);
    const fields = parseFieldSelector(q.fieldSelector, t);
    let items = this.select(t, namespace, labels, fields);
    let listRv = this.rv;
    if (q.continue) {
      const token = decodeContinue(q.continue);
      if (token.rv !== -1 && token.rv < this.continueFloor) {
        const body = errors.expired(EXPIRED_CONTINUE).toStatus();
        // biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is the fake's separator in continue tokens
        body.metadata = { continue: encodeContinue(-1, token.start.replace(/\u0000$/, '')) };
        return this.sendJson(ctx, 410, body);
      }
      listRv = token.rv === -1 ? this.rv : token.rv;
      items = items.slice(firstAtOrAfter(items, token.start)); // items are in key order
    }
    const limit = q.limit === undefined || q.limit === '' ? 0 : Number(q.limit);
    if (!Number.isInteger(limit) || limit < 0) throw errors.badRequest(`invalid limit: ${q.limit}`);
    const metadata: Obj = { resourceVersion: String(listRv) };
    if (limit > 0 && items.length > limit) {
      const remaining = items.length - limit;
      items = items.slice(0, limit);
      metadata.continue = encodeContinue(listRv, keyOf(items[items.length - 1] as Obj));
      if (labels.length === 0 && fields.length === 0) metadata.remainingItemCount = remaining;
    }
    // content negotiation as the API server does it: a PartialObjectMetadataList holds each item's metadata alone
    if (/;\s*as=PartialObjectMetadataList\b/.test(String(ctx.req.headers.accept ?? ''))) {
      const partial = items.map((o) => ({ apiVersion: 'meta.k8s.io/v1', kind: 'PartialObjectMetadata', metadata: o.metadata }));
      // kube-apiserver 1.20 answers an empty one with "items": null (design.md), the full list with []
      return this.sendJson(ctx, 200, { apiVersion: 'meta.k8s.io/v1', kind: 'PartialObjectMetadataList', metadata, items: partial.length === 0 ? null : partial });
    }
    this.sendJson(ctx, 200, {
      apiVersion: t.apiVersion,
      kind: t.listKind,
      metadata,
      items: items.map((o) => this.listItem(t, o)),
    });
  }

  private serveCreate(ctx: Ctx, t: ResolvedType, namespace: string | undefined): void {
    const body = this.jsonBody(ctx);
    const { object, warnings } = this.create(t, namespace, body, ctx.call.query.fieldValidation);
    this.sendJson(ctx, 201, object, warningHeaders(warnings));
  }

  private serveReplace(ctx: Ctx, t: ResolvedType, namespace: string | undefined, name: string, status: boolean): void {
    const body = this.jsonBody(ctx);
    const current = this.mustGet(t, namespace, name);
    this.checkIdentity(t, body, namespace, name);
    const { object, warnings } = this.update(t, current, body, status, ctx.call.query.fieldValidation);
    this.sendJson(ctx, 200, object, warningHeaders(warnings));
  }

  private servePatch(ctx: Ctx, t: ResolvedType, namespace: string | undefined, name: string, status: boolean): void {
    const type = mediaType(ctx.call.contentType);
    const accepted = t.builtin ? PATCH_TYPES_BUILTIN : PATCH_TYPES_CUSTOM;
    const supported = type === 'application/merge-patch+json' || type === 'application/json-patch+json' || (type === 'application/strategic-merge-patch+json' && t.builtin);
    if (type === 'application/apply-patch+yaml') {
      throw new ApiError(415, 'UnsupportedMediaType', 'server-side apply is not modelled by the fake kube-apiserver');
    }
    if (!supported) throw errors.unsupportedMediaType(accepted);
    // read, not copied: both patchers leave it as it is (applyJsonPatch works on a copy, mergePatch
    // copies what it changes), and update() stores a copy of what they give back
    const current = this.mustPeek(t, namespace, name);
    const patch = parseJson(ctx.raw);
    let patched: unknown;
    if (type === 'application/json-patch+json') {
      if (!Array.isArray(patch)) throw errors.badRequest('json: cannot unmarshal object into Go value of type jsonpatch.Patch');
      try {
        patched = applyJsonPatch(current, patch);
      } catch (err) {
        if (err instanceof PatchFailed) throw errors.patchNotApplied();
        throw err;
      }
    } else {
      if (!isObject(patch)) throw errors.badRequest('the patch is not a JSON object');
      patched = mergePatch(current, patch);
    }
    if (!isObject(patched)) throw errors.patchNotApplied();
    this.checkIdentity(t, patched, namespace, name);
    const { object, warnings } = this.update(t, current, patched, status, ctx.call.query.fieldValidation);
    this.sendJson(ctx, 200, object, warningHeaders(warnings));
  }

  private serveDelete(ctx: Ctx, t: ResolvedType, namespace: string | undefined, name: string): void {
    const current = this.mustGet(t, namespace, name);
    const options = ctx.raw.trim() === '' ? {} : parseJson(ctx.raw);
    const pre = isObject(options) && isObject(options.preconditions) ? options.preconditions : {};
    const meta = metaOf(current);
    if (typeof pre.uid === 'string' && pre.uid !== meta.uid) {
      throw errors.conflict(t, name, `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${String(meta.uid)}`);
    }
    if (typeof pre.resourceVersion === 'string' && pre.resourceVersion !== meta.resourceVersion) {
      throw errors.conflict(t, name, `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${String(meta.resourceVersion)}`);
    }
    const result = this.deleteObject(t, current);
    if (!result.removed) return this.sendJson(ctx, 200, result.object);
    this.sendJson(ctx, 200, {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Success',
      details: { ...resourceDetails(t, name), uid: meta.uid },
    });
  }

  private serveDeleteCollection(ctx: Ctx, t: ResolvedType, namespace: string | undefined): void {
    const q = ctx.call.query;
    const selected = this.select(t, namespace, parseLabelSelector(q.labelSelector), parseFieldSelector(q.fieldSelector, t));
    const items = selected.map((o) => this.deleteObject(t, o).object);
    this.sendJson(ctx, 200, {
      apiVersion: t.apiVersion,
      kind: t.listKind,
      metadata: { resourceVersion: String(this.rv) },
      items: items.map((o) => this.listItem(t, o)),
    });
  }

  private serveWatch(ctx: Ctx, t: ResolvedType, namespace: string | undefined, name?: string): void {
    const q = ctx.call.query;
    const labels = parseLabelSelector(q.labelSelector);
    const fields = parseFieldSelector(q.fieldSelector, t);
    const from = q.resourceVersion === undefined || q.resourceVersion === '' || q.resourceVersion === '0' ? undefined : q.resourceVersion;
    if (from !== undefined && !/^\d+$/.test(from)) throw errors.badRequest(`invalid resource version: ${from}`);
    if (from !== undefined && Number(from) > this.rv) {
      throw new ApiError(504, 'Timeout', `Too large resource version: ${from}, current: ${this.rv}`, {
        causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }],
        retryAfterSeconds: 1,
      });
    }
    const w: Watcher = { type: t, namespace, labels, fields, name, bookmarks: isTrue(q.allowWatchBookmarks), res: ctx.res };
    ctx.res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache, private' });
    ctx.res.flushHeaders();
    ctx.call.status = 200;
    if (from !== undefined && Number(from) < this.historyFloor) {
      const gone = new ApiError(410, 'Expired', `too old resource version: ${from} (${this.historyFloor})`);
      this.writeEvent(w, { type: 'ERROR', object: gone.toStatus() });
      ctx.res.end();
      return;
    }
    if (from === undefined) {
      for (const obj of this.select(t, namespace, labels, fields)) {
        if (this.watcherMatches(w, obj)) this.writeEvent(w, { type: 'ADDED', object: obj });
      }
      if (w.bookmarks && isTrue(q.sendInitialEvents)) {
        const mark = this.bookmark(t);
        metaOf(mark).annotations = { 'k8s.io/initial-events-end': 'true' };
        this.writeEvent(w, { type: 'BOOKMARK', object: mark });
      }
    } else {
      for (const entry of this.history) if (entry.rv > Number(from) && entry.typeId === t.id) this.deliver(w, entry);
    }
    this.watchers.add(w);
    ctx.res.on('close', () => this.endWatch(w));
    const timeout = Number(q.timeoutSeconds);
    if (q.timeoutSeconds !== undefined && q.timeoutSeconds !== '' && Number.isFinite(timeout) && timeout >= 0) {
      w.timer = setTimeout(() => this.endWatch(w), timeout * 1000);
    }
  }

  // ---- object lifecycle -------------------------------------------------------------------------

  private create(t: ResolvedType, namespace: string | undefined, body: Obj, fieldValidation: string | undefined): { object: Obj; warnings: string[] } {
    this.checkTypeMeta(t, body);
    const obj = clone(body);
    const meta = metaOf(obj);
    if (str(meta.resourceVersion)) {
      throw new ApiError(500, undefined, 'resourceVersion should not be set on objects to be created');
    }
    const bodyNamespace = str(meta.namespace);
    if (t.namespaced && bodyNamespace && bodyNamespace !== namespace) {
      throw errors.badRequest('the namespace of the provided object does not match the namespace sent on the request');
    }
    if (t.namespaced) meta.namespace = namespace;
    else delete meta.namespace;
    if (!str(meta.name)) {
      const generateName = str(meta.generateName);
      if (!generateName) {
        throw invalidOnKind(t, '', [fieldErrors.required('metadata.name', 'name or generateName is required')]);
      }
      meta.name = this.generateName(t, generateName, namespace);
    }
    const name = String(meta.name);
    const warnings = this.prepare(t, obj, fieldValidation);
    if (t.statusSubresource) delete obj.status;
    meta.uid = randomUUID();
    meta.creationTimestamp = this.timestamp();
    delete meta.deletionTimestamp;
    delete meta.deletionGracePeriodSeconds;
    if (t.generation) meta.generation = 1;
    else delete meta.generation;
    const errs = [...nameErrors(name), ...metadataErrors(obj), ...(t.spec.validate?.(obj, undefined) ?? []), ...this.schemaErrors(t, obj)];
    if (errs.length > 0) throw invalidOnKind(t, name, errs);
    if (this.bucket(t).has(keyOf(obj))) throw errors.alreadyExists(t, name);
    return { object: this.store(t, obj, undefined), warnings };
  }

  /** PUT and PATCH both end here, with the full object the client wants stored. */
  private update(t: ResolvedType, current: Obj, incoming: Obj, statusOnly: boolean, fieldValidation: string | undefined): { object: Obj; warnings: string[] } {
    const name = String(metaOf(current).name);
    const curMeta = metaOf(current);
    const wantRv = str(metaOf(incoming).resourceVersion);
    if (wantRv === undefined && !t.builtin) {
      throw invalid(qualifiedResource(t), t.plural, t, name, [fieldErrors.invalid('metadata.resourceVersion', '0x0', 'must be specified for an update')]);
    }
    if (wantRv !== undefined && wantRv !== curMeta.resourceVersion) throw errors.staleResourceVersion(t, name);
    this.checkTypeMeta(t, incoming);

    let next: Obj;
    let warnings: string[];
    const errs: FieldError[] = [];
    if (statusOnly) {
      next = clone(current);
      if (incoming.status === undefined) delete next.status;
      else next.status = clone(incoming.status);
      warnings = this.prepare(t, next, fieldValidation);
    } else {
      next = clone(incoming);
      warnings = this.prepare(t, next, fieldValidation);
      errs.push(...this.keepSystemFields(t, current, next), ...metadataErrors(next), ...(t.spec.validate?.(next, current) ?? []));
    }
    errs.push(...this.schemaErrors(t, next, current));
    if (errs.length > 0) throw invalidOnKind(t, name, errs);

    if (deepEqual(next, current)) return { object: clone(current), warnings };
    if (curMeta.deletionTimestamp !== undefined && finalizersOf(next).length === 0) {
      // delete-during-update: the stored object goes; the answer is the object as sent
      this.storeDelete(t, current);
      return { object: next, warnings };
    }
    return { object: this.store(t, next, current), warnings };
  }

  /** What BeforeUpdate and ValidateObjectMetaUpdate do to a main-resource update; returns
   * ValidateObjectMetaUpdate's errors. */
  private keepSystemFields(t: ResolvedType, current: Obj, next: Obj): FieldError[] {
    const cur = metaOf(current);
    const meta = metaOf(next);
    const errs: FieldError[] = [];
    if (str(meta.uid) && meta.uid !== cur.uid) {
      errs.push(fieldErrors.invalid('metadata.uid', goQuote(String(meta.uid)), 'field is immutable'));
    }
    meta.uid = cur.uid;
    meta.creationTimestamp = cur.creationTimestamp;
    meta.resourceVersion = cur.resourceVersion;
    if (cur.deletionTimestamp !== undefined) {
      meta.deletionTimestamp = cur.deletionTimestamp;
      meta.deletionGracePeriodSeconds ??= cur.deletionGracePeriodSeconds;
      const before = new Set(finalizersOf(current));
      const added = [...new Set(finalizersOf(next).filter((f) => !before.has(f)))].sort();
      if (added.length > 0) {
        errs.push(fieldErrors.forbidden('metadata.finalizers', `no new finalizers can be added if the object is being deleted, found new finalizers []string{${added.map(goQuote).join(', ')}}`));
      }
    } else if (meta.deletionTimestamp !== undefined) {
      errs.push(fieldErrors.invalid('metadata.deletionTimestamp', goQuote(String(meta.deletionTimestamp)), 'field is immutable'));
    }
    if (t.statusSubresource) {
      if (current.status === undefined) delete next.status;
      else next.status = clone(current.status);
    }
    if (t.generation) {
      const gen = typeof cur.generation === 'number' ? cur.generation : 1;
      meta.generation = deepEqual(generationContent(t, current), generationContent(t, next)) ? gen : gen + 1;
    } else if (cur.generation !== undefined) {
      meta.generation = cur.generation;
    } else {
      delete meta.generation;
    }
    return errs;
  }

  /** The schema's errors for an object about to be stored (x-kubernetes-list-type ratcheted
   * against `old`); none without a schema. */
  private schemaErrors(t: ResolvedType, obj: Obj, old?: Obj): FieldError[] {
    if (!t.schema) return [];
    return [...t.schema.validate(obj, { emptyStringIsNull: this.emptyStringIsNull }), ...t.schema.validateLists(obj, old)];
  }

  /** DELETE: mark when finalizers remain, else remove. */
  private deleteObject(t: ResolvedType, current: Obj): { removed: boolean; object: Obj } {
    if (finalizersOf(current).length === 0) return { removed: true, object: this.storeDelete(t, current) };
    const meta = metaOf(current);
    if (meta.deletionTimestamp !== undefined) return { removed: false, object: clone(current) };
    const next = clone(current);
    const nextMeta = metaOf(next);
    nextMeta.deletionTimestamp = this.timestamp();
    nextMeta.deletionGracePeriodSeconds = 0;
    if (typeof nextMeta.generation === 'number' && nextMeta.generation > 0) nextMeta.generation += 1;
    return { removed: false, object: this.store(t, next, current) };
  }

  /** What decoding does: pruning, nulls, defaults, normalisation; returns the warnings, or
   * throws with fieldValidation=Strict. */
  private prepare(t: ResolvedType, obj: Obj, fieldValidation: string | undefined): string[] {
    obj.apiVersion = t.apiVersion;
    obj.kind = t.kind;
    const dropped = prune(t, obj);
    t.schema?.dropNonNullableNulls(obj);
    t.schema?.applyDefaults(obj);
    normalize(t, obj);
    if (dropped.length > 0 && fieldValidation === 'Strict') {
      throw errors.badRequest(`strict decoding error: ${dropped.map((f) => `unknown field "${f}"`).join(', ')}`);
    }
    return fieldValidation === 'Ignore' ? [] : dropped.map((f) => `unknown field "${f}"`);
  }

  private checkTypeMeta(t: ResolvedType, body: Obj): void {
    if (body.apiVersion !== undefined && body.apiVersion !== t.apiVersion) {
      throw errors.badRequest(`the API version in the data (${String(body.apiVersion)}) does not match the expected API version (${t.apiVersion})`);
    }
    if (body.kind !== undefined && body.kind !== t.kind) {
      throw errors.badRequest(`the kind in the data (${String(body.kind)}) does not match the expected kind (${t.kind})`);
    }
  }

  /** The name and namespace in a PUT or patched body must be those of the URL. */
  private checkIdentity(t: ResolvedType, body: Obj, namespace: string | undefined, name: string): void {
    const meta = metaOf(body);
    const bodyName = typeof meta.name === 'string' ? meta.name : '';
    if (bodyName !== name) {
      throw errors.badRequest(`the name of the object (${bodyName}) does not match the name on the URL (${name})`);
    }
    const bodyNamespace = str(meta.namespace);
    if (t.namespaced && bodyNamespace !== undefined && bodyNamespace !== namespace) {
      throw errors.badRequest('the namespace of the provided object does not match the namespace sent on the request');
    }
    if (t.namespaced) meta.namespace = namespace;
  }

  // ---- storage and events ----------------------------------------------------------------------

  private bucket(t: ResolvedType): Map<string, Obj> {
    let b = this.objects.get(t.id);
    if (!b) {
      b = new Map();
      this.objects.set(t.id, b);
    }
    return b;
  }

  private mustGet(t: ResolvedType, namespace: string | undefined, name: string): Obj {
    return clone(this.mustPeek(t, namespace, name));
  }

  /** The stored object itself, not a copy: for reading only (stored objects are replaced, never changed). */
  private mustPeek(t: ResolvedType, namespace: string | undefined, name: string): Obj {
    const obj = this.bucket(t).get(objectKey(namespace, name));
    if (!obj) throw errors.notFound(t, name);
    return obj;
  }

  /** Matching objects in etcd key order (namespace/name, byte-wise). */
  private select(t: ResolvedType, namespace: string | undefined, labels: LabelRequirement[], fields: FieldRequirement[]): Obj[] {
    const bucket = this.bucket(t);
    const selected: Obj[] = [];
    for (const key of this.keysInOrder(t)) {
      const o = bucket.get(key) as Obj;
      if ((namespace === undefined || metaOf(o).namespace === namespace) && matchesLabels(labels, o) && matchesFields(fields, o)) selected.push(o);
    }
    return selected;
  }

  /** The type's keys in etcd order (namespace/name, byte-wise). */
  private keysInOrder(t: ResolvedType): string[] {
    let keys = this.sortedKeys.get(t.id);
    if (!keys) {
      keys = [...this.bucket(t).keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
      this.sortedKeys.set(t.id, keys);
    }
    return keys;
  }

  /**
   * Writes (create or update) with a new resourceVersion; emits ADDED or MODIFIED. Takes `obj`
   * as its own (callers pass a copy nobody else holds) and answers the stored object itself:
   * callers serialise it or copy it, never change it.
   */
  private store(t: ResolvedType, obj: Obj, prev: Obj | undefined): Obj {
    this.rv += 1;
    const stored = obj;
    metaOf(stored).resourceVersion = String(this.rv);
    const key = keyOf(stored);
    const bucket = this.bucket(t);
    if (!bucket.has(key)) this.sortedKeys.delete(t.id);
    bucket.set(key, stored);
    this.emit(t, prev ? 'MODIFIED' : 'ADDED', stored, prev);
    return stored;
  }

  /** Removes with a new resourceVersion; emits DELETED with the last state (answered, not to be changed). */
  private storeDelete(t: ResolvedType, current: Obj): Obj {
    const key = keyOf(current);
    const prev = this.bucket(t).get(key);
    if (this.bucket(t).delete(key)) this.sortedKeys.delete(t.id);
    this.rv += 1;
    const last = clone(prev ?? current);
    metaOf(last).resourceVersion = String(this.rv);
    this.emit(t, 'DELETED', last, prev);
    return last;
  }

  private emit(t: ResolvedType, type: WatchEventType, object: Obj, prev: Obj | undefined): void {
    const entry: HistoryEntry = { rv: this.rv, typeId: t.id, type, object, prev };
    this.history.push(entry);
    while (this.history.length > this.historySize) {
      const dropped = this.history.shift();
      if (dropped) this.historyFloor = dropped.rv;
    }
    for (const w of this.watchers) if (w.type.id === t.id) this.deliver(w, entry);
    for (const listener of this.listeners) {
      try {
        listener({ type, object: clone(object) as FakeKubeObject }, t.spec);
      } catch (err) {
        // a test's listener failing must fail the test, not the request that caused the event
        process.nextTick(() => {
          throw err;
        });
      }
    }
  }

  private watcherMatches(w: Watcher, obj: Obj): boolean {
    const meta = metaOf(obj);
    if (w.namespace !== undefined && meta.namespace !== w.namespace) return false;
    if (w.name !== undefined && meta.name !== w.name) return false;
    return matchesLabels(w.labels, obj) && matchesFields(w.fields, obj);
  }

  /** As the watch cache does: an object entering the selection is ADDED, leaving it is DELETED. */
  private deliver(w: Watcher, entry: HistoryEntry): void {
    const now = entry.type !== 'DELETED' && this.watcherMatches(w, entry.object);
    const before = entry.prev !== undefined && this.watcherMatches(w, entry.prev);
    if (now && before) this.writeEvent(w, { type: 'MODIFIED', object: entry.object });
    else if (now) this.writeEvent(w, { type: 'ADDED', object: entry.object });
    else if (before && entry.prev) {
      const last = clone(entry.prev);
      metaOf(last).resourceVersion = String(entry.rv);
      this.writeEvent(w, { type: 'DELETED', object: last });
    }
  }

  private writeEvent(w: Watcher, event: { type: string; object: Obj }): void {
    if (w.res.writableEnded || w.res.destroyed) return;
    w.res.write(`${JSON.stringify(event)}\n`);
  }

  private endWatch(w: Watcher): void {
    this.watchers.delete(w);
    if (w.timer) clearTimeout(w.timer);
    if (!w.res.writableEnded) w.res.end();
  }

  private bookmark(t: ResolvedType): Obj {
    return { kind: t.kind, apiVersion: t.apiVersion, metadata: { resourceVersion: String(this.rv) } };
  }

  // ---- faults -----------------------------------------------------------------------------------

  /** Returns true when the fault answered (or withheld) the response. */
  private async applyFault(ctx: Ctx, spec: FaultSpec): Promise<boolean> {
    const transport = {
      req: ctx.req,
      res: ctx.res,
      delay: (ms: number) => this.delay(ms),
      closed: () => this.closing !== undefined,
      hung: this.hung,
    };
    if (await withholdResponse(spec, transport)) return true;
    if (spec.status === undefined) return false;
    const body = spec.body === undefined ? faultStatus(spec.status) : spec.body;
    if (typeof body === 'string') this.sendText(ctx, spec.status, body, spec.headers);
    else this.sendJson(ctx, spec.status, body, spec.headers);
    return true;
  }

  private delay(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const entry = {
        timer: setTimeout(() => {
          this.delays.delete(entry);
          resolve();
        }, ms),
        resolve,
      };
      this.delays.add(entry);
    });
  }

  // ---- responses --------------------------------------------------------------------------------

  private sendJson(ctx: Ctx, status: number, body: unknown, headers: Record<string, string> = {}): void {
    ctx.call.status = status;
    if (ctx.res.headersSent || ctx.res.destroyed) return;
    const text = `${JSON.stringify(body)}\n`;
    ctx.res.writeHead(status, { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache, private', ...headers, 'Content-Length': String(Buffer.byteLength(text)) });
    ctx.res.end(text);
  }

  private sendText(ctx: Ctx, status: number, body: string, headers: Record<string, string> = {}): void {
    ctx.call.status = status;
    if (ctx.res.headersSent || ctx.res.destroyed) return;
    ctx.res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', ...headers });
    ctx.res.end(body);
  }

  private sendError(res: ServerResponse, call: FakeCall | undefined, err: unknown): void {
    const apiError = err instanceof ApiError ? err : errors.internal(err instanceof Error ? err.message : String(err));
    if (call) call.status = apiError.code;
    if (res.headersSent || res.destroyed) return;
    const text = `${JSON.stringify(apiError.toStatus())}\n`;
    res.writeHead(apiError.code, { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache, private', ...apiError.headers, 'Content-Length': String(Buffer.byteLength(text)) });
    res.end(text);
  }

  // ---- small helpers ------------------------------------------------------------------------------

  private jsonBody(ctx: Ctx): Obj {
    const type = mediaType(ctx.call.contentType);
    if (type !== 'application/json') throw errors.unsupportedMediaType(BODY_TYPES);
    const body = parseJson(ctx.raw);
    if (!isObject(body)) throw errors.badRequest('the body of the request is not a JSON object');
    return body;
  }

  private listItem(t: ResolvedType, obj: Obj): Obj {
    if (!t.builtin) return obj;
    const { apiVersion: _a, kind: _k, ...rest } = obj;
    return rest;
  }

  private timestamp(): string {
    return rfc3339(this.now());
  }

  private generateName(t: ResolvedType, prefix: string, namespace: string | undefined): string {
    for (;;) {
      let n = ++this.nameSeq;
      let suffix = '';
      for (let i = 0; i < 5; i++) {
        suffix = NAME_ALPHABET[n % NAME_ALPHABET.length] + suffix;
        n = Math.floor(n / NAME_ALPHABET.length);
      }
      const name = `${prefix}${suffix}`;
      if (!this.bucket(t).has(objectKey(namespace, name))) return name;
    }
  }

  private typeByName(resource: string): ResolvedType {
    const t = this.types.get(resource) ?? [...this.types.values()].find((x) => x.plural === resource);
    if (!t) throw new Error(`fake kube-apiserver: unknown resource ${resource}`);
    return t;
  }

  private typeForObject(apiVersion: string, kind: string): ResolvedType {
    const t = [...this.types.values()].find((x) => x.apiVersion === apiVersion && x.kind === kind);
    if (!t) throw new Error(`fake kube-apiserver: unknown kind ${apiVersion} ${kind}`);
    return t;
  }

  // ---- discovery ----------------------------------------------------------------------------------

  private apiVersions(): Obj {
    return {
      kind: 'APIVersions',
      versions: ['v1'],
      serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: `127.0.0.1:${this.port}` }],
    };
  }

  private groupVersions(): Map<string, string[]> {
    const groups = new Map<string, string[]>();
    for (const t of this.types.values()) {
      if (!t.group) continue;
      const versions = groups.get(t.group) ?? [];
      if (!versions.includes(t.version)) versions.push(t.version);
      groups.set(t.group, versions);
    }
    return groups;
  }

  private apiGroup(group: string): Obj {
    const versions = this.groupVersions().get(group);
    if (!versions) throw errors.noSuchPath();
    const list = versions.map((v) => ({ groupVersion: `${group}/${v}`, version: v }));
    return { kind: 'APIGroup', apiVersion: 'v1', name: group, versions: list, preferredVersion: list[0] };
  }

  private apiGroupList(): Obj {
    const groups = [...this.groupVersions().keys()].sort().map((g) => {
      const { kind: _k, apiVersion: _a, ...rest } = this.apiGroup(g);
      return rest;
    });
    return { kind: 'APIGroupList', apiVersion: 'v1', groups };
  }

  private resourceList(group: string, version: string): Route {
    const types = [...this.types.values()].filter((t) => t.group === group && t.version === version);
    if (types.length === 0) throw errors.noSuchPath();
    const verbs = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];
    const resources = types.flatMap((t) => {
      const main = { name: t.plural, singularName: t.kind.toLowerCase(), namespaced: t.namespaced, kind: t.kind, verbs };
      const status = { name: `${t.plural}/status`, singularName: '', namespaced: t.namespaced, kind: t.kind, verbs: ['get', 'patch', 'update'] };
      return t.statusSubresource ? [main, status] : [main];
    });
    return {
      kind: 'json',
      body: { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: group ? `${group}/${version}` : version, resources },
    };
  }
}

const VERSION_INFO: Obj = {
  major: '1',
  minor: '31',
  gitVersion: 'v1.31.0',
  gitCommit: '0000000000000000000000000000000000000000',
  gitTreeState: 'clean',
  buildDate: '2024-08-13T07:28:49Z',
  goVersion: 'go1.22.5',
  compiler: 'gc',
  platform: 'linux/amd64',
};

function warningHeaders(warnings: readonly string[]): Record<string, string> {
  return warnings.length === 0 ? {} : { Warning: warnings.map((w) => `299 - ${JSON.stringify(w)}`).join(', ') };
}

function parseJson(raw: string): unknown {
  try {
    return JSON.parse(raw) as unknown;
  } catch (err) {
    throw errors.badRequest(`json parse error: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** Starts a fake API server on 127.0.0.1 (a free port unless `options.port`). */
export async function startFakeKubeApiServer(options: FakeKubeApiServerOptions = {}): Promise<FakeKubeApiServer> {
  const fake = new FakeKubeApiServer(options);
  await fake.listen(options.port ?? 0);
  return fake;
}
