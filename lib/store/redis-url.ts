/**
 * REDIS_URL, read: one Redis URL, or (REDIS_CLUSTER=true) the seed URLs of a Redis Cluster.
 *
 * Guarantees: pure (no I/O, no client library), shared by lib/platform/config.ts (which reports a
 * problem as one line naming REDIS_URL) and lib/store/redis.ts (which builds the clients), so
 * what the config accepts is what the store can connect to. A problem's text never repeats
 * the URL or any part of it that may be secret (the password, and so the whole userinfo).
 * Seeds are separated by commas, each a full `redis://` or `rediss://` URL: a comma starts
 * another seed only when `redis://` or `rediss://` follows it, so a single URL whose password
 * holds a comma reads as it always did.
 * A cluster's seeds share one scheme (TLS for all or none), one user and password (a cluster
 * has one ACL; a seed may omit them and take the others'), and database 0 (the only one a
 * cluster has); they carry no query parameters (ioredis' Cluster would ignore them).
 */

export interface ClusterSeeds {
  /** where to ask for the cluster's topology; at least one */
  nodes: { host: string; port: number }[];
  /** `rediss://`: TLS to every node */
  tls: boolean;
  username?: string;
  password?: string;
}

/** The URLs REDIS_URL lists: split at each comma that a `redis://` or `rediss://` follows. */
export function splitRedisUrls(value: string): string[] {
  return value
    .split(/,(?=\s*rediss?:\/\/)/i)
    .map((part) => part.trim())
    .filter((part) => part !== '');
}

/** Why `value` is not a usable REDIS_URL (for a cluster when `cluster`), or undefined when it is. */
export function redisUrlProblem(value: string, cluster: boolean): string | undefined {
  const read = readUrls(value);
  if (typeof read === 'string') return read;
  if (!cluster) {
    if (read.length > 1) return `lists ${read.length} URLs; several URLs are the seeds of a Redis Cluster: set REDIS_CLUSTER=true`;
    return undefined;
  }
  return clusterProblem(read);
}

/**
 * The seeds of a cluster from REDIS_URL's `value`. Throws an Error whose message is the
 * problem (as redisUrlProblem words it, without the URL) when there is one.
 */
export function parseClusterSeeds(value: string): ClusterSeeds {
  const read = readUrls(value);
  const problem = typeof read === 'string' ? read : clusterProblem(read);
  if (problem !== undefined || typeof read === 'string') throw new Error(problem);
  const withAuth = read.find((u) => u.username !== '' || u.password !== '');
  const seeds: ClusterSeeds = {
    nodes: read.map((u) => ({ host: u.hostname.replace(/^\[|\]$/g, ''), port: u.port === '' ? 6379 : Number(u.port) })),
    tls: read[0]?.protocol === 'rediss:',
  };
  if (withAuth?.username) seeds.username = decodeURIComponent(withAuth.username);
  if (withAuth?.password) seeds.password = decodeURIComponent(withAuth.password);
  return seeds;
}

/** The passwords REDIS_URL carries (decoded), for scrubbing; none when it cannot be read. */
export function redisPasswords(value: string): string[] {
  const passwords: string[] = [];
  for (const part of splitRedisUrls(value)) {
    try {
      const password = decodeURIComponent(new URL(part).password);
      if (password !== '') passwords.push(password);
    } catch {
      // not a URL: the config refuses it already
    }
  }
  return passwords;
}

function readUrls(value: string): URL[] | string {
  const parts = splitRedisUrls(value);
  if (parts.length === 0) return 'is empty';
  const urls: URL[] = [];
  for (const [i, part] of parts.entries()) {
    const which = parts.length > 1 ? `seed ${i + 1} ` : '';
    let url: URL;
    try {
      url = new URL(part);
    } catch {
      if (parts.length > 1) return `${which}is not a valid URL`;
      return part.includes(',') ? 'is not a valid URL (separate seeds with commas, each a full redis:// or rediss:// URL)' : 'is not a valid URL';
    }
    if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') return `${which}must start with redis:// or rediss://, got "${url.protocol}//"`;
    urls.push(url);
  }
  return urls;
}

function clusterProblem(urls: URL[]): string | undefined {
  const hostless = urls.findIndex((u) => u.hostname === '');
  if (hostless >= 0) return urls.length > 1 ? `seed ${hostless + 1} names no host` : 'names no host';
  if (new Set(urls.map((u) => u.protocol)).size > 1) return 'mixes redis:// and rediss:// seeds (TLS is for every node of a cluster or none)';
  const auth = new Set(urls.filter((u) => u.username !== '' || u.password !== '').map((u) => `${u.username}:${u.password}`));
  if (auth.size > 1) return 'seeds carry different users or passwords (a cluster has one)';
  const db = urls.find((u) => u.pathname !== '' && u.pathname !== '/' && u.pathname !== '/0');
  if (db !== undefined) return `a Redis Cluster has database 0 only, got "${db.pathname}"`;
  if (urls.some((u) => u.search !== '')) return 'query parameters are not read for a Redis Cluster; remove them';
  return undefined;
}
