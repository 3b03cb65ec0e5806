/**
 * What every HTTP function shares: the request and response shapes (independent of fastify
 * and of API Gateway), bearer-token checks in constant time, the mapping of errors to status
 * codes, and the Lambda adapter (API Gateway HTTP API, payload format 2.0).
 *
 * Error mapping: BadRequestError → its 4xx with the reason; UnauthorizedError → 401;
 * StoreUnavailableError → 503 (the sender should retry); ConfigError → 500 naming the
 * settings; anything else → 500 with a generic message (details go to the log only).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { loadConfig } from '../lib/config.js';
import { BadRequestError, ConfigError, describeError, errorCode, RateLimitedError, StoreUnavailableError, UnauthorizedError } from '../lib/errors.js';
import { createService, type Service } from '../lib/service.js';

export interface HttpInput {
  method: string;
  headers: Record<string, string | undefined>;
  query: Record<string, string | undefined>;
  /** the raw body text ("" when none) */
  body: string;
  /** the client's address, for the per-source rate limit */
  sourceIp?: string;
  /** the connection presented a client certificate that TLS_CLIENT_CA verified */
  clientCertVerified?: boolean;
}

export interface HttpOutput {
  statusCode: number;
  body: unknown;
  headers?: Record<string, string>;
}

export type HttpFunction = (svc: Service, input: HttpInput) => Promise<HttpOutput>;

function digest(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}

/** Throws UnauthorizedError unless the Authorization header carries one of `tokens`. */
export function requireBearer(tokens: readonly string[], allowUnauthenticated: boolean, headers: HttpInput['headers']): void {
  if (allowUnauthenticated && tokens.length === 0) return;
  const header = headers.authorization ?? '';
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match) throw new UnauthorizedError('missing bearer token');
  const given = digest(match[1] as string);
  let ok = false;
  for (const t of tokens) ok = timingSafeEqual(given, digest(t)) || ok;
  if (!ok) throw new UnauthorizedError('invalid bearer token');
}

/**
 * The checks every webhook and /resync request passes before anything is read: a verified
 * client certificate when TLS_CLIENT_CA is set, the bearer token, and (webhooks) the
 * per-source rate limit.
 */
export function authorize(svc: Service, input: HttpInput, route: 'webhook' | 'resync'): void {
  const { config } = svc;
  if (config.tls?.clientCaFile !== undefined && input.clientCertVerified !== true) {
    throw new UnauthorizedError('a client certificate signed by TLS_CLIENT_CA is required');
  }
  requireBearer(route === 'webhook' ? config.webhookTokens : config.resyncTokens, config.allowUnauthenticated, input.headers);
  if (route === 'webhook') {
    const waitMs = svc.rateLimiter.take(input.sourceIp ?? 'unknown');
    if (waitMs > 0) throw new RateLimitedError(waitMs);
  }
}

export function errorOutput(svc: Service | undefined, err: unknown): HttpOutput {
  if (err instanceof RateLimitedError) {
    return { statusCode: 429, body: { error: err.message, code: err.code }, headers: { 'retry-after': String(Math.ceil(err.retryAfterMs / 1000)) } };
  }
  if (err instanceof BadRequestError) return { statusCode: err.statusCode, body: { error: err.message, code: err.code } };
  if (err instanceof UnauthorizedError) {
    return { statusCode: 401, body: { error: err.message, code: err.code }, headers: { 'www-authenticate': 'Bearer' } };
  }
  if (err instanceof StoreUnavailableError) return { statusCode: 503, body: { error: 'record store unavailable; retry later', code: err.code } };
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

// ─────────────── AWS Lambda (API Gateway HTTP API, payload 2.0) ───────────────

export interface ApiGatewayV2Event {
  version?: string;
  rawPath?: string;
  headers?: Record<string, string | undefined>;
  queryStringParameters?: Record<string, string | undefined>;
  body?: string;
  isBase64Encoded?: boolean;
  requestContext?: { http?: { method?: string; sourceIp?: string } };
}

export interface ApiGatewayV2Result {
  statusCode: number;
  headers: Record<string, string>;
  body: string;
}

let lambdaService: Promise<Service> | undefined;

/** The process-wide service of a Lambda container, built from the environment on first use. */
export function lambdaServiceFromEnv(): Promise<Service> {
  lambdaService ??= Promise.resolve().then(() => {
    const config = loadConfig(process.env);
    // concurrent Lambda containers share nothing: records and locks must live in Redis
    if (!config.redisUrl) throw new ConfigError([{ setting: 'REDIS_URL', message: 'is required on AWS Lambda (containers share no memory)' }]);
    return createService(config, process.env);
  });
  lambdaService.catch(() => {
    lambdaService = undefined;
  });
  return lambdaService;
}

/** Closes the container's service (its Redis connection and HTTP agents); for tests and shutdown hooks. */
export async function closeLambdaService(): Promise<void> {
  const svc = lambdaService;
  lambdaService = undefined;
  await (await svc?.catch(() => undefined))?.close();
}

export function fromApiGatewayV2(event: ApiGatewayV2Event): HttpInput {
  const headers: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(event.headers ?? {})) headers[k.toLowerCase()] = v;
  const raw = event.body ?? '';
  return {
    method: event.requestContext?.http?.method ?? 'POST',
    headers,
    query: { ...(event.queryStringParameters ?? {}) },
    body: event.isBase64Encoded ? Buffer.from(raw, 'base64').toString('utf8') : raw,
    sourceIp: event.requestContext?.http?.sourceIp,
  };
}

export function lambdaHttp(fn: HttpFunction): (event: ApiGatewayV2Event) => Promise<ApiGatewayV2Result> {
  return async (event) => {
    let out: HttpOutput;
    try {
      const svc = await lambdaServiceFromEnv();
      out = await respond(svc, fromApiGatewayV2(event), fn);
    } catch (err) {
      out = errorOutput(undefined, err);
    }
    return { statusCode: out.statusCode, headers: { 'content-type': 'application/json', ...out.headers }, body: JSON.stringify(out.body) };
  };
}
