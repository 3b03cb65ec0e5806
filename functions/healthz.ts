/**
 * GET /healthz on AWS Lambda: the function answers. The same answer as `healthz` in
 * lib/triggers/health.ts (the server's route), but a module of its own that imports nothing at run time,
 * so its bundle is a few hundred bytes and it never builds the service (no Redis, API server
 * or gateway connection). GET /readyz (./health.ts) checks those.
 */
import type { ApiGatewayV2Result } from './http.js';

export async function handler(): Promise<ApiGatewayV2Result> {
  return { statusCode: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ status: 'ok' }) };
}
