/** AWS Lambda: POST /webhooks/watch (lib/triggers/watch.ts) behind API Gateway. */
import { watchWebhook } from '../lib/triggers/watch.js';
import { lambdaHttp } from './http.js';

export const handler = lambdaHttp(watchWebhook);
