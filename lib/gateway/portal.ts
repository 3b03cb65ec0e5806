/**
 * The developer portal's objects as the Gateway interface (./types.ts) names them, shared by the
 * clients (./tyk-dashboard-portal.ts; ./tyk-ce.ts refuses them) and the reconciler
 * (lib/kinds/portal/payload.ts). Pure.
 *
 * - 'portal-catalogue': the Dashboard keeps one catalogue per organisation, a list of entries
 *   keyed by `policy_id`. A PortalAPICatalogue owns the entries it declares; its gateway id is
 *   the set of their policy ids (`catalogueId`: "catalogue:" then the ids, each URI-encoded,
 *   sorted, comma-separated), so a read of that id is the slice of the catalogue holding those
 *   entries, and two resources never read or write each other's entries.
 * - 'portal-configuration': one per organisation, under PORTAL_CONFIGURATION_ID.
 * - 'portal-description': an APIDescription, which has nothing of its own on the Dashboard.
 *
 * What an upsert of a catalogue slice takes (CatalogueWrite): the entries, each with the
 * documentation to upload for it (`docs`, not a field of the Dashboard's model: the client
 * uploads it and sets the entry's `documentation` to the new id); the policy ids whose entries
 * it releases (owned before, no longer declared); the policy ids whose entries it takes over
 * (Tyk Operator filed entries under the policy's own `id`, where we use the Dashboard's `_id`);
 * and the catalogue's owner email, when the resource sets one.
 */
import { GatewayUnsupportedError } from '../platform/errors.js';
import type { GatewayObjectKind, JsonObject } from './types.js';

export const PORTAL_GATEWAY_KINDS: readonly GatewayObjectKind[] = ['portal-description', 'portal-catalogue', 'portal-configuration'];

export function isPortalGatewayKind(kind: GatewayObjectKind): boolean {
  return PORTAL_GATEWAY_KINDS.includes(kind);
}

/** The gateway id of the organisation's portal configuration (there is one). */
export const PORTAL_CONFIGURATION_ID = 'configuration';

const CATALOGUE_PREFIX = 'catalogue:';

/** The gateway id of the catalogue entries under these policy ids (order and repeats do not matter). */
export function catalogueId(policyIds: readonly string[]): string {
  return CATALOGUE_PREFIX + [...new Set(policyIds)].sort().map(encodeURIComponent).join(',');
}

/** The policy ids a catalogue id names (sorted); undefined when it is not a catalogue id. */
export function catalogueEntryIds(id: string): string[] | undefined {
  if (!id.startsWith(CATALOGUE_PREFIX)) return undefined;
  const rest = id.slice(CATALOGUE_PREFIX.length);
  if (rest === '') return [];
  try {
    return rest.split(',').map(decodeURIComponent);
  } catch {
    return undefined;
  }
}

/** Documentation to upload for a catalogue entry (Tyk Operator's `docs`). */
export interface EntryDocs {
  doc_type: string;
  documentation: string;
}

/** What an upsert of a catalogue slice sends (see the header). */
export interface CatalogueWrite {
  /** the entries, in policy id order; each may carry `docs` */
  apis: JsonObject[];
  /** policy ids whose entries we owned and no longer declare: removed by this write */
  release?: string[];
  /** policy ids of entries this write takes over (Tyk Operator's keys for our policies): replaced */
  replaces?: string[];
  /** the catalogue's owner email */
  email?: string;
  /** the organisation, for the create of a catalogue the organisation does not have yet */
  org_id?: string;
}

/** What the reconciler and the Tyk Gateway say to a portal kind on a gateway without the Dashboard's portal API. */
export function portalUnsupported(kind: string, gatewayName: string): GatewayUnsupportedError {
  return new GatewayUnsupportedError(
    501,
    `${kind} needs the Tyk Dashboard's developer portal: gateway ${gatewayName} is a Tyk Gateway (TYK_MODE=ce), which has no portal API; ` +
      'use TYK_MODE=pro, or a contextRef to an OperatorContext of mode pro',
  );
}
