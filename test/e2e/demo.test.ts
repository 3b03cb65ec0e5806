/**
 * `npm run demo` (scripts/demo.ts) as a child process: it runs on its own (loopback fakes, the
 * in-process store), narrates every step's outcome and exits 0; a failure exits 1 with a
 * message on stderr.
 */
import t from 'tap';
import { runTs } from '../harness/child.js';

const DEMO = new URL('../../scripts/demo.ts', import.meta.url).pathname;

interface Outcome {
  code: number | null;
  out: string;
  err: string;
}

async function runDemo(env: Record<string, string> = {}, timeoutMs = 60_000): Promise<Outcome> {
  const child = runTs(DEMO, env);
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const code = await child.code;
  clearTimeout(timer);
  return { code, out: child.out(), err: child.err() };
}

t.test('the demo runs every step, says what happened, and exits 0', async (t) => {
  const started = Date.now();
  const { code, out, err } = await runDemo();
  t.equal(code, 0, `exit code (stderr: ${err})`);
  t.equal(err, '', 'nothing on stderr');
  t.ok(Date.now() - started < 60_000, 'within the timeout');

  const steps = out.split(/\n(?=Step \d\. )/);
  t.equal(steps.length, 9, 'start-up and eight steps');
  const step = (n: number): string => steps[n] ?? '';
  t.match(step(0), /ready: store ok, kube ok, gateway ok/);

  t.match(step(1), /kubectl apply -f httpbin\.yaml/);
  t.match(step(1), /localhost:8080\/webhooks\/watch/);
  t.match(step(1), /→ created: .*API ZGVmYXVsdC9odHRwYmlu.*finalizers\.tyk\.io\/apidefinition.*Successful.*1 write, 1 reload/);

  t.match(step(2), /kubectl patch tykapis httpbin/);
  t.match(step(2), /→ spec changed: 1 write .*1 reload/);

  t.match(step(3), /x-tyk-authorization/);
  t.match(step(3), /→ drifted on gateway, restored by the scheduled run: 1 write, 1 reload/);

  t.match(step(4), /rollout restart/);
  t.match(step(4), /→ missing on gateway, restored by the next run: 1 write, 1 reload/);

  t.match(step(5), /kubectl apply -f httpbin-readers\.yaml/);
  t.match(step(5), /→ synced: policy ZGVmYXVsdC9odHRwYmluLXJlYWRlcnM grants API ZGVmYXVsdC9odHRwYmlu; .*linked_apis \[httpbin\].*linked_by_policies \[httpbin-readers\]/);

  t.match(step(6), /resync\?dryRun=true/);
  t.match(step(6), /SecurityPolicy default\/httpbin-readers: UPDATE \(spec changed\) → planned/);
  t.match(step(6), /→ dry run: 1 update planned, 0 writes/);

  t.match(step(7), /kubectl delete tykpolicies httpbin-readers/);
  t.match(step(7), /kubectl delete tykapis httpbin/);
  t.match(step(7), /→ deleted: .*gone from the gateway \(0 APIs, 0 policies left\); finalizers removed, both objects gone from the cluster \(2 writes/);

  t.match(step(8), /kubectl create configmap petstore --from-file=oas\.json/);
  t.match(step(8), /resync\?kind=TykOasApiDefinition&namespace=default&name=petstore/);
  t.match(step(8), /kubectl get tykoas petstore\n +LISTENPATH \/petstore\/ +PROXY\.TARGETURL http:\/\/httpbin\.org +ENABLED true +SYNCSTATUS Successful/);
  t.match(step(8), /\/tyk\/apis\/oas\/ZGVmYXVsdC9wZXRzdG9yZQ .*\n +\{"id":"ZGVmYXVsdC9wZXRzdG9yZQ","listenPath":"\/petstore\/"\}/);
  t.match(step(8), /→ created: the gateway serves \/petstore\/ as OAS API ZGVmYXVsdC9wZXRzdG9yZQ .*finalizers\.tyk\.io\/tykoasapidefinition.*1 write, 1 reload/);
  t.match(step(8), /localhost:8080\/webhooks\/audit/);
  t.match(step(8), /→ ConfigMap edited: its event ran only TykOasApiDefinition default\/petstore, .*1 write, 1 reload; the gateway serves \/pets\//);

  t.match(out, /Done: 8 steps in [\d.]+ s\. Over 9 runs gateway-reconciler made 9 gateway writes and 9 reloads/);
  // biome-ignore lint/suspicious/noControlCharactersInRegex: ESC is what a color code starts with
  t.notMatch(out, /\x1b\[/, 'no colors');
});

t.test('a demo that cannot finish exits 1 and says why', async (t) => {
  const { code, err } = await runDemo({ DEMO_TIMEOUT_MS: '1' });
  t.equal(code, 1);
  t.match(err, /demo: FAILED: not finished after 1 ms/);
});
