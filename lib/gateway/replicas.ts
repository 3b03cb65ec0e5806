/**
 * A gateway that is several replicas (the open-source Tyk Gateway behind a Service, each pod
 * keeping the APIs written to it in files of its own): one Gateway to the engine, one client per
 * replica underneath, each replica observed and written on its own.
 *
 * - Replicas: `discover()` gives the ready replicas (the Service's EndpointSlices,
 *   endpoint-slices.ts), asked again at each `list` and at most every `refreshMs` otherwise; a
 *   replica that left is forgotten (its client closed, what was seen of it dropped), one that
 *   joined is read like the others. A failed discovery keeps the replicas known before (and
 *   says so in the log); with none known, the gateway is unavailable.
 * - Reads: `list` and `get` ask every replica. A replica that cannot be read (unreachable, a
 *   5xx; for a list, any failure) is left out of this read (logged, its error kept for
 *   `unreadable`), and nothing is written to it until a read succeeds again: nothing is decided
 *   on its account. Every replica unreadable: the read fails. A replica's answer about one
 *   object (a 4xx to a `get`) is the gateway's answer, thrown as one gateway's would be.
 * - What the engine sees: where every readable replica holds the same object, that object;
 *   where one lacks it, nothing (the engine writes it, and the write goes to those that lack
 *   it); where they hold different objects, the object of a replica that differs from what
 *   they last agreed on (so the engine finds the drift it would find on one gateway, and undoes
 *   it). Fields a replica makes up for itself (an API's `id`, its object id) are not compared;
 *   the object shown is the first replica's (replicas in discovery order). A read after our own write (the settle's read-back) answers as a
 *   single gateway would until every replica shows the write: nothing while one lacks an
 *   upsert, or the object of one that differs from what was sent; an object while one still
 *   holds a removal.
 * - Writes: an upsert goes to the replicas that lack the object or whose object differs from
 *   what is sent (on the fields sent, lib/platform/compare.ts), or, where they differ only
 *   elsewhere, from the others; where every replica held the same object, to all (the engine
 *   writes only when that object is not what it wants). A removal goes to the replicas that hold
 *   it. A replica's failed write fails the call, naming the replica, after the others are done.
 * - Reloads: each replica written since the last reload is reloaded on its own (its client's
 *   reload is the node's), the others not; asked again with nothing written since (the settle
 *   re-issuing a lost reload), the same replicas again.
 * - Certificates live in the gateway's Redis, which the replicas share: they go through one
 *   replica's certificate store.
 *
 * What was seen of each replica is kept as one hash per object (and, where replicas differ, one
 * object per distinct hash), not the objects themselves: a list the engine visits is streamed
 * (listStreamed), so a run holds one hash per object and replica, not the replicas' lists.
 */
import { createHash } from 'node:crypto';
import { sentFieldDifferences } from '../platform/compare.js';
import { describeError, errorCode, GatewayApiError, GatewayRejectedError, GatewayResponseTooLargeError, GatewayUnavailableError, GatewayUnsupportedError } from '../platform/errors.js';
import { renderJson } from '../platform/json-text.js';
import type { Logger } from '../platform/log.js';
import type { CertificateStore } from './certificates.js';
import type { Replica } from './endpoint-slices.js';
import { type Gateway, type GatewayObjectKind, type JsonObject, type ListedObject, type ListVisitor, listedObject, type ReplicaStatus, type UpsertHint } from './types.js';

export type { Replica };

/** Fields each replica makes up for itself: not compared between replicas (the first replica's are shown). */
const LOCAL_FIELDS: Partial<Record<GatewayObjectKind, readonly string[]>> = { api: ['id'] };

export interface ReplicaGatewayOptions {
  /** how long a discovery is taken as current for reads other than a list; default 2 s */
  readonly refreshMs?: number;
  /** the clock discovery's age is read on; default Date.now */
  readonly now?: () => number;
  readonly log?: Logger;
}

interface Member {
  readonly replica: Replica;
  readonly client: Gateway;
}

/** What was seen of one object: each readable replica's hash (null: absent), and where they differ, one object per hash. */
interface Seen {
  readonly hashes: ReadonlyMap<string, string | null>;
  readonly bodies?: ReadonlyMap<string, JsonObject>;
}

/** How many GETs a list makes at once for the copies replicas hold differently. */
const FETCH_CONCURRENCY = 16;

/** An object the replicas hold differently, as a streamed list found it: each replica's hash (null: absent), the first replica's copy when it has one. */
interface Differing {
  readonly id: string;
  readonly hashes: Map<string, string | null>;
  readonly body?: JsonObject;
}

/** One replica's answer: what it holds (null: absent), or why it could not be read. */
type Held = { readonly member: Member; readonly body: JsonObject | null };
type Read = Held | { readonly member: Member; readonly error: unknown };

export class ReplicaGateway implements Gateway {
  readonly reloadRequired = true;
  readonly certificates: CertificateStore;
  private members: readonly Member[] = [];
  private discoveredAt: number | undefined;
  private readonly clients = new Map<string, Member>();
  private readonly seen = new Map<string, Seen>();
  /** replicas whose last read failed: name → error */
  private readonly failed = new Map<string, unknown>();
  /** the last write of ours to an object since its kind was last listed: its read-back answers as a single gateway's would */
  private readonly ours = new Map<string, { readonly op: 'upsert'; readonly sent: JsonObject } | { readonly op: 'remove' }>();
  /** the hash every replica last held the same object under */
  private readonly agreed = new Map<string, string>();
  /** the replicas a read-back found not yet showing our last write of an object */
  private readonly behind = new Map<string, readonly string[]>();
  private written = new Set<string>();
  private lastReloaded = new Set<string>();
  private readonly refreshMs: number;
  private readonly now: () => number;

  constructor(
    readonly name: string,
    private readonly discover: () => Promise<readonly Replica[]>,
    private readonly clientFor: (replica: Replica) => Gateway,
    private readonly options: ReplicaGatewayOptions = {},
  ) {
    this.refreshMs = options.refreshMs ?? 2_000;
    this.now = options.now ?? Date.now;
    this.certificates = sharedCertificates(this.name, () => this.readableMembers());
  }

  /** The replicas of the last discovery, by name. */
  replicaNames(): string[] {
    return this.members.map((m) => m.replica.name);
  }

  /** The replicas whose last read failed, with why. */
  unreadable(): { replica: string; error: string; code: string }[] {
    return [...this.failed].map(([replica, err]) => ({ replica, error: describeError(err), code: errorCode(err) }));
  }

  replicaStatus(of?: { readonly kind: GatewayObjectKind; readonly id: string }): ReplicaStatus {
    const behind = of ? this.behind.get(keyOf(of.kind, of.id)) : undefined;
    return { replicas: this.replicaNames(), unreadable: this.unreadable(), ...(behind ? { behind } : {}) };
  }

  async list(kind: GatewayObjectKind, visit?: ListVisitor): Promise<Map<string, JsonObject>> {
    const members = await this.refresh(true);
    return visit ? this.listStreamed(kind, members, visit) : this.listWhole(kind, members);
  }

  /** Every replica's list held whole, then compared object by object (a caller that takes a map). */
  private async listWhole(kind: GatewayObjectKind, members: readonly Member[], visit?: ListVisitor): Promise<Map<string, JsonObject>> {
    const lists = await Promise.all(
      members.map(async (member) => {
        try {
          return { member, objects: await member.client.list(kind) };
        } catch (error) {
          return { member, error };
        }
      }),
    );
    const readable = lists.flatMap((l) => ('objects' in l && l.objects ? [{ member: l.member, objects: l.objects }] : []));
    for (const l of lists) if ('error' in l) this.readFailed(l.member, l.error, `list ${kind}`);
    if (readable.length === 0) throw this.noneReadable(lists.map((l) => ('error' in l ? l.error : undefined)));
    for (const r of readable) this.failed.delete(r.member.replica.name);
    const ids = new Set(readable.flatMap((r) => [...r.objects.keys()]));
    const out = new Map<string, JsonObject>();
    for (const id of ids) {
      const reads: Held[] = readable.map((r) => ({ member: r.member, body: r.objects.get(id) ?? null }));
      this.ours.delete(keyOf(kind, id));
      this.behind.delete(keyOf(kind, id));
      const body = this.observe(kind, id, reads);
      if (body === null) continue;
      if (visit) visit(id, listedObject(body));
      else out.set(id, body);
    }
    this.forgetAbsent(kind, ids);
    return out;
  }

  /**
   * The caller's visit, as the lists arrive: every replica but the first is read keeping one
   * hash per object; then the first replica's list is streamed to `visit`, each object the
   * others hold alike passed on as it is read (its digest with it), and only the objects they
   * hold differently kept, settled after the stream (the copy to show read from the replica
   * that holds it). A first replica that cannot be read is left out, and the others are read
   * whole; one failing partway fails the list, as one gateway's would.
   */
  private async listStreamed(kind: GatewayObjectKind, members: readonly Member[], visit: ListVisitor): Promise<Map<string, JsonObject>> {
    const [primary, ...others] = members as [Member, ...Member[]];
    const hashed = await Promise.all(
      others.map(async (member) => {
        const hashes = new Map<string, string>();
        try {
          await member.client.list(kind, (id, item) => {
            hashes.set(id, identityOf(kind, item));
          });
          return { member, hashes };
        } catch (error) {
          return { member, error };
        }
      }),
    );
    const readable = hashed.flatMap((h) => ('hashes' in h && h.hashes ? [{ member: h.member, hashes: h.hashes }] : []));
    for (const h of hashed) if ('error' in h) this.readFailed(h.member, h.error, `list ${kind}`);
    const name = primary.replica.name;
    const ids = new Set<string>();
    const differing: Differing[] = [];
    let started = false;
    try {
      await primary.client.list(kind, (id, item) => {
        started = true;
        ids.add(id);
        // compared without what each replica makes up (an API's own id): by the bytes where the client read them, else by content
        const hashes = new Map<string, string | null>([[name, identityOf(kind, item)]]);
        for (const o of readable) hashes.set(o.member.replica.name, o.hashes.get(id) ?? null);
        const key = keyOf(kind, id);
        this.ours.delete(key);
        this.behind.delete(key);
        const [only, ...rest] = new Set(hashes.values());
        if (rest.length === 0 && only) {
          this.seen.set(key, { hashes });
          this.agreed.set(key, only);
          visit(id, item);
          return;
        }
        // held differently: settled after the stream (the item is valid during its visit only)
        differing.push({ id, hashes, body: structuredClone(item.body()) });
      });
    } catch (err) {
      if (started) throw err;
      this.readFailed(primary, err, `list ${kind}`);
      const rest = readable.map((r) => r.member);
      if (rest.length === 0) throw this.noneReadable([err, ...hashed.map((h) => ('error' in h ? h.error : undefined))]);
      return this.listWhole(kind, rest, visit);
    }
    this.failed.delete(name);
    for (const r of readable) this.failed.delete(r.member.replica.name);
    // what only the other replicas hold: the first lacks it, so it is not shown (the engine writes it where it lacks)
    for (const o of readable) {
      for (const id of o.hashes.keys()) {
        if (ids.has(id)) continue;
        ids.add(id);
        const hashes = new Map<string, string | null>([[name, null]]);
        for (const r of readable) hashes.set(r.member.replica.name, r.hashes.get(id) ?? null);
        differing.push({ id, hashes });
      }
    }
    // each copy of what replicas hold differently, once per copy (a write compares them with what it sends)
    for (let i = 0; i < differing.length; i += FETCH_CONCURRENCY) {
      const shown = await Promise.all(differing.slice(i, i + FETCH_CONCURRENCY).map((d) => this.differingShown(kind, d, readable)));
      shown.forEach((body, j) => {
        const d = differing[i + j];
        if (d && body) visit(d.id, listedObject(body));
      });
    }
    this.forgetAbsent(kind, ids);
    return new Map();
  }

  /**
   * What is shown of an object the replicas hold differently (see observe): nothing when one
   * lacks it, else the copy that left what they agreed on. Each distinct copy is kept for the
   * write (one GET per copy the stream did not give).
   */
  private async differingShown(kind: GatewayObjectKind, d: Differing, others: readonly { member: Member }[]): Promise<JsonObject | null> {
    const key = keyOf(kind, d.id);
    this.ours.delete(key);
    this.behind.delete(key);
    const bodies = new Map<string, JsonObject>();
    const firstHash = [...d.hashes.values()][0];
    if (d.body && firstHash) bodies.set(firstHash, d.body);
    for (const [replica, h] of d.hashes) {
      if (h === null || bodies.has(h)) continue;
      const holder = others.find((o) => o.member.replica.name === replica);
      const got = holder ? await holder.member.client.get(kind, d.id).catch(() => null) : null;
      if (got) bodies.set(h, got);
    }
    this.seen.set(key, { hashes: d.hashes, bodies });
    if ([...d.hashes.values()].some((h) => h === null)) return null;
    const sizes = new Map<string, number>();
    for (const h of d.hashes.values()) if (h !== null) sizes.set(h, (sizes.get(h) ?? 0) + 1);
    const agreed = this.agreed.get(key);
    const [odd] = [...sizes].filter(([h]) => h !== agreed).sort((a, b) => a[1] - b[1]);
    return bodies.get(odd?.[0] ?? firstHash ?? '') ?? d.body ?? null;
  }

  /** What every replica read lacks is absent everywhere: what was seen of it is dropped. */
  private forgetAbsent(kind: GatewayObjectKind, ids: ReadonlySet<string>): void {
    for (const key of [...this.seen.keys()]) if (key.startsWith(`${kind}\u0000`) && !ids.has(key.slice(kind.length + 1))) this.seen.delete(key);
  }

  async get(kind: GatewayObjectKind, id: string): Promise<JsonObject | null> {
    const members = await this.refresh(false);
    const reads: Read[] = await Promise.all(
      members.map(async (member): Promise<Read> => {
        try {
          return { member, body: await member.client.get(kind, id) };
        } catch (error) {
          return { member, error };
        }
      }),
    );
    // the gateway's answer about this object (a 4xx: the id is another kind's, say) is the answer, as from one gateway
    const answer = reads.find((r): r is Extract<Read, { error: unknown }> => 'error' in r && !isDown(r.error));
    if (answer) throw answer.error;
    for (const r of reads) if ('error' in r) this.readFailed(r.member, r.error, `get ${kind} ${id}`);
    const readable = reads.filter((r): r is Held => 'body' in r);
    if (readable.length === 0) throw this.noneReadable(reads.map((r) => ('error' in r ? r.error : undefined)));
    for (const r of readable) this.failed.delete(r.member.replica.name);
    const body = this.observe(kind, id, readable);
    const key = keyOf(kind, id);
    const ours = this.ours.get(key);
    if (ours === undefined) return body;
    // a read-back: visible once every replica shows our write; the others are kept as behind
    const behind = readable.filter((r) => (ours.op === 'remove' ? r.body !== null : r.body === null || sentFieldDifferences(ours.sent, r.body).length > 0));
    if (behind.length > 0)
      this.behind.set(
        key,
        behind.map((r) => r.member.replica.name),
      );
    else this.behind.delete(key);
    if (ours.op === 'remove') return behind[0]?.body ?? null;
    if (readable.some((r) => r.body === null)) return null;
    return behind[0]?.body ?? body;
  }

  async upsert(kind: GatewayObjectKind, id: string, body: JsonObject, hint?: UpsertHint): Promise<void> {
    await this.refresh(false);
    const seen = this.seen.get(keyOf(kind, id));
    const targets = writeTargets(this.readableMembers(), seen, body);
    this.ours.set(keyOf(kind, id), { op: 'upsert', sent: body });
    await this.each(targets, `write ${kind} ${id}`, (m) => {
      const had = seen?.hashes.get(m.replica.name);
      const present = had === undefined ? hint?.present : had !== null;
      return m.client.upsert(kind, id, body, present === undefined ? {} : { present });
    });
  }

  async remove(kind: GatewayObjectKind, id: string): Promise<void> {
    await this.refresh(false);
    const seen = this.seen.get(keyOf(kind, id));
    // what a replica was seen without needs no delete; one never read, or read holding it, does
    const targets = this.readableMembers().filter((m) => seen?.hashes.get(m.replica.name) !== null);
    this.ours.set(keyOf(kind, id), { op: 'remove' });
    await this.each(targets, `remove ${kind} ${id}`, (m) => m.client.remove(kind, id));
  }

  async reload(): Promise<void> {
    // nothing written since the last reload: the settle asks again for a reload it thinks was lost
    const todo = this.written.size > 0 ? this.written : this.lastReloaded;
    this.lastReloaded = new Set(todo);
    this.written = new Set();
    const members = this.members.filter((m) => todo.has(m.replica.name));
    await this.each(members, 'reload', (m) => m.client.reload(), false);
  }

  async ping(): Promise<void> {
    const members = await this.refresh(true);
    const pings = await Promise.allSettled(members.map((m) => m.client.ping()));
    if (pings.some((p) => p.status === 'fulfilled')) return;
    throw this.noneReadable(pings.map((p) => (p.status === 'rejected' ? p.reason : undefined)));
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.clients.values()].map((m) => closeClient(m.client)));
    this.clients.clear();
  }

  /** The replicas now: discovered again for a list (a phase's start), else when the last discovery is older than refreshMs. */
  private async refresh(always: boolean): Promise<readonly Member[]> {
    const at = this.now();
    if (!always && this.discoveredAt !== undefined && at - this.discoveredAt < this.refreshMs) return this.members;
    let replicas: readonly Replica[];
    try {
      replicas = await this.discover();
    } catch (err) {
      if (this.discoveredAt === undefined) throw new GatewayUnavailableError(`gateway ${this.name}: its replicas could not be discovered: ${describeError(err)}`, { cause: err });
      this.options.log?.warn({ gateway: this.name, err: describeError(err), code: errorCode(err) }, 'replicas not discovered again; the ones known are used');
      return this.members;
    }
    this.discoveredAt = at;
    const now = new Map(replicas.map((r) => [r.url, r]));
    for (const [url, m] of this.clients) {
      if (now.has(url)) continue;
      // left: forgotten
      this.clients.delete(url);
      this.forget(m.replica.name);
      void closeClient(m.client);
      this.options.log?.info({ gateway: this.name, replica: m.replica.name }, 'replica left');
    }
    this.members = replicas.map((r) => {
      let m = this.clients.get(r.url);
      if (m && m.replica.name !== r.name) {
        // another pod at the same address: the one before is gone
        this.forget(m.replica.name);
        void closeClient(m.client);
        m = undefined;
      }
      if (!m) {
        m = { replica: r, client: this.clientFor(r) };
        this.clients.set(r.url, m);
      }
      return m;
    });
    if (this.members.length === 0) throw new GatewayUnavailableError(`gateway ${this.name} has no ready replica`);
    return this.members;
  }

  private forget(replica: string): void {
    this.failed.delete(replica);
    this.written.delete(replica);
    this.lastReloaded.delete(replica);
    for (const [key, seen] of this.seen) {
      if (!seen.hashes.has(replica)) continue;
      const hashes = new Map(seen.hashes);
      hashes.delete(replica);
      this.seen.set(key, { hashes, ...(seen.bodies ? { bodies: seen.bodies } : {}) });
    }
  }

  private readableMembers(): Member[] {
    return this.members.filter((m) => !this.failed.has(m.replica.name));
  }

  /** Keeps what each replica holds of one object; answers what the engine is to see of it (see the header). */
  private observe(kind: GatewayObjectKind, id: string, reads: readonly Held[]): JsonObject | null {
    const hashes = new Map<string, string | null>();
    const groups = new Map<string, { body: JsonObject; size: number; first: number }>();
    reads.forEach((r, i) => {
      const h = r.body === null ? null : hashOf(kind, r.body);
      hashes.set(r.member.replica.name, h);
      if (h === null || r.body === null) return;
      const g = groups.get(h);
      if (g) g.size++;
      else groups.set(h, { body: r.body, size: 1, first: i });
    });
    const key = keyOf(kind, id);
    // replicas not read now (unreadable) keep what was seen of them before
    const before = this.seen.get(key);
    for (const [replica, h] of before?.hashes ?? []) if (!hashes.has(replica) && this.failed.has(replica)) hashes.set(replica, h);
    const absent = reads.some((r) => r.body === null);
    const [only] = groups;
    if (!absent && groups.size === 1 && only) {
      this.seen.set(key, { hashes });
      this.agreed.set(key, only[0]);
      return only[1].body;
    }
    this.seen.set(key, { hashes, bodies: new Map([...groups].map(([h, g]) => [h, g.body])) });
    if (groups.size === 0) {
      this.agreed.delete(key);
      return null;
    }
    if (absent) return null;
    // all hold it, not the same: a replica that left what they agreed on, the fewest first
    const agreed = this.agreed.get(key);
    const [odd] = [...groups].filter(([h]) => h !== agreed).sort(([, a], [, b]) => a.size - b.size || b.first - a.first);
    return (odd ?? [...groups][0])?.[1].body ?? null;
  }

  private readFailed(member: Member, err: unknown, what: string): void {
    this.failed.set(member.replica.name, err);
    this.options.log?.warn(
      { gateway: this.name, replica: member.replica.name, err: describeError(err), code: errorCode(err) },
      `replica could not be read (${what}): left out of this read, nothing written to it`,
    );
  }

  private noneReadable(errors: readonly unknown[]): Error {
    const first = errors.find((e) => e !== undefined);
    if (first instanceof Error) return first;
    return new GatewayUnavailableError(`gateway ${this.name}: no replica could be read`);
  }

  /** `call` on each of `members`; when some fail, one error naming them, after the others are done. */
  private async each(members: readonly Member[], what: string, call: (m: Member) => Promise<void>, marksWritten = true): Promise<void> {
    const results = await Promise.allSettled(members.map((m) => call(m)));
    const failures: { replica: string; err: unknown }[] = [];
    results.forEach((r, i) => {
      const m = members[i] as Member;
      if (marksWritten) this.written.add(m.replica.name);
      if (r.status === 'rejected') failures.push({ replica: m.replica.name, err: r.reason });
    });
    if (failures.length === 0) return;
    const [first] = failures;
    const message = `${what} on ${failures.length} of ${members.length} replicas failed: ${failures.map((f) => `${f.replica}: ${describeError(f.err)}`).join('; ')}`;
    // the error of the first failure's kind, so the error policy treats it as that failure
    const err = first?.err;
    if (err instanceof GatewayRejectedError) throw new GatewayRejectedError(err.status, message, { cause: err });
    if (err instanceof GatewayUnsupportedError) throw new GatewayUnsupportedError(err.status, message, { cause: err });
    if (err instanceof GatewayApiError) throw new GatewayApiError(err.status, message, { cause: err });
    throw new GatewayUnavailableError(message, { cause: err });
  }
}

/** A replica down, or failing: unreachable, timed out, a 5xx (not its answer about one object). */
function isDown(err: unknown): boolean {
  return err instanceof GatewayUnavailableError || err instanceof GatewayResponseTooLargeError || (err instanceof GatewayApiError && err.status >= 500);
}

function keyOf(kind: GatewayObjectKind, id: string): string {
  return `${kind}\u0000${id}`;
}

/**
 * What a listed object is compared between replicas by: its bytes without its own id
 * (`sameAs`, nothing parsed) where the client read them, else hashOf its content.
 */
function identityOf(kind: GatewayObjectKind, item: ListedObject): string {
  return item.sameAs ? `s:${item.sameAs()}` : hashOf(kind, item.body());
}

/** The hash replicas are compared by: of `body` without the fields its replica made up for itself. */
function hashOf(kind: GatewayObjectKind, body: JsonObject): string {
  const local = LOCAL_FIELDS[kind] ?? [];
  const compared = local.some((f) => f in body) ? Object.fromEntries(Object.entries(body).filter(([k]) => !local.includes(k))) : body;
  return createHash('sha256')
    .update(renderJson(compared, { sortKeys: true }))
    .digest('base64url');
}

/**
 * Which readable replicas an upsert of `body` goes to (see the header): never one whose last
 * read failed; one never seen, or lacking it, always; where replicas differed, those whose
 * object differs from `body` on the fields sent, else those outside the largest group; where
 * they held the same object, all.
 */
function writeTargets(readable: readonly Member[], seen: Seen | undefined, body: JsonObject): Member[] {
  if (seen === undefined || seen.bodies === undefined) return [...readable];
  const bodies = seen.bodies;
  const unknownOrAbsent = (m: Member) => {
    const h = seen.hashes.get(m.replica.name);
    return h === undefined || h === null;
  };
  const outOfLine = readable.filter((m) => {
    if (unknownOrAbsent(m)) return true;
    const held = bodies.get(seen.hashes.get(m.replica.name) as string);
    return held === undefined || sentFieldDifferences(body, held).length > 0;
  });
  if (outOfLine.length > 0) return outOfLine;
  // in line on what is sent, different elsewhere: the replicas outside the largest group
  const sizes = new Map<string, number>();
  for (const h of seen.hashes.values()) if (h !== null) sizes.set(h, (sizes.get(h) ?? 0) + 1);
  const largest = [...sizes].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))[0]?.[0];
  const odd = readable.filter((m) => seen.hashes.get(m.replica.name) !== largest);
  return odd.length > 0 ? odd : [...readable];
}

async function closeClient(client: Gateway): Promise<void> {
  await (client as { close?: () => Promise<void> }).close?.();
}

/** The certificate store of the replicas: one store (the gateway's Redis), reached through the first replica that can be read. */
function sharedCertificates(name: string, members: () => readonly Member[]): CertificateStore {
  const store = async (): Promise<CertificateStore> => {
    const found = members().find((m) => m.client.certificates !== undefined)?.client.certificates;
    if (!found) throw new GatewayUnavailableError(`gateway ${name}: no replica with a certificate store can be reached`);
    return found;
  };
  return {
    uploadCertificate: async (pem, orgId) => (await store()).uploadCertificate(pem, orgId),
    hasCertificate: async (id) => (await store()).hasCertificate(id),
    removeCertificate: async (id, orgId) => (await store()).removeCertificate(id, orgId),
    listCertificates: async (orgId) => (await store()).listCertificates(orgId),
  };
}
