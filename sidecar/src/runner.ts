import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { apiPaths, LIFECYCLE_SUBTYPES, type EventData, type ListResponseOf, type PermissionRule } from '@svc/protocol';
import type { Adapter, AgentEvent, LaunchPlan } from './adapters/adapter.js';
import { killLeftoverAgent, startAgentProcess, type AgentExit } from './agent-process.js';
import { createEventRouting } from './event-routing.js';
import { claudeCodeAdapter } from './adapters/claude-code.js';
import { createCodexAppServerAdapter } from './adapters/codex-app-server.js';
import { genericAdapter } from './adapters/generic.js';
import type { LoadedSidecarConfig } from './config.js';
import { createDecisionPoller } from './decision-poller.js';
import { createControlPlaneClient, type ControlPlaneClient } from './http-client.js';
import { createOutbox } from './outbox.js';
import { startEgressProxy } from './egress-proxy.js';
import { startModelProxy } from './model-proxy.js';
import { createPermissionEngine } from './permissions.js';

/**
 * The adapter for one run (Codex's keeps the state of its JSON-RPC session, so each run gets its
 * own). Codex always runs as `codex app-server`, autonomous or not: only there does it ask, so
 * only there can the permission engine refuse.
 */
function adapterFor(name: LoadedSidecarConfig['adapter']): Adapter {
  if (name === 'claude-code') return claudeCodeAdapter;
  if (name === 'codex') return createCodexAppServerAdapter();
  return genericAdapter;
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
  return {
    modelBaseUrls,
    /** For the agent's environment; the model proxy's variables win over the egress proxy's. */
    agentEnv: { ...egressProxy?.agentEnv, ...modelProxy?.agentEnv },
    async close(): Promise<void> {
      await Promise.all([modelProxy?.close(), egressProxy?.close()]);
    },
  };
}

/** The lifecycle event that opens the run: what started, with which config. */
function agentStartEvent(
  config: LoadedSidecarConfig,
  started: { command: string; adapter: string; pid: number | undefined; modelBaseUrls: Record<string, string> | undefined },
): AgentEvent {
  return {
    type: 'system',
    data: {
      level: 'info',
      message: `agent started: ${started.command}`,
      subtype: LIFECYCLE_SUBTYPES.agentStart,
      details: {
        pid: started.pid ?? null,
        adapter: started.adapter,
        config_file: config.source,
        ...(config.auth_token_file ? { token_file: config.auth_token_file } : {}),
        ...(started.modelBaseUrls ? { model_proxy: started.modelBaseUrls } : {}),
      },
    },
  };
}

/** The lifecycle event that closes the run: the agent's code or signal, or why it never started. */
function agentExitEvent(exit: AgentExit): AgentEvent {
  const data: EventData<'system'> =
    exit.startError !== undefined
      ? { level: 'error', message: `the agent could not start: ${exit.startError}`, subtype: LIFECYCLE_SUBTYPES.agentExit, details: { code: 127 } }
      : {
          level: exit.exitCode === 0 ? 'info' : 'warn',
          message: `agent exited with ${exit.signal ? `signal ${exit.signal}` : `code ${exit.code}`}`,
          subtype: LIFECYCLE_SUBTYPES.agentExit,
          details: { code: exit.code, signal: exit.signal },
        };
  return { type: 'system', data };
}

/**
 * Runs the agent under the sidecar: the agent's process (`agent-process.ts`), its lines turned
 * into events by the adapter and routed (`event-routing.ts`: to the outbox, tool requests
 * through the permission engine or to a person, decisions from the long poll back to its stdin
 * exactly once). `exited` resolves when the agent has exited and every event is delivered.
 */
export async function runSidecar(config: LoadedSidecarConfig, warn: (message: string) => void): Promise<SidecarRun> {
  const adapter = adapterFor(config.adapter);
  const client = createControlPlaneClient(config.control_plane_url, config.token, { socketPath: config.control_plane_socket });
  const proxies = await startProxies(config, client, warn);
  const { modelBaseUrls } = proxies;
  // Before the agent starts, so a run the adapter cannot do stops before anything starts.
  let plan: LaunchPlan;
  const launch = {
    command: config.agent.command,
    args: config.agent.args,
    prompt: config.agent.prompt,
    autonomous: config.autonomous,
    permissions: config.permissions,
    modelBaseUrls,
  };
  try {
    plan = adapter.launch(launch);
  } catch (err) {
    await proxies.close();
    client.close();
    throw err;
  }
  mkdirSync(config.state_dir, { recursive: true });
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
  const preflight = (await adapter.preflight?.(launch, { cwd: config.agent.cwd, env: agentEnv })) ?? [];
  const agent = startAgentProcess({ command: plan.command, args: plan.args, cwd: config.agent.cwd, env: agentEnv, pgidFile });
  const routing = createEventRouting({
    adapter,
    endsAfterResult: adapter.endsAfterResult && !config.conversation,
    engine,
    record: (event) => outbox.push(event),
    toAgent: (bytes) => agent.write(bytes),
    closeAgentInput: () => agent.closeStdin(),
    signalAgent: (signal) => agent.signal(signal),
    onRuleAdded: (rule) => {
      engine.addRule(rule);
      void refreshRules();
    },
  });
  for (const line of plan.stdinLines) agent.write(`${line}\n`);
  if (plan.closeStdin) routing.closeAgentInput();
  for (const event of preflight) outbox.push(event);
  outbox.push(agentStartEvent(config, { command: plan.command, adapter: adapter.name, pid: agent.pid, modelBaseUrls }));

  const readers = agent.readLines((line, stream) => {
    // The agent's diagnostics also go to the sidecar's own output: the sandbox's logs.
    if (stream === 'stderr') warn(`agent stderr: ${line}`);
    for (const event of adapter.parseLine(line, stream)) routing.fromAgent(event);
    for (const reply of adapter.takeOutgoing?.() ?? []) agent.write(reply);
    // A full disk buffer stops the reading: the agent waits on its pipe, nothing is lost.
    if (!outbox.hasRoom()) {
      for (const reader of readers) reader.pause();
      void outbox.room().then(() => readers.forEach((reader) => reader.resume()));
    }
  });

  const poller = createDecisionPoller({
    client,
    workerId: config.worker_id,
    stateDir: config.state_dir,
    waitMs: config.decision_wait_ms,
    pollIntervalMs: config.poll_interval_ms,
    warn,
    onInput: (input) => routing.fromControlChannel(input),
  });

  /** Set by SIGTERM: the sandbox is going away, so draining gets a deadline too. */
  let terminating = false;
  const exited = agent.exited.then(async (exit) => {
    outbox.push(agentExitEvent(exit));
    await poller.stop();
    await proxies.close();
    await outbox.close(terminating ? config.kill_grace_ms : undefined);
    client.close();
    return exit.exitCode;
  });

  return {
    exited,
    terminate() {
      terminating = true;
      agent.terminate(config.kill_grace_ms);
    },
  };
}
