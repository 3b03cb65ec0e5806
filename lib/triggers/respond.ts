/**
 * Errors → HTTP answers, the same for every route and both front ends (fastify, Lambda).
 *
 * BadRequestError → its 4xx with the reason; UnauthorizedError → 401; RateLimitedError → 429
 * with Retry-After; StoreUnavailableError → 503 (the sender should retry); ShuttingDownError →
 * 503 with Retry-After (the process got SIGTERM); ShardQueueError → 503 (some shards were not
 * sent; the next tick sends them); ConfigError → 500
 * naming the settings; anything else → 500 with a generic message (details go to the log only).
 */
import { BadRequestError, ConfigError, describeError, errorCode, RateLimitedError, ShardQueueError, ShuttingDownError, StoreUnavailableError, UnauthorizedError } from '../platform/errors.js';
import type { Service } from '../service.js';
import type { HttpFunction, HttpInput, HttpOutput } from './io.js';

export function errorOutput(svc: Service | undefined, err: unknown): HttpOutput {
  if (err instanceof RateLimitedError) {
    return { statusCode: 429, body: { error: err.message, code: err.code }, headers: { 'retry-after': String(Math.ceil(err.retryAfterMs / 1000)) } };
  }
  if (err instanceof BadRequestError) return { statusCode: err.statusCode, body: { error: err.message, code: err.code } };
  if (err instanceof UnauthorizedError) {
    return { statusCode: 401, body: { error: err.message, code: err.code }, headers: { 'www-authenticate': 'Bearer' } };
  }
  if (err instanceof StoreUnavailableError) return { statusCode: 503, body: { error: 'record store unavailable; retry later', code: err.code } };
  if (err instanceof ShardQueueError) return { statusCode: 503, body: { error: err.message, code: err.code } };
  if (err instanceof ShuttingDownError) return { statusCode: 503, body: { error: err.message, code: err.code }, headers: { 'retry-after': '5' } };
  if (err instanceof ConfigError) return { statusCode: 500, body: { error: `misconfigured: ${err.message}`, code: err.code } };
  svc?.log.error({ err: describeError(err), code: errorCode(err) }, 'request failed');
  return { statusCode: 500, body: { error: 'internal error', code: errorCode(err) } };
}

/** Runs `fn`, turning thrown errors into responses. */
export async function respond(svc: Service, input: HttpInput, fn: HttpFunction): Promise<HttpOutput> {
  try {
    return await fn(svc, input);
  } catch (err) {
    return errorOutput(svc, err);
  }
}
