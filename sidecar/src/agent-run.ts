import { LIFECYCLE_SUBTYPES, SYSTEM_SUBTYPES, type PermissionRule, type StoredEvent, type WorkerActivity } from '@svc/protocol';
import { createActivity, type Activity } from './activity.js';
import type { Adapter, AgentEvent, LaunchPlan } from './adapters/adapter.js';
import { startAgentProcess, type AgentExit } from './agent-process.js';
import { createEventRouting } from './event-routing.js';
import type { PermissionEngine } from '@svc/protocol';

/** After a result, how long a queued turn has to show before the agent is taken to have absorbed it. */
const QUEUED_TURN_WAIT_MS = 3000;

export interface AgentRunOptions {
  adapter: Adapter;
  plan: LaunchPlan;
  cwd?: string | undefined;
  env: NodeJS.ProcessEnv;
  pgidFile: string;
  /** A conversation: the agent's input stays open after a turn. */
  conversation: boolean;
  /** Turns the agent starts with: 1 with a prompt, 0 when it waits for a message (a resumed run). */
  turnsAhead: number;
  /** In a conversation, stop the agent after this long idle (its stdin closed, then SIGTERM after `killGraceMs`)... */
  idleTimeoutMs?: number | undefined;
  /** ...when a message can start it again then (its conversation's id is known). */
  canResume(): boolean;
  killGraceMs: number;
  engine: Pick<PermissionEngine, 'decide'>;
  /** Where every event goes (the outbox). */
  record(event: AgentEvent): void;
  onRuleAdded(rule: PermissionRule): void;
  /** Each activity reported. */
  onActivity?(activity: WorkerActivity): void;
  /** Each of the agent's own events (the runner learns its conversation's id from `init`). */
  onAgentEvent?(event: AgentEvent): void;
  /** Called when the agent's output has to wait (the outbox is full); resolves when it may go on. */
  outboxRoom(): Promise<void> | undefined;
  warn(message: string): void;
}

/** How one run of the agent ended. */
export interface AgentRunEnd {
  exit: AgentExit;
  /** The sidecar stopped it after its idle timeout. */
  idleStopped: boolean;
  /** Its one turn done and its input closed, it did not exit by itself, and was terminated (some ACP agents never exit on EOF). */
  stoppedAfterResult: boolean;
  /** Its last turn's `result` was an error. */
  lastTurnFailed: boolean;
  /** The agent began its conversation in this run (its `init`): a run that never did has nothing to resume. */
  began: boolean;
}

export interface AgentRun {
  pid: number | undefined;
  /** Hands a decision, message or interrupt to the agent; false when the agent is stopping or has exited (it reached nothing). */
  input(event: StoredEvent): boolean;
  activity: Pick<Activity, 'started' | 'stopped' | 'current'>;
  ended: Promise<AgentRunEnd>;
  terminate(graceMs: number): void;
}

/**
 * One run of the agent's process (a conversation may have several: stopped when idle, started
 * again by a message, docs/conversations.md): its lines through the adapter and the routing, its
 * activity reported, and its idle timeout.
 */
export function startAgentRun(options: AgentRunOptions): AgentRun {
  const { adapter, plan } = options;
  const agent = startAgentProcess({ command: plan.command, args: plan.args, cwd: options.cwd, env: options.env, pgidFile: options.pgidFile });
  const endsAfterResult = adapter.endsAfterResult && !options.conversation;
  let idleTimer: NodeJS.Timeout | undefined;
  let killTimer: NodeJS.Timeout | undefined;
  let idleStopped = false;
  let stoppedAfterResult = false;
  let lastTurnFailed = false;
  let alive = true;
  let began = false;
  const activity = createActivity({
    record: options.record,
    hasTurns: adapter.turns !== undefined,
    turnsAhead: options.turnsAhead,
    endsAfterResult,
    queuedTurnWaitMs: adapter.turns?.mayAbsorbQueued ? QUEUED_TURN_WAIT_MS : undefined,
    onChange(now) {
      options.onActivity?.(now);
      clearTimeout(idleTimer);
      if (now !== 'idle' || options.idleTimeoutMs === undefined || idleStopped) return;
      idleTimer = setTimeout(() => {
        if (!options.canResume()) return;
        idleStopped = true;
        // A clean stop: an agent whose stdin closes ends its session and exits; one that does not is terminated.
        routing.closeAgentInput();
        killTimer = setTimeout(() => agent.terminate(options.killGraceMs), options.killGraceMs);
      }, options.idleTimeoutMs);
    },
  });
  const routing = createEventRouting({
    adapter,
    endsAfterResult,
    engine: options.engine,
    activity,
    record: options.record,
    toAgent: (bytes) => agent.write(bytes),
    closeAgentInput: () => agent.closeStdin(),
    signalAgent: (signal) => agent.signal(signal),
    onRuleAdded: options.onRuleAdded,
  });
  for (const line of plan.stdinLines) agent.write(`${line}\n`);
  if (plan.closeStdin) routing.closeAgentInput();

  const fromAgent = (event: AgentEvent) => {
    if (event.type === 'system' && event.data.subtype === SYSTEM_SUBTYPES.init) began = true;
    options.onAgentEvent?.(event);
    routing.fromAgent(event);
    if (event.type === 'result') lastTurnFailed = event.data.is_error;
    // Its input closed after its one turn: an agent still up after the grace is stopped.
    if (event.type === 'result' && endsAfterResult && killTimer === undefined)
      killTimer = setTimeout(() => {
        stoppedAfterResult = true;
        agent.terminate(options.killGraceMs);
      }, options.killGraceMs);
  };
  adapter.connect?.({ write: (bytes) => agent.write(bytes), emit: fromAgent, exited: agent.exited, env: options.env });
  const readers = agent.readLines((line, stream) => {
    // The agent's diagnostics also go to the sidecar's own output: the sandbox's logs.
    if (stream === 'stderr') options.warn(`agent stderr: ${line}`);
    for (const event of adapter.parseLine(line, stream)) fromAgent(event);
    for (const reply of adapter.takeOutgoing?.() ?? []) agent.write(reply);
    // A full disk buffer stops the reading: the agent waits on its pipe, nothing is lost.
    const room = options.outboxRoom();
    if (room) {
      for (const reader of readers) reader.pause();
      void room.then(() => readers.forEach((reader) => reader.resume()));
    }
  });

  const ended = agent.exited.then((exit) => {
    alive = false;
    clearTimeout(idleTimer);
    clearTimeout(killTimer);
    routing.withdrawAll(`the agent ${idleStopped ? 'was stopped' : 'exited'}`);
    return { exit, idleStopped, stoppedAfterResult, lastTurnFailed, began };
  });

  return {
    pid: agent.pid,
    input(event) {
      // Stopping when idle: what comes now waits for the next run.
      if (!alive || idleStopped) return false;
      routing.fromControlChannel(event);
      return true;
    },
    activity,
    ended,
    terminate: (graceMs) => agent.terminate(graceMs),
  };
}

/**
 * The lifecycle event that closes a run: the agent's code or signal, or why it never started;
 * `resumable` when a message starts it again; `stoppedAfterResult` when the sidecar ended it
 * after its one turn (its code then counts as 0).
 */
export function agentExitEvent(exit: AgentExit, resumable?: { reason: string }, stoppedAfterResult = false): AgentEvent {
  if (exit.startError !== undefined)
    return {
      type: 'system',
      data: { level: 'error', message: `the agent could not start: ${exit.startError}`, subtype: LIFECYCLE_SUBTYPES.agentExit, details: { code: 127 } },
    };
  const how = exit.signal ? `signal ${exit.signal}` : `code ${exit.code}`;
  if (stoppedAfterResult)
    return {
      type: 'system',
      data: {
        level: 'info',
        message: `agent stopped with ${how} after its turn: its input closed, it did not exit by itself`,
        subtype: LIFECYCLE_SUBTYPES.agentExit,
        details: { code: exit.code, signal: exit.signal, stopped_after_result: true },
      },
    };
  return {
    type: 'system',
    data: {
      level: exit.exitCode === 0 || resumable ? 'info' : 'warn',
      message: resumable ? `agent exited with ${how} (${resumable.reason}); a message resumes its conversation` : `agent exited with ${how}`,
      subtype: LIFECYCLE_SUBTYPES.agentExit,
      details: { code: exit.code, signal: exit.signal, ...(resumable ? { resumable: true, reason: resumable.reason } : {}) },
    },
  };
}
