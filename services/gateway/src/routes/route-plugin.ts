import fp from 'fastify-plugin';
import { APIErrorSchema } from '@svc/protocol';
import type { FastifyBaseLogger, RawServerDefault } from 'fastify';
import type { FastifyPluginAsyncTypebox, TypeBoxTypeProvider } from '@fastify/type-provider-typebox';

/** The gateway's shared parts, by the name of the plugin that decorates the app with each (`src/plugins/`). */
export type GatewayPart =
  | 'svc-settings'
  | 'svc-bus'
  | 'svc-worker-directory'
  | 'svc-users'
  | 'svc-live-feeds'
  | 'svc-followers'
  | 'svc-websockets'
  | 'svc-model-usage'
  | 'svc-message-images'
  | 'svc-workspace-changes'
  | 'svc-incoming-events';

/**
 * A plugin of routes: encapsulated (its hooks, parsers and error handler stay its own), named, and
 * refused at start, naming what is missing, when a part it reads (`app.bus`, …) is not registered
 * before it. It takes no options: what it needs, it reads from the app.
 */
export function routePlugin(name: string, parts: readonly GatewayPart[], routes: FastifyPluginAsyncTypebox): FastifyPluginAsyncTypebox {
  return fp<Record<never, never>, RawServerDefault, TypeBoxTypeProvider, FastifyBaseLogger, FastifyPluginAsyncTypebox>(routes, {
    name,
    dependencies: [...parts],
    fastify: '5.x',
    encapsulate: true,
  });
}

/** A route's error answers for its schema: an `APIError` under each status. */
export function errorResponses<Status extends number>(...statuses: Status[]): Record<Status, typeof APIErrorSchema> {
  return Object.fromEntries(statuses.map((status) => [status, APIErrorSchema])) as Record<Status, typeof APIErrorSchema>;
}
