/**
 * The two small readings of portal objects the engine needs before the portal's load is
 * loaded (view.ts): a reference `{name, namespace?}` with its namespace defaulted, and the
 * policy ids a catalogue id names. Pure; kept apart from payload.ts so that a bundle reaches
 * them without the payload builders.
 */
import { catalogueEntryIds } from '../../gateway/portal.js';
import { isObject, trimmed } from '../../platform/guards.js';
import type { NamespacedName } from '../shared/api-links.js';

/** A reference {name, namespace?} with the namespace defaulted; undefined when it names nothing. */
export function refOf(v: unknown, namespace: string): NamespacedName | undefined {
  if (!isObject(v)) return undefined;
  const name = trimmed(v.name);
  return name === undefined ? undefined : { namespace: trimmed(v.namespace) ?? namespace, name };
}

/** The policy ids a catalogue id names ([] for another id). */
export function ownedIds(id: string | undefined): string[] {
  return id === undefined ? [] : (catalogueEntryIds(id) ?? []);
}
