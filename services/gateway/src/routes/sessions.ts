import type { FastifyInstance, FastifyRequest } from 'fastify';
import { requestJson } from '@svc/bus';
import {
  CodedError,
  CreateSessionBody,
  ListSessionsQuery,
  ListSessionsResponse,
  ListTemplatesResponse,
  PutSessionAccessBody,
  SessionParams,
  SessionSchema,
  subjects,
  type CreateSessionRpcType,
  type ListResponseOf,
  type ListSessionsRpcType,
  type ListTemplatesRpcType,
  type Session,
  type TemplateSummary,
  type SessionRpcType,
  type SessionAccessRpcType,
  type CallerType,
} from '@svc/protocol';
import { channelOf } from './audit.js';
import { errorResponses, routePlugin } from './route-plugin.js';

export const userErrors = errorResponses(400, 401, 403, 404, 429, 503, 504);

/** Deleting waits for the sandbox's programs to stop (their grace period), so it may take a while. */
const DELETE_TIMEOUT_MS = 60_000;
/** The person calling (a worker token may not manage sessions). */
export function callerOf(request: FastifyRequest): CallerType {
  const principal = request.principal;
  if (principal?.kind !== 'user') throw new CodedError('forbidden', 'sessions are for people (a user token), not for workers');
  return { sub: principal.sub, groups: [...principal.groups], admin: principal.admin, channel: channelOf(request) };
}

/** A session with its repository (its worker's record) and how much the work changed (its last report): the sessions page shows them. */
async function sessionWithWorkspace(app: Pick<FastifyInstance, 'workers' | 'workspaceChanges'>, session: Session): Promise<Session> {
  const workspace = (app.workers.known(session.worker_id) ?? (await app.workers.get(session.worker_id)))?.workspace;
  if (!workspace) return session;
  // What was reported is added when it can be read: a session list does not fail for it.
  const changes = await app.workspaceChanges.get(session.worker_id).catch(() => undefined);
  return {
    ...session,
    workspace: {
      repo: workspace.repo,
      branch: changes?.pushed?.branch ?? workspace.branch,
      ...(changes ? { files_changed: changes.files.length, additions: changes.additions, deletions: changes.deletions } : {}),
      ...(changes?.pull_request ? { pull_request_url: changes.pull_request.url } : {}),
    },
  };
}

/**
 * The session API: spawn (`POST`), list, get and delete (a session's logs: session-logs.ts). The
 * session service does the work; a user sees only their own sessions (an admin sees all), and
 * anyone else's is `404 session_not_found`.
 */
export const sessionRoutes = routePlugin('svc-session-routes', ['svc-bus', 'svc-worker-directory', 'svc-workspace-changes'], async (app) => {
  const nc = app.bus;

  const withWorkspace = (session: Session) => sessionWithWorkspace(app, session);

  app.post(
    '/v1/sessions',
    {
      schema: {
        tags: ['sessions'],
        summary: 'Spawn a session (a worker in a new sandbox) from a template',
        description:
          'Answered 201 as soon as the worker exists (status `pending`); the spawn pipeline continues in the background and the session becomes `running` (or `failed` with the step and reason). 404 `template_not_found`; 400 `invalid_template` naming the file and key.',
        body: CreateSessionBody,
        response: { 201: SessionSchema, ...userErrors },
      },
    },
    async (request, reply) => {
      const rpc: CreateSessionRpcType = { caller: callerOf(request), body: request.body };
      const session = await requestJson<Session>(nc, subjects.rpc.createSession, rpc, { requestId: request.id });
      return reply.code(201).send(session);
    },
  );

  app.get(
    '/v1/sessions',
    {
      schema: {
        tags: ['sessions'],
        summary: 'List your sessions, newest first',
        description: "`total` counts every session that matches `status`. An admin sees everyone's.",
        querystring: ListSessionsQuery,
        response: { 200: ListSessionsResponse, ...userErrors },
      },
    },
    async (request) => {
      const rpc: ListSessionsRpcType = {
        caller: callerOf(request),
        limit: request.query.limit,
        offset: request.query.offset,
        ...(request.query.status ? { status: request.query.status } : {}),
      };
      const page = await requestJson<ListResponseOf<Session>>(nc, subjects.rpc.listSessions, rpc, { requestId: request.id, retries: 1 });
      return { ...page, items: await Promise.all(page.items.map(withWorkspace)) };
    },
  );

  app.get(
    '/v1/templates',
    {
      schema: {
        tags: ['sessions'],
        summary: 'List the templates a session can be started from',
        description:
          "By name: the configured templates directory's first, then the built-in ones it does not shadow. Read at each call, so an edited file shows at once; a broken file is listed with its `problem` (a session from it would be refused with that message).",
        response: { 200: ListTemplatesResponse, ...userErrors },
      },
    },
    async (request) => {
      const rpc: ListTemplatesRpcType = { caller: callerOf(request) };
      return requestJson<ListResponseOf<TemplateSummary>>(nc, subjects.rpc.listTemplates, rpc, { requestId: request.id, retries: 1 });
    },
  );

  app.get(
    '/v1/sessions/:id',
    {
      schema: { tags: ['sessions'], summary: 'One session', params: SessionParams, response: { 200: SessionSchema, ...userErrors } },
    },
    async (request) => {
      const rpc: SessionRpcType = { caller: callerOf(request), session_id: request.params.id };
      return withWorkspace(await requestJson<Session>(nc, subjects.rpc.getSession, rpc, { requestId: request.id, retries: 1 }));
    },
  );

  app.delete(
    '/v1/sessions/:id',
    {
      schema: {
        tags: ['sessions'],
        summary: 'Stop a session: the agent stops, the sandbox goes, the worker token is revoked',
        description: 'Status `stopped` (a session that had already ended keeps its status). Deleting again is harmless and answers the same.',
        params: SessionParams,
        response: { 200: SessionSchema, ...userErrors },
      },
    },
    async (request) => {
      const rpc: SessionRpcType = { caller: callerOf(request), session_id: request.params.id };
      return requestJson<Session>(nc, subjects.rpc.deleteSession, rpc, { requestId: request.id, timeoutMs: DELETE_TIMEOUT_MS });
    },
  );
});

/** `PUT /v1/sessions/{id}/access`: a session's access list, its owner's to change (docs/teams.md). */
export const sessionAccessRoutes = routePlugin('svc-session-access-routes', ['svc-bus', 'svc-worker-directory', 'svc-workspace-changes'], async (app) => {
  const nc = app.bus;
  const withWorkspace = (session: Session) => sessionWithWorkspace(app, session);
  app.put(
    '/v1/sessions/:id/access',
    {
      schema: {
        tags: ['sessions'],
        summary: "Replace a session's access list: who besides its owner may see or act on it, and as what",
        description:
          'Roles `viewer`, `approver`, `operator`, `admin` (docs/teams.md); principals `user:<sub>` or `group:<name>`. The owner and admins may; anyone else with a role gets `403 role_required`. Every gateway applies the new list within a moment; audited as `access_changed`.',
        params: SessionParams,
        body: PutSessionAccessBody,
        response: { 200: SessionSchema, ...userErrors },
      },
    },
    async (request) => {
      const rpc: SessionAccessRpcType = { caller: callerOf(request), session_id: request.params.id, access: request.body.access };
      return withWorkspace(await requestJson<Session>(nc, subjects.rpc.setSessionAccess, rpc, { requestId: request.id }));
    },
  );
});
