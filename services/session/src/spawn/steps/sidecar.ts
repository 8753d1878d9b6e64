import { access, constants } from 'node:fs/promises';
import type { SidecarConfig } from '@svc/protocol';
import { baseEnv, resolveCommand, SANDBOX_PATHS, SANDBOX_TARGET } from '../sandbox-layout.js';
import { madeBefore, type SpawnContext, type SpawnStep } from '../spawn-step.js';
import { supervisedSidecar } from '../sidecar-supervisor.js';
import { egressPolicyOf, workBranchOf } from '../worker-policy.js';

/** 6.5.1: the svc-sidecar single executable built for the sandbox's architecture. */
const selectBinary: SpawnStep = {
  number: '6.5.1',
  name: 'sidecar.select_binary',
  async run(spawn) {
    const file = spawn.deps.sidecarBinaries[SANDBOX_TARGET];
    if (!file) throw new Error(`no svc-sidecar binary is configured for ${SANDBOX_TARGET}`);
    try {
      await access(file, constants.R_OK);
    } catch {
      throw new Error(
        `the svc-sidecar binary for ${SANDBOX_TARGET} is not at ${file}: build it with \`npx nx run @svc/sidecar:executable\` or set SVC_SIDECAR_BINARY`,
      );
    }
    spawn.made.sidecarBinary = file;
    return { target: SANDBOX_TARGET, binary: file };
  },
};

const uploadBinary: SpawnStep = {
  number: '6.5.2',
  name: 'sidecar.upload_binary',
  async run(spawn) {
    await madeBefore(spawn, 'sandbox').upload(SANDBOX_PATHS.sidecarBinary, { fromFile: madeBefore(spawn, 'sidecarBinary') }, 0o755);
    return { path: SANDBOX_PATHS.sidecarBinary };
  },
};

/** 6.5.3: the token the credential proxy left is there, and readable, as the sandbox sees it. */
const readToken: SpawnStep = {
  number: '6.5.3',
  name: 'sidecar.read_token',
  async run(spawn) {
    const box = madeBefore(spawn, 'sandbox');
    const read = await box.exec(['cat', box.resolvePath(SANDBOX_PATHS.token)]);
    if (read.code !== 0) throw new Error(`${SANDBOX_PATHS.token} cannot be read in the sandbox (cat exited with ${read.code})`);
    if (read.stdout.trim() !== spawn.request.token) throw new Error(`${SANDBOX_PATHS.token} does not hold this worker's token`);
    return { path: SANDBOX_PATHS.token };
  },
};

/** 6.5.4: the sidecar's config, from the template's `[sidecar]` and the request. */
const buildConfig: SpawnStep = {
  number: '6.5.4',
  name: 'sidecar.build_config',
  async run(spawn) {
    const built = sidecarConfigOf(spawn);
    spawn.made.sidecarConfig = built;
    return { adapter: built.adapter, autonomous: built.autonomous };
  },
};

/** JSON.stringify is the only encoding: no template value passes through a shell or a format string. */
const uploadConfig: SpawnStep = {
  number: '6.5.5',
  name: 'sidecar.upload_config',
  async run(spawn) {
    const config = madeBefore(spawn, 'sidecarConfig');
    await madeBefore(spawn, 'sandbox').upload(SANDBOX_PATHS.sidecarConfig, Buffer.from(JSON.stringify(config, null, 2)), 0o600);
    return { path: SANDBOX_PATHS.sidecarConfig };
  },
};

const start: SpawnStep = {
  number: '6.5.6',
  name: 'sidecar.start',
  async run(spawn) {
    const box = madeBefore(spawn, 'sandbox');
    // Under its supervisor: a sidecar that dies before its work is done is started again on its state.
    await box.startBackground(supervisedSidecar(box.resolvePath(SANDBOX_PATHS.sidecarBinary), box.resolvePath(SANDBOX_PATHS.sidecarState)), {
      ...baseEnv(box, spawn.deps.sandboxPath, {}),
      SVC_SIDECAR_CONFIG: box.resolvePath(SANDBOX_PATHS.sidecarConfig),
    });
  },
};

/** Step 6.5, exactly the spec's six sub-steps. */
export const sidecarSteps: readonly SpawnStep[] = [selectBinary, uploadBinary, readToken, buildConfig, uploadConfig, start];

function sidecarConfigOf(spawn: SpawnContext): SidecarConfig {
  const { deps, request } = spawn;
  const { template, body } = request;
  // These steps are in the pipeline only for a template with [sidecar].
  const sidecar = template.sidecar!;
  const box = madeBefore(spawn, 'sandbox');
  const prompt = body.prompt ?? template.agent.prompt;
  return {
    adapter: sidecar.adapter,
    worker_id: request.workerId,
    control_plane_url: deps.controlPlaneUrl,
    ...(box.controlPlaneSocket ? { control_plane_socket: box.controlPlaneSocket } : {}),
    ...(template.model ? { model_proxy: { apis: [template.model.api] } } : {}),
    egress_proxy: egressPolicyOf(template, body) !== undefined,
    ...(template.workspace && spawn.made.baseCommit
      ? {
          workspace: {
            repo: template.workspace.repo,
            branch: workBranchOf(template, spawn.ids.sessionId),
            base_commit: spawn.made.baseCommit,
            path: box.resolvePath(SANDBOX_PATHS.workspace),
          },
        }
      : {}),
    auth_token: request.token,
    auth_token_file: box.resolvePath(SANDBOX_PATHS.token),
    autonomous: body.overrides?.autonomous ?? sidecar.autonomous,
    conversation: template.session.mode === 'conversation',
    ...(template.session.mode === 'conversation' ? { idle_timeout_s: template.session.idle_timeout_s } : {}),
    permissions: {
      auto_approve: sidecar.auto_approve,
      deny: sidecar.deny,
      ask: sidecar.ask,
      ...(template.approvals.route.length > 0 ? { routed: template.approvals.route.map((route) => route.match) } : {}),
    },
    poll_interval_ms: sidecar.poll_interval_ms,
    agent: {
      command: resolveCommand(box, template.agent.command),
      args: template.agent.args,
      env: madeBefore(spawn, 'agentEnv'),
      ...(template.agent.cwd ? { cwd: box.resolvePath(template.agent.cwd) } : {}),
      ...(prompt !== undefined ? { prompt } : {}),
    },
    state_dir: box.resolvePath(SANDBOX_PATHS.sidecarState),
    decision_wait_ms: deps.decisionWaitMs,
    buffer_max_bytes: 64 * 1024 * 1024,
    // The agent's grace and then the sidecar's drain both fit in the sandbox's grace period.
    kill_grace_ms: Math.floor(deps.killGraceMs * 0.4),
  };
}
