/** How the kinds name what they reference for ReferenceGrants (engine CrossRef): a tyk.tyk.io object. Pure. */
import type { RefTo } from '../../kube/reference-grants.js';

const TYK = 'tyk.tyk.io';

/** The reference to `kind` `namespace`/`name` of Tyk Operator's group. */
export function tykRef(kind: { kind: string }, namespace: string, name: string): RefTo {
  return { group: TYK, kind: kind.kind, namespace, name };
}
