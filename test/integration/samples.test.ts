/**
 * Every Tyk Operator sample of kind ApiDefinition, SecurityPolicy or OperatorContext (in
 * shared/reference/samples) is accepted: it syncs, or its status says what is unsupported or
 * what it waits for; nothing crashes, nothing is half-sent.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import yaml from 'js-yaml';
import t from 'tap';
import type { KubeObject } from '../../lib/kube/types.js';
import { startWorld } from '../harness/world.js';

const ROOT = fileURLToPath(new URL('../../../shared/reference/samples/', import.meta.url));
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
  'httpbin_upstream_cert.yaml:ApiDefinition/httpbin': /^invalid: .*upstream_certificate_refs/,
  'mtls/client/httpbin_client_mtls_using_secret.yaml:ApiDefinition/httpbin-client-mtls': /^invalid: .*client_certificate_refs/,
  'ingress/ingress-httpbin/apidefinition_template.yaml:ApiDefinition/myapideftemplate': /^skipped/,
  'oas/oas-protected.yaml:SecurityPolicy/petstore-oas-policy': /^invalid: .*TykOasApiDefinition/,
  'operator-context/pro.yaml:ApiDefinition/httpbin-with-context': /^failed: OperatorContext default\/local-pro-test: Secret tyk-operator-system\/tyk-operator-conf not found/,
  'federation/users-subgraph.yaml:ApiDefinition/federation-users-subgraph': /^invalid: .*graphql\.graph_ref/,
  // its ApiDefinition is in httpbin_protected.yaml: alone, the policy waits for it
  'httpbin_protected_policy.yaml:SecurityPolicy/httpbin': /^waiting: waiting for ApiDefinition default\/httpbin does not exist/,
};

const samples = files(ROOT)
  .map((file) => ({ file: relative(ROOT, file), docs: (yaml.loadAll(readFileSync(file, 'utf8')) as (KubeObject | null)[]).filter((d): d is KubeObject => !!d && KINDS.has(d.kind)) }))
  .filter((s) => s.docs.length > 0);

t.test('there are samples to check', async (t) => {
  t.ok(samples.length >= 10, `${samples.length} sample files`);
});

for (const { file, docs } of samples) {
  t.test(file, async (t) => {
    // Some samples hold "" in typed string fields (federation/supergraph.yaml: proxy.target_url),
    // which kube-apiserver 1.20 built with Go >= 1.16 refuses as null; official builds and 1.21+
    // take it, and this test is about what we do with every sample, so it runs as those do.
    const w = await startWorld({ kube: { emptyStringIsNull: false } });
    t.teardown(() => w.close());
    for (const doc of docs) await w.create({ ...doc, metadata: { ...doc.metadata, namespace: doc.metadata.namespace ?? 'default' } });
    const report = await w.tick();
    await w.tick(); // what waits on a same-file dependency settles by the second run at the latest
    const final = await w.tick();
    t.same(report.errors, [], 'no run-level error');
    for (const doc of docs.filter((d) => d.kind !== 'OperatorContext')) {
      const key = `${file}:${doc.kind}/${doc.metadata.name}`;
      const o = final.objects.find((x) => x.kind === doc.kind && x.name === doc.metadata.name);
      t.ok(o, `${key} is reported`);
      if (!o) continue;
      const seen = `${o.result}${o.error ? `: ${o.error}` : ''}`;
      const expected = EXPECTED[key] ?? /^unchanged$/;
      t.match(seen, expected, `${key} → ${seen}`);
      const status = (await w.get(doc.metadata.name, doc.metadata.namespace ?? 'default', doc.kind))?.status;
      if (o.result === 'unchanged') t.ok(status?.api_id ?? status?.pol_id, `${key} has its gateway id in status`);
      if (/^(invalid|failed)/.test(seen) && doc.kind === 'ApiDefinition') t.match(status, { latestTransaction: { status: 'Failed', error: /./ } }, `${key}: the status says why`);
    }
    if (file === 'jwt-auth/example1.yaml') {
      const api = w.gatewayApi(Buffer.from('default/httpbin').toString('base64url'));
      t.same(api?.jwt_default_policies, [Buffer.from('default/jwt-policy').toString('base64url')], 'jwt_default_policies name the policy by its gateway id');
    }
  });
}
