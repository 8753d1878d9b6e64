import Type from 'typebox';
import { CodedError, isImageOfType, MESSAGE_LIMITS, MessageImageParams, type MessageImageRefType, type PostMessageBodyType } from '@svc/protocol';
import type { MessageImage, MessageImages } from '@svc/bus';
import { authorizeWorker } from '../auth/authorization.js';
import { errorResponses, routePlugin } from './route-plugin.js';

type SentImage = NonNullable<PostMessageBodyType['images']>[number];

/** A sent image decoded and checked: within the limit (413), and the kind it is said to be (400). */
function decodedImage(image: SentImage, index: number): MessageImage {
  const where = `/body/images/${index}`;
  const padding = image.data.endsWith('==') ? 2 : image.data.endsWith('=') ? 1 : 0;
  const size = Math.floor((image.data.length * 3) / 4) - padding;
  if (size > MESSAGE_LIMITS.imageBytes)
    throw new CodedError('payload_too_large', `${where} is ${size} bytes; an image may be at most ${MESSAGE_LIMITS.imageBytes} bytes (decoded)`);
  const bytes = Buffer.from(image.data, 'base64');
  if (bytes.length === 0) throw new CodedError('invalid_request', `${where}/data is empty`);
  if (!isImageOfType(bytes, image.media_type))
    throw new CodedError('invalid_request', `${where}/data is not ${image.media_type} (it does not begin as one does): send the image's own bytes, base64`);
  return { media_type: image.media_type, bytes };
}

/** A message's images checked and kept beside the history, before the message that names them is published. */
export async function keptImages(images: MessageImages, workerId: string, sent: readonly SentImage[]): Promise<MessageImageRefType[]> {
  if (sent.length > MESSAGE_LIMITS.images)
    throw new CodedError('payload_too_large', `/body/images has ${sent.length} images; a message holds at most ${MESSAGE_LIMITS.images}`);
  const decoded = sent.map(decodedImage);
  try {
    return await Promise.all(decoded.map((image) => images.put(workerId, image)));
  } catch (err) {
    throw new CodedError('unavailable', `the message's images could not be kept (${(err as Error).message}); nothing was sent: try again`, undefined, {
      cause: err,
    });
  }
}

/**
 * `GET /v1/workers/{id}/messages/images/{sha256}`: an image of a person's message, kept beside
 * the history (docs/conversations.md, "Images"), for the sidecar that hands the message to its
 * agent and for the people who may see the worker.
 */
export const messageImageRoutes = routePlugin('svc-message-image-routes', ['svc-worker-directory', 'svc-message-images'], async (app) => {
  app.get(
    '/v1/workers/:id/messages/images/:sha256',
    {
      config: { auth: 'worker-or-user' },
      schema: {
        tags: ['conversations'],
        summary: "An image of a person's message",
        description:
          "The image's bytes, as its `media_type`, named by its SHA-256 in the message's `details.images`. The sidecar reads it (its worker's token, its own worker's images only) to hand the message to the agent; the worker's owner (and admins) to show it. 404 `image_not_found` when none is kept under that name: never sent, or older than kept (docs/conversations.md).",
        params: MessageImageParams,
        response: {
          200: Type.Unsafe<Uint8Array>({ type: 'string', format: 'binary', description: 'The image.' }),
          ...errorResponses(401, 403, 404, 429, 503, 504),
        },
      },
    },
    async (request, reply) => {
      const { id: workerId, sha256 } = request.params;
      await authorizeWorker(request, app.workers, workerId);
      const image = await app.messageImages.get(workerId, sha256).catch((err: unknown) => {
        throw new CodedError('unavailable', `the image could not be read (${(err as Error).message}); try again`, undefined, { cause: err });
      });
      if (!image) throw new CodedError('image_not_found', `worker ${workerId} has no image ${sha256} kept (never sent, or older than kept)`);
      return reply
        .header('content-type', image.media_type)
        .header('cache-control', 'private, max-age=86400, immutable')
        .header('x-content-type-options', 'nosniff')
        .send(Buffer.from(image.bytes));
    },
  );
});
