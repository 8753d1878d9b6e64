import Type, { type Static } from 'typebox';
import { AUDIT_CHANNELS } from './audit.js';
import { EVENT_TYPES } from './events.js';
import { StoredEventSchema } from './envelope.js';
import { EVENT_LIST_LIMIT, EventBeforeId, LIST_LIMIT } from './lists.js';
import { EventId, SessionId, Timestamp, WorkerId } from './primitives.js';
import { EgressPolicySchema } from './egress.js';
import { PullRequestBody, PushChangesBody, WorkerWorkspaceSchema } from './workspace.js';
import { ModelAccessSchema } from './model-proxy.js';
import { EventSourceSchema } from './provenance.js';
import { CreateSessionBody, DecisionPolicySchema, SessionModeSchema, WorkerStatusSchema } from './sessions-api.js';
import { AccessListSchema } from './access.js';
import { ApprovalRoutesSchema } from './approvals.js';

/** What the gateway publishes to `svc.events.incoming.<partition>.<worker>` for each event. */
const IncomingEventMessage = Type.Object(
  {
    worker_id: WorkerId,
    event: Type.Unknown({ description: 'An incoming event, validated by the gateway.' }),
    received_at: Timestamp,
    /** Who wrote it, set by the publisher from the authenticated principal; none (an older publisher's message): the worker. */
    source: Type.Optional(EventSourceSchema),
  },
  { additionalProperties: false },
);
export type IncomingEventMessageType = Static<typeof IncomingEventMessage>;

/**
 * What the gateway publishes to `svc.events.incoming.<partition>.batch` (coalescing): the
 * events of concurrent POSTs bound for one partition, of any of its workers, gathered for a
 * moment and sent as one JetStream message, in the order they were received. (One event alone
 * goes as an `IncomingEventMessage` on its worker's subject.)
 * @public
 */
export const IncomingEventBatchMessage = Type.Object({ events: Type.Array(IncomingEventMessage, { minItems: 1 }) }, { additionalProperties: false });
export type IncomingEventBatchMessageType = Static<typeof IncomingEventBatchMessage>;

/** Any message of `svc.events.incoming.<partition>.*`. */
export type IncomingMessageType = IncomingEventMessageType | IncomingEventBatchMessageType;

/**
 * What `svc.events.stored.<worker>` carries: the events of one worker that one commit stored,
 * in id order (one message per commit, not per event: a busy worker's events cost one bus
 * message per batch). Its JetStream message id is `storedBatchMessageId`. A batch may repeat
 * events already announced (after a crash between commit and acknowledgement): subscribers go
 * by `id` and skip what they have.
 * @public
 */
export const StoredEventBatch = Type.Object({ worker_id: WorkerId, events: Type.Array(StoredEventSchema, { minItems: 1 }) }, { additionalProperties: false });
export type StoredEventBatchType = Static<typeof StoredEventBatch>;

/** The JetStream message id of a stored-event batch: `<worker>:<first id>-<last id>`. */
export function storedBatchMessageId(batch: StoredEventBatchType): string {
  return `${batch.worker_id}:${batch.events[0]!.id}-${batch.events.at(-1)!.id}`;
}

/** `svc.rpc.events.list`: a page of a worker's stored events. */
export const ListEventsRequest = Type.Object(
  {
    worker_id: WorkerId,
    after_id: EventId,
    /** With it, the page is the `limit` events just before it (and after `after_id`), in id order. */
    before_id: Type.Optional(EventBeforeId),
    limit: Type.Integer({ minimum: 1, maximum: EVENT_LIST_LIMIT.max }),
    types: Type.Optional(Type.Array(Type.Enum(EVENT_TYPES))),
    /** Only what the sidecar hands to the agent: decisions, people's messages and interrupts (`types` then unused). */
    agent_input: Type.Optional(Type.Boolean()),
    /**
     * Also answer `last_id`, the worker's highest id when `total` was counted, read before the
     * page: every event up to it is in the page or before the cursor. (A long poll uses it to
     * tell, from the announced ids that follow it, that it missed none.)
     */
    with_last_id: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type ListEventsRequestType = Static<typeof ListEventsRequest>;

/**
 * `svc.rpc.events.purge`: removes every stored event of an ended worker (its retention is over,
 * docs/event-ingest.md). Its ids are not handed out again: the worker's head stays.
 */
export const PurgeEventsRequest = Type.Object({ worker_id: WorkerId }, { additionalProperties: false });
export type PurgeEventsRequestType = Static<typeof PurgeEventsRequest>;
/**
 * What a purge removed.
 * @public
 */
export const PurgeEventsResult = Type.Object({ deleted: Type.Integer({ minimum: 0 }) }, { additionalProperties: false });
export type PurgeEventsResultType = Static<typeof PurgeEventsResult>;

/**
 * The answer to `svc.rpc.events.list`: the page, `total` (the worker's stored events of the asked types) and, when asked, `last_id`.
 * @public
 */
export const ListEventsResult = Type.Object({ items: Type.Array(StoredEventSchema), total: Type.Integer({ minimum: 0 }), last_id: Type.Optional(EventId) });
export type ListEventsResultType = Static<typeof ListEventsResult>;

/** `svc.rpc.session.worker.create`: register a worker and make its token (the token is returned once). */
export const CreateWorkerRequest = Type.Object(
  {
    owner: Type.String({ minLength: 1, maxLength: 256 }),
    access: Type.Optional(AccessListSchema),
    approvals: Type.Optional(ApprovalRoutesSchema),
    template: Type.Optional(Type.String({ maxLength: 64 })),
    teams: Type.Optional(Type.Array(Type.String({ maxLength: 256 }), { maxItems: 256 })),
    worker_id: Type.Optional(WorkerId),
    decision_policy: Type.Optional(DecisionPolicySchema),
    model: Type.Optional(ModelAccessSchema),
    egress: Type.Optional(EgressPolicySchema),
    workspace: Type.Optional(WorkerWorkspaceSchema),
    mode: Type.Optional(SessionModeSchema),
    keep_sandbox_s: Type.Optional(Type.Integer({ minimum: 1 })),
  },
  { additionalProperties: false },
);
export type CreateWorkerRequestType = Static<typeof CreateWorkerRequest>;
/**
 * The registered worker and its token.
 * @public
 */
export const CreateWorkerResult = Type.Object({ worker_id: WorkerId, token: Type.String() });
export type CreateWorkerResultType = Static<typeof CreateWorkerResult>;

/** `svc.rpc.session.worker.status`: move a worker to another status. */
export const SetWorkerStatusRequest = Type.Object({ worker_id: WorkerId, status: WorkerStatusSchema }, { additionalProperties: false });
export type SetWorkerStatusRequestType = Static<typeof SetWorkerStatusRequest>;

/** `svc.rpc.session.worker.get`. */
export const GetWorkerRequest = Type.Object({ worker_id: WorkerId }, { additionalProperties: false });

/**
 * The caller of a session RPC (the person the gateway authenticated; not a viewer of a stream): a user's `sub`, whether the admin claim lets them see everyone's
 * sessions, and the channel a person came through (the audit trail records it).
 */
const Caller = Type.Object(
  {
    sub: Type.String({ minLength: 1, maxLength: 256 }),
    /** The groups the identity provider's group claim names (docs/teams.md). */
    groups: Type.Array(Type.String({ maxLength: 256 }), { maxItems: 256 }),
    admin: Type.Boolean(),
    channel: Type.Optional(Type.Enum(AUDIT_CHANNELS)),
  },
  { additionalProperties: false },
);
export type CallerType = Static<typeof Caller>;

/** `svc.rpc.session.create`: spawn a session for `caller` (its owner). Answered once the spawn has started (status `pending`/`provisioning`). */
export const CreateSessionRpc = Type.Object({ caller: Caller, body: CreateSessionBody }, { additionalProperties: false });
export type CreateSessionRpcType = Static<typeof CreateSessionRpc>;

/** `svc.rpc.session.get` and `svc.rpc.session.delete`: one session, if `caller` may see it (else `404 session_not_found`). */
export const SessionRpc = Type.Object({ caller: Caller, session_id: SessionId }, { additionalProperties: false });
export type SessionRpcType = Static<typeof SessionRpc>;

/** `svc.rpc.session.access`: replace a session's access list (its owner's or an admin's to do: docs/teams.md). */
export const SessionAccessRpc = Type.Object({ caller: Caller, session_id: SessionId, access: AccessListSchema }, { additionalProperties: false });
export type SessionAccessRpcType = Static<typeof SessionAccessRpc>;

/** `svc.rpc.session.list`: the sessions `caller` may see, newest first. */
export const ListSessionsRpc = Type.Object(
  {
    caller: Caller,
    limit: Type.Integer({ minimum: 1, maximum: LIST_LIMIT.max }),
    offset: Type.Integer({ minimum: 0 }),
    status: Type.Optional(WorkerStatusSchema),
  },
  { additionalProperties: false },
);
export type ListSessionsRpcType = Static<typeof ListSessionsRpc>;

/** `svc.rpc.session.templates`: the templates a session can name (the same for every user). */
export const ListTemplatesRpc = Type.Object({ caller: Caller }, { additionalProperties: false });
export type ListTemplatesRpcType = Static<typeof ListTemplatesRpc>;

/**
 * `svc.rpc.session.logs`: follow a session's sandbox logs. The session service sends the last
 * `tail` lines and then each new one to `deliver_to` as `SessionLogMessage`s, for as long as the
 * follower sends `svc.session.logs.keepalive.<follow_id>` at least every 30 s, until
 * `svc.session.logs.stop.<follow_id>`.
 */
export const FollowLogsRpc = Type.Object(
  {
    caller: Caller,
    session_id: SessionId,
    tail: Type.Integer({ minimum: 0, maximum: 10_000 }),
    deliver_to: Type.String({ minLength: 1 }),
    follow_id: Type.String({ pattern: '^[A-Za-z0-9_-]{1,64}$' }),
  },
  { additionalProperties: false },
);
export type FollowLogsRpcType = Static<typeof FollowLogsRpc>;

/**
 * What a log follower receives, and the frames of `WS /v1/sessions/{id}/logs` (forwarded as they
 * are): lines in order, then `end` once the sandbox's programs have ended (or the follow stopped).
 * @public
 */
export const SessionLogMessage = Type.Union([
  Type.Object({ kind: Type.Literal('lines'), lines: Type.Array(Type.String()) }, { additionalProperties: false }),
  Type.Object({ kind: Type.Literal('end'), reason: Type.String() }, { additionalProperties: false }),
]);
export type SessionLogMessageType = Static<typeof SessionLogMessage>;

/** A log follower stops hearing lines when it sends no keepalive for this long. */
export const LOG_FOLLOW_KEEPALIVE_TIMEOUT_MS = 30_000;

/** The person a commit of theirs is made in the name of (`POST …/changes/push`): their token's name and email, else their `sub`. */
const CommitAuthor = Type.Object(
  { name: Type.String({ minLength: 1, maxLength: 256 }), email: Type.String({ minLength: 1, maxLength: 256 }) },
  { additionalProperties: false },
);

/** `svc.rpc.session.workspace.push`: commit what is uncommitted in the worker's workspace and push its work branch (docs/workspace.md). */
export const WorkspacePushRpc = Type.Object(
  { caller: Caller, worker_id: WorkerId, author: CommitAuthor, ...PushChangesBody.properties },
  { additionalProperties: false },
);
export type WorkspacePushRpcType = Static<typeof WorkspacePushRpc>;

/** `svc.rpc.session.workspace.pull_request`: open a pull request of the pushed branch `head` through the repository's forge. */
export const PullRequestRpc = Type.Object(
  { caller: Caller, worker_id: WorkerId, head: Type.String({ minLength: 1, maxLength: 255 }), ...PullRequestBody.properties },
  { additionalProperties: false },
);
export type PullRequestRpcType = Static<typeof PullRequestRpc>;

/** `svc.rpc.session.workspace.file`: one file of the worker's workspace, while its sandbox lives. */
export const WorkspaceFileRpc = Type.Object(
  { caller: Caller, worker_id: WorkerId, path: Type.String({ minLength: 1, maxLength: 4096 }) },
  { additionalProperties: false },
);
export type WorkspaceFileRpcType = Static<typeof WorkspaceFileRpc>;

/** A workspace file's content (base64: a file may be any bytes), at most `WORKSPACE_FILE_LIMIT_BYTES`. */
export interface WorkspaceFileAnswer {
  content_base64: string;
  bytes: number;
}

/** `svc.rpc.session.workspace.full_diff`: the workspace's whole diff against `base_commit` (or one path's), read in its sandbox and kept in the object store. */
export const WorkspaceFullDiffRpc = Type.Object(
  {
    caller: Caller,
    worker_id: WorkerId,
    base_commit: Type.String({ pattern: '^([0-9a-f]{40}|[0-9a-f]{64})$' }),
    path: Type.Optional(Type.String({ minLength: 1, maxLength: 4096 })),
  },
  { additionalProperties: false },
);
export type WorkspaceFullDiffRpcType = Static<typeof WorkspaceFullDiffRpc>;
