/**
 * ReferenceGrant matching (lib/kube/reference-grants.ts): exactly Gateway API's (from: group,
 * kind and namespace; to: group and kind, a name when given), Secrets and ConfigMaps only by
 * name; a grant elsewhere than the target's namespace permits nothing. The per-run reader: a
 * reference within a namespace, or with CROSS_NAMESPACE_REFS=allow, reads nothing; a namespace's
 * grants are listed once per run; v1beta1, then v1; no CRD is no grants, logged once; another
 * failure is an error, not a refusal.
 */
import t from 'tap';
import { grantPermits, refusalMessage } from '../../lib/kube/grant-rules.js';
import { REFERENCE_GRANT_V1, REFERENCE_GRANT_V1BETA1, ReferenceGrants } from '../../lib/kube/reference-grants.js';
import type { KubeApi, KubeObject, ResourceKind } from '../../lib/kube/types.js';
import { KubeApiError } from '../../lib/platform/errors.js';
import { capturingLogger } from '../harness/log.js';

function grant(namespace: string, from: object[], to: object[]): KubeObject {
  return { apiVersion: 'gateway.networking.k8s.io/v1beta1', kind: 'ReferenceGrant', metadata: { name: 'g', namespace }, spec: { from, to } };
}

const POLICY_OF_A = { group: 'tyk.tyk.io', kind: 'SecurityPolicy', namespace: 'team-a' };
const API_OF_B = { group: 'tyk.tyk.io', kind: 'ApiDefinition', namespace: 'team-b', name: 'payments' };

t.test('grantPermits: every field of from and to must match; a name narrows; Secrets and ConfigMaps need one', async (t) => {
  const exact = grant('team-b', [POLICY_OF_A], [{ group: 'tyk.tyk.io', kind: 'ApiDefinition' }]);
  t.ok(grantPermits([exact], POLICY_OF_A, API_OF_B));
  t.notOk(grantPermits([exact], { ...POLICY_OF_A, namespace: 'team-c' }, API_OF_B), 'another namespace');
  t.notOk(grantPermits([exact], { ...POLICY_OF_A, kind: 'ApiDefinition' }, API_OF_B), 'another kind');
  t.notOk(grantPermits([exact], { ...POLICY_OF_A, group: 'other.io' }, API_OF_B), 'another group');
  t.notOk(grantPermits([exact], POLICY_OF_A, { ...API_OF_B, kind: 'TykOasApiDefinition' }), 'another target kind');
  t.notOk(grantPermits([exact], POLICY_OF_A, { ...API_OF_B, group: '' }), 'another target group');
  t.notOk(grantPermits([{ ...exact, metadata: { name: 'g', namespace: 'team-c' } }], POLICY_OF_A, API_OF_B), 'a grant in another namespace');
  const named = grant('team-b', [POLICY_OF_A], [{ group: 'tyk.tyk.io', kind: 'ApiDefinition', name: 'payments' }]);
  t.ok(grantPermits([named], POLICY_OF_A, API_OF_B));
  t.notOk(grantPermits([named], POLICY_OF_A, { ...API_OF_B, name: 'ledger' }), 'another name');
  const ctx = { group: 'tyk.tyk.io', kind: 'OperatorContext', namespace: 'team-a' };
  const secret = { group: '', kind: 'Secret', namespace: 'team-b', name: 'conn' };
  t.notOk(grantPermits([grant('team-b', [ctx], [{ group: '', kind: 'Secret' }])], ctx, secret), 'a Secret is not granted by kind alone');
  t.ok(grantPermits([grant('team-b', [ctx], [{ group: '', kind: 'Secret', name: 'conn' }])], ctx, secret));
  const oas = { group: 'tyk.tyk.io', kind: 'TykOasApiDefinition', namespace: 'team-a' };
  t.notOk(grantPermits([grant('team-b', [oas], [{ group: '', kind: 'ConfigMap' }])], oas, { group: '', kind: 'ConfigMap', namespace: 'team-b', name: 'doc' }), 'nor a ConfigMap');
  t.notOk(grantPermits([{ ...exact, spec: undefined } as KubeObject, grant('team-b', 'x' as unknown as object[], [])], POLICY_OF_A, API_OF_B), 'malformed grants permit nothing');
  t.ok(
    grantPermits(
      [
        grant(
          'team-b',
          [{ group: 'x', kind: 'Y', namespace: 'z' }, POLICY_OF_A],
          [
            { group: 'a', kind: 'B' },
            { group: 'tyk.tyk.io', kind: 'ApiDefinition' },
          ],
        ),
      ],
      POLICY_OF_A,
      API_OF_B,
    ),
    'entries are ORed',
  );
});

t.test('refusalMessage names the field and the target, and says the same whether or not it exists', async (t) => {
  t.equal(
    refusalMessage('spec.access_rights_array', POLICY_OF_A, API_OF_B),
    'spec.access_rights_array: ApiDefinition team-b/payments is in another namespace, and no ReferenceGrant in team-b lets SecurityPolicy objects of team-a use it',
  );
  t.match(
    refusalMessage('spec.secretRef', { group: 'tyk.tyk.io', kind: 'OperatorContext', namespace: 'a' }, { group: '', kind: 'Secret', namespace: 'b', name: 's' }),
    /no ReferenceGrant in b naming it lets/,
  );
});

/** A KubeApi that only lists, from a table by version and namespace, counting the calls. */
function listing(answer: (kind: ResourceKind, namespace: string | undefined) => KubeObject[] | Error): KubeApi & { calls: string[] } {
  const calls: string[] = [];
  const api = {
    calls,
    async list(kind: ResourceKind, namespace?: string) {
      calls.push(`${kind.version}/${namespace}`);
      const a = answer(kind, namespace);
      if (a instanceof Error) throw a;
      return a;
    },
  };
  return api as unknown as KubeApi & { calls: string[] };
}

t.test('RunGrants: reads only for a reference across namespaces, once per namespace and run; allow reads nothing', async (t) => {
  const kube = listing((kind, ns) => (kind === REFERENCE_GRANT_V1BETA1 && ns === 'team-b' ? [grant('team-b', [POLICY_OF_A], [{ group: 'tyk.tyk.io', kind: 'ApiDefinition' }])] : []));
  const grants = new ReferenceGrants(kube, 'grant', capturingLogger());
  const run = grants.forRun();
  t.same(await run.check('f', { ...POLICY_OF_A, namespace: 'team-b' }, API_OF_B), { ok: true }, 'same namespace');
  t.same(kube.calls, [], 'nothing read for it');
  t.same(await run.check('f', POLICY_OF_A, API_OF_B), { ok: true });
  t.same(await run.check('f', POLICY_OF_A, { ...API_OF_B, name: 'other' }), { ok: true });
  t.match(await run.check('f', { ...POLICY_OF_A, namespace: 'team-c' }, API_OF_B), { ok: false, refused: /team-b\/payments is in another namespace/ });
  t.same(kube.calls, ['v1beta1/team-b'], 'one list for the namespace in this run');
  await grants.forRun().check('f', POLICY_OF_A, API_OF_B);
  t.same(kube.calls, ['v1beta1/team-b', 'v1beta1/team-b'], 'a new run lists again (a removed grant is noticed)');

  const open = listing(() => new Error('not called'));
  t.same(await new ReferenceGrants(open, 'allow', capturingLogger()).forRun().check('f', POLICY_OF_A, API_OF_B), { ok: true });
  t.same(open.calls, [], 'allow reads nothing');
});

t.test('v1 where v1beta1 is not served; no CRD: no grants, logged once per process; another failure is an error', async (t) => {
  const notFound = () => new KubeApiError(404, 'the server could not find the requested resource');
  const v1only = listing((kind) => (kind === REFERENCE_GRANT_V1 ? [grant('team-b', [POLICY_OF_A], [{ group: 'tyk.tyk.io', kind: 'ApiDefinition' }])] : notFound()));
  t.same(await new ReferenceGrants(v1only, 'grant', capturingLogger()).forRun().check('f', POLICY_OF_A, API_OF_B), { ok: true });
  t.same(v1only.calls, ['v1beta1/team-b', 'v1/team-b']);

  const log = capturingLogger();
  const none = new ReferenceGrants(
    listing(() => notFound()),
    'grant',
    log,
  );
  t.match(await none.forRun().check('f', POLICY_OF_A, API_OF_B), { ok: false, refused: String });
  t.match(await none.forRun().check('f', POLICY_OF_A, { ...API_OF_B, namespace: 'team-c' }), { ok: false, refused: String });
  t.equal(log.entries.filter((e) => /not served/.test(String(e.msg))).length, 1, 'said once');

  const broken = new ReferenceGrants(
    listing(() => new KubeApiError(500, 'etcd is sad')),
    'grant',
    capturingLogger(),
  );
  t.match(await broken.forRun().check('spec.contextRef', POLICY_OF_A, API_OF_B), { ok: false, error: /spec\.contextRef: the ReferenceGrants of team-b could not be read: etcd is sad/ });
});
