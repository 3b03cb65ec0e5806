/**
 * What a command of the command line gets and gives: its arguments, the environment, and where
 * its lines go; it returns the exit status. A bad argument is a UsageError: main prints its
 * one line and exits 2, no stack trace.
 */

export interface CliIo {
  /** a line of output (stdout) */
  out(line: string): void;
  /** a line for the person at the terminal (stderr): errors, progress */
  err(line: string): void;
  /** the settings (TYK_*, KUBECONFIG, …), as the service reads them */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** stderr is a terminal (progress lines are for a person watching); absent: it is not */
  readonly errIsTerminal?: boolean;
}

/** A bad argument or option: one line naming it; exit 2. */
export class UsageError extends Error {
  readonly code = 'CLI_USAGE';
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** The exit statuses the commands use. */
export const EXIT = {
  /** done; for plan: nothing would change */
  ok: 0,
  /** a failure that is not the arguments' (a read failed, a setting is malformed) */
  failed: 1,
  /** a bad argument; for plan: something would change */
  usageOrChanges: 2,
} as const;

/** A command: its name, one line for the help, its own help text, and what it does. */
export interface Command {
  readonly name: string;
  readonly summary: string;
  readonly help: string;
  run(args: readonly string[], io: CliIo): Promise<number>;
}
