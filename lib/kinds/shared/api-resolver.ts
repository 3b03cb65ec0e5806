/**
 * How a phase sees the APIs its objects reference (a policy's access rights, a Tyk OAS API's
 * versions, a catalogue's policies through them): from an earlier phase of this run when it
 * looked at them (fresh records), else read once (object and record). An API resolves when it
 * exists, is not being deleted, goes to the same gateway, and was synced there; its gateway id
 * is the recorded one. Reads through the engine's load stage; pure otherwise. A Tyk OAS API's
 * name (a policy's api_name) is its document's (`x-tyk-api-gateway.info.name`): from the body an
 * earlier phase of this run built, else from status.name, the same name as last sent, so a
 * policy is built alike whether or not its run looked at the API.
 */

import { mapLimit } from '../../engine/concurrency.js';
import type { Done } from '../../engine/finalize.js';
import type { ManagedKind, ObjectRef } from '../../engine/kind.js';
import { getOne } from '../../engine/load.js';
import type { RunContext } from '../../engine/run-context.js';
import { TYK_EXTENSION } from '../../gateway/oas.js';
import type { GatewayTarget } from '../../gateway/targets.js';
import type { JsonObject } from '../../gateway/types.js';
import type { KubeObject } from '../../kube/types.js';
import { isObject, nonEmpty } from '../../platform/guards.js';
import type { SyncRecord } from '../../store/types.js';
import { API_DEFINITION } from '../api-definition/kind.js';
import type { ApiResolution } from '../security-policy/payload.js';
import { TYK_OAS_API_DEFINITION } from '../tyk-oas-api-definition/kind.js';
import { type ApiKindName, type ApiRef, apiKey } from './api-links.js';

/** How a policy sees an API it references, or a Tyk OAS API a version it lists. */
export type ResolveApi = (ref: ApiRef, target: GatewayTarget) => ApiResolution;

/** What earlier phases found of the APIs they looked at, by apiKey. */
export type EarlierApis = ReadonlyMap<string, { obj: KubeObject | null; record: SyncRecord | null; name?: string }>;

/** An API object's reference as policies name it. */
export function apiRefOf(ref: ObjectRef): ApiRef {
  return { kind: ref.kind.kind as ApiKindName, namespace: ref.namespace, name: ref.name };
}

/** The managed kind of an API reference. */
export function apiKindOf(ref: ApiRef): ManagedKind {
  return ref.kind === 'TykOasApiDefinition' ? TYK_OAS_API_DEFINITION : API_DEFINITION;
}

/** How later phases see the APIs a phase looked at: by apiKey, the object and the record it ended with. */
export function phaseResults(done: readonly Done[]): Map<string, { obj: KubeObject | null; record: Done['record'] }> {
  return new Map(
    done.map((d) => {
      const name = d.loaded.kind === TYK_OAS_API_DEFINITION ? oasNameOf(d.loaded.body) : undefined;
      return [apiKey(apiRefOf(d.loaded.ref)), { obj: d.loaded.obj ?? null, record: d.record, ...(name !== undefined ? { name } : {}) }];
    }),
  );
}

/** A Tyk OAS document's name (what its status.name shows once sent). */
function oasNameOf(body: JsonObject | undefined): string | undefined {
  const ext = body?.[TYK_EXTENSION];
  const info = isObject(ext) ? ext.info : undefined;
  return isObject(info) ? nonEmpty(info.name) : undefined;
}

/** What this run's API phases so far found (ApiDefinitions, then Tyk OAS APIs), by apiKey. */
export function earlierApis(ctx: RunContext): EarlierApis {
  return phaseResults([...ctx.outcomes(API_DEFINITION), ...ctx.outcomes(TYK_OAS_API_DEFINITION)]);
}

/** A resolver that resolves nothing: for a phase whose objects reference no API. */
export const notADependency: ResolveApi = () => ({ ok: false, why: 'is not a dependency' });

/** The resolver of `refs`: each API from `earlier` when a phase looked at it, else read once with its record. */
export async function apiResolver(ctx: RunContext, refs: readonly ApiRef[], earlier: EarlierApis): Promise<ResolveApi> {
  const wanted = new Map<string, ApiRef>();
  for (const r of refs) if (!earlier.has(apiKey(r))) wanted.set(apiKey(r), r);
  const known = new Map<string, { obj: KubeObject | null; record: SyncRecord | null; name?: string; error?: string }>(earlier);
  // an API in a namespace we do not watch is not read (obj undefined): for a policy, it does not exist
  const extra = await mapLimit([...wanted.values()], ctx.settings.concurrency, (r) => getOne(ctx, apiKindOf(r), { kind: apiKindOf(r), namespace: r.namespace, name: r.name }));
  const readable = extra.filter((f) => f.readError === undefined);
  const records = await ctx.deps.store.getRecords(readable.map((f) => f.key));
  const recordOf = new Map(readable.map((f, i) => [f.key, records[i] ?? null]));
  for (const f of extra) known.set(apiKey(apiRefOf(f.ref)), { obj: f.obj ?? null, record: recordOf.get(f.key) ?? null, ...(f.readError !== undefined ? { error: 'could not be read' } : {}) });
  return (ref, target) => {
    const api = known.get(apiKey(ref));
    if (!api || api.error) return { ok: false, why: api?.error ?? 'could not be read' };
    if (!api.obj) return { ok: false, why: 'does not exist' };
    if (api.obj.metadata.deletionTimestamp) return { ok: false, why: 'is being deleted' };
    const rec = api.record;
    if (!rec || (rec.result !== 'synced' && rec.result !== 'diverged')) return { ok: false, why: 'is not synced yet' };
    if ((rec.gateway ?? 'default') !== target.name) return { ok: false, why: `is on another gateway (${rec.gateway ?? 'default'})` };
    return { ok: true, id: rec.id, name: apiNameOf(ref, api.obj, api.name) };
  };
}

/** The name a policy gives an API it grants: the ApiDefinition's spec.name, the OAS API's document's (built), or in status, else the resource's. */
function apiNameOf(ref: ApiRef, obj: KubeObject, built: string | undefined): string {
  const name = ref.kind === 'ApiDefinition' ? obj.spec?.name : (built ?? obj.status?.name);
  return typeof name === 'string' && name !== '' ? name : obj.metadata.name;
}
