/**
 * The two loggers (lib/platform/log.ts: pino, for the server; lib/platform/log-lines.ts: without pino, for
 * Lambda) write the same lines for the same calls: fields, bindings, levels and, above all,
 * redaction of every secret path. Compared line by line (parsed, `time` aside), so a change of
 * REDACT_PATHS or of either logger that makes them differ fails here.
 */
import { Writable } from 'node:stream';
import t, { type Test } from 'tap';
import { createLogger, type Logger } from '../../lib/platform/log.js';
import { createLineLogger } from '../../lib/platform/log-lines.js';

const SECRET = 'secret-value-0123456789';

type Call = (log: Logger) => void;

function pinoLines(level: string, call: Call): string[] {
  const out: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      out.push(String(chunk));
      done();
    },
  });
  call(createLogger(level, sink));
  return out;
}

function lines(level: string, call: Call): string[] {
  const out: string[] = [];
  call(createLineLogger(level, (l) => out.push(l)));
  return out;
}

/** Each line parsed, `time` checked and dropped. */
function parsed(t: Test, raw: string[]): Record<string, unknown>[] {
  return raw.map((l) => {
    t.ok(l.endsWith('\n') && !l.slice(0, -1).includes('\n'), 'one line, newline-terminated');
    const { time, ...rest } = JSON.parse(l) as Record<string, unknown>;
    t.type(time, 'number', 'time: epoch ms');
    return rest;
  });
}

function same(t: Test, name: string, call: Call, level = 'debug'): Record<string, unknown>[] {
  const ours = lines(level, call);
  const theirs = pinoLines(level, call);
  const a = parsed(t, ours);
  t.same(a, parsed(t, theirs), `${name}: the same lines as pino`);
  t.notMatch(ours.join(''), SECRET, `${name}: no secret`);
  return a;
}

t.test('fields, message, levels, bindings: as pino writes them', async (t) => {
  const [first] = same(t, 'plain', (log) => log.info({ route: '/webhooks/watch', status: 200, durationMs: 12.5, ok: true, none: null, list: [1, 'a'] }, 'request'));
  t.strictSame(first, { level: 'info', service: 'gateway-reconciler', route: '/webhooks/watch', status: 200, durationMs: 12.5, ok: true, none: null, list: [1, 'a'], msg: 'request' });
  same(t, 'no message', (log) => log.warn({ a: 1 }));
  same(t, 'undefined and functions left out', (log) => log.error({ a: undefined, f: () => 1, b: 'x' }, 'm'));
  same(t, 'nested objects and dates', (log) => log.info({ report: { objects: [{ name: 'a', action: 'NOOP' }] }, at: new Date(0) }, 'run'));
  same(t, 'quotes and unicode in keys and message', (log) => log.info({ 'we"ird': 'ü\n"', '': 1 }, 'say "hi"\n'));
  same(t, 'child bindings, nested children', (log) => log.child({ runId: 'r1' }).child({ key: 'k' }).info({ x: 1 }, 'detail'));
  same(t, 'a field that repeats a binding', (log) => log.child({ a: 1 }).info({ a: 2 }, 'dup'));
  const boom = Object.assign(new TypeError('boom'), { code: 'E_BOOM' });
  same(t, 'an error under err', (log) => log.error({ err: boom }, 'failed'));
  same(t, 'a string under err', (log) => log.warn({ err: 'GET http://x/y: timed out' }, 'failed'));
  // a cycle: pino's redaction copies the object first, so it writes one more level than we do
  // before "[Circular]"; neither fails
  const cyclic: Record<string, unknown> = { name: 'a' };
  cyclic.self = cyclic;
  const [cycle] = parsed(
    t,
    lines('info', (log) => log.info({ a: cyclic, n: 10n }, 'cycle')),
  );
  t.same(cycle, { level: 'info', service: 'gateway-reconciler', a: { name: 'a', self: '[Circular]' }, n: 10, msg: 'cycle' }, 'a cycle and a BigInt: written, not thrown');
  for (const level of ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']) {
    const got = same(
      t,
      `level ${level}`,
      (log) => {
        log.debug({ n: 1 }, 'd');
        log.info({ n: 2 }, 'i');
        log.warn({ n: 3 }, 'w');
        log.error({ n: 4 }, 'e');
      },
      level,
    );
    t.ok(got.length <= 4);
  }
});

t.test('every secret path is redacted, in fields and in bindings, and the caller keeps its objects', async (t) => {
  const headers = { authorization: `Bearer ${SECRET}`, 'x-tyk-authorization': SECRET, accept: 'application/json' };
  const fields = {
    token: SECRET,
    auth: SECRET,
    password: SECRET,
    headers,
    req: { method: 'POST', headers: { ...headers } },
    gateway: { url: 'http://tyk', auth: SECRET, token: SECRET, password: SECRET, name: 'default' },
    // `*.token` names a field's field, not one in an array's item: neither logger goes there
    list: [{ token: 'in-an-array' }],
  };
  const before = JSON.stringify(fields);
  const [line] = same(t, 'every path', (log) => log.warn(fields, 'request'));
  t.match(line, {
    token: '[redacted]',
    auth: '[redacted]',
    password: '[redacted]',
    headers: { authorization: '[redacted]', 'x-tyk-authorization': '[redacted]', accept: 'application/json' },
    req: { method: 'POST', headers: { authorization: '[redacted]', 'x-tyk-authorization': '[redacted]', accept: 'application/json' } },
    gateway: { url: 'http://tyk', auth: '[redacted]', token: '[redacted]', password: '[redacted]', name: 'default' },
  });
  t.equal(JSON.stringify(fields), before, 'the logged object is unchanged');

  same(t, 'in bindings', (log) => log.child({ token: SECRET, ctx: { password: SECRET, ns: 'default' } }).info({ headers: { authorization: SECRET } }, 'child'));
  same(t, 'a secret that is an object', (log) => log.info({ auth: { user: 'u', pass: SECRET } }, 'obj'));
  same(t, 'paths that are absent or not objects', (log) => log.info({ headers: 'none', req: null, gateway: 5, token: undefined }, 'absent'));
});
