/**
 * GET /healthz: the process answers. GET /readyz: the store, the API server and the gateway
 * answer and accept our credentials; 503 naming what failed otherwise. No token required;
 * answers carry no secrets. /readyz answers from a check at most 5 s old, shared by concurrent
 * requests (Service.readiness), so no request rate costs the dependencies more than one call
 * each per 5 s.
 */
import type { Service } from '../service.js';
import type { HttpOutput, HttpRoute } from './io.js';

/** The /healthz answer; functions/healthz.ts sends the same without importing anything. */
export async function healthz(): Promise<HttpOutput> {
  return { statusCode: 200, body: { status: 'ok' } };
}

export const readyz: HttpRoute = {
  guard: 'open',
  handle: async (svc: Service) => {
    const r = await svc.readiness();
    return { statusCode: r.ok ? 200 : 503, body: { status: r.ok ? 'ready' : 'not ready', store: svc.storeKind, checks: r.checks } };
  },
};
