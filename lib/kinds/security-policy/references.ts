/** The references a SecurityPolicy makes: the APIs of its access rights. Pure. */
import type { CrossRef } from '../../engine/kind.js';
import type { KubeObject } from '../../kube/types.js';
import { accessRefs } from '../shared/api-links.js';
import { tykRef } from '../shared/cross-refs.js';

export function policyReferences(obj: KubeObject): CrossRef[] {
  return accessRefs(obj).map((r) => ({ field: 'spec.access_rights_array', to: tykRef({ kind: r.kind }, r.namespace, r.name) }));
}
