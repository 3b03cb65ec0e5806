/**
 * The certificate Secrets an ApiDefinition an HTTPRoute made may name from another namespace
 * (lib/kinds/shared/foreign-secrets.ts): those of the HTTPS listeners its route is attached to
 * now, as the Gateway evaluated them (listeners.ts: same namespace as the Gateway, or opened by a
 * ReferenceGrant), by "namespace/name". Refused when the ApiDefinition is not the route's (its
 * label and controller ownerReference name the route, and the reference's uid is the route's)
 * or the route does not exist; `error` when the run's Gateway API world could not be read.
 */
import type { RunContext } from '../../engine/run-context.js';
import type { KubeObject } from '../../kube/types.js';
import { ownedBy, ownerRefs } from '../shared/generated.js';
import { attachRoute } from './attach.js';
import { ROUTE_GENERATOR } from './decide.js';
import { ROUTE_LABEL } from './kinds.js';
import { worldOf } from './world.js';

export type ListenerSecrets = { readonly secrets: ReadonlySet<string> } | { readonly refused: string } | { readonly error: unknown };

export async function listenerSecretsOf(ctx: RunContext, api: KubeObject, route: KubeObject | null): Promise<ListenerSecrets> {
  const namespace = api.metadata.namespace ?? '';
  const routeName = api.metadata.labels?.[ROUTE_LABEL] ?? '';
  if (route === null) return { refused: `HTTPRoute ${namespace}/${routeName} does not exist` };
  const owner = ownerRefs(api).find((r) => ROUTE_GENERATOR.isOwnerRef(r, routeName) && r.controller === true);
  const uid = route.metadata.uid;
  if (!ownedBy(ROUTE_GENERATOR, api, routeName) || owner === undefined || typeof uid !== 'string' || uid === '' || owner.uid !== uid) {
    return { refused: `this ApiDefinition is not controlled by HTTPRoute ${namespace}/${routeName}` };
  }
  const read = await worldOf(ctx);
  if ('error' in read) return { error: read.error };
  const { world } = read;
  const secrets = new Set<string>();
  const attachments = attachRoute(
    route,
    (ns, name) => world.gateways.get(`${ns}/${name}`),
    (ns) => world.namespaceLabels(ns),
  );
  for (const a of attachments) {
    if (a.accepted.status !== 'True') continue;
    for (const l of a.listeners) if (l.protocol === 'HTTPS') for (const c of l.certificates) secrets.add(`${c.namespace}/${c.name}`);
  }
  return { secrets };
}
