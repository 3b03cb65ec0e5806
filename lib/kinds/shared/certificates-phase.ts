/**
 * After the API phases: certificates we uploaded that no record uses any more are removed
 * (lib/engine/certificates.ts collectCertificates): those the phases' APIs moved off, and on a
 * full run every one we own on the gateways they went to. Nothing in a dry run.
 */
import type { Done } from '../../engine/finalize.js';
import type { Phase, RegistryEntry } from '../../engine/kind.js';
import { API_DEFINITION } from '../api-definition/kind.js';
import { TYK_OAS_API_DEFINITION } from '../tyk-oas-api-definition/kind.js';

/** Uses the objects' records had before this run and have no more (a certificate an API moved off, or of an API deleted). */
function releasedUses(done: readonly Done[]): string[] {
  return done.flatMap((d) => {
    const now = new Set(d.record?.uses ?? []);
    return (d.loaded.record?.uses ?? []).filter((u) => !now.has(u));
  });
}

/** The gateways a full run's objects went to, and the default: where a sweep looks for certificates nobody uses. */
function gatewaysOf(done: readonly Done[]): string[] {
  return [...new Set(['default', ...done.flatMap((d) => [d.record?.gateway, d.loaded.record?.gateway]).filter((g): g is string => g !== undefined)])];
}

export const CERTIFICATE_SWEEP_PHASE: Phase = {
  name: 'certificate sweep',
  async run(ctx) {
    if (ctx.request.dryRun === true) return { reports: [] };
    const apis = [...ctx.outcomes(API_DEFINITION), ...ctx.outcomes(TYK_OAS_API_DEFINITION)];
    const released = releasedUses(apis);
    const sweep = ctx.request.scope.all ? gatewaysOf(apis) : [];
    // nothing to collect: the removals (lib/engine/certificates.ts) are not even loaded
    if (released.length === 0 && sweep.length === 0) return { reports: [] };
    const writes = await (await import('../../engine/certificates.js')).collectCertificates(ctx, released, sweep);
    return { reports: [], calls: { writes, reloads: 0 } };
  },
};

export const CERTIFICATE_SWEEP_ENTRY: RegistryEntry = { phases: [CERTIFICATE_SWEEP_PHASE] };
