/**
 * A full run lists the gateway ahead (lib/scale/list-ahead.ts): once this process has listed
 * a kind on the default gateway, the next full run sends that list before it pages through the
 * API server, and answers its reads from it: one list per run still, the same decisions, a read
 * it cannot answer from the list read again, a failed list failing its reads and deleting
 * nothing. Through the loopback fakes and our real clients; ListsAhead itself over our real
 * Tyk Gateway client.
 */
import t from 'tap';
import type { RunReport } from '../../lib/engine/run.js';
import { TykGatewayClient } from '../../lib/gateway/tyk-ce.js';
import { type AheadList, ListsAhead } from '../../lib/scale/list-ahead.js';
import { ObservedMemo } from '../../lib/scale/observed-memo.js';
import { startFakeTykGateway } from '../fakes/tyk-gateway.js';
import { apiDefinition, defaultIdOf } from '../fixtures/builders.js';
import { startWorld, type World } from '../harness/world.js';

const HTTPBIN_ID = defaultIdOf('httpbin');
const APIDEFINITION_PAGES = /\/apidefinitions$/;

async function world(t: { teardown(fn: () => unknown): void }): Promise<World> {
  // getThreshold 1: a full run's reads of the gateway are one LIST; one object read again is a GET
  const w = await startWorld({ settings: { getThreshold: 1 } });
  t.teardown(() => w.close());
  return w;
}

function obj(report: RunReport, name: string) {
  const o = report.objects.find((x) => x.name === name && x.namespace === 'default');
  if (!o) throw new Error(`no report for default/${name}`);
  return o;
}

/** When the gateway's list of APIs arrives: how many ApiDefinition pages the API server had answered by then. */
function pagesAnsweredAtGatewayList(w: World): number[] {
  const seen: number[] = [];
  w.tyk.inject({
    method: 'GET',
    path: '/tyk/apis',
    times: Infinity,
    match: () => {
      seen.push(w.kube.calls.filter((c) => c.method === 'GET' && APIDEFINITION_PAGES.test(c.path) && c.status !== 0).length);
      return false;
    },
  });
  return seen;
}

t.test('once listed, the next full run lists the gateway before the API server has answered a page, and only once', async (t) => {
  const w = await world(t);
  await w.create(apiDefinition('httpbin').build());
  await w.create(apiDefinition('other').build());
  const seen = pagesAnsweredAtGatewayList(w);
  await w.tick();
  t.ok((seen[0] ?? 0) >= 1, 'a first run lists the gateway after the pages (nothing listed before in this process)');

  seen.length = 0;
  w.kube.fake.inject({ method: 'GET', path: APIDEFINITION_PAGES, delayMs: 300 });
  w.kube.resetCalls();
  w.tyk.resetCalls();
  const report = await w.tick();
  t.same(report.counts, { unchanged: 2 });
  t.same(seen, [0], 'one list, sent while the first page was still on its way');
  t.equal(w.tyk.count('GET', '/tyk/apis'), 1, 'one LIST of the gateway');
  t.equal(w.tyk.count('GET', /^\/tyk\/apis\/[^/]+$/), 0, 'no GET');
});

t.test('listed ahead: drift is found and undone, and a body that changed since the last run is read again', async (t) => {
  const w = await world(t);
  await w.create(apiDefinition('httpbin').build());
  await w.create(apiDefinition('other').build());
  await w.tick();
  t.same((await w.tick()).counts, { unchanged: 2 }, 'a quiet tick from the list read ahead');

  w.tyk.editLoaded('api', HTTPBIN_ID, (api) => {
    (api.proxy as Record<string, unknown>).target_url = 'http://evil.example';
  });
  t.match(obj(await w.tick(), 'httpbin'), { action: 'UPDATE', reason: 'drifted on gateway', result: 'synced' });
  t.match(w.gatewayApi(HTTPBIN_ID), { proxy: { target_url: 'http://httpbin.org' } });

  // the gateway's bytes are as the last run read them, the body to send is new: the memo has no
  // answer for it and the list kept no body (its digest was known), so it is read again alone
  await w.updateSpec('httpbin', (spec) => ({ ...spec, name: 'renamed' }));
  w.tyk.resetCalls();
  t.match(obj(await w.tick(), 'httpbin'), { action: 'UPDATE', result: 'synced' });
  t.match(w.gatewayApi(HTTPBIN_ID), { name: 'renamed' });
  t.ok(w.tyk.count('GET', `/tyk/apis/${HTTPBIN_ID}`) >= 1, 'the object the list could not answer for was read with a GET');
  t.equal(w.tyk.count('GET', `/tyk/apis/${defaultIdOf('other')}`), 0, 'the other one was answered from the list');
  t.same((await w.tick()).counts, { unchanged: 2 });
});

t.test('listed ahead: an object gone from the gateway is created again; one never synced is created', async (t) => {
  const w = await world(t);
  await w.create(apiDefinition('httpbin').build());
  await w.tick();
  await w.create(apiDefinition('other').build());
  w.tyk.removeLoaded('api', HTTPBIN_ID);
  w.tyk.removeFile('api', HTTPBIN_ID);
  const report = await w.tick();
  t.match(obj(report, 'httpbin'), { action: 'CREATE', result: 'synced' });
  t.match(obj(report, 'other'), { action: 'CREATE', result: 'synced' });
  t.ok(w.gatewayApi(HTTPBIN_ID), 'created again');
});

t.test('listed ahead: a failed list fails the reads it covered, is a run error, and deletes nothing', async (t) => {
  const w = await world(t);
  await w.create(apiDefinition('httpbin').build());
  await w.tick();
  w.tyk.inject({ method: 'GET', path: '/tyk/apis', status: 500 });
  w.tyk.resetCalls();
  const report = await w.tick();
  t.equal(w.tyk.count('GET', '/tyk/apis'), 1, 'the list read ahead was the only one');
  t.notMatch(obj(report, 'httpbin'), { result: 'synced' });
  t.notMatch(obj(report, 'httpbin'), { result: 'unchanged' });
  t.ok(report.errors.length > 0, 'a run error');
  t.equal(w.tyk.count('DELETE', /^\/tyk\/apis\//), 0, 'nothing deleted');
  t.ok(w.gatewayApi(HTTPBIN_ID), 'still on the gateway');
  t.same((await w.tick()).counts, { unchanged: 1 }, 'the next tick reads it again');
});

t.test('ListsAhead: a body kept only where the memo does not know the digest, at most maxBodies; each list taken once; a failure raised where taken', async (t) => {
  const gw = await startFakeTykGateway({ secret: 's3cret' });
  t.teardown(() => gw.close());
  const client = new TykGatewayClient({ name: 'default', url: gw.url, secret: gw.secret, timeoutMs: 2000 });
  const post = async (apiId: string) => {
    const res = await fetch(`${gw.url}/tyk/apis`, {
      method: 'POST',
      headers: { 'x-tyk-authorization': gw.secret },
      body: JSON.stringify({ api_id: apiId, name: apiId, org_id: 'o', use_keyless: true, active: true, proxy: { listen_path: `/${apiId}/`, target_url: 'http://upstream.example' } }),
    });
    t.equal(res.status, 200);
  };
  for (const id of ['a', 'b', 'c']) await post(id);
  gw.reloadNow();

  // a memo that has seen a's bytes
  const memo = new ObservedMemo();
  const seed = memo.reading('default', 'api');
  await client.list('api', (id, item) => {
    if (id === 'a' && item.digest !== undefined) seed.answer(item.digest, 'sent', undefined, () => ({ body: { api_id: 'a' }, hash: 'h' }));
  });
  seed.done();

  const ahead = new ListsAhead();
  ahead.start(client, 'api', memo.reading('default', 'api'), 1);
  ahead.start(client, 'api', memo.reading('default', 'api'), 1);
  t.same(ahead.untaken(), [{ gateway: 'default', kind: 'api' }], 'one list per gateway and kind');
  const taken = ahead.take('default', 'api');
  t.ok(taken);
  t.equal(ahead.take('default', 'api'), undefined, 'taken once');
  t.same(ahead.untaken(), [], 'none left');
  const { items, memo: reading } = await (taken as Promise<AheadList>);
  t.same(
    items.map((i) => i.id),
    ['a', 'b', 'c'],
    'every object, in list order',
  );
  t.ok(
    items.every((i) => typeof i.digest === 'string'),
    'each with its digest',
  );
  t.equal(items[0]?.body, undefined, 'a: known by its digest, no body kept');
  t.match(items[1]?.body, { api_id: 'b', name: 'b' }, 'b: unknown, its body kept');
  t.equal(items[2]?.body, undefined, 'c: unknown, but past maxBodies (1): no body');
  t.same(reading?.known(items[0]?.digest as string, 'sent', undefined), { body: { api_id: 'a' }, hash: 'h' }, 'the memo answers for a');
  t.equal(reading?.known(items[0]?.digest as string, 'another body', undefined), undefined, 'not for another body to send');
  t.equal(gw.count('GET', '/tyk/apis'), 2, 'the seeding list and the one read ahead');

  gw.inject({ method: 'GET', path: '/tyk/apis', status: 500 });
  const failing = new ListsAhead();
  failing.start(client, 'api', undefined);
  // nothing awaits it yet: were its rejection unhandled, tap would fail this test
  await new Promise((resolve) => setTimeout(resolve, 100));
  await t.rejects(failing.take('default', 'api') as Promise<AheadList>, 'the failure is raised where the list is taken');
});

t.test('a list read ahead that no read takes is sent once: the next full run lists nothing it has no use for', async (t) => {
  const w = await world(t);
  await w.create(apiDefinition('httpbin').build());
  await w.tick();
  await w.tick();
  await w.delete('httpbin');
  t.match(obj(await w.tick(), 'httpbin'), { action: 'DELETE', result: 'deleted' });
  t.equal(w.gatewayApi(HTTPBIN_ID), undefined, 'gone from the gateway');
  // nothing left of the kind, neither resource nor record; this process had listed it, so the next run lists ahead
  w.tyk.resetCalls();
  t.same((await w.tick()).counts, {});
  t.ok(w.tyk.count('GET', '/tyk/apis') <= 1, 'at most the one list read ahead, for nothing');
  w.tyk.resetCalls();
  t.same((await w.tick()).counts, {});
  t.equal(w.tyk.count('GET', '/tyk/apis'), 0, 'and the run after sends none');
});
