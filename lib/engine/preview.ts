/**
 * A dry run's preview of a phase's writes (phase.ts calls it only when the request is a dry
 * run): for each planned write, what it would change field by field (changes.ts: the body it
 * would send against what the gateway has, read again for the objects the gateway has; none
 * for a CREATE's "before", an empty list for a DELETE), and what the writes together would
 * cost the gateways (calls.ts: the write requests, and one reload per gateway that needs one
 * and would be written to, as the phase's settle would ask). Reads the gateways, writes
 * nothing. A read that fails leaves that object's changes out and is a run error.
 */
import type { Gateway } from '../gateway/types.js';
import type { Planned } from './apply.js';
import type { GatewayCalls } from './calls.js';
import { type FieldChange, fieldChanges } from './changes.js';
import { mapLimit } from './concurrency.js';
import { exhaustive } from './decide.js';
import type { RunContext } from './run-context.js';

export interface Preview {
  /** by index of the planned decisions: the changes of a write, undefined for a decision that writes nothing (or whose read failed) */
  readonly changes: readonly (readonly FieldChange[] | undefined)[];
  readonly calls: GatewayCalls;
}

/** What the gateway has under `id`, read again in full (the load stage keeps only ids of it). */
async function observedWhole(gw: Gateway, listedWhole: boolean, kind: Parameters<Gateway['get']>[0], id: string): Promise<unknown> {
  if (listedWhole) return (await gw.list(kind)).get(id) ?? null;
  return gw.get(kind, id);
}

/** The preview of `planned` (see the header). */
export async function previewWrites(ctx: RunContext, planned: readonly Planned[]): Promise<Preview> {
  let writes = 0;
  const touched = new Set<Gateway>();
  const changes = await mapLimit(planned, ctx.settings.concurrency, async ({ loaded, decision }): Promise<readonly FieldChange[] | undefined> => {
    const gw = loaded.target?.gateway;
    if (decision.what !== 'quiet' && decision.write.retire) {
      const where = decision.write.retire.gateway;
      const other = where === undefined ? undefined : await ctx.resolver.byName(where);
      const retiredOn = other === undefined ? gw : 'error' in other ? undefined : other.gateway;
      writes++;
      if (retiredOn) touched.add(retiredOn);
    }
    switch (decision.what) {
      case 'quiet':
        return undefined;
      case 'remove':
        if (decision.write.present && gw) {
          writes++;
          touched.add(gw);
        }
        return [];
      case 'upsert': {
        if (!gw) return undefined;
        // adopted as it is: nothing sent, nothing changes
        if (decision.write.inPlace) return [];
        writes += 1 + (decision.write.certificates?.length ?? 0);
        touched.add(gw);
        if (loaded.observedBody === null || loaded.observedBody === undefined) return fieldChanges(decision.write.body, undefined);
        try {
          const observed = await observedWhole(gw, loaded.kind.listedWhole === true, loaded.kind.gatewayKind, decision.id);
          return fieldChanges(decision.write.body, observed ?? undefined);
        } catch (err) {
          ctx.runError(`read ${loaded.key} on gateway ${decision.gateway ?? gw.name} for the dry run's changes`, err);
          return undefined;
        }
      }
      default:
        return exhaustive(decision);
    }
  });
  const reloads = [...touched].filter((g) => g.reloadRequired).length;
  return { changes, calls: { writes, reloads } };
}
