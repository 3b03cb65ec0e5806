/** Which SubGraphs and SuperGraphs a run's ApiDefinitions started or stopped using: their records' uses before and after it. Pure. */
import type { Done } from '../../engine/finalize.js';
import type { HeldRef } from '../../engine/kind.js';
import { parseGraphUse } from './federation.js';
import { SUBGRAPH, SUPERGRAPH } from './kinds.js';

export function graphsUsedBy(apis: readonly Done[]): HeldRef[] {
  return apis.flatMap((d) => {
    const before = new Set(d.loaded.record?.uses ?? []);
    const after = new Set(d.record?.uses ?? []);
    const changed = [...before, ...after].filter((u) => before.has(u) !== after.has(u));
    return changed.flatMap((u) => {
      const ref = parseGraphUse(u);
      return ref ? [{ kind: ref.kind === 'SubGraph' ? SUBGRAPH : SUPERGRAPH, namespace: ref.namespace, name: ref.name }] : [];
    });
  });
}
