/** `svc`'s exit codes (docs/cli.md). */
export const EXIT = {
  ok: 0,
  /** The API answered with an error, or could not be reached. */
  failed: 1,
  /** The command line itself is wrong (unknown command or flag, a missing argument). */
  usage: 2,
  /** The feature asked for is not implemented yet. */
  notImplemented: 3,
} as const;

/** A failure that ends the command with a message and an exit code. */
export class CliError extends Error {
  override readonly name = 'CliError';
  constructor(
    message: string,
    readonly exitCode: number = EXIT.failed,
  ) {
    super(message);
  }
}
