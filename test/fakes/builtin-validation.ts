/**
 * What kube-apiserver (1.20) validates beyond a CRD's schema, for the fake (./kube-apiserver.ts):
 * - every object's metadata: label keys and values (ValidateLabels) and ownerReferences
 *   (apiVersion, kind, name, uid required; at most one controller), as apimachinery does;
 * - networking.k8s.io/v1 Ingress (pkg/apis/networking/validation): rules or defaultBackend,
 *   hosts (DNS-1123 subdomains, `*.` wildcards, no IPs), paths (pathType required and known,
 *   absolute for Exact and Prefix, no `//`, `/./`, `/../`, `%2f`, no `/..`, `/.` at the end),
 *   backends (service or resource, not both; service name a DNS-1035 label; port name or
 *   number, not both, each valid), TLS hosts, ingressClassName, and on create the class
 *   annotation and `spec.ingressClassName` not set together.
 * Messages and field paths as the real server words them (list indices included, as Go's
 * validation prints them). Pure; each function returns the errors, none when valid.
 */
import type { FieldError } from './crd-schema.js';

type Obj = Record<string, unknown>;

function isObject(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const q = (s: string): string => JSON.stringify(s);

const invalid = (field: string, value: string, detail: string): FieldError => ({ field, reason: 'FieldValueInvalid', message: `Invalid value: ${value}: ${detail}` });
const required = (field: string, detail: string): FieldError => ({ field, reason: 'FieldValueRequired', message: detail ? `Required value: ${detail}` : 'Required value' });

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const WILDCARD_SUBDOMAIN = /^\*\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;

const SUBDOMAIN_MSG =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const WILDCARD_MSG =
  "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character (e.g. '*.example.com', regex used for validation is '\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const DNS1035_MSG =
  "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
const LABEL_VALUE_MSG =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
const QUALIFIED_NAME_MSG =
  "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

function subdomainErrors(field: string, value: string): FieldError[] {
  const errs: FieldError[] = [];
  if (value.length > 253) errs.push(invalid(field, q(value), 'must be no more than 253 characters'));
  if (!DNS1123_SUBDOMAIN.test(value)) errs.push(invalid(field, q(value), SUBDOMAIN_MSG));
  return errs;
}

/** Labels and ownerReferences, on every kind. */
export function metadataErrors(obj: Obj): FieldError[] {
  const meta = isObject(obj.metadata) ? obj.metadata : {};
  const errs: FieldError[] = [];
  const labels = isObject(meta.labels) ? meta.labels : {};
  for (const [key, raw] of Object.entries(labels)) {
    const value = String(raw);
    const slash = key.lastIndexOf('/');
    const [prefix, name] = slash >= 0 ? [key.slice(0, slash), key.slice(slash + 1)] : ['', key];
    if (slash >= 0 && (prefix.length > 253 || !DNS1123_SUBDOMAIN.test(prefix))) errs.push(invalid('metadata.labels', q(key), `prefix part ${SUBDOMAIN_MSG}`));
    if (name.length > 63) errs.push(invalid('metadata.labels', q(key), 'name part must be no more than 63 characters'));
    if (!QUALIFIED_NAME.test(name)) errs.push(invalid('metadata.labels', q(key), QUALIFIED_NAME_MSG));
    if (value.length > 63) errs.push(invalid('metadata.labels', q(value), 'must be no more than 63 characters'));
    if (!LABEL_VALUE.test(value)) errs.push(invalid('metadata.labels', q(value), LABEL_VALUE_MSG));
  }
  const refs = Array.isArray(meta.ownerReferences) ? meta.ownerReferences : [];
  let controller = '';
  for (const raw of refs) {
    const ref = isObject(raw) ? raw : {};
    const str = (k: string) => (typeof ref[k] === 'string' ? (ref[k] as string) : '');
    const version = str('apiVersion').split('/').at(-1) ?? '';
    if (version === '') errs.push(invalid('metadata.ownerReferences.apiVersion', q(str('apiVersion')), 'version must not be empty'));
    if (str('kind') === '') errs.push(invalid('metadata.ownerReferences.kind', q(''), 'kind must not be empty'));
    if (str('name') === '') errs.push(invalid('metadata.ownerReferences.name', q(''), 'name must not be empty'));
    if (str('uid') === '') errs.push(invalid('metadata.ownerReferences.uid', q(''), 'uid must not be empty'));
    if (ref.controller === true) {
      if (controller !== '') {
        errs.push(invalid('metadata.ownerReferences', JSON.stringify(refs), `Only one reference can have Controller set to true. Found "true" in references for ${controller} and ${str('name')}`));
      } else controller = str('name');
    }
  }
  return errs;
}

const PATH_TYPES = ['Exact', 'ImplementationSpecific', 'Prefix'];
const INVALID_SEQUENCES = ['//', '/./', '/../', '%2f', '%2F'];
const INVALID_SUFFIXES = ['/..', '/.'];

function hostErrors(field: string, host: string): FieldError[] {
  if (/^(\d{1,3}\.){3}\d{1,3}$/.test(host) || host.includes(':')) return [invalid(field, q(host), 'must be a DNS name, not an IP address')];
  if (host.includes('*')) return WILDCARD_SUBDOMAIN.test(host) ? [] : [invalid(field, q(host), WILDCARD_MSG)];
  return subdomainErrors(field, host);
}

function backendErrors(field: string, backend: Obj): FieldError[] {
  const service = isObject(backend.service) ? backend.service : undefined;
  const resource = isObject(backend.resource) ? backend.resource : undefined;
  if (service && resource) return [invalid(field, '""', 'cannot set both resource and service backends')];
  if (resource) {
    const errs: FieldError[] = [];
    if (typeof resource.kind !== 'string' || resource.kind === '') errs.push(required(`${field}.resource.kind`, ''));
    if (typeof resource.name !== 'string' || resource.name === '') errs.push(required(`${field}.resource.name`, ''));
    return errs;
  }
  if (!service) return [invalid(field, '""', 'resource or service backend is required')];
  const errs: FieldError[] = [];
  const name = typeof service.name === 'string' ? service.name : '';
  if (name === '') errs.push(required(`${field}.service.name`, ''));
  else {
    if (name.length > 63) errs.push(invalid(`${field}.service.name`, q(name), 'must be no more than 63 characters'));
    if (!DNS1035_LABEL.test(name)) errs.push(invalid(`${field}.service.name`, q(name), DNS1035_MSG));
  }
  const port = isObject(service.port) ? service.port : {};
  const portName = typeof port.name === 'string' ? port.name : '';
  const portNumber = typeof port.number === 'number' ? port.number : 0;
  if (portName !== '' && portNumber !== 0) errs.push(invalid(field, '""', 'cannot set both port name & port number'));
  else if (portName !== '') {
    if (portName.length > 15) errs.push(invalid(`${field}.service.port.name`, q(portName), 'must be no more than 15 characters'));
    if (!/^[-a-z0-9]+$/.test(portName)) errs.push(invalid(`${field}.service.port.name`, q(portName), 'must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)'));
    else if (!/[a-z]/.test(portName)) errs.push(invalid(`${field}.service.port.name`, q(portName), 'must contain at least one letter (a-z)'));
  } else if (portNumber !== 0) {
    if (!Number.isInteger(portNumber) || portNumber < 1 || portNumber > 65535) errs.push(invalid(`${field}.service.port.number`, String(portNumber), 'must be between 1 and 65535, inclusive'));
  } else errs.push(required(field, 'port name or number is required'));
  return errs;
}

function pathErrors(field: string, p: Obj): FieldError[] {
  const pathType = typeof p.pathType === 'string' ? p.pathType : undefined;
  if (pathType === undefined) return [required(`${field}.pathType`, 'pathType must be specified')];
  const path = typeof p.path === 'string' ? p.path : '';
  const errs: FieldError[] = [];
  if (pathType === 'Exact' || pathType === 'Prefix') {
    if (!path.startsWith('/')) errs.push(invalid(`${field}.path`, q(path), 'must be an absolute path'));
    if (path !== '') {
      for (const seq of INVALID_SEQUENCES) if (path.includes(seq)) errs.push(invalid(`${field}.path`, q(path), `must not contain '${seq}'`));
      for (const suffix of INVALID_SUFFIXES) if (path.endsWith(suffix)) errs.push(invalid(`${field}.path`, q(path), `cannot end with '${suffix}'`));
    }
  } else if (pathType === 'ImplementationSpecific') {
    if (path !== '' && !path.startsWith('/')) errs.push(invalid(`${field}.path`, q(path), 'must be an absolute path'));
  } else {
    errs.push({ field: `${field}.pathType`, reason: 'FieldValueNotSupported', message: `Unsupported value: ${q(pathType)}: supported values: ${PATH_TYPES.map(q).join(', ')}` });
  }
  return [...errs, ...backendErrors(`${field}.backend`, isObject(p.backend) ? p.backend : {})];
}

/** networking.k8s.io/v1 Ingress, as ValidateIngressCreate / ValidateIngressUpdate (1.20) check it. */
export function ingressErrors(obj: Obj, creating: boolean): FieldError[] {
  const spec = isObject(obj.spec) ? obj.spec : {};
  const errs: FieldError[] = [];
  const rules = Array.isArray(spec.rules) ? spec.rules : [];
  if (rules.length === 0 && !isObject(spec.defaultBackend)) errs.push(invalid('spec.rules', '[]', 'either `defaultBackend` or `rules` must be specified'));
  if (isObject(spec.defaultBackend)) errs.push(...backendErrors('spec.defaultBackend', spec.defaultBackend));
  rules.forEach((raw, r) => {
    const rule = isObject(raw) ? raw : {};
    if (typeof rule.host === 'string' && rule.host !== '') errs.push(...hostErrors(`spec.rules[${r}].host`, rule.host));
    if (!isObject(rule.http)) return;
    const paths = Array.isArray(rule.http.paths) ? rule.http.paths : [];
    if (paths.length === 0) errs.push(required(`spec.rules[${r}].http.paths`, ''));
    paths.forEach((p, i) => {
      errs.push(...pathErrors(`spec.rules[${r}].http.paths[${i}]`, isObject(p) ? p : {}));
    });
  });
  const tls = Array.isArray(spec.tls) ? spec.tls : [];
  tls.forEach((raw, i) => {
    const entry = isObject(raw) ? raw : {};
    const hosts = Array.isArray(entry.hosts) ? entry.hosts : [];
    hosts.forEach((h, j) => {
      if (typeof h === 'string') errs.push(...hostErrors(`spec.tls[${i}].hosts[${j}]`, h));
    });
    if (typeof entry.secretName === 'string' && entry.secretName !== '') errs.push(...subdomainErrors(`spec.tls[${i}].secretName`, entry.secretName));
  });
  if (typeof spec.ingressClassName === 'string') errs.push(...subdomainErrors('spec.ingressClassName', spec.ingressClassName));
  const meta = isObject(obj.metadata) ? obj.metadata : {};
  const annotations = isObject(meta.annotations) ? meta.annotations : {};
  const annotated = annotations['kubernetes.io/ingress.class'];
  if (creating && spec.ingressClassName !== undefined && annotated !== undefined) {
    errs.push(invalid('annotations.kubernetes.io/ingress.class', q(String(annotated)), 'can not be set when the class field is also set'));
  }
  return errs;
}
