/**
 * POST /resync: a one-off run, for people and scripts. Parameters as a JSON body or as query
 * parameters: `kind` (ApiDefinition, TykOasApiDefinition, SecurityPolicy, Ingress, HTTPRoute,
 * SubGraph, SuperGraph, by Kind or plural; default all but the last two, guessed by name), `namespace`, `name` (needs namespace),
 * `dryRun` (true: load and plan only, write nothing, return the plan). Nothing named →
 * everything. Requires RESYNC_TOKEN (checked before the body is read). A resync ignores retry backoff.
 *
 * Everything, not a dry run, is a full run as the schedule's (./schedule.ts): above SHARD_SIZE
 * objects it is sharded, its shards run here one after the other (one shard's objects in memory
 * at a time, never to SHARD_QUEUE_URL: the caller waits for the report), and the report is
 * theirs merged, with `sharded`. A dry run answers with the whole plan, so it is one run.
 */

import type { RunScope } from '../engine/types.js';
import { findHeldKind, findKind, findMakerKind, HELD_KINDS, MAKER_KINDS, MANAGED_KINDS } from '../kinds/registry.js';
import { BadRequestError } from '../platform/errors.js';
import { isObject } from '../platform/guards.js';
import type { Service } from '../service.js';
import type { HttpInput, HttpRoute } from './io.js';
import { fullRunHere } from './schedule.js';

export interface ResyncParams {
  kind?: string;
  namespace?: string;
  name?: string;
  dryRun: boolean;
}

const KEYS = new Set(['kind', 'namespace', 'name', 'dryRun']);

function parseParams(input: HttpInput): ResyncParams {
  let body: Record<string, unknown> = {};
  const form = (input.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded') && !input.body.trim().startsWith('{');
  if (form) body = Object.fromEntries(new URLSearchParams(input.body));
  else if (input.body.trim() !== '') {
    let parsed: unknown;
    try {
      parsed = JSON.parse(input.body);
    } catch {
      throw new BadRequestError('body is not JSON: expected {kind?, namespace?, name?, dryRun?}');
    }
    if (!isObject(parsed)) throw new BadRequestError('body must be a JSON object');
    body = parsed;
  }
  const merged: Record<string, unknown> = { ...input.query, ...body };
  const unknown = Object.keys(merged).filter((k) => !KEYS.has(k) && merged[k] !== undefined);
  if (unknown.length > 0) throw new BadRequestError(`unknown parameter ${unknown.join(', ')}: expected kind, namespace, name, dryRun`);
  const text = (k: string): string | undefined => {
    const v = merged[k];
    if (v === undefined || v === null || v === '') return undefined;
    if (typeof v !== 'string') throw new BadRequestError(`${k} must be a string`);
    return v;
  };
  const dry = merged.dryRun;
  if (dry !== undefined && dry !== true && dry !== false && dry !== 'true' && dry !== 'false' && dry !== '') {
    throw new BadRequestError('dryRun must be true or false');
  }
  return { kind: text('kind'), namespace: text('namespace'), name: text('name'), dryRun: dry === true || dry === 'true' || dry === '' };
}

export function resyncScope(params: ResyncParams): RunScope {
  // a held kind (SubGraph, SuperGraph) is named on its own; without a kind, the managed kinds and the makers (Ingress, HTTPRoute) are guessed
  const held = params.kind === undefined ? undefined : findHeldKind(params.kind);
  const makers = params.kind === undefined ? MAKER_KINDS : [findMakerKind(params.kind)].filter((k) => k !== undefined);
  const kinds = params.kind === undefined ? MANAGED_KINDS : held || makers.length > 0 ? [] : [findKind(params.kind)];
  if (kinds[0] === undefined && !held && makers.length === 0) {
    throw new BadRequestError(`unknown kind "${params.kind}": expected ${[...MANAGED_KINDS, ...MAKER_KINDS, ...HELD_KINDS].map((k) => k.kind).join(', ')}`);
  }
  if (params.name !== undefined) {
    if (params.namespace === undefined) throw new BadRequestError('name needs namespace');
    if (held) return { cluster: [{ kind: held, namespace: params.namespace, name: params.name }] };
    const optional = params.kind === undefined;
    const made = makers.length > 0 ? { cluster: makers.map((kind) => ({ kind, namespace: params.namespace!, name: params.name! })) } : {};
    return { refs: kinds.map((kind) => ({ kind: kind!, namespace: params.namespace!, name: params.name!, ...(optional ? { optional } : {}) })), ...made };
  }
  if (params.namespace !== undefined) return { namespaces: [params.namespace] };
  return { all: true };
}

export const resync: HttpRoute = {
  guard: 'resync',
  handle: async (svc: Service, input) => {
    const params = parseParams(input);
    const scope = resyncScope(params);
    if (scope.all === true && !params.dryRun) {
      const { report, sharded } = await fullRunHere(svc, { trigger: 'resync' });
      return { statusCode: 200, body: sharded ? { ...report, sharded } : report };
    }
    const report = await svc.run({ trigger: 'resync', scope, dryRun: params.dryRun });
    return { statusCode: 200, body: report };
  },
};
