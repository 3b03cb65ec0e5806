/**
 * deploy/crds against Tyk Operator's CRDs and samples ($TYK_REFERENCE_DIR).
 *
 * 1. Compatibility: group, names, scope, versions (served/storage), subresources and printer
 *    columns are Tyk Operator's, so ours can replace theirs in a cluster.
 * 2. Validation: every ApiDefinition, TykOasApiDefinition, SecurityPolicy, OperatorContext,
 *    SubGraph, SuperGraph and portal kind (APIDescription, PortalAPICatalogue, PortalConfig) in Tyk Operator's samples
 *    is valid under our schema (and under theirs, which checks the schema converter), and a few
 *    objects are rejected by ours, so the test can fail.
 * 3. "Everything valid under theirs is valid under ours", and "nothing theirs keeps is pruned by
 *    ours", checked over the samples, hand-made variants and objects generated from their schema,
 *    plus a field-by-field comparison of what ours declares with what theirs declares at the same
 *    path. These are checks over examples and a structural comparison, not a proof.
 *
 * Validation uses ajv on a JSON Schema converted from each openAPIV3Schema (see toJsonSchema).
 * The API server prunes unknown fields instead of rejecting them, so objects are open unless a
 * schema says additionalProperties: false. The formats these CRDs use (date-time, int64) are
 * checked by small validators registered here: ajv-formats is only a transitive dependency of
 * this project, so it is not used.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import { Ajv, type ValidateFunction } from 'ajv';
import fc from 'fast-check';
import yaml from 'js-yaml';
import t from 'tap';
import { referenceDir } from './reference.js';

const OURS_DIR = fileURLToPath(new URL('../../deploy/crds/', import.meta.url));
const REFERENCE = referenceDir();
const THEIRS_DIR = join(REFERENCE, 'crds');
const SAMPLES_DIR = join(REFERENCE, 'samples');

/** The subset of an openAPIV3Schema node this test reads; other keywords go through as they are. */
interface Schema {
  type?: string;
  properties?: Record<string, Schema>;
  additionalProperties?: Schema | boolean;
  items?: Schema;
  required?: string[];
  enum?: unknown[];
  nullable?: boolean;
  format?: string;
  pattern?: string;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-list-type'?: string;
  'x-kubernetes-list-map-keys'?: string[];
  [keyword: string]: unknown;
}

interface CrdVersion {
  name: string;
  served: boolean;
  storage: boolean;
  subresources?: unknown;
  additionalPrinterColumns?: unknown[];
  schema: { openAPIV3Schema: Schema };
}

interface Crd {
  apiVersion: string;
  kind: string;
  metadata: { name: string };
  spec: {
    group: string;
    names: Record<string, unknown>;
    scope: string;
    versions: CrdVersion[];
    conversion?: unknown;
    preserveUnknownFields?: boolean;
  };
}

type Obj = Record<string, unknown>;

const KINDS = [
  { kind: 'ApiDefinition', file: 'tyk.tyk.io_apidefinitions.yaml' },
  { kind: 'TykOasApiDefinition', file: 'tyk.tyk.io_tykoasapidefinitions.yaml' },
  { kind: 'SecurityPolicy', file: 'tyk.tyk.io_securitypolicies.yaml' },
  { kind: 'OperatorContext', file: 'tyk.tyk.io_operatorcontexts.yaml' },
  { kind: 'SubGraph', file: 'tyk.tyk.io_subgraphs.yaml' },
  { kind: 'SuperGraph', file: 'tyk.tyk.io_supergraphs.yaml' },
  { kind: 'APIDescription', file: 'tyk.tyk.io_apidescriptions.yaml' },
  { kind: 'PortalAPICatalogue', file: 'tyk.tyk.io_portalapicatalogues.yaml' },
  { kind: 'PortalConfig', file: 'tyk.tyk.io_portalconfigs.yaml' },
] as const;
type Kind = (typeof KINDS)[number]['kind'];

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isSchema(v: unknown): v is Schema {
  return isObj(v);
}

function loadCrd(file: string): Crd {
  const docs = (yaml.loadAll(readFileSync(file, 'utf8')) as unknown[]).filter((d): d is Crd => isObj(d) && d.kind === 'CustomResourceDefinition');
  if (docs.length !== 1) throw new Error(`${file}: expected one CustomResourceDefinition, found ${docs.length}`);
  return docs[0]!;
}

/** The one version both CRDs have (v1alpha1); test 1 checks the version lists are the same. */
function rootSchema(crd: Crd): Schema {
  const v = crd.spec.versions.find((x) => x.name === 'v1alpha1');
  if (!v) throw new Error(`${crd.metadata.name}: no v1alpha1`);
  return v.schema.openAPIV3Schema;
}

const ours = new Map<Kind, Crd>(KINDS.map((k) => [k.kind, loadCrd(join(OURS_DIR, k.file))]));
const theirs = new Map<Kind, Crd>(KINDS.map((k) => [k.kind, loadCrd(join(THEIRS_DIR, k.file))]));
const oursOf = (k: Kind): Crd => ours.get(k)!;
const theirsOf = (k: Kind): Crd => theirs.get(k)!;

// ---------------------------------------------------------------------------------------------
// openAPIV3Schema → JSON Schema for ajv

/** Keywords that mean the same in a CRD schema and in JSON Schema. */
const SAME_KEYWORDS = new Set([
  'type',
  'required',
  'enum',
  'format',
  'pattern',
  'minimum',
  'maximum',
  'minLength',
  'maxLength',
  'minItems',
  'maxItems',
  'minProperties',
  'maxProperties',
  'uniqueItems',
  'multipleOf',
  'description',
  'title',
  'default',
]);

/**
 * Walks a CRD schema: standard keywords are kept; `nullable: true` admits null;
 * `x-kubernetes-int-or-string` becomes integer-or-string; the other x-kubernetes-* keywords are
 * dropped (preserve-unknown-fields included: JSON Schema objects are open already, matching
 * pruning-not-rejecting). An unknown keyword throws, so nothing is silently ignored.
 */
function toJsonSchema(s: Schema, path = '$'): Obj {
  const out: Obj = {};
  for (const [k, v] of Object.entries(s)) {
    if (SAME_KEYWORDS.has(k)) out[k] = v;
    else if (k === 'properties') {
      out.properties = Object.fromEntries(Object.entries(v as Record<string, Schema>).map(([name, p]) => [name, toJsonSchema(p, `${path}.${name}`)]));
    } else if (k === 'items') out.items = toJsonSchema(v as Schema, `${path}[]`);
    else if (k === 'additionalProperties') out.additionalProperties = typeof v === 'boolean' ? v : toJsonSchema(v as Schema, `${path}{}`);
    else if (k === 'allOf' || k === 'anyOf' || k === 'oneOf') out[k] = (v as Schema[]).map((x, i) => toJsonSchema(x, `${path}.${k}[${i}]`));
    else if (k === 'not') out.not = toJsonSchema(v as Schema, `${path}.not`);
    else if (k === 'nullable' || k === 'x-kubernetes-int-or-string')
      continue; // below
    else if (k.startsWith('x-kubernetes-')) continue;
    else throw new Error(`${path}: keyword ${k} is not handled by the converter`);
  }
  if (s['x-kubernetes-int-or-string'] === true) out.anyOf = [{ type: 'integer' }, { type: 'string' }];
  if (s.nullable === true) {
    if (typeof out.type === 'string') out.type = [out.type, 'null'];
    if (Array.isArray(out.enum)) out.enum = [...(out.enum as unknown[]), null];
  }
  return out;
}

/** RFC 3339 date-time, as the API server's date-time format takes it. */
function isDateTime(v: string): boolean {
  return /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/.test(v) && !Number.isNaN(Date.parse(v));
}

const ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true });
ajv.addFormat('date-time', { type: 'string', validate: isDateTime });
ajv.addFormat('int32', { type: 'number', validate: (n: number) => Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31 });
ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isSafeInteger(n) });

const validators = new Map<string, ValidateFunction>();
function validator(side: 'ours' | 'theirs', kind: Kind): ValidateFunction {
  const key = `${side}/${kind}`;
  let v = validators.get(key);
  if (!v) {
    v = ajv.compile(toJsonSchema(rootSchema(side === 'ours' ? oursOf(kind) : theirsOf(kind))));
    validators.set(key, v);
  }
  return v;
}

/** undefined when valid, else ajv's errors as text. */
function problems(side: 'ours' | 'theirs', kind: Kind, obj: unknown): string | undefined {
  const v = validator(side, kind);
  return v(obj) ? undefined : ajv.errorsText(v.errors);
}

// ---------------------------------------------------------------------------------------------
// Pruning, as the API server does it (apiextensions-apiserver's pruning algorithm): a field is kept
// when the schema declares it (properties or additionalProperties) or its object node has
// x-kubernetes-preserve-unknown-fields; the marker does not reach into declared children.
// apiVersion, kind and metadata at the root are left alone (ObjectMeta has its own pruning).

const ROOT_META = new Set(['apiVersion', 'kind', 'metadata']);

function prune(v: unknown, s: Schema | undefined, root = false): unknown {
  if (s?.['x-kubernetes-preserve-unknown-fields'] === true) return skipPrune(v, s, root);
  if (Array.isArray(v)) return v.map((x) => prune(x, s?.items));
  if (!isObj(v)) return v;
  if (!s) return {};
  const kept: [string, unknown][] = [];
  for (const [k, x] of Object.entries(v)) {
    if (root && ROOT_META.has(k)) kept.push([k, x]);
    else if (s.properties?.[k]) kept.push([k, prune(x, s.properties[k])]);
    else if (isSchema(s.additionalProperties)) kept.push([k, prune(x, s.additionalProperties)]);
  }
  return Object.fromEntries(kept);
}

function skipPrune(v: unknown, s: Schema | undefined, root = false): unknown {
  if (!s) return v;
  if (Array.isArray(v)) return v.map((x) => skipPrune(x, s.items));
  if (!isObj(v)) return v;
  return Object.fromEntries(
    Object.entries(v).map(([k, x]): [string, unknown] => {
      if (root && ROOT_META.has(k)) return [k, x];
      if (s.properties?.[k]) return [k, prune(x, s.properties[k])];
      if (isSchema(s.additionalProperties)) return [k, prune(x, s.additionalProperties)];
      return [k, x];
    }),
  );
}

const pruneBy = (side: 'ours' | 'theirs', kind: Kind, obj: unknown): unknown => prune(obj, rootSchema(side === 'ours' ? oursOf(kind) : theirsOf(kind)), true);

// ---------------------------------------------------------------------------------------------
// Samples

function yamlFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? yamlFiles(p) : p.endsWith('.yaml') ? [p] : [];
  });
}

const KIND_NAMES = new Set<string>(KINDS.map((k) => k.kind));
const samples = yamlFiles(SAMPLES_DIR).flatMap((file) =>
  (yaml.loadAll(readFileSync(file, 'utf8')) as unknown[])
    .filter((d): d is Obj & { kind: Kind } => isObj(d) && typeof d.kind === 'string' && KIND_NAMES.has(d.kind))
    .map((doc) => ({ where: `${relative(SAMPLES_DIR, file)}:${doc.kind}/${String((doc.metadata as Obj | undefined)?.name)}`, kind: doc.kind, doc })),
);

// ---------------------------------------------------------------------------------------------
// 1. Compatibility of everything but the schema

/** Drops undefined members, so "absent" and "undefined" compare equal. */
const plain = (v: unknown): unknown => (v === undefined ? undefined : JSON.parse(JSON.stringify(v)));

/** The printer columns ours add after Tyk Operator's (from the conditions). */
const OUR_COLUMNS = [
  { jsonPath: '.status.conditions[?(@.type=="Ready")].status', name: 'Ready', type: 'string' },
  { jsonPath: '.status.conditions[?(@.type=="Synced")].status', name: 'Synced', type: 'string' },
  { jsonPath: '.metadata.creationTimestamp', name: 'Age', type: 'date' },
];

/** Served versions as kubectl sees them; `extraColumns` are appended to the printer columns (ours add them to Tyk Operator's). */
function versionsOf(crd: Crd, extraColumns: readonly unknown[] = []): unknown {
  return plain(
    [...crd.spec.versions]
      .sort((a, b) => a.name.localeCompare(b.name))
      .map((v) => ({
        name: v.name,
        served: v.served,
        storage: v.storage,
        subresources: v.subresources,
        additionalPrinterColumns: [...(v.additionalPrinterColumns ?? []), ...extraColumns],
      })),
  );
}

const NAME_FIELDS = ['kind', 'listKind', 'plural', 'singular', 'shortNames', 'categories'];

for (const { kind } of KINDS) {
  t.test(`${kind}: same group, names, scope, versions, subresources and printer columns as Tyk Operator's (plus ours)`, async (t) => {
    const o = oursOf(kind);
    const r = theirsOf(kind);
    t.equal(o.apiVersion, 'apiextensions.k8s.io/v1');
    t.equal(o.metadata.name, r.metadata.name, 'CRD name');
    t.equal(o.spec.group, r.spec.group, 'group');
    t.equal(o.spec.group, 'tyk.tyk.io');
    for (const f of NAME_FIELDS) t.strictSame(plain(o.spec.names[f]), plain(r.spec.names[f]), `names.${f}`);
    t.strictSame(Object.keys(o.spec.names).sort(), Object.keys(r.spec.names).sort(), 'no other names');
    t.equal(o.spec.scope, r.spec.scope, 'scope');
    // OperatorContexts, SubGraphs and SuperGraphs are not synced to a gateway: no conditions to print
    const extra = kind === 'OperatorContext' || kind === 'SubGraph' || kind === 'SuperGraph' ? [] : OUR_COLUMNS;
    t.strictSame(versionsOf(o), versionsOf(r, extra), "versions: served, storage, subresources; Tyk Operator's printer columns, then Ready, Synced and Age");
    t.equal(o.spec.conversion, undefined, 'no conversion webhook');
    t.not(o.spec.preserveUnknownFields, true, 'pruning stays on');
  });
}

t.test('the kustomization lists exactly our CRDs', async (t) => {
  const k = yaml.load(readFileSync(join(OURS_DIR, 'kustomization.yaml'), 'utf8')) as Obj;
  t.equal(k.kind, 'Kustomization');
  t.strictSame([...(k.resources as string[])].sort(), KINDS.map((x) => x.file).sort());
  const crdFiles = readdirSync(OURS_DIR).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml');
  t.strictSame(crdFiles.sort(), KINDS.map((x) => x.file).sort(), 'no other files in deploy/crds');
});

// ---------------------------------------------------------------------------------------------
// Our schemas follow the structural-schema rules the API server enforces (the ones that can
// apply here; there is no API server in this test to ask) and keep what they do not declare

function walk(s: Schema, path: string, visit: (s: Schema, path: string) => void): void {
  visit(s, path);
  for (const [k, p] of Object.entries(s.properties ?? {})) walk(p, `${path}.${k}`, visit);
  if (s.items) walk(s.items, `${path}[]`, visit);
  if (isSchema(s.additionalProperties)) walk(s.additionalProperties, `${path}{}`, visit);
}

for (const { kind } of KINDS) {
  t.test(`${kind}: our schema is structural and small`, async (t) => {
    const root = rootSchema(oursOf(kind));
    const bad: string[] = [];
    walk(root, '', (s, path) => {
      if (s.type === undefined && s['x-kubernetes-preserve-unknown-fields'] !== true) bad.push(`${path}: no type`);
      if (s.properties && s.additionalProperties !== undefined) bad.push(`${path}: both properties and additionalProperties`);
      if (s.additionalProperties === false) bad.push(`${path}: additionalProperties: false`);
      if (s.type === 'array' && !s.items) bad.push(`${path}: array without items`);
      for (const k of ['allOf', 'anyOf', 'oneOf', 'not']) if (k in s) bad.push(`${path}: ${k} (not needed here)`);
      if (s['x-kubernetes-list-type'] === 'map') {
        const keys = s['x-kubernetes-list-map-keys'] ?? [];
        if (keys.length === 0 || !keys.every((key) => s.items?.required?.includes(key))) bad.push(`${path}: list-map keys must be required`);
      }
      // Everything under spec and status keeps unknown fields (the marker does not reach into
      // declared children), except the standard condition shape.
      const underConditions = /\.conditions\[\]/.test(path);
      if ((path.startsWith('.spec') || path.startsWith('.status')) && s.type === 'object' && !underConditions && s['x-kubernetes-preserve-unknown-fields'] !== true) {
        bad.push(`${path}: object without x-kubernetes-preserve-unknown-fields`);
      }
    });
    t.strictSame(rootSchema(oursOf(kind)).properties?.metadata, { type: 'object' }, 'metadata: only type: object');
    t.strictSame(bad, []);
    t.doesNotThrow(() => validator('ours', kind), 'ajv compiles it');
    let ourNodes = 0;
    let theirNodes = 0;
    walk(root.properties!.spec!, '', () => ourNodes++);
    walk(rootSchema(theirsOf(kind)).properties!.spec!, '', () => theirNodes++);
    t.ok(ourNodes <= theirNodes, `spec: ${ourNodes} schema nodes (Tyk Operator's: ${theirNodes})`);
  });
}

// ---------------------------------------------------------------------------------------------
// 2. Validation of Tyk Operator's samples, and rejections

t.test('there are samples of each kind', async (t) => {
  for (const { kind } of KINDS)
    t.ok(
      samples.some((s) => s.kind === kind),
      kind,
    );
  t.ok(samples.length >= 15, `${samples.length} sample objects`);
});

/**
 * Samples Tyk Operator's own CRD refuses as they are written: their transform_headers entries lack
 * `act_on`, which its schema requires. (Through Tyk Operator they were presumably admitted after
 * its mutating webhook re-serialised the spec with `act_on: false`; the API server alone refuses
 * them.) Ours accepts them; for theirs, the test pins the one reason, so the converter is still
 * checked on them.
 */
const THEIRS_REFUSES: Record<string, RegExp> = {
  'looping/dynamic_auth.yaml:ApiDefinition/basic-auth-internal': /^data\/spec\/version_data\/versions\/Default\/extended_paths\/transform_headers\/0 must have required property 'act_on'$/,
  'looping/dynamic_auth.yaml:ApiDefinition/auth-token-internal': /^data\/spec\/version_data\/versions\/Default\/extended_paths\/transform_headers\/0 must have required property 'act_on'$/,
};

t.test("every sample is valid under ours, and under Tyk Operator's schema (checks the converter)", async (t) => {
  for (const { where, kind, doc } of samples) {
    t.equal(problems('ours', kind, doc), undefined, `${where} under ours`);
    const refused = THEIRS_REFUSES[where];
    if (refused) t.match(problems('theirs', kind, doc), refused, `${where} under theirs: refused, only for act_on`);
    else t.equal(problems('theirs', kind, doc), undefined, `${where} under theirs`);
  }
  t.ok(
    Object.keys(THEIRS_REFUSES).every((w) => samples.some((s) => s.where === w)),
    'the exceptions are samples',
  );
});

const meta = { name: 'x', namespace: 'default' };
const api = (spec: unknown, status?: unknown): Obj => ({ apiVersion: 'tyk.tyk.io/v1alpha1', kind: 'ApiDefinition', metadata: meta, spec, ...(status === undefined ? {} : { status }) });
const policy = (spec: unknown, status?: unknown): Obj => ({ apiVersion: 'tyk.tyk.io/v1alpha1', kind: 'SecurityPolicy', metadata: meta, spec, ...(status === undefined ? {} : { status }) });
const context = (spec: unknown, status?: unknown): Obj => ({ apiVersion: 'tyk.tyk.io/v1alpha1', kind: 'OperatorContext', metadata: meta, spec, ...(status === undefined ? {} : { status }) });
const oas = (spec: unknown, status?: unknown): Obj => ({ apiVersion: 'tyk.tyk.io/v1alpha1', kind: 'TykOasApiDefinition', metadata: meta, spec, ...(status === undefined ? {} : { status }) });
const portal =
  (kind: 'APIDescription' | 'PortalAPICatalogue' | 'PortalConfig') =>
  (spec: unknown, status?: unknown): Obj => ({ apiVersion: 'tyk.tyk.io/v1alpha1', kind, metadata: meta, spec, ...(status === undefined ? {} : { status }) });
const description = portal('APIDescription');
const catalogue = portal('PortalAPICatalogue');
const portalConfig = portal('PortalConfig');
const validDescriptionSpec = {
  name: 'httpbin',
  show: true,
  auth_type: 'keyless',
  policyRef: { name: 'p', namespace: 'default' },
  docs: { doc_type: 'swagger_custom_url', documentation: 'https://x/spec.json' },
};
const validApiSpec = { name: 'httpbin', protocol: 'http', active: true, proxy: { target_url: 'http://httpbin.org', listen_path: '/httpbin' } };
const validPolicySpec = { name: 'p', state: 'active', active: true, access_rights_array: [{ name: 'httpbin', namespace: 'default', versions: ['Default'] }] };
const validOasSpec = { tykOAS: { configmapRef: { name: 'petstore', keyName: 'oas.json' } } };
const subgraph = (spec: unknown, status?: unknown): Obj => ({ apiVersion: 'tyk.tyk.io/v1alpha1', kind: 'SubGraph', metadata: meta, spec, ...(status === undefined ? {} : { status }) });
const supergraph = (spec: unknown, status?: unknown): Obj => ({ apiVersion: 'tyk.tyk.io/v1alpha1', kind: 'SuperGraph', metadata: meta, spec, ...(status === undefined ? {} : { status }) });
const validSubgraphSpec = { schema: 'type Query { a: Int }', sdl: 'extend type Query { a: Int }' };
const condition = { type: 'Ready', status: 'True', reason: 'Synced', message: '', lastTransitionTime: '2024-05-06T07:08:09Z' };

/**
 * Objects our schema must reject. `theirs` says what Tyk Operator's CRD does with the same object:
 * rejects it too, or accepts it because it does not declare the field (it prunes the field, so
 * nothing a cluster holds under theirs can have it).
 */
const REJECTED: { why: string; kind: Kind; obj: Obj; theirs: 'rejects' | 'prunes' }[] = [
  { why: 'SubGraph without sdl', kind: 'SubGraph', obj: subgraph({ schema: 'type Query { a: Int }' }), theirs: 'rejects' },
  { why: 'SubGraph sdl a number', kind: 'SubGraph', obj: subgraph({ ...validSubgraphSpec, sdl: 1 }), theirs: 'rejects' },
  { why: 'SubGraph status.linked_by_api a list', kind: 'SubGraph', obj: subgraph(validSubgraphSpec, { linked_by_api: ['a'] }), theirs: 'rejects' },
  { why: 'SuperGraph without subgraph_refs', kind: 'SuperGraph', obj: supergraph({ schema: 'type Query { a: Int }' }), theirs: 'rejects' },
  { why: 'SuperGraph subgraph_refs entry without name', kind: 'SuperGraph', obj: supergraph({ subgraph_refs: [{ namespace: 'users' }] }), theirs: 'rejects' },
  { why: 'SuperGraph subgraph_refs an object', kind: 'SuperGraph', obj: supergraph({ subgraph_refs: { name: 'users' } }), theirs: 'rejects' },
  { why: 'OperatorContext env.mode "enterprise"', kind: 'OperatorContext', obj: context({ env: { mode: 'enterprise', url: 'http://tyk' } }), theirs: 'rejects' },
  { why: 'OperatorContext env.insecureSkipVerify "yes"', kind: 'OperatorContext', obj: context({ env: { insecureSkipVerify: 'yes' } }), theirs: 'rejects' },
  { why: 'OperatorContext env.ingress.httpPort "80"', kind: 'OperatorContext', obj: context({ env: { ingress: { httpPort: '80' } } }), theirs: 'rejects' },
  { why: 'OperatorContext secretRef without name', kind: 'OperatorContext', obj: context({ secretRef: { namespace: 'tyk' } }), theirs: 'rejects' },
  { why: 'OperatorContext spec a string', kind: 'OperatorContext', obj: context('ce'), theirs: 'rejects' },
  { why: 'SecurityPolicy state "maybe"', kind: 'SecurityPolicy', obj: policy({ ...validPolicySpec, state: 'maybe' }), theirs: 'rejects' },
  { why: 'SecurityPolicy active "true" (a string)', kind: 'SecurityPolicy', obj: policy({ ...validPolicySpec, active: 'true' }), theirs: 'rejects' },
  { why: 'SecurityPolicy access_rights_array an object', kind: 'SecurityPolicy', obj: policy({ ...validPolicySpec, access_rights_array: { name: 'httpbin' } }), theirs: 'rejects' },
  { why: 'SecurityPolicy access_rights_array entry without name', kind: 'SecurityPolicy', obj: policy({ ...validPolicySpec, access_rights_array: [{ namespace: 'default' }] }), theirs: 'rejects' },
  {
    why: 'SecurityPolicy versions a string',
    kind: 'SecurityPolicy',
    obj: policy({ ...validPolicySpec, access_rights_array: [{ name: 'a', namespace: 'b', versions: 'Default' }] }),
    theirs: 'rejects',
  },
  {
    why: 'SecurityPolicy access_rights_array[].kind a number',
    kind: 'SecurityPolicy',
    obj: policy({ ...validPolicySpec, access_rights_array: [{ name: 'a', namespace: 'b', kind: 1 }] }),
    theirs: 'prunes',
  },
  {
    why: 'SecurityPolicy status.latestTransaction.time "yesterday"',
    kind: 'SecurityPolicy',
    obj: policy(validPolicySpec, { pol_id: 'p', latestTransaction: { status: 'Successful', time: 'yesterday' } }),
    theirs: 'prunes',
  },
  { why: 'ApiDefinition spec a string', kind: 'ApiDefinition', obj: api('httpbin'), theirs: 'rejects' },
  { why: 'ApiDefinition spec an array', kind: 'ApiDefinition', obj: api([validApiSpec]), theirs: 'rejects' },
  { why: 'ApiDefinition active "yes"', kind: 'ApiDefinition', obj: api({ ...validApiSpec, active: 'yes' }), theirs: 'rejects' },
  { why: 'ApiDefinition proxy.listen_path a number', kind: 'ApiDefinition', obj: api({ ...validApiSpec, proxy: { target_url: 'http://a', listen_path: 8 } }), theirs: 'rejects' },
  { why: 'ApiDefinition contextRef without name', kind: 'ApiDefinition', obj: api({ ...validApiSpec, contextRef: { namespace: 'default' } }), theirs: 'rejects' },
  { why: 'ApiDefinition status.latestTransaction.time "now"', kind: 'ApiDefinition', obj: api(validApiSpec, { api_id: 'a', latestTransaction: { status: 'Failed', time: 'now' } }), theirs: 'rejects' },
  {
    why: 'ApiDefinition status.linked_by_policies entry without name',
    kind: 'ApiDefinition',
    obj: api(validApiSpec, { api_id: 'a', linked_by_policies: [{ namespace: 'default' }] }),
    theirs: 'rejects',
  },
  { why: 'ApiDefinition status.conditions[].status "maybe"', kind: 'ApiDefinition', obj: api(validApiSpec, { api_id: 'a', conditions: [{ ...condition, status: 'maybe' }] }), theirs: 'prunes' },
  {
    why: 'ApiDefinition status.conditions[] without reason',
    kind: 'ApiDefinition',
    obj: api(validApiSpec, { api_id: 'a', conditions: [{ type: 'Ready', status: 'True', message: '', lastTransitionTime: '2024-05-06T07:08:09Z' }] }),
    theirs: 'prunes',
  },
  { why: 'ApiDefinition status.observedGeneration "1"', kind: 'ApiDefinition', obj: api(validApiSpec, { api_id: 'a', observedGeneration: '1' }), theirs: 'prunes' },
  { why: 'OperatorContext status.conditions an object', kind: 'OperatorContext', obj: context({}, { conditions: { type: 'Ready' } }), theirs: 'prunes' },
  { why: 'APIDescription auth_type "basic"', kind: 'APIDescription', obj: description({ ...validDescriptionSpec, auth_type: 'basic' }), theirs: 'rejects' },
  { why: 'APIDescription docs.doc_type "pdf"', kind: 'APIDescription', obj: description({ ...validDescriptionSpec, docs: { doc_type: 'pdf' } }), theirs: 'rejects' },
  { why: 'APIDescription docs without doc_type', kind: 'APIDescription', obj: description({ ...validDescriptionSpec, docs: { documentation: 'x' } }), theirs: 'rejects' },
  { why: 'APIDescription policyRef without name', kind: 'APIDescription', obj: description({ ...validDescriptionSpec, policyRef: { namespace: 'default' } }), theirs: 'rejects' },
  { why: 'APIDescription show "yes"', kind: 'APIDescription', obj: description({ ...validDescriptionSpec, show: 'yes' }), theirs: 'rejects' },
  {
    why: 'APIDescription status.latestTransaction.time "now"',
    kind: 'APIDescription',
    obj: description(validDescriptionSpec, { latestTransaction: { status: 'Failed', time: 'now' } }),
    theirs: 'prunes',
  },
  { why: 'PortalAPICatalogue apis an object', kind: 'PortalAPICatalogue', obj: catalogue({ apis: { apiDescriptionRef: { name: 'd' } } }), theirs: 'rejects' },
  { why: 'PortalAPICatalogue apiDescriptionRef without name', kind: 'PortalAPICatalogue', obj: catalogue({ apis: [{ apiDescriptionRef: { namespace: 'default' } }] }), theirs: 'rejects' },
  { why: 'PortalAPICatalogue apis[].version "v1"', kind: 'PortalAPICatalogue', obj: catalogue({ apis: [{ name: 'x', version: 'v1' }] }), theirs: 'rejects' },
  { why: 'PortalAPICatalogue email a number', kind: 'PortalAPICatalogue', obj: catalogue({ email: 1 }), theirs: 'rejects' },
  { why: 'PortalAPICatalogue status.id a number', kind: 'PortalAPICatalogue', obj: catalogue({}, { id: 1 }), theirs: 'rejects' },
  { why: 'PortalConfig contextRef without name', kind: 'PortalConfig', obj: portalConfig({ contextRef: { namespace: 'tyk' } }), theirs: 'rejects' },
  { why: 'PortalConfig status.observedGeneration "1"', kind: 'PortalConfig', obj: portalConfig({}, { id: 'c', observedGeneration: '1' }), theirs: 'prunes' },
  { why: 'TykOasApiDefinition without spec.tykOAS', kind: 'TykOasApiDefinition', obj: oas({ versioning: { enabled: false } }), theirs: 'rejects' },
  { why: 'TykOasApiDefinition configmapRef without keyName', kind: 'TykOasApiDefinition', obj: oas({ tykOAS: { configmapRef: { name: 'petstore' } } }), theirs: 'rejects' },
  { why: 'TykOasApiDefinition contextRef without name', kind: 'TykOasApiDefinition', obj: oas({ ...validOasSpec, contextRef: { namespace: 'tyk' } }), theirs: 'rejects' },
  {
    why: 'TykOasApiDefinition clientCertificate.allowlist a string',
    kind: 'TykOasApiDefinition',
    obj: oas({ ...validOasSpec, clientCertificate: { enabled: true, allowlist: 'ca' } }),
    theirs: 'rejects',
  },
  { why: 'TykOasApiDefinition versioning.location "query"', kind: 'TykOasApiDefinition', obj: oas({ ...validOasSpec, versioning: { enabled: true, location: 'query' } }), theirs: 'rejects' },
  {
    why: 'TykOasApiDefinition versioning.versions entry without tykOasApiDefinitionRef',
    kind: 'TykOasApiDefinition',
    obj: oas({ ...validOasSpec, versioning: { enabled: true, versions: [{ name: 'v2' }] } }),
    theirs: 'rejects',
  },
  {
    why: 'TykOasApiDefinition versioning.versions[].tykOasApiDefinitionRef.kind "Ingress"',
    kind: 'TykOasApiDefinition',
    obj: oas({ ...validOasSpec, versioning: { enabled: true, versions: [{ name: 'v2', tykOasApiDefinitionRef: { name: 'v2', kind: 'Ingress' } }] } }),
    theirs: 'rejects',
  },
  {
    why: 'TykOasApiDefinition status.latestTransaction.time "now"',
    kind: 'TykOasApiDefinition',
    obj: oas(validOasSpec, { id: 'a', latestTransaction: { status: 'Failed', time: 'now' } }),
    theirs: 'rejects',
  },
  {
    why: 'TykOasApiDefinition status.linkedByPolicies entry without name',
    kind: 'TykOasApiDefinition',
    obj: oas(validOasSpec, { id: 'a', linkedByPolicies: [{ namespace: 'default' }] }),
    theirs: 'rejects',
  },
  { why: 'TykOasApiDefinition status.enabled "yes"', kind: 'TykOasApiDefinition', obj: oas(validOasSpec, { id: 'a', enabled: 'yes' }), theirs: 'rejects' },
  {
    why: 'TykOasApiDefinition status.conditions[].status "maybe"',
    kind: 'TykOasApiDefinition',
    obj: oas(validOasSpec, { id: 'a', conditions: [{ ...condition, status: 'maybe' }] }),
    theirs: 'prunes',
  },
  { why: 'TykOasApiDefinition status.observedGeneration "1"', kind: 'TykOasApiDefinition', obj: oas(validOasSpec, { id: 'a', observedGeneration: '1' }), theirs: 'prunes' },
];

t.test('our schema rejects what it must', async (t) => {
  for (const { why, kind, obj, theirs: verdict } of REJECTED) {
    t.not(problems('ours', kind, obj), undefined, `ours rejects: ${why}`);
    if (verdict === 'rejects') t.not(problems('theirs', kind, obj), undefined, `theirs rejects it too: ${why}`);
    else {
      t.equal(problems('theirs', kind, obj), undefined, `theirs accepts it: ${why}`);
      t.not(JSON.stringify(pruneBy('theirs', kind, obj)), JSON.stringify(obj), `…because it prunes the field: ${why}`);
    }
  }
  // and the valid bases of those objects are accepted, so each rejection is about its one field
  t.equal(problems('ours', 'ApiDefinition', api(validApiSpec, { api_id: 'a', conditions: [condition], observedGeneration: 1 })), undefined);
  t.equal(problems('ours', 'SecurityPolicy', policy(validPolicySpec, { pol_id: 'p', latestTransaction: { status: 'Successful', time: '2024-05-06T07:08:09.123Z' } })), undefined);
  t.equal(problems('ours', 'OperatorContext', context({ env: { mode: 'pro', url: 'http://tyk' } }, { conditions: [condition] })), undefined);
  t.equal(
    problems(
      'ours',
      'TykOasApiDefinition',
      oas({ ...validOasSpec, versioning: { enabled: true, versions: [{ name: 'v2', tykOasApiDefinitionRef: { name: 'v2' } }] } }, { id: 'a', conditions: [condition], observedGeneration: 1 }),
    ),
    undefined,
  );
});

t.test("our statuses keep what Tyk Operator's prune: SecurityPolicy latestTransaction, conditions (TykOasApiDefinition's too)", async (t) => {
  const tx = { status: 'Failed', time: '2024-05-06T07:08:09Z', error: 'no such API' };
  const obj = policy(validPolicySpec, { pol_id: 'p', latestTransaction: tx, conditions: [condition], observedGeneration: 2 });
  const byTheirs = pruneBy('theirs', 'SecurityPolicy', obj) as Obj;
  const byOurs = pruneBy('ours', 'SecurityPolicy', obj) as Obj;
  t.strictSame(byTheirs.status, { pol_id: 'p' }, 'Tyk Operator keeps only pol_id of it (as the design notes)');
  t.strictSame(byOurs, obj, 'ours keeps all of it');
  const entry = { name: 'petstore', namespace: 'default', kind: 'TykOasApiDefinition' };
  const withKind = policy({ ...validPolicySpec, access_rights_array: [entry] });
  t.strictSame((pruneBy('ours', 'SecurityPolicy', withKind) as { spec: Obj }).spec.access_rights_array, [entry], 'ours keeps access_rights_array[].kind');
  t.strictSame((pruneBy('theirs', 'SecurityPolicy', withKind) as { spec: Obj }).spec.access_rights_array, [{ name: 'petstore', namespace: 'default' }], 'theirs prunes it');
  const oasObj = oas(validOasSpec, { id: 'a', latestTransaction: tx, conditions: [condition], observedGeneration: 2 });
  t.strictSame(
    (pruneBy('theirs', 'TykOasApiDefinition', oasObj) as Obj).status,
    { id: 'a', latestTransaction: tx },
    'Tyk Operator prunes the conditions and observedGeneration of a TykOasApiDefinition',
  );
  t.strictSame(pruneBy('ours', 'TykOasApiDefinition', oasObj), oasObj, 'ours keeps them');
});

// ---------------------------------------------------------------------------------------------
// 3. Valid under theirs ⇒ valid under ours; kept by theirs ⇒ kept by ours.
//    Checked over examples (samples, hand-made variants, generated objects) and by comparing
//    declarations path by path: evidence, not a proof.

/** Hand-made objects Tyk Operator's CRD accepts: its field types, edge values, every enum value. */
const VARIANTS: { why: string; kind: Kind; obj: Obj }[] = [
  { why: 'ApiDefinition with only what theirs requires, empty strings', kind: 'ApiDefinition', obj: api({ name: '', protocol: '', proxy: { target_url: '' } }) },
  ...['', 'h2c', 'tcp', 'tls', 'http', 'https'].map((protocol) => ({ why: `ApiDefinition protocol "${protocol}"`, kind: 'ApiDefinition' as const, obj: api({ ...validApiSpec, protocol }) })),
  {
    why: 'ApiDefinition with every field ours declares, and more',
    kind: 'ApiDefinition',
    obj: api(
      {
        ...validApiSpec,
        api_id: 'pinned',
        active: false,
        domain: 'httpbin.example',
        org_id: 'org',
        listen_port: 8443,
        proxy: { target_url: 'http://a', listen_path: '/a', strip_listen_path: true, preserve_host_header: false, target_list: ['http://b'] },
        contextRef: { name: 'ctx' },
        config_data: null,
        detailed_tracing: null,
        version_data: { default_version: 'v1', not_versioned: false, versions: { v1: { name: 'v1' } } },
        tags: ['a'],
      },
      {
        api_id: 'pinned',
        orgId: 'org',
        latestTransaction: { status: 'Successful', time: '2024-05-06T07:08:09Z', error: '' },
        latestCRDSpecHash: '1',
        latestTykSpecHash: '2',
        linked_by_policies: [{ name: 'p' }, { name: 'q', namespace: 'other' }],
        linked_to_apis: [{ name: 'a', namespace: 'default' }],
        linked_by_apis: [{ name: 'b' }],
        linked_to_subgraph: 'users-subgraph',
      },
    ),
  },
  { why: 'ApiDefinition contextRef with namespace', kind: 'ApiDefinition', obj: api({ ...validApiSpec, contextRef: { name: 'ctx', namespace: 'tyk' } }) },
  { why: 'ApiDefinition status with only api_id', kind: 'ApiDefinition', obj: api(validApiSpec, { api_id: 'a' }) },
  ...['active', 'draft', 'deny'].map((state) => ({ why: `SecurityPolicy state ${state}`, kind: 'SecurityPolicy' as const, obj: policy({ ...validPolicySpec, state }) })),
  {
    why: 'SecurityPolicy with every field ours declares, and more',
    kind: 'SecurityPolicy',
    obj: policy(
      {
        ...validPolicySpec,
        id: 'pinned',
        active: false,
        contextRef: { name: 'ctx', namespace: 'tyk' },
        access_rights_array: [
          { name: 'a', namespace: 'default', versions: [], allowed_urls: [{ url: '/x', methods: ['GET'] }], limit: { rate: 1, per: 1 } },
          { name: 'b', namespace: 'other', versions: ['v1', 'v2'], api_id: 'set-by-operator', disable_introspection: true },
        ],
        access_rights: { someid: { name: 'a', namespace: 'default', versions: ['Default'] } },
        rate: 10,
        per: 60,
        quota_max: -1,
        tags: ['t'],
        meta_data: { k: 'v' },
        partitions: { quota: true, rate_limit: false },
        _id: 'dashboard-id',
      },
      { pol_id: 'pinned', linked_apis: [{ name: 'a', namespace: 'default' }, { name: 'b' }], latestCRDSpecHash: '1', latestTykSpecHash: '2' },
    ),
  },
  { why: 'SecurityPolicy without access rights', kind: 'SecurityPolicy', obj: policy({ name: '', state: 'deny', active: false }) },
  ...['ce', 'pro'].map((mode) => ({ why: `OperatorContext mode ${mode}`, kind: 'OperatorContext' as const, obj: context({ env: { mode } }) })),
  {
    why: 'OperatorContext with every field theirs declares',
    kind: 'OperatorContext',
    obj: context(
      {
        env: { mode: 'pro', url: 'https://dash', auth: 'secret', org: 'org', insecureSkipVerify: false, ingress: { httpPort: 80, httpsPort: 443 }, user_owners: ['u'], user_group_owners: ['g'] },
        secretRef: { name: 'conf' },
      },
      {
        linked_api_definitions: [{ name: 'a', namespace: 'default' }],
        linked_security_policies: [{ name: 'p' }],
        linked_api_descriptions: [],
        linked_portal_catalogues: [{ name: 'c' }],
        linked_portal_configs: [{ name: 'c' }],
      },
    ),
  },
  { why: 'OperatorContext with an empty spec', kind: 'OperatorContext', obj: context({}) },
  { why: 'TykOasApiDefinition with only what theirs requires, empty strings', kind: 'TykOasApiDefinition', obj: oas({ tykOAS: { configmapRef: { name: '', keyName: '' } } }) },
  ...['header', 'url-param', 'url'].map((location) => ({
    why: `TykOasApiDefinition versioning.location ${location}`,
    kind: 'TykOasApiDefinition' as const,
    obj: oas({ ...validOasSpec, versioning: { enabled: true, location } }),
  })),
  ...['ApiDefinition', 'TykOasApiDefinition'].map((kind) => ({
    why: `TykOasApiDefinition references of kind ${kind}`,
    kind: 'TykOasApiDefinition' as const,
    obj: oas(
      { ...validOasSpec, contextRef: { name: 'ctx', kind }, versioning: { enabled: true, versions: [{ name: 'v2', tykOasApiDefinitionRef: { name: 'v2', namespace: 'other', kind } }] } },
      { id: 'a', linkedByPolicies: [{ name: 'p', kind }], versioningStatus: { baseAPIVersionContextRef: { name: 'base', kind } } },
    ),
  })),
  {
    why: 'TykOasApiDefinition with every field theirs declares, and more',
    kind: 'TykOasApiDefinition',
    obj: oas(
      {
        tykOAS: { configmapRef: { name: 'petstore', namespace: 'apis', keyName: 'oas.json' } },
        clientCertificate: { enabled: true, allowlist: ['client-ca', 'other-ca'] },
        contextRef: { name: 'ctx', namespace: 'tyk' },
        versioning: {
          enabled: true,
          name: 'v1',
          default: 'v1',
          key: 'x-api-version',
          location: 'header',
          versions: [
            { name: 'v2', tykOasApiDefinitionRef: { name: 'petstore-v2' } },
            { name: 'v3', tykOasApiDefinitionRef: { name: 'petstore-v3', namespace: 'other' } },
          ],
        },
      },
      {
        id: 'a',
        name: 'Petstore',
        listenPath: '/petstore/',
        targetURL: 'https://petstore.example',
        domain: 'petstore.example',
        enabled: false,
        ingressTemplate: false,
        latestConfigMapHash: '1',
        latestCRDSpecHash: '2',
        latestTykSpecHash: '3',
        latestTransaction: { status: 'Successful', time: '2024-05-06T07:08:09Z', error: '' },
        linkedByPolicies: [{ name: 'p' }, { name: 'q', namespace: 'other' }],
        versioningStatus: { isVersionedAPI: true, isDefaultVersion: false, baseAPIVersionContextRef: { name: 'base', namespace: 'default' } },
      },
    ),
  },
  { why: 'TykOasApiDefinition versioning off, no versions', kind: 'TykOasApiDefinition', obj: oas({ ...validOasSpec, versioning: { enabled: false } }) },
  { why: 'OperatorContext with fields from a newer Tyk Operator', kind: 'OperatorContext', obj: context({ env: { mode: 'ce', future: { x: 1 } }, future: true }) },
  { why: 'SubGraph with every field theirs declares', kind: 'SubGraph', obj: subgraph(validSubgraphSpec, { linked_by_api: 'ZGVmYXVsdC91c2Vycy1hcGk' }) },
  { why: 'SubGraph with empty strings', kind: 'SubGraph', obj: subgraph({ schema: '', sdl: '' }, { linked_by_api: '' }) },
  {
    why: 'SuperGraph with every field theirs declares',
    kind: 'SuperGraph',
    obj: supergraph({ subgraph_refs: [{ name: 'users', namespace: 'users-ns' }, { name: 'posts' }], schema: 'type Query { a: Int }', merged_sdl: 'type Query { a: Int }' }, {}),
  },
  { why: 'SuperGraph with no subgraphs', kind: 'SuperGraph', obj: supergraph({ subgraph_refs: [] }) },
  ...['keyless', 'jwt', 'oauth', 'authToken'].map((auth_type) => ({
    why: `APIDescription auth_type ${auth_type}`,
    kind: 'APIDescription' as const,
    obj: description({ ...validDescriptionSpec, auth_type }),
  })),
  ...['swagger', 'swagger_custom_url', 'graphql'].map((doc_type) => ({
    why: `APIDescription docs.doc_type ${doc_type}`,
    kind: 'APIDescription' as const,
    obj: description({ ...validDescriptionSpec, docs: { doc_type, documentation: 'x' } }),
  })),
  {
    why: 'APIDescription with every field theirs declares',
    kind: 'APIDescription',
    obj: description({
      ...validDescriptionSpec,
      short_description: 's',
      long_description: 'l',
      is_keyless: false,
      version: 'v2',
      policy_id: 'pid',
      documentation: 'docid',
      fields: { type: 'internal' },
      config: { require_key_approval: true, signup_fields: ['company'], oauth_usage_limit: 3 },
      contextRef: { name: 'ctx', namespace: 'tyk' },
    }),
  },
  { why: 'APIDescription with only a policy_id', kind: 'APIDescription', obj: description({ policy_id: 'pid' }) },
  {
    why: 'PortalAPICatalogue with every field ours declares, and more',
    kind: 'PortalAPICatalogue',
    obj: catalogue(
      {
        org_id: 'org',
        email: 'owner@example.com',
        contextRef: { name: 'ctx' },
        apis: [{ apiDescriptionRef: { name: 'd', namespace: 'default' } }, { ...validDescriptionSpec, fields: { a: 'b' } }, { name: 'inline', policy_id: 'pid', show: false, version: 'v2' }],
      },
      { id: '5cc03284d07e7f00019404b4' },
    ),
  },
  { why: 'PortalAPICatalogue without entries', kind: 'PortalAPICatalogue', obj: catalogue({}) },
  { why: 'PortalConfig empty (the sample)', kind: 'PortalConfig', obj: portalConfig({}) },
  {
    why: 'PortalConfig with settings and a context',
    kind: 'PortalConfig',
    obj: portalConfig({ require_key_approval: true, signup_fields: ['company'], disable_signup: false, oauth_usage_limit: 1, contextRef: { name: 'ctx', namespace: 'tyk' } }, { id: 'c' }),
  },
];

const examples = [...samples.filter((s) => !THEIRS_REFUSES[s.where]).map((s) => ({ why: s.where, kind: s.kind, obj: s.doc })), ...VARIANTS];

t.test('samples and hand-made variants: valid under theirs, valid under ours, nothing theirs keeps is pruned by ours', async (t) => {
  for (const { why, kind, obj } of examples) {
    t.equal(problems('theirs', kind, obj), undefined, `${why}: valid under theirs (the variant is a fair example)`);
    t.equal(problems('ours', kind, obj), undefined, `${why}: valid under ours`);
    const stored = pruneBy('theirs', kind, obj);
    t.equal(problems('ours', kind, stored), undefined, `${why}: as stored by theirs, valid under ours`);
    t.strictSame(pruneBy('ours', kind, stored), stored, `${why}: ours prunes nothing of what theirs stored`);
  }
});

/**
 * Arbitrary values valid under a CRD schema: declared fields present at random (required ones
 * always), every type the schema allows, every enum value, null where nullable, unknown fields
 * where the schema preserves them.
 */
const anyJson = fc.jsonValue({ maxDepth: 2 });
const unknownKey = fc.stringMatching(/^x-[a-z]{1,6}$/);
const mapKey = fc.stringMatching(/^[A-Za-z*][\w.-]{0,6}$/);
const dateTime = fc.date({ min: new Date('1970-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString());

function arbitraryFor(s: Schema, path = '$'): fc.Arbitrary<unknown> {
  let arb: fc.Arbitrary<unknown>;
  if (s.enum) arb = fc.constantFrom(...s.enum);
  else if (s.type === 'string') {
    arb = s.format === 'date-time' ? dateTime : s.pattern !== undefined ? fc.stringMatching(new RegExp(s.pattern)) : fc.string({ maxLength: 6 });
  } else if (s.type === 'integer') arb = s.format === 'int32' ? fc.integer() : fc.maxSafeInteger();
  else if (s.type === 'number') arb = fc.double({ noNaN: true, noDefaultInfinity: true });
  else if (s.type === 'boolean') arb = fc.boolean();
  else if (s.type === 'array') arb = fc.array(s.items ? arbitraryFor(s.items, `${path}[]`) : anyJson, { maxLength: 2 });
  else if (s.type === 'object' || (s.type === undefined && s.properties)) {
    const parts: fc.Arbitrary<Obj>[] = [];
    if (s.properties) {
      const model = Object.fromEntries(Object.entries(s.properties).map(([k, p]) => [k, arbitraryFor(p, `${path}.${k}`)]));
      parts.push(fc.record(model, { requiredKeys: s.required ?? [], noNullPrototype: true }) as fc.Arbitrary<Obj>);
    }
    if (isSchema(s.additionalProperties)) {
      parts.push(fc.dictionary(mapKey, arbitraryFor(s.additionalProperties, `${path}{}`), { maxKeys: 2, noNullPrototype: true }));
    } else if (s['x-kubernetes-preserve-unknown-fields'] === true) {
      parts.push(fc.dictionary(unknownKey, anyJson, { maxKeys: 2, noNullPrototype: true }));
    }
    arb = fc.tuple(...parts).map((ps: Obj[]) => Object.fromEntries(ps.flatMap((p) => Object.entries(p))));
  } else if (s.type === undefined && s['x-kubernetes-preserve-unknown-fields'] === true) arb = anyJson;
  else throw new Error(`${path}: no generator for type ${String(s.type)}`);
  return s.nullable === true ? fc.option(arb, { nil: null, freq: 4 }) : arb;
}

const RUNS = 150;

for (const { kind } of KINDS) {
  t.test(`${kind}: objects generated from Tyk Operator's schema are valid under ours, and ours prunes none of what theirs keeps`, async (t) => {
    const their = rootSchema(theirsOf(kind));
    const spec = arbitraryFor(their.properties!.spec!, '$.spec');
    const status = arbitraryFor(their.properties!.status!, '$.status');
    const objects = fc.record(
      { apiVersion: fc.constant('tyk.tyk.io/v1alpha1'), kind: fc.constant(kind), metadata: fc.constant(meta), spec, status },
      { requiredKeys: ['apiVersion', 'kind', 'metadata', 'spec'] },
    );
    let checked = 0;
    fc.assert(
      fc.property(objects, (obj) => {
        checked++;
        const theirProblems = problems('theirs', kind, obj);
        if (theirProblems !== undefined) throw new Error(`generator made an object theirs rejects: ${theirProblems}`);
        const ourProblems = problems('ours', kind, obj);
        if (ourProblems !== undefined) throw new Error(`valid under theirs, rejected by ours: ${ourProblems}`);
        const stored = pruneBy('theirs', kind, obj);
        if (!isDeepStrictEqual(pruneBy('ours', kind, stored), stored)) throw new Error('ours prunes something theirs keeps');
        return true;
      }),
      { numRuns: RUNS, seed: 20240506 },
    );
    t.equal(checked, RUNS, `${RUNS} generated objects`);
  });
}

/**
 * Path by path: what ours declares, theirs declares with the same type, format, pattern and
 * bounds; ours' enum holds all of theirs' values, ours requires nothing theirs does not, allows
 * null wherever theirs does, and keeps unknown fields wherever theirs does. Paths only ours
 * declares are listed: they are the only places ours can refuse what theirs accepts, and theirs
 * prunes them (checked: their parent does not keep unknown fields), so no object stored under
 * theirs has them.
 */
const OURS_ONLY: Record<Kind, string[]> = {
  ApiDefinition: ['.status.conditions', '.status.observedGeneration'],
  TykOasApiDefinition: ['.status.conditions', '.status.observedGeneration'],
  SecurityPolicy: ['.spec.access_rights_array[].kind', '.status.conditions', '.status.latestTransaction', '.status.observedGeneration'],
  OperatorContext: ['.status.conditions', '.status.observedGeneration'],
  SubGraph: [],
  SuperGraph: [],
  // Tyk Operator's APIDescription status declares nothing (it keeps nothing)
  APIDescription: ['.status.conditions', '.status.latestTransaction', '.status.observedGeneration'],
  PortalAPICatalogue: ['.status.conditions', '.status.latestTransaction', '.status.observedGeneration'],
  PortalConfig: ['.status.conditions', '.status.latestTransaction', '.status.observedGeneration'],
};

function compare(o: Schema, r: Schema | undefined, path: string, oursOnly: string[], bad: string[]): void {
  if (!r) {
    oursOnly.push(path);
    return;
  }
  for (const k of ['type', 'format', 'pattern', 'minimum', 'maximum', 'minLength', 'maxLength', 'minItems', 'maxItems']) {
    if (o[k] !== undefined && o[k] !== r[k]) bad.push(`${path}: ${k} ${String(o[k])}, theirs ${String(r[k])}`);
  }
  if (o.enum && !r.enum?.every((v) => o.enum!.includes(v))) bad.push(`${path}: enum narrower than theirs`);
  for (const req of o.required ?? []) if (!(r.required ?? []).includes(req)) bad.push(`${path}: requires ${req}, theirs does not`);
  if (r.nullable === true && o.nullable !== true) bad.push(`${path}: theirs allows null`);
  if (r['x-kubernetes-preserve-unknown-fields'] === true && o['x-kubernetes-preserve-unknown-fields'] !== true) bad.push(`${path}: theirs keeps unknown fields`);
  if (o.additionalProperties === false) bad.push(`${path}: additionalProperties: false`);
  for (const [k, p] of Object.entries(o.properties ?? {})) {
    const theirProp = r.properties?.[k] ?? (isSchema(r.additionalProperties) ? r.additionalProperties : undefined);
    if (!theirProp && r['x-kubernetes-preserve-unknown-fields'] === true) bad.push(`${path}.${k}: theirs keeps it as it is, ours constrains it`);
    compare(p, theirProp, `${path}.${k}`, oursOnly, bad);
  }
  if (o.items) compare(o.items, r.items, `${path}[]`, oursOnly, bad);
  if (isSchema(o.additionalProperties)) compare(o.additionalProperties, isSchema(r.additionalProperties) ? r.additionalProperties : undefined, `${path}{}`, oursOnly, bad);
}

for (const { kind } of KINDS) {
  t.test(`${kind}: every field ours declares is declared by theirs no less permissively`, async (t) => {
    const oursOnly: string[] = [];
    const bad: string[] = [];
    compare(rootSchema(oursOf(kind)), rootSchema(theirsOf(kind)), '', oursOnly, bad);
    t.strictSame(bad, []);
    t.strictSame(oursOnly.sort(), [...OURS_ONLY[kind]].sort(), 'the fields only ours declares');
  });
}
