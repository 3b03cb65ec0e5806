/**
 * GraphQL federation end to end through HTTP, with real Redis, our real clients and the loopback
 * fakes: SubGraphs and a SuperGraph composed into one supergraph API (its subgraphs, merged SDL
 * and schema on the gateway), next to the subgraph APIs serving them; a SubGraph's SDL edited
 * and announced by an audit event (one re-composition: one write of the supergraph API, and the
 * subgraph API's own); a conflicting SubGraph (the supergraph API Failed naming the conflict, the
 * last good API left on the gateway); a SubGraph's deletion held while it is used, then
 * released by the events that stop its uses; a SubGraph claimed by two APIs; what waits for a
 * graph; a steady state that writes nothing; the same on the Tyk Dashboard.
 */
import t from 'tap';
import type { RunReport } from '../../lib/engine/types.js';
import { auditEventList } from '../fixtures/audit.js';
import { apiDefinition, defaultIdOf, POSTS_SDL, SUBGRAPH_FINALIZER, SUPERGRAPH_FINALIZER, subGraph, superGraph, USERS_SDL } from '../fixtures/builders.js';
import { reported, startWorld, type World, worldFor } from '../harness/world.js';

const SUB = 'subgraphs';
const SUPER = 'supergraphs';

/** The users SubGraph with User.email added. */
const USERS_WITH_EMAIL = USERS_SDL.replace('username: String!', 'username: String!\n  email: String!');
/** A posts SubGraph that redefines User.name with another type than the users SubGraph: they cannot compose. */
const POSTS_CONFLICTING = POSTS_SDL.replace('id: ID! @external', 'id: ID! @external\n  name: Int!');

/** Two SubGraphs, each served by its subgraph API, composed by SuperGraph social, served by the API social. */
async function federate(w: World): Promise<void> {
  await w.create(subGraph('users').withSdl(USERS_SDL).build());
  await w.create(subGraph('posts').withSdl(POSTS_SDL).build());
  await w.create(apiDefinition('users-api').servingSubGraph('users').build());
  await w.create(apiDefinition('posts-api').servingSubGraph('posts').build());
  await w.create(superGraph('social').withSubgraphs('users', 'posts').build());
  await w.create(apiDefinition('social').ofSuperGraph('social').build());
}

/** Gateway writes (POST /tyk/apis, PUT, DELETE) of the API with this id since the last resetCounts. */
const writesOf = (w: World, id: string): number =>
  w.tyk.calls.filter((c) => c.method !== 'GET' && (c.path === `/tyk/apis/${id}` || (c.path === '/tyk/apis' && (c.body as { api_id?: unknown } | undefined)?.api_id === id))).length;

const outcomes = (report: RunReport | null | undefined): string[] => (report?.objects ?? []).map((o) => `${o.kind}/${o.name}:${o.action}:${o.result}`).sort();

type Graphql = { schema?: string; graph_ref?: unknown; subgraph?: { sdl?: string }; supergraph?: { merged_sdl?: string; subgraphs?: Record<string, unknown>[] } };
const graphqlOf = (api: Record<string, unknown> | undefined): Graphql => (api?.graphql ?? {}) as Graphql;

t.test('a SuperGraph over two SubGraphs: composed, re-composed once per SubGraph edit, the last good API kept through a conflict, silent in a steady state', async (t) => {
  const w = await worldFor(t);
  await federate(w);
  const first = await w.tick();
  for (const name of ['users-api', 'posts-api', 'social']) t.match(reported(first, name), { action: 'CREATE', result: 'synced' }, `${name} created`);
  t.equal(w.tyk.writes(), 3, 'three APIs, three writes');

  const socialId = defaultIdOf('social');
  const social = graphqlOf(w.gatewayApi(socialId));
  t.same(
    social.supergraph?.subgraphs?.map((s) => ({ api_id: s.api_id, name: s.name, url: s.url, sdl: s.sdl })),
    [
      { api_id: defaultIdOf('users-api'), name: 'users-api', url: 'tyk://users-api', sdl: USERS_SDL },
      { api_id: defaultIdOf('posts-api'), name: 'posts-api', url: 'tyk://posts-api', sdl: POSTS_SDL },
    ],
    'one subgraph per SubGraph, in the SuperGraph order, by the ApiDefinition serving it',
  );
  const merged = social.supergraph?.merged_sdl ?? '';
  t.match(merged, /type User \{[^}]*posts: \[Post!\]![^}]*\}/s, 'the merged SDL is the composition: User has the posts the posts SubGraph adds');
  t.match(merged, /type Query \{[^}]*users: \[User!\]![^}]*posts: \[Post!\]![^}]*\}|type Query \{[^}]*posts: \[Post!\]![^}]*users: \[User!\]![^}]*\}/s, 'and a Query with both');
  t.notMatch(merged, /@key|join__|extend type/, 'the public schema: no federation directives, nothing extended');
  t.equal(social.schema, merged, 'without a schema in the SuperGraph, the composed one is the API schema');
  t.equal(social.graph_ref, undefined, 'graph_ref (the operator’s) is not sent');
  const usersApi = graphqlOf(w.gatewayApi(defaultIdOf('users-api')));
  t.equal(usersApi.subgraph?.sdl, USERS_SDL, 'the subgraph API has its SubGraph’s SDL');
  t.equal(usersApi.schema, USERS_SDL, 'and its schema');

  const users = await w.get('users', 'default', SUB);
  t.equal(users?.status?.linked_by_api, defaultIdOf('users-api'), 'the SubGraph is linked by its API, as Tyk Operator kept it');
  t.ok(users?.metadata.finalizers?.includes(SUBGRAPH_FINALIZER), 'the SubGraph has its finalizer');
  t.ok((await w.get('social', 'default', SUPER))?.metadata.finalizers?.includes(SUPERGRAPH_FINALIZER), 'the SuperGraph has its finalizer');
  t.match((await w.get('users-api'))?.status, { linked_to_subgraph: 'users', latestTransaction: { status: 'Successful' } });

  await w.tick();
  w.resetCounts();
  for (let i = 0; i < 10; i++) await w.tick();
  t.equal(w.tyk.writes(), 0, 'ten ticks: no gateway write');
  t.equal(w.statusPatches(), 0, 'no status patch');
  t.equal(w.kube.count('PATCH'), 0, 'no API-server write at all (finalizers, statuses)');

  // the users SubGraph edited, announced by an audit event about it: its subgraph API and the
  // supergraph API run, nothing else; one write each
  await w.updateSpec('users', (s) => ({ ...s, sdl: USERS_WITH_EMAIL }), 'default', SUB);
  w.resetCounts();
  const edited = await w.audit(auditEventList({ resource: SUB, apiGroup: 'tyk.tyk.io', name: 'users' }));
  t.equal(edited.statusCode, 200);
  t.strictSame(
    outcomes(edited.body.report),
    ['ApiDefinition/social:UPDATE:synced', 'ApiDefinition/users-api:UPDATE:synced', 'SubGraph/users:NOOP:unchanged'],
    'the event reaches the APIs composed from the SubGraph, and the SubGraph itself',
  );
  t.equal(writesOf(w, socialId), 1, 'one write of the supergraph API');
  t.equal(writesOf(w, defaultIdOf('users-api')), 1, 'one of the subgraph API');
  t.equal(w.tyk.writes(), 2, 'nothing else');
  t.match(graphqlOf(w.gatewayApi(socialId)).supergraph?.merged_sdl, /email: String!/, 're-composed with the new field');

  // a conflicting SubGraph: the supergraph API is Failed naming the conflict; what the gateway has stays
  const before = structuredClone(w.gatewayApi(socialId));
  await w.updateSpec('posts', (s) => ({ ...s, sdl: POSTS_CONFLICTING }), 'default', SUB);
  w.resetCounts();
  const conflict = await w.audit(auditEventList({ resource: SUB, apiGroup: 'tyk.tyk.io', name: 'posts' }));
  const conflictMessage =
    /SuperGraph default\/social does not compose: Type of field "User\.name" is incompatible across subgraphs: it has type "Int!" in subgraph "default\/posts" but type "String!" in subgraph "default\/users"/;
  t.match(reported(conflict.body.report!, 'social'), { action: 'NOOP', result: 'invalid', error: conflictMessage });
  t.match(reported(conflict.body.report!, 'posts-api'), { action: 'UPDATE', result: 'synced' }, 'the subgraph API takes its own SDL');
  t.equal(writesOf(w, socialId), 0, 'nothing sent for the supergraph API');
  t.same(w.gatewayApi(socialId), before, 'the last good supergraph API stays on the gateway, unchanged');
  t.match((await w.get('social'))?.status, { latestTransaction: { status: 'Failed', error: conflictMessage } });
  t.ok(
    (await w.events('social')).some((e) => e.type === 'Warning' && e.reason === 'Invalid' && conflictMessage.test(e.message)),
    'kubectl describe names the conflict',
  );
  w.resetCounts();
  await w.tick();
  t.equal(w.tyk.writes() + w.statusPatches(), 0, 'an unchanged conflict is not tried again');

  // fixed: one write, synced again
  await w.updateSpec('posts', (s) => ({ ...s, sdl: POSTS_SDL }), 'default', SUB);
  w.resetCounts();
  const fixed = await w.audit(auditEventList({ resource: SUB, apiGroup: 'tyk.tyk.io', name: 'posts' }));
  t.match(reported(fixed.body.report!, 'social'), { action: 'UPDATE', result: 'synced' });
  t.equal(writesOf(w, socialId), 1, 'one write');
  t.match((await w.get('social'))?.status, { latestTransaction: { status: 'Successful' } });
});

t.test('a SubGraph in use is not deleted: held while a SuperGraph or an ApiDefinition uses it, released by the events that end its uses', async (t) => {
  const w = await worldFor(t);
  await federate(w);
  await w.tick();
  const one = await w.resync({ kind: 'SubGraph', namespace: 'default', name: 'posts' });
  t.strictSame(outcomes(one.body), ['SubGraph/posts:NOOP:unchanged'], '/resync names a SubGraph: that one alone');

  await w.delete('posts', 'default', SUB);
  const held = await w.tick();
  t.match(reported(held, 'posts', 'SubGraph'), {
    action: 'WAIT',
    reason: 'in use',
    result: 'waiting',
    error: 'deletion held: still used by ApiDefinition default/posts-api, SuperGraph default/social',
  });
  const stillThere = await w.get('posts', 'default', SUB);
  t.ok(stillThere?.metadata.deletionTimestamp, 'being deleted');
  t.ok(stillThere?.metadata.finalizers?.includes(SUBGRAPH_FINALIZER), 'its finalizer kept');
  t.ok(
    (await w.events('posts', 'default', 'SubGraph')).some((e) => e.type === 'Warning' && e.reason === 'DeletionHeld' && /SuperGraph default\/social/.test(e.message)),
    'a Warning names what holds it',
  );
  t.match(reported(held, 'social'), { result: 'unchanged' }, 'the supergraph API composes it still');

  // the SuperGraph stops composing it (an audit event about the SuperGraph): still used by its API
  await w.updateSpec('social', (s) => ({ ...s, subgraph_refs: [{ name: 'users' }] }), 'default', SUPER);
  const dropped = await w.audit(auditEventList({ resource: SUPER, apiGroup: 'tyk.tyk.io', name: 'social' }));
  t.match(reported(dropped.body.report!, 'social'), { action: 'UPDATE', result: 'synced' }, 'the supergraph API re-composed without it');
  t.same(
    graphqlOf(w.gatewayApi(defaultIdOf('social'))).supergraph?.subgraphs?.map((s) => s.name),
    ['users-api'],
  );
  t.match(reported(dropped.body.report!, 'posts', 'SubGraph'), { result: 'waiting', error: 'deletion held: still used by ApiDefinition default/posts-api' }, 'looked at in the same run');

  // its API deleted (a watch event about it): released in the same run
  await w.delete('posts-api');
  const released = await w.announce('DELETED', 'posts-api');
  t.match(reported(released, 'posts-api'), { action: 'DELETE', result: 'deleted' });
  t.match(reported(released, 'posts', 'SubGraph'), { action: 'DELETE', result: 'deleted' }, 'the SubGraph released by the run that ended its last use');
  t.equal(await w.get('posts', 'default', SUB), undefined, 'gone from the cluster');

  // a SuperGraph in use is held the same way, by its API
  await w.delete('social', 'default', SUPER);
  t.match(reported(await w.tick(), 'social', 'SuperGraph'), { result: 'waiting', error: 'deletion held: still used by ApiDefinition default/social' });
  await w.delete('social');
  const last = await w.tick();
  t.match(reported(last, 'social'), { result: 'deleted' });
  t.match(reported(last, 'social', 'SuperGraph'), { result: 'deleted' });
  t.equal(await w.get('social', 'default', SUPER), undefined);
});

t.test('one SubGraph, two ApiDefinitions serving it: the second is invalid, as Tyk Operator refused; the link follows the first', async (t) => {
  const w = await worldFor(t);
  await w.create(subGraph('users').build());
  await w.create(apiDefinition('users-api').servingSubGraph('users').build());
  await w.tick();
  await w.create(apiDefinition('users-api-2').servingSubGraph('users').build());
  const report = await w.tick();
  t.match(reported(report, 'users-api-2'), {
    result: 'invalid',
    error: 'SubGraph default/users is already linked by ApiDefinition default/users-api: linking one SubGraph to multiple ApiDefinitions is forbidden',
  });
  t.equal(w.gatewayApi(defaultIdOf('users-api-2')), undefined, 'nothing sent for it');
  t.equal((await w.get('users', 'default', SUB))?.status?.linked_by_api, defaultIdOf('users-api'), 'the SubGraph stays linked by the first');

  // the first one goes: the second takes the SubGraph over at the next full run
  await w.delete('users-api');
  await w.tick();
  const over = await w.tick();
  t.match(reported(over, 'users-api-2'), { result: /^(synced|unchanged)$/ });
  t.ok(w.gatewayApi(defaultIdOf('users-api-2')), 'on the gateway');
  t.equal((await w.get('users', 'default', SUB))?.status?.linked_by_api, defaultIdOf('users-api-2'), 'linked by it now');
});

t.test('what a supergraph API waits for is named, and each event that provides it runs the API again', async (t) => {
  const w = await worldFor(t);
  await w.create(apiDefinition('social').ofSuperGraph('social').build());
  t.match(reported(await w.tick(), 'social'), { action: 'WAIT', result: 'waiting', error: 'waiting for SuperGraph default/social does not exist' });

  await w.create(superGraph('social').withSubgraphs('users').build());
  const sup = await w.audit(auditEventList({ resource: SUPER, apiGroup: 'tyk.tyk.io', name: 'social', verb: 'create' }));
  t.match(reported(sup.body.report!, 'social'), { result: 'waiting', error: 'waiting for SubGraph default/users does not exist' }, 'the SuperGraph’s event ran it');
  t.match(reported(sup.body.report!, 'social', 'SuperGraph'), { action: 'UPDATE', reason: 'finalizer missing', result: 'synced' }, 'and gave the SuperGraph its finalizer');

  await w.create(subGraph('users').build());
  const sub = await w.audit(auditEventList({ resource: SUB, apiGroup: 'tyk.tyk.io', name: 'users', verb: 'create' }));
  t.match(reported(sub.body.report!, 'social'), {
    result: 'waiting',
    error: 'waiting for SubGraph default/users has no ApiDefinition (graph_ref users, execution_mode subgraph, in default)',
  });
  t.equal(w.tyk.writes(), 0, 'nothing sent while it waits');

  await w.create(apiDefinition('users-api').servingSubGraph('users').build());
  const done = await w.tick();
  t.match(reported(done, 'social'), { action: 'CREATE', result: 'synced' });
  t.match(reported(done, 'users-api'), { action: 'CREATE', result: 'synced' });
  t.equal((await w.get('users', 'default', SUB))?.status?.linked_by_api, defaultIdOf('users-api'));
});

t.test('pro mode: the supergraph and subgraph APIs are created on the Tyk Dashboard', async (t) => {
  const w = await startWorld({ mode: 'pro' });
  t.teardown(() => w.close());
  const dash = w.dashboard!;
  await federate(w);
  const report = await w.tick();
  for (const name of ['users-api', 'posts-api', 'social']) t.match(reported(report, name), { action: 'CREATE', result: 'synced' });
  const social = dash.apis().get(defaultIdOf('social'));
  t.same(
    graphqlOf(social).supergraph?.subgraphs?.map((s) => s.api_id),
    [defaultIdOf('users-api'), defaultIdOf('posts-api')],
  );
  t.match(graphqlOf(social).supergraph?.merged_sdl, /posts: \[Post!\]!/);
  dash.resetCalls();
  await w.tick();
  t.equal(dash.writes(), 0, 'then silent');
});
