/**
 * The Ingress phase: Ingresses of our class become ApiDefinitions in the cluster, before the
 * ApiDefinition phase sends those to the gateway in the same run.
 *
 * load (load.ts) ─► decide (decide.ts, pure) ─► nothing to write: report,
 * record, Events; a write: lock the Ingress, re-read it, its template and its ApiDefinitions,
 * decide again, write (finalizer first, then one POST, PUT or DELETE per ApiDefinition that
 * differs), record, tell, release (a run that marked it dirty meanwhile gets another pass). The
 * lock is held as every phase holds its locks (engine/locks.ts): renewed every lockRenewMs
 * while the work runs, so a write slower than lockTtlMs keeps it.
 *
 * Guarantees: steady state makes no API-server write; a failed read (Ingress, template,
 * ApiDefinitions) writes and deletes nothing for that Ingress; an ApiDefinition not labelled
 * for the Ingress is never written or deleted; a delete carries the uid it was decided on. The
 * record (`Ingress/<ns>/<name>`) names the template and the generated ApiDefinitions in `uses`,
 * so an event about one finds its Ingress (load.ts). Returns the ApiDefinitions written
 * or deleted, and the templates an Ingress stopped naming, for the ApiDefinition phase. Dry
 * runs write nothing (writers are reported `planned`); a stopping process defers writers.
 * Throws only StoreUnavailableError.
 */
import { mapLimit } from '../../engine/concurrency.js';
import { hashOf } from '../../engine/hash.js';
import { thrownProblem } from '../../engine/input-limits.js';
import { underLocks } from '../../engine/locks.js';
import type { RunContext } from '../../engine/run-context.js';
import type { ObjectReport, RunScope } from '../../engine/types.js';
import type { KubeObject } from '../../kube/types.js';
import { InvalidSpecError, KubeConflictError, StoreUnavailableError } from '../../platform/errors.js';
import type { SyncRecord } from '../../store/types.js';
import { API_DEFINITION } from '../api-definition/kind.js';
import type { NamespacedName } from '../shared/api-links.js';
import { DEFAULT_INGRESS_SETTINGS, type IngressSettings, labelledFor, managedView, type Step } from './apis.js';
import { decideIngress, type IngressDecision, writes } from './decide.js';
import { INGRESS } from './kind.js';
import { type IngressEntry, loadIngresses, readEntry } from './load.js';
import { type ApiRefs, type Outcome, recordOf, reportIngress, type StepResult, takenError, tellIngress } from './report.js';

export interface IngressPhase {
  /** ApiDefinitions written or deleted, and templates let go of (optional: they may be gone) */
  readonly apiRefs: readonly (NamespacedName & { optional?: boolean })[];
}

export function ingressSettings(ctx: RunContext): IngressSettings {
  return (ctx.settings.kindSettings?.ingress as IngressSettings | undefined) ?? DEFAULT_INGRESS_SETTINGS;
}

export async function runIngressPhase(ctx: RunContext, scope: RunScope, reports: ObjectReport[]): Promise<IngressPhase> {
  const settings = ingressSettings(ctx);
  const load = await loadIngresses(ctx, scope, settings);
  const refs: ApiRefs = { written: new Set(), released: new Set() };
  const done = await mapLimit(load.entries, ctx.settings.concurrency, (e) => one(ctx, e, settings, refs));
  for (const r of done) if (r) reports.push(r);
  const apiRefs = [...[...refs.written].map((k) => ({ ...split(k), optional: true })), ...[...refs.released].filter((k) => !refs.written.has(k)).map((k) => ({ ...split(k), optional: true }))];
  return { apiRefs };
}

function split(key: string): NamespacedName {
  const [namespace = '', name = ''] = key.split('/');
  return { namespace, name };
}

/** One Ingress: decided on what the load found; under its lock when that writes. Undefined: not ours, not reported. */
async function one(ctx: RunContext, e: IngressEntry, settings: IngressSettings, refs: ApiRefs): Promise<ObjectReport | undefined> {
  if (e.readError !== undefined) return quiet(ctx, e, { what: 'failed', error: e.readError }, refs);
  const decision = decided(e.state, settings);
  if (decision instanceof InvalidSpecError) return quiet(ctx, e, { what: 'failed', error: decision }, refs);
  if (decision.what === 'ignore') return undefined;
  if (!writes(decision)) return quiet(ctx, e, { what: 'decided', decision }, refs);
  if (ctx.request.dryRun === true) return reportIngress(e, { what: 'decided', decision }, 'planned');
  if (ctx.stopping()) return reportIngress(e, { what: 'decided', decision }, 'deferred', { reason: 'shutting down' });
  return locked(ctx, e, decision, async () => {
    const fresh = await readEntry(ctx, e, settings);
    if (fresh.readError !== undefined) return quiet(ctx, fresh, { what: 'failed', error: fresh.readError }, refs);
    const again = decided(fresh.state, settings);
    if (again instanceof InvalidSpecError) return quiet(ctx, fresh, { what: 'failed', error: again }, refs);
    if (again.what === 'ignore') return undefined;
    if (!writes(again)) return quiet(ctx, fresh, { what: 'decided', decision: again }, refs);
    return carryOut(ctx, fresh, again, refs);
  });
}

/**
 * The Ingress decide stage's boundary: what deciding one Ingress throws (a template nested
 * deeper than a copy can go, a defect) makes that Ingress Invalid, bounded, nothing written.
 */
function decided(state: IngressEntry['state'], settings: IngressSettings): IngressDecision | InvalidSpecError {
  try {
    return decideIngress(state, settings);
  } catch (err) {
    return new InvalidSpecError(thrownProblem('decided', err));
  }
}

/** Report, record and tell an Ingress nothing is written for. */
async function quiet(ctx: RunContext, e: IngressEntry, outcome: Outcome, refs: ApiRefs): Promise<ObjectReport | undefined> {
  if (ctx.request.dryRun !== true) await settle(ctx, e, outcome, refs);
  return reportIngress(e, outcome);
}

/**
 * Saves the record (when it changed) or deletes it, and tells the outcome in Events. A template
 * the record named and the new one does not (the Ingress names another, or is gone) is let go:
 * the ApiDefinition phase looks at it, so a deletion it held completes in this run.
 */
async function settle(ctx: RunContext, e: IngressEntry, outcome: Outcome, refs: ApiRefs): Promise<void> {
  const next = recordOf(e, outcome, new Date(ctx.deps.clock.now()).toISOString());
  if (next === null) {
    if (e.record) await ctx.deps.store.deleteRecord(e.key);
  } else if (next !== undefined && !sameRecord(e.record, next)) {
    const stored = await ctx.deps.store.putRecord(next);
    if (!stored) ctx.log.info({ key: e.key }, 'a newer record exists; kept it');
  }
  const before = templateOf(e, e.record);
  if (before !== undefined && next !== undefined && (next === null || templateOf(e, next) !== before)) refs.released.add(`${e.namespace}/${before}`);
  await tellIngress(ctx, e, outcome);
}

function sameRecord(a: SyncRecord | null, b: SyncRecord): boolean {
  if (!a) return false;
  const { time: _a, ...x } = a;
  const { time: _b, ...y } = b;
  return hashOf(x) === hashOf(y);
}

/**
 * Runs `work` under the Ingress's lock (engine/locks.ts), renewed while it runs; a pass marked
 * dirty meanwhile runs again (bounded). Another run holding the lock: deferred to it.
 */
async function locked(ctx: RunContext, e: IngressEntry, decision: IngressDecision, work: () => Promise<ObjectReport | undefined>): Promise<ObjectReport | undefined> {
  let report: ObjectReport | undefined;
  const refused = await underLocks(
    ctx,
    [e.key],
    (key) => key,
    async () => {
      report = await work();
    },
  );
  return refused.length > 0 ? reportIngress(e, { what: 'decided', decision }, 'deferred') : report;
}

async function carryOut(ctx: RunContext, e: IngressEntry, d: IngressDecision, refs: ApiRefs): Promise<ObjectReport | undefined> {
  let ingress = e.state.ingress;
  if (d.what === 'sync' && d.addFinalizer && ingress) {
    try {
      ingress = await ctx.deps.kube.addFinalizer(INGRESS, ingress, INGRESS.finalizer);
    } catch (err) {
      return quiet(ctx, e, { what: 'failed', error: err, writing: true }, refs);
    }
  }
  const steps = d.what === 'sync' ? d.diff.steps : d.what === 'teardown' ? d.steps : [];
  const results = await mapLimit(steps, ctx.settings.concurrency, (s) => step(ctx, e, s));
  steps.forEach((s, i) => {
    if (results[i]?.ok) refs.written.add(`${e.namespace}/${s.name}`);
  });
  const failed = results.some((r) => !r.ok);
  if (d.what === 'teardown' && !failed && d.removeFinalizer && ingress) {
    try {
      await ctx.deps.kube.removeFinalizer(INGRESS, ingress, INGRESS.finalizer);
    } catch (err) {
      const outcome: Outcome = { what: 'written', decision: d, steps, results: [...results], finalizerError: err };
      await settle(ctx, e, outcome, refs);
      return reportIngress(e, outcome);
    }
  }
  const outcome: Outcome = { what: 'written', decision: d, steps, results: [...results] };
  await settle(ctx, { ...e, state: { ...e.state, ingress } }, outcome, refs);
  return reportIngress(e, outcome);
}

/** The template a record says the Ingress named: its ApiDefinition use that is not one it generated. */
function templateOf(e: IngressEntry, record: SyncRecord | null): string | undefined {
  const generated = new RegExp(`^${escapeRegExp(`${e.namespace}-${e.name}-`)}[0-9a-f]{9}$`);
  const use = (record?.uses ?? []).map((u) => u.split('/')).find(([kind, , name]) => kind === API_DEFINITION.kind && name !== undefined && !generated.test(name));
  return use?.[2];
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

async function step(ctx: RunContext, e: IngressEntry, s: Step): Promise<StepResult> {
  const kube = ctx.deps.kube;
  const view = (o: KubeObject) => hashOf(managedView(o, e.name));
  try {
    if (s.op === 'delete') {
      await kube.deleteObject(API_DEFINITION, e.namespace, s.name, { uid: s.uid });
      return { ok: true };
    }
    const answer = s.op === 'create' ? await kube.createObject(API_DEFINITION, e.namespace, s.object) : await kube.replaceObject(API_DEFINITION, s.object);
    return { ok: true, memory: { sent: view(s.object), seen: view(answer) } };
  } catch (err) {
    if (err instanceof StoreUnavailableError) throw err;
    if (s.op === 'create' && err instanceof KubeConflictError) {
      // taken since the read: by another run of ours (the next run adopts it), or by something else
      const there = await kube.get(API_DEFINITION, e.namespace, s.name).catch(() => null);
      if (there && labelledFor(there, e.name)) return { ok: true };
      return { ok: false, taken: true, error: takenError(e, [s.name]) };
    }
    return { ok: false, error: err };
  }
}
