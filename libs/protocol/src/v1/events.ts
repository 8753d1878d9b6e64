import Type, { type Static, type TSchema } from 'typebox';
import { JsonObject } from './primitives.js';

/** The eight normalized SDK event types (SPEC "Events"). */
export const EVENT_TYPES = ['assistant', 'tool_use', 'tool_result', 'result', 'progress', 'system', 'control_request', 'control_response'] as const;

export type EventType = (typeof EVENT_TYPES)[number];

export const EventTypeSchema = Type.Enum(EVENT_TYPES, { description: 'One of the eight SDK event types.' });

const Text = (description: string, maxLength = 1_048_576) => Type.String({ description, maxLength });
const Count = (description: string) => Type.Integer({ minimum: 0, description });
const Identifier = (description: string) => Type.String({ minLength: 1, maxLength: 256, description });

/** `assistant`: text the agent wrote (a thinking block is `kind: "thinking"`). */
const AssistantData = Type.Object(
  {
    text: Text('The text of the block.'),
    kind: Type.Optional(Type.Enum(['text', 'thinking'], { description: 'Defaults to "text".' })),
    message_id: Type.Optional(Identifier("The agent's message id; blocks of one model message share it.")),
  },
  { additionalProperties: false },
);

/** `tool_use`: the agent invokes a tool. */
const ToolUseData = Type.Object(
  {
    tool_use_id: Identifier("The agent's id of this tool call."),
    name: Identifier('Tool name, e.g. "Bash".'),
    input: JsonObject,
    parent_tool_use_id: Type.Optional(Type.Union([Identifier('Set for calls made by a sub-agent.'), Type.Null()])),
  },
  { additionalProperties: false },
);

/** `tool_result`: the output of a tool run. */
const ToolResultData = Type.Object(
  {
    tool_use_id: Identifier('The `tool_use_id` this result answers.'),
    content: Text("The tool's output as text."),
    is_error: Type.Boolean({ description: 'True when the tool failed or was refused.' }),
  },
  { additionalProperties: false },
);

/** `result`: the agent completed its turn. */
const ResultData = Type.Object(
  {
    subtype: Identifier('The agent\'s result subtype, e.g. "success" or "error_max_turns".'),
    is_error: Type.Boolean({ description: 'True when the turn ended in an error (check this, not only `subtype`).' }),
    num_turns: Type.Optional(Count('Model turns in this run.')),
    duration_ms: Type.Optional(Type.Number({ minimum: 0, description: 'Wall time of the run.' })),
    text: Type.Optional(Text('The final answer, when the agent gives one.')),
  },
  { additionalProperties: false },
);

/** `progress`: token and cost counters, cumulative for the worker. */
const ProgressData = Type.Object(
  {
    input_tokens: Count('Input tokens so far.'),
    output_tokens: Count('Output tokens so far.'),
    cache_read_tokens: Type.Optional(Count('Input tokens read from the prompt cache so far.')),
    cost_usd: Type.Number({ minimum: 0, description: 'Cost so far in US dollars.' }),
    measured_by: Type.Optional(
      Type.Enum(['agent', 'model_proxy'], {
        description: '`model_proxy`: counted by svc from the model responses it forwarded (authoritative); otherwise as the agent reports it.',
      }),
    ),
  },
  { additionalProperties: false },
);

const SYSTEM_LEVELS = ['debug', 'info', 'warn', 'error'] as const;

/** `system`: a system-level notification (agent lifecycle, spawn steps, unparsed lines). */
const SystemData = Type.Object(
  {
    level: Type.Enum(SYSTEM_LEVELS),
    message: Text('What happened, for a person.'),
    subtype: Type.Optional(Identifier('Machine-readable kind, e.g. "init", "agent_exit", "spawn_step".')),
    stream: Type.Optional(Type.Enum(['stdout', 'stderr'], { description: 'The agent stream a raw line came from.' })),
    details: Type.Optional(JsonObject),
  },
  { additionalProperties: false },
);

/** `control_request`: the agent asks permission to run a tool. `request_id` is the agent's own. */
const ControlRequestData = Type.Object(
  {
    request_id: Identifier("Correlates the decision with this request; the agent's own id."),
    tool_name: Identifier('The tool that needs permission.'),
    input: JsonObject,
    tool_use_id: Type.Optional(Identifier("The agent's id of the tool call, when it gives one.")),
    description: Type.Optional(Text('Why the agent asks, when it says.', 65_536)),
  },
  { additionalProperties: false },
);

const DECISIONS = ['allow', 'deny'] as const;
export const DecisionSchema = Type.Enum(DECISIONS);

const DECISION_SCOPES = ['once', 'always'] as const;
export const DecisionScopeSchema = Type.Enum(DECISION_SCOPES, {
  description: '"always" also adds an allow rule for this tool to the worker\'s permission rules.',
});

/** Where an "always" rule applies (docs/teams.md, "Rules"): this worker, its session, every session of its template, or every session of a team. */
const RULE_SCOPES = ['worker', 'session', 'template', 'team'] as const;
export type RuleScope = (typeof RULE_SCOPES)[number];
export const RuleScopeSchema = Type.Enum(RULE_SCOPES, {
  description: 'Where the "always" rule applies: `worker` (the default), `session`, `template` or `team`.',
});

/** `control_response`: the decision. `decided_by` is a user's `sub`, `policy` or `policy:timeout`. */
const ControlResponseData = Type.Object(
  {
    request_id: Identifier('The `request_id` of the `control_request` this decides.'),
    decision: DecisionSchema,
    message: Type.Optional(Text('The reason the agent receives (always present on a deny).', 65_536)),
    updated_input: Type.Optional(JsonObject),
    scope: Type.Optional(DecisionScopeSchema),
    input_pattern: Type.Optional(Type.String({ maxLength: 1024, description: 'With scope "always": the inputs the added rule covers.' })),
    rule_scope: Type.Optional(RuleScopeSchema),
    /** With a `rule_scope` beyond the worker: what it applies to (`session:<id>`, `template:<name>`, `team:<group>`). */
    rule_key: Type.Optional(Type.String({ maxLength: 512 })),
    interrupt: Type.Optional(Type.Boolean({ description: "With deny: the agent's turn ends too." })),
    decided_by: Identifier('JWT `sub` of the deciding user, or "policy" / "policy:timeout".'),
    decided_by_name: Type.Optional(Type.String({ maxLength: 256 })),
    decided_by_email: Type.Optional(Type.String({ maxLength: 256 })),
  },
  { additionalProperties: false },
);

/** The `data` schema of each event type. */
export const EVENT_DATA_SCHEMAS = {
  assistant: AssistantData,
  tool_use: ToolUseData,
  tool_result: ToolResultData,
  result: ResultData,
  progress: ProgressData,
  system: SystemData,
  control_request: ControlRequestData,
  control_response: ControlResponseData,
} as const satisfies Record<EventType, TSchema>;

/** The static `data` type of each event type. */
export type EventDataMap = { [K in EventType]: Static<(typeof EVENT_DATA_SCHEMAS)[K]> };
export type EventData<K extends EventType = EventType> = EventDataMap[K];
