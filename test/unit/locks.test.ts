/**
 * lib/engine/locks.ts on its own, over a MemoryStore: who is refused, the dirty passes and their
 * bound, stopping, failures, and the renewal (real timers of a few ms, as the helper's are: a
 * pass waits for the renewals it needs, never for a time), including renewals that cross a
 * release or the end (a slow store: what is given back is neither renewed nor called lost), and
 * the batches: locks taken and given back LOCK_CHUNK keys per store call.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { LOCK_CHUNK, type LockContext, underLocks } from '../../lib/engine/locks.js';
import { StoreUnavailableError } from '../../lib/platform/errors.js';
import { MemoryStore } from '../../lib/store/memory.js';
import type { LockEntry, LockOutcome, ReleaseOutcome, Store } from '../../lib/store/types.js';
import { DelegatingStore } from '../fixtures/delegating-store.js';
import { FakeClock } from '../harness/clock.js';
import { capturingLogger } from '../harness/log.js';

/** A store that keeps every renewal (keys and answers), can fail them, and can fail a lock. */
class WatchedStore extends DelegatingStore {
  readonly renewals: { keys: string[]; ours: boolean[] }[] = [];
  failRenewals = 0;
  failLockOf: string | undefined;
  /** renewals asked for (answered or not) */
  asked = 0;
  private firstAsked = () => {};
  private readonly askedOnce = new Promise<void>((resolve) => {
    this.firstAsked = resolve;
  });
  /** while set, a renewal waits for it before it reaches the store (a slow round trip) */
  hold: Promise<void> | undefined;
  /** while set, a release waits for it */
  holdRelease: Promise<void> | undefined;
  private waiting: { n: number; wake: () => void }[] = [];

  override async lock(key: string, token: string, ttlMs: number): Promise<LockOutcome> {
    if (key === this.failLockOf) throw new StoreUnavailableError('memory store lock failed: connection lost');
    return super.lock(key, token, ttlMs);
  }
  override async release(key: string, token: string): Promise<ReleaseOutcome> {
    await this.holdRelease;
    return super.release(key, token);
  }
  override async renew(locks: readonly { key: string; token: string }[], ttlMs: number): Promise<boolean[]> {
    this.asked++;
    this.firstAsked();
    try {
      await this.hold;
      if (this.failRenewals > 0) {
        this.failRenewals--;
        throw new StoreUnavailableError('memory store renew failed: connection lost');
      }
      const ours = await super.renew(locks, ttlMs);
      this.renewals.push({ keys: locks.map((l) => l.key), ours });
      return ours;
    } finally {
      this.waiting = this.waiting.filter((w) => (this.renewals.length >= w.n ? (w.wake(), false) : true));
    }
  }
  /** Resolves once a renewal has been asked for (answered or not; kept up meanwhile as `renewed`). */
  renewalAsked(): Promise<void> {
    const alive = setInterval(() => undefined, 1_000);
    return this.askedOnce.finally(() => clearInterval(alive));
  }
  /** Resolves once `n` renewals in all have answered (the renewal's timers are unref'd: this keeps the process up meanwhile). */
  renewed(n: number): Promise<void> {
    if (this.renewals.length >= n) return Promise.resolve();
    const alive = setInterval(() => undefined, 1_000);
    return new Promise<void>((wake) => this.waiting.push({ n, wake })).finally(() => clearInterval(alive));
  }
}

function setUp(settings: Partial<LockContext['settings']> = {}, clock = new FakeClock()) {
  const memory = new MemoryStore({ clock });
  const store = new WatchedStore(memory);
  const log = capturingLogger();
  let stop = false;
  const ctx: LockContext = {
    deps: { store: store as Store },
    settings: { concurrency: 4, lockTtlMs: 10_000, lockRenewMs: 0, maxDirtyPasses: 3, ...settings },
    log,
    stopping: () => stop,
  };
  const held = async (key: string) => {
    const outcome = await memory.lock(key, 'probe', 1_000);
    if (outcome === 'acquired') await memory.forceRelease(key, 'probe');
    return outcome === 'marked-dirty';
  };
  return { ctx, store, memory, log, clock, held, stopping: () => (stop = true) };
}

const warnings = (log: ReturnType<typeof capturingLogger>, msg: string) => log.entries.filter((e) => e.msg === msg);

t.test('a key another holder has is refused and marked dirty there; the others run once and are released', async (t) => {
  const { ctx, memory, held, log } = setUp();
  await memory.lock('k/b', 'other', 60_000);
  const passes: string[][] = [];
  const refused = await underLocks(
    ctx,
    ['k/a', 'k/b', 'k/c'],
    (k) => k,
    async (keys) => {
      passes.push([...keys].sort());
    },
  );
  t.same(refused, ['k/b']);
  t.same(passes, [['k/a', 'k/c']]);
  t.same(warnings(log, 'lock expired before release'), [], 'released in time: nothing logged');
  t.equal(await memory.release('k/b', 'other'), 'dirty', 'the holder is told to run it again');
  t.notOk(await held('k/a'));
  t.notOk(await held('k/c'));
});

t.test('items are keyed by keyOf; nothing locked, nothing run', async (t) => {
  const { ctx, memory } = setUp();
  await memory.lock('x/1', 'other', 60_000);
  let ran = 0;
  const refused = await underLocks(
    ctx,
    [{ id: 1 }],
    (o) => `x/${o.id}`,
    async () => {
      ran++;
    },
  );
  t.same(refused, [{ id: 1 }]);
  t.equal(ran, 0, 'no pass without a held lock');
});

t.test('a key marked dirty during a pass runs again alone; marked on every pass, it runs maxDirtyPasses times and its mark stays', async (t) => {
  const { ctx, memory, held } = setUp({ maxDirtyPasses: 3 });
  const passes: string[][] = [];
  await underLocks(
    ctx,
    ['k/a', 'k/b'],
    (k) => k,
    async (keys) => {
      passes.push([...keys].sort());
      await memory.lock('k/a', `event-${passes.length}`, 60_000);
    },
  );
  t.same(passes, [['k/a', 'k/b'], ['k/a'], ['k/a']], 'three passes, the released key not again');
  t.notOk(await held('k/b'));
  // the last pass gave the lock back regardless: the next holder finds the mark at its release
  t.equal(await memory.lock('k/a', 'next-run', 60_000), 'acquired');
  t.equal(await memory.release('k/a', 'next-run'), 'dirty', 'the mark is left for the next run');
});

t.test('stopping: no further pass; the lock is given back and the dirty mark stays', async (t) => {
  const { ctx, memory, stopping } = setUp({ maxDirtyPasses: 5 });
  let passes = 0;
  await underLocks(
    ctx,
    ['k/a'],
    (k) => k,
    async () => {
      passes++;
      await memory.lock('k/a', 'event', 60_000);
      stopping();
    },
  );
  t.equal(passes, 1);
  t.equal(await memory.lock('k/a', 'next-run', 60_000), 'acquired');
  t.equal(await memory.release('k/a', 'next-run'), 'dirty');
});

t.test('a pass that throws: every lock is given back, then the error is thrown', async (t) => {
  const { ctx, held } = setUp();
  await t.rejects(
    underLocks(
      ctx,
      ['k/a', 'k/b'],
      (k) => k,
      async () => {
        throw new StoreUnavailableError('gone');
      },
    ),
    StoreUnavailableError,
  );
  t.notOk(await held('k/a'));
  t.notOk(await held('k/b'));
});

t.test('a lock that throws: those taken are given back, then the error is thrown; nothing runs', async (t) => {
  const { ctx, store, held } = setUp({ concurrency: 1 });
  store.failLockOf = 'k/b';
  let ran = 0;
  await t.rejects(
    underLocks(
      ctx,
      ['k/a', 'k/b'],
      (k) => k,
      async () => {
        ran++;
      },
    ),
    StoreUnavailableError,
  );
  t.equal(ran, 0);
  t.notOk(await held('k/a'), 'k/a was taken, and given back');
});

t.test('a lock that expired before its release is logged', async (t) => {
  const { ctx, clock, log } = setUp({ lockTtlMs: 100 });
  await underLocks(
    ctx,
    ['k/a'],
    (k) => k,
    async () => {
      clock.advance(101);
    },
  );
  t.match(warnings(log, 'lock expired before release'), [{ level: 'warn', key: 'k/a' }]);
});

t.test('no renewal with lockRenewMs 0', async (t) => {
  const { ctx, store } = setUp({ lockRenewMs: 0 });
  await underLocks(
    ctx,
    ['k/a'],
    (k) => k,
    () => sleep(20),
  );
  t.same(store.renewals, []);
});

t.test('renewal: the held locks every lockRenewMs while a pass runs; a released one no more; none after the end', async (t) => {
  const { ctx, store, memory, log } = setUp({ lockRenewMs: 5 });
  let pass = 0;
  await underLocks(
    ctx,
    ['k/a', 'k/b'],
    (k) => k,
    async () => {
      pass++;
      const before = store.renewals.length;
      await store.renewed(before + 2);
      if (pass === 1) await memory.lock('k/a', 'event', 60_000);
    },
  );
  t.equal(pass, 2);
  t.ok(store.renewals.length >= 4);
  t.same(store.renewals[0], { keys: ['k/a', 'k/b'], ours: [true, true] }, 'both while the first pass runs');
  t.same(store.renewals.at(-1), { keys: ['k/a'], ours: [true] }, 'only the dirty one during its second pass');
  const after = store.renewals.length;
  await sleep(30);
  t.equal(store.renewals.length, after, 'stopped with the last release');
  t.same(warnings(log, 'lock lost while held'), []);
});

t.test('renewal: a lock found gone is logged; a failed renewal is logged and tried again', async (t) => {
  const { ctx, store, clock, log } = setUp({ lockRenewMs: 5, lockTtlMs: 100 });
  store.failRenewals = 1;
  await underLocks(
    ctx,
    ['k/a'],
    (k) => k,
    async () => {
      await store.renewed(1);
      t.match(warnings(log, 'could not renew locks'), [{ level: 'warn', code: 'STORE_UNAVAILABLE' }], 'the failure is logged, the next beat renews');
      // the lock's TTL passes between two beats (a stalled process): the next renewal finds it gone
      clock.advance(101);
      await store.renewed(2);
    },
  );
  t.match(store.renewals[1], { keys: ['k/a'], ours: [false] });
  t.match(warnings(log, 'lock lost while held')[0], { level: 'warn', key: 'k/a' });
  t.match(warnings(log, 'lock expired before release'), [{ level: 'warn', key: 'k/a' }]);
});

t.test('renewal: a lock released while its renewal was on the way is not lost; the one kept for a dirty pass is renewed', async (t) => {
  const { ctx, store, memory, log } = setUp({ lockRenewMs: 5 });
  let open = () => {};
  store.hold = new Promise<void>((resolve) => {
    open = resolve;
  });
  let pass = 0;
  await underLocks(
    ctx,
    ['k/a', 'k/b'],
    (k) => k,
    async () => {
      pass++;
      if (pass === 1) {
        // a renewal of both is on its way; k/a is marked dirty, k/b will be released meanwhile
        await store.renewalAsked();
        await memory.lock('k/a', 'event', 60_000);
        return;
      }
      // the second pass (k/a only): the renewal arrives now, after k/b's release
      store.hold = undefined;
      open();
      await store.renewed(1);
    },
  );
  t.same(store.renewals[0], { keys: ['k/a', 'k/b'], ours: [true, false] }, 'k/b was no longer there to renew');
  t.same(warnings(log, 'lock lost while held'), [], 'not lost: given back');
});

t.test('renewal: one on its way when a pass throws answers after the locks were given back: nothing logged, no further renewal', async (t) => {
  const { ctx, store, log } = setUp({ lockRenewMs: 5 });
  let open = () => {};
  store.hold = new Promise<void>((resolve) => {
    open = resolve;
  });
  await t.rejects(
    underLocks(
      ctx,
      ['k/a'],
      (k) => k,
      async () => {
        await store.renewalAsked();
        throw new StoreUnavailableError('gone');
      },
    ),
    StoreUnavailableError,
  );
  store.hold = undefined;
  open();
  await store.renewed(1);
  t.same(store.renewals[0], { keys: ['k/a'], ours: [false] }, 'the lock was given back before the renewal reached the store');
  await sleep(30);
  t.equal(store.asked, 1, 'no renewal after the end');
  t.same(warnings(log, 'lock lost while held'), []);
});

t.test('renewal: a lock on its way back (its release slow) is no longer renewed', async (t) => {
  const { ctx, store } = setUp({ lockRenewMs: 5 });
  let open = () => {};
  let during = 0;
  let passEnded = () => {};
  const ended = new Promise<void>((resolve) => {
    passEnded = resolve;
  });
  const done = underLocks(
    ctx,
    ['k/a'],
    (k) => k,
    async () => {
      await store.renewed(1);
      during = store.renewals.length;
      store.holdRelease = new Promise<void>((resolve) => {
        open = resolve;
      });
      passEnded();
    },
  );
  // beats go on while the release waits
  await ended;
  await store.renewed(during + 2);
  store.holdRelease = undefined;
  open();
  await done;
  t.ok(during >= 1);
  t.same(store.renewals[0], { keys: ['k/a'], ours: [true] }, 'renewed while the pass ran');
  t.same(
    store.renewals.slice(during).map((r) => r.keys),
    store.renewals.slice(during).map(() => []),
    'not while it was being given back',
  );
});

t.test('locks are taken and given back in batches of LOCK_CHUNK keys, one store call each; a dirty one kept for its next pass', async (t) => {
  const { ctx, memory, held } = setUp();
  const sizes: Record<string, number[]> = { lockAll: [], releaseAll: [], forceReleaseAll: [] };
  const watched: Store = Object.assign(Object.create(memory) as Store, {
    lockAll: (entries: readonly LockEntry[], ttlMs: number) => (sizes.lockAll?.push(entries.length), memory.lockAll(entries, ttlMs)),
    releaseAll: (entries: readonly LockEntry[]) => (sizes.releaseAll?.push(entries.length), memory.releaseAll(entries)),
    forceReleaseAll: (entries: readonly LockEntry[]) => (sizes.forceReleaseAll?.push(entries.length), memory.forceReleaseAll(entries)),
  });
  const keys = Array.from({ length: 2 * LOCK_CHUNK + 7 }, (_, i) => `k/${i}`);
  await memory.lock('k/3', 'other', 60_000);
  const passes: number[] = [];
  const refused = await underLocks(
    { ...ctx, deps: { store: watched } },
    keys,
    (k) => k,
    async (held) => {
      passes.push(held.length);
      if (passes.length === 1) await memory.lock('k/9', 'event', 60_000);
    },
  );
  t.same(refused, ['k/3'], 'the key another holds is refused');
  t.same(
    [...(sizes.lockAll ?? [])].sort((a, b) => b - a),
    [LOCK_CHUNK, LOCK_CHUNK, 7],
    `${keys.length} keys locked in 3 calls`,
  );
  t.same(passes, [keys.length - 1, 1], 'k/9, marked dirty in the first pass, runs again alone');
  t.same(
    [...(sizes.releaseAll ?? [])].sort((a, b) => b - a),
    [LOCK_CHUNK, LOCK_CHUNK, 6, 1],
    'given back in 3 calls, then the dirty one',
  );
  t.same(sizes.forceReleaseAll, [], 'nothing forced');
  t.notOk(await held('k/0'));
  t.notOk(await held('k/9'));
  t.notOk(await held(`k/${keys.length - 1}`));
});

t.test('a batch of locks that fails: every key of it and every lock taken is given back, then the error is thrown', async (t) => {
  const { ctx, memory, held } = setUp({ concurrency: 1 });
  let calls = 0;
  const failing: Store = Object.assign(Object.create(memory) as Store, {
    lockAll: async (entries: readonly LockEntry[], ttlMs: number) => {
      calls++;
      // the second batch reaches the store, then its answer is lost
      const outcomes = await memory.lockAll(entries, ttlMs);
      if (calls === 2) throw new StoreUnavailableError('memory store lockAll failed: connection lost');
      return outcomes;
    },
  });
  const keys = Array.from({ length: LOCK_CHUNK + 3 }, (_, i) => `k/${i}`);
  let ran = false;
  await t.rejects(
    underLocks(
      { ...ctx, deps: { store: failing } },
      keys,
      (k) => k,
      async () => {
        ran = true;
      },
    ),
    StoreUnavailableError,
  );
  t.notOk(ran, 'nothing runs');
  t.notOk(await held('k/0'), 'the first batch given back');
  t.notOk(await held(`k/${LOCK_CHUNK + 2}`), 'the failed batch given back, although its answer was lost');
});
