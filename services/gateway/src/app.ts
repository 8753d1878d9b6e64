import Fastify, {
  LogController,
  type FastifyReply,
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyPluginAsync,
  type RawServerDefault,
} from 'fastify';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import cors from '@fastify/cors';
import websocket from '@fastify/websocket';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { type LocalIssuer, type OidcVerifier, type WorkerDirectory } from '@svc/auth';
import { createModelUsageLedger, type NatsConnection } from '@svc/bus';
import type { Logger } from '@svc/service-kit';
import { DEFAULT_COALESCING, DEFAULT_CONSOLE_OIDC_SCOPE, DEFAULT_LOCAL_TOKEN_TTL_S, type GatewayConfig } from './config.js';
import { authenticationPlugin } from './plugins/authentication.js';
import { errorsPlugin, sendApiError, toCodedError } from './plugins/errors.js';
import { allowedHostsOf, createWorkerListener, listenersPlugin } from './plugins/listeners.js';
import { openapiPlugin } from './plugins/openapi.js';
import { rateLimitPlugin } from './plugins/rate-limit.js';
import { requestContextPlugin, requestIdOf, requestLoggerFactory } from './plugins/request-context.js';
import { consoleRoutes } from './routes/console.js';
import { healthRoutes } from './routes/health.js';
import { localIssuerRoutes } from './routes/local-issuer.js';
import { createOpenStreams, eventStreamRoutes } from './routes/event-stream.js';
import { controlRoutes } from './routes/control.js';
import { sessionRoutes } from './routes/sessions.js';
import { auditRoutes } from './routes/audit.js';
import { webhookRoutes } from './routes/webhooks.js';
import { decisionLinkRoutes } from './routes/decision-links.js';
import { workerRoutes } from './routes/workers.js';
import { modelProxyRoutes } from './routes/model-proxy.js';
import { createEgressAddressCheck } from './egress/refused-addresses.js';
import { serveEgressTunnels } from './egress/tunnels.js';
import { createFollowerStats, WS_PROTOCOL, type FollowerStats } from '@svc/protocol';
import { createLiveFeeds } from './live-feeds.js';
import { checkStreamLimits, DEFAULT_STREAM_LIMITS, type StreamLimits } from './stream-limits.js';
import { sdkEventRoutes } from './routes/sdk-events.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Read by @fastify/cors (which does not declare it): `false` turns CORS off for the route. */
    cors?: false;
  }
  interface FastifyInstance {
    /** The refills of this gateway's event followers (WebSocket streams, long-poll decision logs). */
    followers: FollowerStats;
  }
}

export type GatewaySettings = Pick<GatewayConfig, 'trustedProxies' | 'corsOrigins' | 'rateLimitMax' | 'rateLimitWindowMs' | 'bodyLimitBytes' | 'oidcAudience'> &
  Partial<StreamLimits> &
  Partial<
    Pick<
      GatewayConfig,
      | 'anthropicApiKey'
      | 'anthropicUpstreamUrl'
      | 'openaiApiKey'
      | 'openaiUpstreamUrl'
      | 'egressRefused'
      | 'egressAllowedCidrs'
      | 'databaseUrl'
      | 'natsUrl'
      | 'port'
      | 'workerPort'
      | 'healthPort'
      | 'publicUrl'
      | 'allowedHosts'
      | 'consoleDir'
      | 'localTokenTtlSeconds'
      | 'oidcIssuer'
      | 'consoleOidcClientId'
      | 'consoleOidcScope'
      | 'decisionLinkKey'
      | 'userAssertionKey'
      | 'coalesceWindowMs'
      | 'coalesceMaxEvents'
      | 'coalesceMaxBytes'
    >
  >;

/** The gateway's Fastify instance, typed by its TypeBox schemas, with its worker port (not listening: `start` listens). */
export type GatewayApp = FastifyInstance<RawServerDefault, IncomingMessage, ServerResponse, FastifyBaseLogger, TypeBoxTypeProvider> & {
  workerListener: Server;
};

export interface GatewayAppOptions {
  nc: NatsConnection;
  logger: Logger;
  instance: string;
  settings: GatewaySettings;
  users: OidcVerifier;
  workers: WorkerDirectory;
  localIssuer?: LocalIssuer | undefined;
  /** Domain routes, registered behind the whole middleware chain. */
  routes?: FastifyPluginAsync[];
}

/**
 * The gateway as a Fastify app (no listening socket: `start` listens, tests `inject`).
 * Every request passes, in order: request id → client IP → CORS → authentication → rate limit
 * → schema validation → handler; logging and error mapping wrap them all.
 */
export async function buildGatewayApp(options: GatewayAppOptions): Promise<GatewayApp> {
  const { settings } = options;
  const app = Fastify({
    loggerInstance: options.logger.child({ service: 'gateway' }) as FastifyBaseLogger,
    // Our own line per request (request-context plugin) replaces Fastify's two.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'request_id' }),
    childLoggerFactory: requestLoggerFactory,
    genReqId: requestIdOf,
    trustProxy: settings.trustedProxies.length > 0 ? settings.trustedProxies : false,
    bodyLimit: settings.bodyLimitBytes,
    return503OnClosing: true,
    ajv: { customOptions: { removeAdditional: false, allErrors: true, coerceTypes: 'array', useDefaults: true } },
    // Errors Fastify meets before routing (a malformed URL, say) become APIErrors too.
    frameworkErrors: (error, _request, reply) => sendApiError(reply as FastifyReply, toCodedError(error)),
  }).withTypeProvider<TypeBoxTypeProvider>();

  // Stage 1: what wraps every request.
  await app.register(errorsPlugin);
  await app.register(requestContextPlugin);
  await app.register(listenersPlugin, { allowedHosts: allowedHostsOf(settings.allowedHosts ?? [], settings.publicUrl) });
  const workerListener = createWorkerListener(app);
  // Sidecars are not browsers: their routes (worker tokens) skip the CORS hook, whose work on
  // every request was 4 % of a busy gateway's CPU. Preflights still reach the CORS plugin.
  app.addHook('onRoute', (route) => {
    if (route.config?.auth === 'worker') route.config = { ...route.config, cors: false };
  });
  await app.register(cors, {
    origin: settings.corsOrigins.length > 0 ? settings.corsOrigins : false,
    methods: ['GET', 'POST', 'DELETE', 'OPTIONS'],
    allowedHeaders: ['authorization', 'content-type', 'x-request-id'],
    exposedHeaders: ['x-request-id', 'retry-after', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'],
    maxAge: 600,
    // A bare OPTIONS (no preflight headers) gets an empty 204, not a text/plain 400.
    strictPreflight: false,
  });
  await app.register(authenticationPlugin, { users: options.users, workers: options.workers });
  await app.register(rateLimitPlugin, { max: settings.rateLimitMax, windowMs: settings.rateLimitWindowMs });
  // Unknown routes count against the caller's limit too (probing is not free).
  app.setNotFoundHandler({ preHandler: app.rateLimit() }, app.notFoundHandler);
  await app.register(openapiPlugin);

  // Stage 2: routes.
  await app.register(healthRoutes, { nc: options.nc, instance: options.instance });
  const streamLimits = checkStreamLimits({ ...DEFAULT_STREAM_LIMITS, ...definedOf(settings, Object.keys(DEFAULT_STREAM_LIMITS) as Array<keyof StreamLimits>) });
  const streams = createOpenStreams(streamLimits);
  await app.register(websocket, {
    options: {
      maxPayload: 64 * 1024,
      // A browser's token rides in the subprotocols it offers; the answer names ours, never the token.
      handleProtocols: (protocols) => (protocols.has(WS_PROTOCOL) ? WS_PROTOCOL : false),
    },
    // At shutdown every viewer learns where to resume (instead of a bare close).
    preClose(done) {
      streams.closeAll();
      this.websocketServer.close();
      done();
    },
  });
  const live = createLiveFeeds(options.nc, app.log);
  await app.register(sdkEventRoutes, {
    nc: options.nc,
    workers: options.workers,
    coalescing: {
      windowMs: settings.coalesceWindowMs ?? DEFAULT_COALESCING.windowMs,
      maxEvents: settings.coalesceMaxEvents ?? DEFAULT_COALESCING.maxEvents,
      maxBytes: settings.coalesceMaxBytes ?? DEFAULT_COALESCING.maxBytes,
    },
  });
  const followers = createFollowerStats();
  app.decorate('followers', followers);
  await app.register(eventStreamRoutes, { nc: options.nc, workers: options.workers, live, streams, followers, limits: streamLimits });
  // People's decisions carry an assertion of who decides, signed with this key (docs/nats-security.md).
  if (!settings.userAssertionKey) app.log.warn("SVC_USER_ASSERTION_KEY is not set: people's decisions are refused (503) until it is");
  await app.register(controlRoutes, {
    nc: options.nc,
    workers: options.workers,
    live,
    followers,
    maxLongPollsPerWorker: streamLimits.maxLongPollsPerWorker,
    userAssertionKey: settings.userAssertionKey,
  });
  await app.register(sessionRoutes, { nc: options.nc, streams });
  await app.register(auditRoutes, { nc: options.nc });
  await app.register(webhookRoutes, { nc: options.nc });
  await app.register(decisionLinkRoutes, {
    nc: options.nc,
    workers: options.workers,
    linkKey: settings.decisionLinkKey,
    userAssertionKey: settings.userAssertionKey,
  });
  const ledger = await createModelUsageLedger(options.nc, options.logger);
  await app.register(workerRoutes, { workers: options.workers, ledger });
  await app.register(modelProxyRoutes, {
    nc: options.nc,
    workers: options.workers,
    ledger,
    upstreams: {
      anthropic: { url: settings.anthropicUpstreamUrl ?? 'https://api.anthropic.com', apiKey: settings.anthropicApiKey },
      openai: { url: settings.openaiUpstreamUrl ?? 'https://api.openai.com', apiKey: settings.openaiApiKey },
    },
  });
  const tunnels = serveEgressTunnels({
    servers: [app.server, workerListener],
    nc: options.nc,
    workers: options.workers,
    live,
    logger: app.log,
    addresses: await createEgressAddressCheck({
      natsUrl: settings.natsUrl,
      databaseUrl: settings.databaseUrl,
      publicUrl: settings.publicUrl,
      refused: settings.egressRefused ?? [],
      allowedCidrs: settings.egressAllowedCidrs ?? [],
      ownPorts: [settings.port, settings.workerPort, settings.healthPort].filter((port): port is number => port !== undefined && port > 0),
    }),
  });
  app.addHook('onClose', async () => {
    tunnels.close();
    workerListener.closeAllConnections();
    if (workerListener.listening) await new Promise<void>((resolve) => workerListener.close(() => resolve()));
  });
  if (options.localIssuer)
    await app.register(localIssuerRoutes, {
      issuer: options.localIssuer,
      users: options.users,
      audience: settings.oidcAudience,
      ttlSeconds: settings.localTokenTtlSeconds ?? DEFAULT_LOCAL_TOKEN_TTL_S,
    });
  const providerSignIn =
    settings.oidcIssuer && settings.consoleOidcClientId
      ? { issuer: settings.oidcIssuer, client_id: settings.consoleOidcClientId, scope: settings.consoleOidcScope ?? DEFAULT_CONSOLE_OIDC_SCOPE }
      : undefined;
  await app.register(consoleRoutes, {
    dir: settings.consoleDir,
    signIn: { local: options.localIssuer !== undefined, ...(providerSignIn ? { oidc: providerSignIn } : {}) },
  });
  for (const routes of options.routes ?? []) await app.register(routes);

  await app.ready();
  return Object.assign(app, { workerListener });
}

/** The settings among `keys` that are set (an unset one keeps its default). */
function definedOf<T extends object, K extends keyof T>(settings: T, keys: readonly K[]): Partial<Pick<T, K>> {
  return Object.fromEntries(keys.filter((key) => settings[key] !== undefined).map((key) => [key, settings[key]])) as Partial<Pick<T, K>>;
}
