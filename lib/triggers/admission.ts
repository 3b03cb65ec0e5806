/**
 * POST /admission: the API server's validating admission webhook (`admission.k8s.io/v1`
 * AdmissionReview). The reviewed object is checked by the engine itself: one dry run over what
 * an event about it would run (the object, or for a Secret, ConfigMap or Service the resources
 * whose last sync used it), reading the cluster through an overlay where the object is as it
 * would be stored (lib/kube/overlay.ts), so the verdict is the engine's by construction. Nothing
 * is written: not the cluster, not a gateway, not the store's records.
 *
 * - Denied: what a run would make Failed because of its author's input, with the condition's
 *   reason and the engine's message (`Invalid`, `RefNotPermitted`, `UrlNotPermitted`,
 *   `IdClaimed`, `AdoptionNotPermitted`, `ListenPathClash`, a route asking what Tyk cannot do).
 * - Admitted with a warning: what may resolve later (a Secret, ConfigMap, API or policy that
 *   does not exist yet: `Waiting`), and a check that could not be made (a gateway or the store
 *   unreachable): the review never blocks on our side's trouble.
 * - Admitted without a look: deletions, objects being deleted, our own writes (the engine made
 *   them), kinds nothing of ours is built from, and objects any route may depend on (a Gateway,
 *   a GatewayClass: checking them is a full run, which a review cannot wait for).
 *
 * The answer is always 200 with an AdmissionReview carrying the request's `uid`; a body that is
 * not an AdmissionReview is a 400 naming what is wrong.
 */
import type { ObjectReport, RunReport, RunRequest, RunScope } from '../engine/types.js';
import { collect, isEmptyScope } from '../events/refs.js';
import { fromAnyShape } from '../events/shapes.js';
import { REGISTRY } from '../kinds/registry.js';
import type { KubeObject, ResourceKind } from '../kube/types.js';
import { BadRequestError, describeError, errorCode } from '../platform/errors.js';
import { isObject, nonEmpty } from '../platform/guards.js';
import type { Service } from '../service.js';
import type { HttpRoute } from './io.js';

export interface Review {
  readonly uid: string;
  readonly operation: 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';
  readonly resource: ResourceKind;
  /** the object as it would be stored (absent for DELETE and CONNECT) */
  readonly object?: KubeObject;
  readonly username?: string;
}

export interface Verdict {
  readonly allowed: boolean;
  /** a denial: its HTTP code, the reason, and the message kubectl shows */
  readonly status?: { readonly code: number; readonly reason: string; readonly message: string };
  readonly warnings?: readonly string[];
}

const OPERATIONS = new Set(['CREATE', 'UPDATE', 'DELETE', 'CONNECT']);

/** The review an AdmissionReview body asks for; BadRequestError naming what is missing. */
export function parseReview(text: string): Review {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new BadRequestError('body is not JSON: expected an admission.k8s.io/v1 AdmissionReview');
  }
  if (!isObject(body) || body.kind !== 'AdmissionReview' || !isObject(body.request)) throw new BadRequestError('expected an AdmissionReview with a request');
  if (body.apiVersion !== 'admission.k8s.io/v1') throw new BadRequestError(`apiVersion ${JSON.stringify(body.apiVersion)} is not served: admission.k8s.io/v1 only`);
  const r = body.request;
  const uid = nonEmpty(r.uid);
  if (uid === undefined) throw new BadRequestError('request.uid is required');
  const operation = typeof r.operation === 'string' && OPERATIONS.has(r.operation) ? (r.operation as Review['operation']) : undefined;
  if (operation === undefined) throw new BadRequestError('request.operation must be CREATE, UPDATE, DELETE or CONNECT');
  const res = isObject(r.resource) ? r.resource : {};
  const kind = isObject(r.kind) ? r.kind : {};
  const plural = nonEmpty(res.resource);
  const kindName = nonEmpty(kind.kind);
  if (plural === undefined || kindName === undefined) throw new BadRequestError('request.resource.resource and request.kind.kind are required');
  const resource: ResourceKind = { group: typeof res.group === 'string' ? res.group : '', version: typeof res.version === 'string' ? res.version : '', plural, kind: kindName };
  const object = isObject(r.object) && isObject(r.object.metadata) ? (r.object as unknown as KubeObject) : undefined;
  if ((operation === 'CREATE' || operation === 'UPDATE') && object === undefined) throw new BadRequestError(`request.object is required for ${operation}`);
  const username = isObject(r.userInfo) ? nonEmpty(r.userInfo.username) : undefined;
  // the namespace is the request's when the object does not say it (a create by generateName, say)
  const namespace = nonEmpty(r.namespace);
  const placed = object && namespace !== undefined && object.metadata.namespace === undefined ? { ...object, metadata: { ...object.metadata, namespace } } : object;
  return { uid, operation, resource, ...(placed ? { object: placed } : {}), ...(username ? { username } : {}) };
}

/** The condition reasons a report's refusal codes stand for. */
const REFUSALS: Readonly<Record<string, string>> = {
  REF_NOT_PERMITTED: 'RefNotPermitted',
  URL_NOT_PERMITTED: 'UrlNotPermitted',
  ID_CLAIMED: 'IdClaimed',
  ADOPTION_NOT_PERMITTED: 'AdoptionNotPermitted',
  LISTEN_PATH_CLASH: 'ListenPathClash',
};

/** Why a report denies its object (the condition reason and the HTTP code), or undefined when it does not. */
function denial(o: ObjectReport): { reason: string; code: number } | undefined {
  if (o.result === 'invalid') return { reason: o.code === 'ROUTE_UNSUPPORTED' ? 'UnsupportedValue' : 'Invalid', code: 422 };
  const refusal = o.result === 'failed' && o.code !== undefined ? REFUSALS[o.code] : undefined;
  return refusal === undefined ? undefined : { reason: refusal, code: 403 };
}

/**
 * The verdict of a dry run's reports on the objects a review looked at (`self`: the reviewed
 * object's own report is named bare, the others as the resources its change would leave so).
 * A resource of another namespace than the reviewed object's is named by its kind only, without
 * its message: a review tells the requester nothing of what it could not read. Pure.
 */
export function verdictOf(reports: readonly ObjectReport[], self: { readonly kind: string; readonly namespace: string; readonly name: string } | undefined, namespace: string): Verdict {
  const isSelf = (o: ObjectReport) => self !== undefined && o.kind === self.kind && o.namespace === self.namespace && o.name === self.name;
  // a resource of another namespace (one a grant lets use the reviewed object) is named by its kind alone, without its message
  const named = (o: ObjectReport) => (o.namespace === namespace ? `${o.kind} ${o.namespace}/${o.name}` : `a ${o.kind} of another namespace`);
  const denials: string[] = [];
  const warnings: string[] = [];
  let first: { reason: string; code: number } | undefined;
  for (const o of reports) {
    const d = denial(o);
    const message = o.namespace === namespace ? (o.error ?? o.reason) : o.reason;
    if (d !== undefined) {
      first ??= d;
      denials.push(isSelf(o) ? `${d.reason}: ${message}` : `${named(o)} would be ${d.reason}: ${message}`);
    } else if (o.result === 'waiting') warnings.push(isSelf(o) ? `Waiting: ${message}` : `${named(o)} would wait: ${message}`);
    else if (o.result === 'failed') warnings.push(`${isSelf(o) ? 'not checked' : `${named(o)} not checked`}: ${message}`);
  }
  if (first !== undefined) return { allowed: false, status: { code: first.code, reason: first.reason, message: denials.join('; ') }, ...(warnings.length > 0 ? { warnings } : {}) };
  return { allowed: true, ...(warnings.length > 0 ? { warnings } : {}) };
}

/** The AdmissionReview answering `uid` with `verdict`. */
export function reviewResponse(uid: string, verdict: Verdict): Record<string, unknown> {
  const response: Record<string, unknown> = { uid, allowed: verdict.allowed };
  if (verdict.status) response.status = { code: verdict.status.code, reason: verdict.status.reason, message: verdict.status.message };
  // the API server shows each warning to the client (kubectl prints "Warning: …"); each at most 120 characters there
  if (verdict.warnings && verdict.warnings.length > 0) response.warnings = verdict.warnings.map((w) => (w.length > 120 ? `${w.slice(0, 117)}...` : w));
  return { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response };
}

/**
 * The dry run a review needs: what an event about the object would run; but where that names
 * an object of a kind that serves routes (domain and listen path), every object of its kind and
 * those before it, as a full run has them (the contest over a listen path is the kind's whole
 * phase: the older object keeps it), stopping after its phase: one gateway list per phase.
 */
function previewOf(scope: RunScope): Omit<RunRequest, 'dryRun'> {
  const routed = (scope.refs ?? []).map((r) => r.kind).filter((k) => k.route !== undefined);
  if (routed.length === 0) return { trigger: 'admission', scope, decisionsOnly: true };
  const names = new Set(routed.map((k) => k.plural));
  const last = [...REGISTRY.phases].reverse().find((p) => names.has(p.name));
  return { trigger: 'admission', scope: { all: true }, decisionsOnly: true, ...(last ? { until: last.name } : {}) };
}

/** "Kind/namespace/name" of each object a scope names. */
function namedIn(scope: RunScope): Set<string> {
  return new Set([...(scope.refs ?? []), ...(scope.cluster ?? [])].map((r) => `${r.kind.kind}/${r.namespace}/${r.name}`));
}

/** The verdict on one review: the dry run of what an event about the object would run (previewOf), through the overlay. */
export async function review(svc: Service, r: Review): Promise<Verdict> {
  const obj = r.object;
  if (r.operation === 'DELETE' || r.operation === 'CONNECT' || obj === undefined || obj.metadata.deletionTimestamp) return { allowed: true };
  const own = await svc.ownUsername().catch(() => undefined);
  if (own !== undefined && r.username === own) return { allowed: true };
  const typed = { ...obj, apiVersion: obj.apiVersion ?? (r.resource.group === '' ? r.resource.version : `${r.resource.group}/${r.resource.version}`), kind: obj.kind ?? r.resource.kind };
  const item = fromAnyShape(typed, 'the reviewed object');
  if (item === undefined || 'ignored' in item || 'wide' in item || 'endpoints' in item || 'namespace' in item) return { allowed: true };
  let report: RunReport;
  let concerned: Set<string>;
  try {
    const { scope } = collect(await svc.dependents([item]));
    if (isEmptyScope(scope)) return { allowed: true };
    concerned = namedIn(scope);
    report = await svc.preview(previewOf(scope), [{ kind: r.resource, object: typed }]);
  } catch (err) {
    svc.log.warn({ uid: r.uid, err: describeError(err), code: errorCode(err) }, 'an admission review could not be checked; admitted');
    return { allowed: true, warnings: [`not checked: ${describeError(err)}`] };
  }
  // a preview over a whole kind reports every object: the verdict is on those the review concerns
  const self = 'object' in item ? item.object : undefined;
  return verdictOf(
    report.objects.filter((o) => concerned.has(`${o.kind}/${o.namespace}/${o.name}`)),
    self,
    obj.metadata.namespace ?? '',
  );
}

export const admission: HttpRoute = {
  guard: 'admission',
  handle: async (svc: Service, input) => {
    const r = parseReview(input.body);
    const verdict = await review(svc, r);
    svc.log.info(
      { uid: r.uid, kind: r.resource.kind, namespace: r.object?.metadata.namespace, name: r.object?.metadata.name, operation: r.operation, allowed: verdict.allowed, reason: verdict.status?.reason },
      'admission review',
    );
    return { statusCode: 200, body: reviewResponse(r.uid, verdict) };
  },
};
