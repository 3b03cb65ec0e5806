/**
 * A TypeScript entry point of ours (lib/main.ts, scripts/demo.ts) run as a child process
 * through tsx, with a clean environment and its output captured.
 *
 * The child's coverage is switched off: tsx's source maps differ from the test runner's
 * loader, and merged into tap's report they would corrupt it.
 */
import { spawn } from 'node:child_process';

export interface Child {
  /** resolves with the exit code (null when killed by a signal) once the output is all read */
  code: Promise<number | null>;
  out(): string;
  err(): string;
  kill(signal?: NodeJS.Signals): void;
}

export function runTs(script: string, env: Record<string, string> = {}): Child {
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', _TAPJS_PROCESSINFO_COV_EXCLUDE_: '/./', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  // 'close', not 'exit': at 'exit' the child's last output may still be in the pipe, unread
  const code = new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
  return { code, out: () => out, err: () => err, kill: (signal = 'SIGTERM') => child.kill(signal) };
}
