/**
 * Every Tyk Operator sample of kind ApiDefinition, SecurityPolicy or OperatorContext (in
 * $TYK_REFERENCE_DIR/samples) is accepted: it syncs, or its status says what is unsupported or
 * what it waits for; nothing crashes, nothing is half-sent. What a sample's comments say to
 * create first (a TLS Secret) is created first.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import yaml from 'js-yaml';
import t from 'tap';
import type { KubeObject } from '../../lib/kube/types.js';
import { secret } from '../fixtures/builders.js';
import { certId, PEM } from '../fixtures/pem.js';
import { startWorld } from '../harness/world.js';
import { referencePath } from './reference.js';

const ROOT = referencePath('samples');
const KINDS = new Set(['ApiDefinition', 'SecurityPolicy', 'OperatorContext']);

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.yaml') ? [p] : [];
  });
}

/** What each sample must end as (anything else fails the test). */
const EXPECTED: Record<string, RegExp> = {
  'federation/supergraph.yaml:ApiDefinition/federation-supergraph': /^invalid: .*graphql\.graph_ref/,
  'ingress/ingress-httpbin/apidefinition_template.yaml:ApiDefinition/myapideftemplate': /^skipped/,
  // Tyk Operator's SecurityPolicy CRD has no `kind` in access_rights_array: the API server prunes
  // it, so the entry names an ApiDefinition, which does not exist (under our CRDs: invalid, naming
  // TykOasApiDefinition)
  'oas/oas-protected.yaml:SecurityPolicy/petstore-oas-policy': /^waiting: waiting for ApiDefinition default\/petstore-protected does not exist/,
  // Tyk Operator's ApiDefinition CRD requires transform_headers[].act_on, which these lack
  'looping/dynamic_auth.yaml:ApiDefinition/basic-auth-internal': /^refused: .*transform_headers\.act_on: Required value/,
  'looping/dynamic_auth.yaml:ApiDefinition/auth-token-internal': /^refused: .*transform_headers\.act_on: Required value/,
  'operator-context/pro.yaml:ApiDefinition/httpbin-with-context': /^failed: OperatorContext default\/local-pro-test: Secret tyk-operator-system\/tyk-operator-conf not found/,
  'federation/users-subgraph.yaml:ApiDefinition/federation-users-subgraph': /^invalid: .*graphql\.graph_ref/,
  // its ApiDefinition is in httpbin_protected.yaml: alone, the policy waits for it
  'httpbin_protected_policy.yaml:SecurityPolicy/httpbin': /^waiting: waiting for ApiDefinition default\/httpbin does not exist/,
};

/**
 * What a sample's comments tell the user to create first (`kubectl create secret tls my-test-tls
 * --cert ... --key ...`), made from the test TLS material.
 */
const PREREQUISITES: Record<string, KubeObject[]> = {
  'httpbin_upstream_cert.yaml': [secret('my-test-tls').tls(PEM.server, PEM.serverKey).build()],
  'mtls/client/httpbin_client_mtls_using_secret.yaml': [secret('my-test-tls').tls(PEM.client, PEM.clientKey).build()],
};

const samples = files(ROOT)
  .map((file) => ({ file: relative(ROOT, file), docs: (yaml.loadAll(readFileSync(file, 'utf8')) as (KubeObject | null)[]).filter((d): d is KubeObject => !!d && KINDS.has(d.kind)) }))
  .filter((s) => s.docs.length > 0);

t.test('there are samples to check', async (t) => {
  t.ok(samples.length >= 10, `${samples.length} sample files`);
});

for (const { file, docs } of samples) {
  t.test(file, async (t) => {
    // Under Tyk Operator's CRDs, as in a cluster where Tyk Operator was installed (the real tier
    // runs this suite against a real kube-apiserver with them). Some samples hold "" in typed
    // string fields (federation/supergraph.yaml: proxy.target_url), which kube-apiserver 1.20
    // built with Go >= 1.16 refuses as null; released builds take it, and so does this fake.
    const w = await startWorld({ kube: { crds: [referencePath('crds')], emptyStringIsNull: false } });
    t.teardown(() => w.close());
    // what the API server refuses never reaches us: that is the sample's outcome (kubectl apply says why)
    const refused = new Map<string, string>();
    for (const prerequisite of PREREQUISITES[file] ?? []) await w.create(prerequisite);
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
        t.match(`refused: ${refusal}`, EXPECTED[key] ?? /^$/, `${key} → refused by the API server: ${refusal}`);
        continue;
      }
      const o = final.objects.find((x) => x.kind === doc.kind && x.name === doc.metadata.name);
      t.ok(o, `${key} is reported`);
      if (!o) continue;
      const seen = `${o.result}${o.error ? `: ${o.error}` : ''}`;
      const expected = EXPECTED[key] ?? /^unchanged$/;
      t.match(seen, expected, `${key} → ${seen}`);
      const status = (await w.get(doc.metadata.name, doc.metadata.namespace ?? 'default', doc.kind))?.status;
      if (o.result === 'unchanged') t.ok(status?.api_id ?? status?.pol_id, `${key} has its gateway id in status`);
      if (/^(invalid|failed)/.test(seen) && doc.kind === 'ApiDefinition') t.match(status, { latestTransaction: { status: 'Failed', error: /./ } }, `${key}: the status says why`);
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
    if (file === 'jwt-auth/example1.yaml') {
      const api = w.gatewayApi(Buffer.from('default/httpbin').toString('base64url'));
      t.same(api?.jwt_default_policies, [Buffer.from('default/jwt-policy').toString('base64url')], 'jwt_default_policies name the policy by its gateway id');
    }
  });
}
