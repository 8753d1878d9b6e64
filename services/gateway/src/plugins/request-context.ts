import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { FastifyBaseLogger } from 'fastify';
import fp from 'fastify-plugin';
import { counter, histogram, LATENCY_BUCKETS_S } from '@svc/service-kit';
import { principalLabel } from '@svc/auth';

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
  #child: FastifyBaseLogger | undefined;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    private readonly options: object,
  ) {}

  private get real(): FastifyBaseLogger {
    return (this.#child ??= this.parent.child(this.bindings, this.options));
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

/**
 * Echoes the request id and writes one structured log line per request: method, route, status,
 * duration, client IP and principal. Never headers, so never a token. Counts each answer
 * (`svc_http_requests_total`, `svc_http_request_duration_seconds`). Closes the socket of a
 * refused WebSocket upgrade.
 */
export const requestContextPlugin = fp(
  async (app) => {
    // Callback-style hooks: on every request, they cost less than async ones.
    app.addHook('onRequest', (request, reply, done) => {
      void reply.header('x-request-id', request.id);
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
      app.log.info(
        {
          request_id: request.id,
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
