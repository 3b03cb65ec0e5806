/**
 * A gateway's certificate store as the engine keeps it (lib/engine/certificates.ts), called
 * as a run calls it, over the fast world's store and gateways given an in-memory certificate
 * store (test/memory/certificates.ts).
 *
 * Uploads: a certificate this upload created is ours (the store's `owned`), one the store had
 * already is used and never ours; each certificate goes once per run and gateway (`sent`
 * counts the uploads a call starts); the gateway's org is named; a certificate filed under
 * another id than the API was built with fails with the ConfigError naming TYK_ORG; a gateway
 * without a store refuses at once.
 *
 * Collection: of the candidates ("Certificate/<gateway>/<id>" uses, the gateway's name may
 * hold '/'), and with `sweep` every certificate we own on those gateways, only what we own and
 * no record uses is removed, in the gateway's org, then disowned; a gateway that cannot be
 * resolved is logged and left, one without a store is left, a failure (a removal, no write
 * slot) is logged and never thrown; the answer is how many removals were sent.
 */
import t from 'tap';
import { certificateUse, collectCertificates, SecretText, uploadCertificates } from '../../lib/engine/certificates.js';
import { RunContext } from '../../lib/engine/run-context.js';
import type { GatewayTarget } from '../../lib/gateway/targets.js';
import { ConfigError, GatewayUnsupportedError } from '../../lib/platform/errors.js';
import { operatorContext, recordFor } from '../fixtures/builders.js';
import { certId, PEM } from '../fixtures/pem.js';
import { MemoryCertificates } from '../memory/certificates.js';
import { DEFAULT_DASHBOARD_ORG } from '../memory/gateway.js';
import { FastWorld, type FastWorldOptions } from './world.js';

const SERVER = certId(PEM.server);
const CLIENT = certId(PEM.client);
const STRANGER = certId(PEM.stranger);
const CTX = 'context:default/ctx';

function world(options: FastWorldOptions = {}): { w: FastWorld; certs: MemoryCertificates } {
  const certs = new MemoryCertificates();
  return { w: new FastWorld({ certificates: certs, ...options }), certs };
}

/** A new run's context. */
function runOf(w: FastWorld): RunContext {
  return new RunContext(w.deps, { trigger: 'schedule', scope: { all: true } });
}

async function target(ctx: RunContext, name = 'default'): Promise<GatewayTarget> {
  const found = await ctx.resolver.byName(name);
  if ('error' in found) throw new Error(found.error);
  return found;
}

function upload(pem: string, id = certId(pem)) {
  return { id, pem: new SecretText(pem), secret: 'default/tls' };
}

/** A certificate in `certs`, ours on `gateway` when `owned`, named by the record of ApiDefinition `usedBy` when given. */
async function seed(w: FastWorld, certs: MemoryCertificates, pem: string, how: { owned: boolean; usedBy?: string; gateway?: string; org?: string }): Promise<string> {
  const gateway = how.gateway ?? 'default';
  const id = certId(pem, how.org);
  certs.certs.set(id, pem);
  if (how.owned) await w.memoryStore.own(gateway, [id]);
  if (how.usedBy) await w.putRecord({ ...recordFor('ApiDefinition', how.usedBy).build(), uses: [certificateUse(gateway, id)] });
  return id;
}

function warnings(w: FastWorld, msg: RegExp) {
  return w.log.entries.filter((e) => e.level === 'warn' && msg.test(String(e.msg)));
}

t.test('an upload the store did not have is ours; one it had already is used, never ours', async (t) => {
  const { w, certs } = world();
  await seed(w, certs, PEM.client, { owned: false });
  const ctx = runOf(w);
  const { sent, done } = uploadCertificates(ctx, await target(ctx), [upload(PEM.server), upload(PEM.client)]);
  t.equal(sent, 2);
  await done;
  t.same([...certs.certs.keys()].sort(), [SERVER, CLIENT].sort(), 'both in the store');
  t.same(await w.store.owned('default'), [SERVER], 'only the one this upload created is ours to remove later');
});

t.test('each certificate once per run and gateway: sent counts the uploads this call starts', async (t) => {
  const { w, certs } = world();
  const ctx = runOf(w);
  const gw = await target(ctx);
  const first = uploadCertificates(ctx, gw, [upload(PEM.server)]);
  const second = uploadCertificates(ctx, gw, [upload(PEM.server), upload(PEM.client)]);
  t.equal(first.sent, 1);
  t.equal(second.sent, 1, 'the server certificate is already under way');
  await Promise.all([first.done, second.done]);
  t.equal(certs.uploads, 2, 'one upload each');
  const next = runOf(w);
  const again = uploadCertificates(next, await target(next), [upload(PEM.server)]);
  t.equal(again.sent, 1, 'the next run uploads it again');
  await again.done;
  t.same(await w.store.owned('default'), [CLIENT, SERVER].sort(), 'still ours: the store had it, and the first upload created it');
});

t.test("the gateway's org is named: the certificate is filed under the id the API was built with", async (t) => {
  const { w, certs } = world({ mode: 'pro' });
  const ctx = runOf(w);
  const gw = await target(ctx);
  t.equal(gw.orgId, DEFAULT_DASHBOARD_ORG);
  const id = certId(PEM.server, DEFAULT_DASHBOARD_ORG);
  const { done } = uploadCertificates(ctx, gw, [upload(PEM.server, id)]);
  await done;
  t.same(certs.orgs, [DEFAULT_DASHBOARD_ORG]);
  t.ok(certs.certs.has(id));
  t.same(await w.store.owned('default'), [id]);
});

t.test('filed under another id than the API was built with: the ConfigError naming TYK_ORG', async (t) => {
  const { w, certs } = world();
  const ctx = runOf(w);
  const { done } = uploadCertificates(ctx, await target(ctx), [upload(PEM.server, certId(PEM.server, 'another-org'))]);
  const err = await done.then(
    () => undefined,
    (e: unknown) => e,
  );
  t.type(err, ConfigError);
  t.same(
    (err as ConfigError).problems.map((p) => p.setting),
    ['TYK_ORG'],
  );
  t.match((err as ConfigError).message, /Secret default\/tls/, 'naming the Secret');
  t.ok(certs.certs.has(SERVER), 'the store has it under its own id');
  t.same(await w.store.owned('default'), [SERVER], 'and it is ours, so a later collection can remove it');
});

t.test('a gateway without a certificate store refuses at once', async (t) => {
  const w = new FastWorld();
  const ctx = runOf(w);
  const gw = await target(ctx);
  t.throws(() => uploadCertificates(ctx, gw, [upload(PEM.server)]), GatewayUnsupportedError);
});

t.test('collection removes only what we own and no record uses, then disowns it; it answers the removals sent', async (t) => {
  const { w, certs } = world();
  await seed(w, certs, PEM.server, { owned: true });
  await seed(w, certs, PEM.client, { owned: true, usedBy: 'a' });
  await seed(w, certs, PEM.stranger, { owned: false });
  const candidates = [certificateUse('default', SERVER), certificateUse('default', CLIENT), certificateUse('default', STRANGER), 'Secret/default/tls'];
  t.equal(await collectCertificates(runOf(w), candidates), 1);
  t.same([...certs.certs.keys()].sort(), [CLIENT, STRANGER].sort(), 'the one in use and the one we did not upload stay');
  t.same(certs.removals, [{ id: SERVER, orgId: '' }]);
  t.same(await w.store.owned('default'), [CLIENT], 'the removed one is no longer ours');

  t.equal(await collectCertificates(runOf(w), candidates), 0, 'the next collection finds nothing to remove');
  t.equal(certs.removals.length, 1);
});

t.test("every unused certificate of ours among the candidates is removed, in the gateway's org", async (t) => {
  const { w, certs } = world({ mode: 'pro' });
  const org = DEFAULT_DASHBOARD_ORG;
  const a = await seed(w, certs, PEM.server, { owned: true, org });
  const b = await seed(w, certs, PEM.client, { owned: true, org });
  t.equal(await collectCertificates(runOf(w), [certificateUse('default', a), certificateUse('default', b)]), 2);
  t.same(
    certs.removals,
    [a, b].map((id) => ({ id, orgId: org })),
  );
  t.same(await w.store.owned('default'), []);
});

t.test('a sweep adds every certificate we own on the gateways it names', async (t) => {
  const { w, certs } = world();
  await seed(w, certs, PEM.server, { owned: true });
  await seed(w, certs, PEM.client, { owned: true, usedBy: 'a' });
  t.equal(await collectCertificates(runOf(w), []), 0, 'no candidate, no sweep: nothing');
  t.equal(certs.certs.size, 2);
  t.equal(await collectCertificates(runOf(w), [], ['default']), 1);
  t.same([...certs.certs.keys()], [CLIENT], 'the one in use stays');
});

t.test("an OperatorContext's gateway (a name holding '/'): its own certificates are collected", async (t) => {
  const { w, certs } = world();
  const theirs = new MemoryCertificates();
  w.addGateway('http://gw2:8080', { secret: 's2', certificates: theirs });
  w.apply(operatorContext('ctx').ce('http://gw2:8080', 's2').build());
  await seed(w, theirs, PEM.server, { owned: true, gateway: CTX });
  await seed(w, certs, PEM.server, { owned: true, usedBy: 'a' });
  t.equal(await collectCertificates(runOf(w), [certificateUse(CTX, SERVER)]), 1);
  t.equal(theirs.certs.size, 0, "removed from the context's gateway");
  t.same(await w.store.owned(CTX), []);
  t.ok(certs.certs.has(SERVER), 'the default gateway keeps its own');
  t.same(await w.store.owned('default'), [SERVER]);
});

t.test('a gateway that cannot be resolved: logged, nothing removed, still ours', async (t) => {
  const { w } = world();
  const missing = 'context:default/gone';
  await w.memoryStore.own(missing, [SERVER]);
  t.equal(await collectCertificates(runOf(w), [certificateUse(missing, SERVER)]), 0);
  t.match(warnings(w, /gateway unavailable/), [{ gateway: missing }]);
  t.same(await w.store.owned(missing), [SERVER]);
});

t.test('nothing unused on a gateway: it is not even resolved (no warning for one that cannot be)', async (t) => {
  const { w } = world();
  const missing = 'context:default/gone';
  await w.memoryStore.own(missing, [SERVER]);
  await w.putRecord({ ...recordFor('ApiDefinition', 'a').build(), uses: [certificateUse(missing, SERVER)] });
  t.equal(await collectCertificates(runOf(w), [certificateUse(missing, SERVER), certificateUse(missing, CLIENT)]), 0);
  t.same(warnings(w, /./), [], 'in use, or not ours: nothing to do');
  t.same(await w.store.owned(missing), [SERVER]);
});

t.test('a gateway without a certificate store: nothing removed', async (t) => {
  const w = new FastWorld();
  await w.memoryStore.own('default', [SERVER]);
  t.equal(await collectCertificates(runOf(w), [certificateUse('default', SERVER)], ['default']), 0);
  t.same(await w.store.owned('default'), [SERVER]);
});

t.test('a failed removal is logged, never thrown, and counted; what it did not remove stays ours', async (t) => {
  const { w, certs } = world();
  await seed(w, certs, PEM.server, { owned: true });
  certs.failRemovals = 1;
  t.equal(await collectCertificates(runOf(w), [certificateUse('default', SERVER)]), 1, 'the removal was sent');
  t.equal(warnings(w, /certificates not collected/).length, 1);
  t.ok(certs.certs.has(SERVER));
  t.same(await w.store.owned('default'), [SERVER], 'the next collection tries again');
  t.equal(await collectCertificates(runOf(w), [certificateUse('default', SERVER)]), 1);
  t.equal(certs.certs.size, 0);
});

t.test('each removal takes one of the gateway write slots: none free within the wait, nothing removed', async (t) => {
  const { w, certs } = world({ settings: { gatewayWrites: { max: 1, slotTtlMs: 60_000, waitMs: 1_000 } } });
  await seed(w, certs, PEM.server, { owned: true });
  t.ok(await w.memoryStore.acquireSlot(w.gateway.name, 'another-run', 1, 60_000));
  t.equal(await collectCertificates(runOf(w), [certificateUse('default', SERVER)]), 1);
  t.match(warnings(w, /certificates not collected/), [{ code: 'GATEWAY_UNAVAILABLE' }]);
  t.same(certs.removals, [], 'no removal reached the gateway');
  t.same(await w.store.owned('default'), [SERVER]);
});
