import meow, { type AnyFlags } from 'meow';
import { ApiError } from './api.js';
import { accessCommand } from './commands/access.js';
import { approvalsCommand } from './commands/approvals.js';
import { attachCommand } from './commands/attach.js';
import type { Command } from './commands/command.js';
import { loginCommand } from './commands/login.js';
import { logsCommand } from './commands/logs.js';
import { sessionsCommand } from './commands/sessions.js';
import { statusCommand } from './commands/status.js';
import { auditCommand } from './commands/audit.js';
import { interruptCommand, sendCommand } from './commands/conversation.js';
import { upCommand } from './commands/up.js';
import { changesCommand, prCommand, pushCommand } from './commands/workspace.js';
import { CliError, EXIT } from './exit-codes.js';

export const COMMANDS: Array<Command<AnyFlags>> = [
  attachCommand,
  sendCommand,
  interruptCommand,
  changesCommand,
  pushCommand,
  prCommand,
  sessionsCommand,
  approvalsCommand,
  accessCommand,
  logsCommand,
  statusCommand,
  auditCommand,
  loginCommand,
  upCommand,
] as unknown as Array<Command<AnyFlags>>;

const MAIN_HELP = `svc: run AI coding agents in sandboxes, watch them live, answer their prompts

Usage
  svc <command> [flags]

Commands
${COMMANDS.map((command) => `  ${command.name.padEnd(10)} ${command.summary}`).join('\n')}

Every command takes --help. Settings: flags, then SVC_URL and SVC_TOKEN, then what \`svc login\` saved.
Exit codes: 0 ok, 1 the API refused or could not be reached, 2 a wrong command line, 3 not implemented yet.

Examples
  $ svc up                                   # the local stack, with a demo session
  $ svc login                                # a token from it
  $ svc sessions create --template demo --wait
  $ svc attach wrk_AbC123`;

function importMeta(): ImportMeta {
  return import.meta;
}

/** Runs `svc` with `argv` (without node and the script); resolves with the exit code. */
export async function runCli(argv: readonly string[]): Promise<number> {
  const name = argv[0];
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(`${MAIN_HELP}\n`);
    return name === undefined ? EXIT.usage : EXIT.ok;
  }
  if (name === '--version') {
    process.stdout.write('svc 0.1.0\n');
    return EXIT.ok;
  }
  const command = COMMANDS.find((candidate) => candidate.name === name);
  if (!command) {
    process.stderr.write(`error: unknown command "${name}" (svc --help lists them)\n`);
    return EXIT.usage;
  }
  const help = `Usage\n${command.help}`;
  let cli;
  try {
    cli = meow(help, {
      importMeta: importMeta(),
      argv: [...argv],
      flags: { ...command.flags, help: { type: 'boolean', shortFlag: 'h' } },
      autoHelp: false,
      autoVersion: false,
      allowUnknownFlags: false,
      description: `svc ${command.name}: ${command.summary}`,
    });
  } catch (err) {
    process.stderr.write(`error: ${(err as Error).message}\n`);
    return EXIT.usage;
  }
  if (cli.flags['help']) {
    process.stdout.write(`svc ${command.name}: ${command.summary}\n\n${help}\n`);
    return EXIT.ok;
  }
  try {
    return await command.run(cli);
  } catch (err) {
    if (err instanceof ApiError) process.stderr.write(`error: ${err.apiMessage} (${err.code})\n`);
    else if (err instanceof CliError) process.stderr.write(`error: ${err.message}\n`);
    else process.stderr.write(`error: ${(err as Error).stack ?? String(err)}\n`);
    return err instanceof CliError ? err.exitCode : EXIT.failed;
  }
}
