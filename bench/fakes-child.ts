/**
 * The bench's fakes process: the loopback Kubernetes API-server fake and Tyk Gateway fake
 * (test/fakes/*), run apart from the measured process so that serving the reconciler's
 * requests (the gateway's echo of N APIs, the API server's pages, the call logs) costs neither
 * its CPU time nor its memory. Started by bench/run.ts (`fork`, with tsx) and driven over IPC
 * (./ipc.ts): seed N objects, reset and read call counts, restart the gateway, drift objects on
 * the gateway side, check what the gateway holds.
 *
 * Call counts come from the fakes' own call logs.
 *
 * The storm's cluster users (bench/storm-child.ts) write through a back door, POST /write on a
 * server of its own in this process: the object is changed and stored as a write through the
 * API would store it (new resourceVersion, generation bumped when the spec changed, a watch
 * event), but without the fake's per-request schema validation, which costs it ~3 ms of CPU per
 * PATCH: 5,000 of them in 10 s would take most of a core from serving the reconciler, where a
 * real API server validates on cores of its own. Nothing of it enters the call logs.
 */

import { createServer } from 'node:http';
import { pathToFileURL } from 'node:url';
import { listenOnLoopback, readBody } from '../test/fakes/http-plumbing.js';
import { type FakeObjectInput, startFakeKubeApiServer } from '../test/fakes/kube-apiserver.js';
import { type FakeTykGateway, type JsonObject, startFakeTykGateway } from '../test/fakes/tyk-gateway.js';
import { apiDefinition } from './fixtures.js';
import { serve } from './ipc.js';
import { type ProfileSummary, startProfile } from './profile.js';
import { type Counts, type Endpoints, type GatewayCounts, type KubeCounts, objectName, REPLICA_SERVICE, type UserWrite } from './shared.js';

/** /apis/<group>/<version>/[namespaces/<ns>/]<plural>[/<name>[/<sub>]] or /api/v1/...: its parts. */
function parseKubePath(path: string): { plural: string; name?: string; sub?: string } | undefined {
  const segs = path.split('/').slice(1);
  let rest: string[];
  if (segs[0] === 'apis' && segs.length >= 4) rest = segs.slice(3);
  else if (segs[0] === 'api' && segs.length >= 3) rest = segs.slice(2);
  else return undefined;
  if (rest[0] === 'namespaces' && rest.length >= 3) rest = rest.slice(2);
  const [plural, name, sub] = rest;
  if (plural === undefined) return undefined;
  return { plural, ...(name === undefined ? {} : { name }), ...(sub === undefined ? {} : { sub }) };
}

const GATEWAY_LIST = /^\/tyk\/(apis|apis\/oas|policies)$/;
const GATEWAY_GET = /^\/tyk\/(apis|apis\/oas|policies)\/[^/]+$/;
const GATEWAY_RELOAD = /^\/tyk\/reload(\/group)?$/;

type FakeKube = Awaited<ReturnType<typeof startFakeKubeApiServer>>;

/** The storm users' back door (see the header): POST /write with a UserWrite → the object as stored. */
async function startUsersDoor(kube: FakeKube): Promise<{ url: string; close: () => void }> {
  const server = createServer((req, res) => {
    void readBody(req).then((raw) => {
      const w = JSON.parse(raw) as UserWrite;
      const obj = kube.getObject('apidefinitions', w.namespace, w.name);
      if (!obj) return res.writeHead(404).end();
      if (w.rate !== undefined) obj.spec = { ...obj.spec, global_rate_limit: { ...(obj.spec?.global_rate_limit as object), rate: w.rate } };
      if (w.touch !== undefined) obj.metadata.annotations = { ...obj.metadata.annotations, 'bench.example.com/touched': w.touch };
      delete obj.metadata.generation;
      delete obj.metadata.resourceVersion;
      const text = JSON.stringify(kube.put(obj));
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
    });
  });
  const port = await listenOnLoopback(server);
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

/** An EndpointSlice of the replicas' Service naming one gateway fake (each has a port of its own, so a slice each). */
function replicaSlice(i: number, gw: FakeTykGateway): FakeObjectInput {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: `${REPLICA_SERVICE.name}-${i}`, namespace: REPLICA_SERVICE.namespace, labels: { 'kubernetes.io/service-name': REPLICA_SERVICE.name } },
    addressType: 'IPv4',
    endpoints: [{ addresses: ['127.0.0.1'], conditions: { ready: true }, targetRef: { kind: 'Pod', namespace: REPLICA_SERVICE.namespace, name: `gateway-${i}` } }],
    ports: [{ name: REPLICA_SERVICE.port, port: Number(new URL(gw.url).port), protocol: 'TCP' }],
  };
}

function makeHandlers(kube: FakeKube, tyk: FakeTykGateway, users: { url: string; close: () => void }) {
  /** the replicas phase's further gateways (copies of `tyk`); their calls count with the gateway's */
  const extra: FakeTykGateway[] = [];
  const gateways = (): FakeTykGateway[] => [tyk, ...extra];
  let reloadsBase = tyk.reloads;
  let profiler: Awaited<ReturnType<typeof startProfile>> | undefined;
  let cpuBase = process.cpuUsage();

  const kubeCounts = (): KubeCounts => {
    const c: KubeCounts = { listPages: 0, otherLists: 0, gets: 0, otherGets: 0, statusPatches: 0, finalizerPatches: 0, eventWrites: 0, other: 0, total: 0 };
    for (const call of kube.calls) {
      c.total++;
      const p = parseKubePath(call.path);
      if (p === undefined) c.other++;
      else if (p.plural === 'events' && (call.method === 'POST' || call.method === 'PATCH')) c.eventWrites++;
      else if (call.method === 'GET' && p.name === undefined) p.plural === 'apidefinitions' ? c.listPages++ : c.otherLists++;
      else if (call.method === 'GET' && p.sub === undefined) p.plural === 'apidefinitions' ? c.gets++ : c.otherGets++;
      else if (call.method === 'PATCH' && p.sub === 'status') c.statusPatches++;
      else if (call.method === 'PATCH' && p.name !== undefined && p.sub === undefined) c.finalizerPatches++;
      else c.other++;
    }
    return c;
  };

  const gatewayCounts = (): GatewayCounts => {
    const sum = (f: (g: FakeTykGateway) => number): number => gateways().reduce((n, g) => n + f(g), 0);
    const list = sum((g) => g.count('GET', GATEWAY_LIST));
    const get = sum((g) => g.count('GET', GATEWAY_GET));
    const write = sum((g) => g.writes());
    const reload = sum((g) => g.count('GET', GATEWAY_RELOAD));
    const total = sum((g) => g.count('*'));
    const r = tyk.reloads;
    return { list, get, write, reload, reloadsApplied: r.applied - reloadsBase.applied, reloadsDropped: r.dropped - reloadsBase.dropped, other: total - list - get - write - reload, total };
  };

  /**
   * The gateway's loaded API `id`, read in place: the facade's loaded() copies every loaded API
   * (75 MB at N = 10,000), far too slow to poll while the reconciler is measured. editLoaded with
   * a mutator that changes nothing is the facade's one way to look at a single object.
   */
  const loadedApi = (id: string): JsonObject | undefined => {
    let found: JsonObject | undefined;
    try {
      tyk.editLoaded('api', id, (api) => {
        found = api;
      });
    } catch {
      return undefined; // not loaded
    }
    return found;
  };

  const handlers = {
    endpoints: (): Endpoints => ({ kubeUrl: kube.url, kubeToken: kube.token, kubeconfigYaml: kube.kubeconfigYaml(), tykUrl: tyk.url, tykSecret: tyk.secret, usersUrl: users.url }),
    /** Seeds objects [from, to) (as a cluster already holding them: no validation, no call logged). */
    seed: (args: { from: number; to: number }): number => {
      for (let i = args.from; i < args.to; i++) {
        const { namespace, name } = objectName(i);
        kube.put(apiDefinition(namespace, name, i));
      }
      return kube.listObjects('apidefinitions').length;
    },
    resetCalls: (): void => {
      kube.resetCalls();
      for (const g of gateways()) g.resetCalls();
      reloadsBase = tyk.reloads;
      cpuBase = process.cpuUsage();
    },
    counts: (): Counts => {
      const cpu = process.cpuUsage(cpuBase);
      return { kube: kubeCounts(), gateway: gatewayCounts(), fakesCpuMs: Math.round((cpu.user + cpu.system) / 1000) };
    },
    /**
     * `count` more gateway fakes holding what the gateway holds (replicas that synced from the
     * same writes), and the EndpointSlices of REPLICA_SERVICE naming all of them; their URLs.
     */
    replicas: async (args: { count: number }): Promise<string[]> => {
      for (let i = 0; i < args.count; i++) {
        const gw = await startFakeTykGateway({ secret: tyk.secret });
        gw.copyFrom(tyk);
        extra.push(gw);
      }
      kube.registerResource({ group: 'discovery.k8s.io', version: 'v1', kind: 'EndpointSlice', plural: 'endpointslices', builtin: true });
      gateways().forEach((gw, i) => kube.put(replicaSlice(i, gw)));
      return gateways().map((g) => g.url);
    },
    /** A new gateway process that lost everything (no files, nothing loaded). */
    restartGateway: (): void => tyk.restart(),
    /** Of `ids`, how many the gateway has loaded. */
    loadedCount: (args: { ids: string[] }): number => args.ids.filter((id) => loadedApi(id) !== undefined).length,
    /**
     * Someone edits `ids` on the gateway directly (a field we manage: proxy.target_url), as a
     * POST and a reload would: the definition file and the loaded copy both change.
     */
    drift: (args: { ids: string[]; targetUrl: string }): void => {
      const mutate = (api: JsonObject): void => {
        (api.proxy as JsonObject).target_url = args.targetUrl;
      };
      for (const id of args.ids) {
        tyk.editFile('api', id, mutate);
        tyk.editLoaded('api', id, mutate);
      }
    },
    /** Of `ids`, those whose loaded proxy.target_url is `targetUrl` (or that are not loaded). */
    stillDrifted: (args: { ids: string[]; targetUrl: string }): string[] =>
      args.ids.filter((id) => {
        const api = loadedApi(id);
        return api === undefined || (api.proxy as JsonObject | undefined)?.target_url === args.targetUrl;
      }),
    /** Of `expected` (gateway id → global_rate_limit.rate), those the gateway does not show yet. */
    notYetOnGateway: (args: { expected: [string, number][] }): string[] =>
      args.expected.filter(([id, rate]) => (loadedApi(id)?.global_rate_limit as JsonObject | undefined)?.rate !== rate).map(([id]) => id),
    /** One loaded API as the gateway echoes it (for the hashOf micro benchmark). */
    echo: (args: { id: string }): JsonObject | undefined => structuredClone(loadedApi(args.id)),
    /** The fakes' CPU profile of one phase (BENCH_PROFILE_FAKES): start it, then stop it into `file`. */
    profileStart: async (): Promise<void> => {
      profiler = await startProfile();
    },
    profileStop: async (args: { file: string }): Promise<ProfileSummary> => {
      if (!profiler) throw new Error('profileStop without profileStart');
      const p = profiler;
      profiler = undefined;
      return p.stop(args.file);
    },
    memory: (): { rssMb: number; maxRssMb: number } => ({ rssMb: Math.round(process.memoryUsage().rss / 2 ** 20), maxRssMb: Math.round(process.resourceUsage().maxRSS / 1024) }),
    close: async (): Promise<void> => {
      users.close();
      await Promise.allSettled([kube.close(), ...gateways().map((g) => g.close())]);
    },
  };
  return handlers;
}

/** What the fakes process answers: bench/run.ts types its requests with it. */
export type FakesApi = ReturnType<typeof makeHandlers>;

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [kube, tyk] = await Promise.all([startFakeKubeApiServer(), startFakeTykGateway()]);
  serve(makeHandlers(kube, tyk, await startUsersDoor(kube)));
}
