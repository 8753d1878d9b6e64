import { randomUUID } from 'node:crypto';
import { render } from 'ink';
import { apiPaths, EVENT_LIST_LIMIT, isEndedStatus, isVoteAnswer, type DecideAnswer, type ListResponseOf, type StoredEvent, type Worker } from '@svc/protocol';
import { ApiError, createApi, type Api } from '../api.js';
import { AttachApp, type AttachAppProps, type ConversationActions, type ExitReason } from '../attach/components/AttachApp.js';
import { followEventStream } from '@svc/viewer';
import { wsTransport } from '@svc/viewer/ws';
import { WorkerView } from '@svc/viewer';
import { createTheme } from '../attach/theme.js';
import { rawTerminal } from '../attach/raw-terminal.js';
import { visibleText } from '../attach/visible-text.js';
import { CliError, EXIT } from '../exit-codes.js';
import { interruptTurn, sendMessage } from '../conversation-api.js';
import { colourEnabled } from '../output.js';
import { resolveConnection } from '../settings.js';
import { CONNECTION_HELP, connectionFlags, type Command } from './command.js';

const flags = { ...connectionFlags, readOnly: { type: 'boolean', default: false }, raw: { type: 'boolean', default: false } } as const;

/**
 * What a person does from the screen: decide the prompt and, for a conversation, send a message
 * or interrupt the turn. Each answers at once; a refusal arrives later as a notice (its code
 * says why: `worker_ended`, `payload_too_large`…), and an ended worker turns the view read-only.
 */
export function personActions(
  api: Api,
  model: WorkerView,
  worker: Worker,
): { decide: AttachAppProps['decide']; conversation?: ConversationActions | undefined } {
  const refused = (what: string) => (err: unknown) => {
    if (err instanceof ApiError && err.code === 'worker_ended') model.setReadOnly('the worker has ended');
    model.notify(`${what}: ${err instanceof Error ? err.message : String(err)}`, 'error');
  };
  const decide = (requestId: string, decision: 'allow' | 'deny') => {
    model.decided(requestId);
    api
      .request<DecideAnswer>('POST', apiPaths.control(worker.worker_id), { request_id: requestId, decision })
      .then((answer) => {
        // A vote toward a quorum (docs/teams.md): this person is done with it, the request waits for others.
        if (isVoteAnswer(answer))
          model.notify(`${requestId}: your vote is counted (${answer.allows} of ${answer.quorum}); it waits for ${answer.quorum - answer.allows} more`, 'info');
      })
      .catch(refused('the decision was not taken'));
  };
  if (worker.mode !== 'conversation') return { decide };
  /** The message last tried and not taken, and its id. */
  let unsent: { text: string; id: string } | undefined;
  return {
    decide,
    conversation: {
      send: async (text) => {
        // The same text sent again after a failure keeps its id: the gateway stores a retry once.
        if (unsent?.text !== text) unsent = { text, id: randomUUID() };
        try {
          await sendMessage(api, worker.worker_id, { text, client_message_id: unsent.id });
          unsent = undefined;
          return true;
        } catch (err) {
          refused('the message was not sent')(err);
          return false;
        }
      },
      interrupt: () => void interruptTurn(api, worker.worker_id).catch(refused('the interrupt was not sent')),
    },
  };
}

/** `svc attach <worker-id>`: watch a worker live and answer its permission prompts. */
export const attachCommand: Command<typeof flags> = {
  name: 'attach',
  summary: 'watch a worker live and answer its prompts',
  help: `  svc attach <worker-id> [--read-only]

Keys
  y / n            allow / deny the prompt on screen (several queue, one at a time)
  ↑ ↓ PgUp PgDn    scroll the history
  q                quit (when no prompt is shown)
  ctrl+d, ctrl+c   detach: the worker keeps running
  m                a conversation: write a message (enter sends, esc cancels)
  x                a conversation: interrupt the agent's current turn

Flags
  --read-only      replay from the start, no prompts (automatic for an ended worker)
  --raw            a shell in the worker's sandbox (its workspace); exit or ctrl+d leaves
${CONNECTION_HELP}

Examples
  $ svc attach wrk_AbC123
  $ svc attach wrk_AbC123 --read-only
  $ svc attach wrk_AbC123 --raw`,
  flags,
  async run(cli) {
    const workerId = cli.input[1];
    if (!workerId) throw new CliError('svc attach needs a worker id (svc sessions list shows them)', EXIT.usage);
    const api = createApi(await resolveConnection(cli.flags));
    if (cli.flags.raw) {
      await rawTerminal(api, workerId);
      return EXIT.ok;
    }
    const worker = await api.request<Worker>('GET', apiPaths.worker(workerId));
    const model = new WorkerView({ readOnly: cli.flags.readOnly || isEndedStatus(worker.status) });
    if (!cli.flags.readOnly && isEndedStatus(worker.status)) model.notify(`read-only: the worker is ${worker.status}`, 'info');

    let fatal: string | undefined;
    let exitReason = 'quit' as ExitReason;
    const stream = followEventStream({
      view: model,
      transport: wsTransport((afterId) => api.socket(apiPaths.eventStream(workerId, afterId))),
      read: async (afterId) =>
        (await api.request<ListResponseOf<StoredEvent>>('GET', apiPaths.sdkEvents(workerId, { after_id: afterId, limit: EVENT_LIST_LIMIT.max }))).items,
      onFatal: (message) => {
        fatal = message;
        app.unmount();
      },
    });
    // An agent that exits ends its worker: look, and go read-only when it has ended.
    const watchEnd = setInterval(() => {
      if (model.readOnly || model.agentExit === undefined) return;
      api
        .request<Worker>('GET', apiPaths.worker(workerId))
        .then((latest) => {
          if (isEndedStatus(latest.status)) model.setReadOnly(`the worker is ${latest.status}`);
        })
        .catch(() => {});
    }, 1000);

    const { decide, conversation } = personActions(api, model, worker);
    const app = render(
      <AttachApp
        model={model}
        workerId={workerId}
        theme={createTheme(colourEnabled())}
        decide={decide}
        conversation={conversation}
        onExit={(reason) => (exitReason = reason)}
      />,
      {
        exitOnCtrlC: false,
        // A terminal is interactive even when CI=true is in the environment (Ink would then draw only the last frame).
        interactive: Boolean(process.stdout.isTTY),
      },
    );
    await app.waitUntilExit();
    stream.close();
    clearInterval(watchEnd);
    if (fatal) throw new CliError(`the event stream was refused: ${visibleText(fatal)}`);
    const ended = model.readOnly && !cli.flags.readOnly;
    if (exitReason === 'detached')
      process.stdout.write(
        ended ? `detached from ${workerId} (it has ended)\n` : `detached from ${workerId}; it keeps running (svc attach ${workerId} to come back)\n`,
      );
    return EXIT.ok;
  },
};
