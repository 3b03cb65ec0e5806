/**
 * The write limit per gateway (lib/engine/write-slots.ts withWriteSlot, GATEWAY_MAX_CONCURRENT_WRITES)
 * over the fast world's store and clock, with the store's slot calls recorded: without a limit
 * (0) a write takes no slot at all; a free slot is taken for the write and given back after it,
 * after a write that throws too; on a full gateway it waits with backoff (25 ms, doubling, at
 * most 500 ms, on the injected clock) and gives up once the wait has passed with the
 * GatewayUnavailableError naming the setting, without writing; a slot freed meanwhile is taken;
 * a slot that cannot be given back is logged and the write's result is still returned.
 * Within a pass (withSlotLeases, whose leases its writes are given): its writes to a gateway share one lease, taken in one store call
 * and given back in one, never more in flight than the slots granted; a full gateway is waited
 * for with the same backoff and wait; a lease is renewed once half the slots' ttl has passed
 * (exactly half included), so another run cannot take a live pass's slots; only writes given the
 * pass's leases use them, and once the pass's writes ended they lend nothing; a lease never
 * asked of the store gives nothing back.
 */
import t from 'tap';
import { RunContext } from '../../lib/engine/run-context.js';
import type { RunSettings } from '../../lib/engine/types.js';
import { type SlotLeases, withSlotLeases, withWriteSlot } from '../../lib/engine/write-slots.js';
import { GatewayUnavailableError, StoreUnavailableError } from '../../lib/platform/errors.js';
import type { Store } from '../../lib/store/types.js';
import { FastWorld } from './world.js';

const TTL = 60_000;

interface Slots {
  w: FastWorld;
  ctx: RunContext;
  /** the store's slot calls, "acquire <holder>" / "release <holder>"; a lease's "lease <holder> <granted>/<want>" / "give back <holder>" */
  calls: string[];
  /** the clock's sleeps, in ms */
  sleeps: number[];
  /** releases still to fail */
  failReleases: { n: number };
}

function slots(gatewayWrites: Partial<RunSettings['gatewayWrites']> = {}): Slots {
  const calls: string[] = [];
  const failReleases = { n: 0 };
  const recording = (store: Store): Store =>
    new Proxy(store, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target);
        if (typeof value !== 'function') return value;
        if (prop === 'acquireSlot')
          return async (pool: string, holder: string, limit: number, ttlMs: number) => {
            const got = await target.acquireSlot(pool, holder, limit, ttlMs);
            calls.push(`acquire ${holder}${got ? '' : ' (full)'}`);
            return got;
          };
        if (prop === 'acquireSlots')
          return async (pool: string, holder: string, want: number, limit: number, ttlMs: number) => {
            const got = await target.acquireSlots(pool, holder, want, limit, ttlMs);
            calls.push(`lease ${holder} ${got}/${want}`);
            return got;
          };
        if (prop === 'releaseSlots')
          return async (pool: string, holder: string) => {
            calls.push(`give back ${holder}`);
            return target.releaseSlots(pool, holder);
          };
        if (prop === 'releaseSlot')
          return async (pool: string, holder: string) => {
            calls.push(`release ${holder}`);
            if (failReleases.n > 0) {
              failReleases.n--;
              throw new StoreUnavailableError('store: connection lost');
            }
            return target.releaseSlot(pool, holder);
          };
        return value.bind(target);
      },
    });
  const w = new FastWorld({ store: recording, settings: { gatewayWrites: { max: 1, slotTtlMs: TTL, waitMs: 60_000, ...gatewayWrites } } });
  const sleeps: number[] = [];
  const sleep = w.clock.sleep.bind(w.clock);
  w.clock.sleep = (ms: number) => {
    sleeps.push(ms);
    return sleep(ms);
  };
  return { w, ctx: new RunContext(w.deps, { trigger: 'schedule', scope: { all: true } }), calls, sleeps, failReleases };
}

/** Whether another run could take a slot of the default gateway now (limit 1); the probe's slot is given back. */
async function slotFree(w: FastWorld): Promise<boolean> {
  const got = await w.memoryStore.acquireSlot(w.gateway.name, 'probe', 1, TTL);
  if (got) await w.memoryStore.releaseSlot(w.gateway.name, 'probe');
  return got;
}

/** The holders in the recorded calls, by order of appearance (the run's own holder is a random UUID). */
function holders(calls: readonly string[]): string[] {
  return [...new Set(calls.map((c) => c.split(' ')[1] ?? ''))];
}

t.test('no limit (GATEWAY_MAX_CONCURRENT_WRITES=0): the write runs with no slot taken or given back', async (t) => {
  const { w, ctx, calls, sleeps } = slots({ max: 0 });
  t.equal(await withWriteSlot(ctx, w.gateway, async () => 'written'), 'written');
  t.same(calls, []);
  t.same(sleeps, []);
});

t.test('a free slot is taken for the write and given back after it', async (t) => {
  const { w, ctx, calls, sleeps } = slots();
  let freeDuring: boolean | undefined;
  const result = await withWriteSlot(ctx, w.gateway, async () => {
    freeDuring = await slotFree(w);
    return 42;
  });
  t.equal(result, 42);
  t.equal(freeDuring, false, 'while the write runs the slot is taken');
  t.ok(await slotFree(w), 'given back after it');
  const [own] = holders(calls);
  t.same(calls, [`acquire ${own}`, `release ${own}`], 'one slot, given back by its holder');
  t.same(sleeps, [], 'no wait');
});

t.test('a write that throws gives its slot back too, and its error is the answer', async (t) => {
  const { w, ctx, calls } = slots();
  await t.rejects(
    withWriteSlot(ctx, w.gateway, async () => {
      throw new Error('gateway said no');
    }),
    { message: 'gateway said no' },
  );
  t.ok(await slotFree(w));
  t.match(calls, [/^acquire /, /^release /]);
});

t.test('a full gateway: backoff from 25 ms, doubling, at most 500 ms, on the clock; past the wait, GatewayUnavailableError and no write', async (t) => {
  const { w, ctx, sleeps } = slots({ waitMs: 3_000 });
  t.ok(await w.memoryStore.acquireSlot(w.gateway.name, 'another-run', 1, TTL));
  const start = w.clock.now();
  let wrote = false;
  await t.rejects(
    withWriteSlot(ctx, w.gateway, async () => {
      wrote = true;
    }),
    GatewayUnavailableError,
  );
  t.same(sleeps, [25, 50, 100, 200, 400, 500, 500, 500, 500, 500]);
  t.equal(w.clock.now() - start, 3_275, 'the first try after the wait gives up');
  t.notOk(wrote);

  const exact = slots({ waitMs: 775 });
  t.ok(await exact.w.memoryStore.acquireSlot(exact.w.gateway.name, 'another-run', 1, TTL));
  const err = await withWriteSlot(exact.ctx, exact.w.gateway, async () => 'written').catch((e: unknown) => e);
  t.type(err, GatewayUnavailableError);
  t.match((err as Error).message, /GATEWAY_MAX_CONCURRENT_WRITES/, 'naming the setting');
  t.same(exact.sleeps, [25, 50, 100, 200, 400], 'a try exactly at the end of the wait is the last');
});

t.test('a slot freed while it waits is taken', async (t) => {
  const { w, ctx, calls, sleeps } = slots({ waitMs: 3_000 });
  t.ok(await w.memoryStore.acquireSlot(w.gateway.name, 'another-run', 1, TTL));
  const sleep = w.clock.sleep;
  w.clock.sleep = async (ms: number) => {
    await sleep(ms);
    if (sleeps.length === 2) await w.memoryStore.releaseSlot(w.gateway.name, 'another-run');
  };
  t.equal(await withWriteSlot(ctx, w.gateway, async () => 'written'), 'written');
  t.same(sleeps, [25, 50]);
  const [own] = holders(calls);
  t.same(calls, [`acquire ${own} (full)`, `acquire ${own} (full)`, `acquire ${own}`, `release ${own}`]);
  t.ok(await slotFree(w));
});

t.test("a slot that cannot be given back is logged; the write's result is still the answer", async (t) => {
  const { w, ctx, failReleases } = slots();
  failReleases.n = 1;
  t.equal(await withWriteSlot(ctx, w.gateway, async () => 'written'), 'written');
  t.match(
    w.log.entries.filter((e) => e.level === 'warn'),
    [{ gateway: w.gateway.name, msg: /write slot not released/ }],
  );
  t.notOk(await slotFree(w), 'it stays taken until it expires');
  w.clock.advance(TTL);
  t.ok(await slotFree(w), 'and then is free');
});

/** `n` writes to the default gateway at once, each 100 ms on the clock; answers the most in flight at once. */
async function writes(w: FastWorld, ctx: RunContext, n: number, leases?: SlotLeases): Promise<number> {
  let inFlight = 0;
  let peak = 0;
  await Promise.all(
    Array.from({ length: n }, () =>
      withWriteSlot(
        ctx,
        w.gateway,
        async () => {
          inFlight++;
          peak = Math.max(peak, inFlight);
          await w.clock.sleep(100);
          inFlight--;
        },
        leases,
      ),
    ),
  );
  return peak;
}

t.test('a pass: its writes to a gateway share one lease, taken in one store call and given back in one', async (t) => {
  const { w, ctx, calls, sleeps } = slots({ max: 2 });
  let freeDuring: boolean | undefined;
  const peak = await withSlotLeases(ctx, new Map([[w.gateway.name, 5]]), async (leases) => {
    const done = writes(w, ctx, 5, leases);
    freeDuring = await w.memoryStore.acquireSlot(w.gateway.name, 'probe', 2, TTL);
    return done;
  });
  t.equal(peak, 2, 'two writes at once: the two slots granted');
  t.equal(freeDuring, false, 'while the pass writes, another run finds no slot');
  const [own] = holders(calls);
  t.same(calls, [`lease ${own} 2/2`, `give back ${own}`], 'one call to take them, one to give them back');
  t.same(sleeps, [100, 100, 100, 100, 100], 'no wait but the writes');
  t.equal(await w.memoryStore.acquireSlots(w.gateway.name, 'probe-2', 2, 2, TTL), 2, 'both free after the pass');
});

t.test('a pass: a lease is no larger than its writes, nor than what is free; it grows as slots free up', async (t) => {
  const { w, ctx, calls } = slots({ max: 4 });
  t.equal(await withSlotLeases(ctx, new Map([[w.gateway.name, 1]]), (leases) => writes(w, ctx, 1, leases)), 1);
  t.match(calls, [/^lease \S+ 1\/1$/, /^give back /], 'one write: one slot');
  calls.length = 0;
  t.equal(await w.memoryStore.acquireSlots(w.gateway.name, 'another-run', 3, 4, TTL), 3);
  const peak = await withSlotLeases(ctx, new Map([[w.gateway.name, 3]]), async (leases) => {
    const done = writes(w, ctx, 3, leases);
    await w.memoryStore.releaseSlots(w.gateway.name, 'another-run');
    return done;
  });
  t.ok(peak <= 3, `never more than its writes (${peak})`);
  t.match(calls[0], /^lease \S+ 1\/3$/, 'the one slot free at first');
  t.ok(calls.length >= 3, `asked again for more while its writes waited (${calls.join('; ')})`);
});

t.test('a pass: a full gateway is waited for with the same backoff; past the wait, GatewayUnavailableError and no write', async (t) => {
  const { w, ctx, sleeps, calls } = slots({ waitMs: 3_000 });
  t.ok(await w.memoryStore.acquireSlot(w.gateway.name, 'another-run', 1, TTL));
  let wrote = false;
  await t.rejects(
    withSlotLeases(ctx, new Map([[w.gateway.name, 1]]), (leases) =>
      withWriteSlot(
        ctx,
        w.gateway,
        async () => {
          wrote = true;
        },
        leases,
      ),
    ),
    GatewayUnavailableError,
  );
  t.same(sleeps, [25, 50, 100, 200, 400, 500, 500, 500, 500, 500]);
  t.notOk(wrote);
  t.match(calls.at(-1), /^give back /, 'the empty lease is given back too');
});

t.test('a pass: its lease is renewed once half the ttl has passed, so its slots outlive their first ttl', async (t) => {
  const { w, ctx, calls } = slots({ max: 1, slotTtlMs: 1_000 });
  let takenMidway: boolean | undefined;
  await withSlotLeases(ctx, new Map([[w.gateway.name, 12]]), async (leases) => {
    const done = writes(w, ctx, 12, leases);
    // 1.1 s in, past the first ttl: the lease was renewed meanwhile
    for (let i = 0; i < 11; i++) await w.clock.sleep(100);
    takenMidway = await w.memoryStore.acquireSlot(w.gateway.name, 'another-run', 1, TTL);
    return done;
  });
  t.equal(takenMidway, false, 'another run finds the slot still taken');
  const leases = calls.filter((c) => c.startsWith('lease '));
  t.ok(leases.length >= 2, `renewed (${calls.join('; ')})`);
  t.ok(
    leases.every((c) => c.endsWith(' 1/1')),
    'always the one slot',
  );
});

t.test('a pass: only the writes given its leases use them; one without takes a slot of its own; no limit, no leases', async (t) => {
  const { w, ctx, calls } = slots({ max: 2 });
  await withSlotLeases(ctx, new Map([[w.gateway.name, 1]]), async (leases) => {
    t.ok(leases, 'a limit: leases');
    await writes(w, ctx, 1, leases);
    await writes(w, ctx, 1);
  });
  const [lease, own] = holders(calls);
  t.not(lease, own);
  t.same(calls, [`lease ${lease} 1/1`, `acquire ${own}`, `release ${own}`, `give back ${lease}`], 'the write without them took and gave back its own slot');
  const none = slots({ max: 0 });
  t.equal(await withSlotLeases(none.ctx, new Map([[none.w.gateway.name, 1]]), async (leases) => leases), undefined);
  t.same(none.calls, [], 'no store call');
});

t.test('a pass: once its writes ended its leases lend nothing (a late write takes a slot of its own); a lease never asked gives nothing back', async (t) => {
  const { w, ctx, calls } = slots({ max: 2 });
  let kept: SlotLeases | undefined;
  await withSlotLeases(ctx, new Map([[w.gateway.name, 1]]), async (leases) => {
    kept = leases;
    // asked for, never used: no slot was taken, so none is given back
    leases?.of('another-gateway');
  });
  t.same(calls, [], 'a lease that never asked the store gives nothing back');
  t.equal(kept?.of(w.gateway.name), undefined, 'closed: no lease');
  await writes(w, ctx, 1, kept);
  t.match(calls, [/^acquire /, /^release /], 'the late write took and gave back a slot of its own');
});

t.test('a pass: its lease is renewed by the first write that starts once exactly half the ttl has passed', async (t) => {
  const { w, ctx, calls } = slots({ max: 1, slotTtlMs: 1_000 });
  await withSlotLeases(ctx, new Map([[w.gateway.name, 2]]), async (leases) => {
    await writes(w, ctx, 1, leases);
    // the write took 100 ms of the clock; 400 more: exactly 500 ms, half the ttl, since the lease was taken
    await w.clock.sleep(400);
    await writes(w, ctx, 1, leases);
  });
  t.equal(calls.filter((c) => c.startsWith('lease ')).length, 2, `renewed at half the ttl (${calls.join('; ')})`);
});
