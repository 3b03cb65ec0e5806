/**
 * The service of a Lambda container: built from the environment on first use and shared by
 * every invocation the container serves. Concurrent containers share nothing, so REDIS_URL is
 * required (records and locks must live in Redis). Logs are JSON lines on stdout
 * (lib/platform/log-lines.ts: pino's lines, without loading pino); metrics go to CloudWatch as EMF lines
 * on stdout, written at the end of each invocation. A failed build is retried by the next
 * invocation. The function that builds it first says whether its runs are full runs: `schedule`
 * and `shard` do, and their HTTP transport is HTTP_CLIENT's (lib/service.ts fullRunTransport:
 * Node's own, or undici's pooled client, loaded only then); the webhook functions always use
 * Node's own, so their bundles hold no undici (scripts/bundle.ts). Each function is a container
 * of its own, so one container's service has one function's choice.
 */

import { EmfMetrics } from '../lib/metrics/emf.js';
import { loadConfig } from '../lib/platform/config.js';
import { ConfigError } from '../lib/platform/errors.js';
import { createService, fullRunTransport, type Service } from '../lib/service.js';
import { loadRedisCluster } from '../lib/store/redis.js';

let lambdaService: Promise<Service> | undefined;

export function lambdaServiceFromEnv(options: { fullRuns?: boolean } = {}): Promise<Service> {
  lambdaService ??= Promise.resolve().then(async () => {
    // a function is stopped once it answered: a webhook answers when its run is done; its
    // schedule is serverless.yml's EventBridge rule, never an in-process one (RESYNC_SCHEDULE)
    const config = loadConfig({ WEBHOOK_ANSWER: 'report', ...process.env, RESYNC_SCHEDULE: 'off' });
    if (!config.redisUrl) throw new ConfigError([{ setting: 'REDIS_URL', message: 'is required on AWS Lambda (containers share no memory)' }]);
    if (config.webhook.answer === 'accepted')
      throw new ConfigError([{ setting: 'WEBHOOK_ANSWER', message: 'must be report on AWS Lambda (a function is stopped once it answered, so no run could follow the answer)' }]);
    if (config.redisCluster) await loadRedisCluster();
    const transport = options.fullRuns === true ? await fullRunTransport(config) : undefined;
    return createService(config, process.env, { metrics: new EmfMetrics(), ...(transport ? { transport } : {}) });
  });
  lambdaService.catch(() => {
    lambdaService = undefined;
  });
  return lambdaService;
}

/** Closes the container's service (its Redis connection and HTTP agents); for tests and shutdown hooks. */
export async function closeLambdaService(): Promise<void> {
  const svc = lambdaService;
  lambdaService = undefined;
  await (await svc?.catch(() => undefined))?.close();
}
