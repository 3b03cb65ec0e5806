/**
 * The deployment files against the code: every YAML under deploy/ and serverless.yml parses
 * and has its shape, kustomizations name files that exist, serverless.yml's handlers are
 * exported functions, the Dockerfile builds a production-only, non-root image that starts
 * `node dist/lib/main.js`, the Kubernetes and Knative manifests are hardened and agree with
 * each other and with lib/platform/config.ts, and the ClusterRole allows exactly the API-server calls
 * the code makes.
 *
 * RBAC is derived from the code, not written down by hand: a realistic scenario runs through
 * startWorld() (loopback fake API server, real clients, real Redis) exercising every kind of
 * call (GET, LIST cluster-wide and per namespace, finalizer and status PATCHes on both kinds,
 * OperatorContext, Secret and ConfigMap reads, a TykOasApiDefinition, a SubGraph and a SuperGraph, an Ingress and the ApiDefinitions it generates
 * (created, replaced, deleted), Events created, counted and, from a restarted process,
 * read back, SelfSubjectReview, the /readyz probe, the gateway Service's EndpointSlices); each call
 * the fake recorded is mapped to the RBAC request the API server would authorize, and the
 * ClusterRole in deploy/kubernetes/rbac.yaml must allow each one and grant nothing unused (the
 * EndpointSlices of TYK_GATEWAY_SERVICE: the Role of the gateway's namespace, likewise).
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { KubeConfig } from '@kubernetes/client-node';
import yaml from 'js-yaml';
import t, { type Test } from 'tap';
import type { RunReport } from '../../lib/engine/run.js';
import { discoverReplicas } from '../../lib/gateway/endpoint-slices.js';
import { KubeClient } from '../../lib/kube/client.js';
import type { KubeObject } from '../../lib/kube/types.js';
import { DEFAULT_SCHEDULE, loadConfig } from '../../lib/platform/config.js';
import { scheduledTick } from '../../lib/triggers/schedule.js';
import { DEFAULT_CRD_DIR } from '../fakes/crd-schema.js';
import { GATEWAY_API_CRDS, REFERENCE_GRANT_CRD } from '../fakes/kube-apiserver.js';
import { startFakeTykDashboard } from '../fakes/tyk-dashboard.js';
import { apiDefinition, apiDescription, configMap, ingress, oasDocument, portalCatalogue, portalConfig, subGraph, superGraph, tykOasApi } from '../fixtures/builders.js';
import { backend, gateway, gatewayClass, httpRoute, listener, service } from '../fixtures/gateway-api.js';
import {
  arr,
  at,
  describeRequest,
  dockerIgnored,
  execForm,
  isObj,
  loadYamlFile,
  type Obj,
  type PolicyRule,
  parseDockerfile,
  type RbacRequest,
  rbacRequest,
  ruleAllows,
  ruleGrants,
  runsNpm,
  type Stage,
  stageEnv,
  type YamlDoc,
  yamlFiles,
} from '../harness/manifests.js';
import { startWorld } from '../harness/world.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const read = (file: string): string => readFileSync(join(ROOT, file), 'utf8');

const DEPLOY_FILES = yamlFiles(ROOT, 'deploy');
/** Every file's documents; a file that does not parse is reported by the first test. */
const LOADED = DEPLOY_FILES.map((file) => {
  try {
    return { file, docs: loadYamlFile(ROOT, file) };
  } catch (err) {
    return { file, docs: [] as YamlDoc[], error: err instanceof Error ? err.message : String(err) };
  }
});
const ALL_DOCS: YamlDoc[] = LOADED.flatMap((l) => l.docs);
const objectsIn = (file: string): Obj[] => ALL_DOCS.filter((d) => d.file === file && isObj(d.doc)).map((d) => d.doc as Obj);

function one(file: string, kind: string, name?: string): Obj {
  const found = objectsIn(file).filter((o) => o.kind === kind && (name === undefined || at(o, 'metadata.name') === name));
  if (found.length !== 1) throw new Error(`${file}: expected one ${kind}${name ? ` ${name}` : ''}, found ${found.length}`);
  return found[0] as Obj;
}

const isKubeconfig = (doc: unknown): boolean => isObj(doc) && doc.kind === 'Config' && doc.apiVersion === 'v1';

/** The settings lib/platform/config.ts reads: every `(env, 'NAME'` in its source. */
const KNOWN_SETTINGS = new Set([...read('lib/platform/config.ts').matchAll(/\(env, '([A-Z][A-Z0-9_]*)'/g)].map((m) => m[1] as string));

// ── YAML ─────────────────────────────────────────────────────────────────────────────────────

t.test('every YAML file under deploy/ and serverless.yml parses; each document has its shape', async (t) => {
  t.ok(DEPLOY_FILES.length >= 10, `found ${DEPLOY_FILES.length} YAML files under deploy/`);
  for (const { file, docs, error } of LOADED) {
    t.equal(error, undefined, `${file}: parses`);
    t.ok(docs.length > 0, `${file}: has documents`);
    for (const { index, doc } of docs) {
      const where = `${file}#${index}`;
      if (!isObj(doc)) {
        t.fail(`${where}: empty or not a mapping`);
        continue;
      }
      if (isKubeconfig(doc)) {
        checkKubeconfig(t, where, doc);
        continue;
      }
      t.type(doc.apiVersion, 'string', `${where}: apiVersion`);
      t.type(doc.kind, 'string', `${where}: kind`);
      // audit policies and kustomizations have no metadata; every API object has a name
      const metadataless = /^(audit\.k8s\.io|kustomize\.config\.k8s\.io)\//.test(String(doc.apiVersion));
      if (!metadataless) t.type(at(doc, 'metadata.name'), 'string', `${where}: metadata.name`);
      // configuration embedded in ConfigMaps as YAML must parse too
      if (doc.kind === 'ConfigMap') {
        for (const [key, value] of Object.entries(isObj(doc.data) ? doc.data : {})) {
          if (/\.ya?ml$/.test(key)) t.doesNotThrow(() => yaml.load(String(value)), `${where}: data.${key} parses`);
        }
      }
    }
  }

  const sls = yaml.load(read('serverless.yml'));
  t.ok(isObj(sls), 'serverless.yml is a mapping');
  t.type(at(sls, 'service'), 'string', 'serverless.yml: service');
  t.equal(at(sls, 'provider.name'), 'aws', 'serverless.yml: provider.name');
  t.match(String(at(sls, 'provider.runtime')), /^nodejs\d+\.x$/, 'serverless.yml: provider.runtime');
  const functions = at(sls, 'functions');
  t.ok(isObj(functions) && Object.keys(functions).length > 0, 'serverless.yml: functions');
  for (const [name, fn] of Object.entries(isObj(functions) ? functions : {})) t.type(at(fn, 'handler'), 'string', `serverless.yml: functions.${name}.handler`);
});

function checkKubeconfig(t: Test, where: string, doc: Obj): void {
  const names = (key: string): string[] =>
    arr(doc[key])
      .map((e) => at(e, 'name'))
      .filter((n): n is string => typeof n === 'string');
  const clusters = names('clusters');
  const users = names('users');
  const contexts = names('contexts');
  t.ok(clusters.length > 0 && users.length > 0 && contexts.length > 0, `${where}: kubeconfig has clusters, users and contexts`);
  for (const c of arr(doc.clusters)) t.match(at(c, 'cluster.server'), /^https?:\/\//, `${where}: cluster ${String(at(c, 'name'))} has a server URL`);
  for (const c of arr(doc.contexts)) {
    t.ok(clusters.includes(String(at(c, 'context.cluster'))), `${where}: context ${String(at(c, 'name'))} names a cluster of the file`);
    t.ok(users.includes(String(at(c, 'context.user'))), `${where}: context ${String(at(c, 'name'))} names a user of the file`);
  }
  t.ok(contexts.includes(String(doc['current-context'])), `${where}: current-context is one of its contexts`);
}

t.test('kustomizations list only files that exist; deploy/kubernetes leaves out only the Secret template', async (t) => {
  const kustomizations = ALL_DOCS.filter((d) => isObj(d.doc) && d.doc.kind === 'Kustomization');
  t.ok(kustomizations.length > 0, 'there is a kustomization');
  for (const { file, doc } of kustomizations) {
    const dir = join(ROOT, file, '..');
    const k = doc as Obj;
    const paths = [
      ...arr(k.resources),
      ...arr(k.components),
      ...arr(k.crds),
      ...arr(k.patchesStrategicMerge),
      ...arr(k.patches).map((p) => at(p, 'path')),
      ...[...arr(k.configMapGenerator), ...arr(k.secretGenerator)].flatMap((g) => [...arr(at(g, 'files')), ...arr(at(g, 'envs'))].map((f) => String(f).replace(/^[^=]*=/, ''))),
    ].filter((p): p is string => typeof p === 'string' && !/^[a-z]+:\/\/|^github\.com\//.test(p));
    for (const p of paths) t.ok(existsSync(join(dir, p)), `${file}: ${p} exists`);
    // a resource is a manifest file or a directory holding a kustomization
    for (const r of arr(k.resources).filter((p): p is string => typeof p === 'string' && existsSync(join(dir, p)))) {
      if (statSync(join(dir, r)).isDirectory())
        t.ok(
          ['kustomization.yaml', 'kustomization.yml', 'Kustomization'].some((n) => existsSync(join(dir, r, n))),
          `${file}: ${r}/ has a kustomization`,
        );
    }
  }
  const k = one('deploy/kubernetes/kustomization.yaml', 'Kustomization');
  const listed = new Set(arr(k.resources).map(String));
  const unlisted = DEPLOY_FILES.filter((f) => f.startsWith('deploy/kubernetes/') && f !== 'deploy/kubernetes/kustomization.yaml')
    .map((f) => f.slice('deploy/kubernetes/'.length))
    .filter((f) => !listed.has(f));
  t.same(unlisted, ['secret.example.yaml'], 'every manifest is applied by `kubectl apply -k`, except the Secret template (placeholders must never be deployed)');
  // every namespaced object is in the reconciler's namespace (each file says so: the
  // kustomization sets none), but the RBAC for the gateway's EndpointSlices, which is in the
  // gateway's namespace: the one TYK_URL's host names (<service>.<namespace>.svc)
  t.equal(k.namespace, undefined, 'no kustomization namespace: it would move the Role of the gateway namespace too');
  const home = at(one('deploy/kubernetes/namespace.yaml', 'Namespace'), 'metadata.name');
  const tykUrl = String(at(one('deploy/kubernetes/configmap.yaml', 'ConfigMap'), 'data.TYK_URL'));
  const gatewayNamespace = new URL(tykUrl).hostname.split('.')[1];
  for (const name of listed) {
    for (const o of objectsIn(`deploy/kubernetes/${name}`)) {
      const ns = at(o, 'metadata.namespace');
      const kind = String(o.kind);
      if (kind === 'Namespace' || kind.startsWith('Cluster')) {
        t.equal(ns, undefined, `${name}: ${kind} is cluster-scoped`);
      } else if (at(o, 'metadata.name') === 'gateway-reconciler-replicas') {
        t.ok(kind === 'Role' || kind === 'RoleBinding', `${name}: only RBAC lives outside ${String(home)}`);
        t.equal(ns, gatewayNamespace, `${name}: ${kind} gateway-reconciler-replicas is in the gateway's namespace (TYK_URL's host)`);
      } else {
        t.equal(ns, home, `${name}: ${kind} ${String(at(o, 'metadata.name'))} is in the reconciler's namespace`);
      }
    }
  }
});

// ── serverless.yml ───────────────────────────────────────────────────────────────────────────

/** functions/<name>.ts and the export for a handler string, in either form serverless.yml uses. */
function handlerSource(handler: string): { source: string; exportName: string } | undefined {
  const m = /^(?:\.\/)?(?:dist\/functions\/([\w-]+)|\.build\/([\w-]+)\/index)\.([A-Za-z_$][\w$]*)$/.exec(handler);
  if (!m) return undefined;
  return { source: `functions/${m[1] ?? m[2]}.ts`, exportName: m[3] as string };
}

t.test('serverless.yml: each handler is a function exported by functions/<name>.ts', async (t) => {
  t.same(handlerSource('dist/functions/watch.handler'), { source: 'functions/watch.ts', exportName: 'handler' });
  t.same(handlerSource('.build/health/index.handler'), { source: 'functions/health.ts', exportName: 'handler' });
  t.equal(handlerSource('functions/watch.handler'), undefined, 'an unknown form is refused, not guessed');

  const functions = at(yaml.load(read('serverless.yml')), 'functions');
  const entries = Object.entries(isObj(functions) ? functions : {});
  t.ok(entries.length > 0, 'serverless.yml names functions');
  for (const [name, fn] of entries) {
    const handler = String(at(fn, 'handler'));
    const src = handlerSource(handler);
    if (!src) {
      t.fail(`functions.${name}.handler "${handler}" is neither dist/functions/<name>.<export> nor .build/<name>/index.<export>`);
      continue;
    }
    t.ok(existsSync(join(ROOT, src.source)), `functions.${name}: ${src.source} exists`);
    // through tap's TypeScript loader, as the compiled or bundled file would export it
    const mod = (await import(pathToFileURL(join(ROOT, src.source)).href)) as Record<string, unknown>;
    t.equal(typeof mod[src.exportName], 'function', `functions.${name}: ${src.source} exports a function "${src.exportName}"`);
  }
});

// ── Dockerfile ───────────────────────────────────────────────────────────────────────────────

const DOCKERFILE = parseDockerfile(read('Dockerfile'));
const DOCKERIGNORE = read('.dockerignore')
  .split(/\r?\n/)
  .map((l) => l.trim())
  .filter((l) => l !== '' && !l.startsWith('#'));

const runs = (stage: Stage): string[] => stage.instructions.filter((i) => i.keyword === 'RUN').map((i) => i.args);
/** COPY sources taken from the build context (not --from another stage). */
const contextSources = (stage: Stage): string[] =>
  stage.instructions
    .filter((i) => i.keyword === 'COPY' && !/--from=/.test(i.args))
    .flatMap((i) => {
      const parts = i.args.split(/\s+/).filter((p) => !p.startsWith('--'));
      return parts.slice(0, -1).map((p) => p.replace(/^\.\//, '').replace(/\/$/, ''));
    });

t.test('Dockerfile: multi-stage; the final stage is production-only, non-root and runs node dist/lib/main.js', async (t) => {
  const { stages } = DOCKERFILE;
  t.ok(stages.length >= 2, `multi-stage (${stages.length} stages)`);
  const final = stages[stages.length - 1] as Stage;
  const builders = stages.slice(0, -1);
  const allRuns = builders.flatMap(runs);
  t.ok(
    allRuns.some((r) => /\bnpm ci\b/.test(r)),
    'a build stage installs with npm ci (the lockfile)',
  );
  t.ok(
    allRuns.some((r) => /\bnpm run build\b/.test(r)),
    'a build stage runs npm run build',
  );
  t.ok(
    allRuns.some((r) => /\bnpm prune --omit=dev\b/.test(r) || /\bnpm ci\b.*--omit=dev\b/.test(r)),
    'the production node_modules are pruned (or installed without devDependencies)',
  );
  for (const s of stages) t.match(s.from, /^(node:24[.-].*slim$|gcr\.io\/distroless\/nodejs24)/, `stage ${s.name ?? '(final)'} is based on Node 24: ${s.from}`);

  // final stage: only the built artefacts, from an earlier stage
  const copies = final.instructions.filter((i) => i.keyword === 'COPY' || i.keyword === 'ADD');
  t.ok(
    copies.every((c) => c.keyword === 'COPY' && /--from=\S+/.test(c.args)),
    'the final stage copies only from build stages, nothing from the context',
  );
  const copied = copies.map((c) => (c.args.split(/\s+/).filter((p) => !p.startsWith('--'))[0] ?? '').replace(/^\/app\//, ''));
  for (const want of ['dist', 'node_modules', 'package.json']) t.ok(copied.includes(want), `the final stage copies ${want}`);
  const fromStages = copies.map((c) => /--from=(\S+)/.exec(c.args)?.[1]);
  t.ok(
    fromStages.every((n) => builders.some((s) => s.name === n)),
    'COPY --from names a build stage',
  );
  t.notOk(runs(final).some(runsNpm), 'nothing in the final stage runs npm');

  t.equal(stageEnv(final).NODE_ENV, 'production', 'ENV NODE_ENV=production');
  const users = final.instructions.filter((i) => i.keyword === 'USER').map((i) => i.args.split(':')[0] as string);
  const user = users[users.length - 1];
  t.ok(user !== undefined && ((/^\d+$/.test(user) && Number(user) !== 0) || ['node', 'nonroot'].includes(user)), `the final stage runs as non-root (USER ${user ?? 'unset'})`);
  t.ok(
    final.instructions.some((i) => i.keyword === 'EXPOSE' && i.args.split(/\s+/).some((p) => p.replace(/\/tcp$/, '') === '8080')),
    'EXPOSE 8080',
  );
  const cmds = final.instructions.filter((i) => i.keyword === 'CMD');
  t.same(execForm(cmds[cmds.length - 1]?.args ?? ''), ['node', 'dist/lib/main.js'], 'CMD ["node", "dist/lib/main.js"] (exec form, no npm)');
  t.notOk(
    final.instructions.some((i) => i.keyword === 'ENTRYPOINT'),
    'no ENTRYPOINT of our own (the base image starts the CMD)',
  );
  t.ok(
    final.instructions.some((i) => i.keyword === 'WORKDIR'),
    'a WORKDIR, which dist/lib/main.js is relative to',
  );

  // the build stage compiles what tsconfig.build.json includes, so that must be in the image
  const sources = builders.flatMap(contextSources);
  for (const s of sources) t.ok(existsSync(join(ROOT, s)), `COPY source ${s} exists`);
  const buildConfig = JSON.parse(read('tsconfig.build.json')) as { extends?: string; include?: string[] };
  for (const glob of buildConfig.include ?? []) t.ok(sources.includes(glob.split('/')[0] as string), `${glob} (tsconfig.build.json) is copied into the build stage`);
  for (const f of ['package.json', 'package-lock.json', 'tsconfig.build.json', String(buildConfig.extends ?? '').replace(/^\.\//, '')].filter((f) => f !== '')) {
    t.ok(sources.includes(f), `${f} is copied into the build stage`);
  }
});

t.test('.dockerignore keeps local state out of the context but not what the build copies', async (t) => {
  for (const p of ['node_modules', '.git', 'dist', '.tap', '.build', '.serverless', 'coverage', 'node_modules/x/y.js', 'deploy/lambda/kubeconfig.yaml', '.env']) {
    t.ok(dockerIgnored(DOCKERIGNORE, p), `${p} is excluded`);
  }
  const sources = DOCKERFILE.stages.flatMap(contextSources);
  t.ok(sources.length > 0);
  for (const s of sources) t.notOk(dockerIgnored(DOCKERIGNORE, s), `${s} (copied by the Dockerfile) is in the context`);
  for (const s of ['lib/main.ts', 'functions/watch.ts', 'lib/kube/client.ts']) t.notOk(dockerIgnored(DOCKERIGNORE, s), `${s} is in the context`);
});

// ── Kubernetes manifests ─────────────────────────────────────────────────────────────────────

const K = 'deploy/kubernetes/';
/** The self-hosted Deployment, its pod and container, ConfigMap and Secret template (throws, failing the test, when one is missing). */
function selfHosted(): { DEPLOYMENT: Obj; POD: Obj; CONTAINER: Obj; CONFIGMAP: Obj; SECRET: Obj } {
  const DEPLOYMENT = one(`${K}deployment.yaml`, 'Deployment');
  const POD = at(DEPLOYMENT, 'spec.template.spec') as Obj;
  const CONTAINER = arr(POD.containers)[0] as Obj;
  return { DEPLOYMENT, POD, CONTAINER, CONFIGMAP: one(`${K}configmap.yaml`, 'ConfigMap'), SECRET: one(`${K}secret.example.yaml`, 'Secret') };
}
const secretRefName = (c: Obj): unknown =>
  arr(c.envFrom)
    .map((e) => at(e, 'secretRef.name'))
    .find((n) => n !== undefined);
const configMapRefName = (c: Obj): unknown =>
  arr(c.envFrom)
    .map((e) => at(e, 'configMapRef.name'))
    .find((n) => n !== undefined);
const strings = (o: unknown): Record<string, string> => Object.fromEntries(Object.entries(isObj(o) ? o : {}).map(([k, v]) => [k, String(v)]));

/** runAsNonRoot, readOnlyRootFilesystem, allowPrivilegeEscalation false, capabilities dropped. */
function checkHardened(t: Test, what: string, pod: Obj, container: Obj): void {
  const nonRoot = at(container, 'securityContext.runAsNonRoot') ?? at(pod, 'securityContext.runAsNonRoot');
  t.equal(nonRoot, true, `${what}: runAsNonRoot`);
  const uid = at(container, 'securityContext.runAsUser') ?? at(pod, 'securityContext.runAsUser');
  t.ok(typeof uid === 'number' && uid > 0, `${what}: a numeric non-zero runAsUser (${String(uid)})`);
  t.equal(at(container, 'securityContext.readOnlyRootFilesystem'), true, `${what}: readOnlyRootFilesystem`);
  t.equal(at(container, 'securityContext.allowPrivilegeEscalation'), false, `${what}: allowPrivilegeEscalation false`);
  t.same(at(container, 'securityContext.capabilities.drop'), ['ALL'], `${what}: all capabilities dropped`);
  const seccomp = at(container, 'securityContext.seccompProfile.type') ?? at(pod, 'securityContext.seccompProfile.type');
  t.equal(seccomp, 'RuntimeDefault', `${what}: seccomp RuntimeDefault (restricted Pod Security Standard)`);
  t.ok(at(container, 'resources.requests.cpu') !== undefined && at(container, 'resources.requests.memory') !== undefined, `${what}: cpu and memory requests`);
  t.ok(at(container, 'resources.limits.memory') !== undefined, `${what}: a memory limit`);
  t.equal(at(container, 'livenessProbe.httpGet.path'), '/healthz', `${what}: liveness probe on /healthz (no dependencies)`);
  t.equal(at(container, 'readinessProbe.httpGet.path'), '/readyz', `${what}: readiness probe on /readyz (Redis, API server, gateway)`);
}

t.test('Deployment: hardened, probed, and consistent with the image, the Service, the ConfigMap, the Secret and the code', async (t) => {
  const { DEPLOYMENT, POD, CONTAINER, CONFIGMAP, SECRET } = selfHosted();
  checkHardened(t, 'deployment', POD, CONTAINER);
  t.same(
    CONTAINER.command ??
      execForm(
        DOCKERFILE.stages
          .at(-1)
          ?.instructions.filter((i) => i.keyword === 'CMD')
          .at(-1)?.args ?? '',
      ),
    ['node', 'dist/lib/main.js'],
    'the container starts node dist/lib/main.js, not npm start',
  );

  // ports: containerPort = PORT (8080 by default), probes and Service hit it
  const ports = arr(CONTAINER.ports) as Obj[];
  const port = (ref: unknown): unknown => (typeof ref === 'string' ? ports.find((p) => p.name === ref)?.containerPort : ref);
  const portSetting = Number(strings(CONFIGMAP.data).PORT ?? '8080');
  t.equal(portSetting, 8080);
  t.ok(
    ports.some((p) => p.containerPort === portSetting),
    `containerPort ${portSetting} (PORT)`,
  );
  t.equal(port(at(CONTAINER, 'livenessProbe.httpGet.port')), portSetting, 'the liveness probe hits the server port');
  t.equal(port(at(CONTAINER, 'readinessProbe.httpGet.port')), portSetting, 'the readiness probe hits the server port');
  const service = one(`${K}service.yaml`, 'Service');
  for (const p of arr(at(service, 'spec.ports'))) t.equal(port(at(p, 'targetPort')), portSetting, 'the Service targets the server port');
  const podLabels = strings(at(DEPLOYMENT, 'spec.template.metadata.labels'));
  t.match(podLabels, strings(at(service, 'spec.selector')), 'the Service selects the pods');
  t.match(podLabels, strings(at(DEPLOYMENT, 'spec.selector.matchLabels')), 'the Deployment selects its pods');

  // a read-only root filesystem: whatever is mounted writable is a scratch emptyDir
  for (const m of arr(CONTAINER.volumeMounts)) {
    const vol = arr(POD.volumes).find((v) => at(v, 'name') === at(m, 'name'));
    t.ok(vol !== undefined, `volume ${String(at(m, 'name'))} exists`);
    if (at(m, 'readOnly') !== true) t.ok(at(vol, 'emptyDir') !== undefined, `the writable mount ${String(at(m, 'mountPath'))} is an emptyDir`);
  }

  // without REDIS_URL, one process only
  t.equal(at(DEPLOYMENT, 'spec.replicas'), 1, 'one replica (the in-process store is the default)');
  t.equal(at(DEPLOYMENT, 'spec.strategy.type'), 'Recreate', 'Recreate: never two pods at once');

  // settings: names lib/platform/config.ts reads, and values it accepts
  t.equal(configMapRefName(CONTAINER), at(CONFIGMAP, 'metadata.name'), 'envFrom the ConfigMap');
  t.equal(secretRefName(CONTAINER), at(SECRET, 'metadata.name'), 'envFrom the Secret');
  t.ok(KNOWN_SETTINGS.has('TYK_URL') && KNOWN_SETTINGS.has('REDIS_URL'), 'settings found in lib/platform/config.ts');
  for (const key of [...Object.keys(strings(CONFIGMAP.data)), ...Object.keys(strings(SECRET.stringData))]) t.ok(KNOWN_SETTINGS.has(key), `${key} is a setting lib/platform/config.ts reads`);
  t.notOk('KUBECONFIG' in strings(CONFIGMAP.data), 'no KUBECONFIG: the in-cluster service account');
  for (const [k, v] of Object.entries(strings(CONFIGMAP.data))) t.notMatch(v, /REPLACE|<[^>]*>/, `ConfigMap ${k} is not a placeholder (kustomize applies it as it is)`);
  const env = { ...strings(CONFIGMAP.data), ...strings(SECRET.stringData) };
  t.doesNotThrow(() => loadConfig(env), 'lib/platform/config.ts accepts the ConfigMap and the Secret template together');
  t.ok(loadConfig(env).shutdownGraceMs < Number(POD.terminationGracePeriodSeconds) * 1000, 'SHUTDOWN_GRACE_MS ends before the kubelet kills the pod');

  // identity
  const sa = one(`${K}rbac.yaml`, 'ServiceAccount');
  t.equal(POD.serviceAccountName, at(sa, 'metadata.name'), 'the pod runs as the ServiceAccount of rbac.yaml');
  t.equal(at(DEPLOYMENT, 'metadata.namespace'), at(sa, 'metadata.namespace'));
});

t.test('Knative: the same image as a Knative Service on Redis, and a PingSource reaching /schedule (the tick, sharded like any) with the token', async (t) => {
  const { POD, CONTAINER, CONFIGMAP, SECRET } = selfHosted();
  const file = 'deploy/knative/service.yaml';
  const ksvc = one(file, 'Service', 'gateway-reconciler');
  t.equal(ksvc.apiVersion, 'serving.knative.dev/v1');
  const pod = at(ksvc, 'spec.template.spec') as Obj;
  const container = arr(pod.containers)[0] as Obj;
  checkHardened(t, 'knative service', pod, container);
  t.equal(container.image, CONTAINER.image, 'the same image as the Deployment');
  t.same(container.command, ['node', 'dist/lib/main.js']);
  t.same(
    arr(container.ports).map((p) => at(p, 'containerPort')),
    [8080],
    'one port, 8080',
  );
  t.equal(pod.serviceAccountName, POD.serviceAccountName, 'the same ServiceAccount (rbac.yaml)');
  t.equal(configMapRefName(container), configMapRefName(CONTAINER), 'the same ConfigMap');
  t.equal(secretRefName(container), secretRefName(CONTAINER), 'the same Secret');
  const envList = arr(container.env) as Obj[];
  for (const e of envList) t.ok(KNOWN_SETTINGS.has(String(e.name)), `${String(e.name)} is a setting lib/platform/config.ts reads`);
  const redis = envList.find((e) => e.name === 'REDIS_URL');
  t.match(redis, { valueFrom: { secretKeyRef: { name: secretRefName(CONTAINER), key: 'REDIS_URL' } } }, 'REDIS_URL from the Secret');
  t.not(at(redis, 'valueFrom.secretKeyRef.optional'), true, 'and not optional: never the in-process store with several instances');
  const literal = Object.fromEntries(envList.filter((e) => typeof e.value === 'string').map((e) => [String(e.name), String(e.value)]));
  t.doesNotThrow(() => loadConfig({ ...strings(CONFIGMAP.data), ...strings(SECRET.stringData), REDIS_URL: 'redis://redis.example:6379', ...literal }), 'lib/platform/config.ts accepts its settings');

  // the schedule: PingSource → proxy Service → proxy Deployment (envoy) → /schedule with the token
  const ping = one(file, 'PingSource');
  t.equal(at(ping, 'spec.schedule'), DEFAULT_SCHEDULE, 'every 5 minutes, as RESYNC_SCHEDULE by default');
  t.doesNotThrow(() => JSON.parse(String(at(ping, 'spec.data'))), 'its data is JSON, as its contentType says (/schedule ignores it)');
  const sinkRef = at(ping, 'spec.sink.ref') as Obj;
  t.match(sinkRef, { apiVersion: 'v1', kind: 'Service' }, 'the sink is a plain Service (the proxy)');
  const proxySvc = one(file, 'Service', String(sinkRef.name));
  const proxy = objectsIn(file).find(
    (o) => o.kind === 'Deployment' && Object.entries(strings(at(proxySvc, 'spec.selector'))).every(([k, v]) => strings(at(o, 'spec.template.metadata.labels'))[k] === v),
  );
  t.ok(proxy, 'the proxy Service selects a Deployment');
  const proxyPod = at(proxy, 'spec.template.spec') as Obj;
  const proxyContainer = arr(proxyPod.containers)[0] as Obj;
  t.match(arr(proxyContainer.env), [{ name: 'RESYNC_TOKEN', valueFrom: { secretKeyRef: { name: secretRefName(CONTAINER), key: 'RESYNC_TOKEN' } } }], 'the proxy reads the token from the Secret');
  const configName = arr(proxyPod.volumes)
    .map((v) => at(v, 'configMap.name'))
    .find((n) => n !== undefined);
  t.match(arr(proxyContainer.args).join(' '), /-c \/etc\/envoy\/envoy\.yaml/, 'envoy reads envoy.yaml');
  const envoy = yaml.load(strings(at(one(file, 'ConfigMap', String(configName)), 'data'))['envoy.yaml'] ?? '');
  const routes = findAll(envoy, (o) => isObj(o.match) && (isObj(o.route) || isObj(o.direct_response)));
  const resync = routes.find((r) => at(r, 'route.prefix_rewrite') === '/schedule');
  t.match(resync, { match: { path: '/', headers: [{ name: ':method', string_match: { exact: 'POST' } }] } }, 'only POST / is forwarded');
  t.same(
    routes.filter((r) => r !== resync).map((r) => at(r, 'direct_response.status')),
    [404],
    'anything else is answered 404 by the proxy',
  );
  t.ok(resync, 'the proxy forwards to /schedule');
  t.equal(at(resync, 'route.host_rewrite_literal'), 'gateway-reconciler.gateway-reconciler.svc.cluster.local', 'to the Knative Service (by Host)');
  t.match(arr(at(resync, 'request_headers_to_add')), [{ header: { key: 'authorization', value: 'Bearer %ENVIRONMENT(RESYNC_TOKEN)%' } }], 'with Authorization: Bearer <RESYNC_TOKEN>');
  const netpol = one(file, 'NetworkPolicy');
  t.match(strings(at(proxy, 'spec.template.metadata.labels')), strings(at(netpol, 'spec.podSelector.matchLabels')), 'a NetworkPolicy guards the proxy');
  t.same(
    arr(at(netpol, 'spec.ingress')).flatMap((i) => arr(at(i, 'from')).map((f) => at(f, 'namespaceSelector.matchLabels'))),
    [{ 'kubernetes.io/metadata.name': 'knative-eventing' }],
    'only knative-eventing may call it',
  );
  checkHardenedProxy(t, proxyPod, proxyContainer);
});

/** Every mapping anywhere inside `v` for which `pred` holds. */
function findAll(v: unknown, pred: (o: Obj) => boolean): Obj[] {
  if (Array.isArray(v)) return v.flatMap((x) => findAll(x, pred));
  if (!isObj(v)) return [];
  return [...(pred(v) ? [v] : []), ...Object.values(v).flatMap((x) => findAll(x, pred))];
}

function checkHardenedProxy(t: Test, pod: Obj, container: Obj): void {
  t.equal(at(pod, 'securityContext.runAsNonRoot'), true, 'proxy: runAsNonRoot');
  t.equal(at(container, 'securityContext.readOnlyRootFilesystem'), true, 'proxy: readOnlyRootFilesystem');
  t.equal(at(container, 'securityContext.allowPrivilegeEscalation'), false, 'proxy: allowPrivilegeEscalation false');
  t.equal(pod.automountServiceAccountToken, false, 'proxy: no API-server token');
}

// ── RBAC, derived from the code ──────────────────────────────────────────────────────────────

/** The calls @kubernetes/client-node makes for the test's own setup (World.create/updateSpec/delete). */
/** EndpointSlice as the loopback API server serves it (built in, discovery.k8s.io/v1). */
const ENDPOINT_SLICE_TYPE = { group: 'discovery.k8s.io', version: 'v1', kind: 'EndpointSlice', plural: 'endpointslices', builtin: true };

/** The slice the EndpointSlice controller would write for a Service whose one ready pod answers at `at`. */
function gatewaySlice(service: { namespace: string; name: string; port: string }, at: URL): KubeObject {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: `${service.name}-x1y2z`, namespace: service.namespace, labels: { 'kubernetes.io/service-name': service.name } },
    addressType: 'IPv4',
    endpoints: [{ addresses: [at.hostname], conditions: { ready: true }, targetRef: { kind: 'Pod', namespace: service.namespace, name: 'gateway-0' } }],
    ports: [{ name: service.port, port: Number(at.port), protocol: 'TCP' }],
  };
}

/** A KubeClient with the service's own kubeconfig (its token, so its calls are told as the code's). */
function serviceKube(w: { kubeconfigPath: string }): KubeClient {
  const kc = new KubeConfig();
  kc.loadFromFile(w.kubeconfigPath);
  return new KubeClient(kc, { timeoutMs: 5_000 });
}

function isTestClientCall(r: RbacRequest): boolean {
  return (
    r.kind === 'resource' &&
    ['tyk.tyk.io', 'networking.k8s.io', 'gateway.networking.k8s.io'].includes(r.req.apiGroup) &&
    ['create', 'get', 'update', 'delete'].includes(r.req.verb) &&
    r.req.subresource === undefined
  );
}

const reportOf = (report: RunReport | null | undefined, kind: string, name: string) => report?.objects.find((o) => o.kind === kind && o.name === name);

t.test('RBAC: the ClusterRole allows every API-server call the code makes, and nothing it does not', async (t) => {
  // SHARD_SIZE 3: a scheduled tick below is sharded (the coordinator's calls, and the shards')
  // ReferenceGrants served (their core group is "", as kube-apiserver accepts it): the contexts of tyk are granted to the other namespaces
  // TYK_GATEWAY_SERVICE as configmap.yaml suggests it: the gateway's replicas from its Service's
  // EndpointSlices (served as discovery.k8s.io/v1), one of them the gateway fake
  const gatewayService = { namespace: 'tyk', name: 'gateway-svc-tyk-gateway', port: 'http' };
  const w = await startWorld({
    env: { SHARD_SIZE: '3', TYK_GATEWAY_SERVICE: `${gatewayService.namespace}/${gatewayService.name}:${gatewayService.port}` },
    kube: { crds: [DEFAULT_CRD_DIR, REFERENCE_GRANT_CRD, GATEWAY_API_CRDS], emptyStringIsNull: false, resources: [ENDPOINT_SLICE_TYPE] },
  });
  t.teardown(() => w.close());
  await w.kube.put(gatewaySlice(gatewayService, new URL(w.tyk.url)));

  // Calls the test itself makes (World.create/updateSpec/delete go through @kubernetes/client-node
  // to the same fake) are not the service's. They are told apart by when they happen: each
  // test-side action runs alone (the service only works inside the awaited webhook, resync,
  // tick and probe calls below, and nothing of it runs in the background), so every call
  // recorded between the start and the end of a test-side action is the test's. As a guard
  // against that assumption breaking, each of those calls must also have the shape the test's
  // client makes (create/get/update/delete of a tyk.tyk.io object): a service call landing in
  // a window (a PATCH, a LIST, an Event) fails the test instead of going unchecked.
  const testCalls = new Set<number>();
  const byTest = async <T>(action: () => Promise<T>): Promise<T> => {
    const from = w.kube.calls.length;
    try {
      return await action();
    } finally {
      for (let i = from; i < w.kube.calls.length; i++) testCalls.add(i);
    }
  };

  const api = (name: string, namespace: string, extra: Record<string, unknown> = {}): KubeObject => ({
    apiVersion: 'tyk.tyk.io/v1alpha1',
    kind: 'ApiDefinition',
    metadata: { name, namespace },
    spec: { name, protocol: 'http', active: true, use_keyless: true, proxy: { target_url: 'http://httpbin.org', listen_path: `/${namespace}-${name}`, strip_listen_path: true }, ...extra },
  });
  const policy = (name: string, apiName: string): KubeObject => ({
    apiVersion: 'tyk.tyk.io/v1alpha1',
    kind: 'SecurityPolicy',
    metadata: { name, namespace: 'default' },
    spec: { name: `${name} policy`, state: 'active', active: true, access_rights_array: [{ name: apiName, namespace: 'default', versions: ['Default'] }] },
  });
  const b64 = (s: string): string => Buffer.from(s).toString('base64');

  // the cluster: an API, a context whose Secret points at the same fake gateway, an API using
  // it in another namespace, a policy granting the first API, and one waiting for an API that
  // does not exist (its outcome is told in an Event)
  await byTest(() => w.create(api('httpbin', 'default')));
  await byTest(() =>
    w.create({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'staging-gateway', namespace: 'tyk' }, data: { TYK_MODE: b64('ce'), TYK_URL: b64(w.tyk.url), TYK_AUTH: b64(w.tyk.secret) } }),
  );
  await byTest(() =>
    w.create({ apiVersion: 'tyk.tyk.io/v1alpha1', kind: 'OperatorContext', metadata: { name: 'staging', namespace: 'tyk' }, spec: { secretRef: { name: 'staging-gateway', namespace: 'tyk' } } }),
  );
  // the resources of shop and default use the contexts of tyk: a ReferenceGrant there lets them (a LIST of the grants per run)
  const fromKinds = ['ApiDefinition', 'SecurityPolicy', 'APIDescription', 'PortalAPICatalogue', 'PortalConfig'];
  await byTest(() =>
    w.create({
      apiVersion: 'gateway.networking.k8s.io/v1beta1',
      kind: 'ReferenceGrant',
      metadata: { name: 'contexts', namespace: 'tyk' },
      spec: { from: ['shop', 'default'].flatMap((namespace) => fromKinds.map((kind) => ({ group: 'tyk.tyk.io', kind, namespace }))), to: [{ group: 'tyk.tyk.io', kind: 'OperatorContext' }] },
    }),
  );
  await byTest(() => w.create(api('orders', 'shop', { contextRef: { name: 'staging', namespace: 'tyk' } })));
  await byTest(() => w.create(policy('httpbin', 'httpbin')));
  await byTest(() => w.create(policy('early', 'not-yet')));
  // a Tyk OAS API, its document in a ConfigMap
  await byTest(() => w.create(configMap('petstore').withOas(oasDocument('petstore')).build()));
  await byTest(() => w.create(tykOasApi('petstore').build()));
  // GraphQL federation: a SubGraph served by its API, composed by a SuperGraph served by another
  // (GETs of both kinds, LISTs on the tick, their finalizers, the SubGraph's status.linked_by_api)
  await byTest(() => w.create(subGraph('users').build()));
  await byTest(() => w.create(apiDefinition('users-api').servingSubGraph('users').build()));
  await byTest(() => w.create(superGraph('social').withSubgraphs('users').build()));
  await byTest(() => w.create(apiDefinition('social').ofSuperGraph('social').build()));
  // the developer portal, on a Tyk Dashboard an OperatorContext names: an API, the policy it
  // publishes, its description, a catalogue listing it, the portal configuration
  const dashboard = await startFakeTykDashboard();
  t.teardown(() => dashboard.close());
  await byTest(() =>
    w.create({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'portal-dashboard', namespace: 'tyk' },
      data: { TYK_MODE: b64('pro'), TYK_URL: b64(dashboard.url), TYK_AUTH: b64(dashboard.secret), TYK_ORG: b64(dashboard.orgId) },
    }),
  );
  await byTest(() =>
    w.create({ apiVersion: 'tyk.tyk.io/v1alpha1', kind: 'OperatorContext', metadata: { name: 'portal', namespace: 'tyk' }, spec: { secretRef: { name: 'portal-dashboard', namespace: 'tyk' } } }),
  );
  const inPortal = { contextRef: { name: 'portal', namespace: 'tyk' } };
  await byTest(() => w.create(api('portal-api', 'default', inPortal)));
  await byTest(() => w.create({ ...policy('portal-policy', 'portal-api'), spec: { ...policy('portal-policy', 'portal-api').spec, ...inPortal } }));
  await byTest(() => w.create(apiDescription('portal-doc').withPolicy('portal-policy').inContext('portal', 'tyk').build()));
  await byTest(() => w.create(portalCatalogue('portal-catalogue').withDescriptions('portal-doc').inContext('portal', 'tyk').build()));
  await byTest(() => w.create(portalConfig('portal-config').inContext('portal', 'tyk').build()));

  // a forwarded watch event (GET one object, finalizer and status PATCHes)
  const watched = await w.announce('ADDED', 'httpbin');
  t.match(reportOf(watched, 'ApiDefinition', 'httpbin'), { result: 'synced' }, 'watch event: synced');

  // an audit EventList (asks SelfSubjectReview who we are, to skip our own writes)
  const auditEvent = (resource: string, namespace: string, name: string, n: number) => ({
    level: 'Metadata',
    auditID: `deploy-test-${n}`,
    stage: 'ResponseComplete',
    verb: 'create',
    requestURI: `/apis/tyk.tyk.io/v1alpha1/namespaces/${namespace}/${resource}`,
    user: { username: 'jane@example.com', groups: ['system:authenticated'] },
    objectRef: { resource, namespace, name, apiGroup: 'tyk.tyk.io', apiVersion: 'v1alpha1' },
    responseStatus: { metadata: {}, code: 201 },
  });
  const audited = await w.audit({
    kind: 'EventList',
    apiVersion: 'audit.k8s.io/v1',
    metadata: {},
    items: [
      auditEvent('apidefinitions', 'shop', 'orders', 1),
      auditEvent('securitypolicies', 'default', 'httpbin', 2),
      auditEvent('tykoasapidefinitions', 'default', 'petstore', 3),
      auditEvent('apidefinitions', 'default', 'portal-api', 4),
      auditEvent('securitypolicies', 'default', 'portal-policy', 5),
      auditEvent('apidescriptions', 'default', 'portal-doc', 6),
      auditEvent('portalapicatalogues', 'default', 'portal-catalogue', 7),
      auditEvent('portalconfigs', 'default', 'portal-config', 8),
    ],
  });
  t.equal(audited.statusCode, 200, 'audit webhook answered');
  t.match(reportOf(audited.body.report, 'ApiDefinition', 'orders'), { result: 'synced', gateway: 'context:tyk/staging' }, 'audit event: synced through the OperatorContext');
  t.match(reportOf(audited.body.report, 'TykOasApiDefinition', 'petstore'), { result: 'synced' }, 'audit event: the OAS API synced from its ConfigMap');
  for (const [kind, name] of [
    ['APIDescription', 'portal-doc'],
    ['PortalAPICatalogue', 'portal-catalogue'],
    ['PortalConfig', 'portal-config'],
  ]) {
    t.match(reportOf(audited.body.report, kind as string, name as string), { result: 'synced', gateway: 'context:tyk/portal' }, `audit event: the ${kind} synced on the Dashboard`);
  }

  // a scheduled tick (cluster-wide LISTs; the waiting policy gets its Event)
  const tick = await w.tick();
  t.match(reportOf(tick, 'SecurityPolicy', 'httpbin'), { result: /^(synced|unchanged)$/ }, 'the policy is synced (by the run that synced its API)');
  t.match(reportOf(tick, 'SecurityPolicy', 'early'), { result: 'waiting' }, 'a policy waits for a missing API');
  t.match(reportOf(tick, 'ApiDefinition', 'social'), { result: 'synced' }, 'the supergraph API is composed');
  t.match(reportOf(tick, 'SubGraph', 'users'), { result: 'synced', reason: 'finalizer missing' }, 'the SubGraph gets its finalizer and status');
  // a sharded tick: the coordinator counts (metadata-only LISTs) and lists the OperatorContexts to
  // snapshot their gateways; the shards run here (namespaced LISTs)
  const sharded = await scheduledTick(w.svc);
  t.match(sharded, { sharded: { queued: false }, report: { errors: [] } }, 'a sharded tick, without a run-level error');

  // an Ingress of our class with its template: ApiDefinitions generated (POST, listed by label),
  // the Ingress's finalizer (PATCH); the template edited: the generated one replaced (PUT) by the
  // run its audit event starts (the Ingress read with a GET); the Ingress deleted: what it
  // generated deleted (DELETE)
  await byTest(() =>
    w.create(
      apiDefinition('tpl')
        .template()
        .withSpec({ name: 'tpl', protocol: 'http', use_keyless: true, active: true, proxy: { target_url: 'http://example.com' } })
        .build(),
    ),
  );
  await byTest(() => w.create(ingress('web').withClass('tyk').withTemplate('tpl').withRule('', '/web', 'web', 80).build()));
  t.match(reportOf(await w.tick(), 'Ingress', 'web'), { result: 'synced' }, 'an Ingress: its ApiDefinition generated');
  await byTest(() => w.updateSpec('tpl', (s) => ({ ...s, active: false })));
  const templated = await w.audit({ kind: 'EventList', apiVersion: 'audit.k8s.io/v1', metadata: {}, items: [auditEvent('apidefinitions', 'default', 'tpl', 9)] });
  t.match(reportOf(templated.body.report, 'Ingress', 'web'), { action: 'UPDATE', result: 'synced' }, 'the template edited: the generated ApiDefinition replaced');
  await byTest(() => w.delete('web', 'default', 'ingresses'));
  t.match(reportOf(await w.tick(), 'Ingress', 'web'), { result: 'deleted' }, 'the Ingress deleted: what it generated deleted');

  // Gateway API: a GatewayClass of ours, a Gateway whose listener takes routes from namespaces
  // by label (Namespaces LISTed), a Service and an HTTPRoute to it, announced by an audit event:
  // its ApiDefinition generated and sent, the route's finalizer and status, the Gateway's and the
  // class's statuses (the class CRD's bundle version read); the route deleted: what it made deleted
  await w.kube.put(gatewayClass('tyk'));
  await w.kube.put({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default', labels: { routes: 'yes' } } });
  await w.kube.put(gateway('gw', 'tyk', [listener('http', 80, 'HTTP', { from: 'Selector', matchLabels: { routes: 'yes' } })]));
  await w.kube.put(service('web', [8080]));
  await byTest(() =>
    w.create(
      httpRoute('web')
        .parent('gw')
        .rule({ path: '/routed', backends: [backend('web', 8080)] })
        .build(),
    ),
  );
  const routed = await w.audit({
    kind: 'EventList',
    apiVersion: 'audit.k8s.io/v1',
    metadata: {},
    items: [{ ...auditEvent('httproutes', 'default', 'web', 10), objectRef: { resource: 'httproutes', namespace: 'default', name: 'web', apiGroup: 'gateway.networking.k8s.io', apiVersion: 'v1' } }],
  });
  t.match(reportOf(routed.body.report, 'HTTPRoute', 'web'), { result: 'synced' }, 'an HTTPRoute: its ApiDefinition generated');
  t.equal(reportOf(await w.tick(), 'Gateway', 'gw'), undefined, 'the tick after: the Gateway status already says it (nothing patched, nothing reported)');
  await byTest(() => w.delete('web', 'default', 'httproutes'));
  t.match(reportOf(await w.tick(), 'HTTPRoute', 'web'), { result: 'deleted' }, 'the HTTPRoute deleted: what it generated deleted');

  // the default gateway's replicas (TYK_GATEWAY_SERVICE): every run above listed its Service's
  // EndpointSlices in the gateway's namespace; once more here, with the service's credentials
  const asTheService = serviceKube(w);
  t.teardown(() => asTheService.close());
  t.same(await discoverReplicas(asTheService, gatewayService, 'http'), [{ name: 'gateway-0', url: w.tyk.url }], "the gateway's replicas");

  // /resync over one namespace (namespaced LISTs) and of one named policy (GET), and /readyz
  t.equal((await w.resync({ namespace: 'default' })).statusCode, 200);
  t.equal((await w.resync({ kind: 'SecurityPolicy', namespace: 'default', name: 'early' })).statusCode, 200);
  t.equal((await w.inject('GET', '/readyz')).statusCode, 200, '/readyz');

  // a new process (another replica, a restart, a Lambda cold start) says the same about the
  // waiting policy: it creates the Event, is told it exists (409), reads it and counts one more
  await w.restartService();
  t.match(reportOf((await w.resync({ kind: 'SecurityPolicy', namespace: 'default', name: 'early' })).body, 'SecurityPolicy', 'early'), { result: 'waiting' });

  // the portal's deletions (finalizers removed)
  await byTest(() => w.delete('portal-catalogue', 'default', 'PortalAPICatalogue'));
  await byTest(() => w.delete('portal-doc', 'default', 'APIDescription'));
  await byTest(() => w.delete('portal-config', 'default', 'PortalConfig'));
  const portalGone = await w.tick();
  t.match(reportOf(portalGone, 'PortalAPICatalogue', 'portal-catalogue'), { result: 'deleted' });
  t.match(reportOf(portalGone, 'APIDescription', 'portal-doc'), { result: 'deleted' }, 'a catalogue being deleted holds no description');
  t.equal(await w.get('portal-config', 'default', 'PortalConfig'), undefined, 'the PortalConfig is gone (finalizer removed)');

  // deletions: the policy, then the API it no longer holds (finalizers removed)
  await byTest(() => w.delete('httpbin', 'default', 'SecurityPolicy'));
  t.match(reportOf(await w.tick(), 'SecurityPolicy', 'httpbin'), { result: 'deleted' });
  await byTest(() => w.delete('httpbin'));
  t.match(reportOf(await w.tick(), 'ApiDefinition', 'httpbin'), { result: 'deleted' });
  t.equal(await w.get('httpbin'), undefined, 'the API is gone from the cluster (finalizer removed)');

  // ── derive ──
  const all = w.kube.calls.map((c, i) => ({ call: c, index: i, request: rbacRequest(c.method, c.path, c.query) }));
  const byTheTest = all.filter((c) => testCalls.has(c.index));
  const byTheCode = all.filter((c) => !testCalls.has(c.index));
  t.ok(byTheTest.length > 0, `${byTheTest.length} setup calls of the test excluded`);
  for (const c of byTheTest) t.ok(isTestClientCall(c.request), `test-side call ${c.call.method} ${c.call.path} has the test client's shape`);
  // 404: a GET that finds nothing; 409 on an Event create: AlreadyExists, the cue to count on that Event instead
  const expectedRefusal = (c: { call: { method: string; path: string; status: number } }) =>
    c.call.status === 404 || (c.call.status === 409 && c.call.method === 'POST' && /\/events$/.test(c.call.path));
  for (const c of byTheCode) t.ok(c.call.status < 400 || expectedRefusal(c), `${c.call.method} ${c.call.path} → ${c.call.status}`);

  const distinct = new Map<string, RbacRequest>();
  for (const c of byTheCode) distinct.set(describeRequest(c.request), c.request);
  const used = [...distinct.keys()].sort();
  t.comment(`API-server requests the code made (${byTheCode.length} calls):\n${used.map((u) => `  ${u}`).join('\n')}`);

  // ── check against rbac.yaml ──
  const rbac = `${K}rbac.yaml`;
  const role = one(rbac, 'ClusterRole');
  const rules = arr(role.rules) as PolicyRule[];
  const binding = one(rbac, 'ClusterRoleBinding');
  const sa = one(rbac, 'ServiceAccount');
  t.match(binding, { roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: at(role, 'metadata.name') } }, 'the binding grants the ClusterRole');
  t.match(arr(binding.subjects), [{ kind: 'ServiceAccount', name: at(sa, 'metadata.name'), namespace: at(sa, 'metadata.namespace') }], 'to the ServiceAccount');
  t.ok(
    [...distinct.values()].some((r) => r.kind === 'resource' && r.req.namespace === undefined),
    'some requests are cluster-wide (all namespaces): they need the ClusterRoleBinding, not RoleBindings',
  );

  // the Roles of rbac.yaml (the gateway namespace's): what they allow in their namespace
  const roles = objectsIn(rbac).filter((o) => o.kind === 'Role');
  const roleRules = (ns: string | undefined): PolicyRule[] => roles.filter((r) => at(r, 'metadata.namespace') === ns).flatMap((r) => arr(r.rules) as PolicyRule[]);
  const namespaceOf = (r: RbacRequest): string | undefined => (r.kind === 'resource' ? r.req.namespace : undefined);
  for (const [text, r] of distinct) t.ok(rules.some((rule) => ruleAllows(rule, r)) || roleRules(namespaceOf(r)).some((rule) => ruleAllows(rule, r)), `allowed: ${text}`);
  t.ok(
    [...distinct.values()].some((r) => namespaceOf(r) === gatewayService.namespace && !rules.some((rule) => ruleAllows(rule, r))),
    "the gateway's EndpointSlices are listed by the Role of its namespace, not the ClusterRole",
  );
  for (const role of roles) {
    const ns = String(at(role, 'metadata.namespace'));
    const binding = objectsIn(rbac).find((o) => o.kind === 'RoleBinding' && at(o, 'metadata.namespace') === ns);
    t.match(binding, { roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: at(role, 'metadata.name') } }, `${ns}: the binding grants the Role`);
    t.match(arr(binding?.subjects), [{ kind: 'ServiceAccount', name: at(sa, 'metadata.name'), namespace: at(sa, 'metadata.namespace') }], `${ns}: to the ServiceAccount`);
    const unusedInNs = (arr(role.rules) as PolicyRule[])
      .flatMap(ruleGrants)
      .filter((g) => ![...distinct.values()].some((r) => r.kind === 'resource' && r.req.namespace === ns && r.req.apiGroup === g.apiGroup && r.req.verb === g.verb && r.req.resource === g.resource));
    t.same(unusedInNs, [], `${ns}: every grant of the Role is used in its namespace`);
  }
  t.equal(gatewayService.namespace, at(roles[0], 'metadata.namespace'), "the Role is in the namespace of TYK_GATEWAY_SERVICE (the gateway's)");

  const wildcards = rules.filter((r) => [...(r.apiGroups ?? []), ...(r.resources ?? []), ...(r.verbs ?? [])].includes('*'));
  t.same(wildcards, [], 'no wildcards in the ClusterRole');
  const unused = rules
    .flatMap(ruleGrants)
    .filter(
      (g) =>
        ![...distinct.values()].some(
          (r) => r.kind === 'resource' && r.req.apiGroup === g.apiGroup && r.req.verb === g.verb && (r.req.subresource ? `${r.req.resource}/${r.req.subresource}` : r.req.resource) === g.resource,
        ),
    );
  t.same(unused, [], 'every grant of the ClusterRole is used by the code (least privilege)');
});

t.test('our CRDs print Ready, Synced and Age from the conditions the reconciler writes', async (t) => {
  for (const plural of ['apidefinitions', 'tykoasapidefinitions', 'securitypolicies']) {
    const crd = one(`deploy/crds/tyk.tyk.io_${plural}.yaml`, 'CustomResourceDefinition');
    const version = (at(crd, 'spec.versions') as Obj[])[0] as Obj;
    const columns = (version.additionalPrinterColumns ?? []) as Obj[];
    const byName = new Map(columns.map((c) => [c.name, c]));
    t.match(byName.get('Ready'), { jsonPath: '.status.conditions[?(@.type=="Ready")].status', type: 'string' }, `${plural}: Ready`);
    t.match(byName.get('Synced'), { jsonPath: '.status.conditions[?(@.type=="Synced")].status', type: 'string' }, `${plural}: Synced`);
    t.match(byName.get('Age'), { jsonPath: '.metadata.creationTimestamp', type: 'date' }, `${plural}: Age`);
    const status = at(version, 'schema.openAPIV3Schema.properties.status.properties') as Obj;
    t.match(status.conditions, { type: 'array', 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'] }, `${plural}: conditions kept, one per type`);
    t.match(status.observedGeneration, { type: 'integer' }, `${plural}: observedGeneration kept`);
  }
});
