/**
 * CustomResourceDefinitions for the fake kube-apiserver: loading them from YAML, and doing to a
 * custom resource what kube-apiserver does with a CRD's structural schema before it stores it.
 *
 * Contract:
 * - `loadCrds(sources)` reads apiextensions.k8s.io/v1 CustomResourceDefinition documents from
 *   YAML files or directories (every *.yaml / *.yml in it; other documents, such as a
 *   kustomization, are skipped) and returns what the fake serves: group, the storage version
 *   (which must be served), kind, plural, listKind, scope, the status subresource, and the
 *   version's `openAPIV3Schema` compiled into a `CrdSchema`. A CRD this module cannot model
 *   faithfully (several versions with conversion, a keyword it does not know, a format it does not
 *   check) throws at load, with the file and path named: a fake that silently ignores part of a
 *   schema would be more lenient than the real server.
 * - `CrdSchema` does, in the real server's order (apiextensions-apiserver 1.20–1.30):
 *   `prune` (unknown fields dropped at every depth, unless under
 *   x-kubernetes-preserve-unknown-fields or additionalProperties; apiVersion, kind and metadata at
 *   the root are left to the caller), `dropNonNullableNulls` (what the decoder does since 1.20:
 *   a null map value whose schema is neither nullable nor defaulted is removed), `applyDefaults`
 *   (`default` of absent properties), `validate` (the OpenAPI checks, with ajv, reported as
 *   kube-openapi words them: the first failing string check only, nothing inside an object that
 *   fails its property count, field paths without list indices as 1.20 prints them; optionally
 *   "" refused as null, see ValidateOptions) and `validateLists` (x-kubernetes-list-type map/set
 *   uniqueness, ratcheted on update; the caller applies it to status updates too, as 1.26+ does).
 * - Errors are `FieldError`s, shaped as field.Error is in a Status' `details.causes`.
 *
 * Formats: the real server checks only the formats apiextensions-apiserver lists as supported
 * (date-time, date, byte, uuid, ...; int32, int64, double, float and any unknown name are
 * stripped and never checked). Of the supported ones this module checks date-time/datetime, date,
 * byte, password and uuid/uuid3/uuid4/uuid5, as kube-openapi's strfmt does; a CRD using another
 * supported format throws at load, and so does one the API server would refuse (uniqueItems,
 * additionalProperties: false).
 *
 * Checked against a real kube-apiserver v1.20.2 (Debian's build) request by request, under
 * test/fixtures/widget-crd.yaml, our deploy/crds and Tyk Operator's CRDs.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import yaml from 'js-yaml';

type Obj = Record<string, unknown>;

function isObject(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

// ---------------------------------------------------------------------------------------------
// Public types

/** One error, as field.Error appears in a Status' details.causes. */
export interface FieldError {
  field: string;
  /** FieldValueInvalid, FieldValueRequired, FieldValueNotSupported, FieldValueDuplicate, ... */
  reason: string;
  /** e.g. `Invalid value: "x": detail`, `Required value`, `Unsupported value: "x": supported values: "a"` */
  message: string;
}

/** The part of a CRD the fake serves. */
export interface CrdResource {
  group: string;
  /** the storage version */
  version: string;
  kind: string;
  plural: string;
  listKind: string;
  namespaced: boolean;
  statusSubresource: boolean;
  schema: CrdSchema;
  /** where it was read from, for messages */
  source: string;
}

/** The directory of our own CRDs (deploy/crds in this repository). */
export const DEFAULT_CRD_DIR = fileURLToPath(new URL('../../deploy/crds/', import.meta.url));

// ---------------------------------------------------------------------------------------------
// Go-style formatting, as field.Error.ErrorBody prints values

/** A JSON number as kube-apiserver holds it: int64 when integral and in range, else float64. */
function isInt64(n: number): boolean {
  return Number.isInteger(n) && Math.abs(n) < 2 ** 63;
}

/** Go's %v of a number: an int64 plainly; a float64 in the shortest form, with an exponent
 * (two digits at least) below 1e-4 or from 1e6 on, as strconv's 'g' with precision -1 does. */
function goNumber(n: number): string {
  if (isInt64(n)) return String(n);
  const [mantissa, e] = n.toExponential().split('e') as [string, string];
  const exp = Number(e);
  if (exp >= -4 && exp < 6) return String(n);
  return `${mantissa}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`;
}

/** A bound as kube-openapi prints it: truncated to int64 for an integral value, else a float64. */
function goBound(data: unknown, bound: number): string {
  return typeof data === 'number' && isInt64(data) ? String(Math.trunc(bound)) : goNumber(bound);
}

/** Go's %#v of a value decoded from JSON into interface{}. */
function goSyntax(v: unknown): string {
  if (v === null || v === undefined) return 'interface {}(nil)';
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'number') return goNumber(v);
  if (typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) return `[]interface {}{${v.map(goSyntax).join(', ')}}`;
  const entries = Object.keys(v as Obj)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${goSyntax((v as Obj)[k])}`);
  return `map[string]interface {}{${entries.join(', ')}}`;
}

/** How field.Error prints a bad value: strings quoted, numbers and booleans plain, the rest in Go syntax. */
export function goValue(v: unknown): string {
  if (v === null || v === undefined) return '"null"';
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'number') return goNumber(v);
  if (typeof v === 'boolean') return String(v);
  return goSyntax(v);
}

const fieldError = {
  invalid: (field: string, value: unknown, detail: string): FieldError => ({
    field,
    reason: 'FieldValueInvalid',
    message: `Invalid value: ${goValue(value)}: ${detail}`,
  }),
  required: (field: string): FieldError => ({ field, reason: 'FieldValueRequired', message: 'Required value' }),
  notSupported: (field: string, value: unknown, allowed: readonly unknown[]): FieldError => {
    const quoted = allowed.map((a) => JSON.stringify(typeof a === 'string' ? a : JSON.stringify(a)));
    const detail = quoted.length > 0 ? `: supported values: ${quoted.join(', ')}` : '';
    return { field, reason: 'FieldValueNotSupported', message: `Unsupported value: ${goValue(value)}${detail}` };
  },
  duplicate: (field: string, value: unknown): FieldError => ({
    field,
    reason: 'FieldValueDuplicate',
    message: `Duplicate value: ${goValue(value)}`,
  }),
};

// ---------------------------------------------------------------------------------------------
// The schema, as a CRD's openAPIV3Schema node

interface Node {
  type?: string;
  nullable?: boolean;
  format?: string;
  properties?: Record<string, Node>;
  additionalProperties?: Node | boolean;
  items?: Node;
  required?: string[];
  enum?: unknown[];
  default?: unknown;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-int-or-string'?: boolean;
  'x-kubernetes-list-type'?: string;
  'x-kubernetes-list-map-keys'?: string[];
  [keyword: string]: unknown;
}

/** Keywords ajv checks exactly as kube-openapi does (messages are mapped in `toFieldError`). */
const VALIDATION_KEYWORDS = new Set(['required', 'enum', 'pattern', 'minLength', 'maxLength', 'minItems', 'maxItems', 'multipleOf', 'minProperties', 'maxProperties']);
/** Keywords that change nothing for validation. */
const ANNOTATIONS = new Set(['description', 'title', 'example', 'externalDocs', 'default', '$schema', 'id']);
/** x-kubernetes-* keywords this module models outside ajv (pruning, list validation, metadata). */
const HANDLED_EXTENSIONS = new Set([
  'x-kubernetes-preserve-unknown-fields',
  'x-kubernetes-int-or-string',
  'x-kubernetes-list-type',
  'x-kubernetes-list-map-keys',
  'x-kubernetes-map-type',
  'x-kubernetes-embedded-resource',
]);

/** Formats apiextensions-apiserver keeps (names without '-'); every other format is stripped. */
const SUPPORTED_FORMATS = new Set([
  'bsonobjectid',
  'uri',
  'email',
  'hostname',
  'ipv4',
  'ipv6',
  'cidr',
  'mac',
  'uuid',
  'uuid3',
  'uuid4',
  'uuid5',
  'isbn',
  'isbn10',
  'isbn13',
  'creditcard',
  'ssn',
  'hexcolor',
  'rgbcolor',
  'byte',
  'password',
  'date',
  'duration',
  'datetime',
]);

/** RFC 3339 full-date, as Go's time.Parse("2006-01-02") takes it (day checked against the month). */
function isDate(s: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(s);
  if (!m) return false;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (month < 1 || month > 12 || day < 1) return false;
  return day <= new Date(Date.UTC(year, month, 0)).getUTCDate();
}

/** strfmt.IsDateTime: lower-cased, split at "t"; a date, then hh:mm:ss[.frac](z|±hh:mm). */
function isDateTime(s: string): boolean {
  if (s.length < 4) return false;
  const parts = s.toLowerCase().split('t');
  if (parts.length < 2 || !isDate(parts[0] as string)) return false;
  const m = /^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$/.exec(parts[1] as string);
  return m !== null && (m[1] as string) <= '23' && (m[2] as string) <= '59' && (m[3] as string) <= '59';
}

const UUID = {
  uuid: /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i,
  uuid3: /^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i,
  uuid4: /^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$/i,
  uuid5: /^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$/i,
};

/** The supported formats this module checks, by normalised name (Go's base64.StdEncoding for byte). */
const FORMAT_CHECKS: Record<string, (s: string) => boolean> = {
  datetime: isDateTime,
  date: isDate,
  byte: (s) => s.length % 4 === 0 && /^[A-Za-z0-9+/]*={0,2}$/.test(s),
  password: () => true,
  ...Object.fromEntries(Object.entries(UUID).map(([name, re]) => [name, (s: string) => re.test(s)])),
};

const normalizeFormat = (format: string): string => format.replace(/-/g, '');

/** strictSchema: a keyword ajv does not know throws at compile (toAjv passes only modelled ones). */
const ajv = new Ajv({ allErrors: true, verbose: true, strictSchema: true, strictTypes: false, strictRequired: false, strictTuples: false, allowUnionTypes: true });
/** The CRD's own type name (e.g. "string" where ajv is given ["string", "array"]), for messages. */
ajv.addKeyword({ keyword: 'x-fake-type', schemaType: 'string' });

const registeredFormats = new Set<string>();
function registerFormat(name: string): void {
  if (registeredFormats.has(name)) return;
  const check = FORMAT_CHECKS[normalizeFormat(name)] as (s: string) => boolean;
  ajv.addFormat(name, { type: 'string', validate: check });
  registeredFormats.add(name);
}

class SchemaError extends Error {}

/** The CRD node as a JSON Schema for ajv; throws SchemaError for what it cannot model. */
function toAjv(node: Node, path: string): Obj {
  const out: Obj = {};
  for (const [k, v] of Object.entries(node)) {
    if (VALIDATION_KEYWORDS.has(k)) out[k] = v;
    else if (k === 'properties') out.properties = mapValues(v as Record<string, Node>, (p, name) => toAjv(p, `${path}.${name}`));
    else if (k === 'items') {
      if (!isObject(v)) throw new SchemaError(`${path}.items: only a single items schema is structural`);
      out.items = toAjv(v as Node, `${path}[]`);
    } else if (k === 'uniqueItems') {
      if (v === true) throw new SchemaError(`${path}: uniqueItems cannot be set to true (the API server refuses such a CRD)`);
    } else if (k === 'additionalProperties') {
      if (v === false) throw new SchemaError(`${path}: additionalProperties: false is not structural`);
      out.additionalProperties = v === true ? true : toAjv(v as Node, `${path}{}`);
    } else if (k === 'anyOf' && node['x-kubernetes-int-or-string'] === true && isIntOrStringAnyOf(v)) continue;
    else if (ANNOTATIONS.has(k) || HANDLED_EXTENSIONS.has(k)) continue;
    else if (['type', 'nullable', 'format', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum'].includes(k)) continue;
    else throw new SchemaError(`${path}: keyword ${k} is not modelled by the fake kube-apiserver`);
  }
  Object.assign(out, typeKeywords(node, path), boundKeywords(node));
  return out;
}

function mapValues<T, U>(o: Record<string, T>, f: (v: T, k: string) => U): Record<string, U> {
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, f(v, k)]));
}

function isIntOrStringAnyOf(v: unknown): boolean {
  return (
    Array.isArray(v) && v.length === 2 && isObject(v[0]) && v[0].type === 'integer' && Object.keys(v[0]).length === 1 && isObject(v[1]) && v[1].type === 'string' && Object.keys(v[1]).length === 1
  );
}

/**
 * type, nullable and format as kube-openapi's type validator applies them: int-or-string is
 * ["integer", "string"]; a format the server keeps is checked, others are dropped; and, as the
 * type validator does, a string or an array passes the type check of a non-numeric type that
 * has a (kept) format.
 */
function typeKeywords(node: Node, path: string): Obj {
  const out: Obj = {};
  const types = node['x-kubernetes-int-or-string'] === true ? ['integer', 'string'] : node.type ? [node.type] : [];
  const format = typeof node.format === 'string' && SUPPORTED_FORMATS.has(normalizeFormat(node.format)) ? node.format : undefined;
  if (format !== undefined) {
    if (!FORMAT_CHECKS[normalizeFormat(format)]) throw new SchemaError(`${path}: format ${format} is not modelled by the fake kube-apiserver`);
    registerFormat(format);
    out.format = format;
  }
  if (types.length === 0) return out;
  out['x-fake-type'] = types.join(',');
  const numeric = types.includes('number') || types.includes('integer');
  const accepted = format !== undefined && !numeric ? [...new Set([...types, 'string', 'array'])] : types;
  out.type = accepted.length === 1 ? accepted[0] : accepted;
  if (node.nullable === true) out.nullable = true;
  return out;
}

/** minimum and maximum, with OpenAPI 3.0's boolean exclusiveMinimum/exclusiveMaximum as JSON Schema's numeric ones. */
function boundKeywords(node: Node): Obj {
  const out: Obj = {};
  if (typeof node.minimum === 'number') out[node.exclusiveMinimum === true ? 'exclusiveMinimum' : 'minimum'] = node.minimum;
  if (typeof node.maximum === 'number') out[node.exclusiveMaximum === true ? 'exclusiveMaximum' : 'maximum'] = node.maximum;
  return out;
}

// ---------------------------------------------------------------------------------------------
// ajv's errors in kube-openapi's words

/** The JSON pointer's tokens. */
function pointerTokens(instancePath: string): string[] {
  return instancePath
    .split('/')
    .slice(1)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/**
 * The field path kube-openapi 1.20 names a value by: property names joined with dots, list
 * indices left out ("spec.access_rights_array.allowed_urls.methods", as observed on a real
 * 1.20 server; later versions print "[0]").
 */
function schemaPath(root: unknown, instancePath: string): string {
  const names: string[] = [];
  let cur = root;
  for (const token of pointerTokens(instancePath)) {
    if (!Array.isArray(cur)) names.push(token);
    cur = Array.isArray(cur) ? cur[Number(token)] : isObject(cur) ? cur[token] : undefined;
  }
  return names.join('.');
}

/** The JSON type kube-openapi names a value by (integral numbers are "integer"). */
function jsonType(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return isInt64(v) ? 'integer' : 'number';
  return typeof v;
}

function toFieldError(e: ErrorObject, root: unknown): FieldError {
  const path = schemaPath(root, e.instancePath);
  const at = `${path} in body`;
  const p = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'type': {
      const expected = String((e.parentSchema as Obj | undefined)?.['x-fake-type'] ?? p.type);
      const actual = jsonType(e.data);
      return fieldError.invalid(path, actual, `${at} must be of type ${expected}: ${JSON.stringify(actual)}`);
    }
    case 'format':
      return fieldError.invalid(path, e.data, `${at} must be of type ${String(p.format)}: ${JSON.stringify(e.data)}`);
    case 'required':
      return fieldError.required(path === '' ? String(p.missingProperty) : `${path}.${String(p.missingProperty)}`);
    case 'enum':
      return fieldError.notSupported(path, e.data, p.allowedValues as unknown[]);
    case 'maxLength':
      return fieldError.invalid(path, e.data, `${at} should be at most ${String(p.limit)} chars long`);
    case 'minLength':
      return fieldError.invalid(path, e.data, `${at} should be at least ${String(p.limit)} chars long`);
    case 'pattern':
      return fieldError.invalid(path, e.data, `${at} should match '${String(p.pattern)}'`);
    case 'minimum':
      return fieldError.invalid(path, e.data, `${at} should be greater than or equal to ${goBound(e.data, p.limit as number)}`);
    case 'exclusiveMinimum':
      return fieldError.invalid(path, e.data, `${at} should be greater than ${goBound(e.data, p.limit as number)}`);
    case 'maximum':
      return fieldError.invalid(path, e.data, `${at} should be less than or equal to ${goBound(e.data, p.limit as number)}`);
    case 'exclusiveMaximum':
      return fieldError.invalid(path, e.data, `${at} should be less than ${goBound(e.data, p.limit as number)}`);
    case 'multipleOf':
      return fieldError.invalid(path, e.data, `${at} should be a multiple of ${goNumber(p.multipleOf as number)}`);
    case 'minItems':
      return fieldError.invalid(path, (e.data as unknown[]).length, `${at} should have at least ${String(p.limit)} items`);
    case 'maxItems':
      return fieldError.invalid(path, (e.data as unknown[]).length, `${at} should have at most ${String(p.limit)} items`);
    case 'minProperties':
      return fieldError.invalid(path, p.limit, `${at} should have at least ${String(p.limit)} properties`);
    case 'maxProperties':
      return fieldError.invalid(path, p.limit, `${at} should have at most ${String(p.limit)} properties`);
    default:
      throw new Error(`fake kube-apiserver: no message for ajv keyword ${e.keyword} at ${path}`);
  }
}

/** String checks in the order kube-openapi's string validator makes them; it stops at the first failure. */
const STRING_CHECKS = ['maxLength', 'minLength', 'pattern'];

/**
 * ajv reports every failure; kube-openapi stops early in two places: the string validator
 * reports only the first of maxLength, minLength and pattern, and an object failing
 * minProperties/maxProperties is not looked into (its properties, required, map values).
 */
function asKubeOpenApi(errs: readonly ErrorObject[]): ErrorObject[] {
  const counted = errs.filter((e) => e.keyword === 'minProperties' || e.keyword === 'maxProperties').map((e) => e.instancePath);
  const inside = (e: ErrorObject): boolean => counted.some((p) => e.instancePath.startsWith(`${p}/`) || (e.instancePath === p && e.keyword === 'required'));
  const firstString = new Map<string, string>();
  for (const keyword of STRING_CHECKS) {
    for (const e of errs) if (e.keyword === keyword && !firstString.has(e.instancePath)) firstString.set(e.instancePath, keyword);
  }
  return errs.filter((e) => !inside(e) && (!STRING_CHECKS.includes(e.keyword) || firstString.get(e.instancePath) === e.keyword));
}

// ---------------------------------------------------------------------------------------------
// The compiled schema

/** A field path as field.Path prints it: "spec.items[0].name". */
function child(path: string, key: string): string {
  return path === '' ? key : `${path}.${key}`;
}
function index(path: string, i: number): string {
  return `${path}[${i}]`;
}

const ROOT_META = new Set(['apiVersion', 'kind', 'metadata']);

export interface ValidateOptions {
  /** kube-apiserver 1.20 built with Go >= 1.16 takes "" for null in its type check
   * (kubernetes/kubernetes#99804): a typed, non-nullable field refuses it. */
  emptyStringIsNull?: boolean;
}

/** Where the object has "" under a typed, non-nullable schema node (JSON pointers). */
function emptyStrings(x: unknown, s: Node | undefined, pointer: string): { pointer: string; type: string }[] {
  if (!s) return [];
  if (x === '') {
    const types = s['x-kubernetes-int-or-string'] === true ? ['integer', 'string'] : s.type ? [s.type] : [];
    return types.length > 0 && s.nullable !== true ? [{ pointer, type: types.join(',') }] : [];
  }
  const at = (k: string | number): string => `${pointer}/${String(k).replace(/~/g, '~0').replace(/\//g, '~1')}`;
  if (Array.isArray(x)) return x.flatMap((v, i) => emptyStrings(v, s.items, at(i)));
  if (!isObject(x)) return [];
  return Object.entries(x).flatMap(([k, v]) => emptyStrings(v, fieldSchema(s, k), at(k)));
}

export class CrdSchema {
  private readonly check: ValidateFunction;

  /** Throws SchemaError (with `where` in its message) for what the fake cannot model. */
  constructor(
    private readonly root: Node,
    where: string,
  ) {
    try {
      this.check = ajv.compile(toAjv(root, where));
    } catch (err) {
      if (err instanceof SchemaError) throw new Error(`fake kube-apiserver: ${err.message}`);
      throw new Error(`fake kube-apiserver: ${where}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  /** Drops unknown fields in place (apiVersion, kind and metadata at the root are kept);
   * returns their paths ("spec.a.b", "status.list[0].x"). */
  prune(obj: Obj): string[] {
    const dropped: string[] = [];
    for (const [k, v] of Object.entries(obj)) {
      if (ROOT_META.has(k)) continue;
      const s = this.root.properties?.[k] ?? additional(this.root);
      if (s) prune(v, s, k, dropped);
      else if (this.root['x-kubernetes-preserve-unknown-fields'] !== true) {
        delete obj[k];
        dropped.push(k);
      }
    }
    return dropped;
  }

  /** Removes null map values whose schema is neither nullable nor defaulted (the decoder's
   * PruneNonNullableNullsWithoutDefaults, since Kubernetes 1.20). */
  dropNonNullableNulls(obj: Obj): void {
    dropNulls(obj, this.root);
  }

  /** Sets the `default` of every absent (or non-nullable null) property whose parent exists. */
  applyDefaults(obj: Obj): void {
    applyDefaults(obj, this.root);
  }

  /** The schema's verdict on the whole object, as kube-openapi reports it. With
   * `emptyStringIsNull`, "" in a typed, non-nullable field is refused as null (see ValidateOptions). */
  validate(obj: Obj, options: ValidateOptions = {}): FieldError[] {
    const empties = options.emptyStringIsNull ? emptyStrings(obj, this.root, '') : [];
    const quirk = empties.map((e) => fieldError.invalid(schemaPath(obj, e.pointer), 'null', `${schemaPath(obj, e.pointer)} in body must be of type ${e.type}: "null"`));
    if (this.check(obj)) return quirk;
    const refused = new Set(empties.map((e) => e.pointer));
    const errs = asKubeOpenApi((this.check.errors ?? []).filter((e) => !(e.keyword === 'type' && refused.has(e.instancePath))));
    return [...quirk, ...errs.map((e) => toFieldError(e, obj))];
  }

  /** x-kubernetes-list-type map and set: no two items with the same keys (map) or value (set).
   * On update, only when the old object had no such error (the server's ratcheting). */
  validateLists(obj: Obj, old?: Obj): FieldError[] {
    if (old && listErrors(old, this.root, '').length > 0) return [];
    return listErrors(obj, this.root, '');
  }
}

function additional(s: Node): Node | undefined {
  return isObject(s.additionalProperties) ? (s.additionalProperties as Node) : undefined;
}

/** apiextensions-apiserver's pruning algorithm (pruning.prune). */
function prune(x: unknown, s: Node | undefined, path: string, dropped: string[]): void {
  if (s?.['x-kubernetes-preserve-unknown-fields'] === true) return skipPrune(x, s, path, dropped);
  if (Array.isArray(x)) {
    x.forEach((v, i) => prune(v, s?.items, index(path, i), dropped));
    return;
  }
  if (!isObject(x)) return;
  for (const [k, v] of Object.entries(x)) {
    const sub = s?.properties?.[k] ?? (s ? additional(s) : undefined);
    if (sub) prune(v, sub, child(path, k), dropped);
    else {
      delete x[k];
      dropped.push(child(path, k));
    }
  }
}

/** Below x-kubernetes-preserve-unknown-fields: unknown fields stay, known ones are pruned by their schema. */
function skipPrune(x: unknown, s: Node, path: string, dropped: string[]): void {
  if (Array.isArray(x)) {
    x.forEach((v, i) => {
      if (s.items) skipPrune(v, s.items, index(path, i), dropped);
    });
    return;
  }
  if (!isObject(x)) return;
  for (const [k, v] of Object.entries(x)) {
    const sub = s.properties?.[k] ?? additional(s);
    if (sub) prune(v, sub, child(path, k), dropped);
  }
}

function fieldSchema(s: Node | undefined, key: string): Node | undefined {
  return s?.properties?.[key] ?? (s ? additional(s) : undefined);
}

function dropNulls(x: unknown, s: Node | undefined): void {
  if (Array.isArray(x)) {
    x.forEach((v) => dropNulls(v, s?.items));
    return;
  }
  if (!isObject(x)) return;
  for (const [k, v] of Object.entries(x)) {
    const sub = fieldSchema(s, k);
    if (v === null && sub && sub.nullable !== true && sub.default === undefined) delete x[k];
    else dropNulls(v, sub);
  }
}

function applyDefaults(x: unknown, s: Node | undefined): void {
  if (!s) return;
  if (Array.isArray(x)) {
    x.forEach((v) => applyDefaults(v, s.items));
    return;
  }
  if (!isObject(x)) return;
  for (const [k, prop] of Object.entries(s.properties ?? {})) {
    if (prop.default === undefined) continue;
    if (!(k in x) || (x[k] === null && prop.nullable !== true)) x[k] = structuredClone(prop.default);
  }
  for (const [k, v] of Object.entries(x)) applyDefaults(v, fieldSchema(s, k));
}

// ---- x-kubernetes-list-type ------------------------------------------------------------------

function listErrors(x: unknown, s: Node | undefined, path: string): FieldError[] {
  if (!s) return [];
  if (Array.isArray(x)) {
    const own = s['x-kubernetes-list-type'] === 'set' ? setErrors(x, path) : s['x-kubernetes-list-type'] === 'map' ? mapErrors(x, s, path) : [];
    return [...own, ...x.flatMap((v, i) => listErrors(v, s.items, index(path, i)))];
  }
  if (!isObject(x)) return [];
  return Object.entries(x).flatMap(([k, v]) => {
    if (path === '' && ROOT_META.has(k)) return [];
    return listErrors(v, fieldSchema(s, k), child(path, k));
  });
}

/** The index of the second appearance of each repeated key. */
function repeats(keys: readonly string[]): number[] {
  const seen = new Map<string, number>();
  const out: number[] = [];
  keys.forEach((k, i) => {
    const n = seen.get(k) ?? 0;
    if (n === 1) out.push(i);
    seen.set(k, n + 1);
  });
  return out;
}

function setErrors(items: readonly unknown[], path: string): FieldError[] {
  return repeats(items.map(canonical)).map((i) => fieldError.duplicate(index(path, i), items[i]));
}

function mapErrors(items: readonly unknown[], s: Node, path: string): FieldError[] {
  const bad = items.findIndex((x) => x !== null && !isObject(x));
  if (bad >= 0) return [fieldError.invalid(index(path, bad), items[bad], 'must be an object for an array of list-type map')];
  const keyFields = s['x-kubernetes-list-map-keys'] ?? [];
  const keyOf = (x: unknown): Obj => Object.fromEntries(keyFields.filter((f) => isObject(x) && f in x).map((f) => [f, (x as Obj)[f]]));
  const keys = items.map(keyOf);
  return repeats(keys.map(canonical)).map((i) => fieldError.duplicate(index(path, i), keys[i]));
}

/** JSON with sorted keys, so equal values compare equal. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (isObject(v)) {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

// ---------------------------------------------------------------------------------------------
// Loading CRDs

interface CrdVersion {
  name?: unknown;
  served?: unknown;
  storage?: unknown;
  subresources?: { status?: unknown };
  schema?: { openAPIV3Schema?: unknown };
}

/** The YAML files a source names: the file itself, or a directory's *.yaml / *.yml (sorted). */
function yamlFiles(source: string): string[] {
  if (!statSync(source).isDirectory()) return [source];
  return readdirSync(source)
    .filter((f) => ['.yaml', '.yml'].includes(extname(f)))
    .sort()
    .map((f) => join(source, f));
}

/** Reads every CustomResourceDefinition in `sources` (files or directories). */
export function loadCrds(sources: readonly string[]): CrdResource[] {
  return sources
    .flatMap(yamlFiles)
    .flatMap((file) => (yaml.loadAll(readFileSync(file, 'utf8')) as unknown[]).filter((d): d is Obj => isObject(d) && d.kind === 'CustomResourceDefinition').map((d) => crdResource(d, file)));
}

function crdResource(doc: Obj, file: string): CrdResource {
  const where = `${file}: ${String((doc.metadata as Obj | undefined)?.name ?? 'a CRD')}`;
  if (doc.apiVersion !== 'apiextensions.k8s.io/v1') throw new Error(`fake kube-apiserver: ${where}: only apiextensions.k8s.io/v1 CRDs are modelled`);
  const spec = isObject(doc.spec) ? doc.spec : {};
  const names = isObject(spec.names) ? spec.names : {};
  const versions = (Array.isArray(spec.versions) ? spec.versions : []) as CrdVersion[];
  const served = versions.filter((v) => v.served === true);
  const storage = versions.find((v) => v.storage === true);
  if (storage?.served !== true || served.length !== 1) {
    throw new Error(`fake kube-apiserver: ${where}: exactly one served version, the storage version, is modelled`);
  }
  const schema = storage.schema?.openAPIV3Schema;
  if (!isObject(schema)) throw new Error(`fake kube-apiserver: ${where}: the version has no openAPIV3Schema`);
  const kind = String(names.kind);
  return {
    group: String(spec.group),
    version: String(storage.name),
    kind,
    plural: String(names.plural),
    listKind: typeof names.listKind === 'string' ? names.listKind : `${kind}List`,
    namespaced: spec.scope !== 'Cluster',
    statusSubresource: isObject(storage.subresources) && storage.subresources.status !== undefined,
    schema: new CrdSchema(schema as Node, where),
    source: file,
  };
}
