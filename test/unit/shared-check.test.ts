/**
 * SharedCheck (lib/platform/shared-check.ts): one check in flight for all callers, its result reused
 * for maxAgeMs from its start (a failure too), then a new one; on a clock the test moves.
 */
import t from 'tap';
import type { Clock } from '../../lib/platform/clock.js';
import { SharedCheck } from '../../lib/platform/shared-check.js';

class ManualClock implements Clock {
  ms = 1_000_000;
  now(): number {
    return this.ms;
  }
  sleep(): Promise<void> {
    return Promise.resolve();
  }
}

/** A check the test settles by hand, counting how often it was started. */
function heldCheck() {
  const started: { resolve: (v: string) => void; reject: (e: Error) => void }[] = [];
  const check = () =>
    new Promise<string>((resolve, reject) => {
      started.push({ resolve, reject });
    });
  return { check, started };
}

t.test('callers while a check runs share it; within maxAgeMs of its start they get its result; after, a new check', async (t) => {
  const clock = new ManualClock();
  const { check, started } = heldCheck();
  const shared = new SharedCheck(clock, 5_000, check);
  const burst = Array.from({ length: 50 }, () => shared.get());
  t.equal(started.length, 1, 'one check for 50 callers');
  clock.ms += 60_000;
  const late = shared.get();
  t.equal(started.length, 1, 'a check still running is joined however old it is');
  started[0]?.resolve('ready');
  t.same(
    await Promise.all([...burst, late]),
    Array.from({ length: 51 }, () => 'ready'),
  );
  // it started 60 s ago: too old now
  const next = shared.get();
  t.equal(started.length, 2, 'a settled check older than maxAgeMs is not reused');
  started[1]?.resolve('ready again');
  t.equal(await next, 'ready again');
  clock.ms += 5_000;
  t.equal(await shared.get(), 'ready again', 'at exactly maxAgeMs it is reused');
  t.equal(started.length, 2);
  clock.ms += 1;
  void shared.get();
  t.equal(started.length, 3, 'one ms later, a new check');
});

t.test('a failed check is shared and reused like a success', async (t) => {
  const clock = new ManualClock();
  const { check, started } = heldCheck();
  const shared = new SharedCheck(clock, 5_000, check);
  const a = shared.get();
  const b = shared.get();
  started[0]?.reject(new Error('redis down'));
  await t.rejects(a, /redis down/);
  await t.rejects(b, /redis down/);
  clock.ms += 4_000;
  await t.rejects(shared.get(), /redis down/, 'reused within maxAgeMs');
  t.equal(started.length, 1);
  clock.ms += 1_001;
  const again = shared.get();
  t.equal(started.length, 2, 'then checked again');
  started[1]?.resolve('ready');
  t.equal(await again, 'ready');
});
