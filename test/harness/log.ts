/**
 * A Logger for tests that keeps every entry, with its child bindings, so a test can assert what
 * was logged (and that a secret was not). Shared by the HTTP world and the fast world.
 */
import type { Logger } from '../../lib/platform/log.js';

export interface LogEntry {
  level: 'debug' | 'info' | 'warn' | 'error';
  msg?: string;
  [key: string]: unknown;
}

/** A Logger that keeps every entry (with its child bindings) in `entries`. */
export function capturingLogger(entries: LogEntry[] = [], bindings: Record<string, unknown> = {}): Logger & { entries: LogEntry[] } {
  const at = (level: LogEntry['level']) => (obj: object, msg?: string) => {
    entries.push({ ...bindings, ...obj, level, ...(msg !== undefined ? { msg } : {}) });
  };
  return { entries, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: (more) => capturingLogger(entries, { ...bindings, ...more }) };
}
