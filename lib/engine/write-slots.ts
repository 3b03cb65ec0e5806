/**
 * The write limit per gateway (GATEWAY_MAX_CONCURRENT_WRITES): every gateway write of a run
 * (an upsert, a remove, a certificate's upload or removal) holds one of the gateway's slots in
 * the store, shared by every invocation, while it runs.
 *
 * - with a pass's leases (withSlotLeases hands them to the pass's writes, apply.ts, which pass
 *   them on to each withWriteSlot): the pass holds a lease per gateway, up
 *   to min(limit, concurrency, its writes to that gateway) slots taken in ONE store call
 *   (acquireSlots) and given back in one (releaseSlots) when the pass's writes end; each write
 *   uses one of the lease's slots, waiting in the process for one of the pass's own writes to
 *   end when all are in use. The lease is renewed (the same acquireSlots call, which also takes
 *   more while some are free) when a write starts once half the slots' ttl has passed since the
 *   last renewal, so slots held by a live pass do not expire under it, and a dead holder's
 *   expire after slotTtlMs as before. A lease smaller than wanted (other invocations held slots)
 *   asks for more when a write ends while others wait; one that holds none (every slot is
 *   another's) asks again with backoff, as a single write does.
 * - without (a write outside a pass): one slot per write (acquireSlot, releaseSlot).
 * Across invocations the slots of a gateway never exceed the limit (the store's guarantee);
 * a write whose slot expired while it ran (it outlived slotTtlMs) is no longer counted, as
 * before. Throws GatewayUnavailableError when no slot frees up within the wait; the write's
 * own errors; StoreUnavailableError when the store cannot be asked.
 */
import { randomUUID } from 'node:crypto';
import type { Gateway } from '../gateway/types.js';
import { describeError, GatewayUnavailableError } from '../platform/errors.js';
import type { RunContext } from './run-context.js';

/** A pass's write slots, per gateway (withSlotLeases): what its writes give withWriteSlot. */
export interface SlotLeases {
  /** the pass's lease on `gateway`; none once the pass's writes ended */
  of(gateway: string): SlotLease | undefined;
}

/** Slots of one gateway held for a pass: one is taken for each write, and given back when it ends. */
export interface SlotLease {
  take(): Promise<void>;
  give(): void;
}

/**
 * Runs one gateway write in one of the gateway's write slots (GATEWAY_MAX_CONCURRENT_WRITES,
 * shared by every invocation through the store): one of `leases`' (the pass it belongs to),
 * else a slot of its own, waiting for a free one with backoff; the slot is given back when the
 * write ends. No slot within waitMs: GatewayUnavailableError (retried with backoff like a
 * gateway that does not answer).
 */
export async function withWriteSlot<T>(ctx: RunContext, gw: Gateway, write: () => Promise<T>, leases?: SlotLeases): Promise<T> {
  const { max, slotTtlMs, waitMs } = ctx.settings.gatewayWrites;
  if (max <= 0) return write();
  const lease = leases?.of(gw.name);
  if (lease) {
    await lease.take();
    try {
      return await write();
    } finally {
      lease.give();
    }
  }
  const { store, clock } = ctx.deps;
  const holder = randomUUID();
  const giveUpAt = clock.now() + waitMs;
  for (let delay = 25; !(await store.acquireSlot(gw.name, holder, max, slotTtlMs)); delay = Math.min(delay * 2, 500)) {
    if (clock.now() >= giveUpAt) throw noSlot(gw.name, max, waitMs);
    await clock.sleep(delay);
  }
  try {
    return await write();
  } finally {
    await store.releaseSlot(gw.name, holder).catch((err: unknown) => ctx.log.warn({ gateway: gw.name, err: describeError(err) }, 'write slot not released; it expires'));
  }
}

/**
 * Runs `body` (a pass's writes) with a lease of write slots per gateway, which it gives each of
 * its writes (withWriteSlot): `expected` gives, per gateway name, how many writes the pass
 * means to make there (the lease's size is at most that; a gateway not named gets up to
 * `concurrency`). Every lease is given back when `body` ends, also when it throws; a lease that
 * cannot be given back is logged (its slots expire). Without a limit, `body` gets none.
 */
export async function withSlotLeases<T>(ctx: RunContext, expected: ReadonlyMap<string, number>, body: (leases: SlotLeases | undefined) => Promise<T>): Promise<T> {
  if (ctx.settings.gatewayWrites.max <= 0) return body(undefined);
  const leases = new Leases(ctx, expected);
  try {
    return await body(leases);
  } finally {
    await leases.close();
  }
}

function noSlot(gateway: string, max: number, waitMs: number): GatewayUnavailableError {
  return new GatewayUnavailableError(`gateway ${gateway}: ${max} writes already in flight (GATEWAY_MAX_CONCURRENT_WRITES); no slot within ${waitMs} ms`);
}

/** A pass's leases, one per gateway written to, made on its first write there. */
class Leases implements SlotLeases {
  private readonly byGateway = new Map<string, Lease>();

  constructor(
    private readonly ctx: RunContext,
    private readonly expected: ReadonlyMap<string, number>,
  ) {}

  private closed = false;

  /** The pass's lease on `gateway`; none once the pass's writes ended (a write still coming takes a slot of its own). */
  of(gateway: string): Lease | undefined {
    if (this.closed) return undefined;
    let lease = this.byGateway.get(gateway);
    if (lease === undefined) {
      const { max } = this.ctx.settings.gatewayWrites;
      const wanted = this.expected.get(gateway) ?? this.ctx.settings.concurrency;
      lease = new Lease(this.ctx, gateway, Math.max(1, Math.min(max, this.ctx.settings.concurrency, wanted)));
      this.byGateway.set(gateway, lease);
    }
    return lease;
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.byGateway.values()].map((lease) => lease.close()));
  }
}

/** Up to `size` slots of one gateway for one pass: taken and renewed in one store call, shared by its writes. */
class Lease implements SlotLease {
  private readonly holder = randomUUID();
  /** slots the store granted at the last ask */
  private held = 0;
  private inUse = 0;
  private asked = false;
  private renewedAt = Number.NEGATIVE_INFINITY;
  private asking: Promise<void> | undefined;
  private readonly waiters: (() => void)[] = [];

  constructor(
    private readonly ctx: RunContext,
    private readonly pool: string,
    private readonly size: number,
  ) {}

  /** Takes one of the lease's slots for a write, asking the store for (more of) them when needed. */
  async take(): Promise<void> {
    const { clock } = this.ctx.deps;
    const { slotTtlMs, waitMs, max } = this.ctx.settings.gatewayWrites;
    const giveUpAt = clock.now() + waitMs;
    let delay = 25;
    for (;;) {
      const stale = clock.now() - this.renewedAt >= slotTtlMs / 2;
      // all in use but fewer than wanted: ask for more once before waiting for a sibling
      if (stale || (this.inUse >= this.held && this.held < this.size)) {
        const before = this.held;
        await this.ask();
        if (this.inUse < this.held) {
          this.inUse++;
          return;
        }
        if (this.held === before && this.inUse > 0) {
          await this.sibling();
          continue;
        }
      } else if (this.inUse < this.held) {
        this.inUse++;
        return;
      } else {
        await this.sibling();
        continue;
      }
      // none of ours free and none granted: another invocation holds the gateway's slots
      if (this.inUse > 0) {
        await this.sibling();
        continue;
      }
      if (clock.now() >= giveUpAt) throw noSlot(this.pool, max, waitMs);
      await clock.sleep(delay);
      delay = Math.min(delay * 2, 500);
    }
  }

  /** A write ended: its slot goes to a waiting write of the pass. */
  give(): void {
    this.inUse--;
    this.waiters.shift()?.();
    // writes still wait and the lease is smaller than wanted (others held slots when it was taken): try to grow it
    if (this.waiters.length > 0 && this.held < this.size && this.asking === undefined) this.ask().catch(() => undefined);
  }

  async close(): Promise<void> {
    if (!this.asked) return;
    this.held = 0;
    await this.ctx.deps.store.releaseSlots(this.pool, this.holder).catch((err: unknown) => this.ctx.log.warn({ gateway: this.pool, err: describeError(err) }, 'write slots not released; they expire'));
  }

  /** Renews the lease and takes free slots up to its size: one store call, shared by the writes asking at once. */
  private ask(): Promise<void> {
    this.asking ??= (async () => {
      try {
        const { max, slotTtlMs } = this.ctx.settings.gatewayWrites;
        const at = this.ctx.deps.clock.now();
        const before = this.held;
        this.asked = true;
        this.held = await this.ctx.deps.store.acquireSlots(this.pool, this.holder, this.size, max, slotTtlMs);
        this.renewedAt = at;
        // writes waiting for a sibling may take the slots granted now (none more: they wait on)
        for (const wake of this.waiters.splice(0, Math.max(0, this.held - before))) wake();
      } finally {
        this.asking = undefined;
      }
    })();
    return this.asking;
  }

  /** Waits for one of the pass's own writes on this gateway to end (or for the lease to grow). */
  private sibling(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }
}
