/**
 * Ingress → ApiDefinitions, as Tyk Operator's Ingress controller made them. Pure: no clock, no I/O.
 *
 * - Ours: the annotation `kubernetes.io/ingress.class` (when present it decides) or
 *   `spec.ingressClassName` equals INGRESS_CLASS.
 * - One ApiDefinition per rule path, named `<namespace>-<ingress>-<first 9 hex of
 *   sha256(host + path)>`, labelled `tyk.io/ingress: <ingress>` and `tyk.io/apidefinition:
 *   <hash>`, controlled by the Ingress (ownerReference, blockOwnerDeletion): Tyk Operator's names,
 *   so what it generated is adopted.
 * - Its spec: the template's (annotation `tyk.io/template`, an ApiDefinition of the namespace
 *   labelled `template: "true"`; else a keyless default) less `api_id`, with name, listen path,
 *   target URL (`http://<service>.<namespace>.svc:<port number>`), domain (a `*` wildcard as
 *   Tyk's `{?:[^.]+}`), the listen ports of TYK_HTTP_INGRESS_PORT / TYK_HTTPS_INGRESS_PORT, and,
 *   for a host in `spec.tls[].hosts`, https with the TLS Secret (not for ACME HTTP-01 paths,
 *   which keep their listen path and host header instead).
 * - Deterministic refusals, each named: a path without a service backend or with a named port
 *   (held: its ApiDefinition is neither created, changed nor deleted), a second path mapping to
 *   a name already used (the first wins), an Ingress whose name is too long for the label or the
 *   generated names (nothing is generated or deleted).
 * - diff: desired vs what the cluster has → create, update (one PUT when spec, our labels or our
 *   ownerReference differ, or differ from what we last wrote and saw), delete (only objects
 *   labelled for and owned by this Ingress, never on an incomplete plan); a name held by an
 *   object not labelled for this Ingress is never written (`taken`).
 */
import { createHash } from 'node:crypto';
import type { ChildMemory, ChildStep } from '../../engine/composite.js';
import type { KubeObject } from '../../kube/types.js';
import { isObject, nonBlank, nonEmpty } from '../../platform/guards.js';
import { API_DEFINITION } from '../api-definition/kind.js';
import { type Diff, diffGenerated, type Generator, labelledFor as labelledBy, ownedBy as ownedByGenerator, ownerRefs, teardownGenerated } from '../shared/generated.js';
import { INGRESS } from './kind.js';

export const INGRESS_LABEL = 'tyk.io/ingress';
export const API_HASH_LABEL = 'tyk.io/apidefinition';
export const CLASS_ANNOTATION = 'kubernetes.io/ingress.class';
export const TEMPLATE_ANNOTATION = 'tyk.io/template';
/** What Tyk Operator labels a template with: `template: "true"`. */
export const TEMPLATE_LABEL = 'template';

export interface IngressSettings {
  /** INGRESS_CLASS */
  readonly className: string;
  /** TYK_HTTP_INGRESS_PORT: listen_port of every generated API; 0 keeps the template's */
  readonly httpPort: number;
  /** TYK_HTTPS_INGRESS_PORT: listen_port of those served over TLS */
  readonly httpsPort: number;
}

/** Tyk Operator's defaults. */
export const DEFAULT_INGRESS_SETTINGS: IngressSettings = { className: 'tyk', httpPort: 0, httpsPort: 8443 };

type Json = Record<string, unknown>;

export function isOurClass(ingress: KubeObject, className: string): boolean {
  const annotated = ingress.metadata.annotations?.[CLASS_ANNOTATION];
  if (annotated !== undefined) return annotated === className;
  return ingress.spec?.ingressClassName === className;
}

export function templateNameOf(ingress: KubeObject): string | undefined {
  return nonBlank(ingress.metadata.annotations?.[TEMPLATE_ANNOTATION])?.trim();
}

export function isTemplate(api: KubeObject): boolean {
  return api.metadata.labels?.[TEMPLATE_LABEL] === 'true';
}

/** The first 9 hex digits of sha256(text), Tyk Operator's short hash. */
export function shortHash(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex').slice(0, 9);
}

export function generatedName(namespace: string, ingress: string, hash: string): string {
  return `${namespace}-${ingress}-${hash}`;
}

/** A wildcard host as a Tyk domain: the first `*` becomes `{?:[^.]+}` (one DNS label). */
export function translateHost(host: string): string {
  return host.replace('*', '{?:[^.]+}');
}

/** cert-manager's HTTP-01 solver path: served as it comes, never over the TLS it is there to obtain. */
export function isAcmeChallenge(path: string, service: string): boolean {
  return path.includes('.well-known/acme-challenge') || service.includes('cm-acme-http-solver');
}

/** Tyk Operator's template when an Ingress names none; its versions as Tyk needs them (design.md). */
export function keylessTemplate(): Json {
  return {
    name: 'default-keyless',
    protocol: 'http',
    use_keyless: true,
    active: true,
    proxy: { target_url: 'http://example.com' },
    version_data: { not_versioned: true, default_version: 'Default', versions: { Default: { name: 'Default' } } },
  };
}

/** The spec to copy, or why there is none yet. `template`: undefined when none is named, null when it does not exist. */
export function templateSpec(ingress: KubeObject, template: KubeObject | null | undefined): { ok: true; spec: Json } | { ok: false; waiting: string } {
  const name = templateNameOf(ingress);
  if (name === undefined) return { ok: true, spec: keylessTemplate() };
  const where = `${ingress.metadata.namespace ?? ''}/${name}`;
  if (!template) return { ok: false, waiting: `template ApiDefinition ${where} does not exist` };
  if (!isTemplate(template)) return { ok: false, waiting: `ApiDefinition ${where} is not labelled template: "true"` };
  return { ok: true, spec: structuredClone(template.spec ?? {}) };
}

export interface DesiredApi {
  readonly name: string;
  readonly hash: string;
  /** the ApiDefinition to have: name, namespace, our labels and ownerReference, spec */
  readonly object: KubeObject;
}

export interface IngressPlan {
  readonly apis: readonly DesiredApi[];
  /** names of paths that could not be built: their ApiDefinitions stay as they are */
  readonly held: readonly string[];
  /** what is wrong, one line each */
  readonly problems: readonly string[];
  /** false when no name could be made (nothing may then be deleted) */
  readonly complete: boolean;
}

const MAX_NAME = 253;
const MAX_LABEL_VALUE = 63;

/** The ownerReference that makes the Ingress the generated ApiDefinition's controller. */
export function ownerReferenceOf(ingress: KubeObject): Json {
  return { apiVersion: `${INGRESS.group}/${INGRESS.version}`, kind: INGRESS.kind, name: ingress.metadata.name, uid: ingress.metadata.uid ?? '', controller: true, blockOwnerDeletion: true };
}

function items(v: unknown): Json[] {
  return Array.isArray(v) ? v.filter(isObject) : [];
}

/** The ApiDefinitions the Ingress's rules make from `template` (a spec), with what could not be made. */
export function desiredApis(ingress: KubeObject, template: Json, settings: IngressSettings): IngressPlan {
  const namespace = ingress.metadata.namespace ?? '';
  const ingressName = ingress.metadata.name;
  const whole = `Ingress ${namespace}/${ingressName}`;
  if (ingressName.length > MAX_LABEL_VALUE) {
    return { apis: [], held: [], problems: [`${whole}: its name is longer than ${MAX_LABEL_VALUE} characters, too long for the label ${INGRESS_LABEL}`], complete: false };
  }
  if (generatedName(namespace, ingressName, '123456789').length > MAX_NAME) {
    return { apis: [], held: [], problems: [`${whole}: the ApiDefinition names it needs (<namespace>-<name>-<hash>) are longer than ${MAX_NAME} characters`], complete: false };
  }
  const tls = items(ingress.spec?.tls);
  const apis: DesiredApi[] = [];
  const held: string[] = [];
  const problems: string[] = [];
  const used = new Map<string, string>();
  items(ingress.spec?.rules).forEach((rule, r) => {
    const host = nonEmpty(rule.host) ?? '';
    const http = isObject(rule.http) ? rule.http : {};
    items(http.paths).forEach((p, i) => {
      const path = typeof p.path === 'string' ? p.path : '';
      const where = `rules[${r}].http.paths[${i}] (${host || '*'}${path})`;
      const hash = shortHash(host + path);
      const name = generatedName(namespace, ingressName, hash);
      const first = used.get(name);
      if (first !== undefined) {
        problems.push(`${where}: maps to ApiDefinition ${name}, as ${first} does; the first is kept`);
        return;
      }
      used.set(name, where);
      const backend = isObject(p.backend) ? p.backend : {};
      const service = isObject(backend.service) ? backend.service : undefined;
      const serviceName = nonEmpty(service?.name);
      const port = isObject(service?.port) ? service.port : {};
      const number = typeof port.number === 'number' && Number.isInteger(port.number) && port.number > 0 ? port.number : undefined;
      if (serviceName === undefined) {
        held.push(name);
        problems.push(`${where}: has no service backend; only service backends are supported`);
        return;
      }
      if (number === undefined) {
        held.push(name);
        problems.push(`${where}: service ${serviceName} names its port (${String(port.name ?? '')}); give port.number instead`);
        return;
      }
      const spec = structuredClone(template);
      delete spec.api_id; // each generated API has its own id
      spec.name = name;
      const proxy: Json = isObject(spec.proxy) ? spec.proxy : {};
      spec.proxy = proxy;
      // "" is no listen path (and a typed field an API server may refuse as null): the root
      proxy.listen_path = path === '' ? '/' : path;
      proxy.target_url = `http://${serviceName}.${namespace}.svc:${number}`;
      if (host !== '') spec.domain = translateHost(host);
      if (settings.httpPort !== 0) spec.listen_port = settings.httpPort;
      if (isAcmeChallenge(path, serviceName)) {
        proxy.strip_listen_path = false;
        proxy.preserve_host_header = true;
      } else {
        // as Tyk Operator: every TLS entry naming the host applies, the last one wins
        for (const entry of tls) {
          if (!(Array.isArray(entry.hosts) && entry.hosts.includes(host))) continue;
          spec.protocol = 'https';
          const secretName = nonEmpty(entry.secretName);
          if (secretName !== undefined) spec.certificate_secret_names = [secretName];
          spec.listen_port = settings.httpsPort;
        }
      }
      const object: KubeObject = {
        apiVersion: `${API_DEFINITION.group}/${API_DEFINITION.version}`,
        kind: API_DEFINITION.kind,
        metadata: { name, namespace, labels: { [INGRESS_LABEL]: ingressName, [API_HASH_LABEL]: hash }, ownerReferences: [ownerReferenceOf(ingress)] },
        spec,
      };
      apis.push({ name, hash, object });
    });
  });
  return { apis, held, problems, complete: true };
}

/** What we last wrote of a generated ApiDefinition and what the API server answered (the engine's ChildMemory), one write to one (ChildStep), and a plan's diff. */
export type { ChildMemory, Diff };
export type Step = ChildStep;

function isIngressOwner(ref: Json, ingressName: string): boolean {
  const group = typeof ref.apiVersion === 'string' ? ref.apiVersion.split('/')[0] : '';
  return ref.kind === INGRESS.kind && ref.name === ingressName && (group === INGRESS.group || group === 'extensions');
}

/** The Ingress as a generator of ApiDefinitions (shared/generated.ts). */
export const INGRESS_GENERATOR: Generator = {
  label: INGRESS_LABEL,
  isOwnerRef: isIngressOwner,
  view: (obj, ingressName) => managedView(obj, ingressName),
};

/** Labelled for this Ingress: ours to write. */
export function labelledFor(obj: KubeObject, ingressName: string): boolean {
  return labelledBy(INGRESS_GENERATOR, obj, ingressName);
}

/** Labelled for and controlled by (an ownerReference to) this Ingress: ours to delete. */
export function ownedBy(obj: KubeObject, ingressName: string): boolean {
  return ownedByGenerator(INGRESS_GENERATOR, obj, ingressName);
}

/** What we manage of a generated ApiDefinition: its spec, our two labels, our ownerReference. */
export function managedView(obj: KubeObject, ingressName: string): Json {
  const labels = obj.metadata.labels ?? {};
  const owner = ownerRefs(obj).find((r) => isIngressOwner(r, ingressName));
  return { spec: obj.spec ?? {}, ingress: labels[INGRESS_LABEL], hash: labels[API_HASH_LABEL], owner: owner ?? null };
}

/**
 * desired (plan) vs `current`: every ApiDefinition labelled for the Ingress, and what is at each
 * desired name (null: free). `memory`: what the record remembers of our last writes.
 */
export function diffApis(ingress: KubeObject, plan: IngressPlan, current: ReadonlyMap<string, KubeObject | null>, memory: Readonly<Record<string, ChildMemory>>): Diff {
  return diffGenerated(INGRESS_GENERATOR, ingress.metadata.name, plan.apis, current, memory, { complete: plan.complete, keep: plan.held });
}

/** Everything this Ingress owns that is not already being deleted: what deleting (or releasing) it removes. */
export function teardown(ingressName: string, current: ReadonlyMap<string, KubeObject | null>): Step[] {
  return teardownGenerated(INGRESS_GENERATOR, ingressName, current);
}
