import { randomUUID } from 'node:crypto';
import Type from 'typebox';
import { createIncomingEventPublisher, requestJson } from '@svc/bus';
import {
  CodedError,
  componentSource,
  GIT_PUSH_TOOL,
  isEndedStatus,
  isWorkspacePath,
  parseToolRule,
  personSource,
  PullRequestBody,
  PullRequestRecordSchema,
  PushChangesBody,
  PushRecordSchema,
  subjects,
  SYSTEM_SUBTYPES,
  WorkerParams,
  workspaceOfWorker,
  type PersonChannel,
  type WorkerRecord,
  type PullRequestRecord,
  type PullRequestRpcType,
  type PushRecord,
  type WorkspaceFileAnswer,
  type WorkspaceFileRpcType,
  type WorkspacePushRpcType,
} from '@svc/protocol';
import { authorizeWorker } from '../auth/authorization.js';
import { channelOf } from './audit.js';
import { errorResponses, routePlugin } from './route-plugin.js';
import { callerOf } from './sessions.js';

/**
 * A person's push is their decision, but not past the template: a branch its rules deny
 * (`git_push(refs/heads/main)` in `deny`) is refused to people too.
 */
function refuseDeniedBranch(worker: WorkerRecord, branch: string | undefined): void {
  const rules = worker.workspace?.push_rules.deny ?? [];
  const ref = `refs/heads/${branch ?? worker.workspace?.branch ?? ''}`;
  const rule = rules.find((text) => parseToolRule(text).namesTool(GIT_PUSH_TOOL) && parseToolRule(text).matchesInput(ref));
  if (rule) throw new CodedError('forbidden', `the template denies pushes to ${ref} (its rule ${rule}), people's included`);
}

/** A push commits, bundles and pushes a repository: it may take a while. */
const PUSH_TIMEOUT_MS = 10 * 60_000;
const FORGE_TIMEOUT_MS = 60_000;

/**
 * What a person does with the workspace's changes (docs/workspace.md, "Out, by a person"):
 * push the work branch, open a pull request of it, read one of its files. The session service
 * does the work (it reaches the sandbox and holds the credentials); the gateway keeps the record
 * beside the changes and tells the history.
 */
export const workspaceActionRoutes = routePlugin('svc-workspace-action-routes', ['svc-bus', 'svc-worker-directory', 'svc-workspace-changes'], async (app) => {
  const publisher = createIncomingEventPublisher(app.bus, componentSource('workspace'));
  app.addHook('onClose', async () => publisher.close());

  /** The history's word of what a person did, in their name. */
  const tell = (workerId: string, source: ReturnType<typeof personSource>, message: string, details: Record<string, unknown>) =>
    publisher.publish(
      workerId,
      {
        type: 'system',
        uid: `workspace:${randomUUID()}`,
        ts: new Date().toISOString(),
        data: { level: 'info', subtype: SYSTEM_SUBTYPES.workspacePushed, message, details },
      },
      { source },
    );

  app.post(
    '/v1/workers/:id/changes/push',
    {
      config: { auth: 'user' },
      schema: {
        tags: ['workspace'],
        summary: "Push the worker's work branch",
        description:
          "Commits what is uncommitted in the workspace (in the caller's name, the agent's hooks skipped) and pushes the work branch (or `branch`) to the repository with the control plane's credential. Audited. `410 sandbox_gone` once the sandbox is gone; `409 conflict` when git refuses (the remote moved on), with git's words.",
        params: WorkerParams,
        body: PushChangesBody,
        response: { 200: PushRecordSchema, ...errorResponses(400, 401, 404, 409, 410, 503, 504) },
      },
    },
    async (request) => {
      const workerId = request.params.id;
      const worker = await authorizeWorker(request, app.workers, workerId, 'operator');
      refuseDeniedBranch(worker, request.body.branch);
      const principal = request.principal!;
      const caller = callerOf(request);
      const author =
        principal.kind === 'user' ? { name: principal.name ?? principal.sub, email: principal.email ?? `${principal.sub}@users.svc.invalid` } : undefined;
      const rpc: WorkspacePushRpcType = { caller, worker_id: workerId, author: author!, ...request.body };
      const record = await requestJson<PushRecord>(app.bus, subjects.rpc.workspacePush, rpc, { requestId: request.id, timeoutMs: PUSH_TIMEOUT_MS });
      await app.workspaceChanges.recordPush(workerId, record);
      await tell(
        workerId,
        personSource(channelOf(request) as PersonChannel, caller.sub),
        `${caller.sub} pushed ${record.branch} (${record.commit.slice(0, 12)})`,
        { ...record },
      );
      return record;
    },
  );

  app.post(
    '/v1/workers/:id/changes/pull-request',
    {
      config: { auth: 'user' },
      schema: {
        tags: ['workspace'],
        summary: 'Open a pull request of the pushed work branch',
        description:
          "Through the repository's forge (GitHub's REST API; `SVC_GIT_FORGES`), with the control plane's token: head the branch last pushed (`POST …/changes/push` first: else `409 conflict`), base `base` or the repository's default branch. Its URL is kept with the changes and shown on the session. Audited.",
        params: WorkerParams,
        body: PullRequestBody,
        response: { 200: PullRequestRecordSchema, ...errorResponses(400, 401, 404, 409, 502, 503, 504) },
      },
    },
    async (request) => {
      const workerId = request.params.id;
      await authorizeWorker(request, app.workers, workerId, 'operator');
      const pushed = (await app.workspaceChanges.get(workerId))?.pushed;
      if (!pushed) throw new CodedError('conflict', `worker ${workerId}'s work has not been pushed: POST /v1/workers/${workerId}/changes/push first`);
      const caller = callerOf(request);
      const rpc: PullRequestRpcType = { caller, worker_id: workerId, head: pushed.branch, ...request.body };
      const record = await requestJson<PullRequestRecord>(app.bus, subjects.rpc.pullRequest, rpc, { requestId: request.id, timeoutMs: FORGE_TIMEOUT_MS });
      await app.workspaceChanges.recordPullRequest(workerId, record);
      await tell(workerId, personSource(channelOf(request) as PersonChannel, caller.sub), `${caller.sub} opened pull request ${record.url}`, {
        pull_request_url: record.url,
        ...record,
      });
      return record;
    },
  );
});

/** `GET /v1/workers/{id}/files/*`: a file of the workspace, read in the sandbox by the session service, while it lives. */
export const workspaceFileRoutes = routePlugin('svc-workspace-file-routes', ['svc-bus', 'svc-worker-directory'], async (app) => {
  app.get(
    '/v1/workers/:id/files/*',
    {
      config: { auth: 'user' },
      schema: {
        tags: ['workspace'],
        summary: 'A file of the workspace',
        description:
          'Its bytes (`application/octet-stream`), while the sandbox lives: `410 sandbox_gone` after (the stored changes remain). A path that leaves the workspace is `400`; a file past `WORKSPACE_FILE_LIMIT_BYTES` `413`.',
        params: Type.Object({ id: WorkerParams.properties.id, '*': Type.String() }),
        response: { 200: Type.Unsafe<Uint8Array>({ type: 'string', format: 'binary' }), ...errorResponses(400, 401, 404, 410, 413, 503, 504) },
      },
    },
    async (request, reply) => {
      const workerId = request.params.id;
      const filePath = request.params['*'];
      if (!isWorkspacePath(filePath))
        throw new CodedError('invalid_request', `${JSON.stringify(filePath)} is not a path inside the workspace (relative, without "..", "." or empty parts)`);
      await authorizeWorker(request, app.workers, workerId);
      const rpc: WorkspaceFileRpcType = { caller: callerOf(request), worker_id: workerId, path: filePath };
      const file = await requestJson<WorkspaceFileAnswer>(app.bus, subjects.rpc.workspaceFile, rpc, { requestId: request.id });
      return reply
        .header('content-type', 'application/octet-stream')
        .header('x-content-type-options', 'nosniff')
        .header('cache-control', 'no-store')
        .send(Buffer.from(file.content_base64, 'base64'));
    },
  );
});

/** `POST /v1/workers/{id}/changes/refresh`: the sidecar reports the workspace's changes now (docs/workspace.md, "Changes"). */
export const changesRequestRoutes = routePlugin('svc-changes-request-routes', ['svc-bus', 'svc-worker-directory'], async (app) => {
  const publisher = createIncomingEventPublisher(app.bus, componentSource('workspace'));
  app.addHook('onClose', async () => publisher.close());
  app.post(
    '/v1/workers/:id/changes/refresh',
    {
      config: { auth: 'user' },
      schema: {
        tags: ['workspace'],
        summary: "Ask for the workspace's changes now",
        description:
          "The sidecar reports the workspace's changes at once instead of at the end of the turn: `202`, and `GET …/changes` shows the new report a moment later (its `reported_at`). `409 worker_ended` once the worker has ended (its last report stays).",
        params: WorkerParams,
        response: { 202: Type.Object({ requested_at: Type.String() }), ...errorResponses(401, 404, 409, 503) },
      },
    },
    async (request, reply) => {
      const workerId = request.params.id;
      const worker = workspaceOfWorker(workerId, await authorizeWorker(request, app.workers, workerId, 'operator'));
      if (isEndedStatus(worker.status))
        throw new CodedError('worker_ended', `worker ${workerId} is ${worker.status}: its sidecar reports no more; its last report stays`);
      const caller = callerOf(request);
      const requestedAt = new Date().toISOString();
      await publisher.publish(
        workerId,
        {
          type: 'system',
          uid: `workspace:${randomUUID()}`,
          ts: requestedAt,
          data: { level: 'info', subtype: SYSTEM_SUBTYPES.changesRequested, message: `${caller.sub} asked for the workspace's changes` },
        },
        { source: personSource(channelOf(request) as PersonChannel, caller.sub) },
      );
      return reply.code(202).send({ requested_at: requestedAt });
    },
  );
});
