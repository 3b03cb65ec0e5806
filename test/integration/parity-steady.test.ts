/**
 * Every kind Tyk Operator declares, together, on one Tyk Dashboard, through HTTP with real Redis: an Ingress
 * of our class with its template (two generated ApiDefinitions), a SuperGraph over two SubGraphs
 * with their three APIs, and the developer portal (an APIDescription of a policy, a catalogue
 * listing it, the portal configuration). Once synced, a steady state writes nothing anywhere ten
 * ticks in a row: no Dashboard write (APIs, policies, portal), no API-server write of any kind
 * (no status patch, no finalizer, no generated ApiDefinition, no Event), and every object reports
 * unchanged; the phases do not disturb one another.
 */
import t from 'tap';
import { apiDefinition, apiDescription, httpbinSpec, POSTS_SDL, portalCatalogue, portalConfig, securityPolicy, subGraph, superGraph } from '../fixtures/builders.js';
import { nameOf, template, web } from '../fixtures/ingress-world.js';
import { reported, startWorld } from '../harness/world.js';

t.test('Ingress, federation and the portal together: synced, then ten ticks without a single write', async (t) => {
  const w = await startWorld({ mode: 'pro' });
  t.teardown(() => w.close());
  const dash = w.dashboard;
  if (!dash) throw new Error('a pro world has a Dashboard');

  await w.create(template());
  await w.create(web().build());
  await w.create(subGraph('users').build());
  await w.create(subGraph('posts').withSdl(POSTS_SDL).build());
  await w.create(apiDefinition('users-api').servingSubGraph('users').build());
  await w.create(apiDefinition('posts-api').servingSubGraph('posts').build());
  await w.create(superGraph('social').withSubgraphs('users', 'posts').build());
  await w.create(apiDefinition('social').ofSuperGraph('social').build());
  await w.create(apiDefinition('httpbin').withSpec(httpbinSpec()).build());
  await w.create(securityPolicy('protect-api').granting('httpbin').build());
  await w.create(apiDescription('httpbin-doc').withPolicy('protect-api').build());
  await w.create(portalCatalogue('catalogue').withDescriptions('httpbin-doc').build());
  await w.create(portalConfig('portal').build());

  const first = await w.tick();
  t.same(first.errors, [], 'no run-level error');
  await w.tick(); // what waited on an object synced later in the first run settles now
  const settled = await w.tick();
  const generated = [nameOf('web', 'shop.example', '/orders'), nameOf('web', '', '/pathonly')];
  const expected: [string, string][] = [
    ...generated.map((n): [string, string] => ['ApiDefinition', n]),
    ['Ingress', 'web'],
    ['SubGraph', 'users'],
    ['SubGraph', 'posts'],
    ['SuperGraph', 'social'],
    ['ApiDefinition', 'users-api'],
    ['ApiDefinition', 'posts-api'],
    ['ApiDefinition', 'social'],
    ['ApiDefinition', 'httpbin'],
    ['SecurityPolicy', 'protect-api'],
    ['APIDescription', 'httpbin-doc'],
    ['PortalAPICatalogue', 'catalogue'],
    ['PortalConfig', 'portal'],
  ];
  for (const [kind, name] of expected) t.match(reported(settled, name, kind), { result: 'unchanged' }, `${kind}/${name} is synced and unchanged`);
  t.equal(dash.apis().size, 6, 'six APIs on the Dashboard: two generated, three of the graph, httpbin');
  t.equal(((dash.catalogue()?.apis ?? []) as unknown[]).length, 1, 'one catalogue entry');
  t.ok(dash.configuration(), 'the portal configured');

  dash.resetCalls();
  w.resetCounts();
  for (let i = 0; i < 10; i++) {
    const report = await w.tick();
    t.same(report.errors, [], `tick ${i + 1}: no run-level error`);
    const moved = report.objects.filter((o) => o.result !== 'unchanged' && o.result !== 'skipped');
    t.same(
      moved.map((o) => `${o.kind}/${o.name}:${o.action}:${o.result}`),
      [],
      `tick ${i + 1}: every object unchanged (the template skipped)`,
    );
  }
  t.equal(dash.writes(), 0, 'no API or policy write on the Dashboard');
  t.equal(dash.portalWrites(), 0, 'no portal write on the Dashboard');
  const clusterWrites = ['POST', 'PUT', 'PATCH', 'DELETE'].reduce((n, m) => n + w.kube.count(m, /^\/apis?\//), 0);
  t.equal(clusterWrites, 0, 'no API-server write: no status patch, no finalizer, no generated ApiDefinition, no Event');
});
