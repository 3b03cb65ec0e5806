/**
 * One owner per gateway object, through HTTP against the fakes (and the real API server tier):
 * a tenant naming another team's id is refused (IdClaimed) and never writes or deletes it, on
 * any run; ownership lost with the store is rebuilt from the cluster (oldest first) and never
 * flaps; an unowned gateway object is adopted only under the resource's default id or from
 * ADOPT_NAMESPACES (else AdoptionNotPermitted); the younger of two APIs serving one listen
 * path is refused (ListenPathClash) while the older keeps serving.
 */
import t from 'tap';
import type { RunReport } from '../../lib/engine/run.js';
import type { KubeObject } from '../../lib/kube/types.js';
import { apiDefinition, conditionOf, defaultIdOf, FINALIZER } from '../fixtures/builders.js';
import { type World, worldFor } from '../harness/world.js';

type Test = Parameters<Parameters<typeof t.test>[0]>[0];

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function obj(report: RunReport, name: string, namespace: string, kind = 'ApiDefinition') {
  const o = report.objects.find((x) => x.kind === kind && x.name === name && x.namespace === namespace);
  if (!o) throw new Error(`no report for ${kind} ${namespace}/${name}: ${JSON.stringify(report.objects)}`);
  return o;
}

/** An ApiDefinition in `namespace` serving `listenPath`, naming `apiId` when given. */
function api(name: string, namespace: string, listenPath: string, apiId?: string): KubeObject {
  const b = apiDefinition(name)
    .inNamespace(namespace)
    .patchSpec({ proxy: { target_url: `http://${name}.${namespace}.svc:8080`, listen_path: listenPath, strip_listen_path: true } });
  return (apiId === undefined ? b : b.withApiId(apiId)).build();
}

/** A gateway object's bytes as the gateway serves them. */
function bytesOf(w: World, id: string): string {
  return JSON.stringify(w.gatewayApi(id) ?? null);
}

/** What Tyk Operator (or someone by hand) left on the gateway: an API under `id`. */
async function seedGatewayApi(w: World, id: string, listenPath: string): Promise<void> {
  const res = await fetch(`${w.tyk.url}/tyk/apis`, {
    method: 'POST',
    headers: { 'x-tyk-authorization': w.tyk.secret, 'content-type': 'application/json' },
    body: JSON.stringify({
      api_id: id,
      name: `left behind ${id}`,
      proxy: { listen_path: listenPath, target_url: 'http://left.behind' },
      version_data: { not_versioned: true, versions: { Default: { name: 'Default' } } },
    }),
  });
  if (res.status !== 200) throw new Error(`seeding ${id}: ${res.status}`);
  w.tyk.reloadNow();
}

async function refusedAs(t: Test, w: World, name: string, namespace: string, reason: string): Promise<void> {
  const cr = await w.get(name, namespace);
  t.match(cr?.status, { latestTransaction: { status: 'Failed' } }, `${namespace}/${name}: status Failed`);
  // Tyk Operator's CRDs (the real tier's second pass) prune conditions
  if (process.env.REAL_KUBE_CRDS !== 'tyk-operator') {
    t.match(conditionOf(cr, 'Ready'), { status: 'False', reason }, `${namespace}/${name}: Ready False, ${reason}`);
    t.match(conditionOf(cr, 'Synced'), { status: 'False', reason }, `${namespace}/${name}: Synced False, ${reason}`);
  }
  const warnings = (await w.events(name, namespace)).filter((e) => e.type === 'Warning' && e.reason === reason);
  t.equal(warnings.length, 1, `${namespace}/${name}: one Warning Event ${reason}`);
}

t.test("another team's id: refused (IdClaimed), never written, and deleting the tenant's resource leaves it", async (t) => {
  const w = await worldFor(t);
  const paymentsId = defaultIdOf('payments', 'team-b');
  await w.create(api('payments', 'team-b', '/payments'));
  await w.create(api('ledger', 'team-b', '/ledger', 'ledger-api'));
  const first = await w.tick();
  t.match(obj(first, 'payments', 'team-b'), { result: 'synced', id: paymentsId });
  t.match(obj(first, 'ledger', 'team-b'), { result: 'synced', id: 'ledger-api' });
  const payments = bytesOf(w, paymentsId);
  const ledger = bytesOf(w, 'ledger-api');

  // base64url of team-b/payments, which anyone can compute, and team-b's pinned id; one carries our finalizer, put there by the tenant
  await w.create(api('steal', 'team-a', '/steal', paymentsId));
  const pinned = api('pinned', 'team-a', '/pinned', 'ledger-api');
  await w.create({ ...pinned, metadata: { ...pinned.metadata, finalizers: [FINALIZER] } });
  w.resetCounts();
  const steal = await w.announce('ADDED', 'steal', 'team-a');
  t.match(obj(steal, 'steal', 'team-a'), { action: 'NOOP', reason: 'IdClaimed', result: 'failed', code: 'ID_CLAIMED' });
  t.notMatch(obj(steal, 'steal', 'team-a').error ?? '', /team-b/, 'the message does not name what another namespace holds');
  const pin = await w.announce('ADDED', 'pinned', 'team-a');
  t.match(obj(pin, 'pinned', 'team-a'), { reason: 'IdClaimed', result: 'failed' });
  t.equal(w.tyk.writes(), 0, 'nothing written to the gateway');
  await refusedAs(t, w, 'steal', 'team-a', 'IdClaimed');
  await refusedAs(t, w, 'pinned', 'team-a', 'IdClaimed');
  t.notOk((await w.get('steal', 'team-a'))?.metadata.finalizers, 'no finalizer added to a refused resource');
  t.equal((await w.get('steal', 'team-a'))?.status?.api_id, defaultIdOf('steal', 'team-a'), "its status names its own default id, not the other team's");

  for (let i = 0; i < 3; i++) {
    const tick = await w.tick();
    t.match(obj(tick, 'steal', 'team-a'), { reason: 'IdClaimed', result: 'failed' }, `run ${i + 1}: still refused`);
    t.match(obj(tick, 'pinned', 'team-a'), { reason: 'IdClaimed', result: 'failed' });
    t.match(obj(tick, 'payments', 'team-b'), { result: 'unchanged' }, `run ${i + 1}: team-b's API untouched`);
    t.match(obj(tick, 'ledger', 'team-b'), { result: 'unchanged' });
  }
  t.equal(w.tyk.writes(), 0, 'no gateway write over three full runs');
  t.equal(bytesOf(w, paymentsId), payments, "team-b's API keeps its bytes");
  t.equal(bytesOf(w, 'ledger-api'), ledger);

  await w.delete('steal', 'team-a');
  await w.delete('pinned', 'team-a');
  await w.announce('DELETED', 'steal', 'team-a');
  const gone = await w.announce('DELETED', 'pinned', 'team-a');
  t.match(obj(gone, 'pinned', 'team-a'), { action: 'DELETE', reason: 'not owned', result: 'deleted' });
  t.equal(await w.get('pinned', 'team-a'), undefined, 'its finalizer removed: the resource could go');
  t.equal(w.tyk.count('DELETE'), 0, 'no delete sent to the gateway');
  t.equal(bytesOf(w, paymentsId), payments, "team-b's APIs stay, byte for byte");
  t.equal(bytesOf(w, 'ledger-api'), ledger);
  const after = await w.tick();
  t.match(obj(after, 'payments', 'team-b'), { result: 'unchanged' });
  t.equal(w.tyk.writes(), 0);

  // the owner's own deletion frees the id
  await w.delete('payments', 'team-b');
  await w.announce('DELETED', 'payments', 'team-b');
  t.equal(w.gatewayApi(paymentsId), undefined, "the owner's deletion removes it");
  await w.create(api('again', 'team-a', '/again', paymentsId));
  const taken = await w.announce('ADDED', 'again', 'team-a');
  t.match(obj(taken, 'again', 'team-a'), { action: 'CREATE', result: 'synced', id: paymentsId }, 'a released id is free for another resource');
});

t.test('ownership lost with the store is rebuilt from the cluster: the oldest resource keeps the id, on every run', async (t) => {
  const w = await worldFor(t);
  const paymentsId = defaultIdOf('payments', 'team-b');
  await w.create(api('payments', 'team-b', '/payments'));
  // creation timestamps have one-second steps
  await sleep(1_100);
  await w.create(api('steal', 'team-a', '/steal', paymentsId));
  const first = await w.tick();
  t.match(obj(first, 'payments', 'team-b'), { result: 'synced', id: paymentsId });
  t.match(obj(first, 'steal', 'team-a'), { reason: 'IdClaimed', result: 'failed' }, 'both new: the younger is refused');
  t.match(w.gatewayApi(paymentsId), { proxy: { listen_path: '/payments' } });

  for (let i = 0; i < 3; i++) {
    await w.flushStore();
    const tick = await w.tick();
    t.match(obj(tick, 'steal', 'team-a'), { reason: 'IdClaimed', result: 'failed' }, `store lost ${i + 1}: the younger is refused again`);
    t.not(obj(tick, 'payments', 'team-b').result, 'failed', 'the older keeps it');
    t.match(w.gatewayApi(paymentsId), { proxy: { listen_path: '/payments', target_url: 'http://payments.team-b.svc:8080' } }, "the gateway serves team-b's definition");
  }
  w.resetCounts();
  const steady = await w.tick();
  t.match(obj(steady, 'payments', 'team-b'), { result: 'unchanged' });
  t.match(obj(steady, 'steal', 'team-a'), { reason: 'IdClaimed' });
  t.equal(w.tyk.writes(), 0, 'then steady');

  // lost again, and the tenant's resource is the only one a run looks at: not its default id, nothing adopts it
  await w.flushStore();
  const alone = await w.announce('MODIFIED', 'steal', 'team-a');
  t.match(obj(alone, 'steal', 'team-a'), { reason: 'AdoptionNotPermitted', result: 'failed', code: 'ADOPTION_NOT_PERMITTED' });
  t.equal(w.tyk.writes(), 0);
  t.match(w.gatewayApi(paymentsId), { proxy: { listen_path: '/payments' } });
  await refusedAs(t, w, 'steal', 'team-a', 'AdoptionNotPermitted');
});

t.test('adoption: an unowned gateway object is adopted under the default id, another id only from ADOPT_NAMESPACES', async (t) => {
  t.test('ADOPT_NAMESPACES unset', async (t) => {
    const w = await worldFor(t);
    await seedGatewayApi(w, defaultIdOf('legacy', 'team-c'), '/legacy');
    await seedGatewayApi(w, 'operator-made', '/operator-made');
    const left = bytesOf(w, 'operator-made');
    await w.create(api('legacy', 'team-c', '/legacy'));
    await w.create(api('pinned', 'team-c', '/pinned', 'operator-made'));
    const report = await w.tick();
    t.match(obj(report, 'legacy', 'team-c'), { action: 'UPDATE', reason: 'adopted from gateway', result: 'synced' }, 'its own default id: adopted');
    t.match(obj(report, 'pinned', 'team-c'), { action: 'NOOP', reason: 'AdoptionNotPermitted', result: 'failed', code: 'ADOPTION_NOT_PERMITTED' });
    t.equal(bytesOf(w, 'operator-made'), left, 'the unowned object keeps its bytes');
    await refusedAs(t, w, 'pinned', 'team-c', 'AdoptionNotPermitted');
    const again = await w.tick();
    t.match(obj(again, 'pinned', 'team-c'), { reason: 'AdoptionNotPermitted' }, 'on every run');
    t.equal(bytesOf(w, 'operator-made'), left);
  });

  t.test('ADOPT_NAMESPACES=team-c: that namespace adopts, another does not', async (t) => {
    const w = await worldFor(t, { env: { ADOPT_NAMESPACES: 'team-c' } });
    await seedGatewayApi(w, 'operator-made', '/operator-made');
    await seedGatewayApi(w, 'other-made', '/other-made');
    const other = bytesOf(w, 'other-made');
    await w.create(api('pinned', 'team-c', '/pinned', 'operator-made'));
    await w.create(api('pinned', 'team-d', '/pinned-d', 'other-made'));
    const report = await w.tick();
    t.match(obj(report, 'pinned', 'team-c'), { action: 'UPDATE', reason: 'adopted from gateway', result: 'synced' });
    t.match(w.gatewayApi('operator-made'), { proxy: { listen_path: '/pinned' } });
    t.match(obj(report, 'pinned', 'team-d'), { reason: 'AdoptionNotPermitted', result: 'failed' });
    t.equal(bytesOf(w, 'other-made'), other);
  });

  t.test('ADOPT_NAMESPACES=*: every namespace adopts, as Tyk Operator did', async (t) => {
    const w = await worldFor(t, { env: { ADOPT_NAMESPACES: '*' } });
    await seedGatewayApi(w, 'operator-made', '/operator-made');
    await w.create(api('pinned', 'team-d', '/pinned', 'operator-made'));
    const report = await w.tick();
    t.match(obj(report, 'pinned', 'team-d'), { action: 'UPDATE', reason: 'adopted from gateway', result: 'synced' });
    t.match(w.gatewayApi('operator-made'), { proxy: { listen_path: '/pinned' } });
    // once adopted it is owned: another resource naming it is refused, ADOPT_NAMESPACES or not
    await w.create(api('second', 'team-e', '/second', 'operator-made'));
    const next = await w.tick();
    t.match(obj(next, 'second', 'team-e'), { reason: 'IdClaimed', result: 'failed' });
    t.match(w.gatewayApi('operator-made'), { proxy: { listen_path: '/pinned' } });
  });
});

t.test('two APIs with one listen path on one gateway: the younger is refused (ListenPathClash), the older keeps serving', async (t) => {
  const w = await worldFor(t);
  await w.create(api('shop', 'team-b', '/shop'));
  await sleep(1_100);
  await w.create(api('shop', 'team-a', '/shop'));
  await w.create(api('elsewhere', 'team-a', '/elsewhere'));
  const report = await w.tick();
  t.match(obj(report, 'shop', 'team-b'), { result: 'synced' });
  t.match(obj(report, 'elsewhere', 'team-a'), { result: 'synced' }, 'the tenant’s other APIs are unaffected');
  const younger = obj(report, 'shop', 'team-a');
  t.match(younger, { reason: 'ListenPathClash', result: 'failed', code: 'LISTEN_PATH_CLASH', error: /spec\.proxy\.listen_path \/shop/ });
  t.notMatch(younger.error ?? '', /team-b/, 'the older resource of another namespace is not named');
  t.equal(w.gatewayApi(defaultIdOf('shop', 'team-a')), undefined, 'the younger is not written');
  t.match(w.gatewayApi(defaultIdOf('shop', 'team-b')), { proxy: { listen_path: '/shop' } }, 'the older serves /shop');
  await refusedAs(t, w, 'shop', 'team-a', 'ListenPathClash');

  w.resetCounts();
  const again = await w.tick();
  t.match(obj(again, 'shop', 'team-a'), { reason: 'ListenPathClash' });
  t.equal(w.tyk.writes(), 0, 'steady: nothing written');

  await w.updateSpec('shop', (s) => ({ ...s, proxy: { ...(s.proxy as object), listen_path: '/shop-a' } }), 'team-a');
  const moved = await w.tick();
  t.match(obj(moved, 'shop', 'team-a'), { result: 'synced' }, 'another listen path: written');
  t.match(w.gatewayApi(defaultIdOf('shop', 'team-a')), { proxy: { listen_path: '/shop-a' } });
  t.match((await w.get('shop', 'team-a'))?.status, { latestTransaction: { status: 'Successful' } });
});
