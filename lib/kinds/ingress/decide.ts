/**
 * The decision for one Ingress, from what the load found, in the engine's composite vocabulary
 * (engine/composite.ts). Pure: no clock, no I/O.
 *
 * - ignore: not our class (nor ever made ours: no finalizer, no record, nothing owned), or gone
 *   without anything of ours left. Nothing is written, nothing reported.
 * - remove (because: teardown): being deleted, gone (404) with something of ours left, or moved
 *   to another class after being ours: every ApiDefinition it owns is deleted, then (while it
 *   still exists) its finalizer removed. Nothing is deleted that is not labelled for and owned
 *   by it. With nothing left to delete and no finalizer to remove: quiet, its record dropped.
 * - quiet (because: wait): its template is missing or not labelled `template: "true"`: nothing
 *   is written or deleted, what it generated stays.
 * - upsert (because: sync): the plan (apis.ts) and its diff; the finalizer goes on before
 *   anything is created, and on an Ingress that owns ApiDefinitions without it (adopted from
 *   Tyk Operator). Nothing to change: quiet.
 */

import type { CompositeDecision } from '../../engine/composite.js';
import type { KubeObject } from '../../kube/types.js';
import { type ChildMemory, type Diff, desiredApis, diffApis, type IngressPlan, type IngressSettings, isOurClass, ownedBy, type Step, teardown, templateSpec } from './apis.js';
import { INGRESS } from './kind.js';

export interface IngressState {
  readonly namespace: string;
  readonly name: string;
  /** null: the API server confirmed it gone */
  readonly ingress: KubeObject | null;
  /** the template it names: undefined when it names none, null when it does not exist */
  readonly template: KubeObject | null | undefined;
  /** every ApiDefinition labelled for it, and what is at each name its plan needs (null: free) */
  readonly current: ReadonlyMap<string, KubeObject | null>;
  /** what the record remembers of our writes */
  readonly memory: Readonly<Record<string, ChildMemory>>;
  /** we have a record of managing it */
  readonly managed: boolean;
}

export type TeardownWhy = 'deleted' | 'gone' | 'class changed';

/** Why an Ingress's decision is what it is: the part of it only the Ingress reads (report.ts). */
export type IngressBecause =
  | { readonly reason: 'sync'; readonly plan: IngressPlan; readonly diff: Diff }
  | { readonly reason: 'wait'; readonly waiting: string }
  | { readonly reason: 'teardown'; readonly why: TeardownWhy };

export type IngressDecision = CompositeDecision<IngressBecause>;

export function decideIngress(s: IngressState, settings: IngressSettings): IngressDecision {
  const ing = s.ingress;
  const owns = [...s.current.values()].some((o) => o !== null && ownedBy(o, s.name));
  if (ing === null) return s.managed || owns ? removal('gone', teardown(s.name, s.current), false) : { what: 'ignore' };
  const hasFinalizer = (ing.metadata.finalizers ?? []).includes(INGRESS.finalizer);
  const ours = isOurClass(ing, settings.className);
  const deleting = !!ing.metadata.deletionTimestamp;
  if (!ours || deleting) {
    // never ours: left alone; once ours: what it generated goes, and so does our finalizer
    if (!hasFinalizer && !s.managed && !(ours && owns)) return { what: 'ignore' };
    return removal(ours ? 'deleted' : 'class changed', teardown(s.name, s.current), hasFinalizer);
  }
  const template = templateSpec(ing, s.template);
  if (!template.ok) return { what: 'quiet', because: { reason: 'wait', waiting: template.waiting } };
  const plan = desiredApis(ing, template.spec, settings);
  const diff = diffApis(ing, plan, s.current, s.memory);
  const writes = diff.steps.some((x) => x.op !== 'delete');
  const addFinalizer = !hasFinalizer && (writes || owns);
  const because = { reason: 'sync', plan, diff } as const;
  return diff.steps.length > 0 || addFinalizer ? { what: 'upsert', because, steps: diff.steps, addFinalizer } : { what: 'quiet', because };
}

function removal(why: TeardownWhy, steps: readonly Step[], removeFinalizer: boolean): IngressDecision {
  const because = { reason: 'teardown', why } as const;
  return steps.length > 0 || removeFinalizer ? { what: 'remove', because, steps, removeFinalizer } : { what: 'quiet', because };
}
