/**
 * The bench's control protocol between the measured process and its helper processes (the
 * fakes, the storm's senders): request/answer messages over Node's IPC channel
 * (`child_process.fork`). A request is `{id, op, args}`, an answer `{id, ok, value}` or
 * `{id, ok: false, error}`. Nothing here is on a measured path: the bench talks to its helpers
 * between phases (and, in the storm, only to start it and collect its results).
 */
import { type ChildProcess, fork } from 'node:child_process';

export type Handlers = Record<string, (args: never) => unknown>;

interface Request {
  id: number;
  op: string;
  args: unknown;
}

type Answer = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: string };

/** In a helper: answers the parent's requests with `handlers`; `close` ends the process after answering. */
export function serve(handlers: Handlers): void {
  const send = process.send?.bind(process);
  if (!send) throw new Error('this module runs as a child of bench/run.ts (no IPC channel)');
  process.on('message', (msg: Request) => {
    const handler = handlers[msg.op];
    const answer = async (): Promise<Answer> => {
      if (!handler) return { id: msg.id, ok: false, error: `unknown op ${msg.op}` };
      try {
        return { id: msg.id, ok: true, value: await handler(msg.args as never) };
      } catch (err) {
        return { id: msg.id, ok: false, error: err instanceof Error ? (err.stack ?? err.message) : String(err) };
      }
    };
    void answer().then((a) => send(a, undefined, undefined, () => (msg.op === 'close' ? process.exit(0) : undefined)));
  });
  // the parent died: do not linger
  process.on('disconnect', () => process.exit(0));
}

export interface Helper<H extends Handlers> {
  readonly pid: number;
  call<K extends keyof H & string>(op: K, ...args: Parameters<H[K]> extends [] ? [] : [Parameters<H[K]>[0]]): Promise<Awaited<ReturnType<H[K]>>>;
  /** asks the helper to close (op `close`), then waits for it to exit; kills it after `graceMs` */
  stop(graceMs?: number): Promise<void>;
}

/**
 * Starts `module` (a .ts file, run with tsx) as a helper process. Its heap may grow to 16 GB: the
 * fakes hold every object of the API server and of each gateway replica (at N = 50,000, three
 * replicas' lists of ~375 MB each), which V8's default limit does not fit.
 */
export function startHelper<H extends Handlers>(module: string): Helper<H> {
  const child: ChildProcess = fork(module, [], { execArgv: ['--max-old-space-size=16384', '--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'], serialization: 'advanced' });
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  let next = 0;
  let exited = false;
  const exit = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.on('message', (a: Answer) => {
    const p = pending.get(a.id);
    if (!p) return;
    pending.delete(a.id);
    if (a.ok) p.resolve(a.value);
    else p.reject(new Error(`${module}: ${a.error}`));
  });
  child.once('exit', (code, signal) => {
    exited = true;
    for (const p of pending.values()) p.reject(new Error(`${module} exited (${code ?? signal}) with a request pending`));
    pending.clear();
  });
  return {
    get pid() {
      return child.pid ?? -1;
    },
    call: (op, ...args) =>
      new Promise((resolve, reject) => {
        if (exited) return reject(new Error(`${module} has exited`));
        const id = ++next;
        pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
        child.send({ id, op, args: args[0] } satisfies Request);
      }),
    stop: async (graceMs = 5_000) => {
      if (exited) return;
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      const id = ++next;
      pending.set(id, { resolve: () => undefined, reject: () => undefined });
      child.send({ id, op: 'close', args: undefined } satisfies Request);
      await exit;
      clearTimeout(timer);
    },
  };
}
