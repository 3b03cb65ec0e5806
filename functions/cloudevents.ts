/**
 * POST /webhooks/cloudevents: CloudEvents 1.0 in binary mode (ce-* headers), structured mode
 * (application/cloudevents+json) or batches (application/cloudevents-batch+json), as Knative's
 * ApiServerSource (Resource and Reference modes), Argo Events or any forwarder sends them.
 * Requires WEBHOOK_TOKEN. Repeated deliveries (same source and id) are recognised.
 */
import { cloudEventItems, parseCloudEvents } from '../lib/events/cloudevents.js';
import type { Service } from '../lib/service.js';
import { authorize, type HttpInput, type HttpOutput, lambdaHttp } from './http.js';
import { runIntake } from './intake.js';

export async function cloudEventsWebhook(svc: Service, input: HttpInput): Promise<HttpOutput> {
  authorize(svc, input, 'webhook');
  return runIntake(svc, 'cloudevents', cloudEventItems(parseCloudEvents(input)));
}

export const handler = lambdaHttp(cloudEventsWebhook);
