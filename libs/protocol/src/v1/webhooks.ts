import { EventSourceSchema } from './provenance.js';
import Type, { type Static } from 'typebox';
import { Timestamp, WorkerId } from './primitives.js';
import { DecisionSchema } from './events.js';
import { ListResponse } from './lists.js';

/**
 * What a subscription can be told of (docs/webhooks.md): a request waits for a person, it was
 * decided, its deadline is near, a worker's agent ended (or failed), a conversation's agent
 * finished its turn and waits for a message.
 */
const WEBHOOK_KINDS = ['request.needs_decision', 'request.decided', 'request.deadline_near', 'request.escalated', 'worker.ended', 'worker.idle'] as const;
export type WebhookKind = (typeof WEBHOOK_KINDS)[number];

/** `standard`: Standard Webhooks' JSON (`{type, timestamp, data}`); `slack`: a Slack incoming webhook's `{text, blocks}`. */
const WEBHOOK_FORMATS = ['standard', 'slack'] as const;

export const CreateWebhookRequest = Type.Object(
  {
    url: Type.String({
      format: 'uri',
      pattern: '^https?://',
      maxLength: 2048,
      description:
        'Where notifications are POSTed (http or https). Its host must resolve to public addresses only (or ranges the operator allows), never to the control plane.',
    }),
    kinds: Type.Array(Type.Enum(WEBHOOK_KINDS), { minItems: 1, uniqueItems: true, description: 'What to be told of.' }),
    format: Type.Optional(Type.Enum(WEBHOOK_FORMATS, { description: 'The body: `standard` (default) or `slack`.' })),
    scope: Type.Optional(Type.Enum(['own', 'all'], { description: "`own` (default): the caller's workers; `all`: every worker (admins only)." })),
  },
  { additionalProperties: false, title: 'CreateWebhookRequest' },
);
export type CreateWebhookRequestType = Static<typeof CreateWebhookRequest>;

const WebhookSchema = Type.Object(
  {
    id: Type.String({ pattern: '^whk_[0-9A-Za-z]+$' }),
    owner: Type.String(),
    url: Type.String(),
    kinds: Type.Array(Type.Enum(WEBHOOK_KINDS)),
    format: Type.Enum(WEBHOOK_FORMATS),
    scope: Type.Enum(['own', 'all']),
    created_at: Timestamp,
    /** Set when svc stopped delivering to it (the receiver kept failing), with why. */
    disabled_at: Type.Union([Timestamp, Type.Null()]),
    disabled_reason: Type.Union([Type.String(), Type.Null()]),
  },
  { additionalProperties: false, title: 'Webhook' },
);
export type Webhook = Static<typeof WebhookSchema>;

/** The answer to a create: the subscription and its signing secret, shown this once. */
export const CreatedWebhookSchema = Type.Object(
  {
    ...WebhookSchema.properties,
    /** `whsec_…` (Standard Webhooks): verify each delivery's `webhook-signature` with it. */
    secret: Type.String({ pattern: '^whsec_' }),
  },
  { additionalProperties: false, title: 'CreatedWebhook' },
);
export type CreatedWebhook = Static<typeof CreatedWebhookSchema>;

/**
 * The `error` of a try the delivering service began but did not see answered (it stopped, or
 * lost its store, meanwhile): the try may or may not have reached the receiver, and is made again.
 */
export const WEBHOOK_ATTEMPT_INTERRUPTED = 'interrupted: the delivering service stopped before the answer was recorded; the try is made again';

/** One try to deliver one notification. */
const WebhookAttemptSchema = Type.Object(
  {
    webhook_id: Type.String(),
    /** The notification's `webhook-id`: the same on every try, so a receiver can drop repeats. */
    message_id: Type.String(),
    kind: Type.Enum(WEBHOOK_KINDS),
    /** 1 for the first try. */
    attempt: Type.Integer({ minimum: 1 }),
    at: Timestamp,
    /** The receiver's HTTP status; null when no answer came (not sent, refused, timed out, or the try was interrupted). */
    status: Type.Union([Type.Integer(), Type.Null()]),
    /**
     * Why no answer came, in svc's words (`not sent: …` when the URL now resolves where webhooks
     * may not point); null when the receiver answered: its body is never kept.
     */
    error: Type.Union([Type.String(), Type.Null()]),
    delivered: Type.Boolean(),
  },
  { additionalProperties: false, title: 'WebhookAttempt' },
);
export type WebhookAttempt = Static<typeof WebhookAttemptSchema>;

/** Links in a "needs a decision" notification: each opens a confirmation page, and only its POST decides. */
const DecisionLinksSchema = Type.Object({
  allow: Type.String(),
  deny: Type.String(),
  /** The worker's page in the web console. */
  console: Type.String(),
  expires_at: Timestamp,
});

/** The `data` of a notification (Standard Webhooks' body is `{type, timestamp, data}`). */
const WebhookDataSchema = Type.Object(
  {
    worker_id: WorkerId,
    owner: Type.String(),
    request_id: Type.Optional(Type.String()),
    tool_name: Type.Optional(Type.String()),
    input: Type.Optional(Type.Unknown()),
    decision: Type.Optional(DecisionSchema),
    /** Who decided, read from the decision's source: a person's `sub`, `policy` (the worker's rules) or `policy:timeout`. */
    decided_by: Type.Optional(Type.String()),
    /** The decision's source (docs/protocol.md, "Sources"). */
    source: Type.Optional(EventSourceSchema),
    message: Type.Optional(Type.String()),
    /** When the request is decided by its timeout policy, if it has a deadline. */
    deadline: Type.Optional(Timestamp),
    exit_code: Type.Optional(Type.Integer()),
    links: Type.Optional(DecisionLinksSchema),
    /** The worker's page in the web console (`worker.idle`), when the control plane knows its public URL. */
    worker_url: Type.Optional(Type.String()),
    /** Who may decide a routed request (`user:…`, `group:…`: docs/teams.md); its notices go to them, not the owner. */
    deciders: Type.Optional(Type.Array(Type.String())),
    /** The approval route's rule that routed it. */
    rule: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);
export type WebhookData = Static<typeof WebhookDataSchema>;

/**
 * The body of a `standard` notification, what a receiver parses (Standard Webhooks' `{type, timestamp, data}`).
 * @public
 */
export const WebhookPayloadSchema = Type.Object(
  { type: Type.Enum(WEBHOOK_KINDS), timestamp: Timestamp, data: WebhookDataSchema },
  { additionalProperties: false, title: 'WebhookPayload' },
);
export type WebhookPayload = Static<typeof WebhookPayloadSchema>;

/**
 * Something to notify of, as the control service publishes it durably (JetStream `SVC_WEBHOOKS`)
 * before it is fanned out to the subscriptions. `id` is stable per fact: reported twice, it is
 * kept once.
 */
export interface WebhookFact {
  id: string;
  kind: WebhookKind;
  at: string;
  data: WebhookData;
}

/** One fact for one subscription: a delivery, tried until it succeeds or the retry window ends. */
export interface WebhookDelivery {
  webhook_id: string;
  /** `msg_<hash of the fact id and the subscription>`: the `webhook-id` header of every try. */
  message_id: string;
  fact: WebhookFact;
}

/** RPCs of the control service behind `/v1/webhooks`. */
export const CreateWebhookRpc = Type.Object({
  owner: Type.String({ minLength: 1 }),
  /** The creator's groups: a request routed to one of them is told to this subscription (docs/teams.md). */
  owner_groups: Type.Optional(Type.Array(Type.String({ maxLength: 256 }), { maxItems: 256 })),
  request: CreateWebhookRequest,
});
export type CreateWebhookRpcType = Static<typeof CreateWebhookRpc>;
/** `owner` undefined: every subscription (an admin's list). */
export const ListWebhooksRpc = Type.Object({ owner: Type.Optional(Type.String()) });
export type ListWebhooksRpcType = Static<typeof ListWebhooksRpc>;
/** One subscription, if `owner` may see it (undefined: an admin, who may see any). */
export const WebhookRefRpc = Type.Object({ id: Type.String({ minLength: 1 }), owner: Type.Optional(Type.String()) });
export type WebhookRefRpcType = Static<typeof WebhookRefRpc>;
export const WebhookParams = Type.Object({ id: Type.String({ pattern: '^whk_[0-9A-Za-z]+$', description: 'The subscription id.' }) });

export const ListWebhooksResponse = ListResponse(WebhookSchema);
export const ListWebhookAttemptsResponse = ListResponse(WebhookAttemptSchema);
