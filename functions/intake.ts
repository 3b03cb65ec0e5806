/**
 * Shared by the webhook functions: run over what an intake names, and answer with what was
 * taken, what was ignored, and the run's report. An intake that names nothing runs nothing.
 */
import type { Intake } from '../lib/events/refs.js';
import type { Trigger } from '../lib/reconcile/run.js';
import type { Service } from '../lib/service.js';
import type { HttpOutput } from './http.js';

export async function runIntake(svc: Service, trigger: Trigger, intake: Intake): Promise<HttpOutput> {
  const { scope } = intake;
  const empty = (scope.refs ?? []).length === 0 && (scope.namespaces ?? []).length === 0;
  const report = empty ? undefined : await svc.run({ trigger, scope });
  return { statusCode: 200, body: { accepted: intake.accepted, ignored: intake.ignored, report: report ?? null } };
}
