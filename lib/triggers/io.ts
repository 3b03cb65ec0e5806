/**
 * The request and response of an HTTP trigger, independent of fastify (lib/server.ts) and of
 * API Gateway (functions/http.ts), which translate to and from them.
 *
 * A route is a guard and a handling (`HttpRoute`): both front ends check the guard
 * (./authorize.ts) on the caller alone, from its headers and connection, before the body is
 * read or parsed; the handling sees only requests the guard let in.
 */
import type { Service } from '../service.js';

/** What the guard of a route looks at: never the body. */
export interface HttpCaller {
  headers: Record<string, string | undefined>;
  /** the client's address, for the per-source rate limit */
  sourceIp?: string;
  /** the connection presented a client certificate that TLS_CLIENT_CA verified */
  clientCertVerified?: boolean;
}

export interface HttpInput extends HttpCaller {
  method: string;
  query: Record<string, string | undefined>;
  /** the raw body text ("" when none) */
  body: string;
}

export interface HttpOutput {
  statusCode: number;
  body: unknown;
  headers?: Record<string, string>;
}

/** One route's handling: parse the request, call the service, map the outcome. May throw; see ./respond.ts. */
export type HttpFunction = (svc: Service, input: HttpInput) => Promise<HttpOutput>;

/**
 * Who may call a route: `webhook` (WEBHOOK_TOKEN, a client certificate under TLS_CLIENT_CA, the
 * per-source rate limit), `resync` (RESYNC_TOKEN, the client certificate), `metrics`
 * (METRICS_TOKEN when set), `admission` (ADMISSION_TOKEN and ADMISSION_CLIENT_CERT when set;
 * open otherwise), `open` (the probes).
 */
export type RouteGuard = 'webhook' | 'resync' | 'metrics' | 'admission' | 'open';

/** A route: its guard, checked before the body is read, and its handling once the caller is let in. */
export interface HttpRoute {
  readonly guard: RouteGuard;
  readonly handle: HttpFunction;
}
