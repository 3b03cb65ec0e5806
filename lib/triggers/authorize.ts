/**
 * The checks every webhook, /resync and /metrics request passes before anything is read: a verified
 * client certificate when TLS_CLIENT_CA is set, the bearer token (compared in constant time),
 * and, for webhooks, the per-source rate limit. Each failure is thrown as UnauthorizedError
 * or RateLimitedError (mapped to 401 and 429 by ./respond.ts).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { RateLimitedError, UnauthorizedError } from '../errors.js';
import type { Service } from '../service.js';
import type { HttpInput } from './io.js';

function digest(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}

/** Throws UnauthorizedError unless the Authorization header carries one of `tokens`. */
function requireBearer(tokens: readonly string[], allowUnauthenticated: boolean, headers: HttpInput['headers']): void {
  if (allowUnauthenticated && tokens.length === 0) return;
  const header = headers.authorization ?? '';
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match) throw new UnauthorizedError('missing bearer token');
  const given = digest(match[1] as string);
  let ok = false;
  for (const t of tokens) ok = timingSafeEqual(given, digest(t)) || ok;
  if (!ok) throw new UnauthorizedError('invalid bearer token');
}

export function authorize(svc: Service, input: HttpInput, route: 'webhook' | 'resync' | 'metrics'): void {
  const access = svc.access(route);
  if (access.clientCertRequired && input.clientCertVerified !== true) {
    throw new UnauthorizedError('a client certificate signed by TLS_CLIENT_CA is required');
  }
  requireBearer(access.tokens, access.allowUnauthenticated, input.headers);
  if (route === 'webhook') {
    const waitMs = svc.rateLimitWait(input.sourceIp ?? 'unknown');
    if (waitMs > 0) throw new RateLimitedError(waitMs);
  }
}
