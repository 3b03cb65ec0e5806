/**
 * Shards of a full run: how the objects of a large cluster are split into parts of about
 * SHARD_SIZE objects, each run by one invocation (lib/triggers/schedule.ts coordinates;
 * lib/scale/coordinate.ts counts and snapshots). Pure: no I/O, no clock.
 *
 * - A part is whole namespaces, or a range of one namespace's names (partition.ts makes them).
 * - `inPart(part, namespace, name)`: whether an object belongs to a part (snapshot.ts
 *   `partIndex`: which of a tick's parts, by a map built once). For the namespaces
 *   partition.ts was given, every object belongs to exactly one part: the parts are disjoint
 *   and together complete (test/unit/shards.test.ts, a property test). An object of a namespace the
 *   count did not see (created after it) belongs to none: the next tick's count sees it (a full
 *   run, too, sees only what its listing saw).
 * - `shardMessage` / `parseShardMessage`: a shard as the JSON text a queue carries, and back;
 *   parsing checks every field and throws ShardMessageError naming what is wrong (never quoting
 *   the body).
 */

import type { RunScope } from '../engine/types.js';
import { ShardMessageError } from '../platform/errors.js';

/** Whole namespaces, or one range of the names of a namespace too large for one shard: `from` ≤ name < `to` (byte order; no `from`: from the first, no `to`: to the last). */
export type ShardPart = { readonly namespaces: readonly string[] } | NameRangePart;

/** A range of one namespace's names; at least one end is set (with neither, it is the namespace). */
export interface NameRangePart {
  readonly namespace: string;
  readonly from?: string;
  readonly to?: string;
}

/** One shard of one tick's full run: what a queue message carries. */
export interface Shard {
  /** the coordinator's run id: the key of the tick's snapshot of the gateways */
  readonly runId: string;
  /** 0-based position among the tick's shards, and their number (for logs) */
  readonly index: number;
  readonly count: number;
  readonly part: ShardPart;
}

/**
 * How long what a tick shares with its shards is kept (the snapshot of the gateways: snapshot.ts;
 * the tick's claims of deletions and of shards done): longer than a shard can still be
 * delivered (the queue keeps a message 4 hours, serverless.yml); a shard delivered later lists
 * the gateway itself.
 */
export const SNAPSHOT_TTL_MS = 4 * 60 * 60_000;

/** Namespaces one shard names at most: 1,000 names of at most 63 characters keep a message far below SQS's 256 KB. */
export const MAX_NAMESPACES_PER_SHARD = 1000;

const MESSAGE_VERSION = 1;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
/** A resource's name as the API server takes it (a DNS subdomain; Ingresses and ConfigMaps may have dots). */
const OBJECT_NAME = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
const RUN_ID = /^[A-Za-z0-9-]{1,64}$/;

/** Whether the object `namespace`/`name` belongs to `part`. */
export function inPart(part: ShardPart, namespace: string, name: string): boolean {
  if ('namespaces' in part) return part.namespaces.includes(namespace);
  return part.namespace === namespace && (part.from === undefined || name >= part.from) && (part.to === undefined || name < part.to);
}

/** The namespaces a part's run lists (a range's run lists its namespace from where it can start, keeps its names, and stops past them). */
export function partNamespaces(part: ShardPart): readonly string[] {
  return 'namespaces' in part ? part.namespaces : [part.namespace];
}

/** The scope of a shard's run: its namespaces, listed (RunRequest.shard narrows a range to its names). */
export function shardScope(shard: Shard): RunScope {
  return { namespaces: partNamespaces(shard.part) };
}

/** "3/10 (team-a, team-b)" or "4/10 (big, names from api-2500 before api-5000)": for logs and errors. */
export function describeShard(shard: Shard): string {
  const p = shard.part;
  const what =
    'namespaces' in p
      ? p.namespaces.length <= 3
        ? p.namespaces.join(', ')
        : `${p.namespaces.slice(0, 3).join(', ')} and ${p.namespaces.length - 3} more`
      : `${p.namespace}, names${p.from !== undefined ? ` from ${p.from}` : ''}${p.to !== undefined ? ` before ${p.to}` : ''}`;
  return `${shard.index + 1}/${shard.count} (${what})`;
}

/** The shards of one tick: the parts, numbered, under the tick's run id. */
export function shardsOf(runId: string, parts: readonly ShardPart[]): Shard[] {
  return parts.map((part, index) => ({ runId, index, count: parts.length, part }));
}

/** A shard as the JSON text of a queue message (SQS, POST /shards). */
export function shardMessage(shard: Shard): string {
  return JSON.stringify({ v: MESSAGE_VERSION, runId: shard.runId, index: shard.index, count: shard.count, ...shard.part });
}

/** A queue message's text → the shard it carries; ShardMessageError naming the first problem. */
export function parseShardMessage(text: string): Shard {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new ShardMessageError('shard message is not JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new ShardMessageError('shard message must be a JSON object');
  const m = value as Record<string, unknown>;
  const bad = (field: string, want: string): never => {
    throw new ShardMessageError(`shard message: ${field} must be ${want}`);
  };
  if (m.v !== MESSAGE_VERSION) bad('v', `${MESSAGE_VERSION}`);
  if (typeof m.runId !== 'string' || !RUN_ID.test(m.runId)) bad('runId', 'a run id (letters, digits, -; at most 64)');
  const count = wholeNumber(m.count, 1) ?? bad('count', 'a whole number from 1');
  const index = wholeNumber(m.index, 0) ?? bad('index', 'a whole number from 0');
  if (index >= count) bad('index', `less than count (${count})`);
  const known = new Set(['v', 'runId', 'index', 'count', 'namespaces', 'namespace', 'from', 'to']);
  const unknown = Object.keys(m).filter((k) => !known.has(k));
  if (unknown.length > 0) throw new ShardMessageError(`shard message: unknown field ${unknown.slice(0, 3).join(', ')}`);
  const base = { runId: m.runId as string, index, count };
  if (m.namespaces !== undefined) {
    if (m.namespace !== undefined || m.from !== undefined || m.to !== undefined) throw new ShardMessageError('shard message: namespaces or namespace with from and to, not both');
    const ns = m.namespaces;
    if (!Array.isArray(ns) || ns.length === 0 || ns.length > MAX_NAMESPACES_PER_SHARD || !ns.every((n) => typeof n === 'string' && DNS_LABEL.test(n))) {
      bad('namespaces', `a list of 1 to ${MAX_NAMESPACES_PER_SHARD} namespace names`);
    }
    if (new Set(ns as string[]).size !== (ns as string[]).length) bad('namespaces', 'names without repeats');
    return { ...base, part: { namespaces: [...(ns as string[])] } };
  }
  if (typeof m.namespace !== 'string' || !DNS_LABEL.test(m.namespace)) bad('namespace', 'a namespace name (or give namespaces)');
  const end = (field: 'from' | 'to'): string | undefined => {
    const v = m[field];
    if (v === undefined) return undefined;
    return typeof v === 'string' && OBJECT_NAME.test(v) ? v : bad(field, 'an object name (lower case letters, digits, - and .; at most 253)');
  };
  const from = end('from');
  const to = end('to');
  if (from === undefined && to === undefined) bad('from', 'given, or to (a whole namespace is namespaces)');
  if (from !== undefined && to !== undefined && from >= to) bad('to', `after from (${from})`);
  return { ...base, part: { namespace: m.namespace as string, ...(from !== undefined ? { from } : {}), ...(to !== undefined ? { to } : {}) } };
}

function wholeNumber(v: unknown, min: number): number | undefined {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= min ? v : undefined;
}
