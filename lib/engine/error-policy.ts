/**
 * The error policy: what a failure means for the object. Pure.
 *
 * - The gateway or our validation rejecting the spec is terminal: recorded as `invalid`, and
 *   retried only when the spec changes (plan sees a new hash).
 * - Everything else (gateway 5xx, timeouts, dropped connections, API-server errors) is
 *   transient: recorded as `failed` with exponential backoff; scheduled runs leave the object
 *   alone until `retryAt`, then retry it. A spec change retries at once.
 * - Backoff has jitter: each delay is shortened by up to `jitter` of itself, by a fraction
 *   fixed by the object's key and its failure count. Objects that failed together (a gateway
 *   outage) come back spread over the window instead of all at once, and the decision stays a
 *   pure function (no random source; the same object and attempt always wait the same).
 */
import { createHash } from 'node:crypto';
import { GatewayRejectedError, InvalidSpecError } from '../platform/errors.js';
import type { SyncResult } from '../store/types.js';

export interface BackoffSettings {
  baseMs: number;
  maxMs: number;
  /** the largest fraction of a delay taken off by jitter, 0 to 1; absent or 0: none */
  jitter?: number;
}

export const DEFAULT_BACKOFF: BackoffSettings = { baseMs: 10_000, maxMs: 5 * 60_000, jitter: 0.2 };

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

/** A fraction in [0, 1) fixed by `key` and `failures`. */
export function jitterOf(key: string, failures: number): number {
  return createHash('sha256').update(`${key}#${failures}`).digest().readUInt32BE(0) / 2 ** 32;
}

/** The wait before retry number `failures` of the object `key`: the backoff less its jitter (none without a key). */
export function retryDelayMs(failures: number, settings: BackoffSettings = DEFAULT_BACKOFF, key?: string): number {
  const delay = backoffMs(failures, settings);
  const jitter = Math.min(Math.max(settings.jitter ?? 0, 0), 1);
  return key === undefined ? delay : Math.round(delay * (1 - jitter * jitterOf(key, failures)));
}

export function dispose(err: unknown, failures: number, now: number, settings: BackoffSettings = DEFAULT_BACKOFF, key?: string): FailureDisposition {
  if (isTerminal(err)) return { result: 'invalid' };
  return { result: 'failed', retryAt: now + retryDelayMs(failures, settings, key) };
}
