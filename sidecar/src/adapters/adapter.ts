import { SYSTEM_SUBTYPES, type EventData, type EventType, type MessageImageType, type ModelApi } from '@svc/protocol';
import type { PermissionLists } from '@svc/protocol';

/** An event as an adapter makes it; the sidecar adds `uid` (`<boot-id>:<n>`) and `ts` when it sends it. */
export type AgentEvent = { [K in EventType]: { type: K; data: EventData<K> } }[EventType];

/** An image of a person's message as an agent is given it: its kind and its bytes, base64. */
export interface ImageForAgent {
  media_type: MessageImageType;
  data: string;
}

/** A person's message as an adapter formats it. */
export interface MessageForAgent {
  text: string;
  /** Its `message_id`. */
  id?: string;
  images?: readonly ImageForAgent[];
}

/** Which of the agent's streams a line came from. */
export type AgentStream = 'stdout' | 'stderr';

/** What the sidecar knows when it starts the agent. */
export interface AgentLaunch {
  /** The agent's executable, e.g. `claude`. */
  command: string;
  /** Extra arguments from the config, after the adapter's own. */
  args: readonly string[];
  /** The first user message. */
  prompt?: string | undefined;
  /** Autonomous: nobody is asked (the permission engine allows what is not denied). */
  autonomous: boolean;
  /** The worker's permission lists (an adapter may set the agent's own guard rails from them). */
  permissions?: PermissionLists | undefined;
  /** The agent's own conversation to continue (its `init` event's session or thread id): a resumed run, with no prompt. */
  resume?: string | undefined;
  /** The agent's working directory (its workspace): absolute. */
  cwd?: string | undefined;
  /** The sidecar's model proxy, per API: the base URL the agent must use (it holds no key of its own). */
  modelBaseUrls?: Partial<Record<ModelApi, string>> | undefined;
}

/** How to start the agent: its argv, and the lines to write to its stdin first. */
export interface LaunchPlan {
  command: string;
  args: string[];
  stdinLines: string[];
  /** Close the agent's stdin once `stdinLines` are written (an agent that reads its prompt from there otherwise). */
  closeStdin?: boolean;
}

/**
 * The spec's three operations for one kind of agent. `parseLine` never throws and never drops:
 * a line it cannot make sense of becomes a `system` event with level `warn` and the raw line.
 */
export interface Adapter {
  readonly name: string;
  /**
   * One prompt, one run: after the turn's `result` the sidecar closes the agent's stdin, which
   * ends a CLI that would otherwise wait for more input — unless the session is a conversation
   * (the sidecar config's `conversation`), where the agent waits for a person's next message.
   */
  readonly endsAfterResult: boolean;
  launch(launch: AgentLaunch): LaunchPlan;
  parseLine(line: string, stream: AgentStream): AgentEvent[];
  /** A decision on a request → the bytes to write to the agent's stdin (one line, newline included). */
  formatDecision(decision: EventData<'control_response'>, request: EventData<'control_request'>): string;
  /**
   * A person's message → the bytes to write to the agent's stdin (empty: the adapter holds it and
   * sends it through `takeOutgoing` when the agent can take it); absent when this agent takes no
   * messages from svc yet (the sidecar then says so in the history).
   */
  formatMessage?(message: MessageForAgent): string;
  /** The agent is given a message's images with it (else the history says they were not). */
  readonly takesImages?: boolean;
  /**
   * Whether the agent's own record of its conversation shows the message taken (a sidecar started
   * again after a crash asks, for the messages it handed over last: one not taken is handed over
   * again). Absent: the agent keeps no record the sidecar can read (at most once). A record that
   * cannot be read says taken: nothing is handed over twice.
   */
  tookMessage?(messageId: string, where: ConversationPlace): boolean;
  /** Before a message not taken is handed over again: what the record holds of it is cut, so the agent holds it once. */
  forgetUnansweredMessage?(messageId: string, where: ConversationPlace): void;
  /** A person's interrupt → the bytes that end the agent's current turn (its open requests withdrawn as it answers); empty when no turn runs. */
  formatInterrupt?(): string;
  /** An agent with no protocol of its own is interrupted with SIGINT to its process group. */
  readonly interruptsBySignal?: boolean;
  /**
   * An agent whose turns end with a `result` (its activity is reported, docs/conversations.md):
   * whether a person's message sent now starts a turn of its own (Claude Code queues it behind the
   * running turn: always) or joins the running one (Codex steers it in). Absent for an agent
   * without turns (generic: no activity is reported).
   */
  readonly turns?: {
    messageStartsTurn(): boolean;
    /** A queued message may be taken into the running turn after all (Claude Code's "queued command"): no turn of its own follows. */
    mayAbsorbQueued?: boolean;
  };
  /** `launch` honours `resume`: the agent can be started again on its own conversation. */
  readonly resumes?: boolean;
  /**
   * For a protocol with a handshake: what the agent's last lines call for on its stdin (e.g.
   * Codex app-server's `turn/start` once the thread exists), taken after each `parseLine`.
   */
  takeOutgoing?(): string[];
  /**
   * For an agent whose protocol a library speaks for the adapter (ACP): called once the agent
   * runs, with where the adapter's bytes for it and its events go. What it emits is routed as
   * `parseLine`'s events are; `parseLine` then feeds the library and may return nothing.
   */
  connect?(agent: AgentConnection): void;
  /**
   * Checks, before the agent starts, what the adapter depends on in this environment (with the
   * agent's own cwd and environment); what it finds becomes events of the run.
   */
  preflight?(launch: AgentLaunch, spawn: { cwd?: string | undefined; env: NodeJS.ProcessEnv }): Promise<AgentEvent[]>;
}

/** What a `connect`ed adapter is given: the agent's stdin, and where its events go. */
export interface AgentConnection {
  write(bytes: string): void;
  emit(event: AgentEvent): void;
  /** Settles when the agent's process has exited (the library's connection closes then). */
  exited: Promise<unknown>;
  /** The agent's environment (what the client runs on its behalf runs with it). */
  env: NodeJS.ProcessEnv;
}

/** Where an agent keeps its record of a conversation: its home, its working directory, the conversation's id. */
export interface ConversationPlace {
  home: string;
  cwd: string;
  conversationId: string;
  /** The agent's environment (Codex keeps its rollouts under `CODEX_HOME`). */
  env?: Readonly<Record<string, string | undefined>>;
}

/** A raw line nobody could parse, kept whole for the viewers. */
export function unparsedLine(line: string, stream: AgentStream, why: string): AgentEvent {
  return { type: 'system', data: { level: 'warn', message: line, stream, subtype: SYSTEM_SUBTYPES.unparsedLine, details: { reason: why } } };
}

export type Json = Record<string, unknown>;
export const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
export const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

/**
 * The first step of a JSON-lines agent's `parseLine`: its object, or the events of a line that is
 * none — stderr (kept, level `warn`), a blank line (nothing), a line that is not a JSON object.
 */
export function jsonLine(line: string, stream: AgentStream): { object: Json } | { events: AgentEvent[] } {
  if (stream === 'stderr') return { events: [{ type: 'system', data: { level: 'warn', message: line, stream } }] };
  if (line.trim() === '') return { events: [] };
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    return { events: [unparsedLine(line, stream, 'not JSON')] };
  }
  return isObject(parsed) ? { object: parsed } : { events: [unparsedLine(line, stream, 'not a JSON object')] };
}
