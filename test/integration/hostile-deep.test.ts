/**
 * An ApiDefinition nested 5,000 levels deep, answered in the API server's list (the fake's own
 * copies recurse, so it answers the list as text). The run completes; that one object ends
 * Failed with reason Invalid (status, Ready condition, Warning Event) and a bounded message,
 * nothing of it is sent to the gateway, and the nine well-formed ones beside it are synced in
 * the same run. Not a real-tier suite: kube-apiserver 1.20 does not answer the create of an
 * ApiDefinition whose free-form spec nests 100 levels deep (no answer within 20 s, where a flat
 * one takes milliseconds), so there such an object never exists.
 */
import t from 'tap';
import { MAX_MESSAGE_CHARS, MAX_SPEC_DEPTH } from '../../lib/reconcile/input-limits.js';
import { apiDefinition, conditionOf, defaultIdOf } from '../fixtures/builders.js';
import { reported, worldFor } from '../harness/world.js';

const LEVELS = 5_000;
const PLACEHOLDER = '"__deep__"';

/** `{"d":{"d":…1…}}`, `levels` deep, built as text (no recursion anywhere). */
function deepText(levels: number): string {
  return `${'{"d":'.repeat(levels)}1${'}'.repeat(levels)}`;
}

t.test(`an ApiDefinition nested ${LEVELS} deep is Failed Invalid; the nine beside it are synced in the same run`, async (t) => {
  const w = await worldFor(t);
  for (let i = 0; i < 9; i++) await w.create(apiDefinition(`api-${i}`).build());
  const text = (obj: unknown): string => JSON.stringify(obj).replace(PLACEHOLDER, deepText(LEVELS));
  await w.create(apiDefinition('hostile').build());
  const items = await w.kube.listObjects('apidefinitions');
  const list = {
    apiVersion: 'tyk.tyk.io/v1alpha1',
    kind: 'ApiDefinitionList',
    metadata: { resourceVersion: '999999' },
    items: items.map((o) => (o.metadata.name === 'hostile' ? { ...o, spec: { ...o.spec, config_data: '__deep__' } } : o)),
  };
  w.kube.fake.inject({ method: 'GET', path: /\/apidefinitions$/, status: 200, body: text(list), headers: { 'content-type': 'application/json' }, times: Infinity });
  const res = await w.resync();
  t.equal(res.statusCode, 200, 'the run completes');
  const bad = reported(res.body, 'hostile');
  t.equal(bad.result, 'invalid');
  t.match(bad.error, new RegExp(`nested deeper than ${MAX_SPEC_DEPTH} levels`));
  t.ok((bad.error ?? '').length <= MAX_MESSAGE_CHARS, 'a bounded message');
  for (let i = 0; i < 9; i++) {
    t.equal(reported(res.body, `api-${i}`).result, 'synced', `api-${i} synced`);
    t.ok(w.gatewayApi(defaultIdOf(`api-${i}`)), `api-${i} is on the gateway`);
  }
  t.notOk(w.gatewayApi(defaultIdOf('hostile')), 'nothing of the hostile one was sent');
  const cr = await w.get('hostile');
  t.match(cr?.status, { latestTransaction: { status: 'Failed' } });
  t.match(conditionOf(cr, 'Ready'), { status: 'False', reason: 'Invalid' });
  const events = await w.events('hostile');
  t.ok(
    events.some((e) => e.type === 'Warning' && e.reason === 'Invalid'),
    'a Warning Event with reason Invalid',
  );
});
