/**
 * What a planned write would change on the gateway, field by field: `fieldChanges(sent,
 * observed)` lists `{ path, before, after }` for each field of the body the run would send
 * (`sent`) whose value differs from what the gateway has (`observed`; undefined for an object
 * it does not have). Pure; used only by dry runs (phase.ts), so a normal run pays nothing.
 *
 * Only the fields the engine compares are listed: those of the body it sends (hash.ts
 * managedHash projects the gateway's echo onto that body the same way), so a field the gateway
 * adds of its own is never a change. Paths are dotted (`proxy.listen_path`), array members by
 * index (`tags[1]`), and a key that is not a plain name in brackets (`headers["X-Foo.Bar"]`).
 * Empty values (absent, null, "", [], {}) are equal to each other, as the comparison after a
 * write says (lib/platform/compare.ts); an array of another length is compared member by
 * member up to the longer one. A field present on both sides with different types is one
 * change with both values whole.
 *
 * Secrets: a value at a path any of whose keys looks like a secret's (SECRET_KEY: secret,
 * password, token, credential, private key, a key ending in `key`, a key starting with `auth`,
 * `jwt_source`) is shown as MASK on both sides, so a plan says that a secret changes, never
 * what it is or was. Walks without recursion (a body nested at any depth is compared).
 */
import { isEmptyJson, isObject } from '../platform/guards.js';

/** One field a write would change: before is what the gateway has (absent: nothing), after what would be sent. */
export interface FieldChange {
  readonly path: string;
  readonly before?: unknown;
  readonly after?: unknown;
}

/** What a masked value is shown as. */
export const MASK = '***';

/** A key whose value may be a secret (also every value below it). */
export const SECRET_KEY = /secret|passw(or)?d|token|credential|private|key$|^auth|^jwt_source$/i;

/** `key` as a path segment after `at`. */
function member(at: string, key: string): string {
  const plain = /^[A-Za-z_$][\w$-]*$/.test(key);
  if (!plain) return `${at}[${JSON.stringify(key)}]`;
  return at === '' ? key : `${at}.${key}`;
}

function masked(value: unknown, secret: boolean): unknown {
  return secret && value !== undefined ? MASK : value;
}

interface Step {
  readonly after: unknown;
  readonly before: unknown;
  readonly at: string;
  readonly secret: boolean;
}

/**
 * The fields of `sent` whose values differ from `observed` (see the header), in path order
 * (object keys sorted, array members by index).
 */
export function fieldChanges(sent: unknown, observed: unknown): FieldChange[] {
  const out: FieldChange[] = [];
  const todo: Step[] = [{ after: sent, before: observed, at: '', secret: false }];
  const push = (s: Step, after: unknown, before: unknown): void => {
    const change: { path: string; before?: unknown; after?: unknown } = { path: s.at === '' ? '(root)' : s.at };
    if (before !== undefined) change.before = masked(before, s.secret);
    if (after !== undefined) change.after = masked(after, s.secret);
    out.push(change);
  };
  while (todo.length > 0) {
    const s = todo.pop() as Step;
    const { after, before } = s;
    if (isEmptyJson(after) && isEmptyJson(before)) continue;
    if (isObject(after) && !isEmptyJson(after) && (isObject(before) || isEmptyJson(before))) {
      const from = isObject(before) ? before : {};
      const keys = Object.keys(after).sort();
      for (let i = keys.length - 1; i >= 0; i--) {
        const k = keys[i] as string;
        todo.push({ after: after[k], before: from[k], at: member(s.at, k), secret: s.secret || SECRET_KEY.test(k) });
      }
      continue;
    }
    if (Array.isArray(after) && !isEmptyJson(after) && (Array.isArray(before) || isEmptyJson(before))) {
      const from: readonly unknown[] = Array.isArray(before) ? before : [];
      for (let i = Math.max(after.length, from.length) - 1; i >= 0; i--) todo.push({ after: after[i], before: from[i], at: `${s.at}[${i}]`, secret: s.secret });
      continue;
    }
    if (isEmptyJson(after) || isEmptyJson(before) || typeof after !== 'object' || typeof before !== 'object') {
      if (after !== before) push(s, after, before);
      continue;
    }
    // both non-empty, of different shapes (an object and an array)
    push(s, after, before);
  }
  return out;
}
