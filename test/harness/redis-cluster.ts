/**
 * A private Redis Cluster for integration tests: three redis-server masters (no replicas) on
 * free loopback ports, joined by `redis-cli --cluster create`.
 *
 * Guarantees: startRedisCluster resolves only once CLUSTER INFO says `cluster_state:ok` on
 * every node, or rejects within a bounded time saying why (a server that did not start,
 * redis-cli missing or failing, with its output, or the state it was stuck in). Nodes persist
 * no data (`--save '' --appendonly no`); their cluster configuration lives in a temporary
 * directory, so a node stopped and started again rejoins with its slots. Every node is killed,
 * and the directory removed, on stop() and when the test process exits.
 * Assumes: redis-server (>= 7: `--cluster-port`) and redis-cli on PATH, or REDIS_SERVER and
 * REDIS_CLI naming them (Debian: apt-get install redis-server, which brings redis-tools).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { freePort, OwnServer, terminate, track } from './redis.js';

export interface TestRedisCluster {
  /** One node's URL (a seed), with the password in it when the cluster requires one. */
  url: string;
  /** Every node's URL, comma-separated: REDIS_URL's form for several seeds. */
  seeds: string;
  ports: number[];
  password: string | undefined;
  /** The port of the master that serves `key`'s hash slot. */
  ownerOf(key: string): Promise<number>;
  /** A plain (not cluster) client to the node on `port`; the caller disconnects it. */
  nodeClient(port: number): Redis;
  /** Stops one node (the others keep running and keep its slots assigned to it). */
  stopNode(port: number): Promise<void>;
  /** Starts a stopped node again and waits until every node says cluster_state:ok. */
  startNode(port: number): Promise<void>;
  /** Waits until every node says cluster_state:ok (after a test changed the slots). */
  waitUntilOk(): Promise<void>;
  stop(): Promise<void>;
}

export interface RedisClusterOptions {
  /** --requirepass and --masterauth on every node; the URLs carry it. */
  password?: string;
}

const NODES = 3;
const CREATE_TIMEOUT_MS = 15_000;
const OK_TIMEOUT_MS = 10_000;

const directories = new Set<string>();
let exitHookInstalled = false;

export async function startRedisCluster(options: RedisClusterOptions = {}): Promise<TestRedisCluster> {
  const { password } = options;
  const dir = mkdtempSync(path.join(tmpdir(), 'redis-cluster-'));
  removeOnExit(dir);
  const ports: number[] = [];
  const servers = new Map<number, OwnServer>();
  for (let i = 0; i < NODES; i++) {
    // the cluster bus gets a free port of its own: port + 10000 may be taken, or past 65535
    const [port, bus] = [await freePort(), await freePort()];
    const args = ['--cluster-enabled', 'yes', '--cluster-config-file', path.join(dir, `nodes-${port}.conf`), '--cluster-port', String(bus)];
    if (password !== undefined) args.push('--masterauth', password);
    ports.push(port);
    servers.set(port, new OwnServer(port, password, args));
  }
  const server = (port: number): OwnServer => {
    const s = servers.get(port);
    if (s === undefined) throw new Error(`no node of this cluster listens on port ${port}`);
    return s;
  };
  const stop = async (): Promise<void> => {
    await Promise.all([...servers.values()].map((s) => s.stop()));
    rmSync(dir, { recursive: true, force: true });
    directories.delete(dir);
  };
  try {
    await Promise.all([...servers.values()].map((s) => s.start()));
    await createCluster(ports, password);
    await waitForClusterOk(ports, password);
  } catch (err) {
    await stop();
    throw err;
  }
  const urlOf = (port: number): string => `redis://${password === undefined ? '' : `:${encodeURIComponent(password)}@`}127.0.0.1:${port}`;
  const nodeClient = (port: number): Redis => new Redis(port, '127.0.0.1', { ...(password === undefined ? {} : { password }), lazyConnect: true, maxRetriesPerRequest: 0 });
  return {
    url: urlOf(ports[0] as number),
    seeds: ports.map(urlOf).join(','),
    ports,
    password,
    nodeClient,
    async ownerOf(key) {
      const redis = nodeClient(ports[0] as number);
      try {
        const slot = (await redis.cluster('KEYSLOT', key)) as number;
        const range = (await redis.cluster('SLOTS')).find(([from, to]) => from <= slot && slot <= to);
        const master = range?.[2];
        if (master === undefined) throw new Error(`slot ${slot} is served by no node`);
        return Number(master[1]);
      } finally {
        redis.disconnect();
      }
    },
    stopNode: (port) => server(port).stop(),
    waitUntilOk: () => waitForClusterOk(ports, password),
    async startNode(port) {
      await server(port).start();
      await waitForClusterOk(ports, password);
    },
    stop,
  };
}

/** `redis-cli --cluster create` over `ports`, no replicas; rejects with its output when it fails. */
async function createCluster(ports: number[], password: string | undefined): Promise<void> {
  const cli = process.env.REDIS_CLI ?? 'redis-cli';
  const args = ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes'];
  // REDISCLI_AUTH: the password stays off the command line
  const env = { ...process.env, ...(password === undefined ? {} : { REDISCLI_AUTH: password }) };
  const child = spawn(cli, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  track(child);
  let output = '';
  const keep = (chunk: Buffer): void => {
    output = (output + chunk.toString()).slice(-2000);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const outcome = await new Promise<{ code: number | null; error?: Error }>((resolve) => {
    const timer = setTimeout(() => resolve({ code: null, error: new Error(`did not finish within ${CREATE_TIMEOUT_MS} ms`) }), CREATE_TIMEOUT_MS);
    child.once('error', (error) => {
      clearTimeout(timer);
      resolve({ code: null, error });
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code });
    });
  });
  if (outcome.error !== undefined) {
    await terminate(child);
    const hint = (outcome.error as NodeJS.ErrnoException).code === 'ENOENT' ? " (install redis-tools, which Debian's redis-server brings, or set REDIS_CLI)" : '';
    throw new Error(`cannot create the test cluster with ${cli}: ${outcome.error.message}${hint}\n${output.trim()}`);
  }
  if (outcome.code !== 0) throw new Error(`${cli} --cluster create exited with code ${outcome.code}:\n${output.trim()}`);
}

/** Polls CLUSTER INFO on every node until each says cluster_state:ok; rejects naming the states seen. */
async function waitForClusterOk(ports: number[], password: string | undefined): Promise<void> {
  const deadline = Date.now() + OK_TIMEOUT_MS;
  let states: string[] = [];
  while (Date.now() < deadline) {
    states = await Promise.all(ports.map((port) => clusterState(port, password)));
    if (states.every((s) => s === 'ok')) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`the test cluster did not reach cluster_state:ok within ${OK_TIMEOUT_MS} ms: ${ports.map((p, i) => `${p}=${states[i]}`).join(', ')}`);
}

async function clusterState(port: number, password: string | undefined): Promise<string> {
  const redis = new Redis(port, '127.0.0.1', { ...(password === undefined ? {} : { password }), lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  redis.on('error', () => undefined);
  try {
    const info = String(await redis.cluster('INFO'));
    return /cluster_state:(\w+)/.exec(info)?.[1] ?? 'unknown';
  } catch (err) {
    return `unreachable (${(err as Error).message})`;
  } finally {
    redis.disconnect();
  }
}

function removeOnExit(dir: string): void {
  directories.add(dir);
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const d of directories) rmSync(d, { recursive: true, force: true });
  });
}
