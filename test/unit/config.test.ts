import t from 'tap';
import { DEFAULT_SCHEDULE, loadConfig } from '../../lib/platform/config.js';
import { configProblems } from '../fixtures/config.js';

const TOKEN = 'a-webhook-token-of-some-length';
const base = { TYK_URL: 'http://tyk:8080/', TYK_AUTH: 'secret-gateway-key', WEBHOOK_TOKEN: TOKEN, RESYNC_TOKEN: TOKEN };

const problems = configProblems;

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
  t.equal(c.httpClient, 'node', "full runs use Node's own HTTP client unless told otherwise");
  t.equal(loadConfig({ ...base, HTTP_CLIENT: 'undici' }).httpClient, 'undici');
  t.equal(loadConfig({ ...base, HTTP_CLIENT: 'Node' }).httpClient, 'node', 'in any case');
  t.same(problems({ ...base, HTTP_CLIENT: 'fetch' }), ['HTTP_CLIENT: must be node or undici, got "fetch"']);
  t.equal(c.gatewayMaxResponseBytes, 448 * 1024 * 1024, 'a list of 50,000 APIs (~7.5 KB each) and a quarter more');
  t.equal(loadConfig({ ...base, GATEWAY_MAX_RESPONSE_BYTES: '1048576' }).gatewayMaxResponseBytes, 1_048_576);
  t.same(problems({ ...base, GATEWAY_MAX_RESPONSE_BYTES: '100' }), ['GATEWAY_MAX_RESPONSE_BYTES: must be a whole number from 65536 to 4294967296, got "100"']);
  t.same(problems({ ...base, GATEWAY_MAX_RESPONSE_BYTES: '1MB' }), ['GATEWAY_MAX_RESPONSE_BYTES: must be a whole number from 65536 to 4294967296, got "1MB"']);
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
  const cli = loadConfig({ TYK_URL: 'http://t', TYK_AUTH: 'k' }, { serving: false });
  t.same([cli.webhookTokens, cli.resyncTokens, cli.allowUnauthenticated], [[], [], false], 'the command line serves no request: it needs no token');
  t.throws(() => loadConfig({ TYK_AUTH: 'k' }, { serving: false }), /TYK_URL/, 'the other settings are checked as ever');
});

t.test("REDIS_CLUSTER: REDIS_URL as a Redis Cluster's seeds", async (t) => {
  t.equal(loadConfig(base).redisCluster, false, 'default: one Redis');
  t.equal(loadConfig({ ...base, REDIS_URL: 'redis://r:6379' }).redisCluster, false);
  const endpoint = 'rediss://:s3cret@clustercfg.gr.abc123.euw1.cache.amazonaws.com:6379';
  const c = loadConfig({ ...base, REDIS_URL: endpoint, REDIS_CLUSTER: 'true' });
  t.equal(c.redisCluster, true, 'ElastiCache: the configuration endpoint, TLS');
  t.equal(c.redisUrl, endpoint, 'REDIS_URL as given');
  const seeds = 'redis://:pw@10.0.0.1:7000, redis://10.0.0.2:7001,redis://:pw@10.0.0.3';
  t.equal(loadConfig({ ...base, REDIS_URL: seeds, REDIS_CLUSTER: 'TRUE' }).redisUrl, seeds, 'several seeds; a seed may leave the password to the others');
  t.equal(loadConfig({ ...base, REDIS_URL: 'redis://:pw@r:6379/0', REDIS_CLUSTER: 'true' }).redisCluster, true, "database 0 is a cluster's");
  t.equal(loadConfig({ ...base, REDIS_URL: 'redis://:p,w@r:6379', REDIS_CLUSTER: 'false' }).redisUrl, 'redis://:p,w@r:6379', "a comma in a single URL's password is not a list");

  t.same(problems({ ...base, REDIS_URL: 'redis://r:6379', REDIS_CLUSTER: 'maybe' }), ['REDIS_CLUSTER: must be true or false, got "maybe"'], 'a bad value: one line naming the setting');
  t.same(problems({ ...base, REDIS_CLUSTER: 'true' }), ["REDIS_CLUSTER: is true but REDIS_URL is not set (the cluster's configuration endpoint or seed nodes)"]);
  t.same(
    problems({ ...base, REDIS_URL: 'redis://a:1,redis://b:2' }),
    ['REDIS_URL: lists 2 URLs; several URLs are the seeds of a Redis Cluster: set REDIS_CLUSTER=true'],
    'several URLs need REDIS_CLUSTER=true',
  );
  t.same(problems({ ...base, REDIS_URL: 'redis://a:1,rediss://b:2', REDIS_CLUSTER: 'false' }), ['REDIS_URL: lists 2 URLs; several URLs are the seeds of a Redis Cluster: set REDIS_CLUSTER=true']);

  const cluster = (url: string): string[] => problems({ ...base, REDIS_URL: url, REDIS_CLUSTER: 'true' });
  t.same(cluster('redis://:hunter2@a:1,rediss://:hunter2@b:2'), ['REDIS_URL: mixes redis:// and rediss:// seeds (TLS is for every node of a cluster or none)']);
  t.same(cluster('redis://:hunter2@a:1,redis://:hunter3@b:2'), ['REDIS_URL: seeds carry different users or passwords (a cluster has one)']);
  t.same(cluster('redis://:hunter2@a:1/3'), ['REDIS_URL: a Redis Cluster has database 0 only, got "/3"']);
  t.same(cluster('redis://:hunter2@a:1?family=6'), ['REDIS_URL: query parameters are not read for a Redis Cluster; remove them']);
  t.same(cluster('redis://:hunter2@a:1,redis://b:x'), ['REDIS_URL: seed 2 is not a valid URL']);
  t.same(
    cluster('redis://:hunter2@a:1,http://b:2'),
    ['REDIS_URL: is not a valid URL (separate seeds with commas, each a full redis:// or rediss:// URL)'],
    'a seed without our scheme is not split off',
  );
  t.same(cluster('redis://:hunter2@a:1,b:2'), ['REDIS_URL: is not a valid URL (separate seeds with commas, each a full redis:// or rediss:// URL)']);
  t.same(cluster('redis://:hunter2@a:1,redis://:hunter2@:2'), ['REDIS_URL: seed 2 is not a valid URL']);
  t.same(cluster('redis:///0'), ['REDIS_URL: names no host']);
  t.same(cluster('redis://a:1,redis:///0'), ['REDIS_URL: seed 2 names no host']);
  const all = ['redis://:hunter2@a:1,rediss://:hunter2@b:2', 'redis://:hunter2@a:1,redis://:hunter3@b:2', 'redis://:hunter2@a:1/3', 'redis://:hunter2@a:1,redis://b:x'].flatMap(cluster);
  t.notMatch(all.join('\n'), /hunter/, 'no password in any line');
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

t.test('WEBHOOK_ANSWER: accepted by default, report, one line for anything else', async (t) => {
  t.equal(loadConfig(base).webhook.answer, 'accepted');
  t.equal(loadConfig({ ...base, WEBHOOK_ANSWER: 'report' }).webhook.answer, 'report');
  t.equal(loadConfig({ ...base, WEBHOOK_ANSWER: ' Accepted ' }).webhook.answer, 'accepted');
  t.same(problems({ ...base, WEBHOOK_ANSWER: 'later' }), ['WEBHOOK_ANSWER: must be report or accepted, got "later"']);
});

t.test('ADOPT_NAMESPACES: none by default, namespace names, or * for every namespace; one line when bad', async (t) => {
  t.same(loadConfig(base).adoptNamespaces, [], 'unset: no namespace adopts');
  t.same(loadConfig({ ...base, ADOPT_NAMESPACES: 'team-a, team-b,team-a' }).adoptNamespaces, ['team-a', 'team-b']);
  t.same(loadConfig({ ...base, ADOPT_NAMESPACES: ' * ' }).adoptNamespaces, ['*']);
  t.same(problems({ ...base, ADOPT_NAMESPACES: 'team-a,Bad_NS' }), ['ADOPT_NAMESPACES: "Bad_NS" is not a valid namespace name (or * for every namespace)']);
  t.same(problems({ ...base, ADOPT_NAMESPACES: '*,team-a' }), ['ADOPT_NAMESPACES: is either * (every namespace) or a list of namespace names, not both']);
});

t.test('CROSS_NAMESPACE_REFS and CONTEXT_URL_ALLOW: grant by default, allow; the allow list parsed; one line per bad setting', async (t) => {
  t.same(loadConfig(base).boundaries, { crossNamespaceRefs: 'grant' }, 'grants needed, no allow list');
  t.equal(loadConfig({ ...base, CROSS_NAMESPACE_REFS: ' Allow ' }).boundaries.crossNamespaceRefs, 'allow');
  t.same(problems({ ...base, CROSS_NAMESPACE_REFS: 'yes' }), ['CROSS_NAMESPACE_REFS: must be grant or allow, got "yes"']);
  const allow = loadConfig({ ...base, CONTEXT_URL_ALLOW: 'tyk-gateway.tyk:8080, 10.0.0.0/8' }).boundaries.contextUrlAllow ?? [];
  t.match(allow, [{ host: 'tyk-gateway.tyk', port: 8080 }, { cidr: '10.0.0.0/8' }]);
  t.equal(loadConfig({ ...base, CONTEXT_URL_ALLOW: ' ' }).boundaries.contextUrlAllow, undefined, 'blank: not set');
  t.same(problems({ ...base, CONTEXT_URL_ALLOW: '10.0.0.0/40, tyk', CROSS_NAMESPACE_REFS: 'nope' }), [
    'CROSS_NAMESPACE_REFS: must be grant or allow, got "nope"',
    'CONTEXT_URL_ALLOW: "10.0.0.0/40" is not a CIDR (address/prefix length) (entries: host, host:port or CIDR, comma-separated)',
  ]);
});

t.test("TYK_GATEWAY_SERVICE: the gateway's Service as <namespace>/<name>[:<port>], ce only; one line naming it when bad", async (t) => {
  t.equal(loadConfig(base).tyk.service, undefined, 'unset: no replicas discovered');
  t.same(loadConfig({ ...base, TYK_GATEWAY_SERVICE: 'tyk/gateway-svc-tyk-oss-tyk-gateway' }).tyk.service, { namespace: 'tyk', name: 'gateway-svc-tyk-oss-tyk-gateway' });
  t.same(loadConfig({ ...base, TYK_GATEWAY_SERVICE: ' tyk/gw:http ' }).tyk.service, { namespace: 'tyk', name: 'gw', port: 'http' }, 'a port name stays a string');
  t.same(loadConfig({ ...base, TYK_GATEWAY_SERVICE: 'tyk/gw:8080' }).tyk.service, { namespace: 'tyk', name: 'gw', port: 8080 }, 'a port number is a number');
  t.same(loadConfig({ ...base, TYK_GATEWAY_SERVICE: 'tyk/gw:65535' }).tyk.service?.port, 65535);
  t.same(loadConfig({ ...base, TYK_GATEWAY_SERVICE: 'tyk/gw:1' }).tyk.service?.port, 1);
  t.equal(loadConfig({ ...base, TYK_GATEWAY_SERVICE: 'tyk/gw' }).tyk.url, 'http://tyk:8080', 'the rest of TYK_* as before');
  for (const bad of ['gw', 'tyk/', '/gw', 'tyk/gw/x', 'tyk/gw:', 'tyk/gw:0', 'tyk/gw:65536', 'tyk/gw:http_s', 'Tyk/gw', 'tyk/1gw', 'tyk/gw:a:b', 'tyk/gw:-http']) {
    const lines = problems({ ...base, TYK_GATEWAY_SERVICE: bad });
    t.equal(lines.length, 1, `"${bad}": one line`);
    t.match(lines[0], /^TYK_GATEWAY_SERVICE: must be <namespace>\/<service name>\[:<port name or number>\]/, `"${bad}": names the setting and the form`);
  }
  t.same(problems({ ...base, TYK_MODE: 'pro', TYK_GATEWAY_SERVICE: 'tyk/gw' }), ['TYK_GATEWAY_SERVICE: applies to TYK_MODE=ce only (the Tyk Dashboard keeps its APIs itself, for every gateway)']);
  t.same(loadConfig({ ...base, TYK_MODE: 'pro' }).tyk.service, undefined, 'pro without it: fine');
});
