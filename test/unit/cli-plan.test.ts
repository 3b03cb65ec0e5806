/**
 * The pure parts of `gateway-reconciler plan`: the table (lib/cli/plan-table.ts: rows, values
 * cut, the last line, whether anything would change, what leaves the plan incomplete), the
 * options (lib/cli/plan.ts planOptions) and --from-dir's files (lib/cli/from-dir.ts: kinds by
 * apiVersion and kind, documents, objects as the API server would store them).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { asStored, kindOf, readManifests } from '../../lib/cli/from-dir.js';
import { UsageError } from '../../lib/cli/io.js';
import { planOptions } from '../../lib/cli/plan.js';
import { planChanges, planProblems, planTable, shown } from '../../lib/cli/plan-table.js';
import type { ObjectReport, RunReport } from '../../lib/engine/types.js';
import { API_DEFINITION } from '../../lib/kinds/api-definition/kind.js';
import { SECRET } from '../../lib/kube/kinds.js';
import { apiDefinition } from '../fixtures/builders.js';
import { FakeClock } from '../harness/clock.js';
import { MemoryKube } from '../memory/kube.js';

function report(objects: ObjectReport[], over: Partial<RunReport> = {}): RunReport {
  return { runId: 'r', trigger: 'resync', dryRun: true, startedAt: '', durationMs: 1, gateway: { writes: 0, reloads: 0 }, objects, errors: [], counts: {}, ...over };
}

const obj = (name: string, over: Partial<ObjectReport>): ObjectReport => ({ kind: 'ApiDefinition', namespace: 'ns', name, id: name, action: 'NOOP', reason: 'unchanged', result: 'planned', ...over });

t.test('the table: a row per changed field, a deletion, an object that would fail; the last line', async (t) => {
  const r = report(
    [
      obj('a', {
        action: 'UPDATE',
        reason: 'spec changed',
        changes: [
          { path: 'proxy.target_url', before: 'http://x', after: 'http://y' },
          { path: 'tags[0]', after: 'new' },
        ],
      }),
      obj('b', {}),
      obj('c', { action: 'DELETE', reason: 'deleted in cluster', changes: [] }),
      obj('d', { result: 'failed', reason: 'IdClaimed', error: 'the id is owned by another resource' }),
    ],
    { gateway: { writes: 2, reloads: 1 } },
  );
  t.same(planTable(r), [
    'OBJECT              ACTION  FIELD                    BEFORE → AFTER',
    'ApiDefinition ns/a  UPDATE  proxy.target_url         "http://x" → "http://y"',
    'ApiDefinition ns/a  UPDATE  tags[0]                  (none) → "new"',
    'ApiDefinition ns/c  DELETE  (the object is removed)  deleted in cluster',
    'ApiDefinition ns/d  NOOP    (would be failed)        IdClaimed: the id is owned by another resource',
    '2 objects would change, 2 fields (2 gateway writes, 1 reload).',
  ]);
  t.equal(planChanges(r), true);
  t.same(planTable(report([obj('b', {})])), ['Nothing would change (0 gateway writes, 0 reloads).']);
  t.equal(planChanges(report([obj('b', {}), obj('x', { action: 'UPDATE', result: 'paused' })])), false, 'a paused object changes nothing');
});

t.test('values: JSON, cut to 80 characters', async (t) => {
  t.equal(shown(undefined), '(none)');
  t.equal(shown('x'), '"x"');
  t.equal(shown({ a: [1] }), '{"a":[1]}');
  const long = shown('y'.repeat(200));
  t.equal(long.length, 80);
  t.ok(long.endsWith('…'));
});

t.test('what leaves the plan incomplete: run errors, objects that could not be read', async (t) => {
  const r = report([obj('a', { result: 'failed', reason: 'read failed', error: 'GET …: 503' }), obj('b', { result: 'failed', reason: 'IdClaimed' })], {
    errors: [{ stage: 'list APIs', code: 'GATEWAY_API', message: 'boom\nsecond line' }],
  });
  t.same(planProblems(r), ['list APIs: boom; second line', 'ApiDefinition ns/a: read failed: GET …: 503']);
  t.same(planProblems(report([obj('b', {})])), []);
});

t.test('options: scope, flags; a bad one is a UsageError', async (t) => {
  t.same(planOptions([], false), { scope: { all: true }, json: false, progress: false });
  t.same(planOptions(['--namespace', 'shop', '--json'], true), { scope: { namespaces: ['shop'] }, json: true, progress: true, namespace: 'shop' });
  t.match(planOptions(['--kind', 'apidefinitions', '--name', 'a'], false).scope, { refs: [{ kind: { kind: 'ApiDefinition' }, namespace: 'default', name: 'a' }] });
  for (const bad of [['--kind', 'ApiDefinition'], ['--kind', 'Nope', '--name', 'a'], ['--nope'], ['positional'], ['--namespace', ' ']]) {
    t.throws(() => planOptions(bad, false), UsageError, bad.join(' '));
  }
});

t.test('kinds by apiVersion and kind: the registry’s and what a run reads', async (t) => {
  t.match(kindOf('tyk.tyk.io/v1alpha1', 'ApiDefinition'), { plural: 'apidefinitions', version: 'v1alpha1' });
  t.match(kindOf('v1', 'Secret'), { group: '', plural: 'secrets' });
  t.match(kindOf('gateway.networking.k8s.io/v1beta1', 'ReferenceGrant'), { plural: 'referencegrants', version: 'v1beta1' });
  t.equal(kindOf('example.com/v1', 'ApiDefinition'), undefined, 'the group counts');
  t.equal(kindOf('v1', 'Pod'), undefined);
});

t.test('files: documents of every YAML file, empty ones skipped; a bad one named', async (t) => {
  const dir = await mkdtemp(path.join(tmpdir(), 'gr-from-dir-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(
    path.join(dir, 'a.yaml'),
    '---\n# comment\napiVersion: tyk.tyk.io/v1alpha1\nkind: ApiDefinition\nmetadata:\n  name: a\nspec:\n  note: |\n    text\n    --- indented\n---\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {k: v}\n...\n',
  );
  await writeFile(path.join(dir, 'b.yml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: other}\n');
  await writeFile(path.join(dir, 'c.json'), '{}');
  const read = await readManifests(dir);
  t.same(
    read.map((m) => [path.basename(m.file), m.kind.kind, m.object.metadata.name]),
    [
      ['a.yaml (document 1)', 'ApiDefinition', 'a'],
      ['a.yaml (document 2)', 'Secret', 's'],
      ['b.yml', 'ConfigMap', 'c'],
    ],
  );
  t.match(read[0]?.object.spec, { note: 'text\n--- indented\n' });
  await writeFile(path.join(dir, 'd.yaml'), 'kind: ApiDefinition\nmetadata: {name: x}\n');
  await t.rejects(readManifests(dir), { name: 'UsageError', message: /d\.yaml: not a Kubernetes object/ });
  await writeFile(path.join(dir, 'd.yaml'), 'a: [unclosed\n');
  await t.rejects(readManifests(dir), { name: 'UsageError', message: /d\.yaml: not YAML/ });
});

t.test('as stored: a new object gets a creation time and no uid; one that replaces a live object keeps its identity and status', async (t) => {
  const kube = new MemoryKube({ clock: new FakeClock() });
  const live = kube.put({ ...apiDefinition('a').withFinalizer().build(), status: { api_id: 'kept' } });
  const now = new Date('2030-01-02T03:04:05Z');
  const edited = apiDefinition('a').targeting('http://elsewhere').build();
  const fresh = apiDefinition('b').withUid('given').build();
  delete (fresh.metadata as { namespace?: string }).namespace;
  const secret = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's', namespace: 'x' }, data: { a: 'YQ==' }, stringData: { b: 'bee' } };
  const [a, b, s] = await asStored(
    kube,
    [
      { file: 'f', kind: API_DEFINITION, object: edited },
      { file: 'f', kind: API_DEFINITION, object: fresh },
      { file: 'f', kind: SECRET, object: secret },
    ],
    now,
    'team',
  );
  t.match(a?.object, {
    metadata: { uid: live.metadata.uid, creationTimestamp: live.metadata.creationTimestamp, generation: (live.metadata.generation ?? 0) + 1, finalizers: live.metadata.finalizers },
    status: { api_id: 'kept' },
    spec: { proxy: { target_url: 'http://elsewhere' } },
  });
  t.match(b?.object.metadata, { name: 'b', namespace: 'team', creationTimestamp: '2030-01-02T03:04:05.000Z', generation: 1 });
  t.notOk(b && 'uid' in b.object.metadata, 'no uid');
  t.same(s?.object, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's', namespace: 'x', creationTimestamp: '2030-01-02T03:04:05.000Z' }, data: { a: 'YQ==', b: 'YmVl' } });
  const same = await asStored(kube, [{ file: 'f', kind: API_DEFINITION, object: apiDefinition('a').build() }], now, 'default');
  t.equal(same[0]?.object.metadata.generation, live.metadata.generation, 'the same spec: the same generation');
});
