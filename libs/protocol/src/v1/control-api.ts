import Type, { type Static } from 'typebox';
import { DecisionSchema, DecisionScopeSchema, RuleScopeSchema, type EventData } from './events.js';
import { storedEventSchemaOf, type StoredEvent } from './envelope.js';
import { EventCursorQuery, ListResponse } from './lists.js';
import { EventId, JsonObject, WorkerId } from './primitives.js';
import { RULE_MAX_LENGTH, RULE_MAX_WILDCARDS, RULE_WILDCARDS_PATTERN } from './rules.js';
import { SYSTEM_SUBTYPES } from './system-subtypes.js';

/** Longest a pending-decision long poll may wait, in milliseconds. */
const MAX_PENDING_WAIT_MS = 30_000;

const InputPattern = Type.String({
  minLength: 1,
  maxLength: RULE_MAX_LENGTH,
  pattern: RULE_WILDCARDS_PATTERN,
  description: `With scope "always": the new rule covers only inputs matching this pattern (e.g. "npm test*" for Bash commands); without it, every input of the tool. At most ${RULE_MAX_WILDCARDS} wildcards (\`*\` and \`?\`).`,
});

/** `POST /v1/workers/{id}/control`: a person's decision on one `control_request`. */
export const PostControlBody = Type.Object(
  {
    request_id: Type.String({ minLength: 1, maxLength: 256 }),
    decision: DecisionSchema,
    message: Type.Optional(Type.String({ maxLength: 65_536, description: 'The reason the agent receives; a deny without one gets a default.' })),
    updated_input: Type.Optional(JsonObject),
    scope: Type.Optional(DecisionScopeSchema),
    input_pattern: Type.Optional(InputPattern),
    rule_scope: Type.Optional(RuleScopeSchema),
    rule_team: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 256,
        description: 'With `rule_scope: "team"`: the team (one of your groups) whose sessions the rule applies to.',
      }),
    ),
    interrupt: Type.Optional(
      Type.Boolean({ description: "With deny: also end the agent's turn (Claude Code: the deny's interrupt; Codex: cancel). Only with deny." }),
    ),
  },
  { additionalProperties: false },
);
export type PostControlBodyType = Static<typeof PostControlBody>;

/** `201`: the stored `control_response` event. */
export const PostControlResponse = storedEventSchemaOf('control_response');

/**
 * `202`: a vote on a request whose approval route asks a quorum (docs/teams.md), kept; the
 * request stays open until `quorum` different people allowed it (any deny ends it). The agent
 * hears nothing of votes, only the decision that completes the quorum.
 */
export const ApprovalVoteAnswerSchema = Type.Object(
  {
    vote: Type.Object(
      { request_id: Type.String(), voter: Type.String(), decision: DecisionSchema, at: Type.String({ format: 'date-time' }) },
      { additionalProperties: false },
    ),
    /** Different people who allowed it so far, this one among them. */
    allows: Type.Integer({ minimum: 1 }),
    quorum: Type.Integer({ minimum: 2 }),
    voters: Type.Array(Type.String()),
  },
  { additionalProperties: false, title: 'ApprovalVoteAnswer' },
);
export type ApprovalVoteAnswer = Static<typeof ApprovalVoteAnswerSchema>;

/** What the control service answers a person's decision with: the stored decision, or a vote toward a quorum. */
export type DecideAnswer = StoredEvent<'control_response'> | ApprovalVoteAnswer;

export function isVoteAnswer(answer: DecideAnswer): answer is ApprovalVoteAnswer {
  return 'vote' in answer;
}

/** `GET /v1/workers/{id}/control/pending?after_id=&wait_ms=`: decisions after the cursor. */
export const PendingControlQuery = Type.Object({
  ...EventCursorQuery.properties,
  wait_ms: Type.Integer({
    minimum: 0,
    maximum: MAX_PENDING_WAIT_MS,
    default: 0,
    description: `Long-poll up to this many ms (0-${MAX_PENDING_WAIT_MS}) for a decision.`,
  }),
});

/** Decisions, and people's messages and interrupts (`system` events of subtype `person_message`, `person_interrupt`), in id order. */
export const PendingControlResponse = ListResponse(Type.Union([storedEventSchemaOf('control_response'), storedEventSchemaOf('system')]));

const CONTROL_REQUEST_STATES = ['open', 'closed', 'all'] as const;

/** `GET /v1/workers/{id}/control/requests?state=open`: requests for late joiners. */
export const ControlRequestsQuery = Type.Object({
  state: Type.Enum(CONTROL_REQUEST_STATES, { default: 'open' }),
});

export const ControlRequestsResponse = ListResponse(storedEventSchemaOf('control_request'));

/**
 * The uid of the decision on `request_id`. Every decision on one request (a person's, the
 * deadline's) is stored under this uid, and the store keeps one event per (worker, uid): the
 * first decision wins, whichever control replica stores it.
 */
export function controlResponseUid(requestId: string): string {
  return `control_response:${requestId}`;
}

/** What the agent reads when a person denies without saying why (it needs a non-empty reason). */
export const DEFAULT_DENY_MESSAGE = 'The user denied this tool call.';

/**
 * A request the agent withdrew (Claude Code's `control_cancel_request`): the sidecar reports it as
 * a `system` event with this `subtype` and `details: {request_id}`. The request closes for every
 * viewer, and a later decision is refused with `409 request_closed`.
 */
export const CONTROL_WITHDRAWN_SUBTYPE = SYSTEM_SUBTYPES.controlWithdrawn;

/** The `data` of the `system` event that reports a withdrawn request. */
export function controlWithdrawnData(requestId: string): EventData<'system'> {
  return { level: 'info', message: `The agent withdrew its request ${requestId}.`, subtype: CONTROL_WITHDRAWN_SUBTYPE, details: { request_id: requestId } };
}

/**
 * `svc.rpc.control.decide`: the gateway forwards a checked `POST /control`. Who decided, and
 * through which channel, travel only in `assertion` (docs/nats-security.md): a user assertion
 * the gateway signed for this worker and request, which the control service checks. Without a
 * valid one the decision is refused `forbidden`, not stored.
 */
export const DecideRequest = Type.Object(
  { worker_id: WorkerId, decision: PostControlBody, assertion: Type.Optional(Type.String({ minLength: 1, maxLength: 4096 })) },
  { additionalProperties: false },
);
export type DecideRequestType = Static<typeof DecideRequest>;

/**
 * `svc.events.decide.<partition>`: the control service asks the event-ingest replica owning the
 * worker's partition, the worker's one writer, to append a decision (`decision`: a
 * `control_response` with its source) and announce it. With `person_timeout_s` it is a person's
 * decision, checked against its request under the worker's lock (`svc_decide`: the request
 * exists, is not withdrawn, is undecided and was stored less than that long ago); without, the
 * deadline's, appended unless the request has a decision under the same uid. `start_within_ms`:
 * the owner drops it if it cannot start it that soon after it arrives (the caller has given up
 * on this try by then and tries again). `attempt_id` is the same on every try of one decision:
 * a try whose earlier try was stored is answered `stored`, not `decided`.
 */
export const DecisionAppendRequest = Type.Object(
  {
    worker_id: WorkerId,
    decision: Type.Unknown({ description: 'A control_response with its source, checked by event-ingest.' }),
    person_timeout_s: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
    start_within_ms: Type.Integer({ minimum: 1 }),
    attempt_id: Type.String({ minLength: 1, maxLength: 64 }),
  },
  { additionalProperties: false },
);
export type DecisionAppendRequestType = Static<typeof DecisionAppendRequest>;

/**
 * What the owner found and did: `stored` (this decision, now stored), `decided` (the request has
 * a decision already: `decision` is it), `expired` / `withdrawn` (a person's decision came too late;
 * `request` is the request), `not_found`. `request_stored_at` is when the request was stored.
 */
export type DecisionAppendResultType = {
  outcome: 'stored' | 'decided' | 'expired' | 'withdrawn' | 'not_found';
  decision?: StoredEvent<'control_response'>;
  request?: StoredEvent<'control_request'>;
  request_stored_at?: string;
};

/** `svc.rpc.control.requests`: a worker's control requests in one state, oldest first. */
export const ControlRequestsRpc = Type.Object({ worker_id: WorkerId, state: Type.Enum(CONTROL_REQUEST_STATES) }, { additionalProperties: false });
export type ControlRequestsRpcType = Static<typeof ControlRequestsRpc>;

/**
 * Whether this stored event is on the control channel, repeated on core NATS as it is committed:
 * a request, a decision (the sidecar's policy posts its own), a withdrawal, a person's message
 * or interrupt.
 */
export function isControlEvent(event: Pick<StoredEvent, 'type' | 'data'>): boolean {
  if (event.type === 'control_request' || event.type === 'control_response') return true;
  if (event.type !== 'system') return false;
  const subtype = (event.data as EventData<'system'>).subtype;
  return subtype === CONTROL_WITHDRAWN_SUBTYPE || subtype === SYSTEM_SUBTYPES.personMessage || subtype === SYSTEM_SUBTYPES.personInterrupt;
}

/** The `request_id` a withdrawal event closes. */
export function withdrawnRequestId(event: Pick<StoredEvent, 'type' | 'data'>): string | undefined {
  if (event.type !== 'system') return undefined;
  const data = event.data as EventData<'system'>;
  const requestId = data.subtype === CONTROL_WITHDRAWN_SUBTYPE ? data.details?.['request_id'] : undefined;
  return typeof requestId === 'string' ? requestId : undefined;
}

/** A rule added with `scope: "always"`, as the sidecar's permission engine reads it. */
const PermissionRuleSchema = Type.Object(
  {
    rule_id: EventId,
    tool_name: Type.String(),
    input_pattern: Type.Optional(Type.String()),
    decision: DecisionSchema,
    added_by: Type.String(),
    request_id: Type.String(),
    added_at: Type.String({ format: 'date-time' }),
    /** Where it applies (absent: the worker it was given on). */
    scope: Type.Optional(RuleScopeSchema),
    /** With a wider scope: `session:<id>`, `template:<name>` or `team:<group>`. */
    scope_key: Type.Optional(Type.String()),
    /** The worker whose request it was given on. */
    worker_id: Type.Optional(WorkerId),
  },
  { additionalProperties: false },
);
export type PermissionRule = Static<typeof PermissionRuleSchema>;

/** `GET /v1/rules`: the rules people added with "always" that the caller may see, newest first (docs/teams.md, "Rules"). */
export const ListRulesQuery = Type.Object(
  {
    scope: Type.Optional(RuleScopeSchema),
    tool: Type.Optional(Type.String({ maxLength: 256, description: 'Only rules of this tool.' })),
    q: Type.Optional(Type.String({ maxLength: 256, description: 'Only rules whose tool, pattern, author or scope holds this text.' })),
    worker_id: Type.Optional(WorkerId),
  },
  { additionalProperties: false },
);
export const ListRulesResponse = ListResponse(PermissionRuleSchema);
export const RuleParams = Type.Object({ rule_id: EventId });
/** `DELETE /v1/rules/{id}`: the rule revoked. */
export const RevokedRuleSchema = Type.Object({ revoked: Type.Literal(true), rule: PermissionRuleSchema }, { additionalProperties: false });

/** `svc.rpc.control.rules.list` / `.revoke`: the person the gateway authenticated, and what they ask. */
const RulesPerson = Type.Object(
  { sub: Type.String({ minLength: 1, maxLength: 256 }), groups: Type.Array(Type.String({ maxLength: 256 }), { maxItems: 256 }), admin: Type.Boolean() },
  { additionalProperties: false },
);
export const ListRulesRpc = Type.Object({ person: RulesPerson, query: ListRulesQuery }, { additionalProperties: false });
export type ListRulesRpcType = Static<typeof ListRulesRpc>;
export const RevokeRuleRpc = Type.Object(
  { person: RulesPerson, rule_id: EventId, channel: Type.Optional(Type.String({ maxLength: 32 })) },
  { additionalProperties: false },
);
export type RevokeRuleRpcType = Static<typeof RevokeRuleRpc>;

/** `GET /v1/workers/{id}/permission-rules`: the worker's added rules, oldest first. */
export const PermissionRulesResponse = ListResponse(PermissionRuleSchema);
