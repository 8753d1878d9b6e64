import { apiPaths, type SessionLogMessageType } from '@svc/protocol';
import { createApi } from '../api.js';
import { visibleJson, visibleText } from '../attach/visible-text.js';
import { CliError, EXIT } from '../exit-codes.js';
import { resolveConnection } from '../settings.js';
import { CONNECTION_HELP, connectionFlags, type Command } from './command.js';

const flags = { ...connectionFlags, tail: { type: 'number', default: 100 }, json: { type: 'boolean', default: false } } as const;

/** `svc logs <session>`: the sandbox's logs, the last `--tail` lines, then following until the sandbox ends (or ctrl+c). */
export const logsCommand: Command<typeof flags> = {
  name: 'logs',
  summary: "follow a session's sandbox logs",
  help: `  svc logs <session-id> [--tail N]

Flags
  --tail N         how many past lines first (default 100)
  --json           one JSON frame per line, as the API sends them
${CONNECTION_HELP}

Examples
  $ svc logs ses_AbC123
  $ svc logs ses_AbC123 --tail 0 --json`,
  flags,
  async run(cli) {
    const id = cli.input[1];
    if (!id) throw new CliError('svc logs needs a session id', EXIT.usage);
    const api = createApi(await resolveConnection(cli.flags));
    // Checked first, so a wrong id or token is a clear API error rather than a refused upgrade.
    await api.request('GET', apiPaths.session(id));
    const socket = api.socket(apiPaths.sessionLogs(id, { tail: cli.flags.tail }));
    return new Promise<number>((resolve) => {
      socket.on('message', (data) => {
        const frame = JSON.parse(String(data)) as SessionLogMessageType;
        // The sandbox's raw output: its control sequences (colours too) are shown, never run (docs/cli.md "Agent text").
        if (cli.flags.json) process.stdout.write(`${visibleJson(frame)}\n`);
        else if (frame.kind === 'lines') process.stdout.write(frame.lines.map((line) => `${visibleText(line)}\n`).join(''));
        else process.stderr.write(`-- ${visibleText(frame.reason)}\n`);
      });
      socket.on('close', (code) => resolve(code === 1000 ? EXIT.ok : EXIT.failed));
      socket.on('error', (err) => {
        process.stderr.write(`error: the log stream failed: ${err.message}\n`);
        resolve(EXIT.failed);
      });
      process.once('SIGINT', () => socket.close());
    });
  },
};
