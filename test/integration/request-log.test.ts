/**
 * One log line per HTTP request through the service's logger (lib/triggers/request-log.ts):
 * every rejection (400, 401, 413, 415, 429) leaves one, with its request id, route, status and
 * duration, and no token; probes log at debug. And the production logger names its levels.
 */
import { Writable } from 'node:stream';
import t from 'tap';
import { createLogger } from '../../lib/platform/log.js';
import { capturingLogger, WEBHOOK_TOKEN, worldFor } from '../harness/world.js';

const BAD_TOKEN = 'not-the-token-but-long-enough';

t.test('each request leaves one line; rejections at warn, with status and no secret', async (t) => {
  const log = capturingLogger();
  // the rate limit counts every admitted request before its body is read: the 400, 413, 415 and 200 below spend four
  const w = await worldFor(t, { log, env: { WEBHOOK_BODY_LIMIT: '2048', WEBHOOK_RATE_LIMIT: '5' } });
  const lines = () => log.entries.filter((e) => e.msg === 'request');
  const post = (url: string, payload: string, headers: Record<string, string> = {}) =>
    w.app.inject({ method: 'POST', url, payload, headers: { 'content-type': 'application/json', authorization: `Bearer ${WEBHOOK_TOKEN}`, ...headers } });

  t.equal((await post('/webhooks/watch?x=1', '[]', { authorization: `Bearer ${BAD_TOKEN}` })).statusCode, 401);
  t.equal((await post('/webhooks/watch', '{not json')).statusCode, 400);
  t.equal((await post('/webhooks/watch', JSON.stringify({ pad: 'x'.repeat(4096) }))).statusCode, 413);
  t.equal((await post('/webhooks/watch', 'x', { 'content-type': 'image/png' })).statusCode, 415);
  t.equal((await post('/webhooks/watch', '[]', { 'x-request-id': 'trace-42' })).statusCode, 200);
  let limited = 0;
  for (let i = 0; i < 3; i++) if ((await post('/webhooks/watch', '[]')).statusCode === 429) limited++;
  t.ok(limited > 0, 'over WEBHOOK_RATE_LIMIT');
  t.equal((await w.app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200);

  const got = lines();
  t.equal(got.length, 9, 'one line per request');
  t.match(got.slice(0, 5), [
    { level: 'warn', method: 'POST', route: '/webhooks/watch', status: 401, reqId: /^[0-9a-f-]{36}$/, durationMs: Number },
    { level: 'warn', status: 400 },
    { level: 'warn', status: 413 },
    { level: 'warn', status: 415 },
    { level: 'info', status: 200, reqId: 'trace-42' },
  ]);
  t.equal(got.filter((e) => e.status === 429 && e.level === 'warn').length, limited);
  t.match(got.at(-1), { level: 'debug', route: '/healthz', status: 200 });
  const text = JSON.stringify(log.entries);
  t.notMatch(text, BAD_TOKEN, 'no token in any line');
  t.notMatch(text, WEBHOOK_TOKEN);
  t.notMatch(text, '?x=1', 'no query either');
});

t.test('the production logger writes level names and redacts secrets', async (t) => {
  const out: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      out.push(String(chunk));
      done();
    },
  });
  const log = createLogger('debug', sink);
  log.warn({ route: '/resync', status: 401, auth: 'secret-value', headers: { authorization: 'Bearer secret-value' } }, 'request');
  log.child({ runId: 'r1' }).debug({}, 'detail');
  const [first, second] = out.map((l) => JSON.parse(l) as Record<string, unknown>);
  t.match(first, { level: 'warn', service: 'gateway-reconciler', msg: 'request', status: 401, auth: '[redacted]', headers: { authorization: '[redacted]' } });
  t.match(second, { level: 'debug', runId: 'r1', msg: 'detail' });
  t.notMatch(out.join(''), 'secret-value');
});
