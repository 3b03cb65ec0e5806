/**
 * POST /webhooks/watch: Kubernetes WatchEvents (one, an array, or one per line; Argo Events
 * resource events too) → a run over the objects they name. Requires WEBHOOK_TOKEN. Answers
 * 200 with the run's report once the refs are taken; object failures are in the report
 * (recorded and retried), not a 5xx.
 */
import { parseWatchEvents } from '../events/watch.js';
import type { Service } from '../service.js';
import { authorize } from './authorize.js';
import { runIntake } from './intake.js';
import type { HttpInput, HttpOutput } from './io.js';

export async function watchWebhook(svc: Service, input: HttpInput): Promise<HttpOutput> {
  authorize(svc, input, 'webhook');
  return runIntake(svc, 'watch', parseWatchEvents(input.body));
}
