/**
 * The SecurityPolicy phase, after the API phases: policies that reference an API the run looked
 * at follow it in (an API id change, or an API a policy was waiting for). Then APIs (both kinds)
 * whose set of referencing policies changed but that the API phases did not look at get their
 * `status.linked_by_policies` (ApiDefinition) or `status.linkedByPolicies` (TykOasApiDefinition)
 * brought up to date.
 */

import { mapLimit } from '../../engine/concurrency.js';
import type { Done } from '../../engine/finalize.js';
import { httpStatusOf } from '../../engine/finalize.js';
import type { Phase, RegistryEntry } from '../../engine/kind.js';
import { statusPatchFailedEvent } from '../../engine/outcome-events.js';
import { owned, runKindPhase } from '../../engine/phase.js';
import type { RunContext } from '../../engine/run-context.js';
import type { KubeObject, NamespacedName } from '../../kube/types.js';
import { describeError, errorCode } from '../../platform/errors.js';
import { API_DEFINITION } from '../api-definition/kind.js';
import { runPolicies } from '../shared/api-kind.js';
import { type ApiRef, accessRefs, apiKey, parseApiKey, referencingPolicies } from '../shared/api-links.js';
import { apiKindOf, apiRefOf } from '../shared/api-resolver.js';
import { TYK_OAS_API_DEFINITION } from '../tyk-oas-api-definition/kind.js';
import { SECURITY_POLICY } from './kind.js';

/** What the API phases of this run looked at. */
function apisOf(ctx: RunContext): Done[] {
  return [...ctx.outcomes(API_DEFINITION), ...ctx.outcomes(TYK_OAS_API_DEFINITION)];
}

/** Policies that reference an API the API phases looked at. */
function followersOf(apis: readonly Done[], policies: readonly KubeObject[] | undefined): NamespacedName[] {
  if (!policies || apis.length === 0) return [];
  const seen = new Set(apis.map((d) => apiKey(apiRefOf(d.loaded.ref))));
  return policies.filter((p) => accessRefs(p).some((r) => seen.has(apiKey(r)))).map((p) => ({ namespace: p.metadata.namespace ?? '', name: p.metadata.name }));
}

export const SECURITY_POLICY_PHASE: Phase = {
  name: 'securitypolicies',
  async run(ctx) {
    ctx.follow(SECURITY_POLICY, owned(ctx, followersOf(apisOf(ctx), await runPolicies(ctx))));
    return runKindPhase(ctx, SECURITY_POLICY);
  },
};

export const POLICY_LINKS_PHASE: Phase = {
  name: 'policy links',
  async run(ctx) {
    if (ctx.request.dryRun === true) return { reports: [] };
    await refreshLinks(ctx, ctx.outcomes(SECURITY_POLICY), new Set(apisOf(ctx).map((d) => apiKey(apiRefOf(d.loaded.ref)))), await runPolicies(ctx));
    return { reports: [] };
  },
};

export const SECURITY_POLICY_ENTRY: RegistryEntry = { managed: [SECURITY_POLICY], phases: [SECURITY_POLICY_PHASE, POLICY_LINKS_PHASE] };

async function refreshLinks(ctx: RunContext, policyDone: readonly Done[], done: ReadonlySet<string>, policies: readonly KubeObject[] | undefined): Promise<void> {
  if (!policies) return;
  const touched = new Map<string, ApiRef>();
  for (const d of policyDone) {
    for (const key of d.loaded.links ?? []) {
      const ref = parseApiKey(key);
      if (ref) touched.set(key, ref);
    }
    // the links of the record before this run: an API a policy no longer references is refreshed too
    for (const key of d.loaded.record?.links ?? []) {
      const ref = parseApiKey(key);
      if (ref) touched.set(key, ref);
    }
  }
  // a shard leaves the APIs of other shards to them: their API phase sets the field from every policy
  const todo = [...touched.entries()].filter(([key, r]) => !done.has(key) && ctx.owns(r.namespace, r.name)).map(([, r]) => r);
  await mapLimit(todo, ctx.settings.concurrency, async (ref) => {
    if (!ctx.watched(ref.namespace)) return;
    const kind = apiKindOf(ref);
    const field = kind === API_DEFINITION ? 'linked_by_policies' : 'linkedByPolicies';
    let api: KubeObject | null;
    try {
      api = await ctx.deps.kube.get(kind, ref.namespace, ref.name);
    } catch (err) {
      ctx.log.warn({ api: apiKey(ref), err: describeError(err) }, `could not update ${field}`);
      return;
    }
    if (!api?.status?.[kind.statusIdField]) return;
    const linked = referencingPolicies(ref, policies);
    const current = Array.isArray(api.status[field]) ? api.status[field] : [];
    if (JSON.stringify(current) === JSON.stringify(linked)) return;
    try {
      await ctx.deps.kube.patchStatus(kind, api, { [field]: linked.length > 0 ? linked : null });
    } catch (err) {
      const error = describeError(err);
      ctx.log.warn({ key: `${kind.kind}/${ref.namespace}/${ref.name}`, err: error, code: errorCode(err), status: httpStatusOf(err) }, 'status patch failed');
      const ev = statusPatchFailedEvent(error);
      await ctx.deps.kube.recordEvent(api, ev.type, ev.reason, ev.message).catch((e: unknown) => ctx.log.warn({ api: apiKey(ref), err: describeError(e) }, 'event not recorded'));
    }
  });
}
