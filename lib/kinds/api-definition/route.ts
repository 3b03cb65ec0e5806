/** The route a classic API's body serves on Tyk: its domain and listen path (owners.ts contest keeps it for the oldest resource). Pure. */
import type { Route } from '../../engine/kind.js';
import type { JsonObject } from '../../gateway/types.js';
import { isObject } from '../../platform/guards.js';

export function apiRoute(body: JsonObject): Route | undefined {
  const proxy = body.proxy;
  const path = isObject(proxy) && typeof proxy.listen_path === 'string' ? proxy.listen_path : undefined;
  if (path === undefined || path === '') return undefined;
  return { field: 'spec.proxy.listen_path', path, domain: typeof body.domain === 'string' ? body.domain : '' };
}
