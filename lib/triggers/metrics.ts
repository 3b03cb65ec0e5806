/**
 * GET /metrics: the Prometheus text exposition of this process's metrics (lib/metrics). Open
 * like the probes unless METRICS_TOKEN is set, then the bearer token must be one of its
 * values (401 otherwise). 404 where metrics are not served over HTTP (on Lambda they go to
 * CloudWatch as EMF). The answer holds figures only, never a secret.
 */
import type { Service } from '../service.js';
import type { HttpOutput, HttpRoute } from './io.js';

export const metrics: HttpRoute = { guard: 'metrics', handle: async (svc: Service) => metricsAnswer(svc) };

async function metricsAnswer(svc: Service): Promise<HttpOutput> {
  const exposition = await svc.metricsExposition();
  if (!exposition) return { statusCode: 404, body: { error: 'metrics are not served here: on AWS Lambda they go to CloudWatch as embedded metric format', code: 'NOT_FOUND' } };
  return { statusCode: 200, body: exposition.text, headers: { 'content-type': exposition.contentType } };
}
