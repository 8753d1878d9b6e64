import { randomBytes } from 'node:crypto';
import { controlWithdrawnData, DEFAULT_DENY_MESSAGE, SYSTEM_SUBTYPES, type EventData } from '@svc/protocol';
import {
  isObject,
  jsonLine,
  text,
  unparsedLine,
  type Adapter,
  type AgentEvent,
  type AgentLaunch,
  type AgentStream,
  type ImageForAgent,
  type Json,
  type LaunchPlan,
} from './adapter.js';
import { forgetUnansweredMessage, messageUuid, transcriptHoldsMessage } from './claude-transcript.js';

/** The id of the handshake the sidecar sends first; the CLI's answer is reported, not forwarded. */
export const INITIALIZE_REQUEST_ID = 'svc_init';
/** How the ids of the sidecar's interrupt requests begin: the CLI answers on them (reported as `agent_control_response`). */
const INTERRUPT_REQUEST_PREFIX = 'svc_interrupt_';

/** A tool result's content: a string, or blocks whose text parts are joined. */
function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content))
    return content.map((block) => (isObject(block) && typeof block['text'] === 'string' ? block['text'] : JSON.stringify(block))).join('\n');
  return content === undefined ? '' : JSON.stringify(content);
}

function assistantEvents(message: Json): AgentEvent[] {
  const messageId = text(message['id']);
  const blocks = Array.isArray(message['content']) ? message['content'] : [];
  return blocks.flatMap((block): AgentEvent[] => {
    if (!isObject(block)) return [];
    if (block['type'] === 'text')
      return [{ type: 'assistant', data: { text: text(block['text']) ?? '', kind: 'text', ...(messageId ? { message_id: messageId } : {}) } }];
    if (block['type'] === 'thinking')
      return [{ type: 'assistant', data: { text: text(block['thinking']) ?? '', kind: 'thinking', ...(messageId ? { message_id: messageId } : {}) } }];
    if (block['type'] === 'tool_use') {
      return [
        {
          type: 'tool_use',
          data: { tool_use_id: text(block['id']) ?? 'unknown', name: text(block['name']) ?? 'unknown', input: isObject(block['input']) ? block['input'] : {} },
        },
      ];
    }
    return [
      {
        type: 'system',
        data: { level: 'debug', message: `assistant block of type ${String(block['type'])}`, subtype: SYSTEM_SUBTYPES.assistantBlock, details: block },
      },
    ];
  });
}

function userEvents(message: Json): AgentEvent[] {
  const content = message['content'];
  if (typeof content === 'string') return [{ type: 'system', data: { level: 'info', message: content, subtype: SYSTEM_SUBTYPES.userMessage } }];
  const blocks = Array.isArray(content) ? content : [];
  return blocks.flatMap((block): AgentEvent[] => {
    if (!isObject(block)) return [];
    if (block['type'] === 'tool_result') {
      return [
        {
          type: 'tool_result',
          data: { tool_use_id: text(block['tool_use_id']) ?? 'unknown', content: contentText(block['content']), is_error: block['is_error'] === true },
        },
      ];
    }
    if (block['type'] === 'text')
      return [{ type: 'system', data: { level: 'info', message: text(block['text']) ?? '', subtype: SYSTEM_SUBTYPES.userMessage } }];
    return [];
  });
}

/** `result` → the turn's `result`, and a `progress` with the process's cumulative tokens and cost. */
function resultEvents(line: Json): AgentEvent[] {
  const result: EventData<'result'> = {
    subtype: text(line['subtype']) ?? 'unknown',
    is_error: line['is_error'] === true,
    ...(typeof line['num_turns'] === 'number' ? { num_turns: line['num_turns'] } : {}),
    ...(typeof line['duration_ms'] === 'number' ? { duration_ms: line['duration_ms'] } : {}),
    ...(typeof line['result'] === 'string' ? { text: line['result'] } : {}),
  };
  // `modelUsage` and `total_cost_usd` are cumulative for the process; `usage` is this turn only.
  const models = isObject(line['modelUsage']) ? Object.values(line['modelUsage']).filter(isObject) : [];
  const sum = (key: string) => models.reduce((total, model) => total + (typeof model[key] === 'number' ? model[key] : 0), 0);
  const progress: EventData<'progress'> = {
    input_tokens: sum('inputTokens'),
    output_tokens: sum('outputTokens'),
    cache_read_tokens: sum('cacheReadInputTokens'),
    cost_usd: typeof line['total_cost_usd'] === 'number' ? line['total_cost_usd'] : sum('costUSD'),
  };
  return [
    { type: 'result', data: result },
    { type: 'progress', data: progress },
  ];
}

function systemEvent(line: Json): AgentEvent {
  const subtype = text(line['subtype']) ?? 'system';
  const details: Json = {};
  for (const key of [
    'session_id',
    'model',
    'cwd',
    'permissionMode',
    'claude_code_version',
    'tool_name',
    'tool_use_id',
    'message',
    'status',
    'attempt',
    'error',
  ]) {
    if (line[key] !== undefined) details[key] = line[key];
  }
  const message =
    subtype === 'init'
      ? `Claude Code started (model ${text(line['model']) ?? 'unknown'}, ${Array.isArray(line['tools']) ? line['tools'].length : 0} tools)`
      : subtype === 'permission_denied'
        ? `Permission denied: ${text(line['tool_name']) ?? 'a tool'}`
        : `Claude Code: ${subtype}`;
  return { type: 'system', data: { level: subtype === 'permission_denied' || subtype === 'api_retry' ? 'warn' : 'info', message, subtype, details } };
}

function controlRequestEvent(line: Json): AgentEvent {
  const request = isObject(line['request']) ? line['request'] : {};
  const requestId = text(line['request_id']) ?? 'unknown';
  if (request['subtype'] !== 'can_use_tool') {
    return {
      type: 'system',
      data: {
        level: 'debug',
        message: `agent control request ${String(request['subtype'])}`,
        subtype: SYSTEM_SUBTYPES.agentControlRequest,
        details: { request_id: requestId },
      },
    };
  }
  const description = text(request['description']);
  const toolUseId = text(request['tool_use_id']);
  return {
    type: 'control_request',
    data: {
      request_id: requestId,
      tool_name: text(request['tool_name']) ?? 'unknown',
      input: isObject(request['input']) ? request['input'] : {},
      ...(toolUseId ? { tool_use_id: toolUseId } : {}),
      ...(description ? { description } : {}),
    },
  };
}

/**
 * A `user` message of stream-json input (the fixture e-multiturn-interrupt shows the CLI taking
 * several in one process): its images as the Messages API's image blocks, then its text.
 */
function userLine(prompt: string, messageId?: string, images: readonly ImageForAgent[] = []): string {
  const content = [
    ...images.map((image) => ({ type: 'image', source: { type: 'base64', media_type: image.media_type, data: image.data } })),
    ...(prompt === '' && images.length > 0 ? [] : [{ type: 'text', text: prompt }]),
  ];
  return JSON.stringify({
    type: 'user',
    ...(messageId === undefined ? {} : { uuid: messageUuid(messageId) }),
    session_id: '',
    parent_tool_use_id: null,
    message: { role: 'user', content },
  });
}

/**
 * Claude Code in stream-json mode (`claude -p --input-format stream-json --output-format
 * stream-json --verbose --permission-prompt-tool stdio`), as ../shared/AGENTS.md describes it
 * and the transcripts in ../shared/fixtures/claude-code show. One stdout line is one JSON object.
 */

export const claudeCodeAdapter: Adapter = {
  name: 'claude-code',
  // EOF on stdin ends the CLI once no turn runs (AGENTS.md).
  endsAfterResult: true,

  launch(launch: AgentLaunch): LaunchPlan {
    const args = ['-p', '--input-format', 'stream-json', '--output-format', 'stream-json', '--verbose', '--permission-prompt-tool', 'stdio'];
    // Its session's transcript is in the sandbox's home: the CLI reads it back and goes on.
    if (launch.resume !== undefined) args.push('--resume', launch.resume);
    args.push(...launch.args);
    const stdinLines = [JSON.stringify({ type: 'control_request', request_id: INITIALIZE_REQUEST_ID, request: { subtype: 'initialize', hooks: {} } })];
    if (launch.prompt !== undefined) stdinLines.push(userLine(launch.prompt));
    return { command: launch.command, args, stdinLines };
  },

  /**
   * A message is queued behind the running turn: a turn of its own, unless the turn has another
   * model request to make, which takes it in (both 2.1.197 and 2.1.330).
   */
  turns: { messageStartsTurn: () => true, mayAbsorbQueued: true },
  resumes: true,

  /** A stream-json `user` message: the CLI takes it as the next turn, queued behind a running one. */
  formatMessage: ({ text, id, images }) => `${userLine(text, id, images)}\n`,
  takesImages: true,

  /** Its transcript in the agent's home says whether it took a message (its uuid) and answered it. */
  tookMessage: (messageId, place) => transcriptHoldsMessage(place, messageId),
  forgetUnansweredMessage: (messageId, place) => forgetUnansweredMessage(place, messageId),

  /** The `interrupt` control request (fixture e-multiturn-interrupt): the CLI cancels its open permission prompts and ends the turn. */
  formatInterrupt: () =>
    `${JSON.stringify({ type: 'control_request', request_id: `${INTERRUPT_REQUEST_PREFIX}${randomBytes(6).toString('hex')}`, request: { subtype: 'interrupt' } })}\n`,

  parseLine(line: string, stream: AgentStream): AgentEvent[] {
    const json = jsonLine(line, stream);
    if ('events' in json) return json.events;
    const parsed = json.object;
    switch (parsed['type']) {
      case 'assistant':
        return isObject(parsed['message']) ? assistantEvents(parsed['message']) : [unparsedLine(line, stream, 'assistant without message')];
      case 'user':
        return isObject(parsed['message']) ? userEvents(parsed['message']) : [unparsedLine(line, stream, 'user without message')];
      case 'result':
        return resultEvents(parsed);
      case 'system':
        return [systemEvent(parsed)];
      case 'control_request':
        return [controlRequestEvent(parsed)];
      case 'control_cancel_request':
        return [{ type: 'system', data: controlWithdrawnData(text(parsed['request_id']) ?? 'unknown') }];
      case 'control_response': {
        const response = isObject(parsed['response']) ? parsed['response'] : {};
        return [
          {
            type: 'system',
            data: {
              level: 'debug',
              message: `agent answered control request ${String(response['request_id'])} (${String(response['subtype'])})`,
              subtype: SYSTEM_SUBTYPES.agentControlResponse,
            },
          },
        ];
      }
      case 'stream_event':
        // Partial deltas (only with --include-partial-messages): the whole blocks follow as `assistant` lines.
        return [];
      default:
        return [unparsedLine(line, stream, `unknown type ${JSON.stringify(parsed['type'])}`)];
    }
  },

  formatDecision(decision, request): string {
    const response =
      decision.decision === 'allow'
        ? // 2.1.197 rejects an allow without updatedInput; it replaces the input, so echo it when unchanged.
          { behavior: 'allow', updatedInput: decision.updated_input ?? request.input }
        : { behavior: 'deny', message: decision.message?.trim() ? decision.message : DEFAULT_DENY_MESSAGE, ...(decision.interrupt ? { interrupt: true } : {}) };
    return `${JSON.stringify({ type: 'control_response', response: { subtype: 'success', request_id: decision.request_id, response } })}\n`;
  },
};
