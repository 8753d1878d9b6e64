import { SYSTEM_SUBTYPES } from '@svc/protocol';
import { clientUserMessageId } from './codex-rollout.js';
import { CodexToolCalls, toolOf } from './codex-tool-calls.js';
import { modelCommandOf } from './shell-command.js';
import { isObject, jsonLine, text, unparsedLine, type AgentEvent, type AgentStream, type Json, type MessageForAgent } from './adapter.js';

export const INITIALIZE_ID = 0;
export const THREAD_START_ID = 1;
const TURN_START_ID = 2;
const FIRST_PERSON_RPC_ID = 100;

/** One JSON-RPC message as a line for Codex's stdin. */
export const rpcLine = (body: Json) => `${JSON.stringify(body)}\n`;
const count = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.floor(value) : 0);

/** What one app-server session remembers from line to line. */
export interface CodexSession {
  /** The first user message, sent with `turn/start` once the thread exists. */
  prompt: string | undefined;
  threadId: string;
  /** The turn running now (from `turn/started` to `turn/completed`). */
  activeTurnId: string | undefined;
  /** The thread exists (`thread/start` or `thread/resume` answered): before, a message cannot name it. */
  threadReady: boolean;
  /** Our `turn/start` is sent and Codex has not said `turn/started` yet: a message waits to be steered in. */
  turnStarting: boolean;
  /** People's messages held until the thread exists or the starting turn has its id. */
  readonly held: MessageForAgent[];
  /** The JSON-RPC ids of our `turn/start`s not yet answered: a refused one ends its turn. */
  readonly turnStartIds: Set<number>;
  /** The messages of each of our `turn/steer`s not yet answered: refused (the turn ended meanwhile), they start a turn of their own. */
  readonly steered: Map<number, MessageForAgent[]>;
  /** The next id for a request of ours after the handshake's (a person's messages and interrupts). */
  nextRpcId: number;
  /** Turns completed so far: the `result`'s `num_turns`. */
  turns: number;
  /** Lines Codex's last messages call for on its stdin, taken by the adapter's `takeOutgoing`. */
  readonly outgoing: string[];
  /** The JSON-RPC id of each open approval request, by our request id. */
  readonly rpcIds: Map<string, unknown>;
  readonly calls: CodexToolCalls;
}

export function createCodexSession(): CodexSession {
  return {
    prompt: undefined,
    threadId: 'thread',
    activeTurnId: undefined,
    threadReady: false,
    turnStarting: false,
    held: [],
    turnStartIds: new Set(),
    steered: new Map(),
    nextRpcId: FIRST_PERSON_RPC_ID,
    turns: 0,
    outgoing: [],
    rpcIds: new Map(),
    calls: new CodexToolCalls(),
  };
}

/** Messages as a turn's input items: each one's text, then its images (as data URLs). */
const userInput = (messages: readonly MessageForAgent[]) =>
  messages.flatMap(({ text, images = [] }) => [
    ...(text === '' && images.length > 0 ? [] : [{ type: 'text', text, text_elements: [] }]),
    ...images.map((image) => ({ type: 'image', url: `data:${image.media_type};base64,${image.data}` })),
  ]);

/** A turn's `input`, and the `clientUserMessageId` naming the people's messages in it (Codex records it: codex-rollout.ts). */
function turnInput(messages: readonly MessageForAgent[]): { input: ReturnType<typeof userInput>; clientUserMessageId?: string } {
  const clientId = clientUserMessageId(messages);
  return { input: userInput(messages), ...(clientId === undefined ? {} : { clientUserMessageId: clientId }) };
}

/**
 * A person's message as Codex takes it: `turn/steer` into the turn running now (its input joins
 * that turn), else `turn/start` of a new one. Before the thread exists, or while our `turn/start`
 * waits for its `turn/started`, it is held (empty bytes): it goes with the first turn, or is
 * steered in once that turn has its id.
 */
export function messageLine(session: CodexSession, message: MessageForAgent): string {
  if (!session.threadReady || session.turnStarting) {
    session.held.push(message);
    return '';
  }
  return session.activeTurnId ? steerLine(session, [message]) : turnStartLine(session, [message]);
}

/** `turn/steer` of messages into the turn running now, remembered until Codex answers it. */
function steerLine(session: CodexSession, messages: MessageForAgent[]): string {
  const id = session.nextRpcId++;
  session.steered.set(id, messages);
  return rpcLine({ method: 'turn/steer', id, params: { threadId: session.threadId, expectedTurnId: session.activeTurnId, ...turnInput(messages) } });
}

/** `turn/start` of a turn of the messages' own. */
function turnStartLine(session: CodexSession, messages: MessageForAgent[]): string {
  const id = session.nextRpcId++;
  session.turnStarting = true;
  session.turnStartIds.add(id);
  return rpcLine({ method: 'turn/start', id, params: { threadId: session.threadId, ...turnInput(messages) } });
}

/** Messages whose steer Codex refused (the turn ended as they came): steered into the turn running now, held for the one starting, or a turn of their own. */
function steerRefused(session: CodexSession, messages: MessageForAgent[]): void {
  if (session.turnStarting) session.held.push(...messages);
  else session.outgoing.push(session.activeTurnId ? steerLine(session, messages) : turnStartLine(session, messages));
}

/** Whether a message sent now starts a turn of its own (else it joins the running or starting turn, or the first). */
export function messageStartsTurn(session: CodexSession): boolean {
  if (!session.threadReady) return session.prompt === undefined && session.held.length === 0;
  return !session.turnStarting && session.activeTurnId === undefined;
}

/** A person's interrupt: `turn/interrupt` of the turn running now; nothing when none runs. */
export function interruptLine(session: CodexSession): string {
  if (!session.activeTurnId) return '';
  return rpcLine({ method: 'turn/interrupt', id: session.nextRpcId++, params: { threadId: session.threadId, turnId: session.activeTurnId } });
}

/** A request (it has an `id`) or a notification from Codex, as its handler gets it. */
interface CodexMessage {
  method: string;
  params: Json;
  /** The whole message. */
  parsed: Json;
  line: string;
  stream: AgentStream;
}

type Handler = (message: CodexMessage, session: CodexSession) => AgentEvent[];

/** The answer to one of our requests: `thread/start`'s starts the turn; a refusal is an error event. */
function response(parsed: Json, line: string, session: CodexSession): AgentEvent[] {
  const steered = session.steered.get(parsed['id'] as number);
  session.steered.delete(parsed['id'] as number);
  if (isObject(parsed['error']) && steered) {
    steerRefused(session, steered);
    const why = text(parsed['error']['message']) ?? line;
    return [
      {
        type: 'system',
        data: { level: 'warn', message: `Codex refused to steer a message into its turn (${why}): it is given again`, subtype: SYSTEM_SUBTYPES.agentError },
      },
    ];
  }
  if (isObject(parsed['error'])) {
    const why = text(parsed['error']['message']) ?? line;
    const refusal: AgentEvent = {
      type: 'system',
      data: { level: 'error', message: `Codex refused request ${String(parsed['id'])}: ${why}`, subtype: SYSTEM_SUBTYPES.agentError },
    };
    // A turn (or the thread) that never started ends here, so the worker does not wait on it.
    if (parsed['id'] !== THREAD_START_ID && !session.turnStartIds.delete(parsed['id'] as number)) return [refusal];
    session.turnStarting = false;
    return [refusal, { type: 'result', data: { subtype: 'error', is_error: true, text: `Codex refused to start the turn: ${why}` } }];
  }
  if (parsed['id'] !== THREAD_START_ID) {
    session.turnStartIds.delete(parsed['id'] as number);
    return [];
  }
  const result = isObject(parsed['result']) ? parsed['result'] : {};
  const thread = isObject(result['thread']) ? result['thread'] : {};
  session.threadId = text(thread['id']) ?? session.threadId;
  const rolloutPath = text(thread['path']);
  if (rolloutPath) session.calls.followRollout(rolloutPath);
  session.threadReady = true;
  // The first turn: the prompt, and what people said before the thread existed.
  const first = [...(session.prompt === undefined ? [] : [{ text: session.prompt }]), ...session.held.splice(0)];
  if (first.length > 0) {
    session.turnStarting = true;
    session.turnStartIds.add(TURN_START_ID);
    session.outgoing.push(rpcLine({ method: 'turn/start', id: TURN_START_ID, params: { threadId: session.threadId, ...turnInput(first) } }));
  }
  return [
    {
      type: 'system',
      data: {
        level: 'info',
        message: `Codex started (model ${text(result['model']) ?? 'unknown'})`,
        subtype: SYSTEM_SUBTYPES.init,
        details: {
          thread_id: session.threadId,
          model: text(result['model']) ?? null,
          approval_policy: text(result['approvalPolicy']) ?? null,
          sandbox: isObject(result['sandbox']) ? (text(result['sandbox']['type']) ?? null) : null,
        },
      },
    },
  ];
}

/** A method the table does not name. A request we do not know would leave Codex waiting: say so loudly. */
function unknownMethod({ method, parsed, line }: CodexMessage): AgentEvent[] {
  if (!('id' in parsed)) return [{ type: 'system', data: { level: 'debug', message: method, subtype: SYSTEM_SUBTYPES.codexNotification } }];
  return [
    {
      type: 'system',
      data: {
        level: 'warn',
        message: `Codex asked ${method}, which the sidecar does not answer`,
        subtype: SYSTEM_SUBTYPES.unansweredRequest,
        details: { line: line.slice(0, 4096) },
      },
    },
  ];
}

/** Codex asks to run `tool`: a `control_request` for the permission engine or a person, answered on the request's own id. */
function approvalRequest(tool: 'command_execution' | 'file_change'): Handler {
  return (message, session) => {
    const { params, parsed } = message;
    // Only a request can be answered; a notification of the same name is one we do not know.
    if (!('id' in parsed)) return unknownMethod(message);
    const requestId = `${session.threadId}:${String(parsed['id'])}`;
    session.rpcIds.set(requestId, parsed['id']);
    // A file change's request names its item; the item (announced just before) has the paths
    // the permission engine matches `file_change(<path>)` against.
    const changes = session.calls.changesOf(text(params['itemId']) ?? '') ?? (Array.isArray(params['changes']) ? params['changes'] : undefined);
    const input: Json =
      tool === 'command_execution'
        ? { command: modelCommandOf(text(params['command']) ?? ''), ...(text(params['cwd']) ? { cwd: text(params['cwd']) } : {}) }
        : { ...(changes ? { changes } : {}), ...(text(params['grantRoot']) ? { grant_root: text(params['grantRoot']) } : {}) };
    return [
      {
        type: 'control_request',
        data: {
          request_id: requestId,
          tool_name: tool,
          input,
          ...(text(params['itemId']) ? { tool_use_id: text(params['itemId']) } : {}),
          ...(text(params['reason']) ? { description: text(params['reason']) } : {}),
        },
      },
    ];
  };
}

/** An item started or completed: messages and reasoning become `assistant`, tool calls go to the bookkeeping. */
function itemChanged(kind: 'item/started' | 'item/completed'): Handler {
  return ({ params, line, stream }, session) => {
    const item = params['item'];
    if (!isObject(item)) return [unparsedLine(line, stream, 'item without item')];
    session.calls.noteItem(item);
    switch (item['type']) {
      case 'userMessage':
        return [];
      case 'agentMessage':
        return kind === 'item/completed' ? [{ type: 'assistant', data: { text: text(item['text']) ?? '', kind: 'text' } }] : [];
      case 'reasoning': {
        if (kind !== 'item/completed') return [];
        const summary = Array.isArray(item['summary']) ? item['summary'].filter((part): part is string => typeof part === 'string').join('\n') : '';
        return summary ? [{ type: 'assistant', data: { text: summary, kind: 'thinking' } }] : [];
      }
    }
    const tool = toolOf(item);
    if (!tool)
      return [
        {
          type: 'system',
          data: { level: 'debug', message: `codex item ${String(item['type'])}`, subtype: SYSTEM_SUBTYPES.codexItem, details: { line: line.slice(0, 4096) } },
        },
      ];
    return session.calls.fromItem(kind, item, tool);
  };
}

/** The thread's token total. Codex reports no price: tokens only. */
function tokenUsage({ params }: CodexMessage): AgentEvent[] {
  const usage = isObject(params['tokenUsage']) && isObject(params['tokenUsage']['total']) ? params['tokenUsage']['total'] : {};
  return [
    {
      type: 'progress',
      data: {
        input_tokens: count(usage['inputTokens']),
        output_tokens: count(usage['outputTokens']),
        cache_read_tokens: count(usage['cachedInputTokens']),
        cost_usd: 0,
      },
    },
  ];
}

/** The turn's end: the calls Codex reported no item for, then the `result`. */
function turnCompleted({ params }: CodexMessage, session: CodexSession): AgentEvent[] {
  session.turns++;
  session.activeTurnId = undefined;
  const turn = isObject(params['turn']) ? params['turn'] : {};
  const status = text(turn['status']) ?? 'completed';
  const error = isObject(turn['error']) ? text(turn['error']['message']) : undefined;
  const summary = error ?? (status === 'interrupted' ? "the turn was cancelled: a denial or a person's interrupt ended it" : undefined);
  return [
    ...session.calls.unreported(),
    {
      type: 'result',
      data: {
        subtype: status === 'completed' ? 'success' : status,
        is_error: status === 'failed',
        num_turns: session.turns,
        ...(summary ? { text: summary } : {}),
      },
    },
  ];
}

/** A stream failure Codex will retry is a warning; one it gives up on, an error. */
function codexError({ params, line }: CodexMessage): AgentEvent[] {
  const error = isObject(params['error']) ? params['error'] : {};
  const willRetry = params['willRetry'] === true;
  return [
    {
      type: 'system',
      data: {
        level: willRetry ? 'warn' : 'error',
        message: text(error['message']) ?? text(params['message']) ?? line,
        subtype: SYSTEM_SUBTYPES.agentError,
        details: { will_retry: willRetry },
      },
    },
  ];
}

const lifecycleNotice: Handler = ({ method }) => [{ type: 'system', data: { level: 'debug', message: method, subtype: method.replace('/', '_') } }];
/** A turn began: a person's message now steers it, an interrupt ends it. */
const turnStarted: Handler = (message, session) => {
  const turn = isObject(message.params['turn']) ? message.params['turn'] : {};
  session.activeTurnId = text(turn['id']) ?? session.activeTurnId;
  session.turnStarting = false;
  // What people said while the turn was starting is steered into it.
  const held = session.held.splice(0);
  if (held.length > 0 && session.activeTurnId) session.outgoing.push(steerLine(session, held));
  return lifecycleNotice(message, session);
};
/** A notification whose content arrives again whole (a completed item, a final status): nothing to add. */
const superseded: Handler = () => [];

/** What each method Codex sends becomes; a method not named here is `unknownMethod`'s. */
const HANDLERS: Record<string, Handler> = {
  'item/commandExecution/requestApproval': approvalRequest('command_execution'),
  'item/fileChange/requestApproval': approvalRequest('file_change'),
  'thread/started': lifecycleNotice,
  'turn/started': turnStarted,
  'item/started': itemChanged('item/started'),
  'item/completed': itemChanged('item/completed'),
  'thread/tokenUsage/updated': tokenUsage,
  'turn/completed': turnCompleted,
  error: codexError,
  'item/agentMessage/delta': superseded,
  'item/reasoning/summaryPartAdded': superseded,
  'item/reasoning/summaryTextDelta': superseded,
  'item/reasoning/textDelta': superseded,
  'item/commandExecution/outputDelta': superseded,
  'thread/status/changed': superseded,
  'account/rateLimits/updated': superseded,
  'remoteControl/status/changed': superseded,
  'serverRequest/resolved': superseded,
};

/** One line of app-server's output → events; what it calls for on Codex's stdin goes to `session.outgoing`. */
export function parseCodexLine(line: string, stream: AgentStream, session: CodexSession): AgentEvent[] {
  const json = jsonLine(line, stream);
  if ('events' in json) return json.events;
  const parsed = json.object;
  const method = text(parsed['method']);
  if (method === undefined)
    return 'id' in parsed ? response(parsed, line, session) : [unparsedLine(line, stream, 'neither a request, a notification nor a response')];
  // Own keys only: a method named like an Object property (`toString`) is a method we do not know.
  const handler = (Object.hasOwn(HANDLERS, method) ? HANDLERS[method] : undefined) ?? unknownMethod;
  return handler({ method, params: isObject(parsed['params']) ? parsed['params'] : {}, parsed, line, stream }, session);
}
