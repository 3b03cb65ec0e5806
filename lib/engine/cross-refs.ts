/**
 * The references a resource makes that resolve through the cluster, as ReferenceGrants see them
 * (../kube/reference-grants.ts): each with the spec field it comes from, in the resource's
 * order. Pure. The load stage checks those into another namespace before anything there is
 * read; the OperatorContext a `contextRef` names, and the Secret a context's `secretRef`
 * names, are checked where contexts are resolved (../gateway/targets.ts).
 *
 * | kind                | field                                              | target                          |
 * | ------------------- | -------------------------------------------------- | ------------------------------- |
 * | TykOasApiDefinition | spec.tykOAS.configmapRef                           | ConfigMap (by name)             |
 * | TykOasApiDefinition | spec.versioning.versions[].tykOasApiDefinitionRef  | TykOasApiDefinition, ApiDefinition |
 * | SecurityPolicy      | spec.access_rights_array[]                         | ApiDefinition, TykOasApiDefinition |
 * | APIDescription      | spec.policyRef                                     | SecurityPolicy                  |
 * | PortalAPICatalogue  | spec.apis[].apiDescriptionRef, spec.apis[].policyRef | APIDescription, SecurityPolicy |
 */

import { API_DESCRIPTION, PORTAL_API_CATALOGUE } from '../kinds/portal/kinds.js';
import { refOf } from '../kinds/portal/payload.js';
import { SECURITY_POLICY } from '../kinds/security-policy/kind.js';
import { accessRefs } from '../kinds/shared/api-links.js';
import { TYK_OAS_API_DEFINITION } from '../kinds/tyk-oas-api-definition/kind.js';
import { configMapRefOf, versionRefsOf } from '../kinds/tyk-oas-api-definition/payload.js';
import type { RefTo } from '../kube/reference-grants.js';
import type { KubeObject } from '../kube/types.js';
import { isObject } from '../platform/guards.js';
import type { ManagedKind } from './kind.js';

export interface CrossRef {
  /** the spec field, for messages */
  field: string;
  to: RefTo;
}

const TYK = 'tyk.tyk.io';

function tyk(kind: { kind: string }, namespace: string, name: string): RefTo {
  return { group: TYK, kind: kind.kind, namespace, name };
}

/** Every reference of `obj` (a resource of `kind`) that names a namespace (its own included). */
export function referencesOf(kind: ManagedKind, obj: KubeObject): CrossRef[] {
  const own = obj.metadata.namespace ?? '';
  const spec = obj.spec ?? {};
  const out: CrossRef[] = [];
  if (kind === TYK_OAS_API_DEFINITION) {
    const cm = configMapRefOf(obj);
    if (!('invalid' in cm)) out.push({ field: 'spec.tykOAS.configmapRef', to: { group: '', kind: 'ConfigMap', namespace: cm.namespace, name: cm.name } });
    for (const v of versionRefsOf(obj)) out.push({ field: 'spec.versioning.versions[].tykOasApiDefinitionRef', to: tyk({ kind: v.ref.kind }, v.ref.namespace, v.ref.name) });
  }
  if (kind === SECURITY_POLICY) {
    for (const r of accessRefs(obj)) out.push({ field: 'spec.access_rights_array', to: tyk({ kind: r.kind }, r.namespace, r.name) });
  }
  if (kind === API_DESCRIPTION) {
    const p = refOf(spec.policyRef, own);
    if (p) out.push({ field: 'spec.policyRef', to: tyk(SECURITY_POLICY, p.namespace, p.name) });
  }
  if (kind === PORTAL_API_CATALOGUE) {
    for (const item of Array.isArray(spec.apis) ? spec.apis.filter(isObject) : []) {
      const d = refOf(item.apiDescriptionRef, own);
      if (d) out.push({ field: 'spec.apis[].apiDescriptionRef', to: tyk(API_DESCRIPTION, d.namespace, d.name) });
      const p = refOf(item.policyRef, own);
      if (p) out.push({ field: 'spec.apis[].policyRef', to: tyk(SECURITY_POLICY, p.namespace, p.name) });
    }
  }
  return out;
}
