import { AccessEntrySchema, AccessPrincipal, apiPaths, createChecker, type AccessEntry, type AccessRole, type Session } from '@svc/protocol';
import { createApi } from '../api.js';
import { visibleJson, visibleText } from '../attach/visible-text.js';
import { CliError, EXIT } from '../exit-codes.js';
import { printTable } from '../output.js';
import { resolveConnection } from '../settings.js';
import { CONNECTION_HELP, connectionFlags, type Command } from './command.js';

const flags = {
  ...connectionFlags,
  add: { type: 'string', isMultiple: true },
  remove: { type: 'string', isMultiple: true },
  json: { type: 'boolean', default: false },
} as const;

/** The roles and the principal's form, as the API's schema has them. */
const ROLES: readonly AccessRole[] = AccessEntrySchema.properties.role.enum;
const principalChecker = createChecker<string>(AccessPrincipal);

function principalOf(text: string, flag: string): string {
  if (!principalChecker.check(text).ok) throw new CliError(`${flag} names user:<sub> or group:<name>, got "${text}"`, EXIT.usage);
  return text;
}

/** `--add group:payments=approver`: the entry it adds (or whose role it changes). */
function entryOf(text: string): AccessEntry {
  const at = text.lastIndexOf('=');
  if (at < 0) throw new CliError(`--add takes <principal>=<role> (e.g. group:payments=approver), got "${text}"`, EXIT.usage);
  const role = text.slice(at + 1);
  if (!(ROLES as readonly string[]).includes(role)) throw new CliError(`--add ${text}: the role "${role}" is none of ${ROLES.join(', ')}`, EXIT.usage);
  return { principal: principalOf(text.slice(0, at), '--add'), role: role as AccessRole };
}

/** What `--add` and `--remove` ask, checked before anything is read: each principal named once. */
export function editsOf(adds: readonly string[], removes: readonly string[]): { added: AccessEntry[]; removed: string[] } {
  const added = adds.map(entryOf);
  const removed = removes.map((text) => principalOf(text, '--remove'));
  const both = added.find((entry) => removed.includes(entry.principal));
  if (both) throw new CliError(`${both.principal} is both added and removed`, EXIT.usage);
  const twice = added.find((entry, index) => added.findIndex((other) => other.principal === entry.principal) !== index);
  if (twice) throw new CliError(`--add names ${twice.principal} twice`, EXIT.usage);
  return { added, removed };
}

/** The list with `added` set (a principal already there gets the new role, in its place; a new one goes last) and `removed` taken out. */
export function editedAccess(
  current: readonly AccessEntry[],
  edits: { added: readonly AccessEntry[]; removed: readonly string[] },
  sessionId: string,
): AccessEntry[] {
  const { added, removed } = edits;
  const absent = removed.find((principal) => !current.some((entry) => entry.principal === principal));
  if (absent) throw new CliError(`${absent} is not on ${sessionId}'s access list; nothing was changed`);
  const kept = current.filter((entry) => !removed.includes(entry.principal));
  const edited = kept.map((entry) => added.find((addition) => addition.principal === entry.principal) ?? entry);
  return [...edited, ...added.filter((addition) => !kept.some((entry) => entry.principal === addition.principal))];
}

const sameAccess = (a: readonly AccessEntry[], b: readonly AccessEntry[]) =>
  a.length === b.length && a.every((entry, index) => entry.principal === b[index]!.principal && entry.role === b[index]!.role);

/** The owner first (the session's admin, on no list), then each entry. */
function printAccess(session: Session): void {
  const rows = [[`user:${session.owner}`, 'admin (owner)'], ...(session.access ?? []).map((entry) => [entry.principal, entry.role])];
  printTable(
    ['PRINCIPAL', 'ROLE'],
    rows.map((row) => row.map(visibleText)),
  );
}

/** `svc access <session> [--add <principal>=<role> …] [--remove <principal> …]`: a session's access list, shown or edited (docs/teams.md). */
export const accessCommand: Command<typeof flags> = {
  name: 'access',
  summary: 'who may see and act on a session: show or edit its access list',
  help: `  svc access <session-id>
  svc access <session-id> [--add <principal>=<role> …] [--remove <principal> …]

Shows the session's owner and access list: who else may see or act on it, and as what. With
--add or --remove, changes the list: reads it, edits it, and writes it whole
(PUT /v1/sessions/{id}/access; its owner or an admin may). Two edits at the same moment: the
later one's list is kept. A principal is user:<sub> or group:<name>; a role one of
${ROLES.join(', ')}, each including the ones before it (docs/teams.md).

Flags
  --add <p>=<role>   give p this role (a principal already listed gets the new one; repeatable)
  --remove <p>       take p off the list (repeatable)
  --json             print the session as the API gives it
${CONNECTION_HELP}

Examples
  $ svc access ses_AbC123
  $ svc access ses_AbC123 --add group:payments=approver --add user:erin=operator
  $ svc access ses_AbC123 --remove user:erin`,
  flags,
  async run(cli) {
    const sessionId = cli.input[1];
    if (!sessionId) throw new CliError('svc access needs a session id (svc sessions list shows them)', EXIT.usage);
    if (cli.input.length > 2) throw new CliError(`svc access takes one session id; edit with --add and --remove`, EXIT.usage);
    const edits = editsOf(cli.flags.add ?? [], cli.flags.remove ?? []);
    const api = createApi(await resolveConnection(cli.flags));
    let session = await api.request<Session>('GET', apiPaths.session(sessionId));
    if (edits.added.length > 0 || edits.removed.length > 0) {
      const current = session.access ?? [];
      const access = editedAccess(current, edits, sessionId);
      if (sameAccess(current, access)) process.stderr.write('(no change: the list already reads so)\n');
      else session = await api.request<Session>('PUT', apiPaths.sessionAccess(sessionId), { access });
    }
    if (cli.flags.json) process.stdout.write(`${visibleJson(session, 2)}\n`);
    else printAccess(session);
    return EXIT.ok;
  },
};
