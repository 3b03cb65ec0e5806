/**
 * Certificates in a gateway's store, for the objects whose desired state names them (a kind's
 * build says which: `Built.certificates`), and the text that carries a private key (SecretText).
 *
 * `uploadCertificates` puts an API's certificates into its gateway's store before the API is
 * written: once per certificate and gateway in a run (two APIs sharing a Secret cost one
 * upload), each in one of the gateway's write slots (the pass's `leases`, when it has them). A certificate this upload created is
 * remembered as ours (Store.own); one the store had already (uploaded by Tyk Operator, by
 * hand, or by us before a lost answer) is used, never claimed.
 *
 * `collectCertificates` removes from a gateway the certificates we uploaded that no record
 * uses any more (the records' `uses` index): called once the APIs that used them were
 * written elsewhere or deleted and their records saved, so no API on the gateway still
 * names one. A certificate we did not upload is never removed.
 * Throws (uploads): GatewayUnsupportedError when the gateway has no certificate store we can
 * reach; GatewayApiError when the store files a certificate under another id than the one the
 * API was built with (TYK_ORG is not the org of the gateway's key); the store's own errors.
 * Collection never throws: a failure is logged and the next collection tries again.
 */

import type { GatewayTarget } from '../gateway/targets.js';
import { ConfigError, describeError, errorCode, GatewayUnsupportedError } from '../platform/errors.js';
import { CERTIFICATE_USE_PREFIX, type CertificateUpload, certificateUse } from './certificate-text.js';
import type { RunContext } from './run-context.js';
import { type SlotLeases, withWriteSlot } from './write-slots.js';

export { CERTIFICATE_USE_PREFIX, type CertificateUpload, certificateUse, SecretText } from './certificate-text.js';

/**
 * Uploads `uploads` to `target`'s certificate store, each once per run: `sent` (known at once)
 * is how many uploads this call sends, `done` settles when every upload it needs has (a
 * failure rejects it). Throws at once when the gateway has no certificate store.
 */
export function uploadCertificates(ctx: RunContext, target: GatewayTarget, uploads: readonly CertificateUpload[], leases?: SlotLeases): { readonly sent: number; readonly done: Promise<void> } {
  const store = target.gateway.certificates;
  if (!store) throw new GatewayUnsupportedError(501, `gateway ${target.name} has no certificate store this service can reach: certificates from Secrets need one`);
  const each = uploads.map((u) =>
    ctx.once(`upload\u0000${target.name}\u0000${u.id}`, async () => {
      const done = await withWriteSlot(ctx, target.gateway, () => store.uploadCertificate(u.pem.reveal(), target.orgId ?? ''), leases);
      if (done.created) await ctx.deps.store.own(target.name, [done.id]);
      if (done.id !== u.id) {
        throw new ConfigError([{ setting: 'TYK_ORG', message: `the gateway filed the certificate of Secret ${u.secret} as ${done.id}, not ${u.id}: set it to the org of the gateway's key` }]);
      }
    }),
  );
  return { sent: each.filter((e) => e.started).length, done: Promise.all(each.map((e) => e.done)).then(() => undefined) };
}

/**
 * Removes the certificates in `candidates` (record uses, "Certificate/<gateway>/<id>") that
 * we own and no record uses; with `sweep`, every owned certificate of `gateways` is a candidate.
 * Answers how many removals it sent.
 */
export async function collectCertificates(ctx: RunContext, candidates: Iterable<string>, sweep: readonly string[] = []): Promise<number> {
  const byGateway = new Map<string, Set<string>>();
  const add = (gateway: string, id: string) => byGateway.set(gateway, (byGateway.get(gateway) ?? new Set<string>()).add(id));
  for (const use of candidates) {
    if (!use.startsWith(CERTIFICATE_USE_PREFIX)) continue;
    const rest = use.slice(CERTIFICATE_USE_PREFIX.length);
    const cut = rest.lastIndexOf('/');
    if (cut > 0) add(rest.slice(0, cut), rest.slice(cut + 1));
  }
  // removals sent, a failed one included
  const sent = { n: 0 };
  try {
    for (const gateway of sweep) for (const id of await ctx.deps.store.owned(gateway)) add(gateway, id);
    for (const [gateway, ids] of byGateway) await collectOn(ctx, gateway, [...ids], sent);
  } catch (err) {
    ctx.log.warn({ err: describeError(err), code: errorCode(err) }, 'certificates not collected; the next run tries again');
  }
  return sent.n;
}

async function collectOn(ctx: RunContext, gateway: string, ids: readonly string[], sent: { n: number }): Promise<void> {
  const owned = new Set(await ctx.deps.store.owned(gateway));
  const mine = ids.filter((id) => owned.has(id));
  const users = await ctx.deps.store.recordsUsing(mine.map((id) => certificateUse(gateway, id)));
  const unused = mine.filter((_, i) => (users[i] ?? []).length === 0);
  if (unused.length === 0) return;
  const target = await ctx.resolver.byName(gateway);
  if ('error' in target) {
    ctx.log.warn({ gateway, err: target.error }, 'certificates not collected: gateway unavailable');
    return;
  }
  const store = target.gateway.certificates;
  if (!store) return;
  for (const id of unused) {
    sent.n++;
    await withWriteSlot(ctx, target.gateway, () => store.removeCertificate(id, target.orgId ?? ''));
    await ctx.deps.store.disown(gateway, id);
    ctx.log.info({ gateway, certificate: id }, 'certificate removed: no API uses it');
  }
}
