/**
 * Unauthenticated callers cost nothing: every guarded route (the webhooks, /resync, /schedule,
 * /shards) checks the token before the body is read or parsed. Through `app.inject` a spy on
 * fastify's preParsing stage (the step that reads the body for the content-type parser) sees no
 * refused request; through a listening server, a body that never ends still gets its 401 at
 * once, and the connection is closed while the sender is still sending.
 */
import { once } from 'node:events';
import { connect } from 'node:net';
import { Readable } from 'node:stream';
import t from 'tap';
import { buildApp } from '../../lib/server.js';
import { RESYNC_TOKEN, startWorld, WEBHOOK_TOKEN, type World } from '../harness/world.js';

async function world(t: { teardown(fn: () => unknown): void }, options?: Parameters<typeof startWorld>[0]): Promise<World> {
  const w = await startWorld(options);
  t.teardown(() => w.close());
  return w;
}

const ROUTES = [
  ['/webhooks/watch', 'application/json', WEBHOOK_TOKEN],
  ['/webhooks/audit', 'application/json', WEBHOOK_TOKEN],
  ['/webhooks/cloudevents', 'application/cloudevents+json', WEBHOOK_TOKEN],
  ['/resync', 'application/json', RESYNC_TOKEN],
  ['/schedule', 'application/json', RESYNC_TOKEN],
  ['/shards', 'application/json', RESYNC_TOKEN],
] as const;

/** A body stream that sends a chunk every few ms and never ends (until destroyed). */
function endlessBody(): Readable & { sent: () => number } {
  let sent = 0;
  let timer: NodeJS.Timeout | undefined;
  const stream = new Readable({
    read() {
      timer ??= setInterval(() => {
        sent++;
        stream.push('{"kind":"EventList","items":[');
      }, 5);
    },
    destroy(err, cb) {
      clearInterval(timer);
      cb(err);
    },
  });
  return Object.assign(stream, { sent: () => sent });
}

t.test('a refused caller: 401 before the body is parsed, on every guarded route; an admitted one is parsed', async (t) => {
  const w = await world(t);
  const app = buildApp(w.svc);
  t.teardown(() => app.close());
  const parsed: string[] = [];
  app.addHook('preParsing', async (req, _reply, payload) => {
    parsed.push(req.url);
    return payload;
  });
  w.resetCounts();
  for (const [url, type, token] of ROUTES) {
    for (const [what, headers] of [
      ['no token', {}],
      ['a wrong token', { authorization: 'Bearer not-the-token-at-all-xx' }],
    ] as const) {
      const res = await app.inject({ method: 'POST', url, payload: '{"not json', headers: { 'content-type': type, ...headers } });
      t.equal(res.statusCode, 401, `${url}, ${what}: 401`);
      t.equal(res.headers.connection, 'close', `${url}, ${what}: the connection is closed, so the rest of the body is not read`);
      t.notMatch(res.body, token, `${url}: the token is not echoed`);
    }
    t.same(parsed, [], `${url}: no refused body reached the parser`);
    const admitted = await app.inject({ method: 'POST', url, payload: '{"not json', headers: { 'content-type': type, authorization: `Bearer ${token}` } });
    t.equal(parsed.length, 1, `${url}: an admitted body is read (the spy sees it)`);
    t.not(admitted.statusCode, 401, `${url}: admitted`);
    parsed.length = 0;
  }
  t.equal(w.tyk.calls.length, 0, 'the gateway was not asked');
});

t.test('an unknown route: 404 before its body is parsed, its connection closed', async (t) => {
  const w = await world(t);
  const app = buildApp(w.svc);
  t.teardown(() => app.close());
  let parsed = 0;
  app.addHook('preParsing', async (_req, _reply, payload) => {
    parsed++;
    return payload;
  });
  for (const method of ['POST', 'PUT', 'GET'] as const) {
    const res = await app.inject({ method, url: '/nope?x=1', ...(method === 'GET' ? {} : { payload: '{"not json' }), headers: { 'content-type': 'application/json' } });
    t.equal(res.statusCode, 404, `${method}: 404`);
    t.same(res.json(), { error: `no route ${method} /nope`, code: 'NOT_FOUND' });
    t.equal(res.headers.connection, 'close');
  }
  t.equal(parsed, 0, 'no body reached the parser');
  const payload = endlessBody();
  const endless = await app.inject({ method: 'POST', url: '/webhooks/nope', payload, headers: { 'content-type': 'application/json' } });
  payload.destroy();
  t.equal(endless.statusCode, 404, 'a body that never ends: answered');
});

t.test('a refused caller is not counted against the rate limit, a known one over it gets 429 before its body is parsed', async (t) => {
  const w = await world(t, { env: { WEBHOOK_RATE_LIMIT: '1' } });
  const app = buildApp(w.svc);
  t.teardown(() => app.close());
  let parsed = 0;
  app.addHook('preParsing', async (_req, _reply, payload) => {
    parsed++;
    return payload;
  });
  const post = (headers: Record<string, string>) =>
    app.inject({ method: 'POST', url: '/webhooks/watch', payload: '[]', remoteAddress: '10.0.0.7', headers: { 'content-type': 'application/json', ...headers } });
  t.equal((await post({})).statusCode, 401);
  t.equal((await post({ authorization: `Bearer ${WEBHOOK_TOKEN}` })).statusCode, 200, 'the budget was not spent by the refused request');
  t.equal(parsed, 1);
  const limited = await post({ authorization: `Bearer ${WEBHOOK_TOKEN}` });
  t.equal(limited.statusCode, 429);
  t.equal(parsed, 1, 'the limited request was not parsed');
});

t.test('through app.inject: a body that never ends gets its 401 without being waited for', async (t) => {
  const w = await world(t);
  for (const [url, type] of ROUTES) {
    const payload = endlessBody();
    const started = performance.now();
    const res = await w.app.inject({ method: 'POST', url, payload, headers: { 'content-type': type } });
    payload.destroy();
    t.equal(res.statusCode, 401, `${url}: 401`);
    t.ok(performance.now() - started < 2_000, `${url}: answered at once (${Math.round(performance.now() - started)} ms)`);
  }
});

t.test('through a listening server: an endless chunked body gets 401 at once and its connection closed', async (t) => {
  const w = await world(t);
  await w.app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = w.app.server.address() as { port: number };
  for (const [url, type] of ROUTES) {
    const socket = connect(port, '127.0.0.1');
    await once(socket, 'connect');
    let closed = false;
    socket.on('close', () => {
      closed = true;
    });
    socket.on('error', () => {});
    const chunk = 'x'.repeat(1024);
    const started = performance.now();
    socket.write(`POST ${url} HTTP/1.1\r\nHost: x\r\nContent-Type: ${type}\r\nTransfer-Encoding: chunked\r\n\r\n`);
    // keep sending for as long as the socket is open, as a hostile sender would
    const feed = setInterval(() => {
      if (!socket.destroyed && socket.writable) socket.write(`${chunk.length.toString(16)}\r\n${chunk}\r\n`);
    }, 2);
    t.teardown(() => clearInterval(feed));
    let answer = '';
    socket.on('data', (d: Buffer) => {
      answer += d.toString();
    });
    const deadline = Date.now() + 3_000;
    while (!closed && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    clearInterval(feed);
    const tookMs = performance.now() - started;
    socket.destroy();
    t.match(answer, /^HTTP\/1.1 401/, `${url}: 401`);
    t.match(answer, /\r\nconnection: close\r\n/i, `${url}: connection: close`);
    t.ok(closed, `${url}: the server closed the connection while the body was still coming (${Math.round(tookMs)} ms)`);
    t.ok(tookMs < 2_000, `${url}: within 2 s`);
  }
});
