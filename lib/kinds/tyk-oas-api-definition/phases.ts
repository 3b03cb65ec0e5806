/**
 * The TykOasApiDefinition phase. A versioned API that waited for a version this phase synced
 * (created together) gets a second pass at once, seeing its versions' fresh records, rather
 * than waiting for the next run; its first pass's report is replaced by the second's.
 */

import { sumCalls } from '../../engine/calls.js';
import { holdOf } from '../../engine/decide.js';
import type { Phase, RegistryEntry } from '../../engine/kind.js';
import { owned, runKind, scopeFor } from '../../engine/phase.js';
import { apiKey } from '../shared/api-links.js';
import { apiRefOf } from '../shared/api-resolver.js';
import { TYK_OAS_API_DEFINITION } from './kind.js';
import { versionRefsOf } from './payload.js';

export const TYK_OAS_PHASE: Phase = {
  name: 'tykoasapidefinitions',
  async run(ctx) {
    const kind = TYK_OAS_API_DEFINITION;
    const first = await runKind(ctx, kind, scopeFor(ctx.request.scope, kind, owned(ctx, ctx.followed(kind))));
    ctx.setOutcomes(kind, first.done);
    const synced = new Set(first.done.filter((d) => d.record?.result === 'synced' || d.record?.result === 'diverged').map((d) => apiKey(apiRefOf(d.loaded.ref))));
    const again =
      ctx.request.dryRun === true ? [] : first.done.filter((d) => holdOf(d.decision) === 'dependency' && d.loaded.obj && versionRefsOf(d.loaded.obj).some((v) => synced.has(apiKey(v.ref))));
    if (again.length === 0) return first;
    const second = await runKind(ctx, kind, { refs: again.map((d) => d.loaded.ref) });
    const keys = new Set(second.done.map((d) => d.loaded.key));
    ctx.setOutcomes(kind, [...first.done.filter((d) => !keys.has(d.loaded.key)), ...second.done]);
    // the second pass's report of an object takes the place of the first's
    return { reports: [...first.reports, ...second.reports], calls: sumCalls([first.calls, second.calls]) };
  },
};

export const TYK_OAS_ENTRY: RegistryEntry = { managed: [TYK_OAS_API_DEFINITION], phases: [TYK_OAS_PHASE] };
