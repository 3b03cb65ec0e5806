/**
 * POST /webhooks/audit: an audit.k8s.io/v1 EventList from the API server's audit webhook →
 * a run over the tyk.tyk.io objects it names. Requires WEBHOOK_TOKEN. Answers 200 once the
 * refs are taken (a 5xx would make the API server resend the whole batch).
 */
import { parseAuditEventList } from '../lib/events/audit.js';
import type { Service } from '../lib/service.js';
import { type HttpInput, type HttpOutput, lambdaHttp, requireBearer } from './http.js';
import { runIntake } from './intake.js';

export async function auditWebhook(svc: Service, input: HttpInput): Promise<HttpOutput> {
  requireBearer(svc.config.webhookTokens, svc.config.allowUnauthenticated, input.headers);
  return runIntake(svc, 'audit', parseAuditEventList(input.body));
}

export const handler = lambdaHttp(auditWebhook);
