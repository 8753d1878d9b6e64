import { apiPaths, isVoteAnswer, type ApprovalItem, type DecideAnswer, type ListResponseOf } from '@svc/protocol';
import { summarizeInput } from '@svc/viewer';
import { ApiError, createApi, type Api } from '../api.js';
import { visibleJson, visibleText } from '../attach/visible-text.js';
import { CliError, EXIT } from '../exit-codes.js';
import { printTable } from '../output.js';
import { resolveConnection } from '../settings.js';
import { CONNECTION_HELP, connectionFlags, type Command } from './command.js';

const flags = { ...connectionFlags, message: { type: 'string' }, json: { type: 'boolean', default: false } } as const;

/** How many characters of a request's input the inbox shows. */
const INPUT_CHARS = 60;

/** A table cell of text an agent may have written: its controls shown as `\xNN`, and a tab as a space (it would break the columns). */
const cell = (text: string) => visibleText(text).replace(/\t/g, ' ');

/** How long until `deadline`, for a person: "in 45s", "in 4m 10s", "in 2h 5m"; "overdue" once it passed (the timeout policy decides). */
export function timeUntil(deadline: string, now = Date.now()): string {
  const seconds = Math.round((Date.parse(deadline) - now) / 1000);
  if (!(seconds > 0)) return 'overdue';
  if (seconds < 60) return `in ${seconds}s`;
  if (seconds < 3600) return `in ${Math.floor(seconds / 60)}m ${seconds % 60}s`;
  return `in ${Math.floor(seconds / 3600)}h ${Math.floor((seconds % 3600) / 60)}m`;
}

/** A routed request's rule, who may decide it, whether it was escalated, and a quorum's count: "Bash(rm *) → group:release (escalated), 1 of 2 (bob)". */
function routeText(route: NonNullable<ApprovalItem['route']>): string {
  const escalated = route.escalated ? ' (escalated)' : '';
  const count = route.quorum > 1 ? `, ${route.allows} of ${route.quorum}${route.voters.length > 0 ? ` (${route.voters.join(', ')})` : ''}` : '';
  return `${route.rule} → ${route.deciders.join(', ')}${escalated}${count}`;
}

function describe(item: ApprovalItem, now: number): string[] {
  const { request_id: requestId, tool_name: tool, input } = item.request.data;
  return [
    cell(item.worker_id),
    cell(requestId),
    cell(tool),
    cell(summarizeInput(tool, input, INPUT_CHARS)),
    timeUntil(item.deadline, now),
    item.route ? cell(routeText(item.route)) : '',
  ];
}

/** `svc approvals`: the requests waiting for the caller's decision, across every worker. */
async function listInbox(api: Api, json: boolean): Promise<number> {
  const inbox = await api.request<ListResponseOf<ApprovalItem>>('GET', apiPaths.approvals);
  if (json) {
    process.stdout.write(`${visibleJson(inbox, 2)}\n`);
    return EXIT.ok;
  }
  if (inbox.items.length === 0) {
    process.stdout.write('no request waits for your decision\n');
    return EXIT.ok;
  }
  const now = Date.now();
  printTable(
    ['WORKER', 'REQUEST', 'TOOL', 'INPUT', 'DEADLINE', 'ROUTE'],
    inbox.items.map((item) => describe(item, now)),
  );
  const more = inbox.total > inbox.items.length ? ` (the ${inbox.items.length} with the nearest deadlines shown)` : '';
  process.stdout.write(`${inbox.total} waiting for your decision${more}\n`);
  return EXIT.ok;
}

/** What became of one decision: the API's answer (a decision, or a vote toward a quorum), or its refusal. */
type Outcome = { request_id: string; answer: DecideAnswer } | { request_id: string; error: { status: number; code: string; message: string } };

/** The line a person reads for one decision. */
function outcomeLine(outcome: Outcome): string {
  const id = visibleText(outcome.request_id);
  if ('error' in outcome) return `error: ${id}: ${visibleText(outcome.error.message)} (${outcome.error.code})`;
  const { answer } = outcome;
  if (isVoteAnswer(answer)) return `${id}: vote counted (${answer.allows} of ${answer.quorum})`;
  return `${id}: ${answer.data.decision === 'allow' ? 'allowed' : 'denied'}`;
}

/**
 * `svc approvals allow|deny <worker> <request-id>…`: each request its own decision, one after the
 * other, so a refusal of one (not its decider, decided already) leaves the others decided.
 */
async function decideEach(
  api: Api,
  decision: 'allow' | 'deny',
  workerId: string,
  requestIds: string[],
  options: { message?: string | undefined; json: boolean },
): Promise<number> {
  const outcomes: Outcome[] = [];
  for (const requestId of requestIds) {
    let outcome: Outcome;
    try {
      const body = { request_id: requestId, decision, ...(options.message !== undefined ? { message: options.message } : {}) };
      outcome = { request_id: requestId, answer: await api.request<DecideAnswer>('POST', apiPaths.control(workerId), body) };
    } catch (err) {
      // Only the API's refusal of this one request; an unreachable gateway ends the command.
      if (!(err instanceof ApiError)) throw err;
      outcome = { request_id: requestId, error: { status: err.status, code: err.code, message: err.apiMessage } };
    }
    outcomes.push(outcome);
    if (!options.json) ('error' in outcome ? process.stderr : process.stdout).write(`${outcomeLine(outcome)}\n`);
  }
  if (options.json) process.stdout.write(`${visibleJson(outcomes, 2)}\n`);
  return outcomes.some((outcome) => 'error' in outcome) ? EXIT.failed : EXIT.ok;
}

/** `svc approvals [allow|deny <worker> <request-id>…]`: the caller's inbox, and deciding from it (docs/teams.md). */
export const approvalsCommand: Command<typeof flags> = {
  name: 'approvals',
  summary: 'the requests waiting for your decision; allow or deny them',
  help: `  svc approvals
  svc approvals allow <worker-id> <request-id> … [--message <text>]
  svc approvals deny <worker-id> <request-id> … [--message <text>]

With no action, lists the open requests you may decide now, across every worker, the nearest
deadline first: a request routed to you (its rule, who may decide it, whether it was escalated,
and a quorum's count "1 of 2"), and any other of a worker you approve (docs/teams.md).

allow and deny decide each request given, one after the other, and print for each "allowed",
"denied", "vote counted (1 of 2)" (a quorum needs more allows), or why it was refused (not one
of its deciders, decided already…). Exit 1 if any was refused.

Flags
  --message <text>   the reason the agent receives (a deny without one gets a default)
  --json             print the API's JSON (for allow and deny: each request's answer or error)
${CONNECTION_HELP}

Examples
  $ svc approvals
  $ svc approvals allow wrk_AbC123 toolu_01 toolu_02
  $ svc approvals deny wrk_AbC123 toolu_03 --message "not on main: open a pull request"`,
  flags,
  async run(cli) {
    const [action, workerId, ...requestIds] = cli.input.slice(1);
    if (action === undefined || action === 'list') {
      if (cli.flags.message !== undefined) throw new CliError('--message goes with allow or deny', EXIT.usage);
      return listInbox(createApi(await resolveConnection(cli.flags)), cli.flags.json);
    }
    if (action !== 'allow' && action !== 'deny')
      throw new CliError(`unknown action "${action}": svc approvals lists, svc approvals allow|deny <worker-id> <request-id> … decides`, EXIT.usage);
    if (!workerId || requestIds.length === 0)
      throw new CliError(`svc approvals ${action} needs a worker id and one or more request ids (svc approvals lists them)`, EXIT.usage);
    return decideEach(createApi(await resolveConnection(cli.flags)), action, workerId, requestIds, cli.flags);
  },
};
