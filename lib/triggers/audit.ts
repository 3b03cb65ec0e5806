/**
 * POST /webhooks/audit: an audit.k8s.io/v1 EventList from the API server's audit webhook →
 * a run over the tyk.tyk.io objects it names. Requires WEBHOOK_TOKEN. Events of our own
 * writes are ignored; a batch the API server resends is recognised by its auditIDs. Answers
 * 200 once the refs are taken (a 5xx would make the API server resend the whole batch).
 */
import { parseAuditEventList } from '../events/audit.js';
import type { Service } from '../service.js';
import { authorize } from './authorize.js';
import { runIntake } from './intake.js';
import type { HttpInput, HttpOutput } from './io.js';

export async function auditWebhook(svc: Service, input: HttpInput): Promise<HttpOutput> {
  authorize(svc, input, 'webhook');
  const items = parseAuditEventList(input.body, await svc.ownUsername());
  return runIntake(svc, 'audit', items);
}
