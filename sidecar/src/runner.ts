import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { constants } from 'node:os';
import { LIFECYCLE_SUBTYPES, withdrawnRequestId, type EventData, type ListResponseOf, type PermissionRule } from '@svc/protocol';
// Only this module of the kit: the sidecar's single executable stays small.
import { dieWithParent } from '@svc/service-kit/child-processes';
import type { Adapter, AgentEvent, LaunchPlan } from './adapters/adapter.js';
import { claudeCodeAdapter } from './adapters/claude-code.js';
import { createCodexAppServerAdapter } from './adapters/codex-app-server.js';
import { genericAdapter } from './adapters/generic.js';
import type { LoadedSidecarConfig } from './config.js';
import { createDecisionPoller } from './decision-poller.js';
import { createControlPlaneClient } from './http-client.js';
import { createOutbox } from './outbox.js';
import { startEgressProxy } from './egress-proxy.js';
import { startModelProxy } from './model-proxy.js';
import { createPermissionEngine } from './permissions.js';

/**
 * The adapter for one run (Codex's keeps the state of its JSON-RPC session, so each run gets its
 * own). Codex always runs as `codex app-server`, autonomous or not: only there does it ask, so
 * only there can the permission engine refuse.
 */
export function adapterFor(name: LoadedSidecarConfig['adapter']): Adapter {
  if (name === 'claude-code') return claudeCodeAdapter;
  if (name === 'codex') return createCodexAppServerAdapter();
  return genericAdapter;
}

/** The agent never outlives its sidecar unobserved: a group left by a previous run is killed first. */
function killLeftoverAgent(pgidFile: string, warn: (message: string) => void): void {
  let pgid: number;
  try {
    pgid = Number(readFileSync(pgidFile, 'utf8').trim());
  } catch {
    return;
  }
  if (!Number.isInteger(pgid) || pgid <= 1) return;
  try {
    process.kill(-pgid, 'SIGKILL');
    warn(`killed the agent group ${pgid} left by a previous sidecar`);
  } catch {
    // Already gone.
  }
}

export interface SidecarRun {
  /** Resolves with the agent's exit code (128 + signal number when a signal ended it). */
  exited: Promise<number>;
  /** Forwards SIGTERM to the agent, then SIGKILL after the grace period. */
  terminate(): void;
}

/**
 * Runs the agent under the sidecar: its lines become events (through the adapter), its tool
 * requests go through the permission engine (and to a person when it says ask), decisions come
 * back from the long poll and go to its stdin exactly once. Resolves when the agent has exited
 * and every event is delivered.
 */
export async function runSidecar(config: LoadedSidecarConfig, warn: (message: string) => void): Promise<SidecarRun> {
  const adapter = adapterFor(config.adapter);
  const client = createControlPlaneClient(config.control_plane_url, config.token, { socketPath: config.control_plane_socket });
  // The agent's model traffic goes through the control plane, which holds the keys.
  const modelProxy = config.model_proxy ? await startModelProxy({ apis: config.model_proxy.apis, workerId: config.worker_id, client, warn }) : undefined;
  const modelBaseUrls = modelProxy ? Object.fromEntries(config.model_proxy!.apis.map((api) => [api, modelProxy.baseUrl(api)])) : undefined;
  // Everything else it reaches, it reaches through the gateway, which decides each tunnel.
  const egressProxy = config.egress_proxy ? await startEgressProxy({ workerId: config.worker_id, client, warn }) : undefined;
  // Before the agent starts, so a run the adapter cannot do stops before anything starts.
  let plan: LaunchPlan;
  const launch = { command: config.agent.command, args: config.agent.args, prompt: config.agent.prompt, autonomous: config.autonomous, permissions: config.permissions, modelBaseUrls };
  try {
    plan = adapter.launch(launch);
  } catch (err) {
    await Promise.all([modelProxy?.close(), egressProxy?.close()]);
    client.close();
    throw err;
  }
  mkdirSync(config.state_dir, { recursive: true });
  const pgidFile = path.join(config.state_dir, 'agent.pgid');
  killLeftoverAgent(pgidFile, warn);
  const bootId = randomBytes(6).toString('base64url');
  const outbox = createOutbox({ client, workerId: config.worker_id, bootId, stateDir: config.state_dir, bufferMaxBytes: config.buffer_max_bytes, warn });
  const engine = createPermissionEngine(config.permissions, { autonomous: config.autonomous });
  /** Requests a person must decide, by request id, until the decision is written. */
  const open = new Map<string, EventData<'control_request'>>();

  const refreshRules = async () => {
    const outcome = await client.send('GET', `/v1/workers/${config.worker_id}/permission-rules`);
    if (outcome.ok) engine.setAddedRules((outcome.body as ListResponseOf<PermissionRule>).items);
  };
  void refreshRules();

  // The proxy's variables win: a template cannot point the agent past the model proxy.
  const agentEnv = { ...process.env, ...config.agent.env, ...egressProxy?.agentEnv, ...modelProxy?.agentEnv };
  const preflight = (await adapter.preflight?.(launch, { cwd: config.agent.cwd, env: agentEnv })) ?? [];
  // The agent dies with the sidecar however the sidecar dies (a SIGKILL runs no handler): a
  // sidecar started again finds no agent of the last run writing into the same workspace.
  const launchAgent = dieWithParent(plan.command, plan.args);
  const agent = spawn(launchAgent.command, launchAgent.args, {
    cwd: config.agent.cwd,
    env: agentEnv,
    stdio: ['pipe', 'pipe', 'pipe'],
    // Its own process group: a signal reaches everything it started.
    detached: true,
  });
  if (agent.pid) writeFileSync(pgidFile, String(agent.pid));
  const writeToAgent = (bytes: string) => {
    if (bytes && agent.stdin?.writable) agent.stdin.write(bytes);
  };
  agent.stdin?.on('error', () => {}); // the agent closed its stdin: nothing more to tell it
  for (const line of plan.stdinLines) writeToAgent(`${line}\n`);
  if (plan.closeStdin) agent.stdin?.end();
  for (const event of preflight) outbox.push(event);
  outbox.push({ type: 'system', data: { level: 'info', message: `agent started: ${plan.command}`, subtype: LIFECYCLE_SUBTYPES.agentStart, details: { pid: agent.pid ?? null, adapter: adapter.name, config_file: config.source, ...(config.auth_token_file ? { token_file: config.auth_token_file } : {}), ...(modelBaseUrls ? { model_proxy: modelBaseUrls } : {}) } } });

  function handle(event: AgentEvent): void {
    if (event.type === 'control_request') {
      outbox.push(event);
      const verdict = engine.decide(event.data.tool_name, event.data.input);
      if (verdict.decision === 'ask') {
        open.set(event.data.request_id, event.data);
        return;
      }
      // The policy decided: recorded like a person's decision, so the history shows it.
      const decision: EventData<'control_response'> = { request_id: event.data.request_id, decision: verdict.decision, message: verdict.reason, decided_by: 'policy' };
      outbox.push({ type: 'control_response', data: decision });
      writeToAgent(adapter.formatDecision(decision, event.data));
      return;
    }
    if (event.type === 'system') {
      const withdrawn = withdrawnRequestId(event);
      if (withdrawn !== undefined) open.delete(withdrawn);
    }
    outbox.push(event);
    if (event.type === 'result' && adapter.endsAfterResult) agent.stdin?.end();
  }

  for (const [stream, source] of [
    ['stdout', agent.stdout!],
    ['stderr', agent.stderr!],
  ] as const) {
    const lines = createInterface({ input: source, crlfDelay: Infinity });
    lines.on('line', (line) => {
      // The agent's diagnostics also go to the sidecar's own output: the sandbox's logs.
      if (stream === 'stderr') warn(`agent stderr: ${line}`);
      for (const event of adapter.parseLine(line, stream)) handle(event);
      for (const reply of adapter.takeOutgoing?.() ?? []) writeToAgent(reply);
      // A full disk buffer stops the reading: the agent waits on its pipe, nothing is lost.
      if (!outbox.hasRoom()) {
        lines.pause();
        void outbox.room().then(() => lines.resume());
      }
    });
  }

  const poller = createDecisionPoller({
    client,
    workerId: config.worker_id,
    stateDir: config.state_dir,
    waitMs: config.decision_wait_ms,
    pollIntervalMs: config.poll_interval_ms,
    warn,
    onDecision(decision) {
      const request = open.get(decision.data.request_id);
      if (decision.data.decided_by === 'policy' || !request) return; // ours, or not this agent's
      open.delete(decision.data.request_id);
      writeToAgent(adapter.formatDecision(decision.data, request));
      if (decision.data.scope === 'always') void refreshRules();
    },
  });

  let killTimer: NodeJS.Timeout | undefined;
  /** Set by SIGTERM: the sandbox is going away, so draining gets a deadline too. */
  let terminating = false;
  const exited = new Promise<number>((resolve) => {
    let finished = false;
    const finish = (exitCode: number, data: EventData<'system'>) => {
      if (finished) return;
      finished = true;
      clearTimeout(killTimer);
      rmSync(pgidFile, { force: true });
      outbox.push({ type: 'system', data });
      void (async () => {
        await poller.stop();
        await Promise.all([modelProxy?.close(), egressProxy?.close()]);
        await outbox.close(terminating ? config.kill_grace_ms : undefined);
        client.close();
        resolve(exitCode);
      })();
    };
    agent.on('error', (err) => {
      // It never ran (e.g. the command does not exist): there will be no exit status.
      if (agent.pid === undefined) finish(127, { level: 'error', message: `the agent could not start: ${err.message}`, subtype: LIFECYCLE_SUBTYPES.agentExit, details: { code: 127 } });
    });
    agent.on('close', (code, signal) => {
      const exitCode = code ?? (signal ? 128 + (constants.signals[signal] ?? 0) : 1);
      finish(exitCode, { level: exitCode === 0 ? 'info' : 'warn', message: `agent exited with ${signal ? `signal ${signal}` : `code ${code}`}`, subtype: LIFECYCLE_SUBTYPES.agentExit, details: { code, signal } });
    });
  });

  return {
    exited,
    terminate() {
      terminating = true;
      if (!agent.pid) return;
      try {
        process.kill(-agent.pid, 'SIGTERM');
      } catch {
        return;
      }
      killTimer = setTimeout(() => {
        try {
          process.kill(-agent.pid!, 'SIGKILL');
        } catch {
          // Gone meanwhile.
        }
      }, config.kill_grace_ms);
    },
  };
}
