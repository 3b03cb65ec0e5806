/**
 * `plan --from-dir DIR`: the YAML files of DIR (`*.yaml`, `*.yml`; multi-document; not its
 * subfolders) as objects not yet applied, each with its ResourceKind (the registry's kinds and
 * those a run reads: OperatorContexts, Secrets, ConfigMaps, Services, ReferenceGrants,
 * Gateway API's classes and Gateways), ready for OverlayKube.
 *
 * `readManifests(dir)` reads and checks the files (a file that is not YAML, a document without
 * apiVersion, kind or metadata.name, or a kind no run reads: UsageError, one line naming the
 * file); `asStored(kube, docs, now)` makes each document the object the API server would store:
 * a new one gets a creationTimestamp of `now`, generation 1 (not a core object) and no uid; one that replaces a
 * live object keeps the live one's uid, creationTimestamp, finalizers and status, and its
 * generation goes up when its spec changes; a Secret's stringData goes into its data
 * (base64), as the API server does; a namespaced object without a namespace is in `namespace`.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { loadAllYaml } from '@kubernetes/client-node';
import { mapLimit } from '../engine/concurrency.js';
import { canonicalJson } from '../engine/hash.js';
import { GATEWAY, GATEWAY_CLASS } from '../kinds/gateway-api/kinds.js';
import { REGISTRY } from '../kinds/registry.js';
import { CONFIG_MAP, OPERATOR_CONTEXT, SECRET, SERVICE } from '../kube/kinds.js';
import type { Overlaid } from '../kube/overlay.js';
import { REFERENCE_GRANT_V1 } from '../kube/reference-grants.js';
import type { KubeApi, KubeObject, ResourceKind } from '../kube/types.js';
import { describeError } from '../platform/errors.js';
import { isObject } from '../platform/guards.js';
import { UsageError } from './io.js';

/** Every kind a file may hold: what a run reads. */
const KINDS: readonly ResourceKind[] = [...REGISTRY.managed, ...REGISTRY.cluster, ...REGISTRY.wide, OPERATOR_CONTEXT, SECRET, CONFIG_MAP, SERVICE, REFERENCE_GRANT_V1, GATEWAY_CLASS, GATEWAY];

/** Kinds whose objects have no namespace. */
const CLUSTER_SCOPED: ReadonlySet<string> = new Set([`${GATEWAY_CLASS.group}/${GATEWAY_CLASS.kind}`]);

/** One document of a file, with where it came from. */
export interface Manifest extends Overlaid {
  readonly file: string;
}

/** The ResourceKind of `apiVersion` and `kind` (any version of a known group and Kind), or undefined. */
export function kindOf(apiVersion: string, kind: string): ResourceKind | undefined {
  const [group, version] = apiVersion.includes('/') ? (apiVersion.split('/', 2) as [string, string]) : ['', apiVersion];
  const known = KINDS.find((k) => k.group === group && k.kind === kind);
  return known ? { kind: known.kind, group: known.group, version, plural: known.plural } : undefined;
}

/** The documents of a YAML text; empty ones (a leading or trailing `---`, comments) are skipped. */
function documents(text: string): unknown[] {
  // a line `---` (or `...`) at the first column always ends a document: block scalars are indented
  const parts = text.split(/^(?:---|\.\.\.)[ \t]*(?:#.*)?$/m);
  const out: unknown[] = [];
  for (const part of parts) {
    if (part.split('\n').every((line) => /^\s*(#.*)?$/.test(line) || /^%/.test(line))) continue;
    // loadAllYaml gives typed models for core kinds (Dates and all): their JSON is the object
    for (const doc of loadAllYaml(part)) if (doc !== null && doc !== undefined) out.push(JSON.parse(JSON.stringify(doc)));
  }
  return out;
}

/** The YAML files of `dir`, read and checked (see the header). */
export async function readManifests(dir: string): Promise<Manifest[]> {
  let names: string[];
  try {
    names = (await readdir(dir, { withFileTypes: true })).filter((e) => e.isFile() && /\.ya?ml$/i.test(e.name)).map((e) => e.name);
  } catch (err) {
    throw new UsageError(`--from-dir ${dir}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such directory' : describeError(err)}`);
  }
  const out: Manifest[] = [];
  for (const name of names.sort()) {
    const file = path.join(dir, name);
    let docs: unknown[];
    try {
      docs = documents(await readFile(file, 'utf8'));
    } catch (err) {
      throw new UsageError(`${file}: not YAML: ${describeError(err).split('\n')[0]}`);
    }
    docs.forEach((doc, i) => {
      const where = docs.length > 1 ? `${file} (document ${i + 1})` : file;
      if (!isObject(doc) || typeof doc.apiVersion !== 'string' || typeof doc.kind !== 'string' || !isObject(doc.metadata) || typeof doc.metadata.name !== 'string') {
        throw new UsageError(`${where}: not a Kubernetes object (apiVersion, kind and metadata.name are required)`);
      }
      const kind = kindOf(doc.apiVersion, doc.kind);
      if (!kind) throw new UsageError(`${where}: unknown kind ${doc.kind} (${doc.apiVersion}): expected one of ${[...new Set(KINDS.map((k) => k.kind))].join(', ')}`);
      out.push({ file: where, kind, object: doc as unknown as KubeObject });
    });
  }
  return out;
}

/** A Secret's stringData merged into its data, as the API server stores it. */
function withData(obj: KubeObject): KubeObject {
  const raw = obj as KubeObject & { stringData?: unknown; data?: unknown };
  if (!isObject(raw.stringData)) return obj;
  const data: Record<string, unknown> = { ...(isObject(raw.data) ? raw.data : {}) };
  for (const [k, v] of Object.entries(raw.stringData)) data[k] = Buffer.from(String(v), 'utf8').toString('base64');
  const { stringData: _, ...rest } = raw;
  return { ...rest, data } as KubeObject;
}

/** The documents as the API server would store them (see the header), reading the live objects they replace. */
export async function asStored(kube: KubeApi, manifests: readonly Manifest[], now: Date, namespace: string): Promise<Overlaid[]> {
  return mapLimit(manifests, 8, async ({ kind, object }): Promise<Overlaid> => {
    const scoped = CLUSTER_SCOPED.has(`${kind.group}/${kind.kind}`);
    const ns = scoped ? undefined : (object.metadata.namespace ?? namespace);
    const doc = withData(object);
    const live = await kube.get(kind, ns ?? '', object.metadata.name);
    // the API server keeps a generation for custom resources and other API groups' objects, not for core ones
    const generated = kind.group !== '';
    const metadata = { ...doc.metadata, ...(ns !== undefined ? { namespace: ns } : {}) };
    if (!live) {
      const fresh = { ...metadata, creationTimestamp: metadata.creationTimestamp ?? now.toISOString(), ...(generated ? { generation: metadata.generation ?? 1 } : {}) };
      delete (fresh as { uid?: string }).uid;
      return { kind, object: { ...doc, metadata: fresh } };
    }
    const specChanged = canonicalJson(doc.spec ?? null) !== canonicalJson(live.spec ?? null);
    const kept = {
      ...metadata,
      uid: live.metadata.uid,
      creationTimestamp: live.metadata.creationTimestamp,
      ...(generated ? { generation: (live.metadata.generation ?? 1) + (specChanged ? 1 : 0) } : {}),
      ...(live.metadata.finalizers ? { finalizers: live.metadata.finalizers } : {}),
      ...(live.metadata.resourceVersion ? { resourceVersion: live.metadata.resourceVersion } : {}),
      ...(live.metadata.deletionTimestamp ? { deletionTimestamp: live.metadata.deletionTimestamp } : {}),
    };
    return { kind, object: { ...doc, metadata: kept, ...(live.status !== undefined ? { status: live.status } : {}) } };
  });
}
