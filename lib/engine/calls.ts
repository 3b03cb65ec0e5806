/**
 * What a step of a run cost its gateways, as a value each stage returns and the run adds up
 * (RunReport.gateway): write requests sent (objects, retirements, certificates) and reloads
 * asked for. Pure.
 */

export interface GatewayCalls {
  readonly writes: number;
  readonly reloads: number;
}

export const NO_CALLS: GatewayCalls = { writes: 0, reloads: 0 };

/** The calls of every part together. */
export function sumCalls(parts: Iterable<GatewayCalls | undefined>): GatewayCalls {
  let writes = 0;
  let reloads = 0;
  for (const p of parts) {
    writes += p?.writes ?? 0;
    reloads += p?.reloads ?? 0;
  }
  return { writes, reloads };
}
