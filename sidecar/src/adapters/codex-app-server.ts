import { execFile } from 'node:child_process';
import { SYSTEM_SUBTYPES, type EventData } from '@svc/protocol';
import { codexProviderArgs } from './codex-provider.js';
import { pathsOfPatch, readRolloutCalls, type RolloutCall } from './codex-rollout.js';
import { codexSettingsFor, type CodexSettings } from './codex-settings.js';
import { modelCommandOf } from './shell-command.js';
import {
  isObject,
  jsonLine,
  text,
  unparsedLine,
  type Adapter,
  type AgentEvent,
  type AgentLaunch,
  type AgentStream,
  type Json,
  type LaunchPlan,
} from './adapter.js';

const INITIALIZE_ID = 0;
const THREAD_START_ID = 1;
const TURN_START_ID = 2;
/** A worker with no permission lists: everything is asked (or, autonomous, allowed). */
const NO_LISTS = { auto_approve: [], deny: [], ask: [] };

const count = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.floor(value) : 0);
const message = (body: Json) => `${JSON.stringify(body)}\n`;

/** Notifications whose content arrives again whole (a completed item, a final status): nothing to add. */
const SUPERSEDED = new Set([
  'item/agentMessage/delta',
  'item/reasoning/summaryPartAdded',
  'item/reasoning/summaryTextDelta',
  'item/reasoning/textDelta',
  'item/commandExecution/outputDelta',
  'thread/status/changed',
  'account/rateLimits/updated',
  'remoteControl/status/changed',
  'serverRequest/resolved',
]);

/** Approval requests Codex sends, and the tool each stands for. */
const APPROVALS: Record<string, string> = {
  'item/commandExecution/requestApproval': 'command_execution',
  'item/fileChange/requestApproval': 'file_change',
};

function toolOf(item: Json): { name: string; input: Json } | undefined {
  switch (item['type']) {
    case 'commandExecution':
      return {
        name: 'command_execution',
        input: { command: modelCommandOf(text(item['command']) ?? ''), ...(text(item['cwd']) ? { cwd: text(item['cwd']) } : {}) },
      };
    case 'fileChange':
      return { name: 'file_change', input: { changes: Array.isArray(item['changes']) ? item['changes'] : [] } };
    case 'mcpToolCall':
      return {
        name: `mcp__${text(item['server']) ?? 'unknown'}__${text(item['tool']) ?? 'unknown'}`,
        input: isObject(item['arguments']) ? item['arguments'] : {},
      };
    default:
      return undefined;
  }
}

/** A call from Codex's rollout as svc's tool: `exec_command` is `command_execution`, `apply_patch` `file_change`. */
function toolOfCall(call: RolloutCall): { name: string; input: Json } {
  if (call.name === 'apply_patch') return { name: 'file_change', input: { changes: pathsOfPatch(call.input).map((path) => ({ path })) } };
  let args: unknown;
  try {
    args = JSON.parse(call.input);
  } catch {
    args = undefined;
  }
  if (call.name === 'exec_command' && isObject(args))
    return { name: 'command_execution', input: { command: text(args['cmd']) ?? '', ...(text(args['workdir']) ? { cwd: text(args['workdir']) } : {}) } };
  return { name: call.name, input: isObject(args) ? args : { input: call.input } };
}

/** Whether the output Codex gave the model reports success: an exit code of 0 (a call Codex made no item for rarely succeeded). */
function callFailed(output: string | undefined): boolean {
  const code = output === undefined ? undefined : /(?:Process exited with code|Exit code:) (-?\d+)/.exec(output);
  return code ? code[1] !== '0' : true;
}

function toolResultOf(item: Json): EventData<'tool_result'> {
  const id = text(item['id']) ?? 'unknown';
  const status = text(item['status']);
  const failed = status === 'failed' || status === 'declined';
  if (item['type'] === 'commandExecution') {
    const exitCode = item['exitCode'];
    return {
      tool_use_id: id,
      content: text(item['aggregatedOutput']) ?? (status === 'declined' ? 'declined' : ''),
      is_error: failed || (typeof exitCode === 'number' && exitCode !== 0),
    };
  }
  return { tool_use_id: id, content: JSON.stringify(item['result'] ?? item['changes'] ?? status ?? ''), is_error: failed };
}

/**
 * svc's decision in Codex's words: allow → `accept` ("always" → `acceptForSession`, so Codex asks
 * no more for the same thing this session, beside the svc rule); deny → `decline` (the model
 * sees the rejection and the turn goes on), or `cancel` with `interrupt` (the turn ends).
 */
export function codexDecision(decision: EventData<'control_response'>): 'accept' | 'acceptForSession' | 'decline' | 'cancel' {
  if (decision.decision === 'allow') return decision.scope === 'always' ? 'acceptForSession' : 'accept';
  return decision.interrupt ? 'cancel' : 'decline';
}

/**
 * Runs `codex sandbox -- true` as the agent would run: whether Codex's own sandbox works here
 * (inside bubblewrap it nests namespaces; a Pod may forbid them). When it does not, commands Codex
 * runs inside it fail, so a command only does anything after it asked to leave the sandbox.
 */
function probeCodexSandbox(launch: AgentLaunch, settings: CodexSettings, spawn: { cwd?: string | undefined; env: NodeJS.ProcessEnv }): Promise<AgentEvent[]> {
  return new Promise((resolve) => {
    execFile(
      launch.command,
      ['sandbox', '-c', `sandbox_mode="${settings.sandbox}"`, '--', 'true'],
      { cwd: spawn.cwd, env: spawn.env, timeout: 20_000 },
      (err, _stdout, stderr) => {
        const settingsEvent: AgentEvent = {
          type: 'system',
          data: {
            level: 'info',
            message: `Codex runs with its ${settings.sandbox} sandbox and approvals ${settings.approvalPolicy}: ${settings.reason}`,
            subtype: SYSTEM_SUBTYPES.codexSettings,
            details: { sandbox: settings.sandbox, approval_policy: settings.approvalPolicy },
          },
        };
        if (!err) return resolve([settingsEvent]);
        const why = stderr.trim().split('\n').at(-1) || err.message;
        resolve([
          settingsEvent,
          {
            type: 'system',
            data: {
              level: 'warn',
              message: `Codex's own sandbox does not work here (${why}): every command Codex runs inside it fails, so a command does something only after it asked to leave the sandbox; file changes and escalations still go to the permission engine`,
              subtype: SYSTEM_SUBTYPES.codexSandboxUnavailable,
              details: { error: why.slice(0, 1024) },
            },
          },
        ]);
      },
    );
  });
}

/**
 * Codex, interactive or autonomous: `codex app-server` (JSON-RPC over stdio, without the `jsonrpc`
 * member; ../shared/AGENTS.md). The sidecar sends `initialize`, `initialized` and `thread/start`
 * (approvals on request, the sandbox `codexSettingsFor` picks from the permission lists), and
 * `turn/start` with the prompt once the thread exists. Codex's approval requests become
 * `control_request`s (request id `<thread>:<json-rpc id>`, unique across restarts) that the
 * permission engine decides — at once when the worker is autonomous — and a decision is answered
 * on the request's own id. Items become `tool_use`/`tool_result`/`assistant`; calls Codex made no
 * item for are found in its rollout when the turn ends; token usage is `progress`;
 * `turn/completed` is the `result`, after which stdin closes and app-server exits.
 */
export function createCodexAppServerAdapter(): Adapter {
  let prompt: string | undefined;
  let threadId = 'thread';
  const outgoing: string[] = [];
  /** The JSON-RPC id of each open approval request, by our request id. */
  const rpcIds = new Map<string, unknown>();
  const started = new Set<string>();
  /** Items whose `tool_result` is out: each call gets exactly one. */
  const finished = new Set<string>();
  /** The changes of each file-change item, by item id: its approval request names only the item. */
  const changesOf = new Map<string, unknown[]>();
  /**
   * Requests answered decline or cancel, by item id, until Codex reports the item: a rejected
   * patch or escalation may leave no item at all, and the history must still show the attempt.
   */
  const refused = new Map<string, { request: EventData<'control_request'>; message: string }>();
  let turns = 0;
  let settings: CodexSettings | undefined;
  /** Codex's own record of the thread, and how far it has been read. */
  let rollout: { path: string; offset: number } | undefined;

  function response(parsed: Json, line: string): AgentEvent[] {
    if (isObject(parsed['error'])) {
      return [
        {
          type: 'system',
          data: {
            level: 'error',
            message: `Codex refused request ${String(parsed['id'])}: ${text(parsed['error']['message']) ?? line}`,
            subtype: SYSTEM_SUBTYPES.agentError,
          },
        },
      ];
    }
    const result = isObject(parsed['result']) ? parsed['result'] : {};
    if (parsed['id'] === THREAD_START_ID) {
      const thread = isObject(result['thread']) ? result['thread'] : {};
      threadId = text(thread['id']) ?? threadId;
      if (text(thread['path'])) rollout = { path: text(thread['path'])!, offset: 0 };
      if (prompt !== undefined) {
        outgoing.push(message({ method: 'turn/start', id: TURN_START_ID, params: { threadId, input: [{ type: 'text', text: prompt, text_elements: [] }] } }));
      }
      return [
        {
          type: 'system',
          data: {
            level: 'info',
            message: `Codex started (model ${text(result['model']) ?? 'unknown'})`,
            subtype: SYSTEM_SUBTYPES.init,
            details: {
              thread_id: threadId,
              model: text(result['model']) ?? null,
              approval_policy: text(result['approvalPolicy']) ?? null,
              sandbox: isObject(result['sandbox']) ? (text(result['sandbox']['type']) ?? null) : null,
            },
          },
        },
      ];
    }
    return [];
  }

  function item(kind: 'item/started' | 'item/completed', value: Json, line: string): AgentEvent[] {
    const id = text(value['id']) ?? 'unknown';
    if (value['type'] === 'fileChange' && Array.isArray(value['changes'])) changesOf.set(id, value['changes']);
    switch (value['type']) {
      case 'userMessage':
        return [];
      case 'agentMessage':
        return kind === 'item/completed' ? [{ type: 'assistant', data: { text: text(value['text']) ?? '', kind: 'text' } }] : [];
      case 'reasoning': {
        if (kind !== 'item/completed') return [];
        const summary = Array.isArray(value['summary']) ? value['summary'].filter((part): part is string => typeof part === 'string').join('\n') : '';
        return summary ? [{ type: 'assistant', data: { text: summary, kind: 'thinking' } }] : [];
      }
    }
    const tool = toolOf(value);
    if (!tool)
      return [
        {
          type: 'system',
          data: { level: 'debug', message: `codex item ${String(value['type'])}`, subtype: SYSTEM_SUBTYPES.codexItem, details: { line: line.slice(0, 4096) } },
        },
      ];
    const events: AgentEvent[] = [];
    if (!started.has(id)) {
      started.add(id);
      events.push({ type: 'tool_use', data: { tool_use_id: id, name: tool.name, input: tool.input } });
    }
    if (kind === 'item/completed' && !finished.has(id)) {
      refused.delete(id);
      finished.add(id);
      events.push({ type: 'tool_result', data: toolResultOf(value) });
    }
    return events;
  }

  /** The refused attempts Codex reported no item for: a `tool_use` and an error `tool_result` each. */
  function unreportedRefusals(): AgentEvent[] {
    const events: AgentEvent[] = [];
    for (const [id, { request, message: reason }] of refused) {
      if (!started.has(id)) {
        started.add(id);
        events.push({ type: 'tool_use', data: { tool_use_id: id, name: request.tool_name, input: request.input } });
      }
      if (!finished.has(id)) events.push({ type: 'tool_result', data: { tool_use_id: id, content: reason, is_error: true } });
      finished.add(id);
    }
    refused.clear();
    return events;
  }

  /**
   * The calls of the turn Codex recorded in its rollout but reported no item, or no completed
   * item, for (a command its sandbox refused, a patch that failed to apply): a `tool_use` where
   * none was sent, and a `tool_result` with the output the model was given.
   */
  function unreportedCalls(): AgentEvent[] {
    if (!rollout) return [];
    const read = readRolloutCalls(rollout.path, rollout.offset);
    rollout.offset = read.offset;
    const events: AgentEvent[] = [];
    for (const call of read.calls) {
      if (finished.has(call.callId)) continue;
      finished.add(call.callId);
      if (!started.has(call.callId)) {
        started.add(call.callId);
        const tool = toolOfCall(call);
        events.push({ type: 'tool_use', data: { tool_use_id: call.callId, name: tool.name, input: tool.input } });
      }
      events.push({
        type: 'tool_result',
        data: { tool_use_id: call.callId, content: call.output ?? 'Codex recorded no output for this call', is_error: callFailed(call.output) },
      });
    }
    return events;
  }

  return {
    name: 'codex',
    endsAfterResult: true,
    takeOutgoing: () => outgoing.splice(0),

    preflight: (launch, spawn) => probeCodexSandbox(launch, settings ?? codexSettingsFor(launch.permissions ?? NO_LISTS, launch.autonomous), spawn),

    launch(launch: AgentLaunch): LaunchPlan {
      prompt = launch.prompt;
      settings = codexSettingsFor(launch.permissions ?? NO_LISTS, launch.autonomous);
      return {
        command: launch.command,
        args: [...codexProviderArgs(launch), 'app-server', ...launch.args],
        stdinLines: [
          JSON.stringify({
            method: 'initialize',
            id: INITIALIZE_ID,
            params: { clientInfo: { name: 'svc-sidecar', title: 'svc', version: '0.1.0' }, capabilities: { experimentalApi: false } },
          }),
          JSON.stringify({ method: 'initialized' }),
          JSON.stringify({ method: 'thread/start', id: THREAD_START_ID, params: { approvalPolicy: settings.approvalPolicy, sandbox: settings.sandbox } }),
        ],
      };
    },

    parseLine(line: string, stream: AgentStream): AgentEvent[] {
      const json = jsonLine(line, stream);
      if ('events' in json) return json.events;
      const parsed = json.object;
      const method = text(parsed['method']);
      if (method === undefined)
        return 'id' in parsed ? response(parsed, line) : [unparsedLine(line, stream, 'neither a request, a notification nor a response')];
      const params = isObject(parsed['params']) ? parsed['params'] : {};
      const approvalTool = APPROVALS[method];
      if (approvalTool && 'id' in parsed) {
        const requestId = `${threadId}:${String(parsed['id'])}`;
        rpcIds.set(requestId, parsed['id']);
        // A file change's request names its item; the item (announced just before) has the paths
        // the permission engine matches `file_change(<path>)` against.
        const changes = changesOf.get(text(params['itemId']) ?? '') ?? (Array.isArray(params['changes']) ? params['changes'] : undefined);
        const input: Json =
          approvalTool === 'command_execution'
            ? { command: modelCommandOf(text(params['command']) ?? ''), ...(text(params['cwd']) ? { cwd: text(params['cwd']) } : {}) }
            : { ...(changes ? { changes } : {}), ...(text(params['grantRoot']) ? { grant_root: text(params['grantRoot']) } : {}) };
        return [
          {
            type: 'control_request',
            data: {
              request_id: requestId,
              tool_name: approvalTool,
              input,
              ...(text(params['itemId']) ? { tool_use_id: text(params['itemId']) } : {}),
              ...(text(params['reason']) ? { description: text(params['reason']) } : {}),
            },
          },
        ];
      }
      if (SUPERSEDED.has(method)) return [];
      switch (method) {
        case 'thread/started':
        case 'turn/started':
          return [{ type: 'system', data: { level: 'debug', message: method, subtype: method.replace('/', '_') } }];
        case 'item/started':
        case 'item/completed':
          return isObject(params['item']) ? item(method, params['item'], line) : [unparsedLine(line, stream, 'item without item')];
        case 'thread/tokenUsage/updated': {
          const usage = isObject(params['tokenUsage']) && isObject(params['tokenUsage']['total']) ? params['tokenUsage']['total'] : {};
          // Codex reports no price: tokens only.
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
        case 'turn/completed': {
          turns++;
          const turn = isObject(params['turn']) ? params['turn'] : {};
          const status = text(turn['status']) ?? 'completed';
          const error = isObject(turn['error']) ? text(turn['error']['message']) : undefined;
          const summary = error ?? (status === 'interrupted' ? 'the turn was cancelled: a denial ended it' : undefined);
          return [
            ...unreportedRefusals(),
            ...unreportedCalls(),
            {
              type: 'result',
              data: {
                subtype: status === 'completed' ? 'success' : status,
                is_error: status === 'failed',
                num_turns: turns,
                ...(summary ? { text: summary } : {}),
              },
            },
          ];
        }
        case 'error': {
          // A stream failure Codex will retry is a warning; one it gives up on, an error.
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
        default:
          // A request we do not know would leave Codex waiting: say so loudly.
          if ('id' in parsed)
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
          return [{ type: 'system', data: { level: 'debug', message: method, subtype: SYSTEM_SUBTYPES.codexNotification } }];
      }
    },

    formatDecision(decision: EventData<'control_response'>, request: EventData<'control_request'>): string {
      if (decision.decision === 'deny' && request.tool_use_id) {
        refused.set(request.tool_use_id, {
          request,
          message: `${decision.interrupt ? 'cancelled' : 'declined'} by ${decision.decided_by}${decision.message ? `: ${decision.message}` : ''}`,
        });
      }
      const id = rpcIds.get(request.request_id);
      rpcIds.delete(request.request_id);
      // After a sidecar restart the map is empty: the id is the part after the thread's.
      const fallback = request.request_id.slice(request.request_id.lastIndexOf(':') + 1);
      return message({ id: id ?? (/^\d+$/.test(fallback) ? Number(fallback) : fallback), result: { decision: codexDecision(decision) } });
    },
  };
}
