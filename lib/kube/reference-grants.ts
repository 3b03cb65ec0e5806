/**
 * Cross-namespace references and Gateway API's ReferenceGrant (gateway.networking.k8s.io,
 * v1beta1, else v1): a reference from an object in one namespace to an object in another
 * resolves only when a ReferenceGrant in the target's namespace lists the referring kind and
 * namespace in `spec.from` and the target's kind (and, when it gives one, name) in `spec.to`.
 * Secrets and ConfigMaps need a `to` entry naming them: a grant of the whole kind is not enough.
 *
 * Contract:
 * - `grantPermits(grants, from, to)` (./grant-rules.ts, loaded by the first reference that crosses
 *   namespaces): pure, exactly Gateway API's matching (group, kind and
 *   namespace of `from` equal; group and kind of `to` equal, its name absent or equal), plus
 *   the name rule above (not for Gateway API's own references: `anyName`).
 * - `ReferenceGrants` (one per process) holds CROSS_NAMESPACE_REFS; `forRun()` gives a
 *   `RunGrants` that lists the grants of a namespace at most once per run, and only when a
 *   reference into it crosses namespaces. A reference within one namespace, or any with
 *   CROSS_NAMESPACE_REFS=allow, is permitted without a read.
 * - No ReferenceGrant CRD (the API server answers 404 for both versions) means no grants: every
 *   cross-namespace reference is refused; said once per process in the log. Any other failed
 *   list is a `{ error }` the caller reports as a failed read (nothing is decided on it).
 * - `refusalMessage` (./grant-rules.ts) names the reference (field, kind, namespace/name) and says no grant permits
 *   it; it never says whether the target exists, and nothing in its namespace but the grants is read.
 */
import { describeError } from '../platform/errors.js';
import type { Logger } from '../platform/log.js';
import type { KubeApi, KubeObject, ResourceKind } from './types.js';

export type CrossNamespaceRefs = 'grant' | 'allow';

export const REFERENCE_GRANT_V1BETA1: ResourceKind = { kind: 'ReferenceGrant', group: 'gateway.networking.k8s.io', version: 'v1beta1', plural: 'referencegrants' };
export const REFERENCE_GRANT_V1: ResourceKind = { ...REFERENCE_GRANT_V1BETA1, version: 'v1' };

/** The object that refers (its kind's group and kind, its namespace). */
export interface RefFrom {
  group: string;
  kind: string;
  namespace: string;
}

/** The object referred to. */
export interface RefTo {
  group: string;
  kind: string;
  namespace: string;
  name: string;
}

/** How a reference is checked. */
export interface GrantOptions {
  /** Gateway API's own references (a Gateway's certificateRefs): a grant of the kind without a name opens every object of it, as that API defines, Secrets too */
  readonly anyName?: boolean;
}

export type RefCheck = { ok: true } | { ok: false; refused: string } | { ok: false; error: string };

export class ReferenceGrants {
  private missingSaid = false;

  constructor(
    private readonly kube: KubeApi,
    readonly mode: CrossNamespaceRefs,
    private readonly log: Logger,
  ) {}

  forRun(): RunGrants {
    return new RunGrants(this);
  }

  /** The grants of one namespace; [] when the CRD is not installed. Throws on any other failure. */
  async list(namespace: string): Promise<KubeObject[]> {
    for (const kind of [REFERENCE_GRANT_V1BETA1, REFERENCE_GRANT_V1]) {
      try {
        return await this.kube.list(kind, namespace);
      } catch (err) {
        if ((err as { status?: unknown } | undefined)?.status !== 404) throw err;
      }
    }
    if (!this.missingSaid) {
      this.missingSaid = true;
      this.log.warn({ crossNamespaceRefs: this.mode }, 'ReferenceGrants are not served by the API server (the Gateway API CRD is not installed): no cross-namespace reference is permitted');
    }
    return [];
  }
}

export class RunGrants {
  private readonly byNamespace = new Map<string, Promise<KubeObject[]>>();

  constructor(private readonly grants: ReferenceGrants) {}

  /** Whether `from` may refer to `to` (through the spec field named in messages). */
  async check(field: string, from: RefFrom, to: RefTo, options: GrantOptions = {}): Promise<RefCheck> {
    if (from.namespace === to.namespace || this.grants.mode === 'allow') return { ok: true };
    let pending = this.byNamespace.get(to.namespace);
    if (!pending) {
      pending = this.grants.list(to.namespace);
      this.byNamespace.set(to.namespace, pending);
    }
    let listed: KubeObject[];
    try {
      listed = await pending;
    } catch (err) {
      return { ok: false, error: `${field}: the ReferenceGrants of ${to.namespace} could not be read: ${describeError(err)}` };
    }
    const { grantPermits, refusalMessage } = await import('./grant-rules.js');
    return grantPermits(listed, from, to, options) ? { ok: true } : { ok: false, refused: refusalMessage(field, from, to, options) };
  }
}
