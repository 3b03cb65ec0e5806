/**
 * What routes are decided in, read once per run and shared by the HTTPRoute and Gateway
 * phases: our GatewayClasses, every Gateway (each evaluated: listeners.ts), the Secrets their
 * HTTPS listeners name, the ReferenceGrants those cross into, and Namespace labels when a
 * listener selects route namespaces by label.
 *
 * - GatewayClasses: one cluster-wide LIST (they are cluster-scoped). Ours: `spec.controllerName`
 *   equals GATEWAY_CONTROLLER_NAME. Gateways: one LIST per watched namespace (or cluster-wide),
 *   none without a class of ours; ours when their `gatewayClassName` is a class of ours.
 * - A Gateway API CRD the API server does not serve (404) is an empty list: no route is ours;
 *   GatewayClasses our RBAC may not list (403) likewise, said in the log.
 *   Any other failed read is `error`: nothing is decided on routes (the caller fails them as
 *   unreadable), so nothing generated is deleted because a read failed.
 * - Parameters: a Gateway of ours stands for the OperatorContext its
 *   `spec.infrastructure.parametersRef` names (in its namespace), else its class's
 *   `spec.parametersRef` (with a namespace), else the default gateway; the OperatorContext is
 *   read once to check it exists. Anything else (another kind, a missing context) makes the class
 *   or the Gateway not accepted (`InvalidParameters`) and the Gateway takes no route.
 * - Secrets: one GET per Secret an HTTPS listener of ours names; a failed GET is `error` too.
 *   Cross-namespace certificate references follow Gateway API's ReferenceGrant rules (a grant of
 *   kind Secret without a name opens every Secret of its namespace), under CROSS_NAMESPACE_REFS.
 */
import type { RunContext } from '../../engine/run-context.js';
import { NAMESPACE, OPERATOR_CONTEXT, SECRET } from '../../kube/kinds.js';
import type { KubeObject, ResourceKind } from '../../kube/types.js';
import { describeError } from '../../platform/errors.js';
import { isObject } from '../../platform/guards.js';
import type { ParentGateway } from './attach.js';
import { GATEWAY, GATEWAY_CLASS } from './kinds.js';
import { certificateRefsOf, evaluateGateway, type GatewayEval, type GatewayReads, type SecretRef } from './listeners.js';
import { condition, DEFAULT_GATEWAY_API_SETTINGS, GATEWAY_API_GROUP, type GatewayApiSettings, type Named } from './model.js';

export interface GatewayWorld {
  /** our GatewayClasses by name */
  readonly classes: ReadonlyMap<string, KubeObject>;
  /** every Gateway read, by "namespace/name", evaluated; `ours` when its class is ours */
  readonly gateways: ReadonlyMap<string, ParentGateway>;
  /** a namespace's labels (read only when a listener of ours selects namespaces by label) */
  namespaceLabels(namespace: string): Readonly<Record<string, string>> | undefined;
  /** our classes whose `parametersRef` is not valid, by name: why */
  readonly invalidClasses: ReadonlyMap<string, string>;
}

/** What a parametersRef resolves to: an OperatorContext, or why it is not valid. */
type Params = { readonly context: Named } | { readonly invalid: string };

export type WorldRead = { readonly world: GatewayWorld } | { readonly error: unknown };

const WORLD = Symbol('gateway-api world');

/** The run's settings for Gateway API (RunSettings.kindSettings.gatewayApi). */
export function gatewayApiSettings(ctx: RunContext): GatewayApiSettings {
  return (ctx.settings.kindSettings?.gatewayApi as GatewayApiSettings | undefined) ?? DEFAULT_GATEWAY_API_SETTINGS;
}

/** The world of this run, read on first use. */
export function worldOf(ctx: RunContext): Promise<WorldRead> {
  return ctx.shared(WORLD, () => readWorld(ctx, gatewayApiSettings(ctx)));
}

function notServed(err: unknown): boolean {
  return (err as { status?: unknown } | undefined)?.status === 404;
}

function forbidden(err: unknown): boolean {
  return (err as { status?: unknown } | undefined)?.status === 403;
}

/** Every object of `kind` in the watched namespaces (cluster-scoped: once); [] when the kind is not served. */
async function listAll(ctx: RunContext, kind: ResourceKind, clusterScoped = false): Promise<KubeObject[]> {
  const namespaces = clusterScoped || !ctx.settings.namespaces ? [undefined] : [...ctx.settings.namespaces];
  const out: KubeObject[] = [];
  try {
    for (const ns of namespaces) out.push(...(await ctx.deps.kube.list(kind, ns)));
  } catch (err) {
    if (notServed(err)) return [];
    throw err;
  }
  return out;
}

async function readWorld(ctx: RunContext, settings: GatewayApiSettings): Promise<WorldRead> {
  try {
    const classes = new Map<string, KubeObject>();
    let listed: KubeObject[];
    try {
      listed = await listAll(ctx, GATEWAY_CLASS, true);
    } catch (err) {
      // an install whose RBAC leaves GatewayClasses out (an older namespaced one) does not serve Gateway API
      if (!forbidden(err)) throw err;
      ctx.log.info({ err: describeError(err) }, 'GatewayClasses may not be listed: Gateway API is not served');
      listed = [];
    }
    for (const c of listed) {
      if (isObject(c.spec) && c.spec.controllerName === settings.controllerName) classes.set(c.metadata.name, c);
    }
    // no class of ours: no Gateway can be ours, none is read
    const all = classes.size === 0 ? [] : await listAll(ctx, GATEWAY);
    const ours = all.filter((g) => isObject(g.spec) && typeof g.spec.gatewayClassName === 'string' && classes.has(g.spec.gatewayClassName));
    // grants first: a Secret in another namespace is read only once a grant opens it
    const permitted = new Map<string, boolean>();
    for (const g of ours) {
      const namespace = g.metadata.namespace ?? '';
      for (const ref of certificateRefsOf(g)) {
        if (ref.namespace === namespace || permitted.has(refKey(namespace, ref))) continue;
        const from = { group: GATEWAY_API_GROUP, kind: GATEWAY.kind, namespace };
        const check = await ctx.resolver.grants.check(ref.field, from, { group: ref.group, kind: ref.kind, namespace: ref.namespace, name: ref.name }, { anyName: true });
        if ('error' in check) throw new Error(check.error);
        permitted.set(refKey(namespace, ref), check.ok);
      }
    }
    const mayRead = (namespace: string, ref: SecretRef) => ref.namespace === namespace || permitted.get(refKey(namespace, ref)) === true;
    const secrets = await readSecrets(
      ctx,
      ours.flatMap((g) => certificateRefsOf(g).filter((ref) => mayRead(g.metadata.namespace ?? '', ref))),
    );
    const contexts = new Map<string, Promise<boolean>>();
    const exists = (c: Named) => {
      const key = `${c.namespace}/${c.name}`;
      let pending = contexts.get(key);
      if (!pending) {
        pending = ctx.deps.kube.get(OPERATOR_CONTEXT, c.namespace, c.name).then((o) => o !== null);
        contexts.set(key, pending);
      }
      return pending;
    };
    const invalidClasses = new Map<string, string>();
    const classParams = new Map<string, Params>();
    for (const c of classes.values()) {
      const p = await checked(paramsOf(c.spec?.parametersRef, undefined, 'spec.parametersRef'), exists, 'spec.parametersRef');
      if (p === undefined) continue;
      classParams.set(c.metadata.name, p);
      if ('invalid' in p) invalidClasses.set(c.metadata.name, p.invalid);
    }
    const gateways = new Map<string, ParentGateway>();
    for (const g of all) {
      const namespace = g.metadata.namespace ?? '';
      const reads: GatewayReads = { secrets, permitted: (ref) => mayRead(namespace, ref) };
      const isOurs = ours.includes(g);
      const ev = evaluateGateway(g, reads, settings);
      const infrastructure = isObject(g.spec?.infrastructure) ? g.spec.infrastructure : {};
      const own = isOurs ? await checked(paramsOf(infrastructure.parametersRef, namespace, 'spec.infrastructure.parametersRef'), exists, 'spec.infrastructure.parametersRef') : undefined;
      const inherited = classParams.get(String(g.spec?.gatewayClassName));
      const params = own ?? (inherited && 'invalid' in inherited ? { invalid: `its GatewayClass's ${inherited.invalid}` } : inherited);
      const parent: ParentGateway =
        params === undefined
          ? { gateway: g, eval: ev, ours: isOurs }
          : 'invalid' in params
            ? { gateway: g, eval: withInvalidParameters(ev, params.invalid), ours: isOurs, notAccepted: params.invalid }
            : { gateway: g, eval: ev, ours: isOurs, context: params.context };
      gateways.set(`${namespace}/${g.metadata.name}`, parent);
    }
    const selects = [...gateways.values()].some((p) => p.ours && p.eval.listeners.some((l) => l.allowedRoutes.from === 'Selector'));
    const labels = new Map<string, Readonly<Record<string, string>>>();
    if (selects) for (const ns of await listAll(ctx, NAMESPACE, true)) labels.set(ns.metadata.name, ns.metadata.labels ?? {});
    return { world: { classes, gateways, namespaceLabels: (ns) => labels.get(ns), invalidClasses } };
  } catch (error) {
    ctx.runError('read gateway api objects', error);
    return { error };
  }
}

/** A reference from a Gateway's namespace, as permissions are kept. */
/**
 * A parametersRef: an OperatorContext of tyk.tyk.io (in `namespace` for a Gateway's, which is
 * local; named by the ref for a class's), or why not; undefined when there is none.
 */
function paramsOf(ref: unknown, namespace: string | undefined, field: string): Params | undefined {
  if (!isObject(ref)) return undefined;
  if (ref.group !== OPERATOR_CONTEXT.group || ref.kind !== OPERATOR_CONTEXT.kind || typeof ref.name !== 'string' || ref.name === '') {
    return { invalid: `${field}: ${String(ref.group ?? '')}/${String(ref.kind ?? '')} is not supported (only an OperatorContext of tyk.tyk.io, naming the gateway it stands for)` };
  }
  const ns = namespace ?? (typeof ref.namespace === 'string' && ref.namespace !== '' ? ref.namespace : undefined);
  if (ns === undefined) return { invalid: `${field}: an OperatorContext is namespaced: give its namespace` };
  return { context: { namespace: ns, name: ref.name } };
}

/** `p` with the OperatorContext it names checked to exist. */
async function checked(p: Params | undefined, exists: (c: Named) => Promise<boolean>, field: string): Promise<Params | undefined> {
  if (p === undefined || 'invalid' in p) return p;
  return (await exists(p.context)) ? p : { invalid: `${field}: OperatorContext ${p.context.namespace}/${p.context.name} does not exist` };
}

/** A Gateway whose parameters are not valid: not accepted, not programmed, and none of its listeners takes a route. */
function withInvalidParameters(ev: GatewayEval, why: string): GatewayEval {
  return {
    conditions: [condition('Accepted', 'False', 'InvalidParameters', why), condition('Programmed', 'False', 'Invalid', `not accepted: ${why}`)],
    listeners: ev.listeners.map((l) => ({ ...l, accepted: false, programmed: false })),
  };
}

function refKey(from: string, ref: SecretRef): string {
  return `${from}>${ref.group}/${ref.kind}/${ref.namespace}/${ref.name}`;
}

/** "namespace/name" → what each Secret named is (only core Secrets are read). */
async function readSecrets(ctx: RunContext, refs: readonly SecretRef[]): Promise<Map<string, 'tls' | 'invalid' | 'missing'>> {
  const out = new Map<string, 'tls' | 'invalid' | 'missing'>();
  for (const ref of refs) {
    const key = `${ref.namespace}/${ref.name}`;
    if (ref.group !== '' || ref.kind !== 'Secret' || out.has(key)) continue;
    const secret = await ctx.deps.kube.get(SECRET, ref.namespace, ref.name);
    out.set(key, secret === null ? 'missing' : isTlsSecret(secret) ? 'tls' : 'invalid');
  }
  return out;
}

function isTlsSecret(secret: KubeObject): boolean {
  const data = isObject(secret.data) ? secret.data : {};
  const filled = (k: string) => typeof data[k] === 'string' && data[k] !== '';
  return filled('tls.crt') && filled('tls.key');
}
