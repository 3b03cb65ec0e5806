/**
 * The HTTP transport's contract (lib/platform/http.ts), held by both implementations, Node's own
 * (lib/platform/http-node.ts) and undici's (lib/platform/http-undici.ts): every test below runs
 * once per implementation, against loopback servers (plain and TLS) over real sockets: answers of
 * any status are answers (JSON or text; a non-2xx read as text even with `consume`); everything
 * else is a TransportError that says whether it timed out and carries no header value, URL
 * credential or query; a reset before the whole answer (before the headers, or mid-body) is
 * retried once; the timeout is one deadline for connect, headers and the whole body (a body read
 * as it arrives too: a slow drip is cut off at it), which each whole MiB received moves later (a
 * large answer that keeps arriving is read whole); what `consume` throws fails the request; an
 * answer above maxResponseBytes is refused as soon as its Content-Length or its bytes (chunked)
 * say so; connections are pooled and kept alive (requests one after the other: one connection
 * with Node's agent, two in turn with undici's pool, see lib/platform/http-undici.ts); a
 * transport's TLS settings (CA, client certificate and key, verification, SNI name, the name a
 * certificate is checked against) are applied, also as a kubeconfig gives them to KubeClient;
 * close() lets a request in flight finish and refuses new ones.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkServerIdentity, type TLSSocket } from 'node:tls';
import { KubeConfig } from '@kubernetes/client-node';
import t, { type Test } from 'tap';
import { API_DEFINITION } from '../../lib/kinds/api-definition/kind.js';
import { KubeClient } from '../../lib/kube/client.js';
import { KubeUnavailableError } from '../../lib/platform/errors.js';
import { BODY_MS_PER_MIB, type HttpRequest, type HttpResponse, type HttpTransport, ResponseTooLargeError, TransportError, type TransportFactory } from '../../lib/platform/http.js';
import { nodeTransports } from '../../lib/platform/http-node.js';
import { undiciTransports } from '../../lib/platform/http-undici.js';

const TLS = new URL('../fixtures/tls/', import.meta.url);
const pem = (name: string): string => readFileSync(new URL(name, TLS), 'utf8');
const SECRET = 'http-test-secret-0123456789';

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

interface Loopback {
  url: string;
  /** connections accepted so far */
  connections: number;
  requests: { method: string; url: string; headers: IncomingMessage['headers']; body: string; clientCert?: string }[];
}

async function listen(t: Test, server: Server, handler: Handler, scheme: 'http' | 'https'): Promise<Loopback> {
  const state: Loopback = { url: '', connections: 0, requests: [] };
  const sockets = new Set<Socket>();
  server.on(scheme === 'https' ? 'secureConnection' : 'connection', (socket: Socket) => {
    state.connections += 1;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const peer = scheme === 'https' ? (req.socket as TLSSocket).getPeerCertificate() : undefined;
      state.requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body, ...(typeof peer?.subject?.CN === 'string' ? { clientCert: peer.subject.CN } : {}) });
      handler(req, res, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `${scheme}://127.0.0.1:${(server.address() as AddressInfo).port}`;
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  );
  return state;
}

const plain = (t: Test, handler: Handler): Promise<Loopback> => listen(t, createServer({ keepAliveTimeout: 5_000 }), handler, 'http');

/** A TLS server with the fixtures' localhost certificate that asks for (and reports) a client certificate. */
const secure = (t: Test, handler: Handler): Promise<Loopback> =>
  listen(t, createTlsServer({ cert: pem('server.pem'), key: pem('server-key.pem'), ca: pem('ca.pem'), requestCert: true, rejectUnauthorized: false }), handler, 'https');

const json = (res: ServerResponse, status: number, body: unknown): void => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

async function transportError(t: Test, p: Promise<unknown>): Promise<TransportError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  t.ok(err instanceof TransportError, `a TransportError: ${String(err)}`);
  return err as TransportError;
}

const IMPLEMENTATIONS: [string, TransportFactory][] = [
  ['node', nodeTransports()],
  ['undici', undiciTransports()],
];

for (const [kind, make] of IMPLEMENTATIONS) {
  t.test(`${kind}: the transport contract`, async (t) => {
    // requests without a transport of their own go over one shared transport, as a client's do
    const shared = make({});
    t.teardown(() => shared.close());
    const httpRequest = ({ agent, ...req }: HttpRequest & { agent?: HttpTransport }): Promise<HttpResponse> => (agent ?? shared).request(req);
    t.equal(shared.kind, kind);
    // connections for requests one after the other: Node's agent reuses the one; undici's pool hands a
    // connection on a turn of the event loop after its answer, so a request sent at once takes a second (lib/platform/http-undici.ts)
    const sequential = kind === 'node' ? 1 : 2;

    t.test('any HTTP answer resolves: status, headers, JSON or text; the request goes as sent', async (t) => {
      const server = await plain(t, (req, res, body) => {
        if (req.url === '/json') return json(res, 201, { echo: body, type: req.headers['content-type'] });
        if (req.url === '/text') {
          res.writeHead(503, { 'content-type': 'text/plain', 'x-many': ['a', 'b'] as unknown as string, 'set-cookie': ['a=1', 'b=2'] });
          return res.end('\uFEFFunavailable, try later');
        }
        res.writeHead(204);
        res.end();
      });
      const created = await httpRequest({ method: 'POST', url: `${server.url}/json`, headers: { authorization: `Bearer ${SECRET}` }, body: { a: 'ü' }, timeoutMs: 2_000 });
      t.equal(created.status, 201);
      t.same(created.json, { echo: '{"a":"ü"}', type: 'application/json' }, 'the body as JSON, its content type');
      const sent = server.requests[0]!;
      t.equal(sent.headers.accept, 'application/json');
      t.equal(sent.headers.authorization, `Bearer ${SECRET}`);
      t.equal(sent.headers['content-length'], String(Buffer.byteLength('{"a":"ü"}')), 'content-length in bytes');

      const raw = await httpRequest({ method: 'PUT', url: `${server.url}/json`, rawBody: '-----BEGIN X-----', contentType: 'application/x-pem-file', timeoutMs: 2_000 });
      t.same(raw.json, { echo: '-----BEGIN X-----', type: 'application/x-pem-file' }, 'a raw body as it is, with its content type');
      const patched = await httpRequest({ method: 'PATCH', url: `${server.url}/json`, body: { b: 1 }, contentType: 'application/merge-patch+json', timeoutMs: 2_000 });
      t.same(patched.json, { echo: '{"b":1}', type: 'application/merge-patch+json' });

      const text = await httpRequest({ method: 'GET', url: `${server.url}/text`, timeoutMs: 2_000 });
      t.equal(text.status, 503, 'an error status is an answer, not a failure');
      t.equal(text.text, 'unavailable, try later', 'text, a byte order mark dropped');
      t.equal(text.json, undefined, 'not JSON: json is undefined');
      t.same(text.headers['x-many'], ['a', 'b'].join(', '), 'headers as Node gives them: repeated values joined');
      t.same(text.headers['set-cookie'], ['a=1', 'b=2'], 'set-cookie a list');

      // a URL's credentials go as Basic authorization, decoded, as Node sends them; never in the request line
      const port = new URL(server.url).port;
      await httpRequest({ method: 'GET', url: `http://us%40er:p%20ss@127.0.0.1:${port}/auth?x=1`, timeoutMs: 2_000 });
      const basic = server.requests.at(-1);
      t.equal(basic?.headers.authorization, `Basic ${Buffer.from('us@er:p ss').toString('base64')}`);
      t.equal(basic?.url, '/auth?x=1', 'the path and query as given');

      const empty = await httpRequest({ method: 'DELETE', url: `${server.url}/none`, timeoutMs: 2_000 });
      t.same({ status: empty.status, text: empty.text, json: empty.json }, { status: 204, text: '', json: undefined });
    });

    t.test('what is not an answer is a TransportError without secrets: refused, hung, stalled mid-body, bad URL', async (t) => {
      // a port nothing listens on: listen, note it, close
      const gone = await plain(t, () => {});
      const closed = createServer();
      await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
      const port = (closed.address() as AddressInfo).port;
      await new Promise<void>((resolve) => closed.close(() => resolve()));
      const refused = await transportError(
        t,
        httpRequest({ method: 'GET', url: `http://user:${SECRET}@127.0.0.1:${port}/x?token=${SECRET}`, headers: { 'x-tyk-authorization': SECRET }, timeoutMs: 2_000 }),
      );
      t.equal(refused.timedOut, false);
      t.match(refused.message, new RegExp(`^GET http://127\\.0\\.0\\.1:${port}/x: .*ECONNREFUSED`), 'method, the URL without credentials or query, the reason');
      t.notMatch(refused.message, SECRET, 'no secret in the message');

      // headers never come
      const started = performance.now();
      const hung = await transportError(t, httpRequest({ method: 'GET', url: `${gone.url}/hang`, headers: { authorization: SECRET }, timeoutMs: 150 }));
      t.equal(hung.timedOut, true);
      t.match(hung.message, /: timed out after 150 ms$/);
      t.notMatch(hung.message, SECRET);
      t.ok(performance.now() - started < 1_500, 'given up at the timeout');

      // headers come, the body stalls: the timeout bounds the body too
      const stalled = await plain(t, (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"items": [');
      });
      const midBody = await transportError(t, httpRequest({ method: 'GET', url: `${stalled.url}/list`, timeoutMs: 200 }));
      t.equal(midBody.timedOut, true, 'a body that never ends times out');

      const bad = await transportError(t, httpRequest({ method: 'GET', url: 'not a url', timeoutMs: 200 }));
      t.equal(bad.timedOut, false);
      t.match(bad.message, /^GET \(invalid url\): /);
      const ftp = await transportError(t, httpRequest({ method: 'GET', url: 'ftp://127.0.0.1/x', timeoutMs: 200 }));
      t.match(ftp.message, /unsupported protocol ftp:/);

      // a header value Node refuses to send: named by header, not by value
      const crlf = await transportError(t, httpRequest({ method: 'GET', url: `${gone.url}/x`, headers: { authorization: `${SECRET}\r\nx: y` }, timeoutMs: 500 }));
      t.notMatch(crlf.message, SECRET, 'the refused value is not quoted');
    });

    t.test('a body read as it arrives (consume) has one deadline for the whole exchange: a slow drip is cut off at it', async (t) => {
      const collect = async (body: AsyncIterable<Uint8Array>): Promise<unknown> => {
        const parts: Buffer[] = [];
        for await (const chunk of body) parts.push(Buffer.from(chunk));
        return JSON.parse(Buffer.concat(parts).toString('utf8'));
      };
      // one byte every 40 ms, for ever: each wait is far under the 250 ms deadline
      let drips = 0;
      const drip = await plain(t, (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('[');
        const timer = setInterval(() => {
          drips++;
          if (!res.destroyed) res.write(' ');
        }, 40);
        res.once('close', () => clearInterval(timer));
      });
      const started = performance.now();
      const dripped = await transportError(t, httpRequest({ method: 'GET', url: `${drip.url}/list`, headers: { authorization: SECRET }, timeoutMs: 250, consume: collect }));
      const took = performance.now() - started;
      t.equal(dripped.timedOut, true);
      t.match(dripped.message, /: timed out after 250 ms$/);
      t.notMatch(dripped.message, SECRET);
      t.ok(took >= 240 && took < 1_000, `given up at the deadline (${Math.round(took)} ms), though bytes kept coming`);
      t.ok(drips >= 3, 'bytes did keep coming');
      const whole = await transportError(t, httpRequest({ method: 'GET', url: `${drip.url}/list`, timeoutMs: 250 }));
      t.equal(whole.timedOut, true, 'read as one text, the same body is bounded the same way');

      // a large answer that keeps arriving (1 MiB every 100 ms, 1.2 s in all) is read whole past a
      // 300 ms deadline: each whole MiB received moves it BODY_MS_PER_MIB later
      const chunk = Buffer.alloc(1024 * 1024, 0x20);
      const large = await plain(t, (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('[');
        let sent = 0;
        const timer = setInterval(() => {
          if (res.destroyed) return clearInterval(timer);
          if (++sent <= 12) {
            res.write(chunk);
            return;
          }
          clearInterval(timer);
          res.end('1]');
        }, 100);
        res.once('close', () => clearInterval(timer));
      });
      for (const consume of [collect, undefined]) {
        const begun = performance.now();
        const answer = await httpRequest({ method: 'GET', url: `${large.url}/list`, timeoutMs: 300, ...(consume ? { consume } : {}) });
        t.same(answer.json, [1], consume ? 'read as it arrives' : 'read as one text');
        t.ok(performance.now() - begun > 1_000, 'past the deadline it started with');
      }
      t.equal(BODY_MS_PER_MIB, 1_000);

      // a body that completes within the deadline is read whole
      const quick = await plain(t, (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('[0,1,');
        setTimeout(() => res.end('2]'), 30);
      });
      t.same((await httpRequest({ method: 'GET', url: `${quick.url}/list`, timeoutMs: 1_000, consume: collect })).json, [0, 1, 2]);

      // what consume throws fails the request, as a TransportError that quotes it
      const refusing = async (body: AsyncIterable<Uint8Array>): Promise<unknown> => {
        for await (const _ of body) throw new Error('not a list');
        return undefined;
      };
      const thrown = await transportError(t, httpRequest({ method: 'GET', url: `${quick.url}/list`, timeoutMs: 1_000, consume: refusing }));
      t.equal(thrown.timedOut, false);
      t.match(thrown.message, /: not a list$/);
      t.match((thrown.cause as Error).message, 'not a list', 'the thrown error is the cause');
      // an error answer is read as text, not consumed
      const denied = await plain(t, (_req, res) => json(res, 403, { message: 'denied' }));
      const answer = await httpRequest({ method: 'GET', url: `${denied.url}/list`, timeoutMs: 1_000, consume: refusing });
      t.same({ status: answer.status, json: answer.json }, { status: 403, json: { message: 'denied' } }, 'a non-2xx answer: text and its JSON, consume not called');

      // headers that never come: the timeout as for any request
      const mute = await plain(t, () => {});
      const hung = await transportError(t, httpRequest({ method: 'GET', url: `${mute.url}/list`, timeoutMs: 150, consume: collect }));
      t.match(hung.message, /: timed out after 150 ms$/);
    });

    t.test('maxResponseBytes: a longer answer is refused (by its Content-Length, or by the bytes read), whole or read as it arrives', async (t) => {
      const collect = async (body: AsyncIterable<Uint8Array>): Promise<unknown> => {
        let n = 0;
        for await (const chunk of body) n += chunk.length;
        return n;
      };
      const declared = await plain(t, (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': '5000' });
        res.end(`"${'x'.repeat(4998)}"`);
      });
      const byLength = await httpRequest({ method: 'GET', url: `${declared.url}/one?token=${SECRET}`, timeoutMs: 1_000, maxResponseBytes: 1_000 }).then(
        () => undefined,
        (e: unknown) => e,
      );
      t.ok(byLength instanceof ResponseTooLargeError, 'a ResponseTooLargeError');
      t.match((byLength as Error).message, /: the answer is 5000 bytes, above the limit of 1000 bytes$/);
      t.notMatch((byLength as Error).message, SECRET, 'the query is not quoted');
      t.equal((byLength as ResponseTooLargeError).limit, 1_000);

      // chunked, no length: refused once more than the limit has arrived; the rest is never waited for
      let written = 0;
      const endless = await plain(t, (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        const timer = setInterval(() => {
          if (res.destroyed) return;
          res.write('x'.repeat(400));
          written += 400;
        }, 5);
        res.once('close', () => clearInterval(timer));
      });
      for (const consume of [undefined, collect]) {
        const started = performance.now();
        const err = await httpRequest({ method: 'GET', url: `${endless.url}/list`, timeoutMs: 5_000, maxResponseBytes: 2_000, ...(consume ? { consume } : {}) }).then(
          () => undefined,
          (e: unknown) => e,
        );
        t.ok(err instanceof ResponseTooLargeError, `refused (${consume ? 'read as it arrives' : 'read whole'})`);
        t.match((err as Error).message, /the answer is more than 2000 bytes, above the limit of 2000 bytes$/);
        t.ok(performance.now() - started < 2_000, 'long before the deadline');
      }
      t.ok(written > 2_000, 'the server did send more');

      // at the limit exactly: read
      const fits = await plain(t, (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(`"${'y'.repeat(998)}"`);
      });
      t.equal(((await httpRequest({ method: 'GET', url: `${fits.url}/one`, timeoutMs: 1_000, maxResponseBytes: 1_000 })).json as string).length, 998);
      t.equal((await httpRequest({ method: 'GET', url: `${fits.url}/one`, timeoutMs: 1_000, maxResponseBytes: 1_000, consume: collect })).json, 1_000);
    });

    t.test('a reset before the whole answer is retried once on a fresh connection; twice is a failure', async (t) => {
      let drops = 0;
      const server = await plain(t, (req, res) => {
        if (drops > 0) {
          drops -= 1;
          req.socket.destroy();
          return;
        }
        json(res, 200, { ok: true });
      });
      drops = 1;
      const once = await httpRequest({ method: 'GET', url: `${server.url}/a`, timeoutMs: 2_000 });
      t.equal(once.status, 200, 'one drop: answered by the retry');
      t.equal(server.requests.length, 2);

      drops = 2;
      const twice = await transportError(t, httpRequest({ method: 'GET', url: `${server.url}/b`, timeoutMs: 2_000 }));
      t.equal(twice.timedOut, false);
      t.match(twice.message, /ECONNRESET|socket hang up/);
      t.equal(server.requests.length, 4, 'two attempts, no third');

      // an answer cut off mid-body is no answer either: retried
      let cut = 1;
      const cutting = await plain(t, (_req, res) => {
        if (cut-- > 0) {
          res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
          res.write('{"partial":');
          setTimeout(() => res.socket?.destroy(), 10);
          return;
        }
        json(res, 200, { whole: true });
      });
      const whole = await httpRequest({ method: 'GET', url: `${cutting.url}/c`, timeoutMs: 2_000 });
      t.same(whole.json, { whole: true }, 'the cut answer was retried');
      // cut mid-body every time: a failure, not timed out, after two attempts
      const always = await plain(t, (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
        res.write('{"partial":');
        setTimeout(() => res.socket?.destroy(), 10);
      });
      const reset = await transportError(t, httpRequest({ method: 'GET', url: `${always.url}/d?token=${SECRET}`, timeoutMs: 2_000 }));
      t.equal(reset.timedOut, false);
      t.match(reset.message, /ECONNRESET/);
      t.notMatch(reset.message, SECRET);
      t.equal(always.requests.length, 2, 'two attempts');
    });

    t.test('a transport pools keep-alive connections; close() lets a request in flight finish, then refuses new ones', async (t) => {
      let release: (() => void) | undefined;
      const server = await plain(t, (req, res) => {
        if (req.url === '/slow') {
          release = () => json(res, 200, { slow: true });
          return;
        }
        json(res, 200, { n: server.requests.length });
      });
      const agent = make({});
      for (let i = 0; i < 20; i++) t.equal((await httpRequest({ method: 'GET', url: `${server.url}/n`, timeoutMs: 2_000, agent })).status, 200);
      t.equal(server.connections, sequential, `twenty sequential requests over ${sequential} connection(s)`);
      const parallel = await Promise.all([1, 2, 3].map(() => httpRequest({ method: 'GET', url: `${server.url}/n`, timeoutMs: 2_000, agent })));
      t.ok(parallel.every((r) => r.status === 200));
      // three at once: at most three more than before (Node: the one, reused, and two; undici: may leave the two it just used)
      t.ok(server.connections <= sequential + 2, `parallel requests: ${server.connections} connections`);
      // one request now and then (a turn of the event loop between them): one connection for them all
      const spaced = await plain(t, (_req, res) => json(res, 200, {}));
      for (let i = 0; i < 5; i++) {
        t.equal((await httpRequest({ method: 'GET', url: `${spaced.url}/n`, timeoutMs: 2_000, agent })).status, 200);
        await new Promise(setImmediate);
      }
      t.equal(spaced.connections, 1, 'requests a turn apart: one connection');

      const slow = httpRequest({ method: 'GET', url: `${server.url}/slow`, timeoutMs: 5_000, agent });
      while (!release) await new Promise((r) => setTimeout(r, 5));
      let closed = false;
      const closing = agent.close().then(() => {
        closed = true;
      });
      await new Promise((r) => setTimeout(r, 50));
      t.equal(closed, false, 'close() waits for the request in flight');
      release();
      t.same((await slow).json, { slow: true }, 'which completes');
      await closing;
      const refused = await transportError(t, httpRequest({ method: 'GET', url: `${server.url}/n`, timeoutMs: 500, agent }));
      t.match(refused.message, /agent is closed/, 'a closed transport refuses new requests');
    });

    t.test('TLS: the CA, a client certificate and key, verification off, the SNI name, the name a certificate is checked against', async (t) => {
      const server = await secure(t, (_req, res) => json(res, 200, { ok: true }));
      const port = new URL(server.url).port;
      const localhost = `https://localhost:${port}/x`;

      const unknownCa = await transportError(t, httpRequest({ method: 'GET', url: localhost, timeoutMs: 2_000, agent: make({}) }));
      t.match(unknownCa.message, /self[- ]signed|unable to (get|verify)/i, 'an unknown CA is refused by default');

      const verified = make({ ca: pem('ca.pem') });
      t.teardown(() => verified.close());
      t.equal((await httpRequest({ method: 'GET', url: localhost, timeoutMs: 2_000, agent: verified })).status, 200, 'with the CA: verified');
      t.equal(server.requests.at(-1)?.clientCert, undefined, 'no client certificate offered');

      const mutual = make({ ca: pem('ca.pem'), cert: pem('client.pem'), key: pem('client-key.pem') });
      t.teardown(() => mutual.close());
      t.equal((await httpRequest({ method: 'GET', url: localhost, timeoutMs: 2_000, agent: mutual })).status, 200);
      t.equal(server.requests.at(-1)?.clientCert, 'kube-apiserver-audit', 'the client certificate was presented');

      const insecure = make({ rejectUnauthorized: false });
      t.teardown(() => insecure.close());
      t.equal((await httpRequest({ method: 'GET', url: localhost, timeoutMs: 2_000, agent: insecure })).status, 200, 'verification off: any certificate');

      const named = make({ ca: pem('ca.pem'), servername: 'localhost' });
      t.teardown(() => named.close());
      t.equal((await httpRequest({ method: 'GET', url: `https://127.0.0.1:${port}/x`, timeoutMs: 2_000, agent: named })).status, 200, 'the SNI name is what the certificate is checked against');
      const misnamed = make({ ca: pem('ca.pem'), servername: 'elsewhere.example' });
      t.teardown(() => misnamed.close());
      const wrongName = await transportError(t, httpRequest({ method: 'GET', url: `https://127.0.0.1:${port}/x`, timeoutMs: 2_000, agent: misnamed }));
      t.match(wrongName.message, /elsewhere\.example|altnames/i, 'a name the certificate does not hold is refused');

      // the name the certificate is checked against, apart from the SNI name (a replica reached at its address)
      const checked: string[] = [];
      const checkedAs = (name: string) =>
        make({
          ca: pem('ca.pem'),
          checkServerIdentity: (_host, cert) => {
            checked.push(name);
            return checkServerIdentity(name, cert);
          },
        });
      const asLocalhost = checkedAs('localhost');
      t.teardown(() => asLocalhost.close());
      t.equal((await httpRequest({ method: 'GET', url: `https://127.0.0.1:${port}/x`, timeoutMs: 2_000, agent: asLocalhost })).status, 200, 'checked as localhost');
      const asOther = checkedAs('other.example');
      t.teardown(() => asOther.close());
      const notOther = await transportError(t, httpRequest({ method: 'GET', url: `https://127.0.0.1:${port}/x`, timeoutMs: 2_000, agent: asOther }));
      t.match(notOther.message, /other\.example/, 'refused: the certificate does not name it');
      t.same(checked, ['localhost', 'other.example'], 'the check was asked');
    });

    t.test("KubeClient over TLS: the kubeconfig's CA, client certificate and token reach the API server", async (t) => {
      const object = { apiVersion: 'tyk.tyk.io/v1alpha1', kind: 'ApiDefinition', metadata: { name: 'httpbin', namespace: 'default' }, spec: {} };
      const server = await secure(t, (req, res) => (req.url?.endsWith('/apidefinitions/httpbin') ? json(res, 200, object) : json(res, 404, { kind: 'Status', code: 404 })));
      const dir = await mkdtemp(join(tmpdir(), 'gr-http-'));
      t.teardown(() => rm(dir, { recursive: true, force: true }));
      const b64 = (name: string): string => Buffer.from(pem(name)).toString('base64');
      const kubeconfig = join(dir, 'kubeconfig');
      await writeFile(
        kubeconfig,
        [
          'apiVersion: v1',
          'kind: Config',
          'current-context: tls',
          'clusters:',
          '- name: tls',
          '  cluster:',
          `    server: https://localhost:${new URL(server.url).port}`,
          `    certificate-authority-data: ${b64('ca.pem')}`,
          'users:',
          '- name: me',
          '  user:',
          `    client-certificate-data: ${b64('client.pem')}`,
          `    client-key-data: ${b64('client-key.pem')}`,
          `    token: ${SECRET}`,
          'contexts:',
          '- name: tls',
          '  context: {cluster: tls, user: me}',
          '',
        ].join('\n'),
      );
      const kc = new KubeConfig();
      kc.loadFromFile(kubeconfig);
      const client = new KubeClient(kc, { timeoutMs: 2_000, instance: 'http-test', transport: make });
      t.teardown(() => client.close());
      t.match(await client.get(API_DEFINITION, 'default', 'httpbin'), { metadata: { name: 'httpbin' } });
      t.equal(await client.get(API_DEFINITION, 'default', 'absent'), null, '404: null');
      const seen = server.requests[0];
      t.equal(seen?.clientCert, 'kube-apiserver-audit', 'the client certificate from the kubeconfig');
      t.equal(seen?.headers.authorization, `Bearer ${SECRET}`, 'the token from the kubeconfig');
      t.equal(server.connections, sequential, 'pooled connections, as for any two calls in a row');

      // a kubeconfig without the CA: the server's certificate is refused, and the error names no secret
      const noCa = new KubeConfig();
      noCa.loadFromString(readFileSync(kubeconfig, 'utf8').replace(/ {4}certificate-authority-data: .*\n/, ''));
      const unverified = new KubeClient(noCa, { timeoutMs: 2_000, instance: 'http-test', transport: make });
      t.teardown(() => unverified.close());
      const err = await unverified.get(API_DEFINITION, 'default', 'httpbin').catch((e: unknown) => e);
      t.ok(err instanceof KubeUnavailableError, `unverifiable: KubeUnavailableError (${String(err)})`);
      t.notMatch(String((err as Error).message), SECRET);
    });
  });
}
