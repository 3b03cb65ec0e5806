/**
 * The cluster a test World runs against, behind one interface: the loopback fake API server
 * (the default: fault injection, call counting) or a real kube-apiserver (the real tier, when
 * the runner set REAL_KUBE_*; see test/harness/real-apiserver.ts and scripts/test-real.ts).
 *
 * Both count the calls the service makes (the real one through a loopback proxy that forwards
 * to the real server and logs each call), so "no write, no patch" assertions hold in both
 * tiers. The test side (seeding, reading back, removing) acts as a cluster admin; the service
 * uses the token and the RBAC it is deployed with (the real tier) or the fake's token.
 *
 * `put` takes the kinds tests seed as an admin: Secrets, ConfigMaps, Services, Namespaces,
 * Ingresses, EndpointSlices, and Gateway API's GatewayClasses (cluster-scoped), Gateways and
 * HTTPRoutes (gateway.networking.k8s.io/v1); a Namespace put on a real server is one whose
 * objects are cleaned up.
 *
 * Guarantees: `close()` stops what the cluster started; on a real server it removes every
 * object the tests left in the namespaces they used (finalizers stripped first; not the
 * `kubernetes` Service the server keeps, nor ServiceAccount tokens) and the cluster-scoped
 * objects (GatewayClasses) this World put, so the next World starts from an empty cluster.
 * Namespaces stay (a real server without a controller manager never finishes deleting one).
 * Throws FakeOnlyError for fault injection on a real server.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import type { KubeObject } from '../../lib/kube/types.js';
import { countCalls } from '../fakes/faults.js';
import { CallLog, listenOnLoopback } from '../fakes/http-plumbing.js';
import { type FakeCall, type FakeKubeApiServer, type FakeKubeApiServerOptions, startFakeKubeApiServer } from '../fakes/kube-apiserver.js';
import { AdminClient, type RealApiServerInfo, realApiServerFromEnv } from './real-apiserver.js';

/** Resources tests create; "plural" or "plural.group". Core resources have no group. */
const TYK_GROUP = 'tyk.tyk.io';
const TYK_VERSION = 'v1alpha1';
const CORE = new Set(['secrets', 'configmaps', 'events', 'namespaces', 'services']);
/** Cluster-scoped resources: their paths take no namespace. */
const CLUSTER_SCOPED = new Set(['namespaces', 'gatewayclasses']);
const GATEWAY_API = '/apis/gateway.networking.k8s.io/v1';
/** Built-in resources of other groups the tests use: plural → "/apis/<group>/<version>". */
const OTHER_GROUPS: Record<string, string> = {
  ingresses: '/apis/networking.k8s.io/v1',
  referencegrants: '/apis/gateway.networking.k8s.io/v1beta1',
  gatewayclasses: GATEWAY_API,
  gateways: GATEWAY_API,
  httproutes: GATEWAY_API,
  // the real tier's server (1.20) serves EndpointSlices as v1beta1 only
  'endpointslices.discovery.k8s.io': '/apis/discovery.k8s.io/v1beta1',
};
/** Plurals of the kinds `put` takes. */
const PUT_PLURALS: Record<string, string> = {
  Ingress: 'ingresses',
  EndpointSlice: 'endpointslices.discovery.k8s.io',
  GatewayClass: 'gatewayclasses',
  Gateway: 'gateways',
  HTTPRoute: 'httproutes',
  Service: 'services',
  Namespace: 'namespaces',
};
/** What a real-server World cleans up after itself in each namespace it used, in this order (then the GatewayClasses it put). */
const CLEANUP = [
  // an HTTPRoute's ApiDefinitions are owned by it; routes first, so none is left waiting on them
  'httproutes',
  'gateways',
  'endpointslices.discovery.k8s.io',
  'referencegrants',
  'ingresses',
  'portalapicatalogues',
  'apidescriptions',
  'portalconfigs',
  'securitypolicies',
  'apidefinitions',
  'operatorcontexts',
  'tykoasapidefinitions',
  'supergraphs',
  'subgraphs',
  'secrets',
  'configmaps',
  'services',
  'events',
];

export class FakeOnlyError extends Error {
  constructor(what: string) {
    super(`${what} needs the fake API server; this test cannot run against a real one`);
    this.name = 'FakeOnlyError';
  }
}

function collectionPath(resource: string, namespace: string | undefined): string {
  const plural = resource.replace(/\.tyk\.tyk\.io$/, '');
  const ns = namespace && !CLUSTER_SCOPED.has(plural) ? `/namespaces/${encodeURIComponent(namespace)}` : '';
  const other = OTHER_GROUPS[plural];
  // "plural.group" names the group; the path takes the plural alone
  if (other !== undefined) return `${other}${ns}/${plural.split('.')[0]}`;
  return CORE.has(plural) ? `/api/v1${ns}/${plural}` : `/apis/${TYK_GROUP}/${TYK_VERSION}${ns}/${plural}`;
}

/** What the tests need of a cluster, fake or real. */
export interface Cluster {
  readonly kind: 'fake' | 'real';
  /** the user name the service's token belongs to (as audit events name it) */
  readonly username: string;
  /** the calls the service made, in order (the real tier: as they passed its proxy) */
  readonly calls: readonly FakeCall[];
  count(method: string, path?: RegExp | string): number;
  resetCalls(): void;
  /** the kubeconfig the service uses, written into `dir` */
  writeKubeconfig(dir: string): Promise<string>;
  /** a kubeconfig for the test side (kubectl's view: admin) */
  adminKubeconfig(dir: string): Promise<string>;
  getObject(resource: string, namespace: string | undefined, name: string): Promise<KubeObject | undefined>;
  listObjects(resource: string, namespace?: string): Promise<KubeObject[]>;
  /** creates or replaces an object as an admin (Secrets, ConfigMaps: what kubectl apply would) */
  put(obj: KubeObject): Promise<KubeObject>;
  /** removes an object outright, finalizers and all (a resource deleted behind our back) */
  remove(resource: string, namespace: string | undefined, name: string): Promise<void>;
  /** the fake itself, for fault injection; throws FakeOnlyError on a real server */
  readonly fake: FakeKubeApiServer;
  close(): Promise<void>;
}

// ── the fake ──

class FakeCluster implements Cluster {
  readonly kind = 'fake';
  constructor(readonly fake: FakeKubeApiServer) {}
  get username(): string {
    return this.fake.username;
  }
  get calls(): readonly FakeCall[] {
    return this.fake.calls;
  }
  count(method: string, path?: RegExp | string): number {
    return this.fake.count(method, path);
  }
  resetCalls(): void {
    this.fake.resetCalls();
  }
  writeKubeconfig(dir: string): Promise<string> {
    return this.fake.writeKubeconfig(dir);
  }
  adminKubeconfig(dir: string): Promise<string> {
    return this.fake.writeKubeconfig(dir);
  }
  async getObject(resource: string, namespace: string | undefined, name: string): Promise<KubeObject | undefined> {
    return this.fake.getObject(resource, namespace, name) as KubeObject | undefined;
  }
  async listObjects(resource: string, namespace?: string): Promise<KubeObject[]> {
    return this.fake.listObjects(resource, namespace) as KubeObject[];
  }
  async put(obj: KubeObject): Promise<KubeObject> {
    return this.fake.put(obj) as KubeObject;
  }
  async remove(resource: string, namespace: string | undefined, name: string): Promise<void> {
    this.fake.remove(resource, namespace, name);
  }
  close(): Promise<void> {
    return this.fake.close();
  }
}

// ── a real kube-apiserver ──

/** A loopback HTTP proxy in front of the real server that logs each call, as the fake does. */
class CountingProxy {
  readonly log = new CallLog<FakeCall>();
  private readonly server: Server;
  private readonly agent: Agent;
  port = 0;

  constructor(private readonly info: RealApiServerInfo) {
    this.agent = new Agent({ connect: { ca: info.ca } });
    this.server = createServer((req, res) => void this.forward(req, res));
  }

  async start(): Promise<void> {
    this.port = await listenOnLoopback(this.server);
  }

  private async forward(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://proxy.invalid');
    const call: FakeCall = { method: (req.method ?? 'GET').toUpperCase(), path: url.pathname, query: Object.fromEntries(url.searchParams), status: 0 };
    if (req.headers['content-type']) call.contentType = req.headers['content-type'];
    this.log.push(call);
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    if (body.length > 0) {
      try {
        call.body = JSON.parse(body.toString('utf8')) as unknown;
      } catch {
        call.body = body.toString('utf8');
      }
    }
    const headers = { ...req.headers };
    delete headers.host;
    delete headers.connection;
    try {
      const up = await request(`${this.info.url}${url.pathname}${url.search}`, {
        method: call.method as 'GET',
        headers,
        body: body.length > 0 ? body : undefined,
        dispatcher: this.agent,
        headersTimeout: 60_000,
        bodyTimeout: 60_000,
      });
      call.status = up.statusCode;
      const out = Buffer.from(await up.body.arrayBuffer());
      const resHeaders: Record<string, string | string[]> = {};
      for (const [k, v] of Object.entries(up.headers)) if (v !== undefined && !['transfer-encoding', 'connection', 'content-length'].includes(k)) resHeaders[k] = v;
      res.writeHead(up.statusCode, { ...resHeaders, 'content-length': String(out.length) });
      res.end(out);
    } catch (err) {
      call.status = 502;
      res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(`proxy: ${String(err)}`);
    }
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((ok) => this.server.close(() => ok()));
    await this.agent.close();
  }
}

function kubeconfigYaml(server: string, token: string, ca?: string): string {
  // @kubernetes/client-node refuses an http:// server unless insecure-skip-tls-verify is set
  const cluster = ca ? `    server: ${server}\n    certificate-authority-data: ${Buffer.from(ca).toString('base64')}\n` : `    server: ${server}\n    insecure-skip-tls-verify: true\n`;
  return `apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
${cluster}users:
- name: test
  user:
    token: ${token}
contexts:
- name: test
  context: {cluster: test, user: test, namespace: default}
current-context: test
`;
}

class RealCluster implements Cluster {
  readonly kind = 'real';
  private readonly admin: AdminClient;
  private readonly namespaces = new Set<string>(['default']);
  /** cluster-scoped objects this World put (other than Namespaces), "plural/name", removed by close() */
  private readonly clusterScoped = new Set<string>();

  constructor(
    private readonly info: RealApiServerInfo,
    private readonly proxy: CountingProxy,
  ) {
    this.admin = new AdminClient(info);
  }

  get username(): string {
    return this.info.reconcilerUser;
  }
  get calls(): readonly FakeCall[] {
    return this.proxy.log.entries;
  }
  count(method: string, path?: RegExp | string): number {
    return countCalls(this.proxy.log.entries, method, path);
  }
  resetCalls(): void {
    this.proxy.log.clear();
  }
  get fake(): FakeKubeApiServer {
    throw new FakeOnlyError('fault injection');
  }

  async writeKubeconfig(dir: string): Promise<string> {
    await mkdir(dir, { recursive: true });
    const path = join(dir, 'kubeconfig');
    await writeFile(path, kubeconfigYaml(`http://127.0.0.1:${this.proxy.port}`, this.info.reconcilerToken));
    return path;
  }

  async adminKubeconfig(dir: string): Promise<string> {
    await mkdir(dir, { recursive: true });
    const path = join(dir, 'admin-kubeconfig');
    await writeFile(path, kubeconfigYaml(this.info.url, this.info.adminToken, this.info.ca));
    return path;
  }

  /** Creates the namespace unless it exists (the real server refuses objects in a missing one). */
  async ensureNamespace(namespace: string): Promise<void> {
    if (this.namespaces.has(namespace)) return;
    await this.admin.must('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } }, [409]);
    this.namespaces.add(namespace);
  }

  async getObject(resource: string, namespace: string | undefined, name: string): Promise<KubeObject | undefined> {
    const r = await this.admin.call('GET', `${collectionPath(resource, namespace)}/${encodeURIComponent(name)}`);
    if (r.status === 404) return undefined;
    if (r.status >= 300) throw new Error(`get ${resource} ${namespace}/${name}: ${r.status} ${String(r.json.message ?? '')}`);
    return r.json as unknown as KubeObject;
  }

  async listObjects(resource: string, namespace?: string): Promise<KubeObject[]> {
    const list = await this.admin.must('GET', collectionPath(resource, namespace));
    const items = (list.items ?? []) as KubeObject[];
    // the fake keeps events in creation order; a real list is sorted by name
    if (resource === 'events')
      items.sort(
        (a, b) => String(a.metadata.creationTimestamp ?? '').localeCompare(String(b.metadata.creationTimestamp ?? '')) || Number(a.metadata.resourceVersion) - Number(b.metadata.resourceVersion),
      );
    return items;
  }

  async put(obj: KubeObject): Promise<KubeObject> {
    const resource = PUT_PLURALS[obj.kind] ?? `${obj.kind.toLowerCase()}s`;
    const clusterScoped = CLUSTER_SCOPED.has(resource);
    const namespace = clusterScoped ? undefined : (obj.metadata.namespace ?? 'default');
    if (namespace !== undefined) await this.ensureNamespace(namespace);
    const { namespace: _given, ...rest } = obj.metadata;
    const metadata = namespace === undefined ? rest : { ...rest, namespace };
    const path = collectionPath(resource, namespace);
    const created = await this.admin.call('POST', path, { ...obj, metadata });
    if (resource === 'namespaces') this.namespaces.add(obj.metadata.name);
    // one already there is replaced below: this World's to remove too
    else if (clusterScoped) this.clusterScoped.add(`${resource}/${obj.metadata.name}`);
    if (created.status !== 409) {
      if (created.status >= 300) throw new Error(`create ${obj.kind} ${namespace ?? ''}/${obj.metadata.name}: ${created.status} ${String(created.json.message ?? '')}`);
      return created.json as unknown as KubeObject;
    }
    const current = await this.admin.must('GET', `${path}/${obj.metadata.name}`);
    const rv = (current.metadata as { resourceVersion: string }).resourceVersion;
    // a Service keeps the clusterIP the server allocated (it cannot change)
    const spec = obj.kind === 'Service' ? { ...(current.spec as object), ...(obj.spec as object) } : obj.spec;
    return (await this.admin.must('PUT', `${path}/${obj.metadata.name}`, { ...obj, ...(spec === undefined ? {} : { spec }), metadata: { ...metadata, resourceVersion: rv } })) as unknown as KubeObject;
  }

  async remove(resource: string, namespace: string | undefined, name: string): Promise<void> {
    const path = `${collectionPath(resource, namespace)}/${encodeURIComponent(name)}`;
    await this.admin.must('PATCH', path, { metadata: { finalizers: null } }, [404], 'application/merge-patch+json');
    await this.admin.must('DELETE', path, undefined, [404]);
  }

  async close(): Promise<void> {
    try {
      for (const namespace of this.namespaces) {
        for (const resource of CLEANUP) {
          const items = await this.listObjects(resource, namespace).catch(() => [] as KubeObject[]);
          for (const item of items) {
            if (resource === 'secrets' && (item as { type?: string }).type === 'kubernetes.io/service-account-token') continue;
            // the API server's own Service (it would make it again)
            if (resource === 'services' && namespace === 'default' && item.metadata.name === 'kubernetes') continue;
            await this.remove(resource, namespace, item.metadata.name);
          }
        }
      }
      for (const key of this.clusterScoped) {
        const [resource, name] = key.split('/') as [string, string];
        await this.remove(resource, undefined, name);
      }
    } finally {
      await this.proxy.close();
      await this.admin.close();
    }
  }
}

/**
 * The cluster for a World: the real server when the runner set REAL_KUBE_* (with the CRDs the
 * runner installed; `fakeOptions` do not apply), else a new fake with `fakeOptions`.
 */
export async function startCluster(fakeOptions?: FakeKubeApiServerOptions): Promise<Cluster> {
  const info = realApiServerFromEnv();
  if (!info) return new FakeCluster(await startFakeKubeApiServer(fakeOptions));
  const proxy = new CountingProxy(info);
  await proxy.start();
  return new RealCluster(info, proxy);
}

/** Whether this process runs against a real API server (the real tier). */
export function realTier(): boolean {
  return realApiServerFromEnv() !== undefined;
}

/** A namespace a real cluster must have before objects go into it (no-op on the fake). */
export async function ensureNamespace(cluster: Cluster, namespace: string): Promise<void> {
  if (cluster instanceof RealCluster) await cluster.ensureNamespace(namespace);
}

export { countCalls };
