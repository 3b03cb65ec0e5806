/**
 * Hostile input costs its author only, through HTTP against the fakes, where the API server's
 * answer carries what no real kube-apiserver stores (its list or GET answered as text): one
 * ApiDefinition whose spec nests 5,000 or 100,000 levels deep ends Failed with reason Invalid,
 * with a bounded message, and the nine well-formed ones beside it are synced in the same run
 * (kube-apiserver 1.20 never answers the create of an object nested even 100 levels deep, so
 * there such an object never exists); an Ingress whose template nests too deep to copy is
 * Invalid while another Ingress syncs. The limits that hold on both tiers are hostile-limits.test.ts.
 */
import t from 'tap';
import { MAX_MESSAGE_CHARS, MAX_SPEC_DEPTH } from '../../lib/engine/input-limits.js';
import { apiDefinition, conditionOf, defaultIdOf, ingress } from '../fixtures/builders.js';
import { template } from '../fixtures/ingress-world.js';
import { reported, type World, worldFor } from '../harness/world.js';

/** `{"d":{"d":…1…}}`, `levels` deep, built as text (no recursion anywhere). */
function deepText(levels: number): string {
  return `${'{"d":'.repeat(levels)}1${'}'.repeat(levels)}`;
}

const PLACEHOLDER = '"__deep__"';

/**
 * The API server's list of ApiDefinitions answered as a real one answers it when `name`'s spec
 * holds `deep` under `config_data`: the fake stores the object shallow (its own copies recurse),
 * and its list answer carries the deep value, as the text a real server sends.
 */
async function answerDeep(w: World, name: string, deep: string): Promise<void> {
  const items = await w.kube.listObjects('apidefinitions');
  const withPlaceholder = items.map((o) => (o.metadata.name === name ? { ...o, spec: { ...o.spec, config_data: '__deep__' } } : o));
  const text = JSON.stringify({ apiVersion: 'tyk.tyk.io/v1alpha1', kind: 'ApiDefinitionList', metadata: { resourceVersion: '999999' }, items: withPlaceholder }).replace(PLACEHOLDER, deep);
  w.kube.fake.inject({ method: 'GET', path: /\/apidefinitions$/, status: 200, body: text, headers: { 'content-type': 'application/json' }, times: Infinity });
}

async function tenApis(w: World): Promise<void> {
  for (let i = 0; i < 9; i++) await w.create(apiDefinition(`api-${i}`).build());
  await w.create(apiDefinition('hostile').build());
}

for (const levels of [5_000, 100_000]) {
  t.test(`an ApiDefinition nested ${levels} deep is Failed Invalid; the nine beside it are synced in the same run`, async (t) => {
    const w = await worldFor(t);
    await tenApis(w);
    await answerDeep(w, 'hostile', deepText(levels));
    const res = await w.resync();
    t.equal(res.statusCode, 200, 'the run completes');
    const hostile = reported(res.body, 'hostile');
    t.equal(hostile.result, 'invalid');
    t.match(hostile.error, new RegExp(`nested deeper than ${MAX_SPEC_DEPTH} levels`));
    t.ok((hostile.error ?? '').length <= MAX_MESSAGE_CHARS, 'a bounded message');
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
      events.some((e) => e.type === 'Warning' && e.reason === 'Invalid' && e.message.length <= 1024),
      'a Warning Event with reason Invalid',
    );
  });
}

t.test('an Ingress whose template nests too deep to copy is Invalid, with a Warning Event; another Ingress is synced in the same run', async (t) => {
  const w = await worldFor(t);
  await w.create(template('tpl'));
  await w.create(template('tpl-ok'));
  await w.create(ingress('web').withClass('tyk').withTemplate('tpl').withRule('', '/web', 'web', 80).build());
  await w.create(ingress('shop').withClass('tyk').withTemplate('tpl-ok').withRule('', '/shop', 'shop', 80).build());
  // the template as a real API server answers its GET when its spec holds a value 100,000 levels deep
  const tpl = await w.get('tpl');
  const text = JSON.stringify({ ...tpl, spec: { ...tpl?.spec, config_data: '__deep__' } }).replace(PLACEHOLDER, deepText(100_000));
  w.kube.fake.inject({
    method: 'GET',
    path: '/apis/tyk.tyk.io/v1alpha1/namespaces/default/apidefinitions/tpl',
    status: 200,
    body: text,
    headers: { 'content-type': 'application/json' },
    times: Infinity,
  });
  const report = await w.tick();
  t.same(report.errors, [], 'no run-level error');
  const web = report.objects.find((o) => o.kind === 'Ingress' && o.name === 'web');
  t.match(web, { action: 'NOOP', reason: 'invalid spec', result: 'invalid', code: 'INVALID_SPEC', error: /^could not be decided: / });
  t.ok((web?.error ?? '').length <= MAX_MESSAGE_CHARS, 'a bounded message');
  t.match(
    report.objects.find((o) => o.kind === 'Ingress' && o.name === 'shop'),
    { result: 'synced' },
  );
  const events = (await w.allEvents()).filter((e) => e.involvedObject.kind === 'Ingress' && e.involvedObject.name === 'web');
  t.ok(
    events.some((e) => e.type === 'Warning' && e.reason === 'Invalid'),
    'a Warning Event with reason Invalid',
  );
});
