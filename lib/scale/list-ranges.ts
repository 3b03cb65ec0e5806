/**
 * A range shard's listings (shards.ts, a NameRangePart): where each of its namespace's listings
 * begins and ends (KubeApi's ListOptions.range). It ends after the page that reaches the range's
 * `to`, and tells, for the kind, the continue token of that page; the next range of the same
 * namespace, run later in the same process (the shards a tick runs here, one after the other, or
 * a Lambda container given the next shard), begins there, so that the ranges of a namespace
 * read its pages about once between them, not each from the first. Without a token (the range
 * before ran elsewhere, or not yet) a range begins at the first page; one too old (410) costs
 * a listing from the first page. The range's `keep` (RunContext.owns) decides what is kept: a
 * token is a position, never a filter.
 *
 * A NameRange serves any listing that wants names up to one (load.ts readObjects: a group of
 * objects read again under their locks stops after the page past its last name; that listing
 * begins at the first page, so that it reads the API server as it is now).
 *
 * The tokens are kept in the process (RunDeps.listHandover), by tick, kind, namespace and name,
 * at most MAX_TOKENS (the oldest go first); each is taken once.
 */
import type { ListRange, ResourceKind } from '../kube/types.js';
import type { Shard } from './shards.js';

/** Tokens kept at most: a tick has a few per large namespace and kind. */
export const MAX_TOKENS = 512;

/**
 * A listing's range: it may stop once a page reaches `before`, with every name so far in order
 * (a page out of name order makes it read on to the end, and hand nothing on).
 */
export class NameRange implements ListRange {
  private last: string | undefined;
  private inOrder = true;
  private told = false;

  constructor(
    private readonly before: string | undefined,
    readonly startAt?: string,
    private readonly onStop?: (token: string) => void,
  ) {}

  begin(): void {
    this.last = undefined;
    this.inOrder = true;
    this.told = false;
  }

  seen(name: string): void {
    if (this.before === undefined || typeof name !== 'string') return;
    if (this.last !== undefined && name < this.last) this.inOrder = false;
    this.last = name;
  }

  reached(): boolean {
    if (this.told || !this.inOrder || this.last === undefined || this.before === undefined || this.last < this.before) return false;
    this.told = true;
    return true;
  }

  stoppedAt(token: string): void {
    this.onStop?.(token);
  }
}

/** The listing range of `shard`'s run over `kind` in `namespace`; undefined when the shard is not a range of it. */
export function rangeListing(shard: Shard, kind: ResourceKind, namespace: string, handover: Map<string, string> | undefined): ListRange | undefined {
  const part = shard.part;
  if ('namespaces' in part || part.namespace !== namespace) return undefined;
  const key = (name: string): string => `${shard.runId}\u0000${kind.group}/${kind.plural}\u0000${namespace}\u0000${name}`;
  const startAt = part.from !== undefined ? handover?.get(key(part.from)) : undefined;
  if (part.from !== undefined) handover?.delete(key(part.from));
  const to = part.to;
  return new NameRange(to, startAt, to !== undefined && handover !== undefined ? (token) => leave(handover, key(to), token) : undefined);
}

function leave(handover: Map<string, string>, key: string, token: string): void {
  handover.delete(key);
  handover.set(key, token);
  while (handover.size > MAX_TOKENS) handover.delete(handover.keys().next().value as string);
}
