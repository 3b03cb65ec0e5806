/**
 * A dry run's report as `gateway-reconciler plan` prints it, and the exit status it leads to.
 * Pure.
 *
 * `planTable(report)`: one row per field a planned write would change (object, action, field,
 * before → after; values as JSON, cut to 80 characters, `(none)` for nothing), a DELETE as one
 * row, a write of the cluster only (an Ingress's or HTTPRoute's ApiDefinitions) as one row, an
 * object that would fail as one row with its reason; then a last line with the count of
 * objects and fields that would change, and the writes and reloads they would cost.
 * `planChanges(report)`: whether anything would change. `planProblems(report)`: what kept the
 * plan from being complete (run errors; objects whose state could not be read).
 */
import type { ObjectReport, RunReport } from '../engine/types.js';

const WRITES: ReadonlySet<string> = new Set(['CREATE', 'UPDATE', 'DELETE']);
/** Objects whose plan is unknown: their state could not be read, or their gateway reached. */
const UNREAD: ReadonlySet<string> = new Set(['read failed', 'gateway unavailable']);

/** Would this object change something? */
function changing(o: ObjectReport): boolean {
  return o.result === 'planned' && WRITES.has(o.action);
}

/** Whether the plan changes anything. */
export function planChanges(report: RunReport): boolean {
  return report.objects.some(changing);
}

/** One line per problem that leaves the plan incomplete. */
export function planProblems(report: RunReport): string[] {
  return [
    ...report.errors.map((e) => `${e.stage}: ${e.message}`),
    ...report.objects.filter((o) => o.result === 'failed' && UNREAD.has(o.reason)).map((o) => `${o.kind} ${where(o)}: ${o.reason}${o.error ? `: ${o.error}` : ''}`),
  ].map(oneLine);
}

function oneLine(text: string): string {
  const line = text.split('\n').join('; ');
  return line.length > 300 ? `${line.slice(0, 299)}\u2026` : line;
}

function where(o: ObjectReport): string {
  return o.namespace === '' ? o.name : `${o.namespace}/${o.name}`;
}

/** A value in the table: JSON, at most 80 characters. */
export function shown(value: unknown): string {
  if (value === undefined) return '(none)';
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 80 ? `${text.slice(0, 79)}\u2026` : text;
}

function plural(n: number, one: string, many = `${one}s`): string {
  return `${n.toLocaleString('en-US')} ${n === 1 ? one : many}`;
}

/** The table's lines (see the header). */
export function planTable(report: RunReport): string[] {
  const rows: [string, string, string, string][] = [];
  let fields = 0;
  for (const o of report.objects) {
    const name = `${o.kind} ${where(o)}`;
    if (changing(o)) {
      if (o.action === 'DELETE') {
        rows.push([name, o.action, '(the object is removed)', o.reason]);
        continue;
      }
      if (o.changes === undefined) {
        rows.push([name, o.action, '(in the cluster)', o.reason]);
        continue;
      }
      if (o.changes.length === 0) rows.push([name, o.action, '(no field differs)', o.reason]);
      for (const c of o.changes) {
        fields++;
        rows.push([name, o.action, c.path, `${shown(c.before)} \u2192 ${shown(c.after)}`]);
      }
    } else if (o.result === 'failed' || o.result === 'invalid') {
      rows.push([name, o.action, `(would be ${o.result})`, oneLine(`${o.reason}${o.error ? `: ${o.error}` : ''}`)]);
    }
  }
  const lines: string[] = [];
  if (rows.length > 0) {
    const head: [string, string, string, string] = ['OBJECT', 'ACTION', 'FIELD', 'BEFORE \u2192 AFTER'];
    const width = [0, 1, 2].map((i) => Math.max(...[head, ...rows].map((r) => (r[i] as string).length)));
    const line = (r: readonly string[]) =>
      r
        .map((cell, i) => (i < 3 ? cell.padEnd(width[i] as number) : cell))
        .join('  ')
        .trimEnd();
    lines.push(line(head), ...rows.map(line));
  }
  const objects = report.objects.filter(changing).length;
  const { writes, reloads } = report.gateway;
  const cost = `${plural(writes, 'gateway write')}, ${plural(reloads, 'reload')}`;
  const incomplete = planProblems(report).length;
  const summary = objects === 0 ? `Nothing would change (${cost}).` : `${plural(objects, 'object')} would change, ${plural(fields, 'field')} (${cost}).`;
  // a plan some reads failed for says so first: what it lists is only what could be read
  lines.push(incomplete === 0 ? summary : `Incomplete: ${plural(incomplete, 'problem')} (on stderr). Of what could be read: ${summary.charAt(0).toLowerCase()}${summary.slice(1)}`);
  return lines;
}
