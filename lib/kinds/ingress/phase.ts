/**
 * The Ingress as a composite kind (engine/composite.ts): Ingresses of our class become
 * ApiDefinitions in the cluster, before the ApiDefinition phase sends those to the gateway in
 * the same run. The engine holds the loop (lock, re-read, decide again, write, record, release,
 * dirty passes, dry runs, a stopping process); this value says what differs:
 *
 * - load and reread (load.ts): the Ingresses a run looks at, each with its template and the
 *   ApiDefinitions labelled for it; under the lock, also what is at each name its plan creates;
 * - decide (decide.ts, pure): the plan (apis.ts) and its diff as the engine's decision;
 * - report, record and Events (report.ts); a child found at a name a create was refused for is
 *   its own when it is labelled for the Ingress; a child's memory is the hash of its managed view;
 * - released: a template the record named and the new one does not (the Ingress names another,
 *   or is gone) is let go, so the ApiDefinition phase completes a deletion it held in this run.
 *
 * The record (`Ingress/<ns>/<name>`) names the template and the generated ApiDefinitions in
 * `uses`, so an event about one finds its Ingress (load.ts).
 */
import { type CompositeKind, compositePhase } from '../../engine/composite.js';
import { hashOf } from '../../engine/hash.js';
import type { RunContext } from '../../engine/run-context.js';
import type { SyncRecord } from '../../store/types.js';
import { API_DEFINITION } from '../api-definition/kind.js';
import { DEFAULT_INGRESS_SETTINGS, type IngressSettings, labelledFor, managedView } from './apis.js';
import { decideIngress, type IngressBecause } from './decide.js';
import { INGRESS } from './kind.js';
import { type IngressEntry, loadIngresses, readEntry } from './load.js';
import { recordOf, reportIngress, takenError, tellIngress } from './report.js';

export function ingressSettings(ctx: RunContext): IngressSettings {
  return (ctx.settings.kindSettings?.ingress as IngressSettings | undefined) ?? DEFAULT_INGRESS_SETTINGS;
}

export const INGRESS_COMPOSITE: CompositeKind<IngressEntry, IngressBecause> = {
  kind: INGRESS,
  child: API_DEFINITION,
  objectOf: (e) => e.state.ingress,
  load: async (ctx, scope) => (await loadIngresses(ctx, scope, ingressSettings(ctx))).entries,
  reread: (ctx, e) => readEntry(ctx, e, ingressSettings(ctx)),
  decide: (ctx, e) => decideIngress(e.state, ingressSettings(ctx)),
  isOwn: (e, child) => labelledFor(child, e.name),
  viewOf: (e, child) => hashOf(managedView(child, e.name)),
  takenError,
  recordOf,
  report: reportIngress,
  tell: tellIngress,
  released(e, before, after) {
    const was = templateOf(e, before);
    return was !== undefined && (after === null || templateOf(e, after) !== was) ? [{ namespace: e.namespace, name: was }] : [];
  },
};

/** The template a record says the Ingress named: its ApiDefinition use that is not one it generated. */
function templateOf(e: IngressEntry, record: SyncRecord | null): string | undefined {
  const generated = new RegExp(`^${escapeRegExp(`${e.namespace}-${e.name}-`)}[0-9a-f]{9}$`);
  const use = (record?.uses ?? []).map((u) => u.split('/')).find(([kind, , name]) => kind === API_DEFINITION.kind && name !== undefined && !generated.test(name));
  return use?.[2];
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The engine's composite phase over INGRESS_COMPOSITE (phases.ts loads it on first use). */
export const INGRESS_COMPOSITE_PHASE = compositePhase(INGRESS_COMPOSITE);
