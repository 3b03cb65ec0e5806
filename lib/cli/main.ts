/**
 * The command line, `npx gateway-reconciler <command>`: `plan` (what a run would change on the
 * gateways, field by field) and `export` (the resources that adopt what a gateway serves). Each
 * command is a module of this folder behind the Command interface (io.ts), loaded when named, so
 * one command's dependencies cost the others nothing.
 *
 * `--help` (or no command) prints the commands with examples; a command's `--help` its own. A
 * bad argument prints one line and exits 2; a failure prints one line and exits 1; no stack
 * trace either way.
 */
import { describeError } from '../platform/errors.js';
import { type CliIo, type Command, EXIT, UsageError } from './io.js';

const COMMANDS: Readonly<Record<string, () => Promise<Command>>> = {
  plan: () => import('./plan.js').then((m) => m.PLAN),
  export: () => import('./export.js').then((m) => m.EXPORT),
};

async function usage(): Promise<string> {
  const lines = ['Usage: gateway-reconciler <command> [options]', '', 'Commands:'];
  for (const load of Object.values(COMMANDS)) {
    const c = await load();
    lines.push(`  ${c.name.padEnd(8)} ${c.summary}`);
  }
  lines.push('', 'Run `gateway-reconciler <command> --help` for a command’s options and examples.');
  return lines.join('\n');
}

export async function main(argv: readonly string[], io: CliIo): Promise<number> {
  const [name, ...args] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    io.out(await usage());
    return name === undefined ? EXIT.usageOrChanges : EXIT.ok;
  }
  const load = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (load === undefined) {
    io.err(`gateway-reconciler: unknown command "${name}" (commands: ${Object.keys(COMMANDS).join(', ')}; --help for more)`);
    return EXIT.usageOrChanges;
  }
  const command = await load();
  if (args.includes('--help') || args.includes('-h')) {
    io.out(command.help);
    return EXIT.ok;
  }
  try {
    return await command.run(args, io);
  } catch (err) {
    if (err instanceof UsageError) {
      io.err(`gateway-reconciler ${name}: ${err.message}`);
      return EXIT.usageOrChanges;
    }
    io.err(`gateway-reconciler ${name}: ${describeError(err).split('\n').join('; ')}`);
    return EXIT.failed;
  }
}
