/** AWS Lambda: POST /webhooks/cloudevents (lib/triggers/cloudevents.ts) behind API Gateway. */
import { cloudEventsWebhook } from '../lib/triggers/cloudevents.js';
import { lambdaHttp } from './http.js';

export const handler = lambdaHttp(cloudEventsWebhook);
