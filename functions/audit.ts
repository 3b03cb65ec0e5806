/** AWS Lambda: POST /webhooks/audit (lib/triggers/audit.ts) behind API Gateway. */
import { auditWebhook } from '../lib/triggers/audit.js';
import { lambdaHttp } from './http.js';

export const handler = lambdaHttp(auditWebhook);
