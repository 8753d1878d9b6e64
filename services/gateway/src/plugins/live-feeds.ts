import fp from 'fastify-plugin';
import { createLiveFeeds, type LiveFeeds } from '../live-feeds.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The announced events of the workers someone on this gateway watches, one subscription per worker. */
    liveFeeds: LiveFeeds;
  }
}

/** `app.liveFeeds`: shared by the event streams, the decision long polls and the egress tunnels. */
export const liveFeedsPlugin = fp(
  async (app) => {
    app.decorate('liveFeeds', createLiveFeeds(app.bus, app.log));
  },
  { name: 'svc-live-feeds', fastify: '5.x', dependencies: ['svc-bus'] },
);
