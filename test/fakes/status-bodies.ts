/**
 * The Status bodies kube-apiserver answers, built for assertions: what a test expects the fake
 * (or a real server) to say. Pure; no I/O.
 */

export interface Cause {
  field: string;
  reason: string;
  message: string;
}

/** 422 Invalid for a custom resource, as field.ErrorList.ToAggregate() joins its causes. */
export function invalidStatus(kind: string, group: string, name: string, causes: readonly Cause[]): Record<string, unknown> {
  const parts = causes.map((c) => `${c.field}: ${c.message}`);
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: `${kind}.${group} "${name}" is invalid: ${parts.length === 1 ? parts[0] : `[${parts.join(', ')}]`}`,
    reason: 'Invalid',
    details: { name, group, kind, causes: causes.map((c) => ({ reason: c.reason, message: c.message, field: c.field })) },
    code: 422,
  };
}
