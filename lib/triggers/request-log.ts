/**
 * One log line per HTTP request, for the fastify server and the Lambda adapter alike: request
 * id (fastify's, or the invocation's `awsRequestId`), method, route, status and duration.
 * Never a header, query or body, so no token can reach it. Levels: 5xx error, 4xx warn (every
 * rejected webhook leaves a line), probes answered 2xx debug (a kubelet probes every few
 * seconds), everything else info.
 */
import type { Logger } from '../platform/log.js';

export interface RequestLine {
  /** fastify's request id (an incoming x-request-id, else its own) */
  readonly reqId?: string;
  /** the Lambda invocation's id */
  readonly awsRequestId?: string;
  readonly method: string;
  /** the route (its path, without the query) */
  readonly route: string;
  readonly status: number;
  readonly durationMs: number;
}

const PROBES: ReadonlySet<string> = new Set(['/healthz', '/readyz']);

export function logRequest(log: Logger, line: RequestLine): void {
  const entry = { ...line, durationMs: Math.round(line.durationMs * 10) / 10 };
  if (line.status >= 500) log.error(entry, 'request');
  else if (line.status >= 400) log.warn(entry, 'request');
  else if (PROBES.has(line.route)) log.debug(entry, 'request');
  else log.info(entry, 'request');
}
