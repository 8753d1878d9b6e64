import Type, { type Static } from 'typebox';

/**
 * Every machine-readable error code, with the HTTP status it answers with. The gateway's one
 * error handler turns a coded error into `APIError` with this status; services send the code.
 */
export const ERROR_CODES = {
  invalid_request: 400,
  invalid_template: 400,
  unauthorized: 401,
  /** A decision link whose signature does not match (tampered with, or not svc's). */
  invalid_link: 401,
  forbidden: 403,
  /** The person's role on the session is not enough for this (docs/teams.md): the message names theirs and the one needed. */
  role_required: 403,
  /** The request is routed to other people (docs/teams.md): the message names who may decide it. */
  not_a_decider: 403,
  not_found: 404,
  worker_not_found: 404,
  session_not_found: 404,
  template_not_found: 404,
  request_not_found: 404,
  /** No image of a person's message is kept under that name (never sent, or older than kept). */
  image_not_found: 404,
  /** The worker has no repository (its template has no `[workspace]`): docs/workspace.md. */
  no_repository: 404,
  /** Its sidecar has not reported the workspace's changes yet. */
  changes_not_found: 404,
  /** No such file in the workspace. */
  file_not_found: 404,
  method_not_allowed: 405,
  worker_ended: 409,
  already_decided: 409,
  request_closed: 409,
  /** A message to a worker whose session is not a conversation (`[session] mode = "one_shot"`). */
  not_conversational: 409,
  conflict: 409,
  /** No forge is configured for the repository's host (`SVC_GIT_FORGES`): no pull request can be opened. */
  forge_not_configured: 409,
  /** A decision link past its expiry. */
  link_expired: 410,
  /** The worker's sandbox is gone: its files are no longer there (the stored changes are). */
  sandbox_gone: 410,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  /** The person holds the most WebSocket streams one may open on a gateway (`SVC_MAX_STREAMS_PER_USER`). */
  too_many_streams: 429,
  /** The worker holds the most long polls one may (`SVC_MAX_LONG_POLLS_PER_WORKER`). */
  too_many_long_polls: 429,
  /** The person has the most sessions not yet ended one may (`SVC_MAX_RUNNING_SESSIONS_PER_USER`). */
  too_many_sessions: 429,
  internal: 500,
  /** A part of the API that is documented but not built yet: the message says which. */
  not_implemented: 501,
  /** The repository's host refused the control plane's request or could not be reached (the message says which). */
  repository_unreachable: 502,
  /** The forge's API (pull requests) refused or could not be reached. */
  forge_failed: 502,
  unavailable: 503,
  /** The database does not answer (down, restarting, unreachable): retry after `Retry-After`. */
  store_unavailable: 503,
  /** NATS, the bus between the services, is unreachable: retry after `Retry-After`. */
  bus_unavailable: 503,
  timeout: 504,
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

const ErrorCodeSchema = Type.Enum(Object.keys(ERROR_CODES) as ErrorCode[], {
  description: 'Machine-readable error code (snake_case).',
});

/** The body of every non-2xx answer. `details` is omitted when empty. */
export const APIErrorSchema = Type.Object(
  {
    code: ErrorCodeSchema,
    message: Type.String({ description: 'Human-readable; never contains a token or key.' }),
    details: Type.Optional(Type.Unknown({ description: 'Structured data, e.g. the failing fields.' })),
  },
  { additionalProperties: false, title: 'APIError' },
);

export type APIErrorBody = Static<typeof APIErrorSchema>;

/** The HTTP status an error code answers with. */
export function statusOfErrorCode(code: ErrorCode): number {
  return ERROR_CODES[code];
}

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.hasOwn(ERROR_CODES, value);
}

/**
 * A coded error that crosses process boundaries (NATS replies) and becomes an `APIError` at
 * the gateway. `message` must be safe to show to the caller.
 */
export class CodedError extends Error {
  override readonly name = 'CodedError';
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: unknown,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }

  get status(): number {
    return statusOfErrorCode(this.code);
  }

  toBody(): APIErrorBody {
    return this.details === undefined ? { code: this.code, message: this.message } : { code: this.code, message: this.message, details: this.details };
  }
}
