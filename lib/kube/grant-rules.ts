/**
 * The matching rules of Gateway API's ReferenceGrant (./reference-grants.ts says when they are
 * asked): whether a namespace's grants permit a reference, and what a refused one says. Pure.
 * Loaded by the first reference of a process that crosses namespaces.
 */
import { isObject } from '../platform/guards.js';
import type { GrantOptions, RefFrom, RefTo } from './reference-grants.js';
import type { KubeObject } from './types.js';

/** Kinds a grant must name by name to permit (credentials and documents), unless GrantOptions.anyName. */
const BY_NAME_ONLY = new Set(['/Secret', '/ConfigMap']);

function text(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

/** Whether any of `grants` (ReferenceGrants of `to.namespace`) permits `from` → `to`. */
export function grantPermits(grants: readonly KubeObject[], from: RefFrom, to: RefTo, options: GrantOptions = {}): boolean {
  const byNameOnly = options.anyName !== true && BY_NAME_ONLY.has(`${to.group}/${to.kind}`);
  return grants.some((g) => {
    if ((g.metadata.namespace ?? '') !== to.namespace) return false;
    const spec = isObject(g.spec) ? g.spec : {};
    const froms = Array.isArray(spec.from) ? spec.from.filter(isObject) : [];
    const tos = Array.isArray(spec.to) ? spec.to.filter(isObject) : [];
    const fromOk = froms.some((f) => text(f.group) === from.group && text(f.kind) === from.kind && text(f.namespace) === from.namespace);
    if (!fromOk) return false;
    return tos.some((t) => {
      if (text(t.group) !== to.group || text(t.kind) !== to.kind) return false;
      const name = text(t.name);
      return name === '' ? !byNameOnly : name === to.name;
    });
  });
}

/** What a refused reference says: the field and the target, never whether it exists. */
export function refusalMessage(field: string, from: RefFrom, to: RefTo, options: GrantOptions = {}): string {
  const naming = options.anyName !== true && BY_NAME_ONLY.has(`${to.group}/${to.kind}`) ? ' naming it' : '';
  return `${field}: ${to.kind} ${to.namespace}/${to.name} is in another namespace, and no ReferenceGrant in ${to.namespace}${naming} lets ${from.kind} objects of ${from.namespace} use it`;
}
