import fp from 'fastify-plugin';
import rateLimit from '@fastify/rate-limit';
import { principalLabel } from '@svc/auth';
import { CodedError } from '@svc/protocol';

/**
 * Per-principal rate limits: a user by `sub`, a sidecar by worker id, anyone else by client IP.
 * Runs after authentication (so the principal is known) and before the body is read.
 */
export const rateLimitPlugin = fp(
  async (app) => {
    await app.register(rateLimit, {
      global: true,
      // Route-level onRequest hooks run after the app's, so after authentication (and in the
      // same pass over the hooks, which a stage of its own would not be).
      hook: 'onRequest',
      max: app.settings.rateLimitMax,
      timeWindow: app.settings.rateLimitWindowMs,
      // Limit headers only when they matter (near or over the limit): smaller answers otherwise.
      addHeadersOnExceeding: { 'x-ratelimit-limit': false, 'x-ratelimit-remaining': false, 'x-ratelimit-reset': false },
      keyGenerator: (request) => (request.principal ? principalLabel(request.principal) : `ip:${request.ip}`),
      errorResponseBuilder: (_request, context) =>
        Object.assign(
          new CodedError('rate_limited', `rate limit of ${context.max} requests per ${context.after} reached; retry in ${Math.ceil(context.ttl / 1000)} s`),
          {
            statusCode: 429,
          },
        ),
    });
  },
  { name: 'svc-rate-limit', fastify: '5.x', dependencies: ['svc-settings', 'svc-authentication'] },
);
