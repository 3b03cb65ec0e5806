/**
 * A real kube-apiserver with etcd, for the real-API-server test tier (controller-runtime's
 * envtest, for us). `startRealApiServer` starts Debian's etcd and the kube-apiserver that
 * scripts/kube-apiserver.sh builds, on free loopback ports in a temporary folder, with:
 * - token authentication (a token file): an admin in `system:masters` (the test side, as
 *   kubectl would be) and the reconciler as the ServiceAccount user
 *   `system:serviceaccount:gateway-reconciler:gateway-reconciler` (the service side);
 * - `--authorization-mode=RBAC`, with deploy/kubernetes/namespace.yaml and rbac.yaml applied, so
 *   the service runs with exactly the permissions it is deployed with;
 * - the CRDs from the given folders installed and Established before it returns.
 *
 * Guarantees: on success every process is running and answers /readyz; `stop()` ends them and
 * removes the folder. Throws one Error naming the step that failed (with the end of the
 * process's log), after stopping whatever it started. Assumes `etcd` on PATH (or ETCD_BIN) and
 * the kube-apiserver binary at KUBE_APISERVER_BIN (else what scripts/kube-apiserver.sh prints).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import yaml from 'js-yaml';
import { Agent, request } from 'undici';

export const RECONCILER_USER = 'system:serviceaccount:gateway-reconciler:gateway-reconciler';
const ROOT = resolve(import.meta.dirname, '../..');

/** How the tests reach a running real API server; passed to test processes as REAL_KUBE_* env. */
export interface RealApiServerInfo {
  /** https://127.0.0.1:<port> */
  url: string;
  /** the server's self-signed certificate (PEM), to verify it */
  ca: string;
  adminToken: string;
  reconcilerToken: string;
  reconcilerUser: string;
}

export interface RealApiServer extends RealApiServerInfo {
  stop(): Promise<void>;
}

export interface RealApiServerOptions {
  /** folders of CRD YAML files to install */
  crdDirs: readonly string[];
  /** default: from the environment, else scripts/kube-apiserver.sh */
  kubeApiServerBin?: string;
  log?: (line: string) => void;
}

async function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => (a && typeof a === 'object' ? ok(a.port) : fail(new Error('no port'))));
    });
  });
}

function kubeApiServerBinary(explicit?: string): string {
  const bin = explicit ?? process.env.KUBE_APISERVER_BIN;
  if (bin) return bin;
  const out = execFileSync('bash', [join(ROOT, 'scripts/kube-apiserver.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  return out.trim().split('\n').at(-1) ?? '';
}

/** A started process whose output is kept (the last 16 KB) to explain a failure. */
class Proc {
  private tail = '';
  readonly exited: Promise<number | null>;
  constructor(
    readonly name: string,
    readonly child: ChildProcess,
  ) {
    const keep = (b: Buffer) => {
      this.tail = (this.tail + b.toString()).slice(-16_384);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    this.exited = new Promise((ok) => child.once('exit', (code) => ok(code)));
  }
  output(): string {
    return this.tail.split('\n').slice(-15).join('\n');
  }
  running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }
  async stop(): Promise<void> {
    if (!this.running()) return;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 5_000);
    await this.exited;
    clearTimeout(timer);
  }
}

/** Admin calls to the real server (the test side). */
export class AdminClient {
  private readonly agent: Agent;
  constructor(private readonly info: Pick<RealApiServerInfo, 'url' | 'ca' | 'adminToken'>) {
    this.agent = new Agent({ connect: { ca: info.ca } });
  }

  async call(method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<{ status: number; json: Record<string, unknown>; warnings: string[] }> {
    const res = await request(`${this.info.url}${path}`, {
      method: method as 'GET',
      dispatcher: this.agent,
      headers: { authorization: `Bearer ${this.info.adminToken}`, accept: 'application/json', ...(body === undefined ? {} : { 'content-type': contentType }) },
      body: body === undefined ? undefined : JSON.stringify(body),
      headersTimeout: 30_000,
      bodyTimeout: 30_000,
    });
    const text = await res.body.text();
    let json: Record<string, unknown> = {};
    try {
      json = text ? (JSON.parse(text) as Record<string, unknown>) : {};
    } catch {
      json = { message: text };
    }
    // the API server passes an admission webhook's warnings on as `Warning: 299 - "<text>"` headers
    const warning = res.headers.warning;
    const warnings = (Array.isArray(warning) ? warning : warning === undefined ? [] : [warning]).flatMap((h) =>
      [...h.matchAll(/299 - "((?:[^"\\]|\\.)*)"/g)].map((m) => (m[1] ?? '').replace(/\\(.)/g, '$1')),
    );
    return { status: res.statusCode, json, warnings };
  }

  /** Like call, but throws on a status ≥ 300 (other than those allowed). */
  async must(method: string, path: string, body?: unknown, allow: readonly number[] = [], contentType?: string): Promise<Record<string, unknown>> {
    const r = await this.call(method, path, body, contentType);
    if (r.status >= 300 && !allow.includes(r.status)) throw new Error(`${method} ${path}: ${r.status} ${String(r.json.message ?? '')}`);
    return r.json;
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs: number, proc?: Proc): Promise<void> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < end) {
    if (proc && !proc.running()) throw new Error(`${proc.name} exited while waiting for ${what}:\n${proc.output()}`);
    try {
      if (await check()) return;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`timed out waiting for ${what}${last ? ` (${String(last)})` : ''}${proc ? `:\n${proc.output()}` : ''}`);
}

/** The path of a resource kind's collection, from its apiVersion and kind, for the kinds we apply. */
const COLLECTIONS: Record<string, string> = {
  'v1/Namespace': '/api/v1/namespaces',
  'v1/ServiceAccount': '/api/v1/namespaces/{ns}/serviceaccounts',
  'rbac.authorization.k8s.io/v1/ClusterRole': '/apis/rbac.authorization.k8s.io/v1/clusterroles',
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings',
  'rbac.authorization.k8s.io/v1/Role': '/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles',
  'rbac.authorization.k8s.io/v1/RoleBinding': '/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings',
  'apiextensions.k8s.io/v1/CustomResourceDefinition': '/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
};

type Doc = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string; labels?: Record<string, string> }; [k: string]: unknown };

function yamlDocs(file: string): Doc[] {
  return (yaml.loadAll(readFileSync(file, 'utf8')) as (Doc | null)[]).filter((d): d is Doc => !!d && typeof d === 'object' && 'kind' in d);
}

/** Creates each document (or replaces it when it exists). */
export async function applyDocs(admin: AdminClient, docs: readonly Doc[]): Promise<void> {
  for (const doc of docs) {
    const collection = COLLECTIONS[`${doc.apiVersion}/${doc.kind}`];
    if (!collection) throw new Error(`applyDocs: no collection known for ${doc.apiVersion} ${doc.kind}`);
    const path = collection.replace('{ns}', doc.metadata.namespace ?? 'default');
    const created = await admin.call('POST', path, doc);
    if (created.status === 409) {
      const current = await admin.must('GET', `${path}/${doc.metadata.name}`);
      await admin.must('PUT', `${path}/${doc.metadata.name}`, { ...doc, metadata: { ...doc.metadata, resourceVersion: (current.metadata as { resourceVersion: string }).resourceVersion } });
    } else if (created.status >= 300) {
      throw new Error(`create ${doc.kind} ${doc.metadata.name}: ${created.status} ${String(created.json.message ?? '')}`);
    }
  }
}

/** Installs the CRDs and waits until each is Established and its resource answers. */
export async function installCrds(admin: AdminClient, dirs: readonly string[]): Promise<string[]> {
  const crds = dirs.flatMap((dir) =>
    readdirSync(dir)
      .filter((f) => /\.ya?ml$/.test(f))
      .sort()
      .flatMap((f) => yamlDocs(join(dir, f)))
      .filter((d) => d.kind === 'CustomResourceDefinition'),
  );
  await applyDocs(admin, crds);
  for (const crd of crds) {
    await waitFor(
      `CRD ${crd.metadata.name} Established`,
      async () => {
        const got = await admin.must('GET', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.metadata.name}`);
        const conditions = (got.status as { conditions?: { type: string; status: string }[] } | undefined)?.conditions ?? [];
        return conditions.some((c) => c.type === 'Established' && c.status === 'True');
      },
      30_000,
    );
    const spec = crd.spec as { group: string; names: { plural: string }; versions: { name: string; served: boolean }[] };
    const version = spec.versions.find((v) => v.served)?.name ?? 'v1alpha1';
    await waitFor(`${spec.names.plural}.${spec.group} served`, async () => (await admin.call('GET', `/apis/${spec.group}/${version}/${spec.names.plural}?limit=1`)).status === 200, 30_000);
  }
  return crds.map((c) => c.metadata.name);
}

export async function startRealApiServer(options: RealApiServerOptions): Promise<RealApiServer> {
  const log = options.log ?? (() => {});
  const dir = await mkdtemp(join(tmpdir(), 'gr-real-apiserver-'));
  const procs: Proc[] = [];
  const stop = async () => {
    for (const p of procs.reverse()) await p.stop();
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const etcdBin = process.env.ETCD_BIN ?? 'etcd';
    const apiserverBin = kubeApiServerBinary(options.kubeApiServerBin);
    if (!existsSync(apiserverBin)) throw new Error(`kube-apiserver binary not found at ${apiserverBin}`);

    const [etcdClient, etcdPeer, securePort] = await Promise.all([freePort(), freePort(), freePort()]);
    const etcd = new Proc(
      'etcd',
      spawn(
        etcdBin,
        [
          '--data-dir',
          join(dir, 'etcd'),
          '--listen-client-urls',
          `http://127.0.0.1:${etcdClient}`,
          '--advertise-client-urls',
          `http://127.0.0.1:${etcdClient}`,
          '--listen-peer-urls',
          `http://127.0.0.1:${etcdPeer}`,
          '--initial-advertise-peer-urls',
          `http://127.0.0.1:${etcdPeer}`,
          '--initial-cluster',
          `default=http://127.0.0.1:${etcdPeer}`,
          '--name',
          'default',
          '--unsafe-no-fsync',
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      ),
    );
    procs.push(etcd);
    await waitFor(
      'etcd',
      async () => {
        const res = await request(`http://127.0.0.1:${etcdClient}/health`);
        return res.statusCode === 200 && (await res.body.text()).includes('true');
      },
      30_000,
      etcd,
    );
    log(`etcd on 127.0.0.1:${etcdClient}`);

    const adminToken = randomBytes(24).toString('hex');
    const reconcilerToken = randomBytes(24).toString('hex');
    await writeFile(
      join(dir, 'tokens.csv'),
      `${adminToken},test-admin,test-admin,"system:masters"\n${reconcilerToken},${RECONCILER_USER},reconciler-uid,"system:serviceaccounts,system:serviceaccounts:gateway-reconciler"\n`,
    );
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    await writeFile(join(dir, 'sa.key'), privateKey.export({ type: 'pkcs8', format: 'pem' }));
    await writeFile(join(dir, 'sa.pub'), publicKey.export({ type: 'spki', format: 'pem' }));

    const apiserver = new Proc(
      'kube-apiserver',
      spawn(
        apiserverBin,
        [
          `--etcd-servers=http://127.0.0.1:${etcdClient}`,
          '--bind-address=127.0.0.1',
          '--advertise-address=127.0.0.1',
          `--secure-port=${securePort}`,
          '--insecure-port=0',
          `--cert-dir=${join(dir, 'certs')}`,
          `--token-auth-file=${join(dir, 'tokens.csv')}`,
          '--authorization-mode=RBAC',
          '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
          `--service-account-key-file=${join(dir, 'sa.pub')}`,
          `--service-account-signing-key-file=${join(dir, 'sa.key')}`,
          '--service-cluster-ip-range=10.0.0.0/24',
          '--disable-admission-plugins=ServiceAccount',
          '--enable-priority-and-fairness=false',
          '--profiling=false',
          // the "kubernetes" Service's endpoints would be 127.0.0.1, which the server itself refuses
          '--endpoint-reconciler-type=none',
          '--v=0',
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      ),
    );
    procs.push(apiserver);
    const certFile = join(dir, 'certs', 'apiserver.crt');
    await waitFor('the kube-apiserver serving certificate', async () => existsSync(certFile), 60_000, apiserver);
    const ca = readFileSync(certFile, 'utf8');
    const url = `https://127.0.0.1:${securePort}`;
    const admin = new AdminClient({ url, ca, adminToken });
    try {
      await waitFor('kube-apiserver /readyz', async () => (await admin.call('GET', '/readyz')).status === 200, 120_000, apiserver);
      await waitFor('namespace default', async () => (await admin.call('GET', '/api/v1/namespaces/default')).status === 200, 60_000, apiserver);
      log(`kube-apiserver on ${url}`);
      const rbac = yamlDocs(join(ROOT, 'deploy/kubernetes/rbac.yaml'));
      await applyDocs(admin, yamlDocs(join(ROOT, 'deploy/kubernetes/namespace.yaml')));
      // the Role for the gateway's EndpointSlices lives in the gateway's namespace (tyk): it must exist
      for (const ns of new Set(rbac.map((d) => d.metadata.namespace).filter((n): n is string => n !== undefined))) {
        await admin.must('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }, [409]);
      }
      await applyDocs(admin, rbac);
      const installed = await installCrds(admin, options.crdDirs);
      log(`installed ${installed.length} CRDs: ${installed.join(', ')}`);
    } finally {
      await admin.close();
    }
    return { url, ca, adminToken, reconcilerToken, reconcilerUser: RECONCILER_USER, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** The REAL_KUBE_* environment a test process reads with `realApiServerFromEnv`. */
export function realApiServerEnv(info: RealApiServerInfo): Record<string, string> {
  return { REAL_KUBE_URL: info.url, REAL_KUBE_CA: info.ca, REAL_KUBE_ADMIN_TOKEN: info.adminToken, REAL_KUBE_RECONCILER_TOKEN: info.reconcilerToken, REAL_KUBE_RECONCILER_USER: info.reconcilerUser };
}

/** The real API server the runner started, or undefined when the tests run against the fake. */
export function realApiServerFromEnv(env: NodeJS.ProcessEnv = process.env): RealApiServerInfo | undefined {
  const { REAL_KUBE_URL: url, REAL_KUBE_CA: ca, REAL_KUBE_ADMIN_TOKEN: adminToken, REAL_KUBE_RECONCILER_TOKEN: reconcilerToken, REAL_KUBE_RECONCILER_USER: reconcilerUser } = env;
  if (!url) return undefined;
  if (!ca || !adminToken || !reconcilerToken || !reconcilerUser) throw new Error('REAL_KUBE_URL is set but REAL_KUBE_CA/ADMIN_TOKEN/RECONCILER_TOKEN/RECONCILER_USER are not');
  return { url, ca, adminToken, reconcilerToken, reconcilerUser };
}
