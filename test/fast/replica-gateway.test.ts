/**
 * A gateway of several replicas (lib/gateway/replicas.ts) over three in-memory Tyk Gateways:
 * each replica observed and written on its own. Pins which replicas a write and a reload reach
 * (only those that differ), what the engine is shown where replicas differ (absent, or the
 * replica that left what they agreed on), read-backs that wait for every replica, a replica that
 * cannot be read (left out, never written), and replicas that join and leave.
 */
import t, { type Test } from 'tap';
import type { CertificateStore } from '../../lib/gateway/certificates.js';
import { type Replica, ReplicaGateway } from '../../lib/gateway/replicas.js';
import type { JsonObject } from '../../lib/gateway/types.js';
import { GatewayApiError, GatewayUnavailableError } from '../../lib/platform/errors.js';
import { FakeClock } from '../harness/clock.js';
import { api } from '../memory/contract.js';
import { gatewayFailure, MemoryTykGateway } from '../memory/gateway.js';

/** Three replicas (pod-a, pod-b, pod-c) behind one ReplicaGateway, whose discovery answers `members`. */
function replicas(names = ['pod-a', 'pod-b', 'pod-c']) {
  const clock = new FakeClock();
  const pods = new Map<string, MemoryTykGateway>();
  const add = (name: string) => {
    const gw = new MemoryTykGateway({ name, clock });
    pods.set(name, gw);
    return gw;
  };
  for (const n of names) add(n);
  let members = [...names];
  let discoveryFails = false;
  const closed: string[] = [];
  // the replicas' certificate store: the gateway's Redis, which they share; who asked is kept
  const certs = new SharedCertificates();
  const discover = async (): Promise<Replica[]> => {
    if (discoveryFails) throw new Error('endpointslices: 503');
    return members.map((name) => ({ name, url: `http://${name}:8080` }));
  };
  const gateway = new ReplicaGateway(
    'default',
    discover,
    (r) => {
      const gw = pods.get(r.name) as MemoryTykGateway;
      return Object.assign(Object.create(gw) as MemoryTykGateway, {
        certificates: certs.through(r.name),
        close: async () => {
          closed.push(r.name);
        },
      });
    },
    { refreshMs: 1_000, now: () => clock.now() },
  );
  const pod = (name: string) => pods.get(name) as MemoryTykGateway;
  const writes = () => Object.fromEntries([...pods].map(([n, g]) => [n, g.writes()]));
  const reloads = () => Object.fromEntries([...pods].map(([n, g]) => [n, g.reloads.requested]));
  const reset = () => {
    for (const g of pods.values()) {
      g.resetCalls();
      g.reloads.requested = 0;
    }
  };
  return {
    gateway,
    certs,
    clock,
    pod,
    add,
    writes,
    reloads,
    reset,
    closed,
    setMembers: (m: string[]) => {
      members = m;
    },
    failDiscovery: (fails: boolean) => {
      discoveryFails = fails;
    },
  };
}

/** One store of certificates, as the replicas' shared Redis is: who uploaded what. */
class SharedCertificates {
  readonly ids = new Set<string>();
  readonly calls: string[] = [];
  through(replica: string): CertificateStore {
    return {
      uploadCertificate: async (pem) => {
        this.calls.push(`${replica} upload`);
        const id = `cert-${pem.length}`;
        const created = !this.ids.has(id);
        this.ids.add(id);
        return { id, created };
      },
      hasCertificate: async (id) => this.ids.has(id),
      removeCertificate: async (id) => {
        this.calls.push(`${replica} remove`);
        this.ids.delete(id);
      },
      listCertificates: async () => [...this.ids],
    };
  }
}

/** How a test reads a replicas' list: held whole (a map), or streamed to a visitor as the engine reads it. */
type ListOf = (gw: ReplicaGateway, kind: 'api') => Promise<Map<string, JsonObject>>;

const whole: ListOf = (gw, kind) => gw.list(kind);

const streamed: ListOf = async (gw, kind) => {
  const out = new Map<string, JsonObject>();
  await gw.list(kind, (id, item) => {
    out.set(id, structuredClone(item.body()));
  });
  return out;
};

/** The engine's way: list, write what differs, reload, read back. */
async function sync(gw: ReplicaGateway, id: string, body: JsonObject, listOf: ListOf): Promise<void> {
  await listOf(gw, 'api');
  await gw.upsert('api', id, body);
  await gw.reload();
  await gw.get('api', id);
}

/** Every rule, with the lists held whole and streamed (listOf). */
function suite(t: Test, listOf: ListOf): void {
  t.test('an API created reaches every replica: one write and one reload each; a steady state writes nothing', async (t) => {
    const w = replicas();
    await sync(w.gateway, 'a1', api('one'), listOf);
    t.same(w.writes(), { 'pod-a': 1, 'pod-b': 1, 'pod-c': 1 });
    t.same(w.reloads(), { 'pod-a': 1, 'pod-b': 1, 'pod-c': 1 }, 'each replica reloaded on its own');
    const listed = await listOf(w.gateway, 'api');
    t.same([...listed.keys()], ['a1'], 'every replica holds it: shown as one object');
    t.ok(await w.gateway.get('api', 'a1'), 'read back');
    // each replica makes up its own object id: not a difference
    w.pod('pod-b').editLoaded('api', 'a1', (o) => {
      o.id = 'ffffffffffffffffffffffff';
    });
    w.reset();
    const again = await listOf(w.gateway, 'api');
    t.equal(again.get('a1')?.id, w.pod('pod-a').loaded('api').get('a1')?.id, "the first replica's object is shown");
    t.ok(await w.gateway.get('api', 'a1'), 'the replicas agree');
    await w.gateway.upsert('api', 'a1', { ...api('one'), active: false });
    t.same(w.writes(), { 'pod-a': 1, 'pod-b': 1, 'pod-c': 1 }, 'alike: a write goes to all');
  });

  t.test('a replica restarted empty: the object is absent to the engine; the write and the reload go to that replica alone', async (t) => {
    const w = replicas();
    await sync(w.gateway, 'a1', api('one'), listOf);
    w.pod('pod-b').restart();
    w.reset();
    t.equal((await listOf(w.gateway, 'api')).size, 0, 'one replica lacks it: absent, so the engine writes it');
    t.equal(await w.gateway.get('api', 'a1'), null);
    await w.gateway.upsert('api', 'a1', api('one'));
    t.same(w.writes(), { 'pod-a': 0, 'pod-b': 1, 'pod-c': 0 });
    t.equal(await w.gateway.get('api', 'a1'), null, 'not visible before the reload: the replica still lacks it');
    await w.gateway.reload();
    t.same(w.reloads(), { 'pod-a': 0, 'pod-b': 1, 'pod-c': 0 });
    t.ok(await w.gateway.get('api', 'a1'), 'visible once every replica has it');
    await w.gateway.reload();
    t.same(w.reloads(), { 'pod-a': 0, 'pod-b': 2, 'pod-c': 0 }, 'a reload asked again with nothing written since (a lost one): the same replica again');
  });

  t.test('the first replica restarted empty (the one a streamed list passes through): written alone, its copies compared with the others’', async (t) => {
    const w = replicas();
    await sync(w.gateway, 'a1', api('one'), listOf);
    await sync(w.gateway, 'a2', api('two'), listOf);
    w.pod('pod-a').restart();
    w.reset();
    t.equal((await listOf(w.gateway, 'api')).size, 0, 'the first replica lacks both: absent');
    await w.gateway.upsert('api', 'a1', api('one'));
    await w.gateway.upsert('api', 'a2', api('two'));
    t.same(w.writes(), { 'pod-a': 2, 'pod-b': 0, 'pod-c': 0 });
    await w.gateway.reload();
    t.same(w.reloads(), { 'pod-a': 1, 'pod-b': 0, 'pod-c': 0 });
    t.equal((await listOf(w.gateway, 'api')).size, 2);
  });

  t.test('a replica edited behind our back is shown as it is, and restored with one write to it', async (t) => {
    const w = replicas();
    await sync(w.gateway, 'a1', api('one'), listOf);
    w.pod('pod-c').tamper('api', 'a1', (o) => {
      (o.proxy as JsonObject).target_url = 'http://evil.example';
    });
    w.reset();
    const shown = (await listOf(w.gateway, 'api')).get('a1');
    t.match(shown, { proxy: { target_url: 'http://evil.example' } }, 'the replica that left what they agreed on');
    await w.gateway.upsert('api', 'a1', api('one'));
    await w.gateway.reload();
    t.same(w.writes(), { 'pod-a': 0, 'pod-b': 0, 'pod-c': 1 });
    t.same(w.reloads(), { 'pod-a': 0, 'pod-b': 0, 'pod-c': 1 });
    t.match(w.pod('pod-c').loaded('api').get('a1'), { proxy: { target_url: 'http://httpbin.org' } });
    t.match((await listOf(w.gateway, 'api')).get('a1'), { proxy: { target_url: 'http://httpbin.org' } });
  });

  t.test('two replicas edited alike: still the edit is shown (what they last agreed on is known), and both are restored', async (t) => {
    const w = replicas();
    await sync(w.gateway, 'a1', api('one'), listOf);
    for (const p of ['pod-a', 'pod-b'])
      w.pod(p).tamper('api', 'a1', (o) => {
        o.active = false;
      });
    w.reset();
    t.match((await listOf(w.gateway, 'api')).get('a1'), { active: false });
    await w.gateway.upsert('api', 'a1', api('one'));
    t.same(w.writes(), { 'pod-a': 1, 'pod-b': 1, 'pod-c': 0 });
  });

  t.test('a spec change, with every replica alike, is written to all', async (t) => {
    const w = replicas();
    await sync(w.gateway, 'a1', api('one'), listOf);
    w.reset();
    await sync(w.gateway, 'a1', { ...api('one'), active: false }, listOf);
    t.same(w.writes(), { 'pod-a': 1, 'pod-b': 1, 'pod-c': 1 });
    t.match(await w.gateway.get('api', 'a1'), { active: false });
  });

  t.test('a replica that answers 500 is left out: the others are read and written, it is never written, and named', async (t) => {
    const w = replicas();
    await sync(w.gateway, 'a1', api('one'), listOf);
    w.reset();
    w.pod('pod-b').inject({ op: 'list', times: 1, error: () => gatewayFailure({ status: 500 }, 'list api') });
    const listed = await listOf(w.gateway, 'api');
    t.ok(listed.has('a1'), 'the readable replicas agree: the object is there');
    t.match(w.gateway.unreadable(), [{ replica: 'pod-b', error: /500/ }]);
    await w.gateway.upsert('api', 'a1', { ...api('one'), active: false });
    t.same(w.writes(), { 'pod-a': 1, 'pod-b': 0, 'pod-c': 1 }, 'nothing written to the replica that could not be read');
    await w.gateway.reload();
    t.same(w.reloads(), { 'pod-a': 1, 'pod-b': 0, 'pod-c': 1 });
    await w.gateway.remove('api', 'a1');
    await w.gateway.reload();
    t.equal(w.pod('pod-b').loaded('api').size, 1, 'nor deleted from it');
    // readable again: it is seen as it is, and written
    w.reset();
    t.equal((await listOf(w.gateway, 'api')).size, 0, 'pod-b still holds it, the others removed it: absent to the engine');
    t.same(w.gateway.unreadable(), []);
  });

  t.test('every replica unreadable: the read fails, as one gateway would', async (t) => {
    const w = replicas();
    for (const p of ['pod-a', 'pod-b', 'pod-c']) w.pod(p).inject({ op: 'list', times: 1, error: () => gatewayFailure({ status: 503 }, 'list api') });
    const err = await listOf(w.gateway, 'api').catch((e: unknown) => e);
    t.ok(err instanceof GatewayApiError && err.status === 503);
  });

  t.test('an answer about one object (a 4xx) is the answer; a 5xx from one replica leaves it out of the read', async (t) => {
    const w = replicas();
    await sync(w.gateway, 'a1', api('one'), listOf);
    w.pod('pod-a').inject({ op: 'get', times: 1, error: () => gatewayFailure({ status: 403 }, 'get api a1') });
    const err = await w.gateway.get('api', 'a1').catch((e: unknown) => e);
    t.ok(err instanceof GatewayApiError && err.status === 403, 'thrown, not hidden');
    t.same(w.gateway.unreadable(), [], 'the replica is not taken as down');
    w.pod('pod-c').inject({ op: 'get', times: 1, error: () => gatewayFailure({ unavailable: true }, 'get api a1') });
    t.ok(await w.gateway.get('api', 'a1'), 'the others answer');
    t.match(w.gateway.unreadable(), [{ replica: 'pod-c' }]);
  });

  t.test('a write that fails on one replica fails the call naming it, after the others are written', async (t) => {
    const w = replicas();
    await listOf(w.gateway, 'api');
    w.pod('pod-c').inject({ op: 'upsert', times: 1, error: () => gatewayFailure({ status: 500 }, 'write api a1') });
    const err = await w.gateway.upsert('api', 'a1', api('one')).catch((e: unknown) => e);
    t.ok(err instanceof GatewayApiError && err.status === 500, 'the failure kind is kept (the error policy retries it)');
    t.match((err as Error).message, /on 1 of 3 replicas failed: pod-c: /);
    t.same(w.writes(), { 'pod-a': 1, 'pod-b': 1, 'pod-c': 1 });
    await w.gateway.reload();
    t.equal(await w.gateway.get('api', 'a1'), null, 'not visible while one replica lacks it');
  });

  t.test('a removal goes to the replicas that hold it; its read-back waits for all of them', async (t) => {
    const w = replicas();
    await sync(w.gateway, 'a1', api('one'), listOf);
    w.pod('pod-a').removeBehindOurBack('api', 'a1');
    await listOf(w.gateway, 'api');
    w.reset();
    await w.gateway.remove('api', 'a1');
    t.same(w.writes(), { 'pod-a': 0, 'pod-b': 1, 'pod-c': 1 });
    t.ok(await w.gateway.get('api', 'a1'), 'still held by a replica before the reload: not gone yet');
    await w.gateway.reload();
    t.equal(await w.gateway.get('api', 'a1'), null);
  });

  t.test('a replica that joins is read like the others and gets what it lacks; one that leaves is forgotten and never written', async (t) => {
    const w = replicas();
    await sync(w.gateway, 'a1', api('one'), listOf);
    w.add('pod-d');
    w.setMembers(['pod-a', 'pod-b', 'pod-c', 'pod-d']);
    w.reset();
    t.equal((await listOf(w.gateway, 'api')).size, 0, 'the new replica lacks it');
    await w.gateway.upsert('api', 'a1', api('one'));
    await w.gateway.reload();
    t.same(w.writes(), { 'pod-a': 0, 'pod-b': 0, 'pod-c': 0, 'pod-d': 1 });
    t.same(w.gateway.replicaNames(), ['pod-a', 'pod-b', 'pod-c', 'pod-d']);

    w.setMembers(['pod-a', 'pod-c', 'pod-d']);
    w.reset();
    await sync(w.gateway, 'a1', { ...api('one'), active: false }, listOf);
    t.same(w.writes(), { 'pod-a': 1, 'pod-b': 0, 'pod-c': 1, 'pod-d': 1 }, 'the replica that left is never written again');
    t.same(w.closed, ['pod-b'], 'its client closed');
    t.same(w.gateway.replicaNames(), ['pod-a', 'pod-c', 'pod-d']);
  });

  t.test('discovery: asked again at each list and at most every refreshMs otherwise; a failed one keeps the replicas known', async (t) => {
    const w = replicas();
    await listOf(w.gateway, 'api');
    w.setMembers(['pod-a']);
    await w.gateway.get('api', 'x');
    t.same(w.gateway.replicaNames(), ['pod-a', 'pod-b', 'pod-c'], 'within refreshMs: not asked again');
    w.clock.advance(1_000);
    await w.gateway.get('api', 'x');
    t.same(w.gateway.replicaNames(), ['pod-a']);
    w.failDiscovery(true);
    await listOf(w.gateway, 'api');
    t.same(w.gateway.replicaNames(), ['pod-a'], 'kept');
    const fresh = replicas();
    fresh.failDiscovery(true);
    t.ok((await listOf(fresh.gateway, 'api').catch((e: unknown) => e)) instanceof GatewayUnavailableError, 'none known: the gateway is unavailable');
    fresh.failDiscovery(false);
    fresh.setMembers([]);
    const none = await listOf(fresh.gateway, 'api').catch((e: unknown) => e);
    t.ok(none instanceof GatewayUnavailableError && /no ready replica/.test(none.message));
  });

  t.test('certificates go to the replicas’ shared store once, through one replica that can be read', async (t) => {
    const w = replicas();
    await listOf(w.gateway, 'api');
    const store = w.gateway.certificates;
    t.same(await store.uploadCertificate('PEM'), { id: 'cert-3', created: true });
    t.same(w.certs.calls, ['pod-a upload'], 'one upload: the replicas share the store');
    w.pod('pod-a').inject({ op: 'list', times: 1, error: () => gatewayFailure({ unavailable: true }, 'list api') });
    await listOf(w.gateway, 'api');
    await store.removeCertificate('cert-3');
    t.same(w.certs.calls, ['pod-a upload', 'pod-b remove'], 'a replica that cannot be read is not asked');
    t.equal(await store.hasCertificate('cert-3'), false);
  });

  t.test('another pod at an address a replica had: the one before is forgotten and its client closed', async (t) => {
    const clock = new FakeClock();
    const closed: string[] = [];
    let pod = 'pod-x';
    const made: string[] = [];
    const gw = new ReplicaGateway(
      'default',
      async () => [{ name: pod, url: 'http://10.0.0.1:8080' }],
      (r) => {
        made.push(r.name);
        return Object.assign(Object.create(new MemoryTykGateway({ name: r.name, clock })) as MemoryTykGateway, {
          close: async () => {
            closed.push(r.name);
          },
        });
      },
    );
    await listOf(gw, 'api');
    pod = 'pod-y';
    await listOf(gw, 'api');
    t.same(made, ['pod-x', 'pod-y']);
    t.same(closed, ['pod-x']);
    t.same(gw.replicaNames(), ['pod-y']);
  });
}

t.test('lists held whole', async (t) => suite(t, whole));
t.test('lists streamed to a visitor, as the engine reads them', async (t) => suite(t, streamed));
