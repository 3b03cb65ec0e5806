/**
 * The status of our GatewayClasses and Gateways, after the HTTPRoute phase: nothing of them is
 * sent to a gateway; what they say is whether we accept them, what each listener serves, and
 * how many routes are attached to it.
 *
 * - GatewayClass (controllerName ours): Accepted, and SupportedVersion from the
 *   `gateway.networking.k8s.io/bundle-version` annotation of the GatewayClass CRD (Unknown
 *   when the CRD cannot be read: reading it needs `get` on that one CustomResourceDefinition).
 * - Gateway (of a class of ours): Accepted, Programmed, listeners (listeners.ts) with
 *   attachedRoutes counted over every route in the watched namespaces (attach.ts), addresses
 *   from GATEWAY_ADDRESSES.
 * - A status is patched only when it changes; a dry run patches nothing. Each object patched
 *   is reported (UPDATE status changed); one unchanged is not reported. Classes and Gateways of
 *   other controllers are never read further or written.
 * - Runs when the run covers everything or a namespace, or names one of the three kinds; a
 *   world that cannot be read (world.ts) patches nothing.
 */
import type { Phase } from '../../engine/kind.js';
import type { RunContext } from '../../engine/run-context.js';
import type { ObjectReport } from '../../engine/types.js';
import type { KubeObject, ResourceKind } from '../../kube/types.js';
import { describeError, errorCode } from '../../platform/errors.js';
import { isObject } from '../../platform/guards.js';
import { type Attachment, attachedRoutes, attachRoute } from './attach.js';
import { GATEWAY, GATEWAY_CLASS, HTTP_ROUTE } from './kinds.js';
import { classStatus, gatewayStatus, sameStatus } from './status.js';
import { gatewayApiSettings, worldOf } from './world.js';

const CRD: ResourceKind = { kind: 'CustomResourceDefinition', group: 'apiextensions.k8s.io', version: 'v1', plural: 'customresourcedefinitions' };
export const BUNDLE_VERSION_ANNOTATION = 'gateway.networking.k8s.io/bundle-version';

/** Whether the run's scope concerns Gateway API objects. */
function concerned(ctx: RunContext): boolean {
  const scope = ctx.request.scope;
  if (scope.all === true || (scope.namespaces ?? []).length > 0) return true;
  const kinds = new Set([GATEWAY_CLASS.kind, GATEWAY.kind, HTTP_ROUTE.kind]);
  return (scope.cluster ?? []).some((r) => kinds.has(r.kind.kind));
}

export const GATEWAY_STATUS_PHASE: Phase = {
  name: 'gateway api status',
  async run(ctx) {
    if (!concerned(ctx)) return { reports: [] };
    const read = await worldOf(ctx);
    if ('error' in read || read.world.classes.size === 0) return { reports: [] };
    const { world } = read;
    const settings = gatewayApiSettings(ctx);
    const now = new Date(ctx.deps.clock.now()).toISOString();
    const reports: ObjectReport[] = [];
    const version = await bundleVersion(ctx);
    for (const c of world.classes.values()) {
      const next = classStatus(c.status, version, c.metadata.generation ?? 0, now, world.invalidClasses.get(c.metadata.name));
      const r = await patchIfChanged(ctx, GATEWAY_CLASS, c, next);
      if (r) reports.push(r);
    }
    const gateways = [...world.gateways.values()].filter((p) => p.ours);
    if (gateways.length === 0) return { reports };
    const routes = await listRoutes(ctx);
    if (routes === undefined) return { reports };
    const attachments: Attachment[] = routes
      .filter((r) => !r.metadata.deletionTimestamp)
      .flatMap((r) =>
        attachRoute(
          r,
          (namespace, name) => world.gateways.get(`${namespace}/${name}`),
          (namespace) => world.namespaceLabels(namespace),
        ),
      );
    for (const p of gateways) {
      const g = p.gateway;
      const next = gatewayStatus(g.status, p.eval, attachedRoutes(g, attachments), settings, g.metadata.generation ?? 0, now);
      const r = await patchIfChanged(ctx, GATEWAY, g, next);
      if (r) reports.push(r);
    }
    return { reports };
  },
};

/** Every HTTPRoute in the watched namespaces ([] when the kind is not served); undefined when the list failed. */
async function listRoutes(ctx: RunContext): Promise<KubeObject[] | undefined> {
  const namespaces = ctx.settings.namespaces ? [...ctx.settings.namespaces] : [undefined];
  const out: KubeObject[] = [];
  try {
    for (const ns of namespaces) out.push(...(await ctx.deps.kube.list(HTTP_ROUTE, ns)));
    return out;
  } catch (err) {
    if ((err as { status?: unknown } | undefined)?.status === 404) return [];
    ctx.runError('list httproutes', err);
    return undefined;
  }
}

/** The bundle version the GatewayClass CRD was installed from; undefined when it cannot be read. */
async function bundleVersion(ctx: RunContext): Promise<string | undefined> {
  try {
    const crd = await ctx.deps.kube.get(CRD, '', `${GATEWAY_CLASS.plural}.${GATEWAY_CLASS.group}`);
    const v = crd?.metadata.annotations?.[BUNDLE_VERSION_ANNOTATION];
    return typeof v === 'string' ? v : undefined;
  } catch {
    return undefined;
  }
}

/** Patches `obj`'s status to `next` when it differs (not in a dry run); the report of a change, or of a failed patch. */
async function patchIfChanged(ctx: RunContext, kind: ResourceKind, obj: KubeObject, next: Record<string, unknown>): Promise<ObjectReport | undefined> {
  const current = isObject(obj.status) ? obj.status : {};
  if (sameStatus(current, next)) return undefined;
  const base = { kind: kind.kind, namespace: obj.metadata.namespace ?? '', name: obj.metadata.name, id: '', action: 'UPDATE', reason: 'status changed' } as const;
  if (ctx.request.dryRun === true) return { ...base, result: 'planned' };
  try {
    await ctx.deps.kube.patchStatus(kind, obj, next);
    return { ...base, result: 'synced' };
  } catch (err) {
    return { ...base, result: 'failed', error: describeError(err), code: errorCode(err) };
  }
}
