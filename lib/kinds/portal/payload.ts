/**
 * The developer portal's desired state (Tyk Dashboard; ids and write bodies: lib/gateway/portal.ts).
 * Pure: everything read (descriptions, policies, other catalogues, records) comes in as values.
 *
 * - A catalogue entry is an APIDescription's content (Tyk Operator's `APIDescriptionBase`): the
 *   fields of Tyk's entry model the resource sets (name, short_description, long_description,
 *   show, auth_type, is_keyless, version (default "v2"), config, fields, documentation), its
 *   `policy_id` (a `policyRef` resolved to the SecurityPolicy's Dashboard `_id`, which
 *   status.pol_id holds; else `policy_id` as given), and `docs` to upload. A PortalAPICatalogue's
 *   `apis[]` entry is its inline fields with the referenced APIDescription's spec over them (as
 *   Tyk Operator merged them: only what the description sets, Go's omitempty, wins).
 * - `docs.documentation` is sent as given (a URL for swagger_custom_url), except for `swagger`,
 *   which the Dashboard takes base64-encoded: a document that is not base64 already is encoded.
 * - A PortalAPICatalogue owns the entries it declares, keyed by policy id. Among our catalogues
 *   on one gateway, an entry belongs to the oldest (creationTimestamp, then namespace/name) live
 *   resource that declares it: a younger one declaring it too is invalid, naming the owner, and
 *   is looked at again when that changes (the owner is part of its desired hash). What a
 *   catalogue owned before and no longer declares is released by its next write, unless another
 *   of ours claims it; a deletion removes what it owns, minus what others claim. Entries nobody
 *   of ours declares are never touched. The catalogue's `email`, when set, is written with it.
 * - A PortalConfig is the organisation's portal configuration: its spec without contextRef (and
 *   without the Dashboard's id and org_id). The oldest live one per gateway is the configuration;
 *   another is invalid, naming it.
 * - An APIDescription has no gateway object of its own: it is valid (its policy resolves, its
 *   docs are complete) or not, and its desired hash only says which, so an edit reaches the
 *   catalogues built from it without a write of its own.
 */

import { hashOf } from '../../engine/hash.js';
import type { CatalogueWrite } from '../../gateway/portal.js';
import { catalogueId, PORTAL_CONFIGURATION_ID } from '../../gateway/portal.js';
import type { JsonObject } from '../../gateway/types.js';
import type { KubeObject } from '../../kube/types.js';
import { isObject, nonBlank } from '../../platform/guards.js';
import { type NamespacedName, nsName } from '../shared/api-links.js';
import { ownedIds, refOf } from './refs.js';

export { ownedIds, refOf };

/** The entry fields of Tyk's catalogue model that a description can set, sent as given. */
const ENTRY_FIELDS = ['name', 'short_description', 'long_description', 'show', 'auth_type', 'is_keyless', 'version', 'config', 'fields', 'documentation'] as const;

/** The documentation types whose text the Dashboard takes base64-encoded. */
const BASE64_DOC_TYPES = new Set(['swagger', 'blueprint']);
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

export type PolicyResolution = { ok: true; id: string; ownId: string } | { ok: false; why: string };
export type ResolvePolicy = (ref: NamespacedName) => PolicyResolution;

export type EntryResult = { ok: true; entry: JsonObject; policyId: string; aliases: string[] } | { ok: false; invalid: string } | { ok: false; waiting: string };

/** What Go's `omitempty` leaves out: such a value in a description does not override the catalogue's inline one. */
function omitted(v: unknown): boolean {
  if (v === undefined || v === null || v === false || v === 0 || v === '') return true;
  if (Array.isArray(v)) return v.length === 0;
  return isObject(v) && Object.keys(v).length === 0;
}

/** The text the Dashboard stores for `docs` (see the header). */
function documentationText(docType: string, text: string): string {
  if (!BASE64_DOC_TYPES.has(docType)) return text;
  const compact = text.replace(/\s+/g, '');
  return BASE64.test(compact) && compact.length % 4 === 0 ? compact : Buffer.from(text, 'utf8').toString('base64');
}

/**
 * One catalogue entry from a description's content (`spec`: an APIDescription's spec, or a
 * catalogue's `apis[]` item merged with its description); `where` names it in messages.
 */
export function entryOf(spec: Record<string, unknown>, namespace: string, resolvePolicy: ResolvePolicy, where: string): EntryResult {
  let policyId: string;
  let aliases: string[] = [];
  const ref = refOf(spec.policyRef, namespace);
  if (ref) {
    const p = resolvePolicy(ref);
    if (!p.ok) return { ok: false, waiting: `${where}: waiting for SecurityPolicy ${nsName(ref)}, which ${p.why}` };
    policyId = p.id;
    if (p.ownId !== '' && p.ownId !== p.id) aliases = [p.ownId];
  } else {
    const literal = nonBlank(spec.policy_id);
    if (literal === undefined) return { ok: false, invalid: `${where}: neither policyRef nor policy_id names the SecurityPolicy it publishes` };
    policyId = literal;
  }
  const entry: JsonObject = {};
  for (const f of ENTRY_FIELDS) if (spec[f] !== undefined && spec[f] !== null) entry[f] = spec[f];
  entry.version ??= 'v2';
  entry.policy_id = policyId;
  if (spec.docs !== undefined && spec.docs !== null) {
    const docs = spec.docs;
    const docType = isObject(docs) ? nonBlank(docs.doc_type) : undefined;
    const text = isObject(docs) && typeof docs.documentation === 'string' ? docs.documentation : '';
    if (docType === undefined) return { ok: false, invalid: `${where}: docs.doc_type is missing` };
    if (text.trim() === '') return { ok: false, invalid: `${where}: docs.documentation is empty` };
    entry.docs = { doc_type: docType, documentation: documentationText(docType, text) };
  }
  return { ok: true, entry, policyId, aliases };
}

/** What a portal resource's desired state is, for the engine's load stage: as its `Built`, plus what it declares. */
export interface PortalBuilt {
  id: string;
  body?: JsonObject;
  /** the desired hash, when not the body's */
  hash?: string;
  invalid?: string;
  waiting?: string;
}

const VALID_DESCRIPTION = hashOf({ description: 'valid' });

/** An APIDescription (see the header); its id is `id` (base64url of namespace/name). */
export function descriptionDesired(obj: KubeObject, id: string, resolvePolicy: ResolvePolicy): PortalBuilt {
  if (obj.metadata.deletionTimestamp) return { id };
  const r = entryOf(obj.spec ?? {}, obj.metadata.namespace ?? '', resolvePolicy, `APIDescription ${obj.metadata.namespace}/${obj.metadata.name}`);
  if (!r.ok) return 'invalid' in r ? { id, invalid: r.invalid } : { id, waiting: r.waiting };
  return { id, body: r.entry, hash: VALID_DESCRIPTION };
}

/** A catalogue's `apis[]` item merged with the APIDescription it names (null: not found; undefined: it names none). */
export function mergedItem(item: Record<string, unknown>, description: KubeObject | undefined): Record<string, unknown> {
  const { apiDescriptionRef: _, ...inline } = item;
  if (!description) return inline;
  const out: Record<string, unknown> = { ...inline };
  for (const [k, v] of Object.entries(description.spec ?? {})) if (k !== 'contextRef' && !omitted(v)) out[k] = v;
  return out;
}

/** The catalogue entries a PortalAPICatalogue declares: resolved, or why not. */
export type DeclaredEntries = { ok: true; entries: JsonObject[]; aliases: string[] } | { ok: false; invalid: string } | { ok: false; waiting: string };

/**
 * The entries of a catalogue's `apis[]`; `description(ref)` finds a referenced APIDescription
 * (null: it does not exist). Waits name every reference that is not there yet.
 */
export function declaredEntries(obj: KubeObject, description: (ref: NamespacedName) => KubeObject | null, resolvePolicy: ResolvePolicy): DeclaredEntries {
  const namespace = obj.metadata.namespace ?? '';
  const items = Array.isArray(obj.spec?.apis) ? obj.spec.apis : [];
  const entries: JsonObject[] = [];
  const aliases: string[] = [];
  const waits: string[] = [];
  const seen = new Map<string, string>();
  for (const [i, raw] of items.entries()) {
    if (!isObject(raw)) return { ok: false, invalid: `apis[${i}] is not an object` };
    const ref = refOf(raw.apiDescriptionRef, namespace);
    let desc: KubeObject | undefined;
    if (ref) {
      const found = description(ref);
      if (found === null) {
        waits.push(`waiting for APIDescription ${nsName(ref)}, which does not exist`);
        continue;
      }
      desc = found;
    }
    const where = ref ? `apis[${i}] (APIDescription ${nsName(ref)})` : `apis[${i}]`;
    const r = entryOf(mergedItem(raw, desc), namespace, resolvePolicy, where);
    if (!r.ok) {
      if ('invalid' in r) return { ok: false, invalid: r.invalid };
      waits.push(r.waiting);
      continue;
    }
    const twice = seen.get(r.policyId);
    if (twice !== undefined) return { ok: false, invalid: `${where} publishes policy ${r.policyId} again (as ${twice} does): one entry per policy` };
    seen.set(r.policyId, where);
    entries.push(r.entry);
    aliases.push(...r.aliases);
  }
  if (waits.length > 0) return { ok: false, waiting: waits.join('; ') };
  entries.sort((a, b) => String(a.policy_id).localeCompare(String(b.policy_id)));
  return { ok: true, entries, aliases: [...new Set(aliases)] };
}

/** Another catalogue of ours on the same gateway, as a catalogue's ownership sees it. */
export interface OtherCatalogue {
  /** "namespace/name" */
  readonly key: string;
  /** it comes first (older, or as old and named first): what it declares wins */
  readonly before: boolean;
  /** the policy ids it declares now (when known: decided in this run), else those it owns (its record) */
  readonly declares: ReadonlySet<string>;
  /** the policy ids it declares or owns: never released or deleted by another */
  readonly holds: ReadonlySet<string>;
}

/**
 * A PortalAPICatalogue's desired state (see the header). `owned`: the policy ids its record
 * says it owns on this gateway (undefined: none, or on another gateway).
 */
export function catalogueDesired(obj: KubeObject, declared: DeclaredEntries, others: readonly OtherCatalogue[], owned: readonly string[] | undefined, orgId: string | undefined): PortalBuilt {
  const held = new Set(others.flatMap((o) => [...o.holds]));
  const had = owned ?? [];
  if (obj.metadata.deletionTimestamp) return { id: catalogueId(had.filter((pid) => !held.has(pid))) };
  // a catalogue that cannot be built keeps what it owns: nothing is released or deleted on doubt
  if (!declared.ok) return 'invalid' in declared ? { id: catalogueId(had), invalid: declared.invalid } : { id: catalogueId(had), waiting: declared.waiting };
  const ids = declared.entries.map((e) => String(e.policy_id));
  const owner = others.find((o) => o.before && ids.some((pid) => o.declares.has(pid)));
  if (owner) {
    const taken = ids.filter((pid) => owner.declares.has(pid));
    const invalid = `PortalAPICatalogue ${owner.key} already publishes policy ${taken.join(', ')} in this organisation's catalogue: each entry belongs to one PortalAPICatalogue`;
    // it keeps what it owned but the owner's; the owner is in the hash, so its going away is a change
    return { id: catalogueId(had.filter((pid) => !owner.declares.has(pid))), invalid, hash: hashOf({ spec: obj.spec ?? null, owner: owner.key, taken }) };
  }
  const email = nonBlank(obj.spec?.email);
  const release = had.filter((pid) => !ids.includes(pid) && !held.has(pid));
  const replaces = declared.aliases.filter((a) => !ids.includes(a) && !held.has(a));
  const write: CatalogueWrite = {
    apis: declared.entries,
    ...(replaces.length > 0 ? { replaces } : {}),
    ...(email !== undefined ? { email } : {}),
    ...(orgId ? { org_id: orgId } : {}),
  };
  // `release` depends on the record, so it is left out of the hash (the write it causes is an id change)
  const hash = hashOf(write);
  return { id: catalogueId(ids), body: { ...write, ...(release.length > 0 ? { release } : {}) } as unknown as JsonObject, hash };
}

/** Spec fields of a PortalConfig that are not the Dashboard's configuration. */
const NOT_CONFIGURATION = new Set(['contextRef', 'id', 'org_id']);

/**
 * A PortalConfig's desired state; `owner`: the older live PortalConfig of the same gateway
 * ("namespace/name"), when there is one.
 */
export function configurationDesired(obj: KubeObject, owner: string | undefined): PortalBuilt {
  const id = PORTAL_CONFIGURATION_ID;
  if (obj.metadata.deletionTimestamp) return { id };
  if (owner !== undefined) {
    const invalid = `PortalConfig ${owner} already configures this organisation's portal: there is one configuration per organisation`;
    return { id, invalid, hash: hashOf({ spec: obj.spec ?? null, owner }) };
  }
  const body: JsonObject = Object.fromEntries(Object.entries(obj.spec ?? {}).filter(([k]) => !NOT_CONFIGURATION.has(k)));
  return { id, body };
}

/** Oldest first: creationTimestamp, then namespace/name (ties and missing times decided by name). */
export function olderFirst(a: KubeObject, b: KubeObject): number {
  const ta = a.metadata.creationTimestamp ?? '';
  const tb = b.metadata.creationTimestamp ?? '';
  if (ta !== tb) return ta < tb ? -1 : 1;
  const ka = `${a.metadata.namespace ?? ''}/${a.metadata.name}`;
  const kb = `${b.metadata.namespace ?? ''}/${b.metadata.name}`;
  return ka < kb ? -1 : ka > kb ? 1 : 0;
}
