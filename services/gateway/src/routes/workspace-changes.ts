import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import Type from 'typebox';
import { createIncomingEventPublisher, requestJson, type KeptPatch } from '@svc/bus';
import {
  ChangesDiffQuery,
  ChangesReportSchema,
  CodedError,
  componentSource,
  isWorkspacePath,
  subjects,
  SYSTEM_SUBTYPES,
  WORKSPACE_LISTED_FILES,
  WORKSPACE_PATCH_LIMIT_BYTES,
  WorkerParams,
  workspaceOfWorker,
  WorkspaceChangesSchema,
  type ChangesReport,
  type IncomingEvent,
  type WorkspaceFullDiffRpcType,
  type WorkspaceChanges,
} from '@svc/protocol';
import { authorizeWorker } from '../auth/authorization.js';
import { callerOf } from './sessions.js';
import { errorResponses, routePlugin } from './route-plugin.js';

/** Reading a whole diff in the sandbox may take a while (a large repository). */
const FULL_DIFF_TIMEOUT_MS = 5 * 60_000;

/** The files a `workspace_changes` event lists (the report holds them all). */
const FILES_IN_EVENT = 50;
/** A report's body: the patch, its files, their names (a file's path may be long). */
const REPORT_BODY_LIMIT_BYTES = WORKSPACE_PATCH_LIMIT_BYTES + WORKSPACE_LISTED_FILES * 2048 + 64 * 1024;

/** The part of a unified diff about `path` (its `diff --git a/… b/…` section), or empty when the patch does not touch it. */
function diffOfPath(patch: string, path: string): string {
  const sections = patch.split(/(?=^diff --git )/m);
  return sections
    .filter((section) => {
      const header = section.slice(0, section.indexOf('\n') >>> 0);
      return header.startsWith(`diff --git a/${path} b/`) || header.endsWith(` b/${path}`);
    })
    .join('');
}

/** A report as kept: its sums, the repository, when. */
function changesOfReport(workerId: string, repo: string, report: ChangesReport): Omit<WorkspaceChanges, 'pushed' | 'pull_request'> {
  return {
    worker_id: workerId,
    repo,
    base_commit: report.base_commit,
    head_commit: report.head_commit,
    branch: report.branch,
    files: report.files,
    files_truncated: report.files_truncated ?? false,
    additions: report.files.reduce((sum, file) => sum + file.additions, 0),
    deletions: report.files.reduce((sum, file) => sum + file.deletions, 0),
    patch_bytes: report.patch_bytes,
    truncated: report.truncated,
    reported_at: new Date().toISOString(),
  };
}

/** The history's `workspace_changes` event of a report: its sums and its first files. */
function changesEvent(changes: Omit<WorkspaceChanges, 'pushed' | 'pull_request'>): IncomingEvent {
  return {
    type: 'system',
    uid: `workspace:${randomUUID()}`,
    ts: changes.reported_at,
    data: {
      level: 'info',
      subtype: SYSTEM_SUBTYPES.workspaceChanges,
      message: `${changes.files.length}${changes.files_truncated ? '+' : ''} file(s) changed (+${changes.additions} −${changes.deletions}), as the sidecar reported`,
      details: {
        base_commit: changes.base_commit,
        head_commit: changes.head_commit,
        branch: changes.branch,
        files: changes.files.slice(0, FILES_IN_EVENT),
        files_count: changes.files.length,
        additions: changes.additions,
        deletions: changes.deletions,
        truncated: changes.truncated,
      },
    },
  };
}

/** A failure of the store: 503, nothing lost (the sidecar reports again at the next turn). */
function storeUnavailable(err: unknown): never {
  throw new CodedError('unavailable', `the workspace's changes could not be read or kept (${(err as Error).message}); try again`, undefined, { cause: err });
}

/**
 * The workspace's changes (docs/workspace.md, "Changes"): the sidecar reports them after each
 * turn (`POST …/changes`, its worker's token), the gateway keeps the report beside the history,
 * and the worker's people read them, even once the sandbox is gone (`GET …/changes`,
 * `GET …/changes/diff`).
 */
export const workspaceChangeRoutes = routePlugin('svc-workspace-change-routes', ['svc-bus', 'svc-worker-directory', 'svc-workspace-changes'], async (app) => {
  const publisher = createIncomingEventPublisher(app.bus, componentSource('workspace'));
  app.addHook('onClose', async () => publisher.close());

  app.post(
    '/v1/workers/:id/changes',
    {
      bodyLimit: REPORT_BODY_LIMIT_BYTES,
      config: { auth: 'worker' },
      schema: {
        tags: ['workspace'],
        summary: "The sidecar reports its workspace's changes",
        description:
          "The workspace's changes against its base commit, untracked files included, after a turn. Kept beside the history; the history gets a `workspace_changes` event.",
        params: WorkerParams,
        body: ChangesReportSchema,
        response: { 204: Type.Null(), ...errorResponses(400, 401, 403, 404, 413, 503) },
      },
    },
    async (request, reply) => {
      const workerId = request.params.id;
      const worker = workspaceOfWorker(workerId, await authorizeWorker(request, app.workers, workerId));
      const changes = changesOfReport(workerId, worker.workspace.repo, request.body);
      await app.workspaceChanges.put(changes, request.body.patch).catch(storeUnavailable);
      await publisher.publish(workerId, changesEvent(changes));
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/v1/workers/:id/changes',
    {
      config: { auth: 'user' },
      schema: {
        tags: ['workspace'],
        summary: "The workspace's changes",
        description:
          'The files changed against the base commit, with their status and line counts, the base and head commits, the branch, and the push and pull request people made — as last reported, also once the sandbox is gone. 404 `changes_not_found` before the first report; `no_repository` for a worker without one.',
        params: WorkerParams,
        response: { 200: WorkspaceChangesSchema, ...errorResponses(401, 404, 503) },
      },
    },
    async (request) => {
      const workerId = request.params.id;
      workspaceOfWorker(workerId, await authorizeWorker(request, app.workers, workerId));
      const changes = await app.workspaceChanges.get(workerId).catch(storeUnavailable);
      if (!changes) throw new CodedError('changes_not_found', `worker ${workerId} has not reported its workspace's changes yet (it does after each turn)`);
      return changes;
    },
  );

  app.get(
    '/v1/workers/:id/changes/diff',
    {
      config: { auth: 'user' },
      schema: {
        tags: ['workspace'],
        summary: "The workspace's changes as a unified diff",
        description:
          "The patch of the last report (`git diff` of the base commit against the working tree, untracked files included), or with `?path=` the part about one file. A patch over the stored bound is cut at a file's start: `X-Svc-Patch-Truncated: true` and `X-Svc-Patch-Bytes` (the whole one's size) say so. `?full=true`: the whole diff read now in the sandbox, however large (while the sandbox lives: `410 sandbox_gone` after).",
        params: WorkerParams,
        querystring: ChangesDiffQuery,
        response: {
          200: Type.Unsafe<string | Readable>({ type: 'string', description: 'A unified diff (text/x-diff).' }),
          ...errorResponses(400, 401, 404, 409, 410, 413, 503, 504),
        },
      },
    },
    async (request, reply) => {
      const workerId = request.params.id;
      const { path } = request.query;
      if (path !== undefined && !isWorkspacePath(path))
        throw new CodedError('invalid_request', '/querystring/path must be a path inside the workspace (relative, without "..", "." or empty parts)');
      workspaceOfWorker(workerId, await authorizeWorker(request, app.workers, workerId));
      const [changes, patch] = await Promise.all([app.workspaceChanges.get(workerId), app.workspaceChanges.patch(workerId)]).catch(storeUnavailable);
      if (!changes || patch === undefined)
        throw new CodedError('changes_not_found', `worker ${workerId} has no stored changes (none reported yet, or older than kept)`);
      if (request.query.full) {
        const rpc: WorkspaceFullDiffRpcType = { caller: callerOf(request), worker_id: workerId, base_commit: changes.base_commit, ...(path ? { path } : {}) };
        const kept = await requestJson<KeptPatch>(app.bus, subjects.rpc.workspaceFullDiff, rpc, { requestId: request.id, timeoutMs: FULL_DIFF_TIMEOUT_MS });
        const content = await app.fullPatches.read(kept.object).catch(storeUnavailable);
        if (!content) throw new CodedError('unavailable', 'the whole diff was read but could not be found again: try again');
        return reply
          .header('content-type', 'text/x-diff; charset=utf-8')
          .header('x-svc-patch-truncated', 'false')
          .header('x-svc-patch-bytes', String(kept.bytes))
          .send(Readable.fromWeb(content as WebReadableStream<Uint8Array>));
      }
      return reply
        .header('content-type', 'text/x-diff; charset=utf-8')
        .header('x-svc-patch-truncated', String(changes.truncated))
        .header('x-svc-patch-bytes', String(changes.patch_bytes))
        .send(path === undefined ? patch : diffOfPath(patch, path));
    },
  );
});
