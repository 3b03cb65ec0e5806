/**
 * The checks a request passes before anything of it but its headers and connection is read:
 * for `webhook` and `resync` routes a verified client certificate when TLS_CLIENT_CA is set,
 * for all but `open` ones the bearer token (compared in constant time), and for webhooks the
 * per-source rate limit, counted only once the caller is known. Each failure is thrown as
 * UnauthorizedError or RateLimitedError; `admit` answers them as ./respond.ts maps them (401,
 * 429). The front ends (lib/server.ts's onRequest hook, functions/http.ts) call `admit` before
 * the body is read, so an unauthenticated body is never read whole nor parsed.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { RateLimitedError, UnauthorizedError } from '../platform/errors.js';
import type { Service } from '../service.js';
import type { HttpCaller, HttpOutput, RouteGuard } from './io.js';
import { errorOutput } from './respond.js';

function digest(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}

/** Throws UnauthorizedError unless the Authorization header carries one of `tokens`. */
function requireBearer(tokens: readonly string[], allowUnauthenticated: boolean, headers: HttpCaller['headers']): void {
  if (allowUnauthenticated && tokens.length === 0) return;
  const header = headers.authorization ?? '';
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match) throw new UnauthorizedError('missing bearer token');
  const given = digest(match[1] as string);
  let ok = false;
  for (const t of tokens) ok = timingSafeEqual(given, digest(t)) || ok;
  if (!ok) throw new UnauthorizedError('invalid bearer token');
}

/** Throws UnauthorizedError or RateLimitedError unless `caller` may call a route guarded by `guard`. */
export function authorize(svc: Service, caller: HttpCaller, guard: RouteGuard): void {
  if (guard === 'open') return;
  const access = svc.access(guard);
  if (access.clientCertRequired && caller.clientCertVerified !== true) {
    throw new UnauthorizedError('a client certificate signed by TLS_CLIENT_CA is required');
  }
  requireBearer(access.tokens, access.allowUnauthenticated, caller.headers);
  if (guard === 'webhook') {
    const waitMs = svc.rateLimitWait(caller.sourceIp ?? 'unknown');
    if (waitMs > 0) throw new RateLimitedError(waitMs);
  }
}

/** undefined when `caller` may go on to the route's handling; else the refusal to answer with. */
export function admit(svc: Service, caller: HttpCaller, guard: RouteGuard): HttpOutput | undefined {
  try {
    authorize(svc, caller, guard);
    return undefined;
  } catch (err) {
    return errorOutput(svc, err);
  }
}
