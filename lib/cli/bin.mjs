#!/usr/bin/env node
/**
 * `npx gateway-reconciler <command>` (package.json `bin`): runs the command line (main.ts) from
 * the TypeScript sources with no build step, through tsx (a devDependency, so `npm ci` in a
 * checkout installs it). Lines go to stdout and stderr; the exit status is main's.
 */
import { register } from 'tsx/esm/api';

register();
const { main } = await import('./main.ts');
const io = {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
  env: process.env,
  errIsTerminal: process.stderr.isTTY === true,
};
process.exitCode = await main(process.argv.slice(2), io);
