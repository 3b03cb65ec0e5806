/**
 * The Lambda adapter of the HTTP triggers (API Gateway HTTP API, payload format 2.0): the
 * route's guard checked on the event's headers first (lib/triggers/authorize.ts: a refused
 * caller's body is never decoded nor parsed), then the event → lib/triggers' HttpInput, the
 * trigger run on the container's service (./service.ts),
 * its HttpOutput → the JSON result. Errors map as in lib/triggers/respond.ts; one raised while
 * building the service (a bad setting) is answered the same way. Each invocation leaves one
 * request log line and its metrics as EMF lines (lib/metrics/emf.ts).
 */

import type { Service } from '../lib/service.js';
import { admit } from '../lib/triggers/authorize.js';
import type { HttpCaller, HttpInput, HttpOutput, HttpRoute } from '../lib/triggers/io.js';
import { logRequest } from '../lib/triggers/request-log.js';
import { errorOutput, respond } from '../lib/triggers/respond.js';
import { lambdaServiceFromEnv } from './service.js';

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

/** The caller as the event's headers show it: what a route's guard looks at, before the body. */
function callerOf(event: ApiGatewayV2Event): HttpCaller {
  const headers: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(event.headers ?? {})) headers[k.toLowerCase()] = v;
  return { headers, sourceIp: event.requestContext?.http?.sourceIp };
}

function fromApiGatewayV2(event: ApiGatewayV2Event, caller: HttpCaller): HttpInput {
  const raw = event.body ?? '';
  return {
    ...caller,
    method: event.requestContext?.http?.method ?? 'POST',
    query: { ...(event.queryStringParameters ?? {}) },
    body: event.isBase64Encoded ? Buffer.from(raw, 'base64').toString('utf8') : raw,
  };
}

/** The part of the Lambda context the adapters read. */
export interface LambdaRequestContext {
  awsRequestId?: string;
}

export function lambdaHttp(route: HttpRoute): (event: ApiGatewayV2Event, context?: LambdaRequestContext) => Promise<ApiGatewayV2Result> {
  return async (event, context) => {
    const started = performance.now();
    const caller = callerOf(event);
    let out: HttpOutput;
    let svc: Service | undefined;
    try {
      svc = await lambdaServiceFromEnv();
      out = admit(svc, caller, route.guard) ?? (await respond(svc, fromApiGatewayV2(event, caller), route.handle));
    } catch (err) {
      out = errorOutput(undefined, err);
    }
    // without a service (a bad setting) there is no logger; the answer names the setting
    if (svc) {
      const route = event.rawPath ?? '';
      logRequest(svc.log, { awsRequestId: context?.awsRequestId, method: event.requestContext?.http?.method ?? 'POST', route, status: out.statusCode, durationMs: performance.now() - started });
      svc.recordRequest(route, out.statusCode);
      svc.flushMetrics();
    }
    return { statusCode: out.statusCode, headers: { 'content-type': 'application/json', ...out.headers }, body: JSON.stringify(out.body) };
  };
}
