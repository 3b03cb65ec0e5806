/**
 * Self-hosted entry point (`npm start`): loads the config from the environment, builds the
 * service and the fastify app, listens on HOST:PORT, and runs the full reconcile on
 * RESYNC_SCHEDULE with node-cron (never two scheduled runs at once; RESYNC_SCHEDULE=off when
 * the schedule comes from outside, e.g. a Knative PingSource); a tick over more than SHARD_SIZE
 * objects runs its shards here one after the other, or sends them to SHARD_QUEUE_URL.
 *
 * With TLS_CERT and TLS_KEY it serves HTTPS (the API server's audit webhook sends its token
 * only over HTTPS); with TLS_CLIENT_CA the webhooks and /resync also need a client
 * certificate signed by that CA.
 *
 * Every run here, scheduled or from a request, sends its requests to the API server and the
 * gateways over HTTP_CLIENT's transport (lib/service.ts fullRunTransport: Node's own, or undici's
 * pooled client sized for a run's concurrency).
 *
 * With a setting missing or malformed it prints one line per bad setting, naming it, and
 * exits with status 2; no stack trace. SIGTERM and SIGINT stop the schedule (no run starts
 * after them), let runs in flight stop writing, settle, record and release within
 * SHUTDOWN_GRACE_MS, finish the requests in flight, and close the clients, Redis last.
 */
import { readFileSync } from 'node:fs';
import cron from 'node-cron';
import { PrometheusMetrics } from './metrics/prometheus.js';
import { type Config, loadConfig } from './platform/config.js';
import { ConfigError, describeError, ShuttingDownError } from './platform/errors.js';
import { createLogger } from './platform/log.js';
import { type AppOptions, buildApp } from './server.js';
import { createService, fullRunTransport, type Service } from './service.js';
import { loadRedisCluster } from './store/redis.js';
import { tickToShardQueue } from './triggers/shard-queue.js';

function readPem(setting: string, path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (err) {
    throw new ConfigError([{ setting, message: `cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? describeError(err)}` }]);
  }
}

async function main(): Promise<void> {
  let svc: Service;
  let logger: ReturnType<typeof createLogger>;
  let config: Config;
  let https: AppOptions['https'];
  try {
    config = loadConfig(process.env);
    const tls = config.tls;
    if (tls) {
      https = { cert: readPem('TLS_CERT', tls.certFile), key: readPem('TLS_KEY', tls.keyFile) };
      if (tls.clientCaFile) https.ca = readPem('TLS_CLIENT_CA', tls.clientCaFile);
    }
    logger = createLogger(config.logLevel);
    if (config.redisCluster) await loadRedisCluster();
    const transport = await fullRunTransport(config);
    svc = createService(config, process.env, { log: logger, metrics: new PrometheusMetrics(), ...(transport ? { transport } : {}) });
  } catch (err) {
    if (err instanceof ConfigError) {
      for (const p of err.problems) process.stderr.write(`gateway-reconciler: ${p.setting}: ${p.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const { log } = svc;
  if (config.allowUnauthenticated) log.warn({}, 'ALLOW_UNAUTHENTICATED=true: endpoints without a token configured accept requests from anyone');
  const app = buildApp(svc, https ? { https } : {});
  await app.listen({ port: config.port, host: config.host });
  log.info({ address: app.server.address(), store: svc.storeKind, schedule: config.resyncSchedule ?? 'off' }, 'listening');

  const task =
    config.resyncSchedule === undefined
      ? undefined
      : cron.schedule(
          config.resyncSchedule,
          async () => {
            try {
              // above SHARD_SIZE objects, the tick's shards go to SHARD_QUEUE_URL, or run here one after the other
              await tickToShardQueue(svc);
            } catch (err) {
              // a tick that fires while stopping starts nothing
              if (err instanceof ShuttingDownError) return;
              log.error({ err: describeError(err) }, 'scheduled run failed');
            }
          },
          { name: 'resync', noOverlap: true },
        );

  // SIGTERM: no new scheduled run; runs in flight (scheduled or from a request) stop writing,
  // settle, record and release within SHUTDOWN_GRACE_MS; then requests drain, and Redis is closed last
  const stop = async (signal: string): Promise<void> => {
    log.info({ signal, graceMs: config.shutdownGraceMs }, 'stopping');
    await task?.stop();
    const { drained } = await svc.shutdown(config.shutdownGraceMs);
    if (!drained) log.warn({ graceMs: config.shutdownGraceMs }, 'runs still in flight after SHUTDOWN_GRACE_MS; their locks expire with their TTL');
    await app.close();
    await svc.close();
    log.info({ drained }, 'stopped');
    // the logger writes stdout synchronously (lib/platform/log.ts): every line is out, in order
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
}

main().catch((err: unknown) => {
  process.stderr.write(`gateway-reconciler: ${describeError(err)}\n`);
  process.exit(1);
});
