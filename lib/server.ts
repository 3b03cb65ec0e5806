/**
 * The fastify app: routes over the triggers in ./triggers/. Built by a factory; listening
 * is separate (lib/main.ts), so tests use `app.inject`.
 *
 * Each route's guard (token, client certificate, rate limit: ./triggers/authorize.ts) is checked
 * in an onRequest hook, before fastify reads or parses the body: an unauthenticated request is
 * answered 401 (429 over the rate limit) with `connection: close`, so its body is neither read
 * whole nor parsed, and a sender that never ends its body holds nothing once answered. A request
 * for a route that does not exist is answered 404 the same way.
 *
 * Bodies are taken as text (JSON, newline-delimited JSON, plain text) and parsed by the
 * triggers, so every format error is a 400 with a reason from our own parsers; bodies over
 * `bodyLimit` are refused with 413 before they are read whole.
 */

import { randomUUID } from 'node:crypto';
import type { TLSSocket } from 'node:tls';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { CLOUDEVENTS_TYPES } from './events/cloudevents.js';
import type { Service } from './service.js';
import { admission } from './triggers/admission.js';
import { auditWebhook } from './triggers/audit.js';
import { admit } from './triggers/authorize.js';
import { cloudEventsWebhook } from './triggers/cloudevents.js';
import { healthz, readyz } from './triggers/health.js';
import type { HttpCaller, HttpInput, HttpRoute } from './triggers/io.js';
import { metrics } from './triggers/metrics.js';
import { logRequest } from './triggers/request-log.js';
import { respond } from './triggers/respond.js';
import { resync } from './triggers/resync.js';
import { scheduleEndpoint } from './triggers/schedule-endpoint.js';
import { shardEndpoint } from './triggers/shards.js';
import { watchWebhook } from './triggers/watch.js';

export interface AppOptions {
  /** largest accepted body; default WEBHOOK_BODY_LIMIT */
  bodyLimit?: number;
  /** serve HTTPS with these PEMs; `ca` makes the server ask for client certificates */
  https?: { cert: string | Buffer; key: string | Buffer; ca?: string | Buffer };
  /** fastify's own request logging besides ours (one line per request through the service's logger); default off */
  logger?: boolean;
}

const TEXT_TYPES = [
  'application/json',
  'application/x-ndjson',
  'application/jsonl',
  'application/json-seq',
  'text/plain',
  // what `curl -d` sends by default; /resync reads it as form fields, the webhooks as text
  'application/x-www-form-urlencoded',
  ...CLOUDEVENTS_TYPES,
];

/** The caller as its headers and connection show it: what a route's guard looks at, before the body. */
function toCaller(req: FastifyRequest): HttpCaller {
  const headers: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(req.headers)) headers[k] = Array.isArray(v) ? v.join(', ') : v;
  const socket = req.raw.socket as TLSSocket;
  return { headers, sourceIp: req.ip, clientCertVerified: socket.encrypted === true && socket.authorized === true };
}

function toInput(req: FastifyRequest): HttpInput {
  const query: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries((req.query ?? {}) as Record<string, unknown>)) query[k] = Array.isArray(v) ? String(v[0]) : String(v);
  return { ...toCaller(req), method: req.method, query, body: typeof req.body === 'string' ? req.body : '' };
}

function notFound(req: FastifyRequest): { error: string; code: string } {
  return { error: `no route ${req.method} ${req.url.split('?')[0]}`, code: 'NOT_FOUND' };
}

function httpsOptions(https: NonNullable<AppOptions['https']>) {
  // Ask for a client certificate but let the routes decide: probes (/healthz, /readyz) come without one.
  return https.ca === undefined ? https : { ...https, requestCert: true, rejectUnauthorized: false };
}

export function buildApp(svc: Service, options: AppOptions = {}): FastifyInstance {
  const base = {
    logger: options.logger ?? false,
    bodyLimit: options.bodyLimit ?? svc.webhookLimits.bodyLimit,
    return503OnClosing: true,
    requestIdHeader: 'x-request-id',
    genReqId: () => randomUUID(),
  };
  const app = (options.https ? Fastify({ ...base, https: httpsOptions(options.https) }) : Fastify(base)) as unknown as FastifyInstance;
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(TEXT_TYPES, { parseAs: 'string' }, (_req, body, done) => done(null, body));

  const route = (r: HttpRoute) => ({
    // before content-type parsing: a refused caller's body is never read whole nor parsed
    onRequest: async (req: FastifyRequest, reply: FastifyReply) => {
      const refused = admit(svc, toCaller(req), r.guard);
      if (refused === undefined) return;
      // closing the connection stops reading what the caller still sends
      return reply
        .code(refused.statusCode)
        .headers({ ...refused.headers, connection: 'close' })
        .send(refused.body);
    },
    handler: async (req: FastifyRequest, reply: FastifyReply) => {
      const out = await respond(svc, toInput(req), r.handle);
      return reply
        .code(out.statusCode)
        .headers(out.headers ?? {})
        .send(out.body);
    },
  });
  // an unknown route is answered as a refused caller is: before its body is read, its connection closed
  app.addHook('onRequest', async (req, reply) => {
    if (req.is404) return reply.code(404).header('connection', 'close').send(notFound(req));
  });
  // one line per request through our logger, rejections (400/401/413/415/429/503) included, and its count in the metrics
  app.addHook('onResponse', async (req, reply) => {
    const route = req.url.split('?')[0] ?? req.url;
    logRequest(svc.log, { reqId: req.id, method: req.method, route, status: reply.statusCode, durationMs: reply.elapsedTime });
    svc.recordRequest(route, reply.statusCode);
  });
  app.post('/webhooks/watch', route(watchWebhook));
  app.post('/webhooks/audit', route(auditWebhook));
  app.post('/webhooks/cloudevents', route(cloudEventsWebhook));
  app.post('/resync', route(resync));
  app.post('/admission', route(admission));
  app.post('/shards', route(shardEndpoint));
  app.post('/schedule', route(scheduleEndpoint));
  app.get('/healthz', route({ guard: 'open', handle: healthz }));
  app.get('/readyz', route(readyz));
  app.get('/metrics', route(metrics));

  app.setErrorHandler((err: { statusCode?: number; code?: string; message: string }, _req, reply) => {
    const status = err.statusCode && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 500;
    if (status === 500) svc.log.error({ err: err.message }, 'unhandled request error');
    return reply.code(status).send({ error: status === 500 ? 'internal error' : err.message, code: err.code ?? 'BAD_REQUEST' });
  });
  app.setNotFoundHandler((req, reply) => reply.code(404).send(notFound(req)));
  return app;
}
