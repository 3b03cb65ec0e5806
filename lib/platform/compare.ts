/**
 * Compares what we sent with what the gateway reports. Pure.
 *
 * The gateway echoes every field of its model, filled with defaults, so only the fields we
 * sent are compared, and a field the gateway does not report at all (a field its version does
 * not model) is not a difference. Empty values (null, "", [], {}) are equal to each other.
 * A difference is reported by its dotted path, e.g. "proxy.listen_path".
 */
import { isEmptyJson, isObject } from './guards.js';
import { jsonText } from './json-text.js';

export interface FieldDifference {
  path: string;
  sent: unknown;
  reported: unknown;
}

/** Depth first, keys sorted, without recursion: a body nested at any depth is compared, never a RangeError. */
export function sentFieldDifferences(sent: unknown, reported: unknown, path = ''): FieldDifference[] {
  const out: FieldDifference[] = [];
  const todo: [unknown, unknown, string][] = [[sent, reported, path]];
  while (todo.length > 0) {
    const [s, r, at] = todo.pop() as [unknown, unknown, string];
    if (isEmptyJson(s) && isEmptyJson(r)) continue;
    if (isObject(s) && isObject(r)) {
      const keys = Object.keys(s)
        .sort()
        .filter((k) => k in r);
      for (let i = keys.length - 1; i >= 0; i--) {
        const k = keys[i] as string;
        todo.push([s[k], r[k], at === '' ? k : `${at}.${k}`]);
      }
      continue;
    }
    if (Array.isArray(s) && Array.isArray(r) && s.length === r.length) {
      for (let i = s.length - 1; i >= 0; i--) todo.push([s[i], r[i], `${at}[${i}]`]);
      continue;
    }
    if (s !== r) out.push({ path: at === '' ? '(root)' : at, sent: s, reported: r });
  }
  return out;
}

export function describeDifferences(diffs: FieldDifference[], limit = 3): string {
  const listed = diffs.slice(0, limit).map((d) => `${cut(d.path)}: sent ${shown(d.sent)}, gateway has ${shown(d.reported)}`);
  const more = diffs.length > limit ? ` (and ${diffs.length - limit} more)` : '';
  return `${listed.join('; ')}${more}`;
}

/** A value in a message, as JSON (at any depth), cut as `cut` does. */
function shown(value: unknown): string {
  return value === undefined ? 'undefined' : cut(jsonText(value));
}

/** A path or value in a message: at most 200 characters. */
function cut(text: string): string {
  return text.length > 200 ? `${text.slice(0, 199)}\u2026` : text;
}
