import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import fp from 'fastify-plugin';
import { principalLabel } from '@svc/auth';

/** A caller's X-Request-Id is kept when it is sane (so one id follows a request through proxies). */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export function requestIdOf(request: IncomingMessage): string {
  const offered = request.headers['x-request-id'];
  return typeof offered === 'string' && REQUEST_ID.test(offered) ? offered : randomUUID();
}

/**
 * Echoes the request id and writes one structured log line per request: method, route, status,
 * duration, client IP and principal. Never headers, so never a token.
 */
export const requestContextPlugin = fp(
  async (app) => {
    // Callback-style hooks: on every request, they cost less than async ones.
    app.addHook('onRequest', (request, reply, done) => {
      void reply.header('x-request-id', request.id);
      done();
    });
    app.addHook('onResponse', (request, reply, done) => {
      request.log.info(
        {
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
