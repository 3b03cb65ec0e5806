/**
 * Fault injection (./faults.ts, through ./tyk-fake-base.ts) as both Tyk fakes answer it: each
 * case is written once and run against the gateway and the Dashboard, which differ only in
 * their paths, their auth header, their error body and how a write is seen.
 */
import t, { type Test } from 'tap';
import { type FakeTykDashboard, startFakeTykDashboard } from './tyk-dashboard.js';
import type { JsonObject } from './tyk-fake-base.js';
import { type FakeTykGateway, startFakeTykGateway } from './tyk-gateway.js';

interface Res {
  status: number;
  body: any;
  contentType: string | null;
}

/** What the cases need of a fake (both have it). */
type Fake = Pick<FakeTykGateway, 'url' | 'secret' | 'calls' | 'inject' | 'clearFaults' | 'close'>;

/** One Tyk fake as the cases see it. */
interface Target<F extends Fake> {
  name: string;
  /** Started with the test's secret; `defaults`: with no options at all. */
  start(options?: { defaults: true }): Promise<F>;
  /** The secret of a fake started with no options. */
  defaultSecret: string;
  auth(fake: F): Record<string, string>;
  /** The fake's error body (what an injected status without a body answers, with "injected fault"). */
  error(message: string): JsonObject;
  /** The API collection: POST creates there, `<apis>/<id>` is an API. */
  apis: string;
  /** A create (or update) body for an API of this name and id. */
  apiBody(name: string, id: string): JsonObject;
  /** The API's name in a recorded write body. */
  nameIn(body: unknown): unknown;
  /** How many APIs are stored (a write that happened). */
  stored(fake: F): number;
  /** The status of reading the created API before any fault: 404 where it is not yet loaded. */
  createdReadStatus: number;
}

function httpbin(name: string, id: string): JsonObject {
  return {
    api_id: id,
    name,
    use_keyless: true,
    active: true,
    proxy: { listen_path: `/${name}/`, target_url: 'http://httpbin.org', strip_listen_path: true },
    version_data: { not_versioned: true, default_version: 'Default', versions: { Default: { name: 'Default' } } },
  };
}

const gateway: Target<FakeTykGateway> = {
  name: 'Tyk Gateway',
  start: (options) => startFakeTykGateway(options ? {} : { secret: 's3cret' }),
  defaultSecret: 'fake-tyk-secret',
  auth: (gw) => ({ 'x-tyk-authorization': gw.secret }),
  error: (message) => ({ status: 'error', message }),
  apis: '/tyk/apis',
  apiBody: httpbin,
  nameIn: (body) => (body as JsonObject | undefined)?.name,
  stored: (gw) => gw.files('api').size,
  // written to a file, loaded at the next reload
  createdReadStatus: 404,
};

const dashboard: Target<FakeTykDashboard> = {
  name: 'Tyk Dashboard',
  start: (options) => startFakeTykDashboard(options ? {} : { secret: 'dash-key' }),
  defaultSecret: 'fake-dashboard-key',
  auth: (d) => ({ authorization: d.secret }),
  error: (message) => ({ Status: 'Error', Message: message, Meta: null }),
  apis: '/api/apis',
  apiBody: (name, id) => ({ api_definition: httpbin(name, id) }),
  nameIn: (body) => ((body as JsonObject | undefined)?.api_definition as JsonObject | undefined)?.name,
  stored: (d) => d.apis().size,
  createdReadStatus: 200,
};

function cases<F extends Fake>(target: Target<F>): void {
  const { name, apis } = target;
  const item = (id: string) => `${apis}/${id}`;

  async function start(tt: Test): Promise<F> {
    const fake = await target.start();
    tt.teardown(() => fake.close());
    return fake;
  }

  async function call(fake: F, method: string, path: string, body?: unknown): Promise<Res> {
    const init: RequestInit = { method, headers: target.auth(fake) };
    if (body !== undefined) init.body = JSON.stringify(body);
    const res = await fetch(fake.url + path, init);
    const text = await res.text();
    return { status: res.status, body: text === '' ? undefined : JSON.parse(text), contentType: res.headers.get('content-type') };
  }

  t.test(`${name} faults: status with the error body, times, afterCalls, match, cancel, clear`, async (tt) => {
    const fake = await start(tt);
    const create = () => call(fake, 'POST', apis, target.apiBody('httpbin', 'httpbin'));
    fake.inject({ method: 'POST', path: apis, status: 503 });
    tt.same(await create(), { status: 503, body: target.error('injected fault'), contentType: 'application/json' });
    tt.equal(target.stored(fake), 0, 'a faulted write does not happen');
    tt.equal((await create()).status, 200, 'times defaults to 1');

    const boom = target.error('boom');
    fake.inject({ path: new RegExp(`^${apis}/`), status: 500, body: boom, times: 2, afterCalls: 1 });
    tt.equal((await call(fake, 'GET', item('httpbin'))).status, target.createdReadStatus, 'the first matching call passes');
    tt.same((await call(fake, 'GET', item('httpbin'))).body, boom);
    tt.equal((await call(fake, 'DELETE', item('httpbin'))).status, 500);
    tt.equal(target.stored(fake), 1, 'the faulted delete did not happen');
    tt.equal((await call(fake, 'GET', item('httpbin'))).status, target.createdReadStatus, 'spent after times');
    tt.equal((await call(fake, 'GET', apis)).status, 200, 'a non-matching path is untouched');

    for (const body of ['<html>bad gateway</html>', '{"raw":true}']) {
      fake.inject({ method: 'GET', path: apis, status: 502, body });
      const raw = await fetch(`${fake.url}${apis}`, { headers: target.auth(fake) });
      tt.equal(raw.status, 502);
      tt.equal(await raw.text(), body, 'a string body is sent verbatim');
    }

    const handle = fake.inject({ path: apis, status: 500, times: 5 });
    tt.equal((await call(fake, 'GET', apis)).status, 500);
    tt.equal(handle.fired, 1);
    handle.cancel();
    tt.equal((await call(fake, 'GET', apis)).status, 200, 'cancelled');

    fake.inject({ method: 'PUT', status: 409, headers: { 'x-fault': 'yes' }, match: (c) => target.nameIn(c.body) === 'hit' });
    // an id the fake never had (httpbin was created above, and a reload may have loaded it)
    tt.equal((await call(fake, 'PUT', item('never-created'), target.apiBody('miss', 'never-created'))).status, 404, 'match filters');
    const hit = await fetch(`${fake.url}${item('never-created')}`, { method: 'PUT', body: JSON.stringify(target.apiBody('hit', 'never-created')) });
    tt.equal(hit.status, 409, 'a fault answers before auth');
    tt.equal(hit.headers.get('x-fault'), 'yes');

    fake.inject({ status: 500, times: 10 });
    fake.clearFaults();
    tt.equal((await call(fake, 'GET', apis)).status, 200, 'cleared');
  });

  t.test(`${name} faults: delay, drop, hang`, async (tt) => {
    const fake = await start(tt);
    fake.inject({ path: apis, delayMs: 80 });
    const t0 = Date.now();
    const slow = await call(fake, 'GET', apis);
    tt.ok(Date.now() - t0 >= 75, 'delayed');
    tt.equal(slow.status, 200, 'then answered normally');

    fake.inject({ path: apis, drop: true });
    await tt.rejects(call(fake, 'POST', apis, target.apiBody('dropped', 'dropped')), 'a dropped socket fails the request');
    tt.equal(target.stored(fake), 0, 'a dropped write is not made');
    tt.equal((await call(fake, 'GET', apis)).status, 200, 'then answered normally');

    fake.inject({ path: apis, hang: true });
    const hung = fetch(`${fake.url}${apis}`, { headers: target.auth(fake), signal: AbortSignal.timeout(100) });
    await tt.rejects(hung, { name: 'TimeoutError' }, 'never answered');
    tt.same(fake.calls.slice(-1)[0], { method: 'GET', path: apis, query: {}, status: 0 });
  });

  t.test(`${name} faults: close() ends hung requests`, async (tt) => {
    const fake = await target.start({ defaults: true });
    fake.inject({ hang: true });
    const hung = fetch(`${fake.url}${apis}`, { headers: target.auth(fake) });
    await new Promise((r) => setTimeout(r, 20));
    const t0 = Date.now();
    await fake.close();
    await tt.rejects(hung);
    tt.ok(Date.now() - t0 < 1000, 'closed promptly');
    await fake.close();
    tt.equal(fake.secret, target.defaultSecret, 'the default key');
  });
}

cases(gateway);
cases(dashboard);
