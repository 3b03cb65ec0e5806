/**
 * POST /webhooks/audit: an audit.k8s.io/v1 EventList from the API server's audit webhook →
 * a run over the tyk.tyk.io objects it names. Requires WEBHOOK_TOKEN (checked before the body is read). Events of our own
 * writes are ignored; a batch the API server resends is recognised by its auditIDs. Answers
 * 200 once the refs are taken (a 5xx would make the API server resend the whole batch).
 */
import { parseAuditEventList } from '../events/audit.js';
import type { Service } from '../service.js';
import { runIntake } from './intake.js';
import type { HttpRoute } from './io.js';

export const auditWebhook: HttpRoute = {
  guard: 'webhook',
  handle: async (svc: Service, input) => runIntake(svc, 'audit', parseAuditEventList(input.body, await svc.ownUsername())),
};
