/**
 * Real Redis servers for integration tests.
 *
 * startRedis(): the server named by REDIS_URL when set (shared: owned=false, stop/start
 * throw), else a private redis-server. startOwnRedis(): always a private redis-server,
 * for tests that stop and restart it or need a password. OwnServer is one such process, with
 * extra arguments (test/harness/redis-cluster.ts starts cluster nodes with it).
 *
 * Guarantees: a private server listens on 127.0.0.1 on a port that was free when picked,
 * persists nothing, answers PING before startRedis resolves (or startRedis rejects within
 * a bounded time saying why), restarts on the same port, and is killed when the test
 * process exits even if the test forgot to stop it.
 * Assumes: redis-server is on PATH (or REDIS_SERVER names it).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import net from 'node:net';

export interface TestRedis {
  /** redis:// URL, with the password in it when the server requires one. */
  url: string;
  port: number;
  /** Stops the server (private servers only). */
  stop(): Promise<void>;
  /** Starts it again on the same port (private servers only). */
  start(): Promise<void>;
  /** false when the server is REDIS_URL's, shared with others. */
  owned: boolean;
}

export interface OwnRedisOptions {
  /** Started with --requirepass; the URL carries it. */
  password?: string;
}

const READY_TIMEOUT_MS = 10_000;
const STOP_TIMEOUT_MS = 3_000;
const OUTPUT_TAIL = 2_000;

const running = new Set<ChildProcess>();
let exitHookInstalled = false;

export async function startRedis(): Promise<TestRedis> {
  const shared = process.env.REDIS_URL;
  return shared ? sharedRedis(shared) : startOwnRedis();
}

export async function startOwnRedis(options: OwnRedisOptions = {}): Promise<TestRedis> {
  const port = await freePort();
  const server = new OwnServer(port, options.password);
  await server.start();
  return {
    url: redisUrl(port, options.password),
    port,
    owned: true,
    stop: () => server.stop(),
    start: () => server.start(),
  };
}

function sharedRedis(url: string): TestRedis {
  const refuse = (): Promise<void> => Promise.reject(new Error('this test needs its own Redis server (startOwnRedis); REDIS_URL points at a shared one'));
  return { url, port: Number(new URL(url).port || 6379), owned: false, stop: refuse, start: refuse };
}

function redisUrl(port: number, password: string | undefined): string {
  const auth = password === undefined ? '' : `:${encodeURIComponent(password)}@`;
  return `redis://${auth}127.0.0.1:${port}`;
}

/** A port nobody listened on a moment ago (bind to 0, read it, close). */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** One private redis-server process on 127.0.0.1:`port`; `args` are added to its command line. */
export class OwnServer {
  private child: ChildProcess | undefined;
  private output = '';
  private spawnError: Error | undefined;

  constructor(
    readonly port: number,
    private readonly password: string | undefined,
    private readonly args: readonly string[] = [],
  ) {}

  async start(): Promise<void> {
    if (this.child) throw new Error(`redis-server on port ${this.port} is already running`);
    const child = this.spawnServer();
    try {
      await waitUntilReady(this.port, this.password, () => this.failure(child));
    } catch (err) {
      await this.stop();
      throw err;
    }
  }

  async stop(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (!child) return;
    await terminate(child);
  }

  private spawnServer(): ChildProcess {
    const args = ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...this.args];
    if (this.password !== undefined) args.push('--requirepass', this.password);
    const child = spawn(process.env.REDIS_SERVER ?? 'redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.output = '';
    const keep = (chunk: Buffer): void => {
      this.output = (this.output + chunk.toString()).slice(-OUTPUT_TAIL);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    // A forgotten server must not keep the test process alive; the exit hook kills it.
    child.unref();
    (child.stdout as net.Socket | null)?.unref();
    (child.stderr as net.Socket | null)?.unref();
    this.spawnError = undefined;
    child.on('error', (err) => (this.spawnError = err));
    track(child);
    this.child = child;
    return child;
  }

  /** Why the server can no longer become ready, if it cannot. */
  private failure(child: ChildProcess): string | undefined {
    if (this.spawnError) return `cannot run redis-server: ${this.spawnError.message}`;
    if (child.exitCode === null) return undefined;
    return `redis-server on port ${this.port} exited with code ${child.exitCode}: ${this.output.trim()}`;
  }
}

/** Kills `child` when the test process exits, if it is still running then. */
export function track(child: ChildProcess): void {
  running.add(child);
  child.once('exit', () => running.delete(child));
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const c of running) c.kill('SIGKILL');
  });
}

export async function terminate(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
  await exited;
  clearTimeout(timer);
}

async function waitUntilReady(port: number, password: string | undefined, failure: () => string | undefined): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    const reason = failure();
    if (reason !== undefined) throw new Error(reason);
    if (await answersPing(port, password)) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`redis-server on port ${port} did not answer PING within ${READY_TIMEOUT_MS} ms`);
}

/** One raw RESP round trip: (AUTH and) PING, true on +PONG. No client library involved. */
function answersPing(port: number, password: string | undefined): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let received = '';
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.once('error', () => done(false));
    socket.once('close', () => done(false));
    socket.on('data', (chunk) => {
      received += chunk.toString();
      if (received.includes('+PONG')) done(true);
      else if (received.includes('-')) done(false);
    });
    socket.once('connect', () => {
      const auth = password === undefined ? '' : resp(['AUTH', password]);
      socket.write(auth + resp(['PING']));
    });
  });
}

function resp(parts: string[]): string {
  return `*${parts.length}\r\n${parts.map((p) => `$${Buffer.byteLength(p)}\r\n${p}\r\n`).join('')}`;
}
