import fp from 'fastify-plugin';
import type { NatsConnection } from '@svc/bus';

declare module 'fastify' {
  interface FastifyInstance {
    /** The NATS connection: every route reaches the services through it, never the database. */
    bus: NatsConnection;
  }
}

/** `app.bus`: the service's NATS connection (its owner, `start`, closes it). */
export const busPlugin = fp<{ nc: NatsConnection }>(
  async (app, { nc }) => {
    app.decorate('bus', nc);
  },
  { name: 'svc-bus', fastify: '5.x' },
);
