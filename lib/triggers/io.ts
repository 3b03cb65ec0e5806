/**
 * The request and response of an HTTP trigger, independent of fastify (lib/server.ts) and of
 * API Gateway (functions/http.ts), which translate to and from them.
 */
import type { Service } from '../service.js';

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

/** One route's handling: parse the request, call the service, map the outcome. May throw; see ./respond.ts. */
export type HttpFunction = (svc: Service, input: HttpInput) => Promise<HttpOutput>;
