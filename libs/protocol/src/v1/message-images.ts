import Type, { type Static } from 'typebox';
import type { StoredEvent } from './envelope.js';
import { createChecker } from './validation.js';

/**
 * How large a person's message may be (docs/conversations.md, "Limits"): beyond these the
 * gateway answers 413 `payload_too_large`. Text is counted in characters as JSON gives them; an
 * image by its decoded bytes (3 MiB: within both model APIs' limits once base64-encoded).
 */
export const MESSAGE_LIMITS = {
  textChars: 32_768,
  images: 4,
  /** Per image, decoded. */
  imageBytes: 3 * 1024 * 1024,
} as const;

/**
 * The largest body `POST /v1/workers/{id}/messages` reads: every image at its limit in base64,
 * the text at its limit with every character escaped (`\uXXXX`), and room for the rest.
 * Beyond it the gateway stops reading (413) before anything is decoded.
 */
export const MESSAGE_BODY_LIMIT_BYTES = MESSAGE_LIMITS.images * Math.ceil(MESSAGE_LIMITS.imageBytes / 3) * 4 + MESSAGE_LIMITS.textChars * 6 + 64 * 1024;

/** The image kinds both model APIs take. */
export const MESSAGE_IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'] as const;
export type MessageImageType = (typeof MESSAGE_IMAGE_TYPES)[number];

/** How long the control plane keeps a message's images (the history keeps their digest and size beyond). */
export const MESSAGE_IMAGES_KEPT_MS = 7 * 24 * 3600 * 1000;

const Sha256Hex = Type.String({ pattern: '^[0-9a-f]{64}$', description: "The image's SHA-256, hex: it names the image." });
export const MessageImageParams = Type.Object({ id: Type.String(), sha256: Sha256Hex });

/**
 * An image of a person's message as the history holds it (`details.images` of its
 * `person_message` event): not the bytes, which the control plane keeps beside the history
 * (`GET /v1/workers/{id}/messages/images/{sha256}`), but what names them.
 */
const MessageImageRef = Type.Object(
  {
    media_type: Type.Enum(MESSAGE_IMAGE_TYPES),
    sha256: Sha256Hex,
    bytes: Type.Integer({ minimum: 1, maximum: MESSAGE_LIMITS.imageBytes }),
  },
  { additionalProperties: false },
);
export type MessageImageRefType = Static<typeof MessageImageRef>;

const isImageRefs = createChecker<MessageImageRefType[]>(Type.Array(MessageImageRef, { maxItems: MESSAGE_LIMITS.images }));

/** The images a stored person's message names (none when it names none, or names them in a shape no client wrote). */
export function personMessageImages(event: StoredEvent<'system'>): MessageImageRefType[] {
  const images = event.data.details?.['images'];
  return images !== undefined && isImageRefs.check(images).ok ? (images as MessageImageRefType[]) : [];
}

/** How each kind of image begins (its file signature): data that does not is not that image. */
const SIGNATURES: Record<MessageImageType, (bytes: Uint8Array) => boolean> = {
  'image/png': (b) => startsWith(b, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
  'image/jpeg': (b) => startsWith(b, [0xff, 0xd8, 0xff]),
  'image/gif': (b) => startsWith(b, [...'GIF87a'].map(code)) || startsWith(b, [...'GIF89a'].map(code)),
  'image/webp': (b) => startsWith(b, [...'RIFF'].map(code)) && startsWith(b.subarray(8), [...'WEBP'].map(code)),
};
const code = (character: string) => character.charCodeAt(0);
const startsWith = (bytes: Uint8Array, prefix: readonly number[]) => bytes.length >= prefix.length && prefix.every((byte, i) => bytes[i] === byte);

/** Whether the bytes are an image of the kind they are said to be (by their signature). */
export const isImageOfType = (bytes: Uint8Array, mediaType: MessageImageType): boolean => SIGNATURES[mediaType](bytes);
