/**
 * The developer portal (APIDescription, PortalAPICatalogue, PortalConfig) end to end through
 * HTTP, with real Redis, our real clients and the loopback fakes, in pro mode: created with the
 * ApiDefinition and SecurityPolicy they publish, edited (an APIDescription edit is one catalogue
 * write), drifted on the Dashboard (undone with one write), deleted (entries and documentation
 * removed, finalizers released); silence in a steady state; entries owned per resource, entries
 * not ours untouched; deletions held and refused reads; Tyk Operator's catalogue adopted; a fresh
 * organisation (Tyk Operator's portal sample published within two runs, whatever order it comes
 * in, the catalogue made before any documentation); and on
 * a Tyk Gateway, each portal kind Failed saying the portal needs a Tyk Dashboard.
 */
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';
import type { RunReport } from '../../lib/engine/types.js';
import type { KubeObject } from '../../lib/kube/types.js';
import type { FakeTykDashboard } from '../fakes/tyk-dashboard.js';
import {
  apiDefinition,
  apiDescription,
  CATALOGUE_FINALIZER,
  DESCRIPTION_FINALIZER,
  defaultIdOf,
  PORTAL_CONFIG_FINALIZER,
  portalCatalogue,
  portalConfig,
  securityPolicy,
} from '../fixtures/builders.js';
import { reported, startWorld, type World, worldFor } from '../harness/world.js';

const DESCRIPTIONS = 'APIDescription';
const CATALOGUES = 'PortalAPICatalogue';
const CONFIGS = 'PortalConfig';
const SPEC_URL = 'https://httpbin.org/spec.json';

type ProWorld = World & { dash: FakeTykDashboard };

async function proWorld(t: { teardown(fn: () => unknown): void }): Promise<ProWorld> {
  const w = await startWorld({ mode: 'pro' });
  t.teardown(() => w.close());
  return Object.assign(w, { dash: w.dashboard as FakeTykDashboard });
}

/** The Dashboard _id of our policy `name` (its `id` field is base64url of default/name). */
function midOf(d: FakeTykDashboard, name: string): string {
  for (const [mid, p] of d.policies()) if (p.id === defaultIdOf(name)) return mid;
  throw new Error(`no policy ${name} on the Dashboard`);
}

type Entry = Record<string, unknown>;

function entries(d: FakeTykDashboard): Entry[] {
  return ((d.catalogue()?.apis ?? []) as Entry[]).map((e) => e);
}

function entryOf(d: FakeTykDashboard, policyId: string): Entry | undefined {
  return entries(d).find((e) => e.policy_id === policyId);
}

/** The API, the policy protecting it, and what the portal publishes of it (Tyk Operator's sample, in test form). */
async function publish(w: World, name = 'sample', policy = 'protect-api'): Promise<void> {
  await w.create(
    apiDefinition(`${name}-api`)
      .patchSpec({ use_keyless: false, use_standard_auth: true, auth_configs: { authToken: { auth_header_name: 'Authorization' } } })
      .build(),
  );
  await w.create(securityPolicy(policy).granting(`${name}-api`).build());
  await w.create(apiDescription(name).withPolicy(policy).withDocs(SPEC_URL).build());
}

/** Catalogue writes, documentation uploads and deletes, and status patches, since the last reset. */
function counts(w: ProWorld): { catalogue: number; docsUp: number; docsDown: number; config: number; statuses: number } {
  return {
    catalogue: w.dash.count('PUT', '/api/portal/catalogue') + w.dash.count('POST', '/api/portal/catalogue'),
    docsUp: w.dash.count('POST', '/api/portal/documentation'),
    docsDown: w.dash.count('DELETE', /^\/api\/portal\/documentation\//),
    config: w.dash.count('PUT', '/api/portal/configuration') + w.dash.count('POST', '/api/portal/configuration'),
    statuses: w.statusPatches(),
  };
}

function reset(w: ProWorld): void {
  w.dash.resetCalls();
  w.resetCounts();
}

async function tenQuietTicks(t: Test, w: ProWorld, what: string): Promise<void> {
  reset(w);
  for (let i = 0; i < 10; i++) await w.tick();
  t.equal(w.dash.portalWrites() + w.dash.writes(), 0, `${what}: no Dashboard write in ten ticks`);
  t.equal(w.statusPatches(), 0, `${what}: no status patch in ten ticks`);
}

const results = (report: RunReport, kinds: string[]) => report.objects.filter((o) => kinds.includes(o.kind)).map((o) => `${o.kind}/${o.name}:${o.action}:${o.result}`);

t.test('the portal kinds: created, an APIDescription edit, drift, deletion; one write per change, silent in between', async (t) => {
  const w = await proWorld(t);
  await publish(w);
  await w.create(portalCatalogue('catalogue').withDescriptions('sample').build());
  await w.create(
    portalConfig('portal')
      .patchSpec({ require_key_approval: true, signup_fields: ['company'] })
      .build(),
  );

  const first = await w.tick();
  t.same(first.errors, [], 'no run-level error');
  t.strictSame(
    results(first, [DESCRIPTIONS, CATALOGUES, CONFIGS]),
    ['APIDescription/sample:CREATE:synced', 'PortalAPICatalogue/catalogue:CREATE:synced', 'PortalConfig/portal:CREATE:synced'],
    'synced in the run that synced the policy they publish',
  );
  const mid = midOf(w.dash, 'protect-api');
  const entry = entryOf(w.dash, mid);
  t.match(entry, { name: 'sample API', show: true, auth_type: 'keyless', version: 'v2', policy_id: mid }, 'the entry publishes the policy by its Dashboard _id');
  const docs = w.dash.documentation();
  t.equal(docs.size, 1, 'one document uploaded');
  t.strictSame(docs.get(String(entry?.documentation)), { api_id: mid, doc_type: 'swagger_custom_url', documentation: SPEC_URL }, 'the entry points at its documentation');
  const catalogueId = w.dash.catalogue()?.id;
  const cat = await w.get('catalogue', 'default', CATALOGUES);
  t.match(cat?.status, { id: catalogueId, latestTransaction: { status: 'Successful' } }, "status.id is the catalogue's Dashboard id");
  t.ok(cat?.metadata.finalizers?.includes(CATALOGUE_FINALIZER), "Tyk Operator's catalogue finalizer");
  t.ok((await w.get('sample', 'default', DESCRIPTIONS))?.metadata.finalizers?.includes(DESCRIPTION_FINALIZER), "Tyk Operator's description finalizer");
  const conf = await w.get('portal', 'default', CONFIGS);
  t.match(w.dash.configuration(), { require_key_approval: true, signup_fields: ['company'] }, 'the configuration is on the Dashboard');
  t.match(conf?.status, { id: w.dash.configuration()?.id, latestTransaction: { status: 'Successful' } });
  t.ok(conf?.metadata.finalizers?.includes(PORTAL_CONFIG_FINALIZER), "Tyk Operator's configuration finalizer");
  t.match((await w.get('sample', 'default', DESCRIPTIONS))?.status, {
    latestTransaction: { status: 'Successful' },
    conditions: [
      { type: 'Ready', status: 'True' },
      { type: 'Synced', status: 'True' },
    ],
  });
  await tenQuietTicks(t, w, 'after the first sync');

  // an APIDescription edit, announced by a watch event: the catalogue built from it follows, one write
  const edited = await w.updateSpec('sample', (s) => ({ ...s, long_description: 'Echoes what you send.' }), 'default', DESCRIPTIONS);
  reset(w);
  const res = await w.watch({ type: 'MODIFIED', object: edited });
  t.equal(res.statusCode, 200);
  t.strictSame(
    results(res.body.report as RunReport, [DESCRIPTIONS, CATALOGUES, CONFIGS]),
    ['APIDescription/sample:NOOP:unchanged', 'PortalAPICatalogue/catalogue:UPDATE:synced'],
    'the event about the description reaches the catalogue listing it, in the same run',
  );
  t.strictSame(counts(w), { catalogue: 1, docsUp: 1, docsDown: 1, config: 0, statuses: 1 }, 'one catalogue write (its documentation sent again, the old one deleted)');
  t.match((await w.get('sample', 'default', DESCRIPTIONS))?.status, { observedGeneration: 2 }, "the one status patch: the description's conditions describe its new generation");
  t.match(entryOf(w.dash, mid), { long_description: 'Echoes what you send.' });
  t.equal(w.dash.documentation().size, 1, 'one document still');
  await tenQuietTicks(t, w, 'after the edit');

  // edited on the Dashboard behind our back, then removed: each undone with one write
  w.dash.editCatalogue((c) => {
    (c.apis as Entry[])[0]!.show = false;
  });
  reset(w);
  t.match(reported(await w.tick(), 'catalogue', CATALOGUES), { action: 'UPDATE', reason: 'drifted on gateway', result: 'synced' });
  t.equal(counts(w).catalogue, 1, 'one write undoes the edit');
  t.match(entryOf(w.dash, mid), { show: true });
  const orphan = String(entryOf(w.dash, mid)?.documentation);
  t.ok(w.dash.removeCatalogueEntry(mid));
  reset(w);
  t.match(reported(await w.tick(), 'catalogue', CATALOGUES), { action: 'CREATE', reason: 'missing on gateway', result: 'synced' });
  t.equal(counts(w).catalogue, 1, 'one write puts the entry back');
  t.match(entryOf(w.dash, mid), { policy_id: mid, name: 'sample API' });
  t.ok(w.dash.documentation().has(orphan), 'the documentation of an entry removed behind our back is not ours to find (the API cannot list it): it stays');
  w.dash.editConfiguration((c) => {
    c.require_key_approval = false;
  });
  reset(w);
  t.match(reported(await w.tick(), 'portal', CONFIGS), { action: 'UPDATE', reason: 'drifted on gateway', result: 'synced' });
  t.strictSame(counts(w), { catalogue: 0, docsUp: 0, docsDown: 0, config: 1, statuses: 0 }, 'one write undoes the configuration edit');
  t.match(w.dash.configuration(), { require_key_approval: true });
  await tenQuietTicks(t, w, 'after the drift');

  // deleted: the entry and its documentation go, the finalizers with them; the configuration stays (no DELETE for it)
  const published = String(entryOf(w.dash, mid)?.documentation);
  await w.delete('catalogue', 'default', CATALOGUES);
  await w.delete('sample', 'default', DESCRIPTIONS);
  await w.delete('portal', 'default', CONFIGS);
  reset(w);
  const gone = await w.tick();
  t.match(reported(gone, 'catalogue', CATALOGUES), { action: 'DELETE', result: 'deleted' });
  t.match(reported(gone, 'portal', CONFIGS), { action: 'DELETE', result: 'deleted' });
  t.strictSame(counts(w), { catalogue: 1, docsUp: 0, docsDown: 1, config: 0, statuses: 0 }, 'one catalogue write removes the entry, one delete its documentation');
  t.strictSame(entries(w.dash), [], 'the entry is gone');
  t.notOk(w.dash.documentation().has(published), 'and its documentation');
  t.match(reported(gone, 'sample', DESCRIPTIONS), { action: 'DELETE', result: 'deleted' }, 'a catalogue being deleted holds no description');
  t.equal(await w.get('catalogue', 'default', CATALOGUES), undefined, 'the catalogue resource is gone (finalizer released)');
  t.equal(await w.get('sample', 'default', DESCRIPTIONS), undefined, 'the description resource is gone');
  t.equal(await w.get('portal', 'default', CONFIGS), undefined, 'the configuration resource is gone');
  t.ok(w.dash.configuration(), 'the Dashboard keeps its portal configuration');
  await tenQuietTicks(t, w, 'after the deletions');
});

/**
 * Tyk Operator's portal sample (samples/portal/apidescription.yaml) in test form: the protected
 * API, the policy, the APIDescription (shown, keyless, documentation by URL), an empty
 * PortalConfig and the PortalAPICatalogue listing the description.
 */
const SAMPLE = {
  api: () =>
    apiDefinition('httpbin')
      .patchSpec({ name: 'httpbin protected', use_keyless: false, use_standard_auth: true, auth_configs: { authToken: { auth_header_name: 'Authorization' } } })
      .build(),
  policy: () => securityPolicy('protect-api').granting('httpbin').build(),
  description: () => apiDescription('sample-portal-api').patchSpec({ name: 'sample portal config' }).withPolicy('protect-api').withDocs(SPEC_URL).build(),
  config: () => portalConfig('sample-portal-config').build(),
  catalogue: () => portalCatalogue('sample-portal-api').withDescriptions('sample-portal-api').build(),
};

/** Runs ticks until the sample's catalogue entry is published (at most `runs`); how many it took. */
async function ticksUntilPublished(w: ProWorld, runs: number): Promise<number> {
  for (let i = 1; i <= runs; i++) {
    const report = await w.tick();
    const cat = report.objects.find((o) => o.kind === CATALOGUES && o.name === 'sample-portal-api');
    if (cat?.result === 'synced' || cat?.result === 'unchanged') return i;
  }
  return Number.POSITIVE_INFINITY;
}

/** The sample's entry is on the Dashboard as the APIDescription says, with its documentation, and its status says so. */
async function samplePublished(t: Test, w: ProWorld, what: string): Promise<void> {
  const mid = midOf(w.dash, 'protect-api');
  const entry = entryOf(w.dash, mid);
  t.match(entry, { name: 'sample portal config', show: true, auth_type: 'keyless', policy_id: mid }, `${what}: the entry publishes the policy by its Dashboard _id`);
  t.strictSame(w.dash.documentation().get(String(entry?.documentation)), { api_id: mid, doc_type: 'swagger_custom_url', documentation: SPEC_URL }, `${what}: its documentation attached`);
  t.match((await w.get('sample-portal-api', 'default', CATALOGUES))?.status, { id: w.dash.catalogue()?.id, latestTransaction: { status: 'Successful' } }, `${what}: the catalogue's status`);
  t.ok(w.dash.configuration(), `${what}: the portal is configured`);
  const refusedUploads = w.dash.calls.filter((c) => c.method === 'POST' && c.path === '/api/portal/documentation' && c.status === 403);
  t.equal(refusedUploads.length, 0, `${what}: no documentation was sent before the catalogue existed`);
}

for (const catalogueAnswer of ['object', 'list'] as const) {
  t.test(
    `a fresh Dashboard organisation (catalogue answered as ${catalogueAnswer === 'list' ? 'a list' : 'one object'}): the portal sample applied at once is published within two runs, then silent`,
    async (t) => {
      const w = await startWorld({ mode: 'pro', dashboard: { catalogueAnswer } });
      t.teardown(() => w.close());
      const pw = Object.assign(w, { dash: w.dashboard as FakeTykDashboard });
      t.equal(pw.dash.catalogue(), undefined, 'the organisation has no catalogue');
      for (const obj of [SAMPLE.api(), SAMPLE.policy(), SAMPLE.description(), SAMPLE.config(), SAMPLE.catalogue()]) await pw.create(obj);
      t.ok((await ticksUntilPublished(pw, 2)) <= 2, 'published within two runs');
      await samplePublished(t, pw, 'applied at once');
      await tenQuietTicks(t, pw, 'published');
    },
  );
}

t.test('a fresh Dashboard organisation: the APIDescription first, the catalogue later; the catalogue deleted and created again', async (t) => {
  const w = await proWorld(t);
  for (const obj of [SAMPLE.api(), SAMPLE.policy(), SAMPLE.description(), SAMPLE.config()]) await w.create(obj);
  await w.tick();
  await w.tick();
  t.equal(w.dash.catalogue(), undefined, 'no catalogue lists the description: none made');
  t.equal(w.dash.documentation().size, 0, 'and no documentation sent');
  await w.create(SAMPLE.catalogue());
  t.equal(await ticksUntilPublished(w, 2), 1, 'the catalogue added later is published by the next run');
  await samplePublished(t, w, 'catalogue later');
  await tenQuietTicks(t, w, 'catalogue later');

  // the resource deleted: its entry and documentation go; created again: published again, from the catalogue left behind
  await w.delete('sample-portal-api', 'default', CATALOGUES);
  await w.tick();
  t.strictSame(entries(w.dash), [], 'deleted: the entry is gone');
  t.equal(w.dash.documentation().size, 0, 'and its documentation');
  await w.create(SAMPLE.catalogue());
  w.dash.resetCalls();
  t.equal(await ticksUntilPublished(w, 2), 1, 'created again: published by the next run');
  await samplePublished(t, w, 'created again');
  await tenQuietTicks(t, w, 'created again');

  // the Dashboard's organisation starts over (a fresh database): everything is made again, in order
  w.dash.wipe();
  w.dash.resetCalls();
  t.ok((await ticksUntilPublished(w, 2)) <= 2, 'a wiped Dashboard: published again within two runs');
  await samplePublished(t, w, 'after a wipe');
  await tenQuietTicks(t, w, 'after a wipe');
});

t.test('deleting an APIDescription a catalogue lists is held, with a Warning Event, until no catalogue lists it', async (t) => {
  const w = await proWorld(t);
  await publish(w);
  await w.create(portalCatalogue('catalogue').withDescriptions('sample').build());
  await w.tick();
  await w.delete('sample', 'default', DESCRIPTIONS);
  reset(w);
  const held = await w.tick();
  t.match(reported(held, 'sample', DESCRIPTIONS), { action: 'WAIT', reason: 'referenced by catalogues', result: 'waiting', error: /still referenced by PortalAPICatalogue default\/catalogue/ });
  t.ok(await w.get('sample', 'default', DESCRIPTIONS), 'still in the cluster');
  t.ok(entryOf(w.dash, midOf(w.dash, 'protect-api')), 'its entry is still published');
  const events = await w.events('sample', 'default', DESCRIPTIONS);
  t.ok(
    events.some((e) => e.type === 'Warning' && e.reason === 'DeletionHeld' && /PortalAPICatalogue default\/catalogue/.test(e.message)),
    'kubectl describe says what holds it',
  );
  t.equal(counts(w).catalogue, 0, 'nothing written');
  reset(w);
  await w.tick();
  t.equal(w.statusPatches(), 0, 'held quietly: no repeated status patch');

  // the catalogue stops listing it: the catalogue's entry goes, then the description
  await w.updateSpec('catalogue', (s) => ({ ...s, apis: [] }), 'default', CATALOGUES);
  const freed = await w.tick();
  t.match(reported(freed, 'catalogue', CATALOGUES), { action: 'UPDATE', reason: 'id changed', result: 'synced' });
  t.strictSame(entries(w.dash), [], 'the entry it no longer declares is released');
  t.equal(w.dash.documentation().size, 0, 'with its documentation');
  await w.tick();
  t.equal(await w.get('sample', 'default', DESCRIPTIONS), undefined, 'the description goes');
});

t.test('each catalogue owns the entries it declares: a second claiming one is Failed naming the first; entries not ours are left alone', async (t) => {
  const w = await proWorld(t);
  await publish(w, 'first', 'first-policy');
  await publish(w, 'second', 'second-policy');
  await w.create(portalCatalogue('a').withDescriptions('first').build());
  await w.tick();
  // an entry someone made on the Dashboard, for a policy none of ours publishes
  w.dash.editCatalogue((c) => {
    (c.apis as Entry[]).push({ name: 'by hand', policy_id: 'handmade-policy', show: true, documentation: '' });
  });
  await w.create(portalCatalogue('b').withDescriptions('second').build());
  await w.create(portalCatalogue('c').withDescriptions('first').build());
  const report = await w.tick();
  const first = midOf(w.dash, 'first-policy');
  const second = midOf(w.dash, 'second-policy');
  t.match(reported(report, 'b', CATALOGUES), { result: 'synced' });
  t.match(reported(report, 'c', CATALOGUES), { result: 'invalid', error: new RegExp(`PortalAPICatalogue default/a already publishes policy ${first}`) });
  t.match((await w.get('c', 'default', CATALOGUES))?.status, { latestTransaction: { status: 'Failed', error: /default\/a already publishes/ } }, 'its status names the owner');
  t.ok(
    (await w.events('c', 'default', CATALOGUES)).some((e) => e.type === 'Warning' && /default\/a already publishes/.test(e.message)),
    'and a Warning Event',
  );
  t.strictSame(
    entries(w.dash)
      .map((e) => e.policy_id)
      .sort(),
    [first, second, 'handmade-policy'].sort(),
    'one entry per policy; the hand-made one kept',
  );
  await tenQuietTicks(t, w, 'three catalogues');

  // deleting one removes only its own entry
  await w.delete('b', 'default', CATALOGUES);
  await w.tick();
  t.strictSame(
    entries(w.dash)
      .map((e) => e.policy_id)
      .sort(),
    [first, 'handmade-policy'].sort(),
    "b's entry gone, the others kept",
  );
  t.match(entryOf(w.dash, 'handmade-policy'), { name: 'by hand' }, 'as it was');

  // the owner goes: the younger catalogue declaring the same entry takes it over
  await w.delete('a', 'default', CATALOGUES);
  const takeover = await w.tick();
  t.match(reported(takeover, 'a', CATALOGUES), { result: 'deleted' });
  t.match(reported(takeover, 'c', CATALOGUES), { action: 'UPDATE', reason: 'id changed', result: 'synced' });
  t.ok(entryOf(w.dash, first), 'the entry is published by c now');
  await w.tick();
  t.match(reported(await w.tick(), 'c', CATALOGUES), { result: 'unchanged' });
  t.ok(entryOf(w.dash, first), 'and stays');
});

t.test('one PortalConfig per Dashboard: a second is Failed naming the first, and takes over when it goes', async (t) => {
  const w = await proWorld(t);
  await w.create(portalConfig('main').patchSpec({ disable_signup: true }).build());
  await w.tick();
  await w.create(portalConfig('other').patchSpec({ disable_signup: false, disable_login: true }).build());
  const report = await w.tick();
  t.match(reported(report, 'other', CONFIGS), { result: 'invalid', error: /PortalConfig default\/main already configures/ });
  t.match(w.dash.configuration(), { disable_signup: true, disable_login: false }, 'the first one stands');
  await tenQuietTicks(t, w, 'two PortalConfigs');
  await w.delete('main', 'default', CONFIGS);
  const next = await w.tick();
  t.match(reported(next, 'main', CONFIGS), { result: 'deleted' });
  t.match(reported(next, 'other', CONFIGS), { action: 'UPDATE', reason: 'spec changed', result: 'synced' });
  t.match(w.dash.configuration(), { disable_signup: false, disable_login: true }, 'the second one configures the portal now');
});

t.test("Tyk Operator's catalogue is adopted: its id in status, its entry for our policy replaced, not duplicated", async (t) => {
  const w = await proWorld(t);
  await publish(w);
  await w.tick();
  // what Tyk Operator made: the org's catalogue, an entry under the policy's own id (spec.id, base64url of namespace/name)
  const made = await fetch(`${w.dash.url}/api/portal/catalogue`, {
    method: 'POST',
    headers: { authorization: w.dash.secret },
    body: JSON.stringify({ org_id: w.dash.orgId, apis: [{ name: 'old', policy_id: defaultIdOf('protect-api'), show: true }] }),
  });
  const catalogueId = ((await made.json()) as { Message: string }).Message;
  await w.create(portalCatalogue('catalogue').withDescriptions('sample').withStatus({ id: catalogueId }).build());
  const report = await w.tick();
  t.match(reported(report, 'catalogue', CATALOGUES), { action: 'CREATE', result: 'synced' });
  t.equal(w.dash.catalogue()?.id, catalogueId, 'the same catalogue');
  t.strictSame(
    entries(w.dash).map((e) => e.policy_id),
    [midOf(w.dash, 'protect-api')],
    "one entry: Tyk Operator's, under the policy's own id, replaced by ours under its Dashboard _id",
  );
  t.match((await w.get('catalogue', 'default', CATALOGUES))?.status, { id: catalogueId });
});

t.test('a failed Dashboard read deletes nothing; an entry waits for a policy that is not synced', async (t) => {
  const w = await proWorld(t);
  await publish(w);
  await w.create(portalCatalogue('catalogue').withDescriptions('sample').build());
  await w.tick();
  const mid = midOf(w.dash, 'protect-api');
  await w.delete('catalogue', 'default', CATALOGUES);
  const fault = w.dash.inject({ method: 'GET', path: '/api/portal/catalogue', status: 500, times: Infinity });
  reset(w);
  const failed = await w.tick();
  t.match(reported(failed, 'catalogue', CATALOGUES), { result: 'failed', reason: 'read failed' });
  t.equal(counts(w).catalogue + counts(w).docsDown, 0, 'nothing written, nothing deleted');
  t.ok(await w.get('catalogue', 'default', CATALOGUES), 'the finalizer holds');
  fault.cancel();
  await w.tick();
  t.equal(entryOf(w.dash, mid), undefined, 'deleted once the Dashboard answers');
  t.equal(await w.get('catalogue', 'default', CATALOGUES), undefined);

  // a description naming a policy that is not there yet: it and its catalogue wait, nothing is sent
  await w.create(apiDescription('later').withPolicy('later-policy').build());
  await w.create(portalCatalogue('later').withDescriptions('later').build());
  reset(w);
  const waiting = await w.tick();
  t.match(reported(waiting, 'later', DESCRIPTIONS), { action: 'WAIT', result: 'waiting', error: /waiting for SecurityPolicy default\/later-policy, which does not exist/ });
  t.match(reported(waiting, 'later', CATALOGUES), { action: 'WAIT', result: 'waiting', error: /SecurityPolicy default\/later-policy, which does not exist/ });
  t.equal(counts(w).catalogue, 0, 'nothing sent');
  await w.create(securityPolicy('later-policy').granting('sample-api').build());
  const ready = await w.tick();
  t.match(reported(ready, 'later', CATALOGUES), { result: 'synced' });
  t.ok(entryOf(w.dash, midOf(w.dash, 'later-policy')), 'published once the policy is synced');
});

t.test('on a Tyk Gateway, each portal kind is Failed saying the portal needs a Tyk Dashboard, with a Warning Event', async (t) => {
  const w = await worldFor(t);
  await w.create(apiDescription('sample').withPolicy('protect-api').build());
  await w.create(portalCatalogue('catalogue').withDescriptions('sample').build());
  await w.create(portalConfig('portal').build());
  const report = await w.tick();
  t.same(report.errors, [], 'a per-object failure, not a run-level error');
  for (const [name, kind] of [
    ['sample', DESCRIPTIONS],
    ['catalogue', CATALOGUES],
    ['portal', CONFIGS],
  ] as const) {
    t.match(reported(report, name, kind), { result: 'failed', reason: 'not supported by gateway', code: 'GATEWAY_UNSUPPORTED', error: /needs the Tyk Dashboard's developer portal/ });
    const obj: KubeObject | undefined = await w.get(name, 'default', kind);
    t.match(obj?.status, { latestTransaction: { status: 'Failed', error: /needs the Tyk Dashboard's developer portal.*TYK_MODE=pro/ } }, `${kind}: the status says so`);
    t.notOk(obj?.metadata.finalizers?.length, `${kind}: no finalizer (nothing was written)`);
    const events = await w.events(name, 'default', kind);
    t.ok(
      events.some((e) => e.type === 'Warning' && e.reason === 'GatewayUnsupported' && /developer portal/.test(e.message)),
      `${kind}: a Warning Event`,
    );
  }
  t.equal(w.tyk.count('*', /^\/tyk\//), 0, 'nothing asked of the gateway');
  w.resetCounts();
  await w.tick();
  t.equal(w.statusPatches(), 0, 'said once: no repeated status patch');
});

t.test('a cluster without the portal CRDs (only our earlier ones): runs are not failed by it, nothing is deleted', async (t) => {
  const crd = (plural: string) => fileURLToPath(new URL(`../../deploy/crds/tyk.tyk.io_${plural}.yaml`, import.meta.url));
  const w = await worldFor(t, { kube: { crds: ['apidefinitions', 'tykoasapidefinitions', 'securitypolicies', 'operatorcontexts'].map(crd) } });
  await w.create(apiDefinition('httpbin').build());
  const report = await w.tick();
  t.ok(
    w.kube.calls.some((c) => c.method === 'GET' && c.path.endsWith('/apidescriptions') && c.status === 404),
    'the API server answered 404 to the LIST of a portal kind',
  );
  t.same(report.errors, [], 'no run-level error: the portal kinds are simply not there');
  t.match(reported(report, 'httpbin'), { result: 'synced' });
  const named = await w.resync({ kind: 'PortalAPICatalogue', namespace: 'default', name: 'x' });
  t.equal(named.statusCode, 200, 'a resync naming one answers');
  t.same(named.body.errors, []);
});

t.test('a policy recreated on the Dashboard (a new _id): the run that recreates it moves the entry to it, with one write', async (t) => {
  const w = await proWorld(t);
  await publish(w);
  await w.create(portalCatalogue('catalogue').withDescriptions('sample').build());
  await w.tick();
  const before = midOf(w.dash, 'protect-api');
  t.ok(w.dash.removePolicy(before), 'the policy deleted on the Dashboard behind our back');
  reset(w);
  const res = await w.resync({ kind: 'SecurityPolicy', namespace: 'default', name: 'protect-api' });
  t.equal(res.statusCode, 200);
  const after = midOf(w.dash, 'protect-api');
  t.not(after, before, 'recreated under a new _id');
  t.match(reported(res.body, 'catalogue', CATALOGUES), { action: 'CREATE', reason: 'id changed', result: 'synced' }, 'the catalogue publishing it (through its description) follows, in the same run');
  t.strictSame(
    entries(w.dash).map((e) => e.policy_id),
    [after],
    'the entry publishes the new _id; the old one is gone',
  );
  t.equal(counts(w).catalogue, 1, 'one catalogue write');
});
