import Type, { type Static } from 'typebox';
import { DecisionSchema } from './events.js';
import { ListResponse } from './lists.js';
import { RULE_MAX_LENGTH } from './rules.js';
import { Timestamp, WorkerId } from './primitives.js';

/** The most requests one replay or suggestion reads (the newest). */
const POLICY_HISTORY_MAX = 5000;

const Rules = Type.Array(Type.String({ minLength: 1, maxLength: RULE_MAX_LENGTH }), { maxItems: 500 });

/** `GET /v1/policy/suggestions?template=`: proposals read from the decision log (docs/policy.md). */
export const PolicySuggestionsQuery = Type.Object(
  {
    template: Type.String({ pattern: '^[a-z0-9][a-z0-9_-]{0,63}$' }),
    /** The fewest decisions a suggestion rests on. */
    min_evidence: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 5 })),
    last: Type.Optional(Type.Integer({ minimum: 1, maximum: POLICY_HISTORY_MAX, default: 1000 })),
  },
  { additionalProperties: false },
);

const PolicySuggestionSchema = Type.Object(
  {
    /** A rule for the template's `[sidecar]` list. */
    rule: Type.String(),
    list: Type.Enum(['auto_approve', 'deny']),
    evidence: Type.Object(
      {
        requests: Type.Integer({ minimum: 0 }),
        allowed: Type.Integer({ minimum: 0 }),
        denied: Type.Integer({ minimum: 0 }),
        distinct_inputs: Type.Integer({ minimum: 0 }),
        deciders: Type.Array(Type.String()),
        examples: Type.Array(Type.String()),
        last_at: Timestamp,
      },
      { additionalProperties: false },
    ),
    why: Type.String(),
  },
  { additionalProperties: false, title: 'PolicySuggestion' },
);
export type PolicySuggestion = Static<typeof PolicySuggestionSchema>;
export const PolicySuggestionsResponse = ListResponse(PolicySuggestionSchema);

/** A candidate policy: a template's `[sidecar]` lists, and rules as people's "always" would add them. */
const CandidatePolicy = Type.Object(
  {
    auto_approve: Type.Optional(Rules),
    deny: Type.Optional(Rules),
    ask: Type.Optional(Rules),
    autonomous: Type.Optional(Type.Boolean()),
    rules: Type.Optional(
      Type.Array(
        Type.Object(
          {
            tool_name: Type.String({ minLength: 1, maxLength: 256 }),
            input_pattern: Type.Optional(Type.String({ maxLength: RULE_MAX_LENGTH })),
            decision: DecisionSchema,
          },
          { additionalProperties: false },
        ),
        { maxItems: 500 },
      ),
    ),
  },
  { additionalProperties: false },
);

/** `POST /v1/policy/replay`: run a candidate policy over the last requests of a template's sessions. */
export const PolicyReplayBody = Type.Object(
  {
    template: Type.String({ pattern: '^[a-z0-9][a-z0-9_-]{0,63}$' }),
    policy: CandidatePolicy,
    last: Type.Optional(Type.Integer({ minimum: 1, maximum: POLICY_HISTORY_MAX, default: 200 })),
  },
  { additionalProperties: false },
);
export type PolicyReplayBodyType = Static<typeof PolicyReplayBody>;

/** What people did with a request: a person's decision, the worker's own policy's, the deadline's, or nothing yet. */
const OUTCOMES = ['allow', 'deny', 'policy_allow', 'policy_deny', 'timeout_allow', 'timeout_deny', 'open'] as const;

export const PolicyReplayResponse = Type.Object(
  {
    counts: Type.Object(
      {
        requests: Type.Integer({ minimum: 0 }),
        /** Decided by a person. */
        decided_by_people: Type.Integer({ minimum: 0 }),
        /** The candidate would have decided as the person did. */
        agreements: Type.Integer({ minimum: 0 }),
        /** The candidate would have allowed what a person denied. */
        let_through_denied: Type.Integer({ minimum: 0 }),
        /** The candidate would have denied what a person allowed. */
        blocked_allowed: Type.Integer({ minimum: 0 }),
        /** A person was asked, and the candidate would have answered by itself. */
        questions_spared: Type.Integer({ minimum: 0 }),
        /** The candidate would still ask. */
        still_asked: Type.Integer({ minimum: 0 }),
      },
      { additionalProperties: false },
    ),
    items: Type.Array(
      Type.Object(
        {
          worker_id: WorkerId,
          request_id: Type.String(),
          tool_name: Type.String(),
          input: Type.Unknown(),
          at: Timestamp,
          policy: Type.Object({ decision: Type.Enum(['allow', 'deny', 'ask']), reason: Type.String() }, { additionalProperties: false }),
          people: Type.Object({ outcome: Type.Enum(OUTCOMES), decided_by: Type.Optional(Type.String()) }, { additionalProperties: false }),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false, title: 'PolicyReplay' },
);
export type PolicyReplay = Static<typeof PolicyReplayResponse>;

const PolicyPerson = Type.Object(
  { sub: Type.String({ minLength: 1, maxLength: 256 }), groups: Type.Array(Type.String({ maxLength: 256 }), { maxItems: 256 }), admin: Type.Boolean() },
  { additionalProperties: false },
);
export const PolicySuggestionsRpc = Type.Object({ person: PolicyPerson, query: PolicySuggestionsQuery }, { additionalProperties: false });
export type PolicySuggestionsRpcType = Static<typeof PolicySuggestionsRpc>;
export const PolicyReplayRpc = Type.Object({ person: PolicyPerson, body: PolicyReplayBody }, { additionalProperties: false });
export type PolicyReplayRpcType = Static<typeof PolicyReplayRpc>;
