/**
 * `npm run test:real [-- <folder>]`: the real-API-server tier (controller-runtime's envtest, for
 * us). Starts etcd and a real kube-apiserver (test/harness/real-apiserver.ts; the binary is built
 * once from Debian's sources by scripts/kube-apiserver.sh and cached under ~/.cache), with RBAC
 * on and the service running under the ServiceAccount and ClusterRole from deploy/kubernetes, and
 * runs the integration suites that inject no API-server faults against it, one file at a time
 * (they share the server; each World removes what it created):
 *
 * 1. with our CRDs (deploy/crds) installed, and the tests' Gateway API CRDs (test/fixtures/crds:
 *    ReferenceGrant, GatewayClass, Gateway, HTTPRoute);
 * 2. when <folder> (or TYK_REFERENCE_DIR) names Tyk Operator's reference (crds/, samples/): again
 *    on a second server with Tyk Operator's CRDs installed, plus the samples suite, and with
 *    Gateway API's upstream standard channel (<folder>/gateway-api/crds, ReferenceGrant
 *    included) in place of the tests' copies (those when the folder has none).
 *
 * Gateway API's CRDs are too large for client-side apply: they are created by POST, as
 * `kubectl create` does. kube-apiserver 1.20 ignores their CEL rules.
 *
 * Exits with the first non-zero tap exit code, 2 with one line when the server cannot start.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { realApiServerEnv, startRealApiServer } from '../test/harness/real-apiserver.js';
import { ROOT, referenceArg, runTap } from './tap-tier.js';

/** The suites that run against the real server: no fault is injected into the API server. */
export const REAL_SUITES = [
  'test/integration/reconcile.test.ts',
  'test/integration/policies.test.ts',
  'test/integration/contexts.test.ts',
  'test/integration/pro-mode.test.ts',
  'test/integration/federation.test.ts',
  'test/integration/ingress.test.ts',
  'test/integration/namespaced-install.test.ts',
  'test/integration/readiness.test.ts',
  'test/integration/ownership.test.ts',
  'test/integration/references.test.ts',
  'test/integration/hostile-limits.test.ts',
  'test/integration/replicas-service.test.ts',
  'test/integration/sharded-tick.test.ts',
  'test/integration/gateway-api.test.ts',
  // only here: the API server calls the admission webhook (the fake does not)
  'test/real/admission-webhook.test.ts',
];

/** Gateway API's CRDs as the tests' copies of their schemas (ReferenceGrant, GatewayClass, Gateway, HTTPRoute): the suites create grants, classes, Gateways and routes. */
const FIXTURE_GATEWAY_API_CRDS = join(ROOT, 'test/fixtures/crds');

const reference = referenceArg();
const passes: { name: string; crdDirs: string[]; files: string[]; env: Record<string, string> }[] = [
  { name: 'our CRDs (deploy/crds)', crdDirs: [join(ROOT, 'deploy/crds'), FIXTURE_GATEWAY_API_CRDS], files: REAL_SUITES, env: {} },
];
if (reference) {
  const upstream = join(reference, 'gateway-api/crds');
  const gatewayApi = existsSync(upstream) ? upstream : FIXTURE_GATEWAY_API_CRDS;
  passes.push({
    name: `Tyk Operator's CRDs (${reference}/crds) and Gateway API's (${gatewayApi})`,
    crdDirs: [join(reference, 'crds'), gatewayApi],
    files: [...REAL_SUITES, 'test/compat/samples.test.ts'],
    env: { TYK_REFERENCE_DIR: reference, REAL_KUBE_CRDS: 'tyk-operator' },
  });
}

let exit = 0;
for (const pass of passes) {
  console.log(`# real kube-apiserver with ${pass.name}`);
  let server: Awaited<ReturnType<typeof startRealApiServer>> | undefined;
  try {
    server = await startRealApiServer({ crdDirs: pass.crdDirs, log: (line) => console.log(`# ${line}`) });
  } catch (err) {
    console.error(`test:real: the real API server did not start: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(2);
  }
  try {
    const code = await runTap(pass.files, { ...realApiServerEnv(server), ...pass.env }, ['--jobs=1']);
    if (code !== 0 && exit === 0) exit = code;
  } finally {
    await server.stop();
  }
}
process.exitCode = exit;
