import { execFile } from 'node:child_process';
import { SYSTEM_SUBTYPES, type EventData } from '@svc/protocol';
import {
  createCodexSession,
  INITIALIZE_ID,
  interruptLine,
  messageLine,
  messageStartsTurn,
  parseCodexLine,
  rpcLine,
  THREAD_START_ID,
} from './codex-messages.js';
import { rolloutHoldsMessage } from './codex-rollout.js';
import { codexProviderArgs } from './codex-provider.js';
import { codexSettingsFor, type CodexSettings } from './codex-settings.js';
import type { Adapter, AgentEvent, AgentLaunch, AgentStream, LaunchPlan } from './adapter.js';

/** A worker with no permission lists: everything is asked (or, autonomous, allowed). */
const NO_LISTS = { auto_approve: [], deny: [], ask: [] };

/**
 * svc's decision in Codex's words: allow → `accept` ("always" → `acceptForSession`, so Codex asks
 * no more for the same thing this session, beside the svc rule); deny → `decline` (the model
 * sees the rejection and the turn goes on), or `cancel` with `interrupt` (the turn ends).
 */
function codexDecision(decision: EventData<'control_response'>): 'accept' | 'acceptForSession' | 'decline' | 'cancel' {
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
 * `turn/completed` is the `result`, after which stdin closes and app-server exits (in a
 * conversation it stays: a person's message is `turn/start`, or `turn/steer` into a running turn,
 * and an interrupt `turn/interrupt`). What each message becomes is `codex-messages.ts`'s table;
 * which calls got their events, `codex-tool-calls.ts`.
 */
export function createCodexAppServerAdapter(): Adapter {
  const session = createCodexSession();
  let settings: CodexSettings | undefined;

  return {
    name: 'codex',
    endsAfterResult: true,
    takeOutgoing: () => session.outgoing.splice(0),

    preflight: (launch, spawn) => probeCodexSandbox(launch, settings ?? codexSettingsFor(launch.permissions ?? NO_LISTS, launch.autonomous), spawn),

    launch(launch: AgentLaunch): LaunchPlan {
      session.prompt = launch.prompt;
      if (launch.resume !== undefined) session.threadId = launch.resume;
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
          // A resumed run takes up its thread again from the rollout Codex keeps in the sandbox's home.
          launch.resume === undefined
            ? JSON.stringify({ method: 'thread/start', id: THREAD_START_ID, params: { approvalPolicy: settings.approvalPolicy, sandbox: settings.sandbox } })
            : JSON.stringify({
                method: 'thread/resume',
                id: THREAD_START_ID,
                params: { threadId: launch.resume, approvalPolicy: settings.approvalPolicy, sandbox: settings.sandbox, excludeTurns: true },
              }),
        ],
      };
    },

    parseLine: (line: string, stream: AgentStream): AgentEvent[] => parseCodexLine(line, stream, session),

    /** A message is `turn/start` when no turn runs, else steered into the running (or starting) one. */
    turns: { messageStartsTurn: () => messageStartsTurn(session) },
    resumes: true,
    formatMessage: (message) => messageLine(session, message),
    tookMessage: (messageId, place) => rolloutHoldsMessage(place, messageId),
    takesImages: true,
    formatInterrupt: () => interruptLine(session),

    formatDecision(decision: EventData<'control_response'>, request: EventData<'control_request'>): string {
      if (decision.decision === 'deny' && request.tool_use_id) {
        const by = `${decision.interrupt ? 'cancelled' : 'declined'} by ${decision.decided_by}${decision.message ? `: ${decision.message}` : ''}`;
        session.calls.refuse(request.tool_use_id, request, by);
      }
      const id = session.rpcIds.get(request.request_id);
      session.rpcIds.delete(request.request_id);
      // After a sidecar restart the map is empty: the id is the part after the thread's.
      const fallback = request.request_id.slice(request.request_id.lastIndexOf(':') + 1);
      return rpcLine({ id: id ?? (/^\d+$/.test(fallback) ? Number(fallback) : fallback), result: { decision: codexDecision(decision) } });
    },
  };
}
