/**
 * The keys a kind's objects are recorded and locked under ("<Kind>/<namespace>/<name>"), and a
 * read that answers its failure instead of throwing, for the kinds that load objects of their
 * own (Ingress, HTTPRoute). Pure but for the read it wraps.
 */
import type { KubeObject, NamespacedName } from '../../kube/types.js';

/** A read: the object (null: 404), or why it failed. */
export type Got = { obj: KubeObject | null } | { error: unknown };

/** Keys of one kind: `of` makes one, `split` reads one back (undefined: not this kind's, or malformed). */
export interface ObjectKeys {
  /** "<Kind>/": every key of the kind starts with it */
  readonly prefix: string;
  of(namespace: string, name: string): string;
  split(key: string): NamespacedName | undefined;
}

export function objectKeys(kind: string): ObjectKeys {
  const prefix = `${kind}/`;
  return {
    prefix,
    of: (namespace, name) => `${prefix}${namespace}/${name}`,
    split(key) {
      const [k, namespace, name, ...rest] = key.split('/');
      return k === kind && namespace && name && rest.length === 0 ? { namespace, name } : undefined;
    },
  };
}

/** `read()`, its failure answered as `{ error }`. */
export async function readOr(read: () => Promise<KubeObject | null>): Promise<Got> {
  try {
    return { obj: await read() };
  } catch (error) {
    return { error };
  }
}
