import Fastify, {
  LogController,
  type FastifyReply,
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyPluginAsync,
  type FastifyServerOptions,
  type RawServerDefault,
} from 'fastify';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { LocalIssuer, OidcVerifier, WorkerDirectory } from '@svc/auth';
import type { NatsConnection } from '@svc/bus';
import type { Logger } from '@svc/service-kit';
import type { GatewaySettings } from './config.js';
import { authenticationPlugin } from './plugins/authentication.js';
import { busPlugin } from './plugins/bus.js';
import { corsPlugin } from './plugins/cors.js';
import { egressTunnelsPlugin } from './plugins/egress-tunnels.js';
import { errorsPlugin, sendApiError, toCodedError } from './plugins/errors.js';
import { followersPlugin } from './plugins/followers.js';
import { incomingEventsPlugin } from './plugins/incoming-events.js';
import { listenersPlugin, workerPortPlugin } from './plugins/listeners.js';
import { liveFeedsPlugin } from './plugins/live-feeds.js';
import { messageImagesPlugin } from './plugins/message-images.js';
import { workspaceChangesPlugin } from './plugins/workspace-changes.js';
import { modelUsagePlugin } from './plugins/model-usage.js';
import { openapiPlugin } from './plugins/openapi.js';
import { rateLimitPlugin } from './plugins/rate-limit.js';
import { requestContextPlugin, requestIdOf, requestLoggerFactory } from './plugins/request-context.js';
import { settingsPlugin } from './plugins/settings.js';
import { usersPlugin } from './plugins/users.js';
import { websocketsPlugin } from './plugins/websockets.js';
import { workerDirectoryPlugin } from './plugins/worker-directory.js';
import { approvalRoutes } from './routes/approvals.js';
import { auditRoutes } from './routes/audit.js';
import { policyRoutes } from './routes/policy.js';
import { consoleRoutes } from './routes/console.js';
import { controlRoutes } from './routes/control.js';
import { messageRoutes } from './routes/messages.js';
import { messageImageRoutes } from './routes/message-images.js';
import { decisionLinkRoutes } from './routes/decision-links.js';
import { eventStreamRoutes } from './routes/event-stream.js';
import { healthRoutes } from './routes/health.js';
import { localIssuerRoutes } from './routes/local-issuer.js';
import { modelProxyRoutes } from './routes/model-proxy.js';
import { gitProxyRoutes } from './routes/git-proxy.js';
import { workspaceChangeRoutes } from './routes/workspace-changes.js';
import { changesRequestRoutes, workspaceActionRoutes, workspaceFileRoutes } from './routes/workspace-actions.js';
import { sandboxTerminalRoutes, terminalRoutes } from './routes/terminals.js';
import { sdkEventRoutes } from './routes/sdk-events.js';
import { sessionLogRoutes } from './routes/session-logs.js';
import { sessionAccessRoutes, sessionRoutes } from './routes/sessions.js';
import { webhookRoutes } from './routes/webhooks.js';
import { workerRoutes } from './routes/workers.js';

/** The gateway's Fastify instance, typed by its TypeBox schemas; its worker port is `workerListener` (not listening: `start` listens). */
export type GatewayApp = FastifyInstance<RawServerDefault, IncomingMessage, ServerResponse, FastifyBaseLogger, TypeBoxTypeProvider>;

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

function fastifyOptions(logger: Logger, settings: GatewaySettings): FastifyServerOptions {
  return {
    loggerInstance: logger.child({ service: 'gateway' }) as FastifyBaseLogger,
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
  };
}

/**
 * The gateway as a Fastify app (no listening socket: `start` listens, tests `inject`).
 * Every request passes, in order: request id → client IP → CORS → authentication → rate limit
 * → schema validation → handler; logging and error mapping wrap them all. The parts the routes
 * share are decorators of the app (`src/plugins/`), so a route plugin takes no options.
 */
export async function buildGatewayApp(options: GatewayAppOptions): Promise<GatewayApp> {
  const app = Fastify(fastifyOptions(options.logger, options.settings)).withTypeProvider<TypeBoxTypeProvider>();

  // Stage 1: what the rest reads (`app.settings`, `app.bus`, …).
  await app.register(settingsPlugin, { settings: options.settings, instance: options.instance });
  await app.register(busPlugin, { nc: options.nc });
  await app.register(workerDirectoryPlugin, { workers: options.workers });
  await app.register(usersPlugin, { users: options.users, localIssuer: options.localIssuer });
  await app.register(liveFeedsPlugin);
  await app.register(followersPlugin);
  await app.register(modelUsagePlugin, { logger: options.logger });
  await app.register(messageImagesPlugin, { logger: options.logger });
  await app.register(workspaceChangesPlugin, { logger: options.logger });
  await app.register(incomingEventsPlugin);

  // Stage 2: what wraps every request.
  await app.register(errorsPlugin);
  await app.register(requestContextPlugin);
  await app.register(listenersPlugin);
  await app.register(corsPlugin);
  await app.register(authenticationPlugin);
  await app.register(rateLimitPlugin);
  // Unknown routes count against the caller's limit too (probing is not free).
  app.setNotFoundHandler({ preHandler: app.rateLimit() }, app.notFoundHandler);
  await app.register(openapiPlugin);

  // Stage 3: routes. The health routes come before WebSockets, whose plugin wraps the handler of every route registered after it.
  await app.register(healthRoutes);
  await app.register(websocketsPlugin);
  for (const routes of [
    sdkEventRoutes,
    eventStreamRoutes,
    controlRoutes,
    approvalRoutes,
    policyRoutes,
    messageRoutes,
    messageImageRoutes,
    workspaceChangeRoutes,
    workspaceActionRoutes,
    workspaceFileRoutes,
    changesRequestRoutes,
    sessionRoutes,
    sessionAccessRoutes,
    sessionLogRoutes,
    terminalRoutes,
    sandboxTerminalRoutes,
    auditRoutes,
    webhookRoutes,
    decisionLinkRoutes,
  ])
    await app.register(routes);
  await app.register(workerRoutes);
  await app.register(modelProxyRoutes);
  await app.register(gitProxyRoutes);
  // The worker port closes before the parts the routes above use (close hooks run last-registered first).
  await app.register(workerPortPlugin);
  await app.register(egressTunnelsPlugin);
  await app.register(localIssuerRoutes);
  await app.register(consoleRoutes);
  for (const routes of options.routes ?? []) await app.register(routes);

  await app.ready();
  return app;
}
