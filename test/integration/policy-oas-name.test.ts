/**
 * A policy's api_name for a Tyk OAS API it grants is the API's document name
 * (`x-tyk-api-gateway.info.name`) whether or not its run looked at the API
 * (lib/kinds/shared/api-resolver.ts): in the run that first syncs both, in the full run after,
 * and in a run for the policy alone; so the policy is written once, not again when the API's
 * status.name appears.
 */
import t from 'tap';
import { configMap, defaultIdOf, oasDocument, securityPolicy, tykOasApi } from '../fixtures/builders.js';
import { reported, worldFor } from '../harness/world.js';

t.test('a policy granting a Tyk OAS API names it by its document, from the first run on, and is written once', async (t) => {
  const w = await worldFor(t);
  await w.create(
    configMap('pets')
      .withOas(oasDocument('Pretty Pets', { listenPath: '/pets/' }))
      .build(),
  );
  await w.create(tykOasApi('pets').build());
  await w.create(
    securityPolicy('p')
      .patchSpec({ access_rights_array: [{ name: 'pets', namespace: 'default', kind: 'TykOasApiDefinition', versions: ['Default'] }] })
      .build(),
  );
  const first = await w.tick();
  t.match(reported(first, 'p', 'SecurityPolicy'), { action: 'CREATE', result: 'synced' });
  const granted = () => w.tyk.loaded('policy').get(defaultIdOf('p'))?.access_rights as Record<string, { api_name?: string }> | undefined;
  t.equal(granted()?.[defaultIdOf('pets')]?.api_name, 'Pretty Pets', 'the document name, in the run that synced the API');

  w.resetCounts();
  const second = await w.tick();
  t.match(reported(second, 'p', 'SecurityPolicy'), { action: 'NOOP', reason: 'unchanged' }, 'the full run after: unchanged');
  t.equal(w.tyk.writes(), 0, 'no gateway write');

  const alone = await w.resync({ kind: 'SecurityPolicy', namespace: 'default', name: 'p' });
  t.match(reported(alone.body, 'p', 'SecurityPolicy'), { action: 'NOOP', reason: 'unchanged' }, 'a run for the policy alone (status.name): unchanged');
  t.notOk(
    alone.body.objects.some((o) => o.kind === 'TykOasApiDefinition'),
    'the API was not in that run',
  );
  t.equal(w.tyk.writes(), 0, 'no gateway write');
});
