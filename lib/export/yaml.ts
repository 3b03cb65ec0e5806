/**
 * Exported resources as YAML. Pure. Each document starts with its notes as comments
 * (`# export: …`), then the object as @kubernetes/client-node's `dumpYaml` writes it (js-yaml;
 * no anchors, no folded lines). `fileName` is `<kind>-<name>.yaml`, the kind lower-cased;
 * `multiDocument` joins documents with `---`, in the order given.
 */
import { dumpYaml } from '@kubernetes/client-node';
import type { Exported } from './translate.js';

export function fileName(e: Exported): string {
  return `${e.object.kind.toLowerCase()}-${e.object.metadata.name}.yaml`;
}

export function documentOf(e: Exported): string {
  const comments = e.notes.map((n) => `# export: ${n.replace(/\s*\n\s*/g, ' ')}\n`).join('');
  return `${comments}${dumpYaml(e.object, { noRefs: true, lineWidth: -1, sortKeys: false })}`;
}

export function multiDocument(resources: readonly Exported[]): string {
  return resources.map(documentOf).join('---\n');
}
