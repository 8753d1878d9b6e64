import fp from 'fastify-plugin';
import { createFollowerStats, type FollowerStats } from '@svc/protocol';

declare module 'fastify' {
  interface FastifyInstance {
    /** The refills of this gateway's event followers (WebSocket streams, long-poll input logs). */
    followers: FollowerStats;
  }
}

/** `app.followers`: one count for every follower on this gateway, so a refill (a lost announcement) shows. */
export const followersPlugin = fp(
  async (app) => {
    app.decorate('followers', createFollowerStats());
  },
  { name: 'svc-followers', fastify: '5.x' },
);
