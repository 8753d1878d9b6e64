import fp from 'fastify-plugin';
import type { FastifyRequest } from 'fastify';

import { AuthenticationError, looksLikeWorkerToken, type Principal, type UserPrincipal } from '@svc/auth';
import { CodedError, createChecker, WorkerId, WS_BEARER_PREFIX, type WorkerRecord } from '@svc/protocol';
import { viaWorkerPort } from './listeners.js';

/**
 * Who may call a route: `public` (no credential), `user` (an OIDC JWT; the default, so a route
 * that forgets to say is closed), `worker` (the worker token of the worker named by `:id`), or
 * `worker-or-user` (either; the route still checks that the user may see the worker).
 */
type RouteAuth = 'public' | 'user' | 'worker' | 'worker-or-user';

declare module 'fastify' {
  interface FastifyContextConfig {
    auth?: RouteAuth;
  }
  interface FastifyRequest {
    principal?: Principal;
  }
}

const unauthorized = (message: string) => new CodedError('unauthorized', message);
const workerIdChecker = createChecker<string>(WorkerId);

/** The token a browser offered as a WebSocket subprotocol (`WS_BEARER_PREFIX`), if any. */
function subprotocolToken(request: FastifyRequest): string | undefined {
  const offered = request.headers['sec-websocket-protocol'];
  if (typeof offered !== 'string' || request.headers.upgrade?.toLowerCase() !== 'websocket') return undefined;
  const entry = offered
    .split(',')
    .map((protocol) => protocol.trim())
    .find((protocol) => protocol.startsWith(WS_BEARER_PREFIX));
  return entry?.slice(WS_BEARER_PREFIX.length);
}

function bearerToken(request: FastifyRequest): string {
  const header = request.headers.authorization;
  if (!header) {
    const offered = subprotocolToken(request);
    if (offered) return offered;
    throw unauthorized('missing Authorization header');
  }
  const match = /^Bearer ([^\s]+)$/i.exec(header);
  if (!match) throw unauthorized('the Authorization header must be "Bearer <token>"');
  return match[1]!;
}

/** Authenticates every request by its route's `auth` and sets `request.principal`. */
export const authenticationPlugin = fp(
  async (app) => {
    const { users, workers } = app;
    // Declared on every request (public routes set none): requests keep one shape for V8.
    app.decorateRequest('principal', undefined);
    /** The worker named by `:id`, checked before any lookup: the id is a KV key and must have the protocol's shape. */
    function workerIdOf(request: FastifyRequest, token: string): string {
      const workerId = (request.params as { id?: string }).id;
      if (!looksLikeWorkerToken(token)) throw new CodedError('forbidden', "this endpoint takes the worker's token, not a user token");
      if (workerId === undefined || !workerIdChecker.check(workerId).ok) {
        throw new CodedError('invalid_request', '/params/id must be a worker id (1-64 of A-Z, a-z, 0-9, "_" and "-")');
      }
      return workerId;
    }

    /** Calls `done` at once when the worker's record is at hand (the usual case), else after reading it. */
    function authenticateWorker(request: FastifyRequest, token: string, done: (err?: Error) => void): void {
      let workerId: string;
      const settle = (record: WorkerRecord | undefined) => {
        try {
          workers.checkWorkerToken(workerId, token, record);
          request.principal = { kind: 'worker', workerId };
        } catch (err) {
          return done(err as Error);
        }
        done();
      };
      try {
        workerId = workerIdOf(request, token);
      } catch (err) {
        return done(err as Error);
      }
      const record = workers.known(workerId);
      if (record) return settle(record);
      workers.get(workerId).then(settle, done);
    }

    async function authenticateUser(token: string): Promise<UserPrincipal> {
      if (looksLikeWorkerToken(token)) throw new CodedError('forbidden', "a worker token is valid only on its worker's sidecar endpoints");
      try {
        return await users.verify(token);
      } catch (err) {
        if (err instanceof AuthenticationError) throw new CodedError('unauthorized', err.message, undefined, { cause: err });
        throw err;
      }
    }

    // Callback-style, so a sidecar whose worker is known, or a user whose token was verified
    // recently, passes without a promise.
    app.addHook('onRequest', (request, _reply, done) => {
      // CORS preflights carry no credentials; the CORS plugin answers them.
      if (request.method === 'OPTIONS') return done();
      const routeAuth = request.routeOptions.config.auth ?? 'user';
      // Through the worker port a route either side may call takes the worker's token only.
      const auth = routeAuth === 'worker-or-user' && viaWorkerPort(request) ? 'worker' : routeAuth;
      if (auth === 'public' || request.is404) return done();
      let token: string;
      try {
        token = bearerToken(request);
      } catch (err) {
        return done(err as Error);
      }
      const workerToken = looksLikeWorkerToken(token);
      const known = auth !== 'worker' && !workerToken ? users.remembered(token) : undefined;
      if (known) {
        request.principal = known;
        return done();
      }
      if (auth === 'worker' || (auth === 'worker-or-user' && workerToken)) return authenticateWorker(request, token, done);
      authenticateUser(token).then(
        (principal) => {
          request.principal = principal;
          done();
        },
        (err: Error) => done(err),
      );
    });
  },
  { name: 'svc-authentication', fastify: '5.x', dependencies: ['svc-users', 'svc-worker-directory'] },
);
