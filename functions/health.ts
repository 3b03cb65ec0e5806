/**
 * GET /healthz: the process answers. GET /readyz: the store, the API server and the gateway
 * answer and accept our credentials; 503 naming what failed otherwise. No token required;
 * answers carry no secrets.
 */
import type { Service } from '../lib/service.js';
import { type HttpInput, type HttpOutput, lambdaHttp } from './http.js';

export async function healthz(): Promise<HttpOutput> {
  return { statusCode: 200, body: { status: 'ok' } };
}

export async function readyz(svc: Service, _input?: HttpInput): Promise<HttpOutput> {
  const r = await svc.readiness();
  return { statusCode: r.ok ? 200 : 503, body: { status: r.ok ? 'ready' : 'not ready', store: svc.parts.store.kind, checks: r.checks } };
}

export const handler = lambdaHttp(readyz);
