/**
 * Logging. lib/ code takes a `Logger` (the subset of pino it uses), so tests can pass a
 * silent or capturing one. `createLogger` builds pino with redaction of every header and
 * field that may carry a secret, and levels by name ("info", "warn").
 */
import { pino } from 'pino';

export interface Logger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  child(bindings: Record<string, unknown>): Logger;
}

const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers["x-tyk-authorization"]',
  'headers.authorization',
  'headers["x-tyk-authorization"]',
  '*.token',
  '*.auth',
  '*.password',
  'token',
  'auth',
  'password',
];

export function createLogger(level = 'info', destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      base: { service: 'gateway-reconciler' },
      // "level":"warn", not 40: readable as it is, and what CloudWatch and Loki filters expect
      formatters: { level: (label) => ({ level: label }) },
    },
    destination,
  );
}

export const silentLogger: Logger = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
  child: () => silentLogger,
};
