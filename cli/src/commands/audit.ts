import { apiPaths, type AuditVerification } from '@svc/protocol';
import { createApi } from '../api.js';
import { CliError, EXIT } from '../exit-codes.js';
import { resolveConnection } from '../settings.js';
import { CONNECTION_HELP, connectionFlags, type Command } from './command.js';

const flags = { ...connectionFlags } as const;

const plural = (count: number, word: string) => `${count} ${word}${count === 1 ? '' : 's'}`;

/** What a check that passed covered: which records are keyed, which heads were found. */
function coverage(result: AuditVerification): string[] {
  const keyed = result.count - result.unkeyed;
  const lines = [
    result.count === 0
      ? 'no record yet'
      : keyed === 0
        ? 'no record is keyed (SVC_AUDIT_KEY is not set): whoever holds the database password could rewrite the trail unseen'
        : result.unkeyed === 0
          ? 'every record is sealed with the audit key (HMAC)'
          : `records #${result.unkeyed + 1}-#${result.count} are sealed with the audit key (HMAC); #1-#${result.unkeyed}, written before the trail had a key, are checked by their hash chain alone`,
  ];
  const latest = result.latest_head;
  if (latest)
    lines.push(
      `${plural(result.heads, 'published head')} found in the chain, the latest #${latest.seq} (published ${latest.published_at} by ${latest.instance})`,
    );
  else if (result.count > 0) lines.push('no head has been published yet: deleting the newest records could not be seen');
  return lines;
}

/** `svc audit verify`: has the control service check the whole audit trail, its keys and published heads; names the first record that fails. */
export const auditCommand: Command<typeof flags> = {
  name: 'audit',
  summary: 'check the audit trail: keys and published heads (admins)',
  help: `  svc audit verify

Has the control service check the whole audit trail (GET /v1/audit/verify, an admin's token):
each record's HMAC, made with a key kept outside the database, and the chain of hashes; and
every head (last record and hash) published to JetStream, where nothing can be deleted. A record
edited in the store (even with every later hash recomputed), removed, or the newest records
deleted, is found. Exit 0 when the trail is intact, 1 naming the first record that fails, or
saying that the published heads are missing (the trail cannot be checked without them).

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
    const result = await api.request<AuditVerification>('GET', apiPaths.auditVerify);
    if (result.ok) {
      process.stdout.write(`the audit trail is intact: ${plural(result.count, 'record')}, every hash checked\n`);
      for (const line of coverage(result)) process.stdout.write(`  ${line}\n`);
      return EXIT.ok;
    }
    // No record named: what is missing is the published heads, without which the trail cannot be held to anything.
    if (result.seq === undefined) process.stdout.write(`the audit trail cannot be checked: ${result.problem ?? 'the check failed'}\n`);
    else process.stdout.write(`the audit trail was tampered with: ${result.problem ?? `record #${result.seq} fails`}\n`);
    return EXIT.failed;
  },
};
