/**
 * POST /webhooks/watch: Kubernetes WatchEvents (one, an array, or one per line; Argo Events
 * resource events too) → a run over the objects they name. Requires WEBHOOK_TOKEN. Answers
 * 200 with the run's report once the refs are taken; object failures are in the report
 * (recorded and retried), not a 5xx.
 */
import { parseWatchEvents } from '../lib/events/watch.js';
import type { Service } from '../lib/service.js';
import { authorize, type HttpInput, type HttpOutput, lambdaHttp } from './http.js';
import { runIntake } from './intake.js';

export async function watchWebhook(svc: Service, input: HttpInput): Promise<HttpOutput> {
  authorize(svc, input, 'webhook');
  return runIntake(svc, 'watch', parseWatchEvents(input.body));
}

export const handler = lambdaHttp(watchWebhook);
