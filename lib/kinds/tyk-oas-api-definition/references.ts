/** The references a TykOasApiDefinition makes: its ConfigMap, and the versions it lists. Pure. */
import type { CrossRef } from '../../engine/kind.js';
import type { KubeObject } from '../../kube/types.js';
import { tykRef } from '../shared/cross-refs.js';
import { configMapRefOf, versionRefsOf } from './payload.js';

export function tykOasReferences(obj: KubeObject): CrossRef[] {
  const out: CrossRef[] = [];
  const cm = configMapRefOf(obj);
  if (!('invalid' in cm)) out.push({ field: 'spec.tykOAS.configmapRef', to: { group: '', kind: 'ConfigMap', namespace: cm.namespace, name: cm.name } });
  for (const v of versionRefsOf(obj)) out.push({ field: 'spec.versioning.versions[].tykOasApiDefinitionRef', to: tykRef({ kind: v.ref.kind }, v.ref.namespace, v.ref.name) });
  return out;
}
