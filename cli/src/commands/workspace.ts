import { apiPaths, type PullRequestRecord, type PushRecord, type WorkspaceChanges } from '@svc/protocol';
import { createApi } from '../api.js';
import { visibleText } from '../attach/visible-text.js';
import { CliError, EXIT } from '../exit-codes.js';
import { colourEnabled, printJson, withProgress } from '../output.js';
import { resolveConnection } from '../settings.js';
import { CONNECTION_HELP, connectionFlags, type Command } from './command.js';

const SGR = { reset: '\x1b[0m', bold: '\x1b[1m', red: '\x1b[31m', green: '\x1b[32m', cyan: '\x1b[36m' } as const;

/** A unified diff for a terminal: every line made visible (the sandbox wrote it), and coloured when colours may be used. */
function diffForTerminal(diff: string, colour: boolean): string {
  return visibleText(diff)
    .split('\n')
    .map((line) => {
      if (!colour || line === '') return line;
      if (line.startsWith('diff --git ') || line.startsWith('+++ ') || line.startsWith('--- ')) return `${SGR.bold}${line}${SGR.reset}`;
      if (line.startsWith('@@')) return `${SGR.cyan}${line}${SGR.reset}`;
      if (line.startsWith('+')) return `${SGR.green}${line}${SGR.reset}`;
      if (line.startsWith('-')) return `${SGR.red}${line}${SGR.reset}`;
      return line;
    })
    .join('\n');
}

/** `git diff --stat`'s way: each file with its counts, then the sums. */
function changesStat(changes: WorkspaceChanges): string {
  const width = Math.max(0, ...changes.files.map((file) => file.path.length));
  const lines = changes.files.map((file) => {
    const counts = file.binary ? 'binary' : `+${file.additions} -${file.deletions}`;
    const renamed = file.old_path ? ` (from ${visibleText(file.old_path)})` : '';
    return ` ${visibleText(file.path).padEnd(width)} | ${counts} ${file.status}${renamed}`;
  });
  const more = changes.files_truncated ? ' (and more: the report lists the first ones)' : '';
  return [...lines, ` ${changes.files.length} file(s) changed, +${changes.additions} -${changes.deletions}${more}`].join('\n');
}

const changesFlags = {
  ...connectionFlags,
  stat: { type: 'boolean', default: false },
  nameOnly: { type: 'boolean', default: false },
  path: { type: 'string' },
  json: { type: 'boolean', default: false },
} as const;

/** `svc changes <worker>`: what the agent changed in its workspace, as last reported (docs/workspace.md). */
export const changesCommand: Command<typeof changesFlags> = {
  name: 'changes',
  summary: "a worker's changes to its repository (a diff)",
  help: `  svc changes <worker-id> [--stat | --name-only | --json] [--path <file>]

The workspace's changes against the commit it was cloned at, as its sidecar last reported them
(after each turn): also once the session is deleted.

Flags
  --stat           each file with its +/- counts, then the sums
  --name-only      the changed files' paths
  --path <file>    the diff of one file
  --json           the changes as the API gives them (files, commits, push, pull request)
${CONNECTION_HELP}

Examples
  $ svc changes wrk_AbC123
  $ svc changes wrk_AbC123 --stat
  $ svc changes wrk_AbC123 --path src/main.ts | less -R`,
  flags: changesFlags,
  async run(cli) {
    const workerId = cli.input[1];
    if (!workerId) throw new CliError('svc changes needs a worker id (svc sessions list shows them)', EXIT.usage);
    const api = createApi(await resolveConnection(cli.flags));
    if (cli.flags.json || cli.flags.stat || cli.flags.nameOnly) {
      const changes = await api.request<WorkspaceChanges>('GET', apiPaths.changes(workerId));
      if (cli.flags.json) printJson(changes);
      else if (cli.flags.nameOnly) process.stdout.write(changes.files.map((file) => `${visibleText(file.path)}\n`).join(''));
      else process.stdout.write(`${changesStat(changes)}\n`);
      return EXIT.ok;
    }
    const { text, headers } = await api.text(apiPaths.changesDiff(workerId, { path: cli.flags.path }));
    process.stdout.write(diffForTerminal(text, colourEnabled()));
    if (headers.get('x-svc-patch-truncated') === 'true')
      process.stderr.write(`(the stored diff is cut short: the whole one is ${headers.get('x-svc-patch-bytes')} bytes)\n`);
    return EXIT.ok;
  },
};

const pushFlags = { ...connectionFlags, branch: { type: 'string' }, message: { type: 'string' }, json: { type: 'boolean', default: false } } as const;

/** `svc push <worker>`: commit what the agent left and push its work branch, with the control plane's credential. */
export const pushCommand: Command<typeof pushFlags> = {
  name: 'push',
  summary: "push a worker's work branch to its repository",
  help: `  svc push <worker-id> [--branch <name>] [--message <text>]

Commits what is uncommitted in the workspace (in your name) and pushes the work branch
(svc/<session id> unless the template names one, or --branch) to the repository.

Flags
  --branch <name>    push to this branch instead
  --message <text>   the commit message for what is uncommitted
  --json             the push as the API records it
${CONNECTION_HELP}

Examples
  $ svc push wrk_AbC123
  $ svc push wrk_AbC123 --branch fix-login --message "Fix the login redirect"`,
  flags: pushFlags,
  async run(cli) {
    const workerId = cli.input[1];
    if (!workerId) throw new CliError('svc push needs a worker id (svc sessions list shows them)', EXIT.usage);
    const api = createApi(await resolveConnection(cli.flags));
    const body = {
      ...(cli.flags.branch !== undefined ? { branch: cli.flags.branch } : {}),
      ...(cli.flags.message !== undefined ? { message: cli.flags.message } : {}),
    };
    const pushed = await withProgress('pushing', api.request<PushRecord>('POST', apiPaths.changesPush(workerId), body));
    if (cli.flags.json) printJson(pushed);
    else process.stdout.write(`pushed ${pushed.branch} (${pushed.commit.slice(0, 12)}) to ${pushed.remote}\n`);
    return EXIT.ok;
  },
};

const prFlags = {
  ...connectionFlags,
  title: { type: 'string' },
  body: { type: 'string' },
  base: { type: 'string' },
  json: { type: 'boolean', default: false },
} as const;

/** `svc pr <worker> --title …`: a pull request of the pushed work branch. */
export const prCommand: Command<typeof prFlags> = {
  name: 'pr',
  summary: "open a pull request of a worker's pushed branch",
  help: `  svc pr <worker-id> --title <text> [--body <text>] [--base <branch>]

Opens a pull request of the branch last pushed (svc push first) through the repository's forge.

Flags
  --title <text>     its title (required)
  --body <text>      its description
  --base <branch>    the branch it goes into (default: the repository's default branch)
  --json             the pull request as the API records it
${CONNECTION_HELP}

Examples
  $ svc pr wrk_AbC123 --title "Fix the login redirect"`,
  flags: prFlags,
  async run(cli) {
    const workerId = cli.input[1];
    if (!workerId) throw new CliError('svc pr needs a worker id (svc sessions list shows them)', EXIT.usage);
    if (!cli.flags.title) throw new CliError('svc pr needs --title', EXIT.usage);
    const api = createApi(await resolveConnection(cli.flags));
    const body = {
      title: cli.flags.title,
      ...(cli.flags.body !== undefined ? { body: cli.flags.body } : {}),
      ...(cli.flags.base !== undefined ? { base: cli.flags.base } : {}),
    };
    const opened = await api.request<PullRequestRecord>('POST', apiPaths.pullRequest(workerId), body);
    if (cli.flags.json) printJson(opened);
    else process.stdout.write(`${opened.url}\n`);
    return EXIT.ok;
  },
};
