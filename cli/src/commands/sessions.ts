import { setTimeout as sleep } from 'node:timers/promises';
import { apiPaths, type ListResponseOf, type Session } from '@svc/protocol';
import { createApi } from '../api.js';
import { visibleText } from '../attach/visible-text.js';
import { CliError, EXIT } from '../exit-codes.js';
import { printJson, printTable, withProgress } from '../output.js';
import { resolveConnection } from '../settings.js';
import { CONNECTION_HELP, connectionFlags, type Command } from './command.js';

const flags = {
  ...connectionFlags,
  json: { type: 'boolean', default: false },
  template: { type: 'string' },
  prompt: { type: 'string' },
  env: { type: 'string', isMultiple: true },
  autonomous: { type: 'boolean' },
  wait: { type: 'boolean', default: false },
  status: { type: 'string' },
  limit: { type: 'number' },
  offset: { type: 'number' },
} as const;

/** A session's row, shown not run: a failure's reason may quote what a failed spawn step printed. */
function describe(session: Session): string[] {
  return [
    session.id,
    session.worker_id,
    session.template,
    session.status,
    session.created_at,
    session.failure ? `${session.failure.step}: ${session.failure.reason}` : '',
  ].map(visibleText);
}

/** `svc sessions create|list|get|delete`. */
export const sessionsCommand: Command<typeof flags> = {
  name: 'sessions',
  summary: 'create, list, show and delete sessions',
  help: `  svc sessions create --template <name> [--prompt <text>] [--env KEY=VALUE …] [--autonomous] [--wait]
  svc sessions list [--status <status>] [--limit N] [--offset N]
  svc sessions get <session-id>
  svc sessions delete <session-id>

Flags
  --json           print the API's JSON
${CONNECTION_HELP}

Examples
  $ svc sessions create --template demo --wait
  $ svc sessions list --status running
  $ svc sessions delete ses_AbC123 --json`,
  flags,
  async run(cli) {
    const [action, id] = cli.input.slice(1);
    const api = createApi(await resolveConnection(cli.flags));
    const show = (session: Session) => {
      if (cli.flags.json) return printJson(session);
      printTable(['SESSION', 'WORKER', 'TEMPLATE', 'STATUS', 'CREATED', 'FAILURE'], [describe(session)]);
    };
    switch (action) {
      case 'create': {
        if (!cli.flags.template) throw new CliError('svc sessions create needs --template <name> (e.g. demo)', EXIT.usage);
        const env: Record<string, string> = {};
        for (const pair of cli.flags.env ?? []) {
          const at = pair.indexOf('=');
          if (at <= 0) throw new CliError(`--env takes KEY=VALUE, got "${pair}"`, EXIT.usage);
          env[pair.slice(0, at)] = pair.slice(at + 1);
        }
        const overrides = {
          ...(Object.keys(env).length > 0 ? { env } : {}),
          ...(cli.flags.autonomous !== undefined ? { autonomous: cli.flags.autonomous } : {}),
        };
        let session = await api.request<Session>('POST', apiPaths.sessions(), {
          template: cli.flags.template,
          ...(cli.flags.prompt !== undefined ? { prompt: cli.flags.prompt } : {}),
          ...(Object.keys(overrides).length > 0 ? { overrides } : {}),
        });
        if (cli.flags.wait) {
          session = await withProgress(
            `starting ${session.id}`,
            (async () => {
              while (session.status === 'pending' || session.status === 'provisioning') {
                await sleep(100);
                session = await api.request<Session>('GET', apiPaths.session(session.id));
              }
              return session;
            })(),
          );
        }
        show(session);
        if (!cli.flags.json) process.stdout.write(`attach with: svc attach ${session.worker_id}\n`);
        return session.status === 'failed' ? EXIT.failed : EXIT.ok;
      }
      case 'list': {
        const page = await api.request<ListResponseOf<Session>>(
          'GET',
          apiPaths.sessions({ status: cli.flags.status || undefined, limit: cli.flags.limit, offset: cli.flags.offset }),
        );
        if (cli.flags.json) printJson(page);
        else {
          printTable(['SESSION', 'WORKER', 'TEMPLATE', 'STATUS', 'CREATED', 'FAILURE'], page.items.map(describe));
          process.stdout.write(`${page.items.length} of ${page.total}\n`);
        }
        return EXIT.ok;
      }
      case 'get':
      case 'delete': {
        if (!id) throw new CliError(`svc sessions ${action} needs a session id`, EXIT.usage);
        const session =
          action === 'get'
            ? await api.request<Session>('GET', apiPaths.session(id))
            : await withProgress(`deleting ${id}`, api.request<Session>('DELETE', apiPaths.session(id)));
        show(session);
        return EXIT.ok;
      }
      default:
        throw new CliError(
          action ? `unknown action "${action}": use create, list, get or delete` : 'svc sessions needs an action: create, list, get or delete',
          EXIT.usage,
        );
    }
  },
};
