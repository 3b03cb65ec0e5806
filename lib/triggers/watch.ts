/**
 * POST /webhooks/watch: Kubernetes WatchEvents (one, an array, or one per line; Argo Events
 * resource events too) → a run over the objects they name. Requires WEBHOOK_TOKEN (checked before the body is read). Answers
 * 200 with the run's report once the refs are taken; object failures are in the report
 * (recorded and retried), not a 5xx.
 */
import { parseWatchEvents } from '../events/watch.js';
import type { Service } from '../service.js';
import { runIntake } from './intake.js';
import type { HttpRoute } from './io.js';

export const watchWebhook: HttpRoute = {
  guard: 'webhook',
  handle: async (svc: Service, input) => runIntake(svc, 'watch', parseWatchEvents(input.body)),
};
