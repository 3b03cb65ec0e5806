/**
 * The admission webhook as kube-apiserver calls it (the real-API-server tier only: the fake does
 * not call webhooks): a ValidatingWebhookConfiguration shaped as deploy/admission's (failurePolicy
 * Ignore, sideEffects None, a short timeout), pointing at the service served over HTTPS on
 * loopback with the test CA. What `kubectl apply` meets: a clashing listen path and an OAS
 * ConfigMap that does not parse are refused with our message; a resource naming a Secret not yet
 * created is admitted with a warning; a valid one is admitted silently; with the service stopped,
 * applies still go through. And deploy/admission/certificates.sh makes what that needs.
 */
import { spawnSync } from 'node:child_process';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import yaml from 'js-yaml';
import t from 'tap';
import type { KubeObject } from '../../lib/kube/types.js';
import { buildApp } from '../../lib/server.js';
import { apiDefinition, configMap, oasDocument, tykOasApi } from '../fixtures/builders.js';
import { AdminClient, realApiServerFromEnv } from '../harness/real-apiserver.js';
import { worldFor } from '../harness/world.js';

const TLS = join(import.meta.dirname, '../fixtures/tls');
const ROOT = join(import.meta.dirname, '../..');
const TYK = '/apis/tyk.tyk.io/v1alpha1/namespaces/default';
const WEBHOOKS = '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations';

const info = realApiServerFromEnv();
if (!info) throw new Error('test/real needs a real kube-apiserver (REAL_KUBE_URL…): run it through `npm run test:real`');
const admin = new AdminClient(info);
t.teardown(() => admin.close());

/** deploy/admission's ValidatingWebhookConfiguration, sent to `url` with the test CA instead of the in-cluster Service. */
function webhookConfiguration(url: string): KubeObject {
  const shipped = yaml.load(readFileSync(join(ROOT, 'deploy/admission/validating-webhook.yaml'), 'utf8')) as KubeObject & { webhooks: Record<string, unknown>[] };
  return {
    ...shipped,
    metadata: { name: 'gateway-reconciler-test' },
    webhooks: shipped.webhooks.map((w) => ({ ...w, clientConfig: { url, caBundle: readFileSync(join(TLS, 'ca.pem')).toString('base64') } })),
  } as KubeObject;
}

async function apply(path: string, obj: KubeObject) {
  return admin.call('POST', path, obj);
}

t.test('kube-apiserver asks the webhook: denials carry our message, waits a warning, and with the service stopped applies go through', async (t) => {
  const w = await worldFor(t);
  const app = buildApp(w.svc, { https: { cert: readFileSync(join(TLS, 'server.pem')), key: readFileSync(join(TLS, 'server-key.pem')) } });
  const address = await app.listen({ host: '127.0.0.1', port: 0 });
  t.teardown(() => app.close());
  const vwc = webhookConfiguration(`${address.replace('localhost', '127.0.0.1')}/admission`);
  t.equal((await admin.call('POST', WEBHOOKS, vwc)).status, 201, 'the configuration is accepted by the API server');
  t.teardown(() => admin.call('DELETE', `${WEBHOOKS}/gateway-reconciler-test`));
  // the API server picks a new configuration up within about a second
  const probe = apiDefinition('probe')
    .patchSpec({ graphql: { enabled: true, execution_mode: 'executionEngine', graph_ref: 'x' } })
    .build();
  for (let i = 0; i < 50; i++) {
    const r = await apply(`${TYK}/apidefinitions`, probe);
    if (r.status >= 400) break;
    await admin.call('DELETE', `${TYK}/apidefinitions/probe`);
    await sleep(200);
  }

  await w.create(
    apiDefinition('older')
      .patchSpec({ proxy: { target_url: 'http://a.example', listen_path: '/shared' } })
      .build(),
  );
  await w.tick();
  await sleep(1_100); // creation times have second precision: the next resource is the younger
  const clash = await apply(
    `${TYK}/apidefinitions`,
    apiDefinition('younger')
      .patchSpec({ proxy: { target_url: 'http://b.example', listen_path: '/shared' } })
      .build(),
  );
  t.equal(clash.status, 403, 'a clashing listen path is refused');
  t.match(clash.json.message, /admission webhook "[^"]+" denied the request: ListenPathClash: spec\.proxy\.listen_path \/shared is already served on gateway default by ApiDefinition\/default\/older/);
  t.equal((await admin.call('GET', `${TYK}/apidefinitions/younger`)).status, 404, 'and not stored');

  await w.kube.put(configMap('petstore').withOas(oasDocument('petstore')).build());
  await w.create(tykOasApi('petstore').build());
  await w.tick();
  const garbled = await admin.call('PUT', '/api/v1/namespaces/default/configmaps/petstore', {
    ...(await admin.must('GET', '/api/v1/namespaces/default/configmaps/petstore')),
    data: { 'oas.json': '{ not json' },
  });
  t.equal(garbled.status, 422, 'an OAS document that does not parse is refused');
  t.match(garbled.json.message, /denied the request: TykOasApiDefinition default\/petstore would be Invalid: .*not valid JSON/);

  const waiting = await apply(
    `${TYK}/apidefinitions`,
    apiDefinition('tls')
      .patchSpec({ certificate_secret_names: ['later'] })
      .build(),
  );
  t.equal(waiting.status, 201, 'a resource naming a Secret not created yet is admitted');
  t.match(waiting.warnings, [/^Waiting: .*Secret default\/later does not exist/], 'with a warning kubectl prints');

  const fine = await apply(`${TYK}/apidefinitions`, apiDefinition('fine').build());
  t.equal(fine.status, 201);
  t.same(fine.warnings, [], 'a valid resource: no warning');

  await app.close();
  const down = await apply(
    `${TYK}/apidefinitions`,
    apiDefinition('while-down')
      .patchSpec({ proxy: { target_url: 'http://c.example', listen_path: '/shared' } })
      .build(),
  );
  t.equal(down.status, 201, 'with the service stopped the apply goes through (failurePolicy Ignore)');
});

t.test('deploy/admission/certificates.sh --out: a CA, a serving certificate for the Service signed by it, and the configuration with that CA', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'admission-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const run = spawnSync('bash', [join(ROOT, 'deploy/admission/certificates.sh'), '--out', dir], { env: { ...process.env, NAMESPACE: 'gw', SERVICE: 'rec' }, encoding: 'utf8' });
  t.equal(run.status, 0, run.stderr);
  const ca = new X509Certificate(readFileSync(join(dir, 'ca.crt')));
  const cert = new X509Certificate(readFileSync(join(dir, 'tls.crt')));
  t.ok(cert.verify(ca.publicKey), 'the serving certificate is signed by the CA');
  t.ok(cert.checkHost('rec.gw.svc'), 'for the Service’s DNS name');
  t.ok(createPrivateKey(readFileSync(join(dir, 'tls.key'))).asymmetricKeyType, 'with its key');
  const vwc = yaml.load(readFileSync(join(dir, 'validating-webhook.yaml'), 'utf8')) as {
    metadata: { name: string };
    webhooks: { clientConfig: { caBundle: string; service: Record<string, unknown> }; failurePolicy: string; sideEffects: string }[];
  };
  t.equal(vwc.metadata.name, 'gateway-reconciler');
  t.match(vwc.webhooks[0], { failurePolicy: 'Ignore', sideEffects: 'None', clientConfig: { service: { namespace: 'gw', name: 'rec', path: '/admission', port: 443 } } });
  t.equal(Buffer.from(vwc.webhooks[0]?.clientConfig.caBundle ?? '', 'base64').toString(), readFileSync(join(dir, 'ca.crt'), 'utf8'), 'caBundle is the CA');
  const bad = spawnSync('bash', [join(ROOT, 'deploy/admission/certificates.sh'), '--nope'], { encoding: 'utf8' });
  t.equal(bad.status, 2, 'a bad argument: exit 2');
  t.match(bad.stderr, /^certificates\.sh: unknown argument --nope/);
});
