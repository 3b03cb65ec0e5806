/**
 * JSON log lines without a logging library: the Logger of AWS Lambda functions (and the
 * default of createService), where a cold start pays for every module it loads. The
 * self-hosted server uses pino (./log.ts's createLogger); both write the same lines:
 *
 *   {"level":"warn","time":<epoch ms>,"service":"gateway-reconciler",<bindings>,<fields>,"msg":"…"}
 *
 * Guarantees: every value at a REDACT_PATHS path is written as "[redacted]", in the fields and
 * in a child's bindings alike (the caller's objects are not changed); a line is written whole,
 * synchronously, or not at all (levels below the logger's; "silent": none); a value JSON cannot
 * hold does not fail the call (a cycle is "[Circular]", a BigInt a number, an error under `err`
 * its type, message, stack and own fields, an unserializable value "[unserializable]").
 * test/unit/log.test.ts holds both loggers to the same lines.
 */
import type { Logger } from './log.js';

/** Where secrets can be in a log call's fields or bindings (pino's path syntax; `*` is any key). */
export const REDACT_PATHS = [
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

export const CENSOR = '[redacted]';

/** The fields every line starts with, after level and time. */
export const LOG_BASE: Readonly<Record<string, string>> = { service: 'gateway-reconciler' };

/** pino's levels: a logger writes the calls at or above its own. */
export const LEVEL_VALUES: Readonly<Record<string, number>> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60, silent: Number.POSITIVE_INFINITY };

type Path = readonly string[];

/** `a.b["c-d"]` → ['a', 'b', 'c-d'] */
function parsePath(path: string): Path {
  return [...path.matchAll(/\["([^"]*)"\]|([^.[\]]+)/g)].map((m) => (m[1] ?? m[2]) as string);
}

const PATHS: readonly Path[] = REDACT_PATHS.map(parsePath);

/** `value` with what `paths` (relative to it) name censored; copied where changed, never mutated. */
function redact(value: unknown, paths: readonly Path[]): unknown {
  if (paths.some((p) => p.length === 0)) return CENSOR;
  if (value === null || typeof value !== 'object') return value;
  const source = value as Record<string, unknown>;
  let copy: Record<string, unknown> | undefined;
  for (const key of Object.keys(source)) {
    const below = paths.filter((p) => p[0] === key || p[0] === '*').map((p) => p.slice(1));
    if (below.length === 0 || source[key] === undefined) continue;
    const next = redact(source[key], below);
    if (next === source[key]) continue;
    copy ??= Array.isArray(source) ? ([...source] as unknown as Record<string, unknown>) : { ...source };
    copy[key] = next;
  }
  return copy ?? value;
}

/** What pino's `err` serializer takes for an error: anything with a string `message`. */
function errorLike(value: unknown): value is Error {
  return typeof value === 'object' && value !== null && typeof (value as { message?: unknown }).message === 'string';
}

/** An error as pino's `err` serializer writes it (its type, message, stack and own fields; causes not followed). */
function errorFields(err: Error): Record<string, unknown> {
  const out: Record<string, unknown> = { type: typeof err.constructor === 'function' ? err.constructor.name : err.name, message: err.message, stack: err.stack };
  for (const [k, v] of Object.entries(err)) if (out[k] === undefined) out[k] = v;
  return out;
}

/** JSON text of a value, or undefined for what JSON leaves out (undefined, functions, symbols). */
function json(value: unknown): string | undefined {
  const ancestors: unknown[] = [];
  try {
    return JSON.stringify(value, function (this: unknown, _key: string, v: unknown) {
      if (typeof v === 'bigint') return Number(v);
      if (typeof v !== 'object' || v === null) return v;
      while (ancestors.length > 0 && ancestors.at(-1) !== this) ancestors.pop();
      if (ancestors.includes(v)) return '[Circular]';
      ancestors.push(v);
      return v;
    });
  } catch {
    return '"[unserializable]"';
  }
}

/** `,"key":value` for each field JSON can hold, redacted. */
function fieldsText(fields: object): string {
  let out = '';
  for (const [key, raw] of Object.entries(fields)) {
    const value = key === 'err' && errorLike(raw) ? errorFields(raw) : raw;
    const below = PATHS.filter((p) => p[0] === key || p[0] === '*').map((p) => p.slice(1));
    const text = json(below.length > 0 && value !== undefined ? redact(value, below) : value);
    if (text !== undefined) out += `,${JSON.stringify(key)}:${text}`;
  }
  return out;
}

/** A Logger writing one JSON line per call through `write` (default: stdout). */
export function createLineLogger(level = 'info', write: (line: string) => void = (line) => void process.stdout.write(line)): Logger {
  const threshold = LEVEL_VALUES[level] ?? (LEVEL_VALUES.info as number);
  const make = (bindings: string): Logger => {
    const at =
      (name: 'debug' | 'info' | 'warn' | 'error') =>
      (fields: object, msg?: string): void => {
        if ((LEVEL_VALUES[name] as number) < threshold) return;
        write(`{"level":"${name}","time":${Date.now()}${bindings}${fieldsText(fields)}${msg === undefined ? '' : `,"msg":${JSON.stringify(msg)}`}}\n`);
      };
    return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: (more) => make(bindings + fieldsText(more)) };
  };
  return make(fieldsText(LOG_BASE));
}
