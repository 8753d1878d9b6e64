import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import {
  contextFromHeaders,
  contextOf,
  counter,
  endSpan,
  histogram,
  LATENCY_BUCKETS_S,
  SpanKind,
  startSpan,
  traceIdOf,
  tracesRequest,
  tracingEnabled,
  type Context,
  type Span,
} from '@svc/service-kit';
import { principalLabel } from '@svc/auth';
import { TRACEPARENT_HEADER } from '@svc/protocol';

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * With tracing on, the request's span in its trace (continuing the caller's `traceparent`):
     * what a message sent on the request's behalf carries (docs/tracing.md).
     */
    traceContext?: Context;
    traceSpan?: Span;
  }
}

/** A caller's X-Request-Id is kept when it is sane (so one id follows a request through proxies). */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export function requestIdOf(request: IncomingMessage): string {
  const offered = request.headers['x-request-id'];
  return typeof offered === 'string' && REQUEST_ID.test(offered) ? offered : randomUUID();
}

type Bindings = Record<string, unknown>;
type LogMethod = (...args: unknown[]) => void;

/**
 * A request's logger, made into a pino child (which carries the request id) only when something
 * logs through it: most requests log nothing but their one request line, which the plugin below
 * writes through the app's logger with the id as a field. (A child per request was ~2 % of a
 * no-op request's cost.)
 */
class RequestLogger implements FastifyBaseLogger {
  #child: FastifyBaseLogger | undefined = undefined;
  /** Fields bound after the request began (`bind`), kept apart until a line is written: binding costs one assignment. */
  #bound: Bindings | undefined = undefined;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    private readonly options: object,
  ) {}

  /** Adds fields to every line written through this logger from now on (a trace id, say). */
  bind(fields: Bindings): void {
    if (this.#child) this.#child = this.#child.child(fields);
    else this.#bound = this.#bound ? { ...this.#bound, ...fields } : fields;
  }

  private get real(): FastifyBaseLogger {
    return (this.#child ??= this.parent.child(this.#bound ? { ...this.bindings, ...this.#bound } : this.bindings, this.options));
  }

  get level() {
    return this.#child?.level ?? this.parent.level;
  }
  set level(level) {
    this.real.level = level;
  }
  // Methods on the prototype, not arrow members: nothing more is made per request.
  fatal(...args: unknown[]): void {
    (this.real.fatal as LogMethod)(...args);
  }
  error(...args: unknown[]): void {
    (this.real.error as LogMethod)(...args);
  }
  warn(...args: unknown[]): void {
    (this.real.warn as LogMethod)(...args);
  }
  info(...args: unknown[]): void {
    (this.real.info as LogMethod)(...args);
  }
  debug(...args: unknown[]): void {
    (this.real.debug as LogMethod)(...args);
  }
  trace(...args: unknown[]): void {
    (this.real.trace as LogMethod)(...args);
  }
  silent(...args: unknown[]): void {
    (this.real.silent as LogMethod)(...args);
  }
  child(bindings: Bindings, options?: object): FastifyBaseLogger {
    return this.real.child(bindings, options);
  }
}

/** Fastify's `childLoggerFactory`: a request logger that becomes a pino child on first use. */
export function requestLoggerFactory(this: unknown, parent: FastifyBaseLogger, bindings: Bindings, options: object): FastifyBaseLogger {
  return new RequestLogger(parent, bindings, options);
}

const httpRequests = counter({
  name: 'svc_http_requests_total',
  help: 'HTTP requests the gateway answered, by method, route (its pattern, so bounded) and status.',
  labelNames: ['method', 'route', 'status'],
});
const httpDurations = histogram({
  name: 'svc_http_request_duration_seconds',
  help: 'How long the gateway took to answer, by method, route and status (a WebSocket: until the upgrade was answered).',
  labelNames: ['method', 'route', 'status'],
  buckets: LATENCY_BUCKETS_S,
});

function headerOf(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return typeof value === 'string' ? value : undefined;
}

/** The request's server span (its trace is kept: `tracesRequest`), under the caller's trace when its `traceparent` names one; its log lines name the trace. */
function startRequestSpan(request: FastifyRequest): void {
  const parent = contextFromHeaders(request, headerOf);
  const route = request.routeOptions.url ?? 'unmatched';
  const span = startSpan(`${request.method} ${route}`, {
    kind: SpanKind.SERVER,
    parent,
    attributes: { 'http.request.method': request.method, 'http.route': route, 'svc.request_id': request.id },
  });
  request.traceSpan = span;
  request.traceContext = contextOf(span, parent);
  // Lazily, like the rest of the request's logger: most requests log nothing through it.
  if (request.log instanceof RequestLogger) request.log.bind({ trace_id: span.spanContext().traceId });
  else request.log = request.log.child({ trace_id: span.spanContext().traceId });
}

/**
 * Echoes the request id and writes one structured log line per request: method, route, status,
 * duration, client IP, principal and (tracing on) trace id. Never headers, so never a token.
 * Counts each answer (`svc_http_requests_total`, `svc_http_request_duration_seconds`). With
 * tracing on, each request is a span. Closes the socket of a refused WebSocket upgrade.
 */
export const requestContextPlugin = fp(
  async (app) => {
    // Declared on every request, set on the traced few: requests keep one shape, so V8's
    // property accesses on them stay monomorphic (set only on some, it cost every request).
    app.decorateRequest('traceContext', undefined);
    app.decorateRequest('traceSpan', undefined);
    // Callback-style hooks: on every request, they cost less than async ones.
    app.addHook('onRequest', (request, reply, done) => {
      void reply.header('x-request-id', request.id);
      // With tracing off, not even the header is read.
      if (tracingEnabled() && tracesRequest(headerOf(request, TRACEPARENT_HEADER))) startRequestSpan(request);
      done();
    });
    app.addHook('onResponse', (request, reply, done) => {
      // A refused upgrade is answered over the raw socket, which nobody closes afterwards; left
      // open, it would also hold up the server's shutdown.
      if (reply.statusCode >= 400 && request.headers.upgrade) request.raw.socket?.destroy();
      // No route matched: one label for all of them, whatever the path (paths are unbounded).
      const labels = { method: request.method, route: request.routeOptions.url ?? 'unmatched', status: String(reply.statusCode) };
      httpRequests.inc(labels);
      httpDurations.observe(labels, reply.elapsedTime / 1000);
      if (request.traceSpan) {
        request.traceSpan.setAttribute('http.response.status_code', reply.statusCode);
        endSpan(request.traceSpan, reply.statusCode >= 500 ? `answered ${reply.statusCode}` : undefined);
      }
      app.log.info(
        {
          request_id: request.id,
          ...(request.traceContext ? { trace_id: traceIdOf(request.traceContext) } : {}),
          method: request.method,
          route: request.routeOptions.url ?? null,
          status: reply.statusCode,
          duration_ms: Math.round(reply.elapsedTime * 100) / 100,
          ip: request.ip,
          principal: request.principal ? principalLabel(request.principal) : null,
        },
        'request',
      );
      done();
    });
  },
  { name: 'svc-request-context', fastify: '5.x' },
);
