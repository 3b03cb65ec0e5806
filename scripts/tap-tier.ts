/**
 * Runs tap over a tier's test files with the given environment: the shared part of
 * `npm run test:compat` and `npm run test:real`. These tiers re-run suites under another
 * backdrop (Tyk Operator's files, a real API server); coverage is measured and enforced by
 * `npm test` over the whole suite, so here it is not collected (`--disable-coverage`).
 *
 * Guarantees: resolves with tap's exit code; tap's output goes to this process's stdout/stderr.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const ROOT = resolve(import.meta.dirname, '..');

export function runTap(files: readonly string[], env: Record<string, string>, extraArgs: readonly string[] = []): Promise<number> {
  const missing = files.filter((f) => !existsSync(join(ROOT, f)));
  if (missing.length > 0) throw new Error(`no such test file: ${missing.join(', ')}`);
  const tap = join(ROOT, 'node_modules', '.bin', 'tap');
  return new Promise((ok, fail) => {
    const child = spawn(tap, ['--disable-coverage', ...extraArgs, ...files], { cwd: ROOT, stdio: 'inherit', env: { ...process.env, ...env } });
    child.once('error', fail);
    child.once('exit', (code, signal) => ok(code ?? (signal ? 1 : 0)));
  });
}

/** The reference folder from the first argument or TYK_REFERENCE_DIR; undefined when neither. */
export function referenceArg(argv: readonly string[] = process.argv.slice(2)): string | undefined {
  const dir = argv.find((a) => !a.startsWith('-')) ?? process.env.TYK_REFERENCE_DIR;
  return dir ? resolve(dir) : undefined;
}
