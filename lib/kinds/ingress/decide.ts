/**
 * The decision for one Ingress, from what the load found. Pure: no clock, no I/O.
 *
 * - ignore: not our class (nor ever made ours: no finalizer, no record, nothing owned), or gone
 *   without anything of ours left. Nothing is written, nothing reported.
 * - teardown: being deleted, gone (404) with something of ours left, or moved to another class
 *   after being ours: every ApiDefinition it owns is deleted, then (while it still exists) its
 *   finalizer removed. Nothing is deleted that is not labelled for and owned by it.
 * - wait: its template is missing or not labelled `template: "true"`: nothing is written or
 *   deleted, what it generated stays.
 * - sync: the plan (apis.ts) and its diff; the finalizer goes on before anything is
 *   created, and on an Ingress that owns ApiDefinitions without it (adopted from Tyk Operator).
 */

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

export type IngressDecision =
  | { readonly what: 'ignore' }
  | { readonly what: 'teardown'; readonly why: TeardownWhy; readonly steps: readonly Step[]; readonly removeFinalizer: boolean }
  | { readonly what: 'wait'; readonly waiting: string }
  | { readonly what: 'sync'; readonly plan: IngressPlan; readonly diff: Diff; readonly addFinalizer: boolean };

export function decideIngress(s: IngressState, settings: IngressSettings): IngressDecision {
  const ing = s.ingress;
  const owns = [...s.current.values()].some((o) => o !== null && ownedBy(o, s.name));
  if (ing === null) return s.managed || owns ? { what: 'teardown', why: 'gone', steps: teardown(s.name, s.current), removeFinalizer: false } : { what: 'ignore' };
  const hasFinalizer = (ing.metadata.finalizers ?? []).includes(INGRESS.finalizer);
  const ours = isOurClass(ing, settings.className);
  const deleting = !!ing.metadata.deletionTimestamp;
  if (!ours || deleting) {
    // never ours: left alone; once ours: what it generated goes, and so does our finalizer
    if (!hasFinalizer && !s.managed && !(ours && owns)) return { what: 'ignore' };
    return { what: 'teardown', why: ours ? 'deleted' : 'class changed', steps: teardown(s.name, s.current), removeFinalizer: hasFinalizer };
  }
  const template = templateSpec(ing, s.template);
  if (!template.ok) return { what: 'wait', waiting: template.waiting };
  const plan = desiredApis(ing, template.spec, settings);
  const diff = diffApis(ing, plan, s.current, s.memory);
  const writes = diff.steps.some((x) => x.op !== 'delete');
  return { what: 'sync', plan, diff, addFinalizer: !hasFinalizer && (writes || owns) };
}

/** A decision that writes to the API server (and so runs under the Ingress's lock). */
export function writes(d: IngressDecision): boolean {
  if (d.what === 'teardown') return d.steps.length > 0 || d.removeFinalizer;
  if (d.what === 'sync') return d.diff.steps.length > 0 || d.addFinalizer;
  return false;
}
