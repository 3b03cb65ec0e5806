/**
 * Tyk OAS API definitions as the gateway clients handle them: an OpenAPI 3 document whose
 * `x-tyk-api-gateway` extension holds Tyk's settings. Its `x-tyk-api-gateway.info.id` is the
 * API's id on the gateway (what a Tyk Classic definition calls `api_id`), the id under which
 * the Gateway interface (./types.ts) names an 'oas' object.
 *
 * Contract: pure; never throws; never changes its argument.
 * - `oasApiId` reads the id, undefined when the document has none (or is no document).
 * - `withOasId` gives a copy carrying `id` as its id. A document without an `x-tyk-api-gateway`
 *   object is returned unchanged (copied): the gateway is the one to refuse it, with its own
 *   documented message, rather than a half-made extension being sent in its place.
 * - `withoutOasFields` gives a copy without the named `info` fields (e.g. the Dashboard's
 *   `dbId`, which is never ours to choose); it adds nothing.
 */
import { isObject, nonEmpty } from '../platform/guards.js';
import type { JsonObject } from './types.js';

/** The Tyk vendor extension of an OpenAPI document. */
export const TYK_EXTENSION = 'x-tyk-api-gateway';

/** The `x-tyk-api-gateway.info` fields the gateways fill in themselves. */
export type OasInfoField = 'id' | 'dbId' | 'orgId';

export function oasApiId(doc: unknown): string | undefined {
  const ext = isObject(doc) ? doc[TYK_EXTENSION] : undefined;
  const info = isObject(ext) ? ext.info : undefined;
  return isObject(info) ? nonEmpty(info.id) : undefined;
}

export function withOasId(doc: JsonObject, id: string): JsonObject {
  return withInfo(doc, (info) => ({ ...info, id }));
}

export function withoutOasFields(doc: JsonObject, fields: readonly OasInfoField[]): JsonObject {
  const drop = new Set<string>(fields);
  return withInfo(doc, (info) => Object.fromEntries(Object.entries(info).filter(([k]) => !drop.has(k))), false);
}

/**
 * A copy of doc whose extension's `info` is what `change` makes of it; an absent `info` counts
 * as {} when `create`, else is left absent.
 */
function withInfo(doc: JsonObject, change: (info: JsonObject) => JsonObject, create = true): JsonObject {
  const copy = structuredClone(doc);
  const ext = copy[TYK_EXTENSION];
  if (!isObject(ext) || (!create && !isObject(ext.info))) return copy;
  ext.info = change(isObject(ext.info) ? ext.info : {});
  return copy;
}
