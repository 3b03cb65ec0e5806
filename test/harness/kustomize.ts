/**
 * The objects `kubectl apply -k <dir>` would apply, for the kustomize features deploy/ uses:
 * `resources` (manifest files, and directories holding a kustomization.yaml), `namespace` (set
 * on every namespaced object of that kustomization), and `patches` given inline as JSON 6902
 * operations (add, replace, remove) on the objects their `target` names (kind, name, and group
 * and version when given). A kustomization using anything else, a patch whose target matches
 * nothing, a path that does not exist, or two objects with one identity throw, so a deploy/ file
 * that outgrows this renderer fails its test instead of being rendered wrongly.
 *
 * Pure apart from reading files; the output of `kubectl kustomize` on the same directory is
 * the reference it follows.
 */
import { existsSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import yaml from 'js-yaml';
import { isObj, loadYamlFile, type Obj } from './manifests.js';

const KNOWN_KEYS = new Set(['apiVersion', 'kind', 'namespace', 'resources', 'patches']);
/** Kinds without a namespace among those deploy/ holds. */
const CLUSTER_SCOPED = new Set(['Namespace', 'ClusterRole', 'ClusterRoleBinding', 'CustomResourceDefinition']);

interface JsonPatchOp {
  op: 'add' | 'replace' | 'remove';
  path: string;
  value?: unknown;
}

/** kind/namespace/name: what kustomize refuses to hold twice. */
export function identity(o: Obj): string {
  const meta = isObj(o.metadata) ? o.metadata : {};
  return `${String(o.kind)}/${String(meta.namespace ?? '')}/${String(meta.name)}`;
}

/** The objects the kustomization in `root`/`dir` renders, in order. */
export function renderKustomization(root: string, dir: string): Obj[] {
  const [doc] = loadYamlFile(root, join(dir, 'kustomization.yaml'));
  const k = doc?.doc;
  if (!isObj(k) || k.kind !== 'Kustomization') throw new Error(`${dir}: no Kustomization`);
  const unknown = Object.keys(k).filter((key) => !KNOWN_KEYS.has(key));
  if (unknown.length > 0) throw new Error(`${dir}: kustomization fields this renderer does not model: ${unknown.join(', ')}`);

  const objects: Obj[] = [];
  for (const r of Array.isArray(k.resources) ? k.resources : []) {
    const path = join(root, dir, String(r));
    if (!existsSync(path)) throw new Error(`${dir}: resource ${String(r)} does not exist`);
    if (statSync(path).isDirectory()) objects.push(...renderKustomization(root, relative(root, path)));
    else objects.push(...loadYamlFile(root, relative(root, path)).flatMap((d) => (isObj(d.doc) ? [structuredClone(d.doc)] : [])));
  }
  if (typeof k.namespace === 'string') {
    for (const o of objects) if (!CLUSTER_SCOPED.has(String(o.kind))) o.metadata = { ...(isObj(o.metadata) ? o.metadata : {}), namespace: k.namespace };
  }
  const seen = new Set<string>();
  for (const o of objects) {
    const id = identity(o);
    if (seen.has(id)) throw new Error(`${dir}: ${id} is declared twice`);
    seen.add(id);
  }
  for (const p of Array.isArray(k.patches) ? k.patches : []) applyPatch(dir, objects, p);
  return objects;
}

function applyPatch(dir: string, objects: Obj[], p: unknown): void {
  if (!isObj(p) || !isObj(p.target) || typeof p.patch !== 'string') throw new Error(`${dir}: only inline patches with a target are modelled`);
  const target = p.target;
  const ops = yaml.load(p.patch);
  if (!Array.isArray(ops)) throw new Error(`${dir}: only JSON 6902 patches (a list of operations) are modelled`);
  const matches = objects.filter((o) => {
    const [group, version] = String(o.apiVersion).includes('/') ? String(o.apiVersion).split('/') : ['', String(o.apiVersion)];
    const name = isObj(o.metadata) ? o.metadata.name : undefined;
    return (
      (target.kind === undefined || target.kind === o.kind) &&
      (target.name === undefined || target.name === name) &&
      (target.group === undefined || target.group === group) &&
      (target.version === undefined || target.version === version)
    );
  });
  if (matches.length === 0) throw new Error(`${dir}: a patch's target matches nothing: ${JSON.stringify(target)}`);
  for (const o of matches) for (const op of ops as JsonPatchOp[]) applyOp(o, op);
}

function applyOp(o: Obj, op: JsonPatchOp): void {
  const keys = op.path
    .split('/')
    .slice(1)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  const last = keys.pop();
  if (last === undefined) throw new Error(`patch path ${op.path}: empty`);
  let cur: unknown = o;
  for (const key of keys) {
    cur = Array.isArray(cur) ? cur[Number(key)] : isObj(cur) ? cur[key] : undefined;
    if (cur === undefined) throw new Error(`patch path ${op.path}: ${key} does not exist`);
  }
  if (!isObj(cur) && !Array.isArray(cur)) throw new Error(`patch path ${op.path}: not a container`);
  const container = cur as Record<string, unknown>;
  const exists = Array.isArray(cur) ? Number(last) < cur.length : last in container;
  if (op.op !== 'add' && !exists) throw new Error(`patch path ${op.path}: nothing to ${op.op}`);
  if (op.op === 'remove') {
    if (Array.isArray(cur)) cur.splice(Number(last), 1);
    else delete container[last];
    return;
  }
  if (op.op !== 'add' && op.op !== 'replace') throw new Error(`patch op ${String(op.op)} is not modelled`);
  if (Array.isArray(cur) && op.op === 'add') cur.splice(last === '-' ? cur.length : Number(last), 0, op.value);
  else container[last] = op.value;
}
