import { apiPaths, type StatusResponseType } from '@svc/protocol';
import { createApi } from '../api.js';
import { EXIT } from '../exit-codes.js';
import { printJson, printTable } from '../output.js';
import { resolveConnection } from '../settings.js';
import { CONNECTION_HELP, connectionFlags, type Command } from './command.js';

const flags = { ...connectionFlags, json: { type: 'boolean', default: false } } as const;

/** `svc status`: the health of every service, NATS and the store. Exit 1 when degraded. */
export const statusCommand: Command<typeof flags> = {
  name: 'status',
  summary: 'the health of the control plane',
  help: `  svc status

Flags
  --json           print the API's JSON
${CONNECTION_HELP}

Examples
  $ svc status
  $ svc status --json --url https://svc.example.com`,
  flags,
  async run(cli) {
    const api = createApi(await resolveConnection(cli.flags));
    const status = await api.request<StatusResponseType>('GET', apiPaths.status);
    if (cli.flags.json) printJson(status);
    else {
      process.stdout.write(`${api.url}: ${status.status} (version ${status.version}; NATS ${status.nats}, store ${status.store})\n`);
      printTable(
        ['SERVICE', 'STATUS', 'INSTANCE', 'VERSION', 'UPTIME'],
        status.services.map((s) => [s.service, s.status, s.instance, s.version, `${Math.round(s.uptime_s)}s`]),
      );
    }
    return status.status === 'ok' ? EXIT.ok : EXIT.failed;
  },
};
