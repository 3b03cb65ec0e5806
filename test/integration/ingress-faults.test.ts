/**
 * Ingresses when a read fails, against the fake API server only (faults are injected into it, so
 * this suite is not in the real tier): a failed listing of the generated ApiDefinitions, or a
 * template that cannot be read, fails the Ingress with a run error naming the read, and deletes
 * nothing, in the cluster or on the gateway; once the reads succeed, the removed path goes.
 */
import t from 'tap';
import { defaultIdOf } from '../fixtures/builders.js';
import { firstRuleOnly, generated, outcomes, PATHONLY, setUp } from '../fixtures/ingress-world.js';

t.test('a failed read deletes nothing', async (t) => {
  const w = await setUp(t);
  await w.tick();
  await w.update('web', firstRuleOnly, 'default', 'ingresses');
  // the labelled ApiDefinitions cannot be listed
  const fault = w.kube.fake.inject({ method: 'GET', path: /\/apidefinitions$/, match: (c) => c.query.labelSelector !== undefined, status: 500, times: Infinity });
  const failed = await w.tick();
  t.match(
    failed.objects.find((o) => o.kind === 'Ingress'),
    { result: 'failed', reason: 'read failed' },
  );
  t.ok(
    failed.errors.some((e) => /labelled tyk.io\/ingress/.test(e.stage)),
    'a run error names the listing',
  );
  t.equal((await generated(w)).length, 2, 'nothing deleted');
  t.ok(w.gatewayApi(defaultIdOf(PATHONLY)), 'nor from the gateway');
  fault.cancel();
  // the template cannot be read
  const tplFault = w.kube.fake.inject({ method: 'GET', path: '/apis/tyk.tyk.io/v1alpha1/namespaces/default/apidefinitions/tpl', status: 500, times: Infinity });
  const noTemplate = await w.resync({ kind: 'Ingress', namespace: 'default', name: 'web' });
  t.match(
    noTemplate.body.objects.find((o) => o.kind === 'Ingress'),
    { result: 'failed', reason: 'read failed' },
  );
  t.equal((await generated(w)).length, 2, 'nothing deleted');
  tplFault.cancel();
  const healed = await w.resync({ kind: 'Ingress', namespace: 'default', name: 'web' });
  t.same(outcomes(healed.body), [`ApiDefinition/${PATHONLY}:DELETE:deleted`, 'Ingress/web:UPDATE:synced']);
});
