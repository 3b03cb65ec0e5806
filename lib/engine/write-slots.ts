/**
 * The write limit per gateway (GATEWAY_MAX_CONCURRENT_WRITES): every gateway write of a run
 * (an upsert, a remove, a certificate's upload or removal) takes one of the gateway's slots in
 * the store, shared by every invocation, and gives it back when it ends.
 * Throws GatewayUnavailableError when no slot frees up within the wait; the write's own errors.
 */
import { randomUUID } from 'node:crypto';
import type { Gateway } from '../gateway/types.js';
import { describeError, GatewayUnavailableError } from '../platform/errors.js';
import type { RunContext } from './run-context.js';

/**
 * Runs one gateway write in one of the gateway's write slots (GATEWAY_MAX_CONCURRENT_WRITES,
 * shared by every invocation through the store), waiting for a free one with backoff; the slot
 * is given back when the write ends. No slot within waitMs: GatewayUnavailableError (retried
 * with backoff like a gateway that does not answer).
 */
export async function withWriteSlot<T>(ctx: RunContext, gw: Gateway, write: () => Promise<T>): Promise<T> {
  const { max, slotTtlMs, waitMs } = ctx.settings.gatewayWrites;
  if (max <= 0) return write();
  const { store, clock } = ctx.deps;
  const holder = randomUUID();
  const giveUpAt = clock.now() + waitMs;
  for (let delay = 25; !(await store.acquireSlot(gw.name, holder, max, slotTtlMs)); delay = Math.min(delay * 2, 500)) {
    if (clock.now() >= giveUpAt) throw new GatewayUnavailableError(`gateway ${gw.name}: ${max} writes already in flight (GATEWAY_MAX_CONCURRENT_WRITES); no slot within ${waitMs} ms`);
    await clock.sleep(delay);
  }
  try {
    return await write();
  } finally {
    await store.releaseSlot(gw.name, holder).catch((err: unknown) => ctx.log.warn({ gateway: gw.name, err: describeError(err) }, 'write slot not released; it expires'));
  }
}
