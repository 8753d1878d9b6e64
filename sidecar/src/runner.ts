import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import {
  activityData,
  apiPaths,
  isChangesRequest,
  isPersonInterrupt,
  isPersonMessage,
  isTerminalRequest,
  LIFECYCLE_SUBTYPES,
  personMessageId,
  terminalRequestOf,
  type ListResponseOf,
  type PermissionRule,
  type StoredEvent,
} from '@svc/protocol';
import type { Adapter, AgentEvent, AgentLaunch, LaunchPlan } from './adapters/adapter.js';
import { agentConversation } from './agent-conversation.js';
import { handedMessages, type HandedMessages } from './handed-messages.js';
import { killLeftoverAgent } from './agent-process.js';
import { agentExitEvent, startAgentRun, type AgentRun, type AgentRunEnd } from './agent-run.js';
import { undeliveredEvent } from './event-routing.js';
import { claudeCodeAdapter } from './adapters/claude-code.js';
import { createAcpAdapter } from './adapters/acp.js';
import { createCodexAppServerAdapter } from './adapters/codex-app-server.js';
import { genericAdapter } from './adapters/generic.js';
import type { LoadedSidecarConfig } from './config.js';
import { fetchMessageImages } from './message-images.js';
import { createControlChannelPoller } from './control-channel-poller.js';
import { createControlPlaneClient, type ControlPlaneClient } from './http-client.js';
import { createOutbox } from './outbox.js';
import { markFinished, markStarted } from './state-marks.js';
import { startEgressProxy } from './egress-proxy.js';
import { startGitProxy } from './git-proxy.js';
import { openTerminal } from './terminal.js';
import { createChangesReporter, type ChangesReporter } from './workspace-changes.js';
import { startModelProxy } from './model-proxy.js';
import { createPermissionEngine } from '@svc/protocol';

/**
 * The adapter for one run (Codex's and ACP's keep the state of their JSON-RPC session, so each
 * run gets its own). Codex always runs as `codex app-server`, autonomous or not: only there does it ask, so
 * only there can the permission engine refuse.
 */
function adapterFor(name: LoadedSidecarConfig['adapter']): Adapter {
  if (name === 'claude-code') return claudeCodeAdapter;
  if (name === 'codex') return createCodexAppServerAdapter();
  if (name === 'acp') return createAcpAdapter();
  return genericAdapter;
}

/** A run's adapter and how it starts (throws when the adapter cannot do the run). */
function planRun(name: LoadedSidecarConfig['adapter'], launch: AgentLaunch): { adapter: Adapter; plan: LaunchPlan } {
  const adapter = adapterFor(name);
  return { adapter, plan: adapter.launch(launch) };
}

export interface SidecarRun {
  /** Resolves with the agent's exit code (128 + signal number when a signal ended it). */
  exited: Promise<number>;
  /** Forwards SIGTERM to the agent, then SIGKILL after the grace period. */
  terminate(): void;
}

/** The agent's proxies the config asks for: to the models and to everything else. */
async function startProxies(config: LoadedSidecarConfig, client: ControlPlaneClient, warn: (message: string) => void) {
  // The agent's model traffic goes through the control plane, which holds the keys.
  const modelProxy = config.model_proxy ? await startModelProxy({ apis: config.model_proxy.apis, workerId: config.worker_id, client, warn }) : undefined;
  const modelBaseUrls = modelProxy ? Object.fromEntries(config.model_proxy!.apis.map((api) => [api, modelProxy.baseUrl(api)])) : undefined;
  // Everything else it reaches, it reaches through the gateway, which decides each tunnel.
  const egressProxy = config.egress_proxy ? await startEgressProxy({ workerId: config.worker_id, client, warn }) : undefined;
  // The repository's fetches and pushes go through the control plane, which holds its credential and decides pushes.
  const gitProxy = config.workspace ? await startGitProxy({ workspace: config.workspace, workerId: config.worker_id, client, warn }) : undefined;
  return {
    modelBaseUrls,
    /** For the agent's environment; the model proxy's variables win over the egress proxy's. */
    agentEnv: { ...egressProxy?.agentEnv, ...modelProxy?.agentEnv },
    async close(): Promise<void> {
      await Promise.all([modelProxy?.close(), egressProxy?.close(), gitProxy?.close()]);
    },
  };
}

/** The lifecycle event that opens the run: what started, with which config. */
function agentStartEvent(
  config: LoadedSidecarConfig,
  started: { command: string; adapter: string; pid: number | undefined; modelBaseUrls: Record<string, string> | undefined; resumed: boolean },
): AgentEvent {
  return {
    type: 'system',
    data: {
      level: 'info',
      message: `agent ${started.resumed ? 'started again on its conversation' : 'started'}: ${started.command}`,
      subtype: LIFECYCLE_SUBTYPES.agentStart,
      details: {
        pid: started.pid ?? null,
        adapter: started.adapter,
        config_file: config.source,
        ...(config.auth_token_file ? { token_file: config.auth_token_file } : {}),
        ...(started.modelBaseUrls ? { model_proxy: started.modelBaseUrls } : {}),
        ...(started.resumed ? { resumed: true } : {}),
      },
    },
  };
}

/** What every run of the agent shares: the control plane, the proxies, the outbox, the rules. */
interface SidecarParts {
  config: LoadedSidecarConfig;
  client: ControlPlaneClient;
  proxies: Awaited<ReturnType<typeof startProxies>>;
  outbox: ReturnType<typeof createOutbox>;
  engine: ReturnType<typeof createPermissionEngine>;
  refreshRules(): Promise<void>;
  launch: AgentLaunch;
  agentEnv: NodeJS.ProcessEnv;
  pgidFile: string;
  handed: HandedMessages;
  /** The workspace's changes, reported after each turn and when the agent is done (a template with a repository). */
  changes: ChangesReporter | undefined;
  warn(message: string): void;
}

/**
 * Runs the agent under the sidecar: each run of the agent's process (`agent-run.ts`: its lines
 * through the adapter and the routing, decisions and people's messages back to its stdin exactly
 * once). In a conversation whose adapter can resume, an agent stopped after its idle timeout, or
 * crashed, leaves the worker suspended: the next person's message starts it again on its own
 * conversation, as does a sidecar started again (docs/conversations.md). `exited` resolves when
 * the agent has exited for good and every event is delivered.
 */
export async function runSidecar(config: LoadedSidecarConfig, warn: (message: string) => void): Promise<SidecarRun> {
  const client = createControlPlaneClient(config.control_plane_url, config.token, { socketPath: config.control_plane_socket });
  const proxies = await startProxies(config, client, warn);
  const launch: AgentLaunch = {
    command: config.agent.command,
    args: config.agent.args,
    prompt: config.agent.prompt,
    autonomous: config.autonomous,
    permissions: config.permissions,
    cwd: path.resolve(config.agent.cwd ?? process.cwd()),
    modelBaseUrls: proxies.modelBaseUrls,
  };
  mkdirSync(config.state_dir, { recursive: true });
  markStarted(config.state_dir);
  const conversation = agentConversation(config.state_dir);
  const resumeAtStart = config.conversation ? conversation.id() : undefined;
  // Before the agent starts, so a run the adapter cannot do stops before anything starts.
  let first: { adapter: Adapter; plan: LaunchPlan };
  try {
    first = planRun(config.adapter, resumeAtStart ? { ...launch, prompt: undefined, resume: resumeAtStart } : launch);
  } catch (err) {
    await proxies.close();
    client.close();
    markFinished(config.state_dir, 2);
    throw err;
  }
  const pgidFile = path.join(config.state_dir, 'agent.pgid');
  killLeftoverAgent(pgidFile, warn);
  const bootId = randomBytes(6).toString('base64url');
  const outbox = createOutbox({ client, workerId: config.worker_id, bootId, stateDir: config.state_dir, bufferMaxBytes: config.buffer_max_bytes, warn });
  const engine = createPermissionEngine(config.permissions, { autonomous: config.autonomous });
  const refreshRules = async () => {
    const outcome = await client.send('GET', apiPaths.permissionRules(config.worker_id));
    if (outcome.ok) engine.setAddedRules((outcome.body as ListResponseOf<PermissionRule>).items);
  };
  void refreshRules();
  // The proxies' variables win: a template cannot point the agent past the model proxy.
  const agentEnv = { ...process.env, ...config.agent.env, ...proxies.agentEnv };
  for (const event of (await first.adapter.preflight?.(launch, { cwd: config.agent.cwd, env: agentEnv })) ?? []) outbox.push(event);
  const handed = handedMessages(config.state_dir);
  const changes = config.workspace ? createChangesReporter({ workspace: config.workspace, workerId: config.worker_id, client, warn }) : undefined;
  const parts = { config, client, proxies, outbox, engine, refreshRules, launch, agentEnv, pgidFile, handed, changes, warn };
  const sidecar = new Sidecar(parts, conversation, first.adapter);
  if (resumeAtStart === undefined) {
    sidecar.begin(first);
    sidecar.listen();
  } else void sidecar.startedAgain(resumeAtStart).then(() => sidecar.listen());
  return { exited: sidecar.finished, terminate: () => sidecar.terminate() };
}

/** The runs of the agent, one at a time, and the control channel's inputs to the one running. */
class Sidecar {
  private run: AgentRun | undefined;
  /** Inputs that came while the run was stopping (idle): the next run takes them. */
  private readonly held: StoredEvent[] = [];
  /** Set by SIGTERM: the sandbox is going away, so draining gets a deadline too. */
  private terminating = false;
  private finish: (code: number) => void = () => {};
  readonly finished = new Promise<number>((resolve) => (this.finish = resolve));
  private poller: ReturnType<typeof createControlChannelPoller> | undefined;

  constructor(
    private readonly parts: SidecarParts,
    private readonly conversation: ReturnType<typeof agentConversation>,
    /** The adapter of the sidecar's runs (what it can tell of the agent's record of its conversation). */
    private readonly adapter: Adapter,
  ) {}

  /** Takes the control channel's inputs from now on. */
  listen(): void {
    const { config, client, warn } = this.parts;
    if (this.terminating) return;
    this.poller = createControlChannelPoller({
      client,
      workerId: config.worker_id,
      stateDir: config.state_dir,
      waitMs: config.decision_wait_ms,
      pollIntervalMs: config.poll_interval_ms,
      warn,
      // A message's images are fetched before it counts as received: the agent gets it with them.
      prepare: (input) => fetchMessageImages(client, config.worker_id, input, (event) => this.parts.outbox.push(event)),
      // Kept before the cursor moves past it, where the agent keeps a record to check it against.
      onReceived: (input) => {
        if (config.conversation && this.adapter.tookMessage && isPersonMessage(input)) this.parts.handed.record(input.id);
      },
      // A person's terminal and changes requests are the sidecar's to act on, not the agent's to read.
      onInput: (input) => {
        if (isTerminalRequest(input)) return this.openTerminal(input);
        if (isChangesRequest(input)) return void this.parts.changes?.report();
        this.toAgent(input);
      },
    });
  }

  /** A person's terminal request: a shell in the workspace, connected outward. */
  private openTerminal(input: StoredEvent<'system'>): void {
    const request = terminalRequestOf(input);
    if (!request) return this.parts.warn(`a terminal request without a valid terminal id (event ${input.id}) was passed by`);
    const { config } = this.parts;
    openTerminal({
      client: this.parts.client,
      workerId: config.worker_id,
      ...request,
      cwd: config.workspace?.path ?? config.agent.cwd ?? process.cwd(),
      env: this.parts.agentEnv,
      warn: this.parts.warn,
    });
  }

  /** Starts a run; `resumed` by a person's message, which it is handed first (so it starts working, not idle). */
  begin({ adapter, plan }: { adapter: Adapter; plan: LaunchPlan }, resumedBy?: StoredEvent): AgentRun {
    const resumed = resumedBy !== undefined;
    const { config, outbox, engine } = this.parts;
    const run = startAgentRun({
      adapter,
      plan,
      cwd: config.agent.cwd,
      env: this.parts.agentEnv,
      pgidFile: this.parts.pgidFile,
      conversation: config.conversation,
      turnsAhead: !resumed && this.parts.launch.prompt !== undefined ? 1 : 0,
      idleTimeoutMs: config.conversation && config.idle_timeout_s !== undefined && adapter.resumes ? config.idle_timeout_s * 1000 : undefined,
      canResume: () => this.conversation.id() !== undefined,
      killGraceMs: config.kill_grace_ms,
      engine,
      record: (event) => outbox.push(event),
      onRuleAdded: (rule) => {
        engine.addRule(rule);
        void this.parts.refreshRules();
      },
      onAgentEvent: (event) => config.conversation && this.conversation.learnFrom(event),
      onActivity: (activity) => {
        if (activity !== 'idle') return;
        this.parts.handed.clear();
        // A turn ended: what it changed is there to review.
        void this.parts.changes?.report();
      },
      outboxRoom: () => (outbox.hasRoom() ? undefined : outbox.room()),
      warn: this.parts.warn,
    });
    outbox.push(
      agentStartEvent(config, { command: plan.command, adapter: adapter.name, pid: run.pid, modelBaseUrls: this.parts.proxies.modelBaseUrls, resumed }),
    );
    if (resumedBy) run.input(resumedBy);
    run.activity.started();
    this.run = run;
    run.ended
      .then((end) => this.ended(run, adapter, end))
      .catch((err: unknown) => this.parts.warn(`ending the agent's run failed: ${String((err as Error).stack ?? err)}`));
    return run;
  }

  /**
   * A run ended: suspended when a message can start it again — a conversation's agent that began
   * its conversation and was stopped when idle, or crashed — else the sidecar's work is done.
   * Inputs held while it was stopping go to the next run, or are said undelivered.
   */
  private async ended(run: AgentRun, adapter: Adapter, { exit: exited, idleStopped, stoppedAfterResult, lastTurnFailed, began }: AgentRunEnd): Promise<void> {
    // Stopped after its one turn (it does not exit when its input closes): the turn's outcome is the run's.
    const exit = stoppedAfterResult ? { ...exited, exitCode: lastTurnFailed ? 1 : 0 } : exited;
    const { config, outbox } = this.parts;
    const resumable =
      config.conversation &&
      adapter.resumes === true &&
      this.conversation.id() !== undefined &&
      began &&
      exit.startError === undefined &&
      !this.terminating &&
      (idleStopped || exit.exitCode !== 0);
    const reason = idleStopped ? `idle for ${config.idle_timeout_s} s` : 'it crashed';
    // What the agent left is reported before its exit is: the exit ends the worker, and its token with it.
    await this.parts.changes?.report();
    outbox.push(agentExitEvent(exit, resumable ? { reason } : undefined, stoppedAfterResult));
    run.activity.stopped(resumable, `the agent stopped (${reason})`);
    if (this.run === run) this.run = undefined;
    const held = this.held.splice(0);
    if (resumable) return held.forEach((input) => this.toAgent(input));
    for (const input of held) this.undelivered(input, 'the agent exited');
    await this.close(exit.exitCode);
  }

  /**
   * An input from the control channel: to the running agent; held while it stops; a message while
   * none runs starts it again on its conversation.
   */
  private toAgent(input: StoredEvent): void {
    if (this.run?.input(input)) return;
    if (this.run) return void this.held.push(input);
    if (isPersonMessage(input) && !this.terminating) {
      this.begin(planRun(this.parts.config.adapter, { ...this.parts.launch, prompt: undefined, resume: this.conversation.id() }), input);
      return;
    }
    this.undelivered(input, this.terminating ? 'the sandbox is stopping' : 'the agent is suspended: no turn was running');
  }

  /** A message or interrupt that reached no agent, said in the history (a decision for a run that has ended reaches nobody: its agent is gone). */
  private undelivered(input: StoredEvent, why: string): void {
    if (isPersonMessage(input)) this.parts.outbox.push(undeliveredEvent('message', input, why));
    else if (isPersonInterrupt(input)) this.parts.outbox.push(undeliveredEvent('interrupt', input, why));
  }

  /**
   * Started again with a conversation to resume: the messages the killed sidecar handed over that
   * the agent never took (its own record says) are handed over again, read again from the control
   * plane, resuming it; else it waits suspended for a message. Whatever goes wrong here leaves it
   * suspended (at most once).
   */
  async startedAgain(conversationId: string): Promise<void> {
    const untaken = await this.untakenMessages(conversationId).catch((err: unknown) => {
      this.parts.warn(`could not tell which messages the agent took before the restart: ${String(err)}`);
      return [];
    });
    if (untaken.length === 0) {
      this.parts.outbox.push({ type: 'system', data: activityData('suspended', 'the sidecar started again; a message resumes the conversation') });
      return;
    }
    this.parts.warn(`${untaken.length} message(s) handed over before the restart never reached the agent: handing them over again`);
    for (const message of untaken) this.toAgent(message);
  }

  private async untakenMessages(conversationId: string): Promise<StoredEvent<'system'>[]> {
    const { adapter } = this;
    if (!adapter.tookMessage) return [];
    const place = {
      conversationId,
      home: this.parts.agentEnv['HOME'] ?? homedir(),
      cwd: this.parts.config.agent.cwd ?? process.cwd(),
      env: this.parts.agentEnv,
    };
    const untaken: StoredEvent<'system'>[] = [];
    for (const id of this.parts.handed.read()) {
      const message = await this.personMessage(id);
      const messageId = message && personMessageId(message);
      if (!message || messageId === undefined || adapter.tookMessage(messageId, place)) continue;
      adapter.forgetUnansweredMessage?.(messageId, place);
      untaken.push(message);
    }
    return untaken;
  }

  /** The person's message stored under `id`, as the control plane holds it (the state directory is the sandbox's: it only names it). */
  private async personMessage(id: string): Promise<StoredEvent<'system'> | undefined> {
    const { client, config } = this.parts;
    const outcome = await client.send('GET', apiPaths.pendingInputs(config.worker_id, { after_id: (BigInt(id) - 1n).toString(), wait_ms: 0, limit: 1 }));
    if (!outcome.ok) return undefined;
    const [input] = (outcome.body as ListResponseOf<StoredEvent>).items;
    if (input?.id !== id || !isPersonMessage(input)) return undefined;
    await fetchMessageImages(client, config.worker_id, input, (event) => this.parts.outbox.push(event));
    return input;
  }

  terminate(): void {
    if (this.terminating) return;
    this.terminating = true;
    if (this.run) this.run.terminate(this.parts.config.kill_grace_ms);
    // Suspended: no agent to stop.
    else void this.close(0);
  }

  private async close(code: number): Promise<void> {
    const { config, proxies, outbox, client } = this.parts;
    await this.poller?.stop();
    await proxies.close();
    await outbox.close(this.terminating ? config.kill_grace_ms : undefined);
    client.close();
    markFinished(config.state_dir, code);
    this.finish(code);
  }
}
