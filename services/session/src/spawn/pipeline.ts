import { access, constants } from 'node:fs/promises';
import {
  CodedError,
  isEndedStatus,
  isNetworkRule,
  LIFECYCLE_SUBTYPES,
  SYSTEM_SUBTYPES,
  type CreateSessionBodyType,
  type EgressPolicy,
  type EventData,
  type ModelAccess,
  type ModelBudget,
  type SidecarConfig,
} from '@svc/protocol';
import { histogram, type Logger } from '@svc/service-kit';
import type { Sandbox, SandboxProvider } from '../sandbox/provider.js';
import type { SessionStore } from '../session-store.js';
import type { Template } from '../templates/template.js';
import type { WorkerRegistry } from '../worker-registry.js';
import { failSession, setSessionStatus } from '../session-status.js';

/** The spec's paths inside every sandbox (step 6 and step 6.5). */
export const SANDBOX_PATHS = {
  sidecarBinary: '/usr/local/bin/svc-sidecar',
  sidecarConfig: '/etc/svc/sidecar.json',
  token: '/var/run/svc/token',
  sidecarState: '/var/lib/svc-sidecar',
  workspace: '/workspace',
} as const;

/** The architecture every sandbox runs (step 6.5.1 selects the sidecar binary built for it). */
export const SANDBOX_TARGET = 'linux/amd64';

export interface SpawnDeps {
  provider: SandboxProvider;
  registry: WorkerRegistry;
  store: SessionStore;
  /** Reports a `system` event of the worker (durably, in order). */
  emit(workerId: string, uid: string, data: EventData<'system'>): Promise<void>;
  /** The svc-sidecar single executable per target, e.g. `{'linux/amd64': '/opt/svc/svc-sidecar'}`. */
  sidecarBinaries: Readonly<Record<string, string>>;
  /** The gateway's address as a sandbox reaches it. */
  controlPlaneUrl: string;
  /** How long each of the sidecar's decision polls waits (under the liveness deadline). */
  decisionWaitMs: number;
  /** The variables a template's `pass_env` may copy (the session service's environment). */
  hostEnv: Readonly<Record<string, string | undefined>>;
  /** How long a sandbox's programs get between SIGTERM and SIGKILL when it is torn down. */
  killGraceMs: number;
  /** The PATH every sandboxed program starts with. */
  sandboxPath: string;
  logger: Logger;
}

export interface SpawnRequest {
  sessionId: string;
  workerId: string;
  token: string;
  template: Template;
  body: CreateSessionBodyType;
  /** Aborted when this session service stops: the spawn ends at its next step, failed, and undone. */
  stopping?: AbortSignal;
}

/** Checks a template against a request before anything is made (step 1): a refusal is `400`. */
export function validateSpawn(
  template: Template,
  body: CreateSessionBodyType,
  hostEnv: Readonly<Record<string, string | undefined>>,
  sandboxes: { seals: boolean; allowUnsealed: boolean },
): void {
  if (template.sandbox.sealed && !sandboxes.seals && !sandboxes.allowUnsealed) {
    throw new CodedError(
      'invalid_template',
      `${template.source}: the template asks for a sealed sandbox ([sandbox] sealed = true, the default), and this session service cannot seal one (local sandboxes without bubblewrap are plain processes with this machine's network): install bubblewrap, or let the operator set SVC_SANDBOX_ALLOW_UNSEALED=true`,
      { file: template.source },
    );
  }
  if (body.overrides?.budget && !template.model) {
    throw new CodedError('invalid_request', `template ${template.name} names no model API ([model]), so svc meters nothing a budget could cap`);
  }
  const missing = template.agent.pass_env.filter((name) => !hostEnv[name]);
  if (missing.length > 0) {
    throw new CodedError('invalid_template', `${template.source}: /agent/pass_env needs ${missing.join(', ')} set in the session service's environment`, {
      file: template.source,
      missing,
    });
  }
  if (template.sidecar === undefined && body.prompt !== undefined) {
    throw new CodedError('invalid_request', `template ${template.name} has no [sidecar] section, so nothing would give the agent a prompt`);
  }
}

/**
 * What a worker may reach through the model proxy: the template's API, and its budget. A
 * session's budget may lower the template's caps, never raise them.
 */
export function modelAccessOf(template: Template, body: CreateSessionBodyType): ModelAccess | undefined {
  if (!template.model) return undefined;
  const lower = (a: number | undefined, b: number | undefined) => (a === undefined ? b : b === undefined ? a : Math.min(a, b));
  const requested = body.overrides?.budget;
  const budget: ModelBudget = {};
  const maxTokens = lower(template.model.max_tokens, requested?.max_tokens);
  const maxCost = lower(template.model.max_cost_usd, requested?.max_cost_usd);
  if (maxTokens !== undefined) budget.max_tokens = maxTokens;
  if (maxCost !== undefined) budget.max_cost_usd = maxCost;
  return { apis: [template.model.api], ...(Object.keys(budget).length > 0 ? { budget } : {}) };
}

/**
 * How the gateway decides the agent's tunnels: the template's egress list, its deny rules for the
 * `network` tool, and whether anyone is asked. Only a sealed sandbox with a sidecar has tunnels
 * (anything else either has the network or nothing to offer a proxy).
 */
export function egressPolicyOf(template: Template, body: CreateSessionBodyType): EgressPolicy | undefined {
  if (!template.sandbox.sealed || !template.sidecar) return undefined;
  return {
    allow: template.sandbox.egress,
    deny: template.sidecar.deny.filter(isNetworkRule),
    autonomous: body.overrides?.autonomous ?? template.sidecar.autonomous,
  };
}

/** A step failed: where, and why (safe to show: never a token). */
class StepFailure extends Error {
  constructor(
    readonly step: string,
    readonly reason: string,
  ) {
    super(`${step}: ${reason}`);
  }
}

const spawnStepSeconds = histogram({
  name: 'svc_spawn_step_duration_seconds',
  help: 'How long each step of the spawn pipeline took (docs/sessions.md), by step and whether it was done or skipped.',
  labelNames: ['step', 'status'],
  buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
});

/**
 * The spawn pipeline after the session exists (steps 1 validate and 2 allocate ran when it was
 * asked for): each step is named, logged and reported as a `system` event of the worker
 * (`subtype: "spawn_step"`). A failed step fails the session with the step and the reason,
 * and undoes what earlier steps made (the sandbox, the token).
 */
export async function runSpawn(deps: SpawnDeps, request: SpawnRequest): Promise<void> {
  const { workerId, sessionId, template } = request;
  const log = deps.logger.child({ session_id: sessionId, worker_id: workerId, template: template.name });
  const undo: Array<{ what: string; run: () => Promise<void> }> = [];
  let sandbox: Sandbox | undefined;
  let current = 'validate';

  const report = async (number: string, step: string, started: number, status: 'done' | 'skipped', extra: Record<string, unknown> = {}) => {
    const durationMs = Date.now() - started;
    spawnStepSeconds.observe({ step, status }, durationMs / 1000);
    log.info({ step, number, durationMs, ...extra }, `spawn step ${number} ${step}: ${status}`);
    await deps.emit(workerId, `spawn:${step}`, {
      level: 'info',
      subtype: LIFECYCLE_SUBTYPES.spawnStep,
      message: `spawn step ${number} ${step}: ${status} (${durationMs} ms)`,
      details: { step, number, status, duration_ms: durationMs, ...extra },
    });
  };
  const step = async <T>(number: string, name: string, work: () => Promise<T>, extra?: (result: T) => Record<string, unknown>): Promise<T> => {
    current = name;
    // A stopping service does not hold its shutdown for a spawn (copying a sidecar binary can take
    // seconds): the session fails now, saying why, rather than when a watchdog notices.
    if (request.stopping?.aborted) throw new StepFailure(name, 'spawn_interrupted: the session service stopped during the spawn; create the session again');
    // A session deleted meanwhile (on any replica) has ended its worker: stop here and undo.
    const { status } = await deps.registry.get(workerId);
    if (isEndedStatus(status)) throw new StepFailure(name, `the session was ${status} before this step`);
    const started = Date.now();
    let result: T;
    try {
      result = await work();
    } catch (err) {
      throw err instanceof StepFailure ? err : new StepFailure(name, (err as Error).message);
    }
    await report(number, name, started, 'done', extra?.(result));
    return result;
  };

  try {
    await report('1', 'validate', Date.now(), 'done', { template: template.name, source: template.source });
    for (const [index, warning] of template.warnings.entries()) {
      log.warn({ template: template.name }, warning);
      await deps.emit(workerId, `spawn:validate:warning:${index}`, { level: 'warn', subtype: SYSTEM_SUBTYPES.templateWarning, message: warning });
    }
    await report('2', 'allocate_worker', Date.now(), 'done', { worker_id: workerId, session_id: sessionId });
    await setSessionStatus(deps, { sessionId, workerId }, 'provisioning');

    sandbox = await step(
      '3',
      'create_sandbox',
      async () => {
        const made = await deps.provider.create({ workerId, image: template.agent.image, sealed: template.sandbox.sealed });
        undo.push({ what: 'destroy the sandbox', run: () => made.destroy(deps.killGraceMs) });
        await deps.store.setSandbox(sessionId, made.handle);
        return made;
      },
      (made) => ({
        provider: made.handle.provider,
        ...(made.handle.provider === 'local' ? { isolation: made.handle.isolation, sealed: made.handle.sealed ?? false } : { pod: made.handle.pod }),
      }),
    );
    const box = sandbox;

    await step('4', 'prepare_workspace', async () => {
      const made = await box.exec(['mkdir', '-p', box.resolvePath(SANDBOX_PATHS.workspace)]);
      if (made.code !== 0) throw new Error(`mkdir ${SANDBOX_PATHS.workspace} exited with ${made.code}: ${made.stderr.trim()}`);
    });

    const agentEnv = await step(
      '5',
      'env_and_files',
      async () => {
        for (const file of template.files) await box.upload(file.path, Buffer.from(file.content), file.mode);
        const passed = Object.fromEntries(
          [...template.agent.pass_env, ...template.agent.pass_env_optional].flatMap((name) =>
            deps.hostEnv[name] === undefined ? [] : [[name, deps.hostEnv[name]!]],
          ),
        );
        return { ...template.agent.env, ...passed, ...(request.body.overrides?.env ?? {}) };
      },
      (env) => ({ files: template.files.map((f) => f.path), env: Object.keys(env) }),
    );

    // 6: the credential proxy's part here: the worker's token, readable by the sandbox only.
    await step(
      '6',
      'credential_proxy',
      () => box.upload(SANDBOX_PATHS.token, Buffer.from(`${request.token}\n`), 0o600),
      () => ({ path: SANDBOX_PATHS.token }),
    );

    if (template.sidecar === undefined) {
      await report('6.5', 'sidecar', Date.now(), 'skipped', { reason: 'the template has no [sidecar] section' });
      await step('6.5', 'start_agent', () =>
        box.startBackground([resolveCommand(box, template.agent.command), ...template.agent.args], baseEnv(deps, agentEnv)),
      );
    } else {
      await deploySidecar(deps, request, box, agentEnv, step);
    }

    await step('7', 'finalize', async () => {
      // The agent may already have finished (a very short run): then its end status stands.
      await setSessionStatus(deps, { sessionId, workerId }, 'running');
    });
  } catch (err) {
    const failure = err instanceof StepFailure ? err : new StepFailure(current, (err as Error).message);
    log.warn({ step: failure.step, reason: failure.reason }, 'spawn failed; undoing earlier steps');
    await deps
      .emit(workerId, `spawn:${failure.step}:failed`, {
        level: 'error',
        subtype: LIFECYCLE_SUBTYPES.spawnStep,
        message: `spawn step ${failure.step} failed: ${failure.reason}`,
        details: { step: failure.step, status: 'failed', reason: failure.reason },
      })
      .catch((error: unknown) => log.warn({ err: error }, 'could not report the failed step'));
    for (const { what, run } of undo.reverse()) {
      await run().catch((error: unknown) => log.error({ err: error, what }, 'could not undo a spawn step'));
    }
    await failSession(deps, { sessionId, workerId }, { step: failure.step, reason: failure.reason }).catch((error: unknown) =>
      log.error({ err: error }, 'could not mark the session failed'),
    );
  }
}

type Step = <T>(number: string, name: string, work: () => Promise<T>, extra?: (result: T) => Record<string, unknown>) => Promise<T>;

/** Step 6.5, exactly the spec's six sub-steps. */
async function deploySidecar(deps: SpawnDeps, request: SpawnRequest, box: Sandbox, agentEnv: Record<string, string>, step: Step): Promise<void> {
  const sidecar = request.template.sidecar!;
  const binary = await step(
    '6.5.1',
    'sidecar.select_binary',
    async () => {
      const file = deps.sidecarBinaries[SANDBOX_TARGET];
      if (!file) throw new Error(`no svc-sidecar binary is configured for ${SANDBOX_TARGET}`);
      try {
        await access(file, constants.R_OK);
      } catch {
        throw new Error(
          `the svc-sidecar binary for ${SANDBOX_TARGET} is not at ${file}: build it with \`npx nx run @svc/sidecar:executable\` or set SVC_SIDECAR_BINARY`,
        );
      }
      return file;
    },
    (file) => ({ target: SANDBOX_TARGET, binary: file }),
  );

  await step(
    '6.5.2',
    'sidecar.upload_binary',
    () => box.upload(SANDBOX_PATHS.sidecarBinary, { fromFile: binary }, 0o755),
    () => ({ path: SANDBOX_PATHS.sidecarBinary }),
  );

  await step(
    '6.5.3',
    'sidecar.read_token',
    async () => {
      const read = await box.exec(['cat', box.resolvePath(SANDBOX_PATHS.token)]);
      if (read.code !== 0) throw new Error(`${SANDBOX_PATHS.token} cannot be read in the sandbox (cat exited with ${read.code})`);
      if (read.stdout.trim() !== request.token) throw new Error(`${SANDBOX_PATHS.token} does not hold this worker's token`);
    },
    () => ({ path: SANDBOX_PATHS.token }),
  );

  const config = await step(
    '6.5.4',
    'sidecar.build_config',
    async () => {
      const built: SidecarConfig = {
        adapter: sidecar.adapter,
        worker_id: request.workerId,
        control_plane_url: deps.controlPlaneUrl,
        ...(box.controlPlaneSocket ? { control_plane_socket: box.controlPlaneSocket } : {}),
        ...(request.template.model ? { model_proxy: { apis: [request.template.model.api] } } : {}),
        egress_proxy: egressPolicyOf(request.template, request.body) !== undefined,
        auth_token: request.token,
        auth_token_file: box.resolvePath(SANDBOX_PATHS.token),
        autonomous: request.body.overrides?.autonomous ?? sidecar.autonomous,
        permissions: { auto_approve: sidecar.auto_approve, deny: sidecar.deny, ask: sidecar.ask },
        poll_interval_ms: sidecar.poll_interval_ms,
        agent: {
          command: resolveCommand(box, request.template.agent.command),
          args: request.template.agent.args,
          env: agentEnv,
          ...(request.template.agent.cwd ? { cwd: box.resolvePath(request.template.agent.cwd) } : {}),
          ...((request.body.prompt ?? request.template.agent.prompt) !== undefined ? { prompt: request.body.prompt ?? request.template.agent.prompt } : {}),
        },
        state_dir: box.resolvePath(SANDBOX_PATHS.sidecarState),
        decision_wait_ms: deps.decisionWaitMs,
        buffer_max_bytes: 64 * 1024 * 1024,
        // The agent's grace and then the sidecar's drain both fit in the sandbox's grace period.
        kill_grace_ms: Math.floor(deps.killGraceMs * 0.4),
      };
      return built;
    },
    (built) => ({ adapter: built.adapter, autonomous: built.autonomous }),
  );

  // JSON.stringify is the only encoding: no template value passes through a shell or a format string.
  await step(
    '6.5.5',
    'sidecar.upload_config',
    () => box.upload(SANDBOX_PATHS.sidecarConfig, Buffer.from(JSON.stringify(config, null, 2)), 0o600),
    () => ({ path: SANDBOX_PATHS.sidecarConfig }),
  );

  await step('6.5.6', 'sidecar.start', () =>
    box.startBackground([box.resolvePath(SANDBOX_PATHS.sidecarBinary)], {
      ...baseEnv(deps, {}),
      SVC_SIDECAR_CONFIG: box.resolvePath(SANDBOX_PATHS.sidecarConfig),
    }),
  );
}

/** The environment every sandboxed program starts from (nothing of the session service's own). */
function baseEnv(deps: Pick<SpawnDeps, 'sandboxPath'>, extra: Record<string, string>): Record<string, string> {
  return { PATH: deps.sandboxPath, HOME: SANDBOX_PATHS.workspace, LANG: 'C.UTF-8', ...extra };
}

/** An absolute command inside the sandbox's own directories is mapped like every sandbox path. */
function resolveCommand(box: Sandbox, command: string): string {
  if (!command.startsWith('/')) return command;
  try {
    return box.resolvePath(command);
  } catch {
    return command;
  }
}
