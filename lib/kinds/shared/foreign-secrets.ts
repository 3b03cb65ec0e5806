/**
 * Secrets of another namespace in an API's certificate fields: refused, with one exception.
 * An ApiDefinition an HTTPRoute made may name `<namespace>/<name>` in `certificate_secret_names`
 * when that Secret is the certificate of an HTTPS listener the route is attached to now: the
 * authority is the Gateway's (its listener serves every route attached to it with its
 * certificate, whatever their namespace, as Gateway API means), and the key goes to the
 * gateway's certificate store, never into the route's namespace.
 *
 * `refuseForeignSecrets` runs before any Secret is read: an object naming a foreign Secret
 * anywhere else, or not made by a route (its label and controller ownerReference naming the
 * route, whose uid matches), or naming one its route's listeners do not hold, is refused
 * (RefNotPermitted, naming the field and the Secret). The route is read once per pass; the
 * Gateway API side (lib/kinds/gateway-api/listener-secrets.ts) is loaded only when an object
 * names such a Secret, so a run without one costs nothing more. A read that fails leaves the
 * object unreadable (nothing is written or deleted on its account).
 */
import type { PassObject, PassReads } from '../../engine/kind.js';
import type { RunContext } from '../../engine/run-context.js';
import type { KubeObject } from '../../kube/types.js';
import { HTTP_ROUTE, ROUTE_LABEL } from '../gateway-api/kinds.js';
import { FOREIGN_SECRET_FIELD, foreignSecretsOf } from './certificate-refs.js';

type SpecOf = (obj: KubeObject) => Record<string, unknown> | undefined;

/** The route an object's label names, when it names one. */
function routeNameOf(obj: KubeObject): string | undefined {
  const name = obj.metadata.labels?.[ROUTE_LABEL];
  return typeof name === 'string' && name !== '' ? name : undefined;
}

export async function refuseForeignSecrets(ctx: RunContext, reads: PassReads, objects: readonly PassObject[], specOf: SpecOf): Promise<void> {
  const asking: { o: PassObject; keys: string[] }[] = [];
  for (const o of objects) {
    if (!reads.building(o)) continue;
    const foreign = foreignSecretsOf(specOf(o.obj), o.ref.namespace);
    if (foreign.length === 0) continue;
    const elsewhere = foreign.find((f) => f.field !== FOREIGN_SECRET_FIELD);
    if (elsewhere !== undefined) {
      reads.refuse(o, `${elsewhere.field}: Secret ${elsewhere.key} is in another namespace; a certificate Secret must be in the resource's own`);
      continue;
    }
    if (routeNameOf(o.obj) === undefined) {
      reads.refuse(o, `${FOREIGN_SECRET_FIELD}: Secret ${foreign[0]?.key} is in another namespace; only the ApiDefinitions an HTTPRoute makes may name one (its listener's certificate)`);
      continue;
    }
    asking.push({ o, keys: foreign.map((f) => f.key) });
  }
  if (asking.length === 0) return;
  const routes = await reads.get(HTTP_ROUTE, (o) => {
    const name = routeNameOf(o.obj);
    return name === undefined ? [] : [{ namespace: o.ref.namespace, name }];
  });
  const { listenerSecretsOf } = await import('../gateway-api/listener-secrets.js');
  for (const { o, keys } of asking) {
    if (!reads.building(o)) continue;
    // read for every object asking (one that failed left it unreadable, above): absent is refused, never let through
    const route = routes.get(`${o.ref.namespace}/${routeNameOf(o.obj)}`) ?? null;
    const held = await listenerSecretsOf(ctx, o.obj, route);
    if ('error' in held) {
      o.readError ??= held.error;
      continue;
    }
    if ('refused' in held) {
      reads.refuse(o, `${FOREIGN_SECRET_FIELD}: ${held.refused}`);
      continue;
    }
    const missing = keys.find((k) => !held.secrets.has(k));
    if (missing !== undefined)
      reads.refuse(
        o,
        `${FOREIGN_SECRET_FIELD}: Secret ${missing} is in another namespace and is not the certificate of an HTTPS listener HTTPRoute ${o.ref.namespace}/${routeNameOf(o.obj)} is attached to`,
      );
  }
}
