import fp from 'fastify-plugin';
import { openMessageImages, type MessageImages } from '@svc/bus';
import type { Logger } from '@svc/service-kit';

declare module 'fastify' {
  interface FastifyInstance {
    /** The images of people's messages, kept beside the history (docs/conversations.md, "Images"). */
    messageImages: MessageImages;
  }
}

/** `app.messageImages`: the message route keeps a message's images there, the sidecar and the console read them. Waits for its object store. */
export const messageImagesPlugin = fp<{ logger: Logger }>(
  async (app, { logger }) => {
    app.decorate('messageImages', await openMessageImages(app.bus, logger));
  },
  { name: 'svc-message-images', fastify: '5.x', dependencies: ['svc-bus'] },
);
