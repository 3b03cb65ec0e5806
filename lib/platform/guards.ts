/**
 * Type guards and value readers for untyped input (request bodies, Kubernetes objects, gateway
 * answers, environment variables), the one place they live.
 *
 * Contract: pure, total (never throw), and narrow `unknown` without casting.
 */

/** A JSON value that says nothing: absent, null, '', or an object or array without members. */
export function isEmptyJson(v: unknown): boolean {
  if (v === undefined || v === null || v === '') return true;
  // an array is an object: empty when it has no members
  if (typeof v === 'object') return Object.keys(v).length === 0;
  return false;
}

/** A plain JSON object (not null, not an array). */
export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A string with at least one character, as it is; anything else → undefined. */
export function nonEmpty(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/** A string that is not blank (not only whitespace), as it is; anything else → undefined. */
export function nonBlank(v: unknown): string | undefined {
  return typeof v === 'string' && v.trim() !== '' ? v : undefined;
}

/** A string trimmed, unless blank; anything else → undefined. */
export function trimmed(v: unknown): string | undefined {
  return typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined;
}

/**
 * A yes/no value: a boolean as it is; `true`/`1`/`yes` and `false`/`0`/`no` in any case; absent
 * or blank → undefined; anything else → null (for the caller to report).
 */
export function parseFlag(v: unknown): boolean | null | undefined {
  if (typeof v === 'boolean') return v;
  if (v === undefined || v === null) return undefined;
  const t = trimmed(v)?.toLowerCase();
  if (t === undefined) return typeof v === 'string' ? undefined : null;
  if (t === 'true' || t === '1' || t === 'yes') return true;
  if (t === 'false' || t === '0' || t === 'no') return false;
  return null;
}

/** The non-empty strings of a list, in order; [] for anything that is not a list. */
export function stringItems(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string' && x !== '') : [];
}
