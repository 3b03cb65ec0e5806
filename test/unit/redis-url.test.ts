/**
 * lib/store/redis-url.ts: REDIS_URL read as one URL or as a Redis Cluster's seeds (what the
 * Cluster client is built from), and the passwords it carries (what errors and Events must not).
 */
import t from 'tap';
import { parseClusterSeeds, redisPasswords, splitRedisUrls } from '../../lib/store/redis-url.js';

t.test('seeds: a comma starts another seed only before redis:// or rediss://', async (t) => {
  t.same(splitRedisUrls('redis://a:1, redis://b:2 ,REDISS://c:3'), ['redis://a:1', 'redis://b:2', 'REDISS://c:3']);
  t.same(splitRedisUrls('redis://:p,w@a:1'), ['redis://:p,w@a:1'], 'a comma in a password');
  t.same(splitRedisUrls('redis://a:1,'), ['redis://a:1,'], 'a trailing comma stays (and fails to parse as a URL)');
});

t.test('parseClusterSeeds: nodes, TLS and the one user and password', async (t) => {
  t.same(parseClusterSeeds('rediss://:p%40ss@clustercfg.gr.abc123.euw1.cache.amazonaws.com'), {
    nodes: [{ host: 'clustercfg.gr.abc123.euw1.cache.amazonaws.com', port: 6379 }],
    tls: true,
    password: 'p@ss',
  });
  t.same(parseClusterSeeds('redis://10.0.0.1:7000,redis://app:s3cret@10.0.0.2:7001,redis://[::1]:7002/0'), {
    nodes: [
      { host: '10.0.0.1', port: 7000 },
      { host: '10.0.0.2', port: 7001 },
      { host: '::1', port: 7002 },
    ],
    tls: false,
    username: 'app',
    password: 's3cret',
  });
  t.throws(() => parseClusterSeeds('redis://:a@h:1,redis://:b@h:2'), { message: 'seeds carry different users or passwords (a cluster has one)' });
  t.throws(() => parseClusterSeeds('nonsense'), { message: 'is not a valid URL' });
});

t.test("redisPasswords: every seed's, decoded; none from what is not a URL", async (t) => {
  t.same(redisPasswords('redis://:a%2Cb@h:1,redis://h:2,redis://u:c@h:3'), ['a,b', 'c']);
  t.same(redisPasswords('redis://:p,w@h:1'), ['p,w'], 'one URL with a comma in its password');
  t.same(redisPasswords('::'), []);
});
