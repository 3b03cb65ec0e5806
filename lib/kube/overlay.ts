/**
 * A read-only view of the API server with some objects as they would be stored: an admission
 * review's object, or the files `plan --from-dir` reads. `get` and `list` answer as the server
 * would if each overlaid object had been written (replacing the stored one of its kind,
 * namespace and name, or added to it; one marked deleting is left as it is, with its
 * deletionTimestamp); everything else is the server's own answer. Every write throws
 * OverlayWriteError: what reads through an overlay is a preview (a dry run), and a write there
 * would be a bug, never a change to the cluster.
 *
 * Lists honour the label selector's equality and existence terms (`k`, `!k`, `k=v`, `k==v`,
 * `k!=v`) on the overlaid objects, as the server does on its own, and `metadataOnly`.
 */
import { KubeApiError, OverlayWriteError } from '../platform/errors.js';
import { isObject } from '../platform/guards.js';
import type { KubeApi, KubeObject, ListOptions, ResourceKind } from './types.js';

export interface Overlaid {
  readonly kind: ResourceKind;
  readonly object: KubeObject;
}

function kindKey(kind: ResourceKind): string {
  return `${kind.group}/${kind.plural}`;
}

function clone<T>(value: T): T {
  return structuredClone(value);
}

/** A label selector's terms as a test; a term it cannot read throws as the server answers (400). */
export function labelSelectorTest(selector: string | undefined): (labels: Readonly<Record<string, string>>) => boolean {
  const terms = (selector ?? '')
    .split(',')
    .map((t) => t.trim())
    .filter((t) => t !== '');
  const tests = terms.map((term): ((labels: Readonly<Record<string, string>>) => boolean) => {
    const m = /^(!?)([A-Za-z0-9][-A-Za-z0-9_./]*)$|^([A-Za-z0-9][-A-Za-z0-9_./]*)\s*(==|=|!=)\s*([-A-Za-z0-9_.]*)$/.exec(term);
    if (!m) throw new KubeApiError(400, `list: 400 unable to parse requirement: ${term}`, { context: { reason: 'BadRequest' } });
    if (m[2] !== undefined) {
      const key = m[2];
      return m[1] === '!' ? (l) => !Object.hasOwn(l, key) : (l) => Object.hasOwn(l, key);
    }
    const [key, op, value] = [m[3] as string, m[4], m[5] as string];
    return op === '!=' ? (l) => l[key] !== value : (l) => l[key] === value;
  });
  return (labels) => tests.every((test) => test(labels));
}

export class OverlayKube implements KubeApi {
  /** kind key → "namespace/name" → the object as it would be stored */
  private readonly byKind = new Map<string, Map<string, KubeObject>>();

  constructor(
    private readonly base: KubeApi,
    objects: readonly Overlaid[],
  ) {
    for (const { kind, object } of objects) {
      const key = kindKey(kind);
      const map = this.byKind.get(key) ?? new Map<string, KubeObject>();
      map.set(`${object.metadata.namespace ?? ''}/${object.metadata.name}`, clone(object));
      this.byKind.set(key, map);
    }
  }

  async get(kind: ResourceKind, namespace: string, name: string): Promise<KubeObject | null> {
    const hit = this.byKind.get(kindKey(kind))?.get(`${namespace}/${name}`);
    return hit ? clone(hit) : this.base.get(kind, namespace, name);
  }

  async list(kind: ResourceKind, namespace?: string, options: ListOptions = {}): Promise<KubeObject[]> {
    const stored = await this.base.list(kind, namespace, options);
    const mine = this.byKind.get(kindKey(kind));
    if (!mine || mine.size === 0) return stored;
    const selects = labelSelectorTest(options.labelSelector);
    const shown = (o: KubeObject): KubeObject => (options.metadataOnly ? { apiVersion: o.apiVersion, kind: o.kind, metadata: clone(o.metadata) } : clone(o));
    const out = stored.filter((o) => !mine.has(`${o.metadata.namespace ?? ''}/${o.metadata.name}`));
    for (const [key, o] of mine) {
      if (namespace !== undefined && namespace !== '' && !key.startsWith(`${namespace}/`)) continue;
      const labels = isObject(o.metadata.labels) ? (o.metadata.labels as Record<string, string>) : {};
      if (!selects(labels)) continue;
      const item = shown(o);
      if (options.keep === undefined || options.keep(item)) out.push(item);
    }
    return out;
  }

  createObject(kind: ResourceKind, namespace: string): Promise<KubeObject> {
    return Promise.reject(new OverlayWriteError(`create ${kind.plural} in ${namespace}`));
  }
  replaceObject(kind: ResourceKind, obj: KubeObject): Promise<KubeObject> {
    return Promise.reject(new OverlayWriteError(`replace ${kind.plural} ${obj.metadata.namespace ?? ''}/${obj.metadata.name}`));
  }
  deleteObject(kind: ResourceKind, namespace: string, name: string): Promise<'deleted' | 'terminating' | 'not found'> {
    return Promise.reject(new OverlayWriteError(`delete ${kind.plural} ${namespace}/${name}`));
  }
  patchStatus(kind: ResourceKind, obj: KubeObject): Promise<KubeObject> {
    return Promise.reject(new OverlayWriteError(`patch the status of ${kind.plural} ${obj.metadata.namespace ?? ''}/${obj.metadata.name}`));
  }
  addFinalizer(kind: ResourceKind, obj: KubeObject): Promise<KubeObject> {
    return Promise.reject(new OverlayWriteError(`add a finalizer to ${kind.plural} ${obj.metadata.namespace ?? ''}/${obj.metadata.name}`));
  }
  removeFinalizer(kind: ResourceKind, obj: KubeObject): Promise<KubeObject | null> {
    return Promise.reject(new OverlayWriteError(`remove a finalizer from ${kind.plural} ${obj.metadata.namespace ?? ''}/${obj.metadata.name}`));
  }
  recordEvent(obj: KubeObject): Promise<{ name: string; count: number }> {
    return Promise.reject(new OverlayWriteError(`record an Event about ${obj.metadata.namespace ?? ''}/${obj.metadata.name}`));
  }
  whoAmI(): Promise<string> {
    return this.base.whoAmI();
  }
  ping(kind: ResourceKind, namespace?: string): Promise<void> {
    return this.base.ping(kind, namespace);
  }
}
