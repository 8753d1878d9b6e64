import fp from 'fastify-plugin';
import websocket from '@fastify/websocket';
import { WS_PROTOCOL } from '@svc/protocol';
import { createOpenStreams, type OpenStreams } from '../open-streams.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** This gateway's open WebSockets (event streams and log follows), capped per person. */
    openStreams: OpenStreams;
  }
}

/** WebSockets (`@fastify/websocket`) and `app.openStreams`, which tells each one why at shutdown. */
export const websocketsPlugin = fp(
  async (app) => {
    const streams = createOpenStreams(app.settings.streamLimits);
    app.decorate('openStreams', streams);
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
  },
  { name: 'svc-websockets', fastify: '5.x', dependencies: ['svc-settings'] },
);
