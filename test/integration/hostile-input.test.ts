/**
 * Hostile input costs its author only, through HTTP against the fakes: one ApiDefinition whose
 * spec nests 100,000 levels deep (the list answer carrying it, as the fake cannot store it; the
 * 5,000-level case, on both tiers, is hostile-deep.test.ts) ends Failed with reason Invalid,
 * with a bounded message, and the nine well-formed ones beside it are synced in the same run; a ConfigMap or Secret above its size limit makes its resource
 * Invalid, naming the limit, and nothing else.
 */
import t from 'tap';
import { MAX_CERTIFICATE_BYTES, MAX_DOCUMENT_BYTES, MAX_MESSAGE_CHARS, MAX_SPEC_DEPTH } from '../../lib/reconcile/input-limits.js';
import { apiDefinition, conditionOf, configMap, defaultIdOf, ingress, oasDocument, secret, tykOasApi } from '../fixtures/builders.js';
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

for (const levels of [100_000]) {
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

t.test('a ConfigMap document above the size limit makes its TykOasApiDefinition Invalid, naming the limit', async (t) => {
  const w = await worldFor(t);
  const padding = 'x'.repeat(MAX_DOCUMENT_BYTES + 1);
  const doc = oasDocument('big');
  await w.create(
    configMap('big')
      .withOas({ ...doc, info: { title: 'big', version: '1', description: padding } })
      .build(),
  );
  await w.create(tykOasApi('big').build());
  await w.create(tykOasApi('small').build());
  await w.create(configMap('small').withOas(oasDocument('small')).build());
  const res = await w.resync();
  t.equal(res.statusCode, 200);
  const big = reported(res.body, 'big', 'TykOasApiDefinition');
  t.equal(big.result, 'invalid');
  t.match(big.error, new RegExp(`above the limit of ${MAX_DOCUMENT_BYTES} bytes`));
  t.notMatch(big.error, /xxxx/, 'the document is not quoted');
  t.equal(reported(res.body, 'small', 'TykOasApiDefinition').result, 'synced', 'the other one is synced');
});

t.test('a TLS Secret above the size limit makes the ApiDefinition naming it Invalid; the others are synced', async (t) => {
  const w = await worldFor(t);
  const line = '-----BEGIN CERTIFICATE-----\n';
  const crt = line.repeat(Math.ceil((MAX_CERTIFICATE_BYTES + 1) / line.length));
  await w.create(secret('huge').tls(crt, 'key').build());
  await w.create(
    apiDefinition('tls')
      .patchSpec({ certificate_secret_names: ['huge'] })
      .build(),
  );
  await w.create(apiDefinition('plain').build());
  const res = await w.resync();
  t.equal(reported(res.body, 'plain').result, 'synced');
  const tls = reported(res.body, 'tls');
  t.equal(tls.result, 'invalid');
  t.match(tls.error, new RegExp(`tls.crt is \\d+ bytes, above the limit of ${MAX_CERTIFICATE_BYTES} bytes`));
  t.notMatch(tls.error, /-----/, 'the Secret is not quoted');
});

t.test('/healthz answers within 100 ms, and no timer waits 100 ms longer than asked, while hostile tls.crt values are processed', async (t) => {
  const w = await worldFor(t);
  const line = '-----BEGIN CERTIFICATE-----\n';
  // 1 MB: refused by its size; 200 KB (under the limit): parsed, in linear time
  await w.create(
    secret('mega')
      .tls(line.repeat(Math.ceil(1_000_000 / line.length)), 'key')
      .build(),
  );
  await w.create(
    secret('repeat')
      .tls(line.repeat(Math.ceil(200_000 / line.length)), 'key')
      .build(),
  );
  await w.create(
    apiDefinition('mega')
      .patchSpec({ certificate_secret_names: ['mega'] })
      .build(),
  );
  await w.create(
    apiDefinition('repeat')
      .patchSpec({ certificate_secret_names: ['repeat'] })
      .build(),
  );
  await w.create(apiDefinition('plain').build());

  let worstLag = 0;
  let last = performance.now();
  const ticker = setInterval(() => {
    const now = performance.now();
    worstLag = Math.max(worstLag, now - last - 5);
    last = now;
  }, 5);
  let running = true;
  let worstHealthz = 0;
  let probes = 0;
  const probing = (async () => {
    while (running) {
      // from when the probe is due (a blocked event loop delays its sending too) to its answer
      const due = performance.now() + 10;
      await new Promise((resolve) => setTimeout(resolve, 10));
      const res = await w.app.inject({ method: 'GET', url: '/healthz' });
      worstHealthz = Math.max(worstHealthz, performance.now() - due);
      probes++;
      t.equal(res.statusCode, 200);
    }
  })();
  const res = await w.resync();
  running = false;
  await probing;
  clearInterval(ticker);

  t.equal(reported(res.body, 'plain').result, 'synced');
  t.match(reported(res.body, 'mega'), { result: 'invalid', error: new RegExp(`tls.crt is \\d+ bytes, above the limit of ${MAX_CERTIFICATE_BYTES} bytes`) });
  t.match(reported(res.body, 'repeat'), { result: 'invalid', error: /tls.crt: no PEM certificate block/ });
  t.ok(probes > 0, 'probed during the run');
  t.ok(worstHealthz < 100, `/healthz answered within ${worstHealthz.toFixed(1)} ms`);
  t.ok(worstLag < 100, `the event loop was never blocked 100 ms (worst: ${worstLag.toFixed(1)} ms)`);
});

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

t.test('a Tyk OAS document nested too deep (from a ConfigMap) makes its TykOasApiDefinition Invalid; the other is synced', async (t) => {
  const w = await worldFor(t);
  // 300 levels: the document is built, then refused by its depth; 100,000: building it throws, and that is the refusal
  // arrays, two bytes a level: 100,000 levels stay under the document size limit
  const deepDoc = (levels: number, name: string): string =>
    JSON.stringify({ ...oasDocument(name), components: { schemas: { x: '__deep__' } } }).replace(PLACEHOLDER, `${'['.repeat(levels)}${']'.repeat(levels)}`);
  await w.create(configMap('deep').withText('oas.json', deepDoc(300, 'deep')).build());
  await w.create(tykOasApi('deep').build());
  await w.create(configMap('deeper').withText('oas.json', deepDoc(100_000, 'deeper')).build());
  await w.create(tykOasApi('deeper').build());
  await w.create(configMap('fine').withOas(oasDocument('fine')).build());
  await w.create(tykOasApi('fine').build());
  const res = await w.resync();
  t.equal(res.statusCode, 200);
  t.match(reported(res.body, 'deep', 'TykOasApiDefinition'), { result: 'invalid', error: `the document built from it is nested deeper than ${MAX_SPEC_DEPTH} levels (the limit for a resource)` });
  const deeper = reported(res.body, 'deeper', 'TykOasApiDefinition');
  t.match(deeper, { result: 'invalid', error: /^could not be built: / });
  t.ok((deeper.error ?? '').length <= MAX_MESSAGE_CHARS, 'a bounded message');
  t.equal(reported(res.body, 'fine', 'TykOasApiDefinition').result, 'synced');
});
