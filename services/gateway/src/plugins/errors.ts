import fp from 'fastify-plugin';
import FindMyWay, { type HTTPMethod } from 'find-my-way';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { CodedError, describeFieldErrors, toFieldErrors, type ErrorCode, type RawError } from '@svc/protocol';

/** Fastify's own error codes, and the API error each becomes. */
const FASTIFY_ERRORS: Record<string, ErrorCode> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'payload_too_large',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported_media_type',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'invalid_request',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'invalid_request',
  FST_ERR_CTP_INVALID_JSON_BODY: 'invalid_request',
  FST_ERR_CTP_INVALID_TYPE: 'invalid_request',
};

const STATUS_CODES: Record<number, ErrorCode> = {
  400: 'invalid_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  409: 'conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'rate_limited',
  503: 'unavailable',
  504: 'timeout',
};

const METHODS: HTTPMethod[] = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

declare module 'fastify' {
  interface FastifyInstance {
    /** Answers 404 `not_found`, or 405 `method_not_allowed` when the path exists with other methods. */
    notFoundHandler(request: FastifyRequest, reply: FastifyReply): void;
    /** Every route registered so far (method, URL pattern, whether it is hidden from the OpenAPI document). */
    registeredRoutes: Array<{ method: string; url: string; hidden: boolean }>;
  }
}

/** Turns every failure into an `APIError` (the one place that does), and answers 404 and 405. */
export function toCodedError(error: FastifyError | CodedError | Error): CodedError {
  if (error instanceof CodedError) return error;
  const fastifyError = error as FastifyError;
  if (fastifyError.validation) {
    const errors = toFieldErrors(fastifyError.validation as unknown as RawError[], `/${fastifyError.validationContext ?? 'body'}`);
    return new CodedError('invalid_request', describeFieldErrors(errors), errors);
  }
  const mapped = fastifyError.code ? FASTIFY_ERRORS[fastifyError.code] : undefined;
  if (mapped) return new CodedError(mapped, fastifyError.message);
  if (error instanceof SyntaxError) return new CodedError('invalid_request', 'the body is not valid JSON');
  const status = fastifyError.statusCode;
  if (status && status >= 400 && status < 500) return new CodedError(STATUS_CODES[status] ?? 'invalid_request', fastifyError.message);
  return new CodedError('internal', 'internal error', undefined, { cause: error });
}

/**
 * How long a client should wait before trying again, in seconds, for an answer that says a
 * dependency is away (503) or was too slow (504): short, since the gateway fails fast and the
 * services reconnect within about a second.
 */
const RETRY_AFTER_S: Partial<Record<CodedError['code'], number>> = {
  bus_unavailable: 1,
  store_unavailable: 2,
  unavailable: 2,
  timeout: 1,
  // A closed tab frees a stream at once; a long poll ends within its wait; a session takes longer.
  too_many_streams: 5,
  too_many_long_polls: 1,
  too_many_sessions: 30,
};

/** Answers with a coded error as an `APIError` (503 and 504 with `Retry-After`). */
export function sendApiError(reply: FastifyReply, coded: CodedError): void {
  const retryAfter = RETRY_AFTER_S[coded.code];
  if (retryAfter !== undefined && !reply.hasHeader('retry-after')) void reply.header('retry-after', String(retryAfter));
  void reply.code(coded.status).type('application/json').send(coded.toBody());
}

export const errorsPlugin = fp(
  async (app) => {
    // Which methods each path has, to tell "no such path" (404) from "wrong method" (405).
    const routes = FindMyWay({ ignoreTrailingSlash: true });
    const registered: Array<{ method: string; url: string; hidden: boolean }> = [];
    app.decorate('registeredRoutes', registered);
    app.addHook('onRoute', (route) => {
      // The CORS plugin's catch-all `OPTIONS *` would make every path look like it exists.
      if (route.url === '*') return;
      const methods = (Array.isArray(route.method) ? route.method : [route.method]) as HTTPMethod[];
      for (const method of methods) {
        if (METHODS.includes(method) && !routes.find(method, route.url)) routes.on(method, route.url, () => {});
        registered.push({ method, url: route.url, hidden: Boolean((route.schema as { hide?: boolean } | undefined)?.hide) });
      }
    });

    app.setErrorHandler((error: FastifyError | Error, request, reply) => {
      const coded = toCodedError(error);
      if (coded.status >= 500) request.log.error({ err: error }, 'request failed');
      else request.log.debug({ code: coded.code }, coded.message);
      sendApiError(reply, coded);
    });

    app.decorate('notFoundHandler', (request: FastifyRequest, reply: FastifyReply) => {
      const path = request.url.split('?')[0]!;
      // A route of this method that found nothing (a missing file under `/assets/*`) is a 404 too.
      const routed = routes.find(request.method as HTTPMethod, path) !== null;
      const allowed = routed ? [] : METHODS.filter((method) => method !== request.method && routes.find(method, path));
      const coded =
        allowed.length > 0
          ? new CodedError('method_not_allowed', `${request.method} is not allowed on ${path}; use ${allowed.join(', ')}`)
          : new CodedError('not_found', `no route ${request.method} ${path}`);
      if (allowed.length > 0) void reply.header('allow', allowed.join(', '));
      sendApiError(reply, coded);
    });
  },
  { name: 'svc-errors', fastify: '5.x' },
);
