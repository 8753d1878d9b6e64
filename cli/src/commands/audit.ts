import { apiPaths, verifyAuditChain, type AuditRecord, type ListResponseOf } from '@svc/protocol';
import { createApi, type Api } from '../api.js';
import { CliError, EXIT } from '../exit-codes.js';
import { resolveConnection } from '../settings.js';
import { CONNECTION_HELP, connectionFlags, type Command } from './command.js';

const flags = { ...connectionFlags } as const;

/** How many records one read brings. */
const PAGE = 1000;

/** Every record of the chain, from the first, page by page. */
async function* wholeChain(api: Api): AsyncGenerator<AuditRecord> {
  for (let after = 0; ;) {
    const page = await api.request<ListResponseOf<AuditRecord>>('GET', apiPaths.audit({ after_seq: after, limit: PAGE }));
    yield* page.items;
    if (page.items.length < PAGE) return;
    after = page.items.at(-1)!.seq;
  }
}

/** `svc audit verify`: reads the whole audit trail and checks its hash chain: an edited or removed record is named. */
export const auditCommand: Command<typeof flags> = {
  name: 'audit',
  summary: "check the audit trail's hash chain (admins)",
  help: `  svc audit verify

Reads every record of the audit trail (GET /v1/audit, an admin's token) and recomputes its hash
chain: each record's hash covers its content and the hash of the one before it, so a record
edited or removed in the store is found. Exit 0 when the chain is intact, 1 naming the first
record that is not what the chain says.

Flags
${CONNECTION_HELP}

Examples
  $ svc audit verify
  $ svc audit verify --url https://svc.example.com`,
  flags,
  async run(cli) {
    const [sub] = cli.input.slice(1);
    if (sub !== 'verify') throw new CliError(`svc audit${sub ? ` ${sub}` : ''}: the one subcommand is "verify" (svc audit --help)`, EXIT.usage);
    const api = createApi(await resolveConnection(cli.flags));
    const result = await verifyAuditChain(wholeChain(api));
    if (result.ok) {
      process.stdout.write(`the audit trail is intact: ${result.count} record${result.count === 1 ? '' : 's'}, every hash checked\n`);
      return EXIT.ok;
    }
    process.stdout.write(`the audit trail was tampered with: ${result.problem}\n`);
    return EXIT.failed;
  },
};
