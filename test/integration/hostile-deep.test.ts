/**
 * An ApiDefinition nested 5,000 levels deep, on both tiers: created from its JSON text on a
 * real kube-apiserver (which stores and answers it), or, against the fake (whose copies
 * recurse), answered in its list as the real one answers it. The run completes; that one
 * object ends Failed with reason Invalid (status, Ready condition, Warning Event) and a bounded
 * message, nothing of it is sent to the gateway, and the nine well-formed ones beside it are
 * synced in the same run.
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
  const hostile = apiDefinition('hostile').patchSpec({ config_data: '__deep__' }).build();
  const text = (obj: unknown): string => JSON.stringify(obj).replace(PLACEHOLDER, deepText(LEVELS));
  if (w.kube.kind === 'real') {
    await w.kube.createFromText('apidefinitions', 'default', text(hostile));
    const stored = await w.get('hostile');
    let depth = 0;
    for (let v: unknown = stored?.spec?.config_data; typeof v === 'object' && v !== null; v = (v as { d?: unknown }).d) depth++;
    t.equal(depth, LEVELS, 'the API server stores it as deep');
  } else {
    await w.create(apiDefinition('hostile').build());
    const items = await w.kube.listObjects('apidefinitions');
    const list = {
      apiVersion: 'tyk.tyk.io/v1alpha1',
      kind: 'ApiDefinitionList',
      metadata: { resourceVersion: '999999' },
      items: items.map((o) => (o.metadata.name === 'hostile' ? { ...o, spec: { ...o.spec, config_data: '__deep__' } } : o)),
    };
    w.kube.fake.inject({ method: 'GET', path: /\/apidefinitions$/, status: 200, body: text(list), headers: { 'content-type': 'application/json' }, times: Infinity });
  }
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
