/**
 * The pure Ingress core (lib/kinds/ingress/apis.ts, decide.ts): class, Tyk Operator's
 * names and hashes, the wildcard host, TLS and ACME paths, the template or the keyless default,
 * refusals (named ports, non-service backends, duplicates, names too long), the diff against
 * what the cluster has (create, one update, delete only what it owns, names taken, terminating,
 * what the record remembers), and the per-Ingress decision.
 */
import t from 'tap';
import { hashOf } from '../../lib/engine/hash.js';
import {
  DEFAULT_INGRESS_SETTINGS,
  desiredApis,
  diffApis,
  generatedName,
  isAcmeChallenge,
  isOurClass,
  keylessTemplate,
  managedView,
  shortHash,
  templateSpec,
  translateHost,
} from '../../lib/kinds/ingress/apis.js';
import { decideIngress, type IngressDecision, type IngressState } from '../../lib/kinds/ingress/decide.js';
import type { KubeObject } from '../../lib/kube/types.js';
import { apiDefinition, INGRESS_FINALIZER, ingress } from '../fixtures/builders.js';

const S = DEFAULT_INGRESS_SETTINGS;
const TEMPLATE = { name: 'tpl', protocol: 'http', use_keyless: true, active: true, api_id: 'pinned', proxy: { target_url: 'http://example.com', strip_listen_path: true } };
const base = () => ingress('web').withUid('uid-web').withClass('tyk').withTemplate('tpl');

t.test("names and hashes are Tyk Operator's", async (t) => {
  t.equal(shortHash('foo.com/httpbin22222'), 'c09b5928e', "Tyk Operator's own test vector");
  t.equal(shortHash('/httpbin'), '78acd160d', 'its documented example (no host)');
  t.equal(generatedName('default', 'httpbin-ingress', '78acd160d'), 'default-httpbin-ingress-78acd160d');
  t.equal(translateHost('*.foo.com'), '{?:[^.]+}.foo.com');
  t.equal(translateHost('foo.com'), 'foo.com');
  t.equal(translateHost('*.*.foo.com'), '{?:[^.]+}.*.foo.com', 'only the first *, as Tyk Operator');
  t.ok(isAcmeChallenge('/.well-known/acme-challenge/token', 'web'));
  t.ok(isAcmeChallenge('/x', 'cm-acme-http-solver-abcde'));
  t.notOk(isAcmeChallenge('/x', 'web'));
});

t.test('class: the annotation decides when present, else spec.ingressClassName', async (t) => {
  t.ok(isOurClass(ingress('a').withClass('tyk').build(), 'tyk'));
  t.ok(isOurClass(ingress('a').withClassName('tyk').build(), 'tyk'));
  t.notOk(isOurClass(ingress('a').withClass('nginx').build(), 'tyk'));
  t.notOk(isOurClass(ingress('a').withClass('nginx').withClassName('tyk').build(), 'tyk'), 'the annotation wins over the field');
  t.notOk(isOurClass(ingress('a').build(), 'tyk'), 'no class: not ours');
  t.ok(isOurClass(ingress('a').withClass('internal').build(), 'internal'), 'INGRESS_CLASS');
});

t.test('the template: named and labelled, missing, not a template, or the keyless default', async (t) => {
  const ing = base().build();
  t.match(templateSpec(ing, apiDefinition('tpl').template().withSpec(TEMPLATE).build()), { ok: true, spec: TEMPLATE });
  t.same(templateSpec(ing, null), { ok: false, waiting: 'template ApiDefinition default/tpl does not exist' });
  t.same(templateSpec(ing, apiDefinition('tpl').build()), { ok: false, waiting: 'ApiDefinition default/tpl is not labelled template: "true"' });
  const keyless = templateSpec(ingress('web').withClass('tyk').build(), undefined);
  t.same(keyless, { ok: true, spec: keylessTemplate() });
  t.match(keylessTemplate(), { name: 'default-keyless', protocol: 'http', use_keyless: true, active: true, version_data: { not_versioned: true } });
});

t.test('one ApiDefinition per path: named, labelled, owned, spec from the template', async (t) => {
  const ing = base().withRule('shop.example', '/orders', 'orders', 8080).withRule('', '/pathonly', 'web', 80).build();
  const plan = desiredApis(ing, TEMPLATE, S);
  t.same(plan.problems, []);
  t.equal(plan.complete, true);
  t.same(
    plan.apis.map((a) => a.name),
    [`default-web-${shortHash('shop.example/orders')}`, `default-web-${shortHash('/pathonly')}`],
  );
  const [orders, pathonly] = plan.apis;
  t.same(orders?.object.metadata, {
    name: orders?.name,
    namespace: 'default',
    labels: { 'tyk.io/ingress': 'web', 'tyk.io/apidefinition': shortHash('shop.example/orders') },
    ownerReferences: [{ apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', name: 'web', uid: 'uid-web', controller: true, blockOwnerDeletion: true }],
  });
  t.same(orders?.object.spec, {
    name: orders?.name,
    protocol: 'http',
    use_keyless: true,
    active: true,
    proxy: { target_url: 'http://orders.default.svc:8080', strip_listen_path: true, listen_path: '/orders' },
    domain: 'shop.example',
  });
  t.notOk('api_id' in (orders?.object.spec ?? {}), "the template's api_id is not copied: each API has its own id");
  t.notOk('domain' in (pathonly?.object.spec ?? {}), 'no host: no domain');
  t.equal(TEMPLATE.api_id, 'pinned', 'the template itself is not changed');
});

t.test('hosts: a wildcard as Tyk’s pattern; TLS hosts over https with their Secret; ACME paths left plain', async (t) => {
  const ing = base()
    .withRule('*.shop.example', '/', 'web', 80)
    .withRule('secure.example', '/', 'web', 80)
    .withRule('secure.example', '/.well-known/acme-challenge/x', 'cm-acme-http-solver-xyz', 8089)
    .withTls(['secure.example'], 'old-tls')
    .withTls(['secure.example', 'other.example'], 'secure-tls')
    .build();
  const [wild, secure, acme] = desiredApis(ing, TEMPLATE, S).apis;
  t.match(wild?.object.spec, { domain: '{?:[^.]+}.shop.example', protocol: 'http' });
  t.notOk('listen_port' in (wild?.object.spec ?? {}));
  t.match(secure?.object.spec, { protocol: 'https', certificate_secret_names: ['secure-tls'], listen_port: 8443 }, 'the last TLS entry naming the host wins');
  t.match(acme?.object.spec, { protocol: 'http', proxy: { strip_listen_path: false, preserve_host_header: true } });
  t.notOk('certificate_secret_names' in (acme?.object.spec ?? {}), 'the ACME solver is never behind the TLS it obtains');
  const ports = desiredApis(ing, TEMPLATE, { ...S, httpPort: 8081, httpsPort: 9443 }).apis;
  t.same(
    ports.map((a) => a.object.spec?.listen_port),
    [8081, 9443, 8081],
    'TYK_HTTP_INGRESS_PORT and TYK_HTTPS_INGRESS_PORT',
  );
  const noSecret = desiredApis(base().withRule('a.example', '/', 'web', 80).withTls(['a.example'], '').build(), TEMPLATE, S).apis[0];
  t.match(noSecret?.object.spec, { protocol: 'https' });
  t.notOk('certificate_secret_names' in (noSecret?.object.spec ?? {}), 'a TLS entry without a Secret names none');
});

t.test('refusals are named and deterministic', async (t) => {
  const ing = base().withRule('', '/a', 'web', 80).withRule('', '/a', 'other', 81).withRule('', '/named', 'web', 'http').build();
  const rules = (ing.spec?.rules ?? []) as { http: { paths: unknown[] } }[];
  rules[0]?.http.paths.push({ path: '/res', pathType: 'Prefix', backend: { resource: { kind: 'Bucket', name: 'b' } } });
  const plan = desiredApis(ing, TEMPLATE, S);
  t.same(
    plan.apis.map((a) => a.object.spec?.proxy),
    [{ target_url: 'http://web.default.svc:80', strip_listen_path: true, listen_path: '/a' }],
    'the first of two paths mapping to one name is kept',
  );
  t.equal(plan.problems.length, 3);
  t.match(plan.problems[0], /rules\[0\]\.http\.paths\[1\] \(\*\/a\): maps to ApiDefinition default-web-[0-9a-f]{9}, as rules\[0\]\.http\.paths\[0\] \(\*\/a\) does; the first is kept/);
  t.match(plan.problems[1], /paths\[2\] \(\*\/named\): service web names its port \(http\); give port.number instead/);
  t.match(plan.problems[2], /paths\[3\] \(\*\/res\): has no service backend/);
  t.same(plan.held, [generatedName('default', 'web', shortHash('/named')), generatedName('default', 'web', shortHash('/res'))], 'what a refused path had is kept as it is');
  t.equal(plan.complete, true);

  const long = desiredApis(ingress('x'.repeat(64)).withClass('tyk').withRule('', '/', 'web', 80).build(), TEMPLATE, S);
  t.same([long.apis.length, long.complete], [0, false]);
  t.match(long.problems[0], /longer than 63 characters, too long for the label tyk.io\/ingress/);
  const longNs = desiredApis(ingress('web').inNamespace('n'.repeat(63)).withClass('tyk').withRule('', '/', 'web', 80).build(), TEMPLATE, S);
  t.equal(longNs.complete, true, '63 + 1 + 3 + 1 + 9 characters fit');
  const tooLong = desiredApis({ ...ingress('w'.repeat(60)).withClass('tyk').withRule('', '/', 'web', 80).build(), metadata: { name: 'w'.repeat(60), namespace: 'n'.repeat(190) } }, TEMPLATE, S);
  t.same([tooLong.apis.length, tooLong.complete], [0, false]);
  t.match(tooLong.problems[0], /longer than 253 characters/);
  t.same(
    desiredApis(base().withRule('', '', 'web', 80, 'ImplementationSpecific').build(), TEMPLATE, S).apis[0]?.object.spec?.proxy,
    { target_url: 'http://web.default.svc:80', strip_listen_path: true, listen_path: '/' },
    'an empty path listens on the root',
  );
});

/** What the cluster holds: the desired object as the API server stored it. */
function stored(obj: KubeObject, uid: string, extra: Partial<KubeObject['metadata']> = {}): KubeObject {
  return { ...structuredClone(obj), metadata: { ...structuredClone(obj.metadata), uid, resourceVersion: '7', ...extra } };
}

t.test('diff: create what is missing, one update for what differs, delete only what it owns', async (t) => {
  const ing = base().withRule('', '/a', 'web', 80).withRule('', '/b', 'web', 80).build();
  const plan = desiredApis(ing, TEMPLATE, S);
  const [a, b] = plan.apis as [NonNullable<(typeof plan.apis)[0]>, NonNullable<(typeof plan.apis)[0]>];
  const oldPath = stored({ ...a.object, metadata: { ...a.object.metadata, name: 'default-web-000000000', labels: { 'tyk.io/ingress': 'web', 'tyk.io/apidefinition': '000000000' } } }, 'u-old');
  const handLabelled = stored({ ...a.object, metadata: { name: 'default-web-111111111', namespace: 'default', labels: { 'tyk.io/ingress': 'web' } } }, 'u-hand');
  const current = new Map<string, KubeObject | null>([
    [a.name, stored(a.object, 'u-a')],
    [b.name, null],
    [oldPath.metadata.name, oldPath],
    [handLabelled.metadata.name, handLabelled],
  ]);
  const d = diffApis(ing, plan, current, {});
  t.same(
    d.steps.map((s) => `${s.op} ${s.name}`),
    [`create ${b.name}`, `delete ${oldPath.metadata.name}`],
    'a is up to date, b is created, the removed path goes; an object without our ownerReference is not deleted',
  );
  t.same(d.steps[1], { op: 'delete', name: oldPath.metadata.name, uid: 'u-old' }, 'the delete carries the uid it was decided on');
  t.same([...d.unchanged.keys()], [a.name]);

  const edited = stored({ ...a.object, spec: { ...a.object.spec, active: false } }, 'u-a', {
    labels: { 'tyk.io/ingress': 'web', 'tyk.io/apidefinition': a.hash, keep: 'me' },
    finalizers: ['finalizers.tyk.io/apidefinition'],
  });
  const u = diffApis(ing, plan, new Map([[a.name, edited]]), {});
  const update = u.steps.find((s) => s.op === 'update');
  t.ok(update, 'a spec edited by hand is updated');
  t.same(update?.op === 'update' ? update.object.spec : undefined, a.object.spec, 'back to the desired spec');
  t.match(
    update?.op === 'update' ? update.object.metadata : undefined,
    { uid: 'u-a', resourceVersion: '7', labels: { keep: 'me', 'tyk.io/ingress': 'web' }, finalizers: ['finalizers.tyk.io/apidefinition'] },
    'one PUT under its resourceVersion, other labels and finalizers kept',
  );
  t.notOk(u.steps.some((s) => s.op === 'delete' && s.name === a.name));

  const incomplete = diffApis(ing, { ...plan, apis: [], complete: false }, current, {});
  t.same(
    incomplete.steps.filter((s) => s.op === 'delete'),
    [],
    'an incomplete plan deletes nothing',
  );
  const held = diffApis(ing, { ...plan, apis: [a], held: [b.name] }, new Map([[b.name, stored(b.object, 'u-b')]]), {});
  t.same(
    held.steps.map((s) => s.op),
    ['create'],
    'a held path’s ApiDefinition is not deleted',
  );
});

t.test('diff: a name held by something not ours is never written; one being deleted waits', async (t) => {
  const ing = base().withRule('', '/a', 'web', 80).build();
  const plan = desiredApis(ing, TEMPLATE, S);
  const a = plan.apis[0] as NonNullable<(typeof plan.apis)[0]>;
  const foreign = stored({ ...a.object, metadata: { name: a.name, namespace: 'default' } }, 'u-f');
  t.same(diffApis(ing, plan, new Map([[a.name, foreign]]), {}), { steps: [], taken: [a.name], terminating: [], unchanged: new Map() });
  const otherController = stored(a.object, 'u-c', {
    ownerReferences: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'x', uid: 'd', controller: true }],
    labels: { 'tyk.io/ingress': 'web' },
  });
  t.same(diffApis(ing, plan, new Map([[a.name, otherController]]), {}).taken, [a.name], 'another controller: not ours to take over');
  const going = stored(a.object, 'u-g', { deletionTimestamp: '2026-01-01T00:00:00Z' });
  const d = diffApis(ing, plan, new Map([[a.name, going]]), {});
  t.same([d.steps, d.terminating], [[], [a.name]]);
});

t.test('diff: what the API server normalised is not rewritten; a change after it is', async (t) => {
  const ing = base().withRule('', '/a', 'web', 80).build();
  const plan = desiredApis(ing, TEMPLATE, S);
  const a = plan.apis[0] as NonNullable<(typeof plan.apis)[0]>;
  const normalised = stored({ ...a.object, spec: { ...a.object.spec, defaulted: 'by the server' } }, 'u-a');
  const memory = { [a.name]: { sent: hashOf(managedView(a.object, 'web')), seen: hashOf(managedView(normalised, 'web')) } };
  t.same(diffApis(ing, plan, new Map([[a.name, normalised]]), memory).steps, [], 'as answered after our last write: nothing to do');
  t.equal(diffApis(ing, plan, new Map([[a.name, normalised]]), {}).steps.length, 1, 'without that memory, it differs');
  const edited = stored({ ...normalised, spec: { ...normalised.spec, active: false } }, 'u-a');
  t.equal(diffApis(ing, plan, new Map([[a.name, edited]]), memory).steps.length, 1, 'edited since: one update');
  const newTemplate = desiredApis(ing, { ...TEMPLATE, active: false }, S);
  t.equal(diffApis(ing, newTemplate, new Map([[a.name, normalised]]), memory).steps.length, 1, 'the template changed: one update');
});

function state(over: Partial<IngressState> & { ingress: KubeObject | null }): IngressState {
  return { namespace: 'default', name: 'web', template: undefined, current: new Map(), memory: {}, managed: false, ...over };
}

/** A decision that writes to the API server (and so runs under the Ingress's lock). */
function writes(d: IngressDecision): boolean {
  return d.what === 'upsert' || d.what === 'remove';
}

t.test('the decision per Ingress', async (t) => {
  const tpl = apiDefinition('tpl').template().withSpec(TEMPLATE).build();
  const rule = (b: ReturnType<typeof base>) => b.withRule('', '/a', 'web', 80);
  const mine = rule(base()).build();
  const plan = desiredApis(mine, TEMPLATE, S);
  const a = plan.apis[0] as NonNullable<(typeof plan.apis)[0]>;
  const owned = new Map<string, KubeObject | null>([[a.name, stored(a.object, 'u-a')]]);

  const other = rule(ingress('web').withClass('nginx').withTemplate('tpl')).build();
  t.same(decideIngress(state({ ingress: other, template: tpl }), S), { what: 'ignore' }, 'another class: ignored');
  t.same(decideIngress(state({ ingress: null }), S), { what: 'ignore' }, 'gone, never ours');

  const first = decideIngress(state({ ingress: mine, template: tpl }), S);
  t.match(
    first,
    { what: 'upsert', addFinalizer: true, steps: [{ op: 'create', name: a.name }], because: { reason: 'sync', diff: { steps: [{ op: 'create', name: a.name }] } } },
    'the finalizer goes on before the first create',
  );
  t.ok(writes(first));
  const steady = decideIngress(state({ ingress: rule(base().withFinalizer()).build(), template: tpl, current: owned, managed: true }), S);
  t.match(steady, { what: 'quiet', because: { reason: 'sync', diff: { steps: [] } } });
  t.notOk(writes(steady), 'steady state writes nothing');
  t.match(decideIngress(state({ ingress: mine, template: tpl, current: owned }), S), { what: 'upsert', addFinalizer: true, steps: [] }, 'adopted from Tyk Operator without our finalizer: it gets it');

  t.same(
    decideIngress(state({ ingress: mine, template: null, current: owned }), S),
    { what: 'quiet', because: { reason: 'wait', waiting: 'template ApiDefinition default/tpl does not exist' } },
    'a missing template deletes nothing',
  );
  t.same(decideIngress(state({ ingress: mine, template: apiDefinition('tpl').build(), current: owned }), S), {
    what: 'quiet',
    because: { reason: 'wait', waiting: 'ApiDefinition default/tpl is not labelled template: "true"' },
  });

  const deleting = rule(base().withFinalizer().deleting()).build();
  t.same(decideIngress(state({ ingress: deleting, current: owned, managed: true }), S), {
    what: 'remove',
    because: { reason: 'teardown', why: 'deleted' },
    steps: [{ op: 'delete', name: a.name, uid: 'u-a' }],
    removeFinalizer: true,
  });
  t.same(decideIngress(state({ ingress: rule(base().deleting()).build() }), S), { what: 'ignore' }, 'deleted before it was ever ours');
  const moved = rule(ingress('web').withUid('uid-web').withClass('nginx').withFinalizer()).build();
  t.same(
    decideIngress(state({ ingress: moved, current: owned, managed: true }), S),
    { what: 'remove', because: { reason: 'teardown', why: 'class changed' }, steps: [{ op: 'delete', name: a.name, uid: 'u-a' }], removeFinalizer: true },
    'another class now: let go',
  );
  t.same(
    decideIngress(state({ ingress: null, current: owned }), S),
    { what: 'remove', because: { reason: 'teardown', why: 'gone' }, steps: [{ op: 'delete', name: a.name, uid: 'u-a' }], removeFinalizer: false },
    'gone (404), its ApiDefinitions left: deleted',
  );
  const notOwned = new Map<string, KubeObject | null>([[a.name, stored({ ...a.object, metadata: { ...a.object.metadata, ownerReferences: [] } }, 'u-a')]]);
  t.same(
    decideIngress(state({ ingress: null, current: notOwned, managed: true }), S),
    { what: 'quiet', because: { reason: 'teardown', why: 'gone' } },
    'nothing it does not own is deleted: nothing to write, the record goes',
  );
});

t.test('the finalizer name is Tyk Operator’s', async (t) => {
  t.equal(INGRESS_FINALIZER, 'finalizers.tyk.io/ingress');
});
