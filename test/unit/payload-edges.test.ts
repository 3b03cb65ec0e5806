/**
 * What we send for each kind, at the edges of its rules (test/unit/payload-compare-status.test.ts
 * and policy-core.test.ts state them): org, versions, jwt default policies, operator-only fields,
 * and how a policy's access rights are built.
 */
import t from 'tap';
import { apiDefinitionPayload } from '../../lib/kinds/api-definition/payload.js';
import { type ApiResolution, securityPolicyPayload } from '../../lib/kinds/security-policy/payload.js';
import type { KubeObject } from '../../lib/kube/types.js';
import { apiDefinition } from '../fixtures/builders.js';

const body = (obj: KubeObject, orgId?: string, policyIdOf?: (ns: string, name: string) => string) => {
  const r = apiDefinitionPayload(obj, 'ID1', orgId, policyIdOf);
  if (!r.ok) throw new Error(`not ok: ${r.reason}`);
  return r.body;
};

t.test('api payload: TYK_ORG wins over the spec; an empty one does not count', async (t) => {
  t.equal(body(apiDefinition('x').patchSpec({ org_id: 'mine' }).build(), 'org1').org_id, 'org1');
  t.equal(body(apiDefinition('x').patchSpec({ org_id: 'mine' }).build(), '').org_id, 'mine');
  t.notOk('org_id' in body(apiDefinition('x').build(), ''));
  t.equal(body(apiDefinition('x').patchSpec({ api_id: 'spec-id' }).build()).api_id, 'ID1', 'the id decided, not the spec’s');
});

t.test('api payload: version data', async (t) => {
  t.same(body(apiDefinition('x').patchSpec({ version_data: 'junk' }).build()).version_data, { not_versioned: true, default_version: 'Default', versions: { Default: { name: 'Default' } } });
  t.same(
    body(
      apiDefinition('x')
        .patchSpec({ version_data: ['v1'] })
        .build(),
    ).version_data,
    { not_versioned: true, default_version: 'Default', versions: { Default: { name: 'Default' } } },
  );
  t.same(
    body(
      apiDefinition('x')
        .patchSpec({ version_data: { not_versioned: false, versions: {} } })
        .build(),
    ).version_data,
    {
      not_versioned: false,
      default_version: 'Default',
      versions: { Default: { name: 'Default' } },
    },
  );
  t.same(
    body(
      apiDefinition('x')
        .patchSpec({ version_data: { default_version: '', versions: [] } })
        .build(),
    ).version_data,
    {
      not_versioned: true,
      default_version: 'Default',
      versions: { Default: { name: 'Default' } },
    },
  );
  t.same(
    body(
      apiDefinition('x')
        .patchSpec({ version_data: { default_version: 7 } })
        .build(),
    ).version_data,
    { not_versioned: true, default_version: 'Default', versions: { Default: { name: 'Default' } } },
  );
  t.same(
    body(
      apiDefinition('x')
        .patchSpec({ version_data: { default_version: 'v1', versions: ['v1'] } })
        .build(),
    ).version_data,
    {
      not_versioned: true,
      default_version: 'v1',
      versions: { v1: { name: 'v1' } },
    },
    'versions that are not a map are replaced',
  );
  const given = { default_version: 'v1', versions: { v1: { name: 'v1' } } };
  t.same(body(apiDefinition('x').patchSpec({ version_data: given }).build()).version_data, given, 'given versions are sent as they are');
});

t.test('api payload: jwt default policies naming SecurityPolicies become their gateway ids', async (t) => {
  const idOf = (ns: string, name: string) => `POL(${ns}|${name})`;
  const spec = { jwt_default_policies: ['default/jwt-policy', 'team-1/p.v2', 'plainid', 'Default/x', 'a/b/c', '/x', 'ns/', 7] };
  t.same(body(apiDefinition('x').patchSpec(spec).build(), undefined, idOf).jwt_default_policies, ['POL(default|jwt-policy)', 'POL(team-1|p.v2)', 'plainid', 'Default/x', 'a/b/c', '/x', 'ns/', 7]);
  t.same(body(apiDefinition('x').patchSpec(spec).build()).jwt_default_policies, spec.jwt_default_policies, 'without a resolver: as given');
  t.equal(body(apiDefinition('x').patchSpec({ jwt_default_policies: 'default/p' }).build(), undefined, idOf).jwt_default_policies, 'default/p', 'not a list: as given');
  t.notOk('jwt_default_policies' in body(apiDefinition('x').build(), undefined, idOf));
  t.same(
    body(
      apiDefinition('x')
        .patchSpec({ jwt_default_policies: ['x-default/p'] })
        .build(),
      undefined,
      idOf,
    ).jwt_default_policies,
    ['POL(x-default|p)'],
  );
});

t.test('api payload: a federated graph without its resolved fields is unsupported, with them it is sent without graph_ref; the Secret references are replaced by the resolved fields', async (t) => {
  const federated = apiDefinition('x')
    .patchSpec({ certificate_secret_names: ['tls'], graphql: { enabled: true, execution_mode: 'supergraph', graph_ref: 'sg', supergraph: { disable_query_batching: true } } })
    .build();
  const r = apiDefinitionPayload(federated, 'I', undefined);
  t.same(r, { ok: false, reason: 'unsupported: graphql.graph_ref: its SubGraph or SuperGraph was not resolved (execution_mode subgraph or supergraph)' });
  const sent = apiDefinitionPayload(federated, 'I', undefined, undefined, {}, { schema: 'S', supergraph: { merged_sdl: 'M', subgraphs: [] } });
  t.same(
    sent.ok ? sent.body.graphql : undefined,
    { enabled: true, execution_mode: 'supergraph', schema: 'S', supergraph: { disable_query_batching: true, merged_sdl: 'M', subgraphs: [] } },
    'the resolved fields over the spec’s (nested ones merged), graph_ref not sent',
  );
  const refs = { certificate_secret_names: ['tls'], client_certificate_refs: ['c'], upstream_certificate_refs: { '*': 'u' }, pinned_public_keys_refs: { '*': 'p' } };
  const resolvedResult = apiDefinitionPayload(apiDefinition('x').patchSpec(refs).build(), 'I', undefined, undefined, { certificates: ['C1'], upstream_certificates: { '*': 'U1' } });
  const resolved = resolvedResult.ok ? resolvedResult.body : {};
  t.same(resolved.certificates, ['C1'], 'the resolved fields are sent');
  t.same(resolved.upstream_certificates, { '*': 'U1' });
  for (const field of Object.keys(refs)) t.notOk(field in resolved, `${field} is not sent`);
  const graph = body(
    apiDefinition('x')
      .patchSpec({ graphql: { enabled: true, graph_ref: '' } })
      .build(),
  );
  t.same(graph.graphql, { enabled: true, graph_ref: '' }, 'a graph without a federation reference is sent');
  t.ok(apiDefinitionPayload(apiDefinition('x').patchSpec({ graphql: 'x', pinned_public_keys_refs: null }).build(), 'I', undefined).ok);
  t.same(apiDefinitionPayload({ ...apiDefinition('x').build(), spec: ['x'] as unknown as Record<string, unknown> }, 'I', undefined), { ok: false, reason: 'spec is missing' });
  t.same(apiDefinitionPayload({ ...apiDefinition('x').build(), spec: null as unknown as Record<string, unknown> }, 'I', undefined), { ok: false, reason: 'spec is missing' });
});

const resolve = (r: { namespace: string; name: string }): ApiResolution => (r.name === 'a' ? { ok: true, id: `ID-${r.namespace}`, name: 'API a' } : { ok: false, why: 'does not exist' });
const policy = (spec: Record<string, unknown>, namespace = 'team'): KubeObject => ({ apiVersion: 'tyk.tyk.io/v1alpha1', kind: 'SecurityPolicy', metadata: { name: 'p', namespace }, spec });

t.test('policy payload: given access rights are kept, entries keyed by gateway id win', async (t) => {
  const r = securityPolicyPayload(
    policy({ access_rights: { other: { api_id: 'other' }, 'ID-team': { stale: true } }, access_rights_array: [{ name: 'a', kind: 'ApiDefinition', versions: [] }] }),
    'POL',
    '',
    resolve,
  );
  t.same(r, {
    ok: true,
    body: { id: 'POL', access_rights: { other: { api_id: 'other' }, 'ID-team': { api_id: 'ID-team', api_name: 'API a', versions: ['Default'] } } },
    links: [{ kind: 'ApiDefinition', namespace: 'team', name: 'a' }],
  });
});

t.test('policy payload: entries without a usable name are skipped; an explicit namespace is used', async (t) => {
  const r = securityPolicyPayload(
    policy({ access_rights_array: [null, 'a', { name: 5 }, { name: '' }, { name: 'a', namespace: 'other' }, { name: 'a', namespace: '' }], access_rights: 'junk' }),
    'POL',
    undefined,
    resolve,
  );
  t.same(r, {
    ok: true,
    body: {
      id: 'POL',
      access_rights: {
        'ID-other': { api_id: 'ID-other', api_name: 'API a', versions: ['Default'] },
        'ID-team': { api_id: 'ID-team', api_name: 'API a', versions: ['Default'] },
      },
    },
    links: [
      { kind: 'ApiDefinition', namespace: 'other', name: 'a' },
      { kind: 'ApiDefinition', namespace: 'team', name: 'a' },
    ],
  });
  const bare = { ...policy({ access_rights_array: [{ name: 'a' }] }), metadata: { name: 'p' } };
  t.match(securityPolicyPayload(bare, 'POL', undefined, resolve), { ok: true, body: { access_rights: { 'ID-': { api_id: 'ID-' } } } });
  t.same(securityPolicyPayload(policy({ access_rights_array: 'junk', name: 'n' }), 'POL', undefined, resolve), { ok: true, body: { name: 'n', id: 'POL', access_rights: {} }, links: [] });
});

t.test('policy payload: TYK_ORG wins over the spec; without one the spec’s org is kept', async (t) => {
  const spec = { org_id: 'mine', access_rights_array: [] };
  t.match(securityPolicyPayload(policy(spec), 'POL', 'org1', resolve), { ok: true, body: { org_id: 'org1' } });
  t.match(securityPolicyPayload(policy(spec), 'POL', undefined, resolve), { ok: true, body: { org_id: 'mine' } });
  t.match(securityPolicyPayload(policy(spec), 'POL', '', resolve), { ok: true, body: { org_id: 'mine' } });
});

t.test('policy payload: a kind that is not an API is refused by name', async (t) => {
  t.same(securityPolicyPayload(policy({ access_rights_array: [{ name: 'g', kind: 'SuperGraph' }] }), 'POL', undefined, resolve), {
    ok: false,
    reason: 'access_rights_array entry g is a SuperGraph; a policy grants ApiDefinitions and TykOasApiDefinitions',
  });
  t.match(securityPolicyPayload(policy({ access_rights_array: [{ name: 'a', kind: 'TykOasApiDefinition' }] }), 'POL', undefined, resolve), {
    ok: true,
    body: { access_rights: { 'ID-team': { api_id: 'ID-team' } } },
    links: [{ kind: 'TykOasApiDefinition', namespace: 'team', name: 'a' }],
  });
  t.same(securityPolicyPayload({ ...policy({}), spec: ['x'] as unknown as Record<string, unknown> }, 'POL', undefined, resolve), { ok: false, reason: 'spec is missing' });
});
