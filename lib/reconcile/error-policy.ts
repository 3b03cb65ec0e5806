/**
 * The error policy: what a failure means for the object. Pure.
 *
 * - The gateway or our validation rejecting the spec is terminal: recorded as `invalid`, and
 *   retried only when the spec changes (plan sees a new hash).
 * - Everything else (gateway 5xx, timeouts, dropped connections, API-server errors) is
 *   transient: recorded as `failed` with exponential backoff; scheduled runs leave the object
 *   alone until `retryAt`, then retry it. A spec change retries at once.
 */
import { GatewayRejectedError, InvalidSpecError } from '../errors.js';
import type { SyncResult } from '../store/types.js';

export interface BackoffSettings {
  baseMs: number;
  maxMs: number;
}

export const DEFAULT_BACKOFF: BackoffSettings = { baseMs: 10_000, maxMs: 5 * 60_000 };

export interface FailureDisposition {
  result: Extract<SyncResult, 'failed' | 'invalid'>;
  /** epoch ms; absent for terminal failures */
  retryAt?: number;
}

export function isTerminal(err: unknown): boolean {
  return err instanceof GatewayRejectedError || err instanceof InvalidSpecError;
}

/** Backoff before retry number `failures` (1 = after the first failure). */
export function backoffMs(failures: number, settings: BackoffSettings = DEFAULT_BACKOFF): number {
  const exp = Math.min(Math.max(failures, 1) - 1, 30);
  return Math.min(settings.baseMs * 2 ** exp, settings.maxMs);
}

export function dispose(err: unknown, failures: number, now: number, settings: BackoffSettings = DEFAULT_BACKOFF): FailureDisposition {
  if (isTerminal(err)) return { result: 'invalid' };
  return { result: 'failed', retryAt: now + backoffMs(failures, settings) };
}
