/**
 * Every Tyk Operator sample of kind ApiDefinition, TykOasApiDefinition, SecurityPolicy,
 * OperatorContext, SubGraph, SuperGraph, Ingress or the developer portal's (APIDescription,
 * PortalAPICatalogue, PortalConfig; in $TYK_REFERENCE_DIR/samples) is accepted: it syncs, or its
 * status says what is unsupported or what it waits for; nothing crashes, nothing is half-sent.
 * An Ingress sample's folder is applied as one (`kubectl apply -f <folder>`: the Ingress and its
 * template), and the ApiDefinitions the Ingress generates must end synced, on the gateway under
 * its rules' hosts and paths, while the template is never sent. The worlds are Tyk Gateways,
 * where the portal kinds are Failed saying they need a Tyk Dashboard; the samples holding them
 * run again against a Tyk Dashboard, where they sync. The ConfigMaps and Secrets a sample file
 * holds (a Tyk OAS document) are created before its custom resources, as `kubectl apply -f`
 * would; what a sample's comments say to create first (a TLS Secret), or what it names and no
 * sample holds (the supergraph's SubGraphs), is created first too. Other core objects of a
 * sample (the users subgraph's Namespace, Service and Deployment) are not ours and are skipped.
 *
 * Each sample runs under Tyk Operator's CRDs (a cluster where Tyk Operator was installed) and,
 * against the fake API server, under ours (deploy/crds): they prune differently (theirs drop a
 * policy's access_rights_array[].kind), so some outcomes differ (EXPECTED_UNDER_OURS).
 *
 * For each object, the admission webhook's verdict on it as stored agrees with the run's: denied
 * where the run finds it invalid or refuses it (with the run's message), admitted otherwise, with
 * a warning where it waits.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import yaml from 'js-yaml';
import t, { type Test } from 'tap';
import type { RunReport } from '../../lib/engine/types.js';
import { shortHash } from '../../lib/kinds/ingress/apis.js';
import type { KubeObject } from '../../lib/kube/types.js';
import { defaultIdOf, secret } from '../fixtures/builders.js';
import { certId, PEM } from '../fixtures/pem.js';
import { realApiServerFromEnv } from '../harness/real-apiserver.js';
import { sameVerdict } from '../harness/verdicts.js';
import { startWorld, type World } from '../harness/world.js';
import { referencePath } from './reference.js';

const ROOT = referencePath('samples');
const KINDS = new Set(['ApiDefinition', 'TykOasApiDefinition', 'SecurityPolicy', 'OperatorContext', 'SubGraph', 'SuperGraph', 'Ingress', 'APIDescription', 'PortalAPICatalogue', 'PortalConfig']);
/** Kinds that live in the cluster only, and an APIDescription (nothing of its own on the Dashboard): no gateway id in their status. */
const NO_GATEWAY_ID = new Set(['SubGraph', 'SuperGraph', 'APIDescription']);
/** The developer portal's kinds: Tyk Dashboard only, so their samples also run in pro mode. */
const PORTAL_KINDS = new Set(['APIDescription', 'PortalAPICatalogue', 'PortalConfig']);
/** Kinds whose Tyk Operator CRD has no status.latestTransaction (the API server prunes ours there). */
const THEIR_STATUS_HAS_NO_TRANSACTION = new Set(['SecurityPolicy', ...PORTAL_KINDS]);
/** On a Tyk Gateway (the default world), each portal kind says the portal needs a Tyk Dashboard. */
const NEEDS_DASHBOARD = /^failed: (APIDescription|PortalAPICatalogue|PortalConfig) needs the Tyk Dashboard's developer portal: gateway default is a Tyk Gateway/;
/** Core objects a sample file holds (the ConfigMap of a Tyk OAS document): put as an admin, before the custom resources. */
const CORE_KINDS = new Set(['ConfigMap', 'Secret']);

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.yaml') ? [p] : [];
  });
}

/** What each sample must end as (anything else fails the test). */
const EXPECTED: Record<string, RegExp> = {
  // a template (label template: "true") is never sent; the Ingress naming it is, as ApiDefinitions
  'ingress/ingress-httpbin/:ApiDefinition/myapideftemplate': /^skipped/,
  // Tyk Operator's SecurityPolicy CRD has no `kind` in access_rights_array: the API server prunes
  // it, so the entry names an ApiDefinition, which does not exist (under our CRDs it is kept, and
  // the policy syncs: EXPECTED_UNDER_OURS)
  'oas/oas-protected.yaml:SecurityPolicy/petstore-oas-policy': /^waiting: waiting for ApiDefinition default\/petstore-protected does not exist/,
  // the base API's versions name TykOasApiDefinitions the sample does not hold ("versions it with
  // existing OAS APIs"): it waits for them, and sends nothing
  'oas/versioning/base-api-with-versions.yaml:TykOasApiDefinition/pets':
    /^waiting: waiting for TykOasApiDefinition randomz\/dogz-breeds does not exist; TykOasApiDefinition randomz\/bin does not exist$/,
  // Tyk Operator's ApiDefinition CRD requires transform_headers[].act_on, which these lack
  'looping/dynamic_auth.yaml:ApiDefinition/basic-auth-internal': /^refused: .*transform_headers\.act_on: Required value/,
  'looping/dynamic_auth.yaml:ApiDefinition/auth-token-internal': /^refused: .*transform_headers\.act_on: Required value/,
  'operator-context/pro.yaml:ApiDefinition/httpbin-with-context': /^failed: OperatorContext default\/local-pro-test: Secret tyk-operator-system\/tyk-operator-conf not found/,
  // its ApiDefinition is in httpbin_protected.yaml: alone, the policy waits for it
  'httpbin_protected_policy.yaml:SecurityPolicy/httpbin': /^waiting: waiting for ApiDefinition default\/httpbin does not exist/,
  // the developer portal is the Tyk Dashboard's (the pro-mode pass below syncs them)
  'portal/apidescription.yaml:APIDescription/sample-portal-api': NEEDS_DASHBOARD,
  'portal/apidescription.yaml:PortalConfig/sample-portal-config': NEEDS_DASHBOARD,
  'portal/apidescription.yaml:PortalAPICatalogue/sample-portal-api': NEEDS_DASHBOARD,
};

/** Where our CRDs (deploy/crds) make a difference: what they keep that Tyk Operator's prune, or accept where theirs refuse. */
const EXPECTED_UNDER_OURS: Record<string, RegExp> = Object.fromEntries(
  Object.entries(EXPECTED).filter(
    ([key]) =>
      ![
        // ours keeps access_rights_array[].kind: the policy names the TykOasApiDefinition, and syncs
        'oas/oas-protected.yaml:SecurityPolicy/petstore-oas-policy',
        // ours does not require transform_headers[].act_on: the API server admits them, and they sync
        'looping/dynamic_auth.yaml:ApiDefinition/basic-auth-internal',
        'looping/dynamic_auth.yaml:ApiDefinition/auth-token-internal',
      ].includes(key),
  ),
);

/**
 * What a sample's comments tell the user to create first (`kubectl create secret tls my-test-tls
 * --cert ... --key ...`), made from the test TLS material.
 */
const PREREQUISITES: Record<string, KubeObject[]> = {
  'httpbin_upstream_cert.yaml': [secret('my-test-tls').tls(PEM.server, PEM.serverKey).build()],
  'mtls/client/httpbin_client_mtls_using_secret.yaml': [secret('my-test-tls').tls(PEM.client, PEM.clientKey).build()],
  // The supergraph composes users-ns/users-subgraph (the users-subgraph sample: its SubGraph and
  // the ApiDefinition serving it) and default/posts-subgraph, which no sample holds: a minimal
  // posts SubGraph (extending the users' User with its posts, as the supergraph's schema has it)
  // and its ApiDefinition stand in for it. Without them the supergraph API waits, naming them.
  'federation/supergraph.yaml': [...sampleObjects('federation/users-subgraph.yaml', ['SubGraph', 'ApiDefinition']), ...postsSubgraph()],
};

/** The custom resources of these kinds in another sample file. */
function sampleObjects(file: string, kinds: string[]): KubeObject[] {
  return (yaml.loadAll(readFileSync(join(ROOT, file), 'utf8')) as (KubeObject | null)[]).filter((d): d is KubeObject => !!d && kinds.includes(d.kind));
}

/** default/posts-subgraph and the ApiDefinition serving it (the one the supergraph sample names, which no sample holds). */
function postsSubgraph(): KubeObject[] {
  const sdl = [
    'extend type Query {',
    '  post(id: ID!): Post!',
    '  posts: [Post!]!',
    '}',
    '',
    'type Post @key(fields: "id") {',
    '  id: ID!',
    '  userId: ID!',
    '  title: String!',
    '  body: String!',
    '}',
    '',
    'extend type User @key(fields: "id") {',
    '  id: ID! @external',
    '  posts: [Post!]!',
    '}',
    '',
  ].join('\n');
  return [
    { apiVersion: 'tyk.tyk.io/v1alpha1', kind: 'SubGraph', metadata: { name: 'posts-subgraph', namespace: 'default' }, spec: { schema: sdl, sdl } },
    {
      apiVersion: 'tyk.tyk.io/v1alpha1',
      kind: 'ApiDefinition',
      metadata: { name: 'federation-posts-subgraph', namespace: 'default' },
      spec: {
        name: 'Federation - Posts Subgraph',
        protocol: 'http',
        use_keyless: true,
        active: true,
        internal: true,
        graphql: { enabled: true, execution_mode: 'subgraph', graph_ref: 'posts-subgraph', version: '2', playground: { enabled: false, path: '/playground' } },
        proxy: { target_url: 'http://posts.default.svc:4202/query', listen_path: '/posts-subgraph/', disable_strip_slash: true },
      },
    },
  ];
}

/** A sample: one file, or one folder under ingress/ (its files applied together, templates first). */
const samples = [
  ...files(ROOT)
    .reduce((units, file) => {
      const rel = relative(ROOT, file);
      const unit = rel.startsWith('ingress/') ? `${rel.slice(0, rel.lastIndexOf('/') + 1)}` : rel;
      units.set(unit, [...(units.get(unit) ?? []), file]);
      return units;
    }, new Map<string, string[]>())
    .entries(),
]
  .map(([unit, paths]) => {
    const all = paths.flatMap((p) => (yaml.loadAll(readFileSync(p, 'utf8')) as (KubeObject | null)[]).filter((d): d is KubeObject => !!d));
    const docs = all.filter((d) => KINDS.has(d.kind)).sort((a, b) => Number(a.kind === 'Ingress') - Number(b.kind === 'Ingress'));
    return { file: unit, core: all.filter((d) => CORE_KINDS.has(d.kind)), docs };
  })
  .filter((s) => s.docs.length > 0);

t.test('there are samples to check', async (t) => {
  t.ok(samples.length >= 10, `${samples.length} sample files`);
  t.ok(
    samples.some((s) => s.docs.some((d) => d.kind === 'TykOasApiDefinition') && s.core.some((d) => d.kind === 'ConfigMap')),
    'among them TykOasApiDefinitions, with their ConfigMaps',
  );
  t.ok(
    samples.some((s) => s.docs.some((d) => d.kind === 'Ingress') && s.docs.some((d) => d.metadata.labels?.template === 'true')),
    'and Ingresses, with their templates',
  );
});

/**
 * The CRDs the API server serves. Tyk Operator's, as in a cluster where Tyk Operator was
 * installed (the real tier runs this suite against a real kube-apiserver with them, so there the
 * fake's CRDs are not used and only this pass runs), then ours.
 */
const CRD_SETS: { name: string; crds?: string[]; expected: Record<string, RegExp> }[] = [
  { name: "Tyk Operator's CRDs", crds: [referencePath('crds')], expected: EXPECTED },
  ...(realApiServerFromEnv() ? [] : [{ name: 'our CRDs (deploy/crds)', expected: EXPECTED_UNDER_OURS }]),
];

/**
 * The samples holding portal kinds, again against a Tyk Dashboard (TYK_MODE=pro), where every
 * object of theirs ends synced (nothing is EXPECTED otherwise).
 */
const PRO_PASSES = CRD_SETS.flatMap((set) =>
  samples
    .filter((s) => s.docs.some((d) => PORTAL_KINDS.has(d.kind)))
    .map((sample) => ({ ...set, ...sample, name: `${set.name}, on a Tyk Dashboard`, mode: 'pro' as const, expected: {} as Record<string, RegExp> })),
);

const PASSES = [...CRD_SETS.flatMap((set) => samples.map((sample) => ({ ...set, ...sample, mode: 'ce' as const }))), ...PRO_PASSES];

for (const { name: crdSet, crds, expected: EXPECTED_HERE, file, core, docs, mode } of PASSES) {
  t.test(`${file} under ${crdSet}`, async (t) => {
    // Some samples hold "" in typed string fields (federation/supergraph.yaml: proxy.target_url),
    // which kube-apiserver 1.20 built with Go >= 1.16 refuses as null; released builds take it,
    // and so does this fake.
    // Tyk Operator's behaviour: references across namespaces resolve without ReferenceGrants (the samples' contexts read Secrets of tyk-operator-system)
    const w = await startWorld({ mode, env: { CROSS_NAMESPACE_REFS: 'allow', ADOPT_NAMESPACES: '*' }, kube: { ...(crds ? { crds } : {}), emptyStringIsNull: false } });
    t.teardown(() => w.close());
    // what the API server refuses never reaches us: that is the sample's outcome (kubectl apply says why)
    const refused = new Map<string, string>();
    for (const prerequisite of PREREQUISITES[file] ?? []) await w.create(prerequisite);
    for (const obj of core) await w.create(obj);
    for (const doc of docs) {
      try {
        await w.create({ ...doc, metadata: { ...doc.metadata, namespace: doc.metadata.namespace ?? 'default' } });
      } catch (err) {
        const body = (err as { body?: unknown }).body;
        const status = (typeof body === 'string' ? JSON.parse(body) : body) as { code?: number; message?: string } | undefined;
        if (status?.code !== 422) throw err;
        refused.set(`${doc.kind}/${doc.metadata.name}`, status.message ?? '');
      }
    }
    const report = await w.tick();
    await w.tick(); // what waits on a same-file dependency settles by the second run at the latest
    const final = await w.tick();
    t.same(report.errors, [], 'no run-level error');
    for (const doc of docs.filter((d) => d.kind !== 'OperatorContext')) {
      const key = `${file}:${doc.kind}/${doc.metadata.name}`;
      const refusal = refused.get(`${doc.kind}/${doc.metadata.name}`);
      if (refusal !== undefined) {
        t.match(`refused: ${refusal}`, EXPECTED_HERE[key] ?? /^$/, `${key} → refused by the API server: ${refusal}`);
        continue;
      }
      const o = final.objects.find((x) => x.kind === doc.kind && x.name === doc.metadata.name);
      t.ok(o, `${key} is reported`);
      if (!o) continue;
      const seen = `${o.result}${o.error ? `: ${o.error}` : ''}`;
      const expected = EXPECTED_HERE[key] ?? /^unchanged$/;
      t.match(seen, expected, `${key} → ${seen}`);
      const status = (await w.get(doc.metadata.name, doc.metadata.namespace ?? 'default', doc.kind))?.status;
      if (doc.kind === 'Ingress') await checkIngress(t, w, doc, final);
      else if (o.result === 'unchanged' && !NO_GATEWAY_ID.has(doc.kind)) t.ok(status?.api_id ?? status?.id ?? status?.pol_id, `${key} has its gateway id in status`);
      if (o.result === 'unchanged' && doc.kind === 'SubGraph') t.ok(status?.linked_by_api, `${key} is linked by the ApiDefinition serving it`);
      await sameVerdict(t, w, key, doc, o);
      const keepsTransaction = crds === undefined ? doc.kind !== 'SecurityPolicy' : !THEIR_STATUS_HAS_NO_TRANSACTION.has(doc.kind);
      if (/^(invalid|failed)/.test(seen) && keepsTransaction) t.match(status, { latestTransaction: { status: 'Failed', error: /./ } }, `${key}: the status says why`);
      if (!['unchanged', 'skipped'].includes(o.result)) {
        // kubectl describe says why, whatever the CRD keeps of our status (Tyk Operator's policy status has no transaction)
        const warnings = (await w.events(doc.metadata.name, doc.metadata.namespace ?? 'default', doc.kind)).filter((e) => e.type === 'Warning');
        t.ok(
          warnings.some((e) => o.error !== undefined && e.message.includes(o.error)),
          `${key}: a Warning Event says why (${warnings.map((e) => e.reason).join(', ')})`,
        );
      }
    }
    if (file === 'httpbin_upstream_cert.yaml') {
      const api = w.gatewayApi(Buffer.from('default/httpbin').toString('base64url'));
      t.same(api?.upstream_certificates, { '*': certId(PEM.server) }, 'the upstream certificate is named by its store id');
      t.ok(w.tyk.certs().has(certId(PEM.server)), 'and is in the store');
    }
    if (file === 'mtls/client/httpbin_client_mtls_using_secret.yaml') {
      const api = w.gatewayApi(Buffer.from('default/httpbin-client-mtls').toString('base64url'));
      t.same(api?.client_certificates, [certId(PEM.client)], 'the client certificate is allowed by its store id');
    }
    if (file === 'oas/petstore.yaml') {
      const id = defaultIdOf('petstore');
      t.match(
        w.gatewayOas(id),
        { 'x-tyk-api-gateway': { info: { id, name: 'Petstore' }, server: { listenPath: { value: '/petstore/' } } } },
        'the document from the ConfigMap is on the gateway, with our id',
      );
      t.match(
        (await w.get('petstore', 'default', 'TykOasApiDefinition'))?.status,
        { id, listenPath: '/petstore/', targetURL: 'https://petstore.swagger.io/v2', enabled: true },
        'its status says what the document says',
      );
    }
    if (file === 'oas/oas-protected.yaml') {
      const id = defaultIdOf('petstore-protected');
      t.ok(w.gatewayOas(id), 'the OAS API is on the gateway');
      const policy = w.tyk.loaded('policy').get(defaultIdOf('petstore-oas-policy'));
      if (EXPECTED_HERE[`${file}:SecurityPolicy/petstore-oas-policy`]) t.equal(policy, undefined, 'the waiting policy is not sent');
      else t.match(policy?.access_rights, { [id]: { api_id: id } }, 'the policy grants the OAS API by its id');
    }
    if (file === 'oas/versioning/base-api-with-versions.yaml') t.equal(w.tyk.loaded('oas').size, 0, 'the waiting base API is not sent');
    if (file === 'federation/supergraph.yaml') {
      const graphql = w.gatewayApi(defaultIdOf('federation-supergraph'))?.graphql as
        | { schema?: string; supergraph?: { merged_sdl?: string; subgraphs?: { api_id: string; url: string }[] } }
        | undefined;
      t.same(
        graphql?.supergraph?.subgraphs?.map((s) => [s.api_id, s.url]),
        [
          [defaultIdOf('federation-users-subgraph', 'users-ns'), 'tyk://federation-users-subgraph'],
          [defaultIdOf('federation-posts-subgraph'), 'tyk://federation-posts-subgraph'],
        ],
        'the supergraph API names both subgraph APIs',
      );
      t.match(graphql?.supergraph?.merged_sdl, /type User \{[^}]*posts: \[Post!\]!/s, 'its merged SDL is the composition');
      t.match(graphql?.schema, /^type Query \{\n {2}user\(id: ID!\): User!/, "its schema is the SuperGraph's own");
    }
    if (file === 'federation/users-subgraph.yaml') {
      const graphql = w.gatewayApi(defaultIdOf('federation-users-subgraph', 'users-ns'))?.graphql as { schema?: string; subgraph?: { sdl?: string } } | undefined;
      t.match(graphql?.subgraph?.sdl, /type User @key\(fields: "id"\)/, 'the subgraph API has its SubGraph’s SDL');
      t.match(graphql?.schema, /union _Entity = User/, 'and its schema');
    }
    if (file === 'portal/apidescription.yaml' && mode === 'pro') {
      const d = w.dashboard;
      const mid = [...(d?.policies() ?? [])].find(([, p]) => p.id === defaultIdOf('protect-api'))?.[0];
      const apis = (d?.catalogue()?.apis ?? []) as Record<string, unknown>[];
      t.match(apis, [{ name: 'sample portal config', show: true, auth_type: 'keyless', policy_id: mid }], 'the catalogue publishes the policy by its Dashboard _id');
      t.strictSame([...(d?.documentation().values() ?? [])], [{ api_id: mid, doc_type: 'swagger_custom_url', documentation: 'https://httpbin.org/spec.json' }], 'with its documentation');
      t.ok(d?.configuration(), 'the portal is configured');
      t.match((await w.get('sample-portal-api', 'default', 'PortalAPICatalogue'))?.status, { id: d?.catalogue()?.id }, "the catalogue's Dashboard id in status");
      // silent whatever the CRDs keep of the statuses (Tyk Operator's APIDescription status keeps nothing)
      d?.resetCalls();
      w.resetCounts();
      for (let i = 0; i < 5; i++) await w.tick();
      t.equal((d?.portalWrites() ?? 0) + (d?.writes() ?? 0), 0, 'steady: no Dashboard write');
      t.equal(w.statusPatches(), 0, 'steady: no status patch');
    }
    if (file === 'jwt-auth/example1.yaml') {
      const api = w.gatewayApi(Buffer.from('default/httpbin').toString('base64url'));
      t.same(api?.jwt_default_policies, [Buffer.from('default/jwt-policy').toString('base64url')], 'jwt_default_policies name the policy by its gateway id');
    }
  });
}

/**
 * Tyk Operator's portal sample (portal/apidescription.yaml) on a fresh Dashboard organisation (no
 * catalogue yet), as a new user meets it, under each CRD set: applied as one file, its catalogue
 * entry is published (its policy's _id, `show` as the APIDescription says, its documentation
 * attached) after at most two runs, then ten ticks write nothing; the same with the
 * APIDescription applied first and the catalogue later, and with the catalogue deleted and
 * created again.
 */
const PORTAL_SAMPLE = samples.find((s) => s.file === 'portal/apidescription.yaml');
for (const { name: crdSet, crds } of CRD_SETS) {
  t.test(`portal/apidescription.yaml on a fresh Tyk Dashboard organisation under ${crdSet}`, async (t) => {
    if (!PORTAL_SAMPLE) throw new Error('the reference has no portal/apidescription.yaml');
    const inDefault = (d: KubeObject): KubeObject => ({ ...d, metadata: { ...d.metadata, namespace: d.metadata.namespace ?? 'default' } });
    const docs = PORTAL_SAMPLE.docs.map(inDefault);
    const catalogue = docs.find((d) => d.kind === 'PortalAPICatalogue');
    const description = docs.find((d) => d.kind === 'APIDescription');
    if (!catalogue || !description) throw new Error('the portal sample holds no PortalAPICatalogue or APIDescription');
    // one world at a time: on the real tier they share one API server, and each removes what it created when closed
    const world = async (tt: Test): Promise<World> => {
      const w = await startWorld({ mode: 'pro', kube: { ...(crds ? { crds } : {}), emptyStringIsNull: false } });
      tt.teardown(() => w.close());
      tt.equal(w.dashboard?.catalogue(), undefined, 'the organisation has no catalogue yet');
      return w;
    };
    /** Ticks until the catalogue is published (at most `runs`); how many it took. */
    const published = async (w: World, runs: number): Promise<number> => {
      for (let i = 1; i <= runs; i++) {
        const o = (await w.tick()).objects.find((x) => x.kind === 'PortalAPICatalogue' && x.name === catalogue.metadata.name);
        if (o?.result === 'synced' || o?.result === 'unchanged') return i;
      }
      return Number.POSITIVE_INFINITY;
    };
    const check = async (t: Test, w: World, what: string): Promise<void> => {
      const d = w.dashboard;
      const mid = [...(d?.policies() ?? [])].find(([, p]) => p.id === defaultIdOf('protect-api'))?.[0];
      const apis = (d?.catalogue()?.apis ?? []) as Record<string, unknown>[];
      t.match(apis, [{ name: 'sample portal config', show: description.spec?.show, auth_type: 'keyless', policy_id: mid }], `${what}: the entry publishes the policy by its Dashboard _id`);
      t.strictSame(
        d?.documentation().get(String(apis[0]?.documentation)),
        { api_id: mid, doc_type: 'swagger_custom_url', documentation: 'https://httpbin.org/spec.json' },
        `${what}: its documentation attached`,
      );
      t.ok(d?.configuration(), `${what}: the portal is configured`);
      d?.resetCalls();
      w.resetCounts();
      for (let i = 0; i < 10; i++) await w.tick();
      t.equal((d?.portalWrites() ?? 0) + (d?.writes() ?? 0), 0, `${what}: ten ticks, no Dashboard write`);
      t.equal(w.statusPatches(), 0, `${what}: ten ticks, no status patch`);
    };

    await t.test('applied as one file', async (t) => {
      const atOnce = await world(t);
      for (const doc of docs) await atOnce.create(doc);
      t.ok((await published(atOnce, 2)) <= 2, 'applied as one file: published within two runs');
      await check(t, atOnce, 'applied as one file');
    });

    await t.test('the catalogue applied later, deleted and created again', async (t) => {
      const later = await world(t);
      for (const doc of docs.filter((d) => d !== catalogue)) await later.create(doc);
      await later.tick();
      await later.tick();
      await later.create(catalogue);
      t.ok((await published(later, 2)) <= 2, 'the catalogue applied later: published within two runs');
      await check(t, later, 'the catalogue applied later');
      await later.delete(catalogue.metadata.name, 'default', 'PortalAPICatalogue');
      await later.tick();
      t.same(later.dashboard?.catalogue()?.apis, [], 'the catalogue deleted: its entry is gone');
      await later.create(catalogue);
      t.ok((await published(later, 2)) <= 2, 'created again: published within two runs');
      await check(t, later, 'the catalogue created again');
    });
  });
}

/**
 * An Ingress sample: one ApiDefinition per rule path, named as Tyk Operator named them, synced
 * (its gateway id in status) and on the gateway under the rule's host and path; nothing else
 * generated.
 */
async function checkIngress(t: Test, w: World, doc: KubeObject, final: RunReport): Promise<void> {
  const namespace = doc.metadata.namespace ?? 'default';
  const rules = (doc.spec?.rules ?? []) as { host?: string; http?: { paths?: { path?: string; backend: { service: { name: string; port: { number: number } } } }[] } }[];
  const wanted = rules.flatMap((r) => (r.http?.paths ?? []).map((p) => ({ host: r.host ?? '', path: p.path ?? '', service: p.backend.service })));
  const made = (await w.kube.listObjects('apidefinitions', namespace)).filter((o) => o.metadata.labels?.['tyk.io/ingress'] === doc.metadata.name);
  t.same(
    made.map((o) => o.metadata.name).sort(),
    wanted.map((p) => `${namespace}-${doc.metadata.name}-${shortHash(p.host + p.path)}`).sort(),
    `Ingress ${doc.metadata.name}: one ApiDefinition per path, named as Tyk Operator named them`,
  );
  for (const p of wanted) {
    const name = `${namespace}-${doc.metadata.name}-${shortHash(p.host + p.path)}`;
    t.match(
      final.objects.find((x) => x.kind === 'ApiDefinition' && x.name === name),
      { result: 'unchanged' },
      `${name} synced`,
    );
    t.ok((await w.get(name, namespace))?.status?.api_id, `${name} has its gateway id in status`);
    const api = w.gatewayApi(Buffer.from(`${namespace}/${name}`).toString('base64url'));
    t.match(api, { proxy: { listen_path: p.path, target_url: `http://${p.service.name}.${namespace}.svc:${p.service.port.number}` } }, `${p.host || '*'}${p.path} is routed to its service`);
    t.equal(api?.domain ?? '', p.host, `${name} listens on its rule's host`);
  }
}
