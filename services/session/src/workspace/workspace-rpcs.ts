import type { Subscription } from '@nats-io/transport-node';
import { openFullPatches, serveRpc, type FullPatches, type KeptPatch, type NatsConnection } from '@svc/bus';
import {
  CodedError,
  type AccessRole,
  createChecker,
  isWorkspacePath,
  PullRequestRpc,
  subjects,
  WORKSPACE_FILE_LIMIT_BYTES,
  WorkspaceFileRpc,
  WorkspaceFullDiffRpc,
  WorkspacePushRpc,
  workspaceOfWorker,
  type AuditFacts,
  type CallerType,
  type PullRequestRecord,
  type PullRequestRpcType,
  type PushRecord,
  type WorkspaceFileAnswer,
  type WorkspaceFileRpcType,
  type WorkspaceFullDiffRpcType,
  type WorkspacePushRpcType,
} from '@svc/protocol';
import type { GitCredentials, Logger } from '@svc/service-kit';
import { recordAudit } from '../audit-facts.js';
import { checkRole } from '../session-access.js';
import type { Sandbox, SandboxProvider } from '../sandbox/provider.js';
import type { SessionStore } from '../session-store.js';
import { SANDBOX_PATHS } from '../spawn/sandbox-layout.js';
import type { WorkerRegistry } from '../worker-registry.js';
import { openPullRequest, type Forges } from './forges.js';
import { keepFullDiff } from './workspace-full-diff.js';
import { pushWork } from './workspace-push.js';

export interface WorkspaceRpcDeps {
  nc: NatsConnection;
  logger: Logger;
  store: SessionStore;
  registry: WorkerRegistry;
  provider: SandboxProvider;
  gitCredentials: GitCredentials;
  forges: Forges;
}

/**
 * A worker's session, workspace and sandbox, if `caller` may see it and do what `needed` allows
 * (docs/teams.md); anyone who may not see it is told it does not exist.
 */
async function workspaceOf(deps: WorkspaceRpcDeps, caller: CallerType, workerId: string, needed: AccessRole) {
  const row = await deps.store.byWorker(workerId);
  if (!row) throw new CodedError('worker_not_found', `worker ${workerId} does not exist`);
  checkRole(caller, row, needed, { kind: 'worker', id: workerId });
  const { workspace } = workspaceOfWorker(workerId, await deps.registry.get(workerId));
  return { row, workspace };
}

/** The sandbox, while its workspace is there; else `410 sandbox_gone` (its session deleted, or it ended and was cleared away). */
async function liveSandbox(deps: WorkspaceRpcDeps, row: Awaited<ReturnType<typeof workspaceOf>>['row'], workerId: string): Promise<Sandbox> {
  const gone = new CodedError('sandbox_gone', `worker ${workerId}'s sandbox is gone: its stored changes remain (GET /v1/workers/${workerId}/changes)`);
  if (!row.sandbox) throw gone;
  const sandbox = deps.provider.open(row.sandbox);
  const probe = await sandbox.exec(['/usr/bin/test', '-d', `${SANDBOX_PATHS.workspace}/.git`]).catch(() => undefined);
  if (probe?.code !== 0) throw gone;
  return sandbox;
}

/** A file of the workspace: within it once its links are followed, a regular file, at most `WORKSPACE_FILE_LIMIT_BYTES`. Read in the sandbox, so a link reaches nothing the agent could not. */
async function readWorkspaceFile(sandbox: Sandbox, relative: string): Promise<WorkspaceFileAnswer> {
  const notFound = new CodedError('file_not_found', `the workspace has no file ${relative}`);
  const real = await sandbox.exec(['/usr/bin/realpath', '-e', '--', `${SANDBOX_PATHS.workspace}/${relative}`]);
  const target = real.stdout.trim();
  if (real.code !== 0) throw notFound;
  if (!target.startsWith(`${SANDBOX_PATHS.workspace}/`)) throw new CodedError('invalid_request', `${relative} leads out of the workspace`);
  const stat = await sandbox.exec(['/usr/bin/stat', '-c', '%F %s', '--', target]);
  const [kind, size] = [stat.stdout.trim().split(' ').slice(0, -1).join(' '), Number(stat.stdout.trim().split(' ').pop())];
  if (stat.code !== 0 || kind !== 'regular file') throw notFound;
  if (size > WORKSPACE_FILE_LIMIT_BYTES)
    throw new CodedError(
      'payload_too_large',
      `${relative} is ${size} bytes; a file read this way may be at most ${WORKSPACE_FILE_LIMIT_BYTES} (see its part of GET …/changes/diff)`,
    );
  const read = await sandbox.exec(['/usr/bin/base64', '-w', '0', '--', target]);
  if (read.code !== 0) throw notFound;
  return { content_base64: read.stdout.trim(), bytes: size };
}

/** The workspace's operations on the bus (the gateway's `…/changes/push`, `…/changes/pull-request`, `…/files/…`): docs/workspace.md. */
export function serveWorkspaceRpcs(deps: WorkspaceRpcDeps): Subscription[] {
  const shared = { logger: deps.logger, queue: 'session' };
  /** What a person did with a worker's workspace, told to the audit trail in their name. */
  const audited = (
    request: { caller: CallerType; worker_id: string },
    sessionId: string,
    fact: Pick<AuditFacts, 'id' | 'at' | 'action'>,
    details: Record<string, unknown>,
  ) =>
    recordAudit(deps, {
      ...fact,
      actor: request.caller.sub,
      channel: request.caller.channel ?? 'api',
      session_id: sessionId,
      worker_id: request.worker_id,
      details,
    });
  const push = async (request: WorkspacePushRpcType): Promise<PushRecord> => {
    const { row, workspace } = await workspaceOf(deps, request.caller, request.worker_id, 'operator');
    const record = await pushWork(await liveSandbox(deps, row, request.worker_id), workspace, deps.gitCredentials, request);
    audited(
      request,
      row.session.id,
      { id: `workspace-pushed:${request.worker_id}:${record.commit}:${record.at}`, at: record.at, action: 'workspace_pushed' },
      {
        branch: record.branch,
        commit: record.commit,
        remote: record.remote,
      },
    );
    return record;
  };
  const pullRequest = async (request: PullRequestRpcType): Promise<PullRequestRecord> => {
    const { row, workspace } = await workspaceOf(deps, request.caller, request.worker_id, 'operator');
    const record = await openPullRequest(deps.forges, deps.gitCredentials, workspace, request);
    audited(
      request,
      row.session.id,
      { id: `pull-request:${request.worker_id}:${record.number}`, at: record.at, action: 'pull_request_opened' },
      {
        url: record.url,
        head: record.head,
        base: record.base,
      },
    );
    return record;
  };
  // Opened at the first whole diff asked for: a session service that serves none never opens it.
  let fullPatches: Promise<FullPatches> | undefined;
  const fullDiff = async (request: WorkspaceFullDiffRpcType): Promise<KeptPatch> => {
    if (request.path !== undefined && !isWorkspacePath(request.path))
      throw new CodedError('invalid_request', 'the path must stay inside the workspace (relative, without "..", "." or empty parts)');
    const { row } = await workspaceOf(deps, request.caller, request.worker_id, 'viewer');
    const sandbox = await liveSandbox(deps, row, request.worker_id);
    return keepFullDiff(sandbox, await (fullPatches ??= openFullPatches(deps.nc, deps.logger)), request);
  };
  const file = async (request: WorkspaceFileRpcType): Promise<WorkspaceFileAnswer> => {
    if (!isWorkspacePath(request.path))
      throw new CodedError('invalid_request', 'the path must stay inside the workspace (relative, without "..", "." or empty parts)');
    const { row } = await workspaceOf(deps, request.caller, request.worker_id, 'viewer');
    return readWorkspaceFile(await liveSandbox(deps, row, request.worker_id), request.path);
  };
  return [
    serveRpc(deps.nc, subjects.rpc.workspacePush, push, { ...shared, checker: createChecker(WorkspacePushRpc) }),
    serveRpc(deps.nc, subjects.rpc.pullRequest, pullRequest, { ...shared, checker: createChecker(PullRequestRpc) }),
    serveRpc(deps.nc, subjects.rpc.workspaceFile, file, { ...shared, checker: createChecker(WorkspaceFileRpc) }),
    serveRpc(deps.nc, subjects.rpc.workspaceFullDiff, fullDiff, { ...shared, checker: createChecker(WorkspaceFullDiffRpc) }),
  ];
}
