/**
 * Hostile input costs its author only, through HTTP, on both tiers (the fakes, and a real
 * kube-apiserver): a ConfigMap or Secret above its size limit makes its resource Invalid, naming
 * the limit, and nothing else; /healthz and the event loop stay responsive while tls.crt values
 * of repeated BEGIN lines are processed; a Tyk OAS document nested too deep, held as text in a
 * ConfigMap, makes its resource Invalid. (What needs an API-server answer no real server gives,
 * a spec nested past what it stores, is hostile-input.test.ts.)
 */
import t from 'tap';
import { MAX_CERTIFICATE_BYTES, MAX_DOCUMENT_BYTES, MAX_MESSAGE_CHARS, MAX_SPEC_DEPTH } from '../../lib/engine/input-limits.js';
import { apiDefinition, configMap, oasDocument, secret, tykOasApi } from '../fixtures/builders.js';
import { reported, worldFor } from '../harness/world.js';

const PLACEHOLDER = '"__deep__"';

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
