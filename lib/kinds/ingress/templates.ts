/**
 * Template ApiDefinitions (labelled `template: "true"`, Tyk Operator's Ingress templates), after
 * the ApiDefinition phase looked at them (the engine's decision never sends one to a gateway):
 *
 * - a live template gets Tyk Operator's finalizer, `finalizers.tyk.io/template`;
 * - a template being deleted keeps it while a live Ingress of our class in its namespace names
 *   it (`tyk.io/template`): reported WAIT, with a Warning DeletionHeld naming the Ingresses; the
 *   Ingresses are listed afresh, and a failed listing holds too. When none names it, the
 *   finalizer goes and the deletion completes;
 * - an ApiDefinition that carries the finalizer but is no template any more loses it.
 *
 * Only templates we keep no record of (never synced as APIs) are handled. Returns the report of
 * each template whose deletion was decided, to replace the phase's `skipped`. A failed write is
 * logged and reported; nothing else fails. Writes nothing in a dry run.
 */

import type { Done } from '../../engine/finalize.js';
import type { RunContext } from '../../engine/run-context.js';
import type { ObjectReport } from '../../engine/types.js';
import type { KubeObject } from '../../kube/types.js';
import { describeError, errorCode, StoreUnavailableError } from '../../platform/errors.js';
import { API_DEFINITION } from '../api-definition/kind.js';
import { type IngressSettings, isTemplate, TEMPLATE_ANNOTATION } from './apis.js';
import { INGRESS, TEMPLATE_FINALIZER } from './kind.js';
import { namesTemplate } from './load.js';

export async function settleTemplates(ctx: RunContext, apis: readonly Done[], settings: IngressSettings): Promise<ObjectReport[]> {
  if (ctx.request.dryRun === true) return [];
  const out: ObjectReport[] = [];
  for (const d of apis) {
    const obj = d.loaded.obj;
    if (!obj || d.loaded.record) continue;
    const has = (obj.metadata.finalizers ?? []).includes(TEMPLATE_FINALIZER);
    const deleting = !!obj.metadata.deletionTimestamp;
    try {
      if (!isTemplate(obj)) {
        if (has) await ctx.deps.kube.removeFinalizer(API_DEFINITION, obj, TEMPLATE_FINALIZER);
      } else if (!deleting) {
        if (!has) await ctx.deps.kube.addFinalizer(API_DEFINITION, obj, TEMPLATE_FINALIZER);
      } else if (has) {
        out.push(await deletion(ctx, d, obj, settings));
      }
    } catch (err) {
      if (err instanceof StoreUnavailableError) throw err;
      ctx.log.warn({ key: d.loaded.key, err: describeError(err), code: errorCode(err) }, 'template finalizer not changed');
      if (deleting && has) out.push({ ...base(d), action: 'DELETE', reason: 'deleted in cluster', result: 'failed', error: describeError(err), code: errorCode(err) });
    }
  }
  return out;
}

function base(d: Done): Pick<ObjectReport, 'kind' | 'namespace' | 'name' | 'id'> {
  return { kind: API_DEFINITION.kind, namespace: d.loaded.ref.namespace, name: d.loaded.ref.name, id: '' };
}

async function deletion(ctx: RunContext, d: Done, obj: KubeObject, settings: IngressSettings): Promise<ObjectReport> {
  const { namespace, name } = d.loaded.ref;
  let why: string | undefined;
  try {
    const users = (await ctx.deps.kube.list(INGRESS, namespace)).filter((i) => namesTemplate(i, name, settings)).map((i) => `${namespace}/${i.metadata.name}`);
    if (users.length > 0) why = `deletion held: still named by Ingress ${users.join(', ')} (${TEMPLATE_ANNOTATION})`;
  } catch (err) {
    why = `deletion held: the Ingresses that may name it could not be listed (${describeError(err)})`;
  }
  if (why === undefined) {
    await ctx.deps.kube.removeFinalizer(API_DEFINITION, obj, TEMPLATE_FINALIZER);
    return { ...base(d), action: 'DELETE', reason: 'deleted in cluster', result: 'deleted' };
  }
  await ctx.deps.kube.recordEvent(obj, 'Warning', 'DeletionHeld', why).catch((err: unknown) => ctx.log.warn({ key: d.loaded.key, err: describeError(err) }, 'event not recorded'));
  return { ...base(d), action: 'WAIT', reason: 'referenced by ingresses', result: 'waiting', error: why };
}
