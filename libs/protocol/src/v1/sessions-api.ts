import Type, { type Static } from 'typebox';
import { ListResponse, PaginationQuery } from './lists.js';
import { EgressPolicySchema } from './egress.js';
import { ModelAccessSchema, ModelBudgetSchema, ModelUsageSchema } from './model-proxy.js';
import { EnvironmentVariables, SessionId, Timestamp, WorkerId } from './primitives.js';
import { SYSTEM_SUBTYPES } from './system-subtypes.js';
import { SessionWorkspaceSchema, WorkerWorkspaceSchema, WorkspaceOverridesSchema } from './workspace.js';
import { WorkerActivitySchema } from './activity.js';
import { AccessListSchema } from './access.js';
import { ApprovalRoutesSchema } from './approvals.js';

/** Worker (and session) status: `pending → provisioning → running → completed | failed | stopped`. */
export const WORKER_STATUSES = ['pending', 'provisioning', 'running', 'completed', 'failed', 'stopped'] as const;
export type WorkerStatus = (typeof WORKER_STATUSES)[number];
export const WorkerStatusSchema = Type.Enum(WORKER_STATUSES);

/** Statuses a worker never leaves; `svc attach` is read-only for them. */
const ENDED_WORKER_STATUSES: readonly WorkerStatus[] = ['completed', 'failed', 'stopped'];

export function isEndedStatus(status: WorkerStatus): boolean {
  return ENDED_WORKER_STATUSES.includes(status);
}

/** `POST /v1/sessions`. */
export const CreateSessionBody = Type.Object(
  {
    template: Type.String({ pattern: '^[a-z0-9][a-z0-9_-]{0,63}$', description: 'Template name.' }),
    prompt: Type.Optional(Type.String({ maxLength: 1_048_576, description: 'The first message to the agent.' })),
    overrides: Type.Optional(
      Type.Object(
        {
          env: Type.Optional(EnvironmentVariables("Added to (or replacing) the template's agent environment.")),
          autonomous: Type.Optional(Type.Boolean()),
          budget: Type.Optional(ModelBudgetSchema),
          /** The repository, ref or work branch instead of the template's `[workspace]` ones, where its `[overrides]` allow (docs/workspace.md). */
          workspace: Type.Optional(WorkspaceOverridesSchema),
        },
        { additionalProperties: false },
      ),
    ),
    /** Who else may see or act on it, besides the template's list (docs/teams.md). */
    access: Type.Optional(AccessListSchema),
  },
  { additionalProperties: false },
);
export type CreateSessionBodyType = Static<typeof CreateSessionBody>;

/** A session: one spawned worker and how it is doing. */
export const SessionSchema = Type.Object(
  {
    id: SessionId,
    worker_id: WorkerId,
    template: Type.String(),
    status: WorkerStatusSchema,
    owner: Type.String({ description: 'JWT `sub` of the user who created it.' }),
    created_at: Timestamp,
    updated_at: Timestamp,
    ended_at: Type.Optional(Timestamp),
    failure: Type.Optional(
      Type.Object({ step: Type.String(), reason: Type.String() }, { additionalProperties: false, description: 'Why and where a failed session failed.' }),
    ),
    /** Its repository (a template with `[workspace]`): docs/workspace.md. */
    workspace: Type.Optional(SessionWorkspaceSchema),
    /** Who besides its owner may see or act on it, and as what (docs/teams.md). */
    access: Type.Optional(AccessListSchema),
  },
  { additionalProperties: false, title: 'Session' },
);
export type Session = Static<typeof SessionSchema>;

export const SessionParams = Type.Object({ id: SessionId });

/** One template a session can be started from, as `GET /v1/templates` lists it (what a start form needs). */
const TemplateSummarySchema = Type.Object(
  {
    name: Type.String(),
    description: Type.String(),
    /** The first message the agent gets when the session names none. */
    prompt: Type.Optional(Type.String()),
    /** How the sidecar drives the agent (`claude-code`, `codex`, …); absent when the template runs a bare command. */
    adapter: Type.Optional(Type.String()),
    /** Nobody is asked: the worker's policy decides every tool request. */
    autonomous: Type.Boolean(),
    /** Why the template cannot be used (its file is broken): a session from it would be refused with this. */
    problem: Type.Optional(Type.String()),
  },
  { additionalProperties: false, title: 'TemplateSummary' },
);
export type TemplateSummary = Static<typeof TemplateSummarySchema>;
export const ListTemplatesResponse = ListResponse(TemplateSummarySchema);

export const ListSessionsQuery = Type.Object({
  ...PaginationQuery.properties,
  status: Type.Optional(WorkerStatusSchema),
});

export const ListSessionsResponse = ListResponse(SessionSchema);

/** `GET /v1/sessions/{id}/logs` (WebSocket): how many past lines to send first. */
export const SessionLogsQuery = Type.Object({
  tail: Type.Integer({ minimum: 0, maximum: 10_000, default: 100 }),
});

/**
 * A worker as the gateway knows it, kept in the `svc_workers` KV bucket by the session service:
 * enough to check a worker token and an owner without a database. `token_hash` is removed
 * (or the status ended) when the token is revoked.
 */
/** How long a tool request may wait for a person, before the policy decides it. */
export const DEFAULT_DECISION_TIMEOUT_S = 600;

/**
 * How a session's agent runs (`[session] mode`, docs/conversations.md): `conversation`, up
 * between turns, taking people's messages; `one_shot`, one prompt and one run.
 */
export const SESSION_MODES = ['one_shot', 'conversation'] as const;

/** `[session] idle_timeout_s`: how long a conversation's agent waits idle before it is stopped (the worker suspended). */
export const DEFAULT_IDLE_TIMEOUT_S = 1800;
/** `[session] keep_sandbox_s`: how long a suspended worker's sandbox is kept for a message to resume it. */
export const DEFAULT_KEEP_SANDBOX_S = 24 * 3600;
export const SessionModeSchema = Type.Enum(SESSION_MODES, {
  description: "`conversation`: the agent stays up between turns and takes people's messages; `one_shot`: one prompt, one run.",
});

/**
 * A worker's decision deadline (from its template): after `decision_timeout_s` without a
 * decision, the control service decides `on_timeout` itself, as `decided_by: "policy:timeout"`.
 */
export const DecisionPolicySchema = Type.Object(
  {
    decision_timeout_s: Type.Integer({ minimum: 1, maximum: 7 * 24 * 3600, default: DEFAULT_DECISION_TIMEOUT_S }),
    on_timeout: Type.Enum(['deny', 'allow'], { default: 'deny' }),
  },
  { additionalProperties: false },
);
export type DecisionPolicy = Static<typeof DecisionPolicySchema>;
export const DEFAULT_DECISION_POLICY: DecisionPolicy = { decision_timeout_s: DEFAULT_DECISION_TIMEOUT_S, on_timeout: 'deny' };

export const WorkerRecordSchema = Type.Object(
  {
    worker_id: WorkerId,
    session_id: Type.Optional(SessionId),
    owner: Type.String({ description: 'JWT `sub` of the user who spawned it.' }),
    /** Who besides its owner may see or act on it (its session's list: docs/teams.md). */
    access: Type.Optional(AccessListSchema),
    /** Which requests go to whom (its template's `[[approvals.route]]`: docs/teams.md). */
    approvals: Type.Optional(ApprovalRoutesSchema),
    /** Its session's template, for rules given at scope `template`. */
    template: Type.Optional(Type.String({ maxLength: 64 })),
    /** Its owner's groups when it was made: the teams whose rules apply to it (scope `team`). */
    teams: Type.Optional(Type.Array(Type.String({ maxLength: 256 }), { maxItems: 256 })),
    status: WorkerStatusSchema,
    token_hash: Type.Optional(Type.String({ pattern: '^[0-9a-f]{64}$', description: 'SHA-256 of the worker token, hex.' })),
    decision_policy: Type.Optional(DecisionPolicySchema),
    /** The model APIs its agent reaches through the model proxy, and its budget. */
    model: Type.Optional(ModelAccessSchema),
    /** How the gateway decides its agent's tunnels (docs/egress.md); without it the worker has none. */
    egress: Type.Optional(EgressPolicySchema),
    /** Its repository, for the gateway's git proxy (docs/workspace.md); without it the worker has none. */
    workspace: Type.Optional(WorkerWorkspaceSchema),
    /** How its agent runs (docs/conversations.md); without it `one_shot` (a worker made before conversations, or a bare one). */
    mode: Type.Optional(SessionModeSchema),
    /** What its agent is doing, as its sidecar last reported (docs/conversations.md, "Activity"); absent before the first report. */
    activity: Type.Optional(WorkerActivitySchema),
    /** When `activity` last changed. */
    activity_at: Type.Optional(Timestamp),
    /** A conversation's: how long its sandbox is kept while it is suspended; then it ends (`completed`). */
    keep_sandbox_s: Type.Optional(Type.Integer({ minimum: 1 })),
    /** When the worker's sidecar last polled for decisions (it is alive). */
    last_seen_at: Type.Optional(Timestamp),
    /** When it reached an ended status (`completed`, `failed`, `stopped`). */
    ended_at: Type.Optional(Timestamp),
    /**
     * When its stored events were removed, its retention over (docs/event-ingest.md
     * "Retention"): set for a worker without a session; a session's own record says it for its worker.
     */
    events_purged_at: Type.Optional(Timestamp),
    updated_at: Timestamp,
  },
  { additionalProperties: false, title: 'WorkerRecord' },
);
export type WorkerRecord = Static<typeof WorkerRecordSchema>;

/**
 * `system` event subtypes of a worker's life: the sidecar reports the agent's start and exit
 * (`details: {code, signal}`), the session service each spawn step (`details: {step, status}`).
 * The session service ends a worker on `agent_exit`: code 0 → `completed`, else `failed` —
 * unless `details.resumable` (`workerEndingExitCodeOf`).
 */
export const LIFECYCLE_SUBTYPES = {
  agentStart: SYSTEM_SUBTYPES.agentStart,
  agentExit: SYSTEM_SUBTYPES.agentExit,
  spawnStep: SYSTEM_SUBTYPES.spawnStep,
} as const;

/** The agent's exit code, when `event` is the sidecar's report of the agent's exit. */
export function agentExitCodeOf(event: { type: string; data: unknown }): number | undefined {
  if (event.type !== 'system') return undefined;
  const data = event.data as { subtype?: string; details?: { code?: unknown } };
  if (data.subtype !== LIFECYCLE_SUBTYPES.agentExit) return undefined;
  return typeof data.details?.code === 'number' ? data.details.code : 1;
}

/**
 * The agent's exit code when `event` is an exit that ends its worker: not one the sidecar reports
 * `resumable` (a conversation's agent stopped when idle, or crashed: a message starts it again).
 */
export function workerEndingExitCodeOf(event: { type: string; data: unknown }): number | undefined {
  const code = agentExitCodeOf(event);
  return code === undefined || (event.data as { details?: { resumable?: unknown } }).details?.resumable === true ? undefined : code;
}

/** `GET /v1/workers/{id}`: a worker as its viewers see it (no token hash). */
export const WorkerSchema = Type.Object(
  {
    ...Type.Omit(WorkerRecordSchema, ['token_hash']).properties,
    model_usage: Type.Optional(ModelUsageSchema),
  },
  { additionalProperties: false, title: 'Worker' },
);
export type Worker = Static<typeof WorkerSchema>;
