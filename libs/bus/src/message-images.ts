import { createHash } from 'node:crypto';
import type { ObjectStore } from '@nats-io/obj';
import type { NatsConnection } from '@nats-io/transport-node';
import { MESSAGE_IMAGES_KEPT_MS, objectBuckets, type MessageImageRefType, type MessageImageType } from '@svc/protocol';
import { retryWithBackoff, type Logger } from '@svc/service-kit';
import { isBusUnavailable } from './connection.js';
import { openObjectStore } from './object-stores.js';

/** An image of a person's message, with its bytes. */
export interface MessageImage {
  media_type: MessageImageType;
  bytes: Uint8Array;
}

/**
 * The images of people's messages (docs/conversations.md, "Images"), kept in a JetStream object
 * store beside the history, which names each by its SHA-256. An image is kept under its worker
 * (`<worker id>/<sha256>`), so a worker's token reads only its own worker's images.
 */
export interface MessageImages {
  /** Keeps the image (once: the same image again is not written again); resolves with what names it. */
  put(workerId: string, image: MessageImage): Promise<MessageImageRefType>;
  /** The image the worker's messages name by `sha256`, or undefined when none is kept (never sent, or older than kept). */
  get(workerId: string, sha256: string): Promise<MessageImage | undefined>;
}

/**
 * The object store of message images, made if missing (with `replicas`), else taken as it is
 * (ensureStreams brings it to SVC_JETSTREAM_REPLICAS).
 */
export async function openMessageImageStore(nc: NatsConnection, replicas = 1): Promise<ObjectStore> {
  return openObjectStore(nc, objectBuckets.messageImages, { keptMs: MESSAGE_IMAGES_KEPT_MS, replicas });
}

const objectName = (workerId: string, sha256: string) => `${workerId}/${sha256}`;

/** `MessageImages` on the object store, opened at a service's start (NATS not answering yet is waited out). */
export async function openMessageImages(nc: NatsConnection, logger: Logger): Promise<MessageImages> {
  const store = await retryWithBackoff('opening the message images store', () => openMessageImageStore(nc), { logger, retryable: isBusUnavailable });
  return {
    async put(workerId, image) {
      const sha256 = createHash('sha256').update(image.bytes).digest('hex');
      const name = objectName(workerId, sha256);
      // Written only when missing: writing it again would purge the first copy's chunks, which no service may.
      if ((await store.info(name)) === null) await store.putBlob({ name, description: image.media_type }, image.bytes);
      return { media_type: image.media_type, sha256, bytes: image.bytes.length };
    },
    async get(workerId, sha256) {
      const info = await store.info(objectName(workerId, sha256));
      if (info === null || info.deleted) return undefined;
      const bytes = await store.getBlob(info.name);
      if (bytes === null) return undefined;
      return { media_type: info.description as MessageImageType, bytes };
    },
  };
}
