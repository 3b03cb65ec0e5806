import t from 'tap';
import { DEFAULT_SCHEDULE, loadConfig } from '../../lib/config.js';
import { ConfigError } from '../../lib/errors.js';

const TOKEN = 'a-webhook-token-of-some-length';
const base = { TYK_URL: 'http://tyk:8080/', TYK_AUTH: 'secret-gateway-key', WEBHOOK_TOKEN: TOKEN, RESYNC_TOKEN: TOKEN };

function problems(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err.message.split('\n');
    throw err;
  }
  return [];
}

t.test('defaults', async (t) => {
  const c = loadConfig(base);
  t.equal(c.tyk.mode, 'ce');
  t.equal(c.tyk.url, 'http://tyk:8080', 'trailing slash trimmed');
  t.equal(c.resyncSchedule, DEFAULT_SCHEDULE);
  t.equal(loadConfig({ ...base, RESYNC_SCHEDULE: 'off' }).resyncSchedule, undefined, 'off: no in-process schedule');
  t.equal(c.port, 8080);
  t.equal(c.host, '0.0.0.0');
  t.equal(c.logLevel, 'info');
  t.equal(c.watchNamespaces, undefined);
  t.equal(c.redisUrl, undefined);
  t.equal(c.tyk.insecureSkipVerify, false);
  t.equal(c.httpTimeoutMs, 10_000);
  t.equal(loadConfig({ ...base, HTTP_TIMEOUT_MS: '250' }).httpTimeoutMs, 250);
  t.match(problems({ ...base, HTTP_TIMEOUT_MS: '5' }), [/HTTP_TIMEOUT_MS: must be milliseconds/]);
  t.equal(c.maxDeletesPerRun, 50);
  t.equal(loadConfig({ ...base, MAX_DELETES_PER_RUN: '0' }).maxDeletesPerRun, 0, '0: no limit');
  t.same(problems({ ...base, MAX_DELETES_PER_RUN: '-1' }), ['MAX_DELETES_PER_RUN: must be a whole number from 0 to 1000000, got "-1"']);
  t.same(problems({ ...base, MAX_DELETES_PER_RUN: 'many' }), ['MAX_DELETES_PER_RUN: must be a whole number from 0 to 1000000, got "many"']);
});

t.test('lists and flags', async (t) => {
  const c = loadConfig({
    ...base,
    WATCH_NAMESPACE: 'a, b,a',
    WEBHOOK_TOKEN: `${TOKEN},${TOKEN}-2`,
    TYK_TLS_INSECURE_SKIP_VERIFY: 'true',
    TYK_ORG: 'org1',
    REDIS_URL: 'redis://:pw@r:6379/0',
    PORT: '0',
    TYK_MODE: 'CE',
  });
  t.same(c.watchNamespaces, ['a', 'b']);
  t.same(c.webhookTokens, [TOKEN, `${TOKEN}-2`]);
  t.equal(c.tyk.insecureSkipVerify, true);
  t.equal(c.tyk.org, 'org1');
  t.equal(c.redisUrl, 'redis://:pw@r:6379/0');
  t.equal(c.port, 0);
});

t.test('every bad setting is named, one line each, secrets never echoed', async (t) => {
  const lines = problems({
    TYK_AUTH: '',
    TYK_URL: 'ftp://x',
    WEBHOOK_TOKEN: 'short-secret',
    PORT: '70000',
    RESYNC_SCHEDULE: 'often',
    LOG_LEVEL: 'loud',
    WATCH_NAMESPACE: 'Bad_NS',
    REDIS_URL: 'http://x',
    TYK_TLS_INSECURE_SKIP_VERIFY: 'maybe',
    TYK_MODE: 'enterprise',
  });
  const named = lines.map((l) => l.split(':')[0]);
  t.same(
    named.sort(),
    ['LOG_LEVEL', 'PORT', 'REDIS_URL', 'RESYNC_SCHEDULE', 'RESYNC_TOKEN', 'TYK_AUTH', 'TYK_MODE', 'TYK_TLS_INSECURE_SKIP_VERIFY', 'TYK_URL', 'WATCH_NAMESPACE', 'WEBHOOK_TOKEN'].sort(),
  );
  t.notMatch(lines.join('\n'), /short-secret/);
});

t.test('missing TYK_URL alone is one line naming it', async (t) => {
  t.same(problems({ ...base, TYK_URL: '' }), ['TYK_URL: is required (the gateway admin URL, e.g. http://tyk-gateway:8080)']);
  t.match(problems({ ...base, TYK_URL: 'not a url' }), ['TYK_URL: is not a valid URL']);
  t.match(problems({ ...base, TYK_URL: 'http://u:p@tyk' }), [/TYK_URL: must not contain credentials/]);
  t.match(problems({ ...base, REDIS_URL: '::' }), ['REDIS_URL: is not a valid URL']);
  t.equal(loadConfig({ ...base, TYK_MODE: 'pro' }).tyk.mode, 'pro');
});

t.test('tokens are required unless ALLOW_UNAUTHENTICATED=true', async (t) => {
  t.match(problems({ TYK_URL: 'http://t', TYK_AUTH: 'k' }), [/WEBHOOK_TOKEN: is required/, /RESYNC_TOKEN: is required/]);
  const c = loadConfig({ TYK_URL: 'http://t', TYK_AUTH: 'k', ALLOW_UNAUTHENTICATED: 'true' });
  t.equal(c.allowUnauthenticated, true);
  t.same(c.webhookTokens, []);
});

t.test('SHARD_SIZE and SHARD_QUEUE_URL: defaults, values, one line per bad one (the URL never echoed)', async (t) => {
  const c = loadConfig(base);
  t.same(c.shards, { size: 2000, queueUrl: undefined }, 'default: 2,000 objects a shard; no queue (shards run in the process)');
  const queueUrl = 'https://sqs.eu-west-1.amazonaws.com/123456789012/gateway-reconciler-dev-ShardQueue-AbC';
  t.same(loadConfig({ ...base, SHARD_SIZE: ' 500 ', SHARD_QUEUE_URL: queueUrl }).shards, { size: 500, queueUrl });
  t.equal(loadConfig({ ...base, SHARD_QUEUE_URL: 'http://127.0.0.1:4566/000000000000/shards' }).shards.queueUrl, 'http://127.0.0.1:4566/000000000000/shards', 'http for a local stand-in');
  for (const bad of ['0', '-3', '1.5', 'lots', '1000001']) {
    t.same(problems({ ...base, SHARD_SIZE: bad }), [`SHARD_SIZE: must be a whole number from 1 to 1000000, got "${bad}"`], `SHARD_SIZE=${bad}`);
  }
  const refused: [string, RegExp][] = [
    ['not a url', /it is not a URL$/],
    ['ftp://sqs.example.com/1/q', /got "ftp:\/\/"$/],
    ['https://user:hunter2@sqs.eu-west-1.amazonaws.com/1/q', /without credentials in it$/],
    ['https://sqs.eu-west-1.amazonaws.com/', /path must be \/<account>\/<queue>$/],
    ['https://sqs.eu-west-1.amazonaws.com/1/q/extra', /path must be \/<account>\/<queue>$/],
  ];
  for (const [url, why] of refused) {
    const lines = problems({ ...base, SHARD_QUEUE_URL: url });
    t.equal(lines.length, 1, url);
    t.match(lines[0], /^SHARD_QUEUE_URL: must be an SQS queue URL, https:\/\/sqs\.<region>\.amazonaws\.com\/<account>\/<queue>/);
    t.match(lines[0], why);
    t.notMatch(lines[0], /hunter2|user/, 'the value is not echoed');
  }
});
