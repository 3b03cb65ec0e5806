/**
 * The pure federation core: what an ApiDefinition's graph_ref makes of it (federation.ts, with
 * the real composer of compose.ts), who serves and who uses a SubGraph or SuperGraph, and the
 * held-finalizer decision (held-finalizers.ts). No network, no clock.
 */
import t from 'tap';
import { decideHeld } from '../../lib/engine/held-finalizers.js';
import { MAX_DOCUMENT_BYTES } from '../../lib/engine/input-limits.js';
import { COMPOSITIONS_KEPT, type Compose, composeSubgraphs, memoised } from '../../lib/kinds/graphs/compose.js';
import {
  type GraphRef,
  type GraphsRead,
  graphqlWith,
  graphRefOf,
  linkedByApi,
  parseGraphUse,
  resolveGraphql,
  subGraphUsers,
  subgraphOwner,
  subgraphRefsOf,
  superGraphUsers,
} from '../../lib/kinds/graphs/federation.js';
import { SUBGRAPH, SUPERGRAPH } from '../../lib/kinds/graphs/kinds.js';
import type { KubeObject } from '../../lib/kube/types.js';
import { apiDefinition, defaultIdOf, POSTS_SDL, SUBGRAPH_FINALIZER, subGraph, superGraph, USERS_SDL } from '../fixtures/builders.js';

const at =
  (iso: string) =>
  (o: KubeObject): KubeObject => ({ ...o, metadata: { ...o.metadata, creationTimestamp: iso } });
const usersApi = at('2026-01-01T00:00:00Z')(apiDefinition('users-api').servingSubGraph('users').build());
const postsApi = at('2026-01-01T00:00:00Z')(apiDefinition('posts-api').servingSubGraph('posts').build());
const social = apiDefinition('social').ofSuperGraph('social').build();
const SOCIAL: GraphRef = { kind: 'SuperGraph', namespace: 'default', name: 'social' };
const USERS: GraphRef = { kind: 'SubGraph', namespace: 'default', name: 'users' };

function graphs(objects: { subs?: KubeObject[]; supers?: KubeObject[]; apis?: KubeObject[] }): GraphsRead {
  const byKey = (list: KubeObject[] = []) => new Map(list.map((o) => [`${o.metadata.namespace}/${o.metadata.name}`, o]));
  const apis = new Map<string, KubeObject[]>();
  for (const a of objects.apis ?? []) apis.set(a.metadata.namespace ?? '', [...(apis.get(a.metadata.namespace ?? '') ?? []), a]);
  return { subGraphs: byKey(objects.subs), superGraphs: byKey(objects.supers), apis };
}

const full = graphs({
  subs: [subGraph('users').withSdl(USERS_SDL).build(), subGraph('posts').withSdl(POSTS_SDL).build()],
  supers: [superGraph('social').withSubgraphs('users', 'posts').build()],
  apis: [usersApi, postsApi, social],
});

t.test('graphRefOf: the graph an ApiDefinition names, by its execution_mode; another mode is refused, named', async (t) => {
  t.equal(graphRefOf(apiDefinition('plain').build()), undefined, 'no graphql: none');
  t.equal(
    graphRefOf(
      apiDefinition('x')
        .patchSpec({ graphql: { enabled: true, graph_ref: '' } })
        .build(),
    ),
    undefined,
    'an empty graph_ref: none',
  );
  t.same(graphRefOf(usersApi), USERS);
  t.same(graphRefOf(apiDefinition('s').inNamespace('team').ofSuperGraph('g').build()), { kind: 'SuperGraph', namespace: 'team', name: 'g' }, 'in the API’s own namespace');
  t.same(graphRefOf(apiDefinition('x').unsupported().build()), {
    invalid: 'unsupported: graphql.graph_ref with execution_mode "executionEngine": a graph reference needs execution_mode subgraph or supergraph',
  });
  t.same(parseGraphUse('SubGraph/users-ns/users'), { kind: 'SubGraph', namespace: 'users-ns', name: 'users' });
  t.equal(parseGraphUse('Secret/default/tls'), undefined, 'other uses are not graphs');
  t.equal(parseGraphUse('SubGraph/a/b/c'), undefined);
});

t.test('subgraphRefsOf: in order, each once, the namespace defaulting to the SuperGraph’s, nameless entries skipped', async (t) => {
  const sup = superGraph('g').inNamespace('team').build();
  sup.spec = { subgraph_refs: [{ name: 'users', namespace: 'users-ns' }, { name: 'posts' }, { namespace: 'x' }, { name: 'posts', namespace: '' }, 'junk'] };
  t.same(
    subgraphRefsOf(sup).map((r) => `${r.namespace}/${r.name}`),
    ['users-ns/users', 'team/posts'],
  );
  t.same(subgraphRefsOf(superGraph('none').build()), []);
});

t.test('subgraphOwner: the linked one while it claims the SubGraph, else the oldest live claimant of its namespace', async (t) => {
  const sub = subGraph('users').build();
  const older = at('2025-01-01T00:00:00Z')(apiDefinition('b-api').servingSubGraph('users').build());
  const newer = at('2026-06-01T00:00:00Z')(apiDefinition('a-api').servingSubGraph('users').build());
  t.equal(subgraphOwner(sub, [newer, older])?.metadata.name, 'b-api', 'the oldest');
  const linked = subGraph('users')
    .withStatus({ linked_by_api: defaultIdOf('a-api') })
    .build();
  t.equal(subgraphOwner(linked, [newer, older])?.metadata.name, 'a-api', 'the one linked, as Tyk Operator kept it');
  t.equal(linkedByApi(linked, [newer, older]), defaultIdOf('a-api'));
  const gone = { ...newer, metadata: { ...newer.metadata, deletionTimestamp: '2026-07-01T00:00:00Z' } };
  t.equal(subgraphOwner(linked, [gone, older])?.metadata.name, 'b-api', 'one being deleted claims nothing');
  const elsewhere = apiDefinition('c-api').inNamespace('other').servingSubGraph('users').build();
  const superApi = apiDefinition('d-api').ofSuperGraph('users').build();
  t.equal(subgraphOwner(sub, [elsewhere, superApi]), undefined, 'another namespace, or a supergraph of that name, is no claimant');
  t.equal(linkedByApi(sub, []), null);
  const pinned = apiDefinition('e-api').servingSubGraph('users').withApiId('pinned-id').build();
  t.equal(linkedByApi(sub, [pinned]), 'pinned-id', 'linked by the API’s gateway id');
});

t.test('who uses a SubGraph or a SuperGraph (what holds its deletion)', async (t) => {
  const sub = subGraph('users').build();
  const supers = [
    superGraph('social').withSubgraphs('users').build(),
    superGraph('other').inNamespace('team').withSubgraphs('default/users').build(),
    superGraph('unrelated').withSubgraphs('posts').build(),
  ];
  t.same(subGraphUsers(sub, supers, [usersApi, postsApi, social]), ['ApiDefinition default/users-api', 'SuperGraph default/social', 'SuperGraph team/other']);
  t.same(subGraphUsers(sub, [], []), []);
  t.same(
    superGraphUsers(superGraph('social').build(), [usersApi, social, apiDefinition('social').inNamespace('team').ofSuperGraph('social').build()]),
    ['ApiDefinition default/social'],
    'in its namespace only',
  );
});

t.test('a subgraph API: the SubGraph’s schema and SDL; waits for a missing SubGraph; refused as a second claimant or without SDL', async (t) => {
  const ok = resolveGraphql(usersApi, USERS, graphs({ subs: [subGraph('users').withSdl(USERS_SDL, null).build()], apis: [usersApi] }));
  t.same(ok, { ok: true, fields: { schema: USERS_SDL, subgraph: { sdl: USERS_SDL } }, uses: ['SubGraph/default/users'], linkedTo: 'users' }, 'the SDL stands in for a missing schema');
  const withSchema = graphs({ subs: [subGraph('users').withSdl(USERS_SDL, 'type Query { me: ID }').build()], apis: [usersApi] });
  t.match(resolveGraphql(usersApi, USERS, withSchema), { ok: true, fields: { schema: 'type Query { me: ID }' } });
  t.same(resolveGraphql(usersApi, USERS, graphs({})), { ok: false, waiting: 'waiting for SubGraph default/users does not exist', uses: ['SubGraph/default/users'] });
  const second = at('2026-02-01T00:00:00Z')(apiDefinition('users-api-2').servingSubGraph('users').build());
  const both = graphs({ subs: [subGraph('users').build()], apis: [usersApi, second] });
  t.match(resolveGraphql(second, USERS, both), {
    ok: false,
    invalid: 'SubGraph default/users is already linked by ApiDefinition default/users-api: linking one SubGraph to multiple ApiDefinitions is forbidden',
    uses: ['SubGraph/default/users'],
  });
  t.match(resolveGraphql(usersApi, USERS, both), { ok: true }, 'the first one serves it');
  const empty = subGraph('users').build();
  empty.spec = { schema: 'x' };
  t.match(resolveGraphql(usersApi, USERS, graphs({ subs: [empty], apis: [usersApi] })), { ok: false, invalid: 'SubGraph default/users has no sdl' });
});

t.test('a supergraph API: composed subgraphs, merged SDL and schema', async (t) => {
  const r = resolveGraphql(social, SOCIAL, full, composeSubgraphs);
  if (!r.ok) throw new Error(`not composed: ${JSON.stringify(r)}`);
  t.same(r.uses, ['SuperGraph/default/social', 'SubGraph/default/users', 'SubGraph/default/posts']);
  const supergraph = r.fields.supergraph as { subgraphs: unknown[]; merged_sdl: string };
  t.same(supergraph.subgraphs, [
    { api_id: defaultIdOf('users-api'), name: 'users-api', url: 'tyk://users-api', sdl: USERS_SDL, headers: {} },
    { api_id: defaultIdOf('posts-api'), name: 'posts-api', url: 'tyk://posts-api', sdl: POSTS_SDL, headers: {} },
  ]);
  t.match(supergraph.merged_sdl, /type User \{[^}]*posts: \[Post!\]!/s, 'the posts SubGraph’s extension is composed in');
  t.notMatch(supergraph.merged_sdl, /@key|@external|join__/, 'the public schema');
  t.equal(r.fields.schema, supergraph.merged_sdl, 'without its own schema the SuperGraph’s API schema is the composed one');
  t.same(resolveGraphql(social, SOCIAL, full, composeSubgraphs), r, 'the same graphs compose the same (a steady state writes nothing)');
  const named = apiDefinition('named').patchSpec({ name: 'Users API' }).servingSubGraph('users').build();
  const withSchema = graphs({
    subs: [subGraph('users').build()],
    supers: [superGraph('social').withSubgraphs('users').withSchema('type Query { users: [User!]! }').build()],
    apis: [named],
  });
  const own = resolveGraphql(social, SOCIAL, withSchema, composeSubgraphs);
  t.match(
    own,
    { ok: true, fields: { schema: 'type Query { users: [User!]! }', supergraph: { subgraphs: [{ name: 'Users API', url: 'tyk://named' }] } } },
    "the SuperGraph's schema, and the API's spec.name",
  );
});

t.test('a supergraph API waits for what is missing, every missing thing named; its uses name every graph', async (t) => {
  t.same(resolveGraphql(social, SOCIAL, graphs({}), composeSubgraphs), { ok: false, waiting: 'waiting for SuperGraph default/social does not exist', uses: ['SuperGraph/default/social'] });
  const partial = graphs({ subs: [subGraph('posts').build()], supers: [superGraph('social').withSubgraphs('users', 'posts').build()] });
  t.same(resolveGraphql(social, SOCIAL, partial, composeSubgraphs), {
    ok: false,
    waiting: 'waiting for SubGraph default/users does not exist; SubGraph default/posts has no ApiDefinition (graph_ref posts, execution_mode subgraph, in default)',
    uses: ['SuperGraph/default/social', 'SubGraph/default/users', 'SubGraph/default/posts'],
  });
});

t.test('a supergraph API is refused, named: a conflict between subgraphs, an SDL that does not parse, no subgraphs, a subgraph on another gateway', async (t) => {
  const conflicting = POSTS_SDL.replace('id: ID! @external', 'id: ID! @external\n  name: Int!');
  const conflict = graphs({
    subs: [subGraph('users').build(), subGraph('posts').withSdl(conflicting).build()],
    supers: [superGraph('social').withSubgraphs('users', 'posts').build()],
    apis: [usersApi, postsApi],
  });
  const r = resolveGraphql(social, SOCIAL, conflict, composeSubgraphs);
  t.match(r, {
    ok: false,
    invalid:
      'SuperGraph default/social does not compose: Type of field "User.name" is incompatible across subgraphs: it has type "Int!" in subgraph "default/posts" but type "String!" in subgraph "default/users"',
  });
  const fixed = resolveGraphql(social, SOCIAL, full, composeSubgraphs);
  t.notSame('inputs' in r ? r.inputs : undefined, undefined, 'what the verdict depends on is given, so a changed SubGraph is judged again');

  const broken = graphs({ subs: [subGraph('users').withSdl('type {').build()], supers: [superGraph('social').withSubgraphs('users').build()], apis: [usersApi] });
  t.match(resolveGraphql(social, SOCIAL, broken, composeSubgraphs), {
    ok: false,
    invalid: /^SuperGraph default\/social does not compose: subgraph "default\/users": sdl is not valid GraphQL: Syntax Error/,
  });

  const none = graphs({ supers: [superGraph('social').build()] });
  t.match(resolveGraphql(social, SOCIAL, none, composeSubgraphs), { ok: false, invalid: 'SuperGraph default/social has no subgraph_refs' });

  const remote = apiDefinition('users-api').servingSubGraph('users').inContext('staging', 'tyk').build();
  const away = graphs({ subs: [subGraph('users').build()], supers: [superGraph('social').withSubgraphs('users').build()], apis: [remote] });
  t.match(resolveGraphql(social, SOCIAL, away, composeSubgraphs), {
    ok: false,
    invalid: 'SuperGraph default/social: SubGraph default/users is served by ApiDefinition default/users-api on another gateway (contextRef)',
  });
  t.match(fixed, { ok: true });
  t.throws(() => resolveGraphql(social, SOCIAL, full), /no composer loaded/, 'composing without the composer is a bug, not a verdict');
});

t.test('graphqlWith: the resolved fields over the spec’s graphql, nested objects merged, graph_ref dropped', async (t) => {
  const spec = { graphql: { enabled: true, graph_ref: 'g', execution_mode: 'subgraph', schema: 'old', subgraph: { sdl: 'old', other: 1 }, playground: { enabled: false } } };
  t.same(graphqlWith(spec, { schema: 'S', subgraph: { sdl: 'D' } }), { enabled: true, execution_mode: 'subgraph', schema: 'S', subgraph: { sdl: 'D', other: 1 }, playground: { enabled: false } });
  t.same(graphqlWith({}, { schema: 'S' }), { schema: 'S' });
});

t.test('decideHeld: the finalizer added to live objects, the status kept, deletion held while in use or unknown, else released', async (t) => {
  const live = subGraph('users').build();
  t.same(decideHeld({ kind: SUBGRAPH, obj: live, users: [], status: { linked_by_api: 'A' } }), {
    what: 'upsert',
    action: 'UPDATE',
    reason: 'finalizer missing',
    addFinalizer: true,
    statusPatch: { linked_by_api: 'A' },
  });
  const kept = subGraph('users').withFinalizer().withStatus({ linked_by_api: 'A' }).build();
  t.same(
    decideHeld({ kind: SUBGRAPH, obj: kept, users: ['SuperGraph default/social'], status: { linked_by_api: 'A' } }),
    { what: 'quiet', action: 'NOOP', reason: 'unchanged' },
    'a steady state writes nothing',
  );
  t.same(
    decideHeld({ kind: SUBGRAPH, obj: kept, users: [], status: { linked_by_api: null } }),
    { what: 'upsert', action: 'UPDATE', reason: 'status changed', addFinalizer: false, statusPatch: { linked_by_api: null } },
    'a link that went is removed (null)',
  );
  const cleared = subGraph('users').withFinalizer().withStatus({ linked_by_api: '' }).build();
  t.same(
    decideHeld({ kind: SUBGRAPH, obj: cleared, users: [], status: { linked_by_api: null } }),
    { what: 'quiet', action: 'NOOP', reason: 'unchanged' },
    '"" (Tyk Operator’s cleared link) is no link: not patched',
  );
  t.same(decideHeld({ kind: SUBGRAPH, obj: kept, users: [] }), { what: 'quiet', action: 'NOOP', reason: 'unchanged' }, 'a status not known now is left as it is');

  const deleting = subGraph('users').withFinalizer().deleting().build();
  t.same(decideHeld({ kind: SUBGRAPH, obj: deleting, users: ['ApiDefinition default/users-api', 'SuperGraph default/social'], status: { linked_by_api: 'B' } }), {
    what: 'quiet',
    action: 'WAIT',
    reason: 'in use',
    held: 'deletion held: still used by ApiDefinition default/users-api, SuperGraph default/social',
  });
  t.match(decideHeld({ kind: SUBGRAPH, obj: deleting, users: null }), { what: 'quiet', action: 'WAIT', held: 'deletion held: what uses it could not be read' }, 'never released on doubt');
  t.same(decideHeld({ kind: SUBGRAPH, obj: deleting, users: [] }), { what: 'remove', action: 'DELETE', reason: 'deleted in cluster' });
  const notOurs = superGraph('social').withFinalizer('example.com/other').deleting().build();
  t.same(decideHeld({ kind: SUPERGRAPH, obj: notOurs, users: [] }), { what: 'quiet', action: 'NOOP', reason: 'not managed' }, 'a deletion without our finalizer is not ours to hold');
  t.ok(subGraph('x').withFinalizer().build().metadata.finalizers?.includes(SUBGRAPH_FINALIZER));
});

t.test('a composition is redone only when its inputs changed (per process, the last COMPOSITIONS_KEPT)', async (t) => {
  const subgraphs = [
    { name: 'default/users', sdl: USERS_SDL },
    { name: 'default/posts', sdl: POSTS_SDL },
  ];
  const first = composeSubgraphs(subgraphs);
  t.equal(composeSubgraphs(subgraphs.map((s) => ({ ...s }))), first, 'the same inputs: the same answer, not composed again');
  const renamed = composeSubgraphs([{ ...subgraphs[0], name: 'default/people' } as (typeof subgraphs)[number], subgraphs[1] as (typeof subgraphs)[number]]);
  t.not(renamed, first, 'a name changed: composed again');
  t.not(composeSubgraphs([subgraphs[0] as (typeof subgraphs)[number]]), first, 'a subgraph fewer: composed again');

  // what the memo calls, counted through a composer of our own (no module mocked)
  let calls = 0;
  const counting: Compose = (list) => {
    calls++;
    return { ok: true, publicSdl: list.map((s) => s.sdl).join('\n') };
  };
  const memo = memoised(counting, 2);
  const a = [{ name: 'a', sdl: 'type A { a: Int }' }];
  const b = [{ name: 'b', sdl: 'type B { b: Int }' }];
  const c = [{ name: 'c', sdl: 'type C { c: Int }' }];
  memo(a);
  memo(a);
  t.equal(calls, 1, 'the second time from memory');
  memo(b);
  memo(a);
  memo(c);
  t.equal(calls, 3, 'b and c composed');
  memo(a);
  t.equal(calls, 3, 'a, used most recently, is kept');
  memo(b);
  t.equal(calls, 4, 'b, used least recently, was forgotten');
  // name and SDL are told apart: moving text from one to the other is another input
  memo([{ name: 'ab', sdl: 'c' }]);
  memo([{ name: 'a', sdl: 'bc' }]);
  t.equal(calls, 6);
  t.ok(COMPOSITIONS_KEPT >= 16, 'the process default keeps enough for a cluster of graphs');
});

t.test('a SubGraph SDL above the size limit is refused by its size, named, before any parser sees it', async (t) => {
  const huge = `type Query { a: Int }\n${'# padding\n'.repeat(Math.ceil(MAX_DOCUMENT_BYTES / 10))}`;
  const sub = graphs({ subs: [subGraph('users').withSdl(huge).build()], apis: [usersApi] });
  t.match(resolveGraphql(usersApi, USERS, sub), { ok: false, invalid: new RegExp(`^SubGraph default/users sdl is \\d+ bytes, above the limit of ${MAX_DOCUMENT_BYTES} bytes$`) });
  const sup = graphs({ subs: [subGraph('users').withSdl(huge).build()], supers: [superGraph('social').withSubgraphs('users').build()], apis: [usersApi] });
  let composed = 0;
  const never: Compose = () => {
    composed++;
    return { ok: false, errors: ['composed'] };
  };
  t.match(resolveGraphql(social, SOCIAL, sup, never), {
    ok: false,
    invalid: new RegExp(`^SuperGraph default/social: SubGraph default/users sdl is \\d+ bytes, above the limit of ${MAX_DOCUMENT_BYTES} bytes$`),
  });
  t.equal(composed, 0, 'nothing composed');
});
