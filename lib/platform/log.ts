/**
 * Logging. lib/ code takes a `Logger` (the subset of pino it uses), so tests can pass a
 * silent or capturing one. `createLogger` builds pino, for the self-hosted server, with
 * redaction of every header and field that may carry a secret (./log-lines.ts's REDACT_PATHS),
 * and levels by name ("info", "warn"). ./log-lines.ts writes the same lines without pino, for
 * AWS Lambda (and createService's default): a module a Lambda function loads takes only types
 * from here, so its bundle holds no pino.
 */
import { pino } from 'pino';
import { CENSOR, LOG_BASE, REDACT_PATHS } from './log-lines.js';

export interface Logger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  child(bindings: Record<string, unknown>): Logger;
}

/**
 * pino, with redaction. By default it writes stdout synchronously (pino.destination's own
 * default), not through pino()'s asynchronous one: each line is out, in order, when it is
 * logged, so the lines of a process that exits (SIGTERM: "stopped" last) are neither lost nor
 * reordered by the exit's final flush.
 */
export function createLogger(level = 'info', destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      redact: { paths: REDACT_PATHS, censor: CENSOR },
      base: { ...LOG_BASE },
      // "level":"warn", not 40: readable as it is, and what CloudWatch and Loki filters expect
      formatters: { level: (label) => ({ level: label }) },
    },
    destination ?? pino.destination({ dest: 1, sync: true }),
  );
}

export const silentLogger: Logger = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
  child: () => silentLogger,
};
