/**
 * What one object's input may cost, and how a failure while building or deciding it is told.
 * Pure. The limits are documented in docs/security/hostile-input.md; each refusal names the
 * limit, never quotes the input, and costs only the object it belongs to (status Failed,
 * reason Invalid, a Warning Event), never the run.
 *
 * - MAX_SPEC_DEPTH: objects and arrays nested in a resource (its spec and the rest), or in the
 *   document built from it (a Tyk OAS document from a ConfigMap). Tyk's own definitions nest
 *   about a dozen levels; deeper input is refused before anything recursive sees it.
 * - MAX_CERTIFICATE_BYTES: a Secret's `tls.crt` or `tls.key`, decoded (a chain of a few
 *   certificates is a few KB).
 * - MAX_DOCUMENT_BYTES: a document a kind reads from the cluster (an OpenAPI document, an SDL) (below the API
 *   server's own caps, 1 MiB for a ConfigMap or Secret, so the limit is ours and is reached).
 * - MAX_MESSAGE_CHARS: what a thrown error contributes to a status or Event.
 */
import { describeError } from '../platform/errors.js';
import { deeperThan } from '../platform/json-text.js';

export const MAX_SPEC_DEPTH = 256;
export const MAX_CERTIFICATE_BYTES = 256 * 1024;
export const MAX_DOCUMENT_BYTES = 512 * 1024;
export const MAX_MESSAGE_CHARS = 300;

/** `text` cut to MAX_MESSAGE_CHARS (an ellipsis marks the cut). */
export function bounded(text: string): string {
  return text.length > MAX_MESSAGE_CHARS ? `${text.slice(0, MAX_MESSAGE_CHARS - 1)}\u2026` : text;
}

/** The refusal of `value` (named `what`) when it nests deeper than MAX_SPEC_DEPTH; undefined when it does not. */
export function depthProblem(what: string, value: unknown): string | undefined {
  return deeperThan(value, MAX_SPEC_DEPTH) ? `${what} is nested deeper than ${MAX_SPEC_DEPTH} levels (the limit for a resource)` : undefined;
}

/** The refusal of a text of `bytes` bytes (named `what`) above `limit`; undefined when it fits. */
export function sizeProblem(what: string, bytes: number, limit: number): string | undefined {
  return bytes > limit ? `${what} is ${bytes} bytes, above the limit of ${limit} bytes` : undefined;
}

/** What an object's status says when building or deciding it threw: the stage and the error, bounded. */
export function thrownProblem(stage: 'built' | 'decided', err: unknown): string {
  return bounded(`could not be ${stage}: ${describeError(err)}`);
}
