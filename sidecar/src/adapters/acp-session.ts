import {
  client,
  PROTOCOL_VERSION,
  type AgentCapabilities,
  type AnyMessage,
  type ClientConnection,
  type ContentBlock,
  type PromptResponse,
  type StopReason,
  type ToolCallUpdate,
} from '@agentclientprotocol/sdk';
import { SYSTEM_SUBTYPES } from '@svc/protocol';
import type { AgentConnection, AgentEvent, AgentLaunch } from './adapter.js';
import { createAcpFiles } from './acp-files.js';
import { createAcpTerminals } from './acp-terminals.js';
import type { createAcpPermissions } from './acp-permissions.js';
import type { AcpToolCalls, createAcpUpdates } from './acp-updates.js';

const errorText = (err: unknown) => (err instanceof Error ? err.message : typeof err === 'object' && err !== null ? JSON.stringify(err) : String(err));
const count = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.floor(value) : 0);

/** The `result` of a prompt turn, by its stop reason (or the error that ended it). */
function resultOf(stop: StopReason | { error: string }, turns: number, startedAt: number): AgentEvent {
  const common = { num_turns: turns, duration_ms: Date.now() - startedAt };
  if (typeof stop !== 'string') return { type: 'result', data: { subtype: 'error', is_error: true, text: stop.error.slice(0, 65_536), ...common } };
  if (stop === 'end_turn') return { type: 'result', data: { subtype: 'success', is_error: false, ...common } };
  if (stop === 'cancelled')
    return {
      type: 'result',
      data: { subtype: 'cancelled', is_error: false, text: "the turn was cancelled: a denial or a person's interrupt ended it", ...common },
    };
  return { type: 'result', data: { subtype: stop, is_error: stop === 'refusal', ...common } };
}

/**
 * The tokens a prompt's answer says its turn used, where the agent says: the protocol's draft
 * `usage` (Claude's ACP build, OpenCode), or Gemini CLI's `_meta.quota.token_count`.
 */
function reportedTokens(response: PromptResponse): { input: number; output: number } | undefined {
  const usage = (response as { usage?: unknown }).usage;
  if (typeof usage === 'object' && usage !== null) {
    const figures = usage as Record<string, unknown>;
    return {
      input: count(figures['inputTokens']) + count(figures['cachedReadTokens']) + count(figures['cachedWriteTokens']),
      output: count(figures['outputTokens']),
    };
  }
  const quota = response._meta?.['quota'];
  const tokens = typeof quota === 'object' && quota !== null ? (quota as { token_count?: Record<string, unknown> }).token_count : undefined;
  return tokens ? { input: count(tokens['input_tokens']), output: count(tokens['output_tokens']) } : undefined;
}

export interface AcpSessionParts {
  emit(event: AgentEvent): void;
  calls: AcpToolCalls;
  updates: ReturnType<typeof createAcpUpdates>;
  permissions: ReturnType<typeof createAcpPermissions>;
  /** The workspace's root (the agent's working directory). */
  cwd(): string;
}

/**
 * One ACP session over the agent's stdio, with the protocol's library as the client: the
 * handshake (`initialize`, `session/new` or `session/load`), prompt turns one at a time (a message
 * sent during a turn waits for its end), their `result`s, and the client's side of the protocol
 * (`session/update`, `session/request_permission`, `fs/*`, `terminal/*`).
 */
export class AcpSession {
  private readonly queued: ContentBlock[][] = [];
  private connection: ClientConnection | undefined;
  private incoming: ReadableStreamDefaultController<AnyMessage> | undefined;
  private capabilities: AgentCapabilities = {};
  private sessionId: string | undefined;
  private turnRunning = false;
  private turns = 0;
  /** What the agent said its turns used, summed (its `progress`). */
  private readonly used = { input: 0, output: 0 };
  /** Numbers the client's own asks (a write or a command on the agent's behalf): ids the agent cannot choose. */
  private clientAsks = 0;

  constructor(private readonly parts: AcpSessionParts) {}

  takesImages(): boolean {
    return this.capabilities.promptCapabilities?.image === true;
  }

  /** A prompt turn now, or after the one running (or after the handshake). */
  prompt(blocks: ContentBlock[]): void {
    if (this.turnRunning || !this.connection || this.sessionId === undefined) return void this.queued.push(blocks);
    this.turnRunning = true;
    const startedAt = Date.now();
    // After the updates the agent sent before its answer: their handlers run first.
    this.connection.agent.request('session/prompt', { sessionId: this.sessionId, prompt: blocks }).then(
      (response) => setImmediate(() => this.turnEnded(response.stopReason, startedAt, response)),
      (err: unknown) => setImmediate(() => this.turnEnded({ error: errorText(err) }, startedAt)),
    );
  }

  /** Opens the protocol over the agent's stdio and starts the session; its lines come in through `receive`. */
  connect(io: AgentConnection, launch: AgentLaunch, runTag: string): void {
    const { updates, permissions } = this.parts;
    const files = createAcpFiles({
      root: this.parts.cwd,
      ask: (file) => this.askFor({ toolCallId: `svc-${runTag}-${++this.clientAsks}`, kind: 'edit', title: `Write ${file}`, locations: [{ path: file }] }),
    });
    const terminals = createAcpTerminals({
      root: this.parts.cwd,
      env: () => io.env,
      allowed: permissions.takeAllowedCommand,
      ask: (command, cwd) => this.askFor({ toolCallId: `svc-${runTag}-${++this.clientAsks}`, kind: 'execute', title: command, rawInput: { command, cwd } }),
    });
    const readable = new ReadableStream<AnyMessage>({ start: (controller) => void (this.incoming = controller) });
    const writable = new WritableStream<AnyMessage>({ write: (message) => io.write(`${JSON.stringify(message)}\n`) });
    this.connection = client({ name: 'svc-sidecar' })
      .onNotification('session/update', ({ params }) => updates.update(params.update))
      .onRequest('session/request_permission', ({ params }) => {
        updates.flush();
        return permissions.ask(params);
      })
      .onRequest('fs/read_text_file', ({ params }) => files.read(params))
      .onRequest('fs/write_text_file', ({ params }) => files.write(params, permissions.allowedWrite))
      .onRequest('terminal/create', ({ params }) => terminals.create(params))
      .onRequest('terminal/output', ({ params }) => terminals.output(params))
      .onRequest('terminal/wait_for_exit', ({ params }) => terminals.waitForExit(params))
      .onRequest('terminal/kill', ({ params }) => terminals.kill(params))
      .onRequest('terminal/release', ({ params }) => terminals.release(params))
      .connect({ readable, writable });
    void io.exited.then(() => {
      terminals.closeAll();
      updates.flush();
      this.incoming?.close();
      this.connection?.close();
    });
    this.open(launch).catch((err: unknown) => {
      const why = `the ACP handshake failed: ${errorText(err)}`;
      this.parts.emit({ type: 'system', data: { level: 'error', message: why, subtype: SYSTEM_SUBTYPES.agentError } });
      this.parts.emit(resultOf({ error: why }, this.turns, Date.now()));
    });
  }

  /** One JSON-RPC message from the agent's stdout. */
  receive(message: AnyMessage): void {
    this.incoming?.enqueue(message);
  }

  /** `session/cancel` as bytes for the agent's stdin (empty when no turn runs), its open requests cancelled and withdrawn. */
  cancel(): string {
    if (!this.turnRunning || this.sessionId === undefined) return '';
    this.parts.permissions.cancelAll();
    return `${JSON.stringify({ jsonrpc: '2.0', method: 'session/cancel', params: { sessionId: this.sessionId } })}\n`;
  }

  /** What the client is asked to do on the agent's behalf, asked like the agent's own tool call: true when allowed. */
  private askFor(toolCall: ToolCallUpdate): Promise<boolean> {
    const options = [
      { optionId: 'allow', name: 'Allow', kind: 'allow_once' as const },
      { optionId: 'reject', name: 'Reject', kind: 'reject_once' as const },
    ];
    return this.parts.permissions
      .ask({ sessionId: this.sessionId ?? '', toolCall, options })
      .then(({ outcome }) => outcome.outcome === 'selected' && outcome.optionId === 'allow');
  }

  private async open(launch: AgentLaunch): Promise<void> {
    const agent = this.connection!.agent;
    const init = await agent.request('initialize', {
      protocolVersion: PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: true },
      clientInfo: { name: 'svc-sidecar', title: 'svc', version: '0.1.0' },
    });
    this.capabilities = init.agentCapabilities ?? {};
    const resumed = launch.resume !== undefined && this.capabilities.loadSession === true;
    if (resumed) {
      await agent.request('session/load', { sessionId: launch.resume!, cwd: this.parts.cwd(), mcpServers: [] });
      this.sessionId = launch.resume;
    } else {
      this.sessionId = (await agent.request('session/new', { cwd: this.parts.cwd(), mcpServers: [] })).sessionId;
      if (launch.resume !== undefined)
        this.parts.emit({
          type: 'system',
          data: { level: 'warn', message: 'the agent cannot load a session: a new conversation started', subtype: SYSTEM_SUBTYPES.agentError },
        });
    }
    const agentInfo = init.agentInfo ? { agent: { name: init.agentInfo.name, version: init.agentInfo.version } } : {};
    this.parts.emit({
      type: 'system',
      data: {
        level: 'info',
        message: `ACP session ${this.sessionId}${resumed ? ' loaded' : ''} with ${init.agentInfo?.name ?? 'the agent'} ${init.agentInfo?.version ?? ''}`.trim(),
        subtype: SYSTEM_SUBTYPES.init,
        details: {
          session_id: this.sessionId,
          protocol_version: init.protocolVersion,
          load_session: this.capabilities.loadSession === true,
          ...agentInfo,
          ...(resumed ? { resumed } : {}),
        },
      },
    });
    if (launch.prompt !== undefined) this.queued.unshift([{ type: 'text', text: launch.prompt }]);
    const next = this.queued.shift();
    if (next) this.prompt(next);
  }

  private turnEnded(stop: StopReason | { error: string }, startedAt: number, response?: PromptResponse): void {
    const { emit, calls, updates, permissions } = this.parts;
    updates.flush();
    if (stop === 'cancelled') calls.abandon('the turn was cancelled before this call ended').forEach(emit);
    this.turnRunning = false;
    permissions.turnEnded();
    const tokens = response && reportedTokens(response);
    if (tokens) {
      this.used.input += tokens.input;
      this.used.output += tokens.output;
      emit({ type: 'progress', data: { input_tokens: this.used.input, output_tokens: this.used.output, cost_usd: 0, measured_by: 'agent' } });
    }
    emit(resultOf(stop, ++this.turns, startedAt));
    const next = this.queued.shift();
    if (next) this.prompt(next);
  }
}
