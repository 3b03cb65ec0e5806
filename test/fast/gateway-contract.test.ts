/**
 * The Gateway contract (test/memory/contract.ts) against both implementations, per mode:
 * MemoryTykGateway, TykGatewayClient against the Tyk Gateway fake (over Node's own transport and
 * over undici's pooled client, lib/platform/http-*.ts), and a ReplicaGateway over
 * three replicas (to the engine, one gateway); MemoryTykDashboard and
 * TykDashboardClient against the Dashboard fake (over each transport). Then the same writes through both, whose
 * reads must agree field for field (up to the ids and times each gateway makes up).
 */
import t from 'tap';
import { ReplicaGateway } from '../../lib/gateway/replicas.js';
import { TykGatewayClient } from '../../lib/gateway/tyk-ce.js';
import { TykDashboardClient } from '../../lib/gateway/tyk-dashboard.js';
import type { Gateway, GatewayObjectKind, JsonObject } from '../../lib/gateway/types.js';
import type { TransportFactory } from '../../lib/platform/http.js';
import { undiciTransports } from '../../lib/platform/http-undici.js';
import type { FaultSpec } from '../fakes/faults.js';
import { startFakeTykDashboard } from '../fakes/tyk-dashboard.js';
import type { CallRecord } from '../fakes/tyk-fake-base.js';
import { startFakeTykGateway } from '../fakes/tyk-gateway.js';
import { FakeClock } from '../harness/clock.js';
import { api, type GatewayFaultOp, type GatewaySubject, gatewayContract, policy } from '../memory/contract.js';
import type { FailHow } from '../memory/faults.js';
import { gatewayFailure, MemoryTykDashboard, MemoryTykGateway } from '../memory/gateway.js';

function memoryFaults(gw: MemoryTykGateway | MemoryTykDashboard) {
  return (op: GatewayFaultOp, kind: GatewayObjectKind, how: FailHow, times = 1) => {
    gw.inject({ op, kind, times, error: (c) => gatewayFailure(how, `${op} ${kind} ${c.id ?? ''}`) });
  };
}

async function memoryCe(): Promise<GatewaySubject> {
  const gw = new MemoryTykGateway({ clock: new FakeClock() });
  return { gateway: gw, mode: 'ce', afterReload: async () => {}, failNext: memoryFaults(gw), dropReloads: (n) => gw.dropReloads(n), close: async () => {} };
}

/** Three replicas of a Tyk Gateway behind one ReplicaGateway; a fault or a lost reload hits every replica (the gateway as a whole). */
async function memoryReplicas(): Promise<GatewaySubject> {
  const clock = new FakeClock();
  const replicas = ['a', 'b', 'c'].map((n) => new MemoryTykGateway({ name: `pod-${n}`, clock }));
  const byUrl = new Map(replicas.map((g, i) => [`http://10.0.0.${i + 1}:8080`, g]));
  const gw = new ReplicaGateway(
    'default',
    async () => [...byUrl.keys()].map((url, i) => ({ name: `pod-${'abc'[i]}`, url })),
    (r) => byUrl.get(r.url) as MemoryTykGateway,
  );
  return {
    gateway: gw,
    mode: 'ce',
    afterReload: async () => {},
    failNext: (op, kind, how, times = 1) => {
      for (const r of replicas) memoryFaults(r)(op, kind, how, times);
    },
    dropReloads: (n) => {
      for (const r of replicas) r.dropReloads(n);
    },
    close: async () => {},
  };
}

async function memoryPro(): Promise<GatewaySubject> {
  const gw = new MemoryTykDashboard({ clock: new FakeClock() });
  return { gateway: gw, mode: 'pro', orgId: gw.orgId, afterReload: async () => {}, failNext: memoryFaults(gw), close: async () => {} };
}

type Where = Pick<FaultSpec<CallRecord>, 'method' | 'path'>;

function httpFaults(inject: (spec: FaultSpec<CallRecord>) => unknown, where: (op: GatewayFaultOp, kind: GatewayObjectKind) => Where) {
  return (op: GatewayFaultOp, kind: GatewayObjectKind, how: FailHow, times = 1) => {
    // a dropped connection is retried once by the client (lib/platform/http.ts): drop both
    inject('unavailable' in how ? { ...where(op, kind), drop: true, times: times * 2 } : { ...where(op, kind), status: how.status, times });
  };
}

/** The kinds the contract covers (the developer portal's are tested against the Dashboard fake: test/fakes/tyk-dashboard-portal.test.ts). */
type TykKind = 'api' | 'policy' | 'oas';

async function httpCe(transport?: TransportFactory): Promise<GatewaySubject> {
  const fake = await startFakeTykGateway({ reloadDelayMs: 1 });
  const client = new TykGatewayClient({ name: 'default', url: fake.url, secret: fake.secret, timeoutMs: 5_000, ...(transport ? { transport } : {}) });
  const where = (op: GatewayFaultOp, kind: GatewayObjectKind): Where => {
    const base = { api: '/tyk/apis', policy: '/tyk/policies', oas: '/tyk/apis/oas' }[kind as TykKind];
    if (op === 'list') return { method: 'GET', path: base };
    // an OAS API is written by a PUT first
    if (op === 'upsert') return kind === 'oas' ? { method: 'PUT', path: new RegExp(`^${base}/[^/]+$`) } : { method: 'POST', path: base };
    return { method: op === 'get' ? 'GET' : 'DELETE', path: new RegExp(`^${base}/[^/]+$`) };
  };
  return {
    gateway: client,
    mode: 'ce',
    afterReload: () => fake.waitForReloads(),
    failNext: httpFaults((s) => fake.inject(s), where),
    dropReloads: (n) => fake.dropReloads(n),
    close: async () => {
      await client.close();
      await fake.close();
    },
  };
}

async function httpPro(transport?: TransportFactory): Promise<GatewaySubject> {
  const fake = await startFakeTykDashboard();
  const client = new TykDashboardClient({ name: 'default', url: fake.url, secret: fake.secret, timeoutMs: 5_000, ...(transport ? { transport } : {}) });
  const where = (op: GatewayFaultOp, kind: GatewayObjectKind): Where => {
    const base = { api: '/api/apis', policy: '/api/portal/policies', oas: '/api/apis/oas' }[kind as TykKind];
    // OAS APIs are listed with the others; written by a PUT first
    if (op === 'list') return { method: 'GET', path: kind === 'oas' ? '/api/apis' : base };
    if (op === 'upsert') return kind === 'oas' ? { method: 'PUT', path: new RegExp(`^${base}/[^/]+$`) } : { method: 'POST', path: base };
    return { method: op === 'get' ? 'GET' : 'DELETE', path: new RegExp(`^${base}/[^/]+$`) };
  };
  return {
    gateway: client,
    mode: 'pro',
    orgId: fake.orgId,
    afterReload: async () => {},
    failNext: httpFaults((s) => fake.inject(s), where),
    close: async () => {
      await client.close();
      await fake.close();
    },
  };
}

gatewayContract(t, 'MemoryTykGateway (ce)', 'ce', memoryCe);
gatewayContract(t, 'TykGatewayClient over HTTP (ce)', 'ce', () => httpCe());
gatewayContract(t, "TykGatewayClient over undici's pooled client (ce)", 'ce', () => httpCe(undiciTransports()));
gatewayContract(t, 'ReplicaGateway over three MemoryTykGateways (ce)', 'ce', memoryReplicas);
gatewayContract(t, 'MemoryTykDashboard (pro)', 'pro', memoryPro);
gatewayContract(t, 'TykDashboardClient over HTTP (pro)', 'pro', () => httpPro());
gatewayContract(t, "TykDashboardClient over undici's pooled client (pro)", 'pro', () => httpPro(undiciTransports()));

/** What each gateway makes up on its own (ids, times) is masked; everything else must agree. */
function masked(body: JsonObject | null): unknown {
  if (body === null) return null;
  const out: JsonObject = { ...body };
  for (const k of ['id', '_id', 'date_created', 'last_updated']) if (typeof out[k] === 'string' && out[k] !== '' && !(k === 'id' && 'access_rights' in out)) out[k] = '<made up>';
  return out;
}

async function script(s: GatewaySubject): Promise<unknown[]> {
  const gw: Gateway = s.gateway;
  const reads: unknown[] = [];
  const settle = async () => {
    await gw.reload();
    await s.afterReload();
  };
  await gw.upsert('api', 'a1', { ...api('one'), org_id: 'org-1', jwt_default_policies: ['p1'], auth_configs: { authToken: { auth_header_name: 'Authorization' } } });
  await gw.upsert('api', 'a2', api('two', '/one/'));
  await gw.upsert('policy', 'p1', policy('p one', 'a1'));
  await settle();
  reads.push(masked(await gw.get('api', 'a1')), masked(await gw.get('api', 'a2')), masked(await gw.get('policy', 'p1')));
  reads.push([...(await gw.list('api')).keys()].sort(), [...(await gw.list('policy')).keys()]);
  await gw.upsert('api', 'a1', { ...api('one'), active: false, unknown_top_level: 'dropped' });
  await gw.remove('api', 'a2');
  await settle();
  reads.push(masked(await gw.get('api', 'a1')), await gw.get('api', 'a2'));
  return reads;
}

for (const [mode, memoryOf, httpOf] of [
  ['ce', memoryCe, httpCe],
  ['pro', memoryPro, httpPro],
] as const) {
  t.test(`${mode}: the same writes read back the same from memory and over HTTP`, async (t) => {
    const [m, h] = [await memoryOf(), await httpOf()];
    t.teardown(() => Promise.all([m.close(), h.close()]));
    const fromMemory = await script(m);
    const overHttp = await script(h);
    if (mode === 'pro') {
      // the two Dashboards have different orgs; compare what the fake forces with what memory forces
      const org = (v: unknown) =>
        JSON.parse(
          JSON.stringify(v)
            .split(h.orgId ?? '\u0000')
            .join('<org>')
            .split(m.orgId ?? '\u0000')
            .join('<org>'),
        ) as unknown;
      t.same(org(fromMemory), org(overHttp));
    } else t.same(fromMemory, overHttp);
  });
}
