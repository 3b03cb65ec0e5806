/**
 * POST /webhooks/cloudevents: CloudEvents 1.0 in binary mode (ce-* headers), structured mode
 * (application/cloudevents+json) or batches (application/cloudevents-batch+json), as Knative's
 * ApiServerSource (Resource and Reference modes), Argo Events or any forwarder sends them.
 * Requires WEBHOOK_TOKEN. Repeated deliveries (same source and id) are recognised.
 */
import { cloudEventItems, parseCloudEvents } from '../events/cloudevents.js';
import type { Service } from '../service.js';
import { authorize } from './authorize.js';
import { runIntake } from './intake.js';
import type { HttpInput, HttpOutput } from './io.js';

export async function cloudEventsWebhook(svc: Service, input: HttpInput): Promise<HttpOutput> {
  authorize(svc, input, 'webhook');
  return runIntake(svc, 'cloudevents', cloudEventItems(parseCloudEvents(input)));
}
