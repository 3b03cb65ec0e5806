/**
 * What the two API kinds (ApiDefinition, TykOasApiDefinition) share: their certificates from
 * Secrets (certificate-refs.ts), the policies whose access rights hold their deletion (and fill
 * their status), and the status fields that follow from both. Pure, except `policyHolders`,
 * which checks ReferenceGrants through the load stage's reads.
 */
import type { Building, PassObject, PassReads, StatusFacts } from '../../engine/kind.js';
import type { RunContext } from '../../engine/run-context.js';
import { SECRET } from '../../kube/kinds.js';
import type { KubeObject, NamespacedName } from '../../kube/types.js';
import { SECURITY_POLICY } from '../security-policy/kind.js';
import { referencingPolicies } from './api-links.js';
import { apiRefOf } from './api-resolver.js';
import { type CertificateResolution, foreignSecretsOf, resolveCertificates, secretKey, secretNamesOf } from './certificate-refs.js';

/** "namespace/name" of a Secret read for a desired state → the object (null: 404); one that could not be read is absent. */
export type SecretsRead = ReadonlyMap<string, KubeObject | null>;

/**
 * The Secrets `specOf` names for certificates, read once each: in each object's own namespace,
 * or (an HTTPRoute's ApiDefinitions only) its listener's in another, once foreign-secrets.ts
 * let the object name it; an object it refused reads nothing.
 */
export async function readSecrets(ctx: RunContext, reads: PassReads, objects: readonly PassObject[], specOf: (obj: KubeObject) => Record<string, unknown> | undefined): Promise<SecretsRead> {
  // the rules for a Secret of another namespace (foreign-secrets.ts) are loaded only when an object names one
  if (objects.some((o) => reads.building(o) && foreignSecretsOf(specOf(o.obj), o.ref.namespace).length > 0))
    await (await import('./foreign-secrets.js')).refuseForeignSecrets(ctx, reads, objects, specOf);
  return reads.get(SECRET, (o) =>
    secretNamesOf(specOf(o.obj)).map((name) => {
      const key = secretKey(name, o.ref.namespace);
      const at = key.indexOf('/');
      return { namespace: key.slice(0, at), name: key.slice(at + 1) };
    }),
  );
}

/** Certificates of a live API (none while it is being deleted, or when it names none), with what they make wait or invalid. */
export function certificatesOf(o: Building, spec: Record<string, unknown> | undefined, secrets: SecretsRead): CertificateResolution | undefined {
  if (o.obj.metadata.deletionTimestamp || !spec || secretNamesOf(spec).length === 0) return undefined;
  return resolveCertificates(spec, o.ref.namespace, (key) => secrets.get(key) ?? null, o.target.orgId ?? '', o.target.name);
}

/** The run's SecurityPolicies (listed once per run); undefined when they could not be listed. */
export function runPolicies(ctx: RunContext): Promise<KubeObject[] | undefined> {
  return ctx.listOnce(SECURITY_POLICY);
}

/**
 * The live policies holding an API that may: those of its namespace, or of one a ReferenceGrant
 * lets name it; null when the policies could not be listed (a deletion is then held on doubt).
 */
export async function policyHolders(reads: PassReads, o: PassObject, policies: readonly KubeObject[] | undefined): Promise<readonly NamespacedName[] | null> {
  if (policies === undefined) return null;
  const to = { group: o.kind.group, kind: o.kind.kind, namespace: o.ref.namespace, name: o.ref.name };
  const out: NamespacedName[] = [];
  for (const h of referencingPolicies(apiRefOf(o.ref), policies)) {
    // a grant list that could not be read keeps the holder: a deletion is held on doubt, never let through
    if (await reads.mayReference('spec.access_rights_array', { group: SECURITY_POLICY.group, kind: SECURITY_POLICY.kind, namespace: h.namespace }, to)) out.push(h);
  }
  return out;
}

/** An API's status fields: what its build gave, and the policies referencing it under `field`, when they were listed. */
export function apiStatusExtra(field: string, facts: StatusFacts): Readonly<Record<string, unknown>> {
  return { ...(facts.statusFields ?? {}), ...(facts.referencedBy ? { [field]: facts.referencedBy } : {}) };
}
