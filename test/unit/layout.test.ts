/**
 * The source layout's rules, over the import graph of lib/ (static and dynamic imports):
 * - lib/engine, and everything it imports, reaches nothing under lib/kinds: the engine names no
 *   kind in code, and no registered kind's name (Kind, plural or constant) appears in its text;
 * - the layers below the engine (lib/platform but its settings reader, lib/kube, lib/store,
 *   lib/gateway) import neither the engine nor the kinds;
 * - every file of lib/ opens with its contract header, and each folder with a README says what
 *   it holds.
 * Each rule is checked against a made-up violation too, so a check that could not fail fails.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { REGISTRY } from '../../lib/kinds/registry.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const LIB = path.join(ROOT, 'lib');

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = path.join(dir, name);
    return statSync(p).isDirectory() ? filesUnder(p) : p.endsWith('.ts') ? [p] : [];
  });
}

const IMPORT = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)(['"])(\.{1,2}\/[^'"]+)\1/g;

/** The files of lib/ each file imports (relative specifiers resolved; `.js` is its `.ts`). */
function importGraph(files: readonly string[], read: (file: string) => string): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const f of files) {
    const out: string[] = [];
    for (const m of read(f).matchAll(IMPORT)) out.push(path.resolve(path.dirname(f), (m[2] as string).replace(/\.js$/, '.ts')));
    graph.set(f, out);
  }
  return graph;
}

/** Every file `from` reaches through imports, itself excluded unless in a cycle. */
function reach(graph: ReadonlyMap<string, readonly string[]>, from: string): Set<string> {
  const seen = new Set<string>();
  const todo = [...(graph.get(from) ?? [])];
  while (todo.length > 0) {
    const f = todo.pop() as string;
    if (seen.has(f)) continue;
    seen.add(f);
    todo.push(...(graph.get(f) ?? []));
  }
  return seen;
}

const rel = (f: string): string => path.relative(ROOT, f);
const under = (f: string, dir: string): boolean => rel(f).startsWith(`${dir}/`);

/** The files under `dir` whose import closure reaches a file under one of `forbidden`: "file → what it reaches". */
function violations(graph: ReadonlyMap<string, readonly string[]>, dir: string, forbidden: readonly string[], except: (f: string) => boolean = () => false): string[] {
  return [...graph.keys()].filter((f) => under(f, dir) && !except(f)).flatMap((f) => [...reach(graph, f)].filter((g) => forbidden.some((d) => under(g, d))).map((g) => `${rel(f)} → ${rel(g)}`));
}

const FILES = filesUnder(LIB);
const SOURCE = new Map(FILES.map((f) => [f, readFileSync(f, 'utf8')]));
const GRAPH = importGraph(FILES, (f) => SOURCE.get(f) as string);

/** Every name by which a registered kind could be named: Kind, plural (as a word), and the constants of lib/kinds that hold one. */
function kindNames(): RegExp {
  const words = [...REGISTRY.managed, ...REGISTRY.cluster].flatMap((k) => [k.kind, `${k.kind}s`, `${k.kind}es`, k.kind.replace(/y$/, 'ies')]);
  const constants = FILES.filter((f) => under(f, 'lib/kinds')).flatMap((f) =>
    [...(SOURCE.get(f) as string).matchAll(/export const ([A-Z][A-Z0-9_]+): (?:ManagedKind|HeldKind|ClusterKind|ResourceKind)/g)].map((m) => m[1] as string),
  );
  return new RegExp(`\\b(${[...new Set([...words, ...constants])].join('|')})\\b`);
}

t.test('the engine reaches nothing under lib/kinds, through any chain of imports', async (t) => {
  t.ok(FILES.some((f) => under(f, 'lib/engine')) && FILES.some((f) => under(f, 'lib/kinds')), 'both folders are there');
  t.same(violations(GRAPH, 'lib/engine', ['lib/kinds', 'lib/triggers', 'lib/events']), []);
  // the check itself: an engine file importing a kind's file through another would be found
  const engineFile = FILES.find((f) => under(f, 'lib/engine')) as string;
  const middle = path.join(LIB, 'scale', 'made-up.ts');
  const kindFile = FILES.find((f) => under(f, 'lib/kinds')) as string;
  const bad = new Map(GRAPH);
  bad.set(engineFile, [...(GRAPH.get(engineFile) ?? []), middle]);
  bad.set(middle, [kindFile]);
  t.ok(violations(bad, 'lib/engine', ['lib/kinds']).includes(`${rel(engineFile)} → ${rel(kindFile)}`), 'a chain through another folder is found');
});

t.test('no registered kind is named in lib/engine, in code or comments', async (t) => {
  const names = kindNames();
  t.ok(names.test('an ApiDefinition') && names.test('SECURITY_POLICY') && names.test('Ingresses') && names.test('SecurityPolicies') && names.test('SubGraph'), 'the names are those of the registry');
  t.notOk(names.test('a policy of errors'), 'an ordinary word is not a kind');
  const found = FILES.filter((f) => under(f, 'lib/engine')).flatMap((f) =>
    (SOURCE.get(f) as string)
      .split('\n')
      .map((line, i) => ({ line, i }))
      .filter(({ line }) => names.test(line))
      .map(({ line, i }) => `${rel(f)}:${i + 1}: ${line.trim()}`),
  );
  t.same(found, []);
  const readme = path.join(LIB, 'engine', 'README.md');
  t.same(
    readFileSync(readme, 'utf8')
      .split('\n')
      .filter((l) => names.test(l)),
    [],
    'nor in its README',
  );
});

t.test('the layers below the engine import neither the engine nor the kinds', async (t) => {
  // the settings reader is the one platform file that reads every part's settings, through their parsers
  const settingsReader = (f: string) => rel(f) === 'lib/platform/config.ts';
  for (const dir of ['lib/platform', 'lib/kube', 'lib/store', 'lib/gateway']) {
    t.same(violations(GRAPH, dir, ['lib/engine', 'lib/kinds', 'lib/scale', 'lib/triggers', 'lib/events'], settingsReader), [], dir);
  }
  t.same(violations(GRAPH, 'lib/scale', ['lib/kinds', 'lib/triggers', 'lib/events']), [], 'lib/scale takes the kinds from the run (RunDeps.kinds)');
  t.same(
    [...GRAPH.keys()].filter((f) => under(f, 'lib/platform') && !settingsReader(f)).flatMap((f) => (GRAPH.get(f) ?? []).filter((g) => !under(g, 'lib/platform')).map(rel)),
    [],
    'platform files but the settings reader import only platform files',
  );
});

t.test('every file of lib/ opens with its contract header; each part of lib/ has a README', async (t) => {
  const headless = FILES.filter((f) => !/^\/\*\*\n \* \S/.test(SOURCE.get(f) as string) && !/^\/\*\* \S/.test(SOURCE.get(f) as string)).map(rel);
  t.same(headless, []);
  for (const dir of ['engine', 'kinds', 'scale', 'platform']) {
    const readme = path.join(LIB, dir, 'README.md');
    t.ok(existsSync(readme), `lib/${dir}/README.md`);
    if (existsSync(readme)) t.match(readFileSync(readme, 'utf8'), /may import/i, `lib/${dir}/README.md says what its files may import`);
  }
});
