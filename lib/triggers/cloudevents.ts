/**
 * POST /webhooks/cloudevents: CloudEvents 1.0 in binary mode (ce-* headers), structured mode
 * (application/cloudevents+json) or batches (application/cloudevents-batch+json), as Knative's
 * ApiServerSource (Resource and Reference modes), Argo Events or any forwarder sends them.
 * Requires WEBHOOK_TOKEN (checked before the body is read). Repeated deliveries (same source and id) are recognised.
 */
import { cloudEventItems, parseCloudEvents } from '../events/cloudevents.js';
import type { Service } from '../service.js';
import { runIntake } from './intake.js';
import type { HttpRoute } from './io.js';

export const cloudEventsWebhook: HttpRoute = {
  guard: 'webhook',
  handle: async (svc: Service, input) => runIntake(svc, 'cloudevents', cloudEventItems(parseCloudEvents(input))),
};
