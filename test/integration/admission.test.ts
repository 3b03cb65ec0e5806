/**
 * POST /admission through the fastify app, against the loopback fakes and a real Redis: the
 * engine's verdict on the object as it would be stored (denied: a listen path an older resource
 * serves, an invalid spec, a reference no grant permits, an OAS ConfigMap that does not parse;
 * admitted with a warning: a Secret or ConfigMap not created yet, a gateway that cannot be
 * read), nothing written anywhere (API server, gateway, store), deletions, our own writes and
 * kinds nothing is built from admitted without a look, bodies that are not reviews refused with
 * a reason, and ADMISSION_TOKEN; and, over the invalid and waiting inputs the tests use, the
 * review's verdict and the run's outcome agree (test/harness/verdicts.ts).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import t, { type Test } from 'tap';
import type { KubeObject } from '../../lib/kube/types.js';
import { admissionReview } from '../fixtures/admission.js';
import { apiDefinition, configMap, oasDocument, operatorContext, secret, securityPolicy, tykOasApi } from '../fixtures/builders.js';
import { PEM } from '../fixtures/pem.js';
import { sameVerdict } from '../harness/verdicts.js';
import { type Response, reported, type World, worldFor } from '../harness/world.js';

type Json = Record<string, unknown>;

interface AdmissionAnswer {
  apiVersion: string;
  kind: string;
  response: { uid: string; allowed: boolean; status?: { code: number; reason: string; message: string }; warnings?: string[] };
}

function review(w: World, body: Json, headers: Record<string, string> = {}): Promise<Response<AdmissionAnswer>> {
  return w.inject<AdmissionAnswer>('POST', '/admission', JSON.stringify(body), headers);
}

async function storeKeys(w: World): Promise<string[]> {
  const raw = new Redis(w.redis.url, { maxRetriesPerRequest: 1 });
  try {
    const keys: string[] = [];
    let cursor = '0';
    do {
      const [next, found] = await raw.scan(cursor, 'MATCH', `${w.storePrefix}*`, 'COUNT', 1000);
      // the store's index of record keys is its own cache, built on a first listing: not a record
      keys.push(...found.filter((k) => !k.includes(':lock:') && !k.includes('recs:')));
      cursor = next;
    } while (cursor !== '0');
    return keys.sort();
  } finally {
    raw.disconnect();
  }
}

/** Runs `fn` and asserts it wrote nothing: no API-server write, no gateway write, no store key. */
async function writesNothing<T>(t: Test, w: World, fn: () => Promise<T>): Promise<T> {
  const before = await storeKeys(w);
  w.resetCounts();
  const out = await fn();
  // asking the API server who we are (a SelfSubjectReview) is a POST that stores nothing
  const writes = w.kube.calls.filter((c) => c.method !== 'GET' && !c.path.includes('/selfsubjectreviews'));
  t.same(
    writes.map((c) => `${c.method} ${c.path}`),
    [],
    'nothing written to the API server',
  );
  t.equal(w.tyk.writes(), 0, 'nothing written to the gateway');
  t.same(await storeKeys(w), before, 'nothing written to the store');
  return out;
}

/** An ApiDefinition `older` serving `path`, synced: what a younger one naming that path clashes with. */
async function olderServing(w: World, path: string): Promise<void> {
  await w.create(
    apiDefinition('older')
      .patchSpec({ proxy: { target_url: 'http://a.example', listen_path: path, strip_listen_path: true } })
      .build(),
  );
  await w.tick();
}

/** An ApiDefinition `name` asking for `path`. */
const asking = (name: string, path: string) => apiDefinition(name).patchSpec({ proxy: { target_url: 'http://b.example', listen_path: path, strip_listen_path: true } });

t.test('a listen path an older resource serves: denied with ListenPathClash and the engine’s message; nothing written', async (t) => {
  const w = await worldFor(t);
  await olderServing(w, '/shared');
  const younger = asking('younger', '/shared').build();
  // the API server stamps the reviewed object when it would be stored: later than the older one, to the second
  const body = admissionReview('CREATE', { ...younger, metadata: { ...younger.metadata, creationTimestamp: new Date(Date.now() + 2_000).toISOString().replace(/\.\d+Z$/, 'Z') } }).build();
  const res = await writesNothing(t, w, () => review(w, body));
  t.equal(res.statusCode, 200);
  t.equal(res.body.apiVersion, 'admission.k8s.io/v1');
  t.equal(res.body.kind, 'AdmissionReview');
  t.equal(res.body.response.uid, (body.request as Json).uid, 'the request’s uid');
  t.equal(res.body.response.allowed, false);
  t.match(res.body.response.status, {
    code: 403,
    reason: 'ListenPathClash',
    message: /^ListenPathClash: spec\.proxy\.listen_path \/shared is already served on gateway default by ApiDefinition\/default\/older; choose another listen path or domain$/,
  });
  t.equal(await w.get('younger'), undefined, 'the review created nothing');
});

t.test('a valid new resource: admitted, no warning, nothing written; the same object applied syncs', async (t) => {
  const w = await worldFor(t);
  await w.create(apiDefinition('already').build());
  await w.tick();
  const res = await writesNothing(t, w, () => review(w, admissionReview('CREATE', apiDefinition('fresh').build()).build()));
  t.same(res.body.response, { uid: res.body.response.uid, allowed: true });
  t.same(
    w.tyk.calls.map((c) => `${c.method} ${c.path}`),
    ['GET /tyk/apis'],
    'one gateway read: the list the listen-path contest needs',
  );
  await w.create(apiDefinition('fresh').build());
  t.match(reported(await w.tick(), 'fresh'), { result: 'synced' });
});

t.test('a Secret not created yet: admitted with a warning naming it (it may come later)', async (t) => {
  const w = await worldFor(t);
  const waiting = apiDefinition('tls')
    .patchSpec({ certificate_secret_names: ['later'] })
    .build();
  const res = await writesNothing(t, w, () => review(w, admissionReview('CREATE', waiting).build()));
  t.equal(res.body.response.allowed, true);
  t.match(res.body.response.warnings, [/^Waiting: .*Secret default\/later does not exist/]);
});

t.test('an invalid spec: denied with Invalid and the engine’s message', async (t) => {
  const w = await worldFor(t);
  const res = await review(w, admissionReview('CREATE', apiDefinition('bad').unsupported().build()).build());
  t.equal(res.body.response.allowed, false);
  t.match(res.body.response.status, { code: 422, reason: 'Invalid', message: /^Invalid: unsupported: graphql\.graph_ref/ });
});

t.test('a reference into another namespace without a grant: denied with RefNotPermitted', async (t) => {
  const w = await worldFor(t);
  await w.create(operatorContext('ctx').inNamespace('team-b').ce('http://gw2.example:8080', 'key').build());
  const res = await review(w, admissionReview('CREATE', apiDefinition('far').inContext('ctx', 'team-b').build()).build());
  t.equal(res.body.response.allowed, false);
  t.match(res.body.response.status, { code: 403, reason: 'RefNotPermitted', message: /contextRef/ });
});

t.test('an OAS ConfigMap that does not parse: denied, naming the API it would leave invalid; a good edit and a new document admitted', async (t) => {
  const w = await worldFor(t);
  await w.create(configMap('petstore').withOas(oasDocument('petstore')).build());
  await w.create(tykOasApi('petstore').build());
  t.match(reported(await w.tick(), 'petstore', 'TykOasApiDefinition'), { result: 'synced' });
  const broken = configMap('petstore').withText('oas.json', '{ not json').build();
  const res = await writesNothing(t, w, () => review(w, admissionReview('UPDATE', broken).build()));
  t.equal(res.body.response.allowed, false);
  t.match(res.body.response.status, { code: 422, reason: 'Invalid', message: /^TykOasApiDefinition default\/petstore would be Invalid: .*not valid JSON/ });
  const fine = configMap('petstore')
    .withOas(oasDocument('petstore', { listenPath: '/pets/' }))
    .build();
  t.equal((await review(w, admissionReview('UPDATE', fine).build())).body.response.allowed, true);
  const unused = configMap('unrelated').withText('anything', '{ not json').build();
  t.same((await review(w, admissionReview('CREATE', unused).build())).body.response.allowed, true, 'a ConfigMap no resource uses is no business of ours');
});

t.test('a TykOasApiDefinition whose ConfigMap is not created yet: admitted with a warning', async (t) => {
  const w = await worldFor(t);
  const res = await review(w, admissionReview('CREATE', tykOasApi('early').build()).build());
  t.equal(res.body.response.allowed, true);
  t.match(res.body.response.warnings, [/^Waiting: ConfigMap default\/early does not exist/]);
});

t.test('deletions, objects being deleted, our own writes and other kinds: admitted without a look', async (t) => {
  const w = await worldFor(t);
  await olderServing(w, '/shared');
  await sleep(1_100);
  const clash = asking('younger', '/shared');
  w.resetCounts();
  const own = await w.svc.ownUsername();
  t.ok(own, 'the service knows its user');
  for (const [what, body] of [
    ['a deletion', admissionReview('DELETE', clash.build()).build()],
    ['an object being deleted', admissionReview('UPDATE', clash.withFinalizer().deleting().build()).build()],
    [
      'our own write',
      admissionReview('UPDATE', clash.build())
        .by(own ?? '')
        .build(),
    ],
    ['a Secret no resource uses', admissionReview('CREATE', secret('x').build()).build()],
  ] as const) {
    t.same((await review(w, body)).body.response.allowed, true, what);
  }
  t.equal(w.tyk.count('GET'), 0, 'no gateway read for any of them');
});

t.test('a gateway that cannot be read: admitted with a warning that it was not checked', async (t) => {
  const w = await worldFor(t);
  w.tyk.inject({ method: 'GET', path: /^\/tyk\/apis/, status: 500, times: Infinity });
  const res = await review(w, admissionReview('CREATE', apiDefinition('unsure').build()).build());
  t.equal(res.body.response.allowed, true, 'our trouble never blocks an apply');
  t.match(res.body.response.warnings, [/^not checked: /]);
});

t.test('a body that is not an AdmissionReview: 400 with the reason', async (t) => {
  const w = await worldFor(t);
  for (const [body, reason] of [
    ['not json', /body is not JSON/],
    [JSON.stringify({ kind: 'AdmissionReview' }), /expected an AdmissionReview with a request/],
    [JSON.stringify({ apiVersion: 'admission.k8s.io/v1beta1', kind: 'AdmissionReview', request: {} }), /admission\.k8s\.io\/v1 only/],
    [JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: { operation: 'CREATE' } }), /request\.uid is required/],
    [JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: { uid: 'u', operation: 'PATCH' } }), /request\.operation must be/],
  ] as const) {
    const res = await w.inject<{ error: string }>('POST', '/admission', body);
    t.equal(res.statusCode, 400, String(body).slice(0, 40));
    t.match(res.body.error, reason);
  }
});

t.test('ADMISSION_TOKEN: without it the review is refused (401) before its body is read; with it, answered', async (t) => {
  const w = await worldFor(t, { env: { ADMISSION_TOKEN: 'admission-token-0123456789' } });
  const body = admissionReview('CREATE', apiDefinition('a').build()).build();
  t.equal((await review(w, body)).statusCode, 401);
  t.equal((await review(w, body, { authorization: 'Bearer admission-token-0123456789' })).body.response.allowed, true);
});

/** Invalid and waiting inputs the tests use, each with what the cluster holds first: the review and the run must agree on each. */
const FIXTURES: { name: string; kind: string; outcome: string; setup?: (w: World) => Promise<void>; object: KubeObject }[] = [
  { name: 'valid', outcome: 'synced', kind: 'ApiDefinition', object: apiDefinition('valid').build() },
  { name: 'unsupported graph reference', outcome: 'invalid', kind: 'ApiDefinition', object: apiDefinition('graph').unsupported().build() },
  {
    name: 'listen path served by an older resource',
    outcome: 'failed LISTEN_PATH_CLASH',
    kind: 'ApiDefinition',
    setup: async (w) => {
      await w.create(
        apiDefinition('first')
          .patchSpec({ proxy: { target_url: 'http://a', listen_path: '/same' } })
          .build(),
      );
      await w.tick();
      // creation times have second precision: the second resource is created a second later, so it is the younger
      await sleep(1_100);
    },
    object: apiDefinition('second')
      .patchSpec({ proxy: { target_url: 'http://b', listen_path: '/same' } })
      .build(),
  },
  {
    name: 'an id another resource owns',
    outcome: 'failed ID_CLAIMED',
    kind: 'ApiDefinition',
    setup: async (w) => {
      await w.create(apiDefinition('owner').withApiId('pinned-id').build());
      await w.tick();
    },
    object: apiDefinition('claimer').withApiId('pinned-id').build(),
  },
  {
    name: 'a context in another namespace, no grant',
    outcome: 'failed REF_NOT_PERMITTED',
    kind: 'ApiDefinition',
    setup: async (w) => void (await w.create(operatorContext('ctx').inNamespace('team-b').ce('http://gw2.example:8080', 'key').build())),
    object: apiDefinition('far').inContext('ctx', 'team-b').build(),
  },
  {
    name: 'a context whose URL carries credentials',
    outcome: 'failed URL_NOT_PERMITTED',
    kind: 'ApiDefinition',
    setup: async (w) => void (await w.create(operatorContext('local').ce('http://user:password@gw.example:8080', 'key').build())),
    object: apiDefinition('loop').inContext('local').build(),
  },
  {
    name: 'a Secret not created yet',
    outcome: 'waiting',
    kind: 'ApiDefinition',
    object: apiDefinition('later')
      .patchSpec({ certificate_secret_names: ['not-yet'] })
      .build(),
  },
  {
    name: 'a server certificate Secret without its key',
    outcome: 'invalid',
    kind: 'ApiDefinition',
    setup: async (w) => void (await w.kube.put(secret('keyless').tls(PEM.client).build())),
    object: apiDefinition('keyless')
      .patchSpec({ certificate_secret_names: ['keyless'] })
      .build(),
  },
  { name: 'a Tyk OAS API whose ConfigMap is not created yet', outcome: 'waiting', kind: 'TykOasApiDefinition', object: tykOasApi('early').build() },
  {
    name: 'a Tyk OAS document that does not parse',
    outcome: 'invalid',
    kind: 'TykOasApiDefinition',
    setup: async (w) => void (await w.kube.put(configMap('garbled').withText('oas.json', '{ nope').build())),
    object: tykOasApi('garbled').build(),
  },
  { name: 'a policy naming an API that does not exist', outcome: 'waiting', kind: 'SecurityPolicy', object: securityPolicy('lonely').granting('missing').build() },
];

for (const f of FIXTURES) {
  t.test(`the review and the run agree: ${f.name}`, async (t) => {
    const w = await worldFor(t);
    await f.setup?.(w);
    await w.create(f.object);
    const report = await w.tick();
    const o = report.objects.find((x) => x.kind === f.kind && x.name === f.object.metadata.name);
    t.ok(o, 'reported');
    t.equal(`${o?.result}${o?.code ? ` ${o.code}` : ''}`, f.outcome, `the run: ${f.outcome}`);
    if (o) await sameVerdict(t, w, f.name, f.object, o);
  });
}
