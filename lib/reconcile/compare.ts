/**
 * Compares what we sent with what the gateway reports. Pure.
 *
 * The gateway echoes every field of its model, filled with defaults, so only the fields we
 * sent are compared, and a field the gateway does not report at all (a field its version does
 * not model) is not a difference. Empty values (null, "", [], {}) are equal to each other.
 * A difference is reported by its dotted path, e.g. "proxy.listen_path".
 */
import { isEmptyJson, isObject } from '../guards.js';
export interface FieldDifference {
  path: string;
  sent: unknown;
  reported: unknown;
}

export function sentFieldDifferences(sent: unknown, reported: unknown, path = ''): FieldDifference[] {
  if (isEmptyJson(sent) && isEmptyJson(reported)) return [];
  if (isObject(sent) && isObject(reported)) {
    return Object.keys(sent)
      .sort()
      .filter((k) => k in reported)
      .flatMap((k) => sentFieldDifferences(sent[k], reported[k], path === '' ? k : `${path}.${k}`));
  }
  if (Array.isArray(sent) && Array.isArray(reported) && sent.length === reported.length) {
    return sent.flatMap((v, i) => sentFieldDifferences(v, reported[i], `${path}[${i}]`));
  }
  if (sent === reported) return [];
  return [{ path: path === '' ? '(root)' : path, sent, reported }];
}

export function describeDifferences(diffs: FieldDifference[], limit = 3): string {
  const shown = diffs.slice(0, limit).map((d) => `${d.path}: sent ${JSON.stringify(d.sent)}, gateway has ${JSON.stringify(d.reported)}`);
  const more = diffs.length > limit ? ` (and ${diffs.length - limit} more)` : '';
  return `${shown.join('; ')}${more}`;
}
