import fp from 'fastify-plugin';
import cors from '@fastify/cors';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Read by @fastify/cors (which does not declare it): `false` turns CORS off for the route. */
    cors?: false;
  }
}

/** CORS for the browsers of `SVC_CORS_ORIGINS` (none by default). */
export const corsPlugin = fp(
  async (app) => {
    // Sidecars are not browsers: their routes (worker tokens) skip the CORS hook, whose work on
    // every request shows on a busy gateway (docs/benchmarks.md, "ingest"). Preflights still reach the CORS plugin.
    app.addHook('onRoute', (route) => {
      if (route.config?.auth === 'worker') route.config = { ...route.config, cors: false };
    });
    await app.register(cors, {
      origin: app.settings.corsOrigins.length > 0 ? app.settings.corsOrigins : false,
      methods: ['GET', 'POST', 'DELETE', 'OPTIONS'],
      allowedHeaders: ['authorization', 'content-type', 'x-request-id'],
      exposedHeaders: ['x-request-id', 'retry-after', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'],
      maxAge: 600,
      // A bare OPTIONS (no preflight headers) gets an empty 204, not a text/plain 400.
      strictPreflight: false,
    });
  },
  { name: 'svc-cors', fastify: '5.x', dependencies: ['svc-settings'] },
);
