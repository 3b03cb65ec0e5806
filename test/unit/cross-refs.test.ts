/**
 * The references each kind makes through the cluster (lib/engine/cross-refs.ts), as the load
 * stage checks them against ReferenceGrants: field, target group, kind, namespace (defaulting to
 * the resource's) and name, in the resource's order; nothing for what names nothing.
 */
import t from 'tap';
import { referencesOf } from '../../lib/engine/cross-refs.js';
import { API_DEFINITION } from '../../lib/kinds/api-definition/kind.js';
import { API_DESCRIPTION, PORTAL_API_CATALOGUE, PORTAL_CONFIG } from '../../lib/kinds/portal/kinds.js';
import { SECURITY_POLICY } from '../../lib/kinds/security-policy/kind.js';
import { TYK_OAS_API_DEFINITION } from '../../lib/kinds/tyk-oas-api-definition/kind.js';
import { apiDefinition, apiDescription, portalCatalogue, portalConfig, securityPolicy, tykOasApi } from '../fixtures/builders.js';

const tyk = (kind: string, namespace: string, name: string) => ({ group: 'tyk.tyk.io', kind, namespace, name });

t.test('a Tyk OAS API: its ConfigMap (core group), then its versions of either kind', async (t) => {
  const api = tykOasApi('orders').inNamespace('team-a').fromConfigMap('orders-doc', 'oas.json', 'docs').versioned('orders', ['orders-v2']).build();
  (api.spec as { versioning: { versions: unknown[] } }).versioning.versions.push({ name: 'legacy', tykOasApiDefinitionRef: { name: 'orders-classic', namespace: 'old', kind: 'ApiDefinition' } });
  t.same(referencesOf(TYK_OAS_API_DEFINITION, api), [
    { field: 'spec.tykOAS.configmapRef', to: { group: '', kind: 'ConfigMap', namespace: 'docs', name: 'orders-doc' } },
    { field: 'spec.versioning.versions[].tykOasApiDefinitionRef', to: tyk('TykOasApiDefinition', 'team-a', 'orders-v2') },
    { field: 'spec.versioning.versions[].tykOasApiDefinitionRef', to: tyk('ApiDefinition', 'old', 'orders-classic') },
  ]);
  const noDoc = tykOasApi('bare').build();
  noDoc.spec = {};
  t.same(referencesOf(TYK_OAS_API_DEFINITION, noDoc), [], 'a configmapRef that names nothing is no reference (the spec is refused elsewhere)');
});

t.test("a policy: its APIs; the portal: a description's policy, a catalogue's descriptions and policies", async (t) => {
  t.same(referencesOf(SECURITY_POLICY, securityPolicy('p').inNamespace('team-a').granting('mine', 'team-b/theirs').build()), [
    { field: 'spec.access_rights_array', to: tyk('ApiDefinition', 'team-a', 'mine') },
    { field: 'spec.access_rights_array', to: tyk('ApiDefinition', 'team-b', 'theirs') },
  ]);
  t.same(referencesOf(API_DESCRIPTION, apiDescription('d').withPolicy('pol', 'team-c').build()), [{ field: 'spec.policyRef', to: tyk('SecurityPolicy', 'team-c', 'pol') }]);
  t.same(referencesOf(API_DESCRIPTION, apiDescription('d').build()), [], 'no policyRef');
  const cat = portalCatalogue('c').withDescriptions('local', 'team-b/other').build();
  (cat.spec as { apis: Record<string, unknown>[] }).apis.push({ policyRef: { name: 'inline-pol', namespace: 'team-d' } }, 'not an object' as unknown as Record<string, unknown>);
  t.same(referencesOf(PORTAL_API_CATALOGUE, cat), [
    { field: 'spec.apis[].apiDescriptionRef', to: tyk('APIDescription', 'default', 'local') },
    { field: 'spec.apis[].apiDescriptionRef', to: tyk('APIDescription', 'team-b', 'other') },
    { field: 'spec.apis[].policyRef', to: tyk('SecurityPolicy', 'team-d', 'inline-pol') },
  ]);
  t.same(referencesOf(PORTAL_API_CATALOGUE, { ...cat, spec: {} }), [], 'no apis');
  t.same(referencesOf(PORTAL_CONFIG, portalConfig('cfg').build()), [], 'a PortalConfig names nothing but its context (checked where contexts are resolved)');
  t.same(referencesOf(API_DEFINITION, apiDefinition('a').inContext('ctx', 'elsewhere').build()), [], "an ApiDefinition's contextRef is checked with its context too");
});
