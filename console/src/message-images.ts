import { isImageOfType, MESSAGE_IMAGE_TYPES, MESSAGE_LIMITS, type MessageImageType } from '@svc/protocol';

/** An image attached to a message being written: the file (for its thumbnail) and its bytes base64, as the API takes them. */
export interface AttachedImage {
  /** Names it on the page: the same file attached twice is two images. */
  id: string;
  name: string;
  file: File;
  mediaType: MessageImageType;
  data: string;
}

/** How each kind of image is called for a person. */
export const IMAGE_KIND_NAMES: Record<MessageImageType, string> = { 'image/png': 'PNG', 'image/jpeg': 'JPEG', 'image/gif': 'GIF', 'image/webp': 'WebP' };

const KINDS_TAKEN = new Intl.ListFormat('en', { type: 'disjunction' }).format(MESSAGE_IMAGE_TYPES.map((type) => IMAGE_KIND_NAMES[type]));

const KIB = 1024;
const MIB = 1024 * KIB;
/** The spread of `String.fromCharCode` takes its arguments on the stack: a bounded number at a time. */
const BASE64_CHUNK = 0x8000;

const isMessageImageType = (type: string): type is MessageImageType => (MESSAGE_IMAGE_TYPES as readonly string[]).includes(type);

/** A size for a person, rounded up: a file just over the limit never reads as the limit itself. */
export function formatSize(bytes: number): string {
  if (bytes < KIB) return `${bytes} bytes`;
  const [unit, name] = bytes < MIB ? [KIB, 'KiB'] : [MIB, 'MiB'];
  return `${Math.ceil((bytes / unit) * 10) / 10} ${name}`;
}

/** Bytes as base64 (no `data:` prefix), as `POST /v1/workers/{id}/messages` takes an image. */
export function toBase64(bytes: Uint8Array): string {
  let binary = '';
  for (let start = 0; start < bytes.length; start += BASE64_CHUNK) binary += String.fromCharCode(...bytes.subarray(start, start + BASE64_CHUNK));
  return btoa(binary);
}

/** The file read as an image a message may carry beside `attached` others, or why it may not (the gateway's own limits, checked before sending). */
async function attachment(file: File, attached: number): Promise<AttachedImage | string> {
  const name = file.name || 'the pasted image';
  if (!isMessageImageType(file.type)) return `${name} is not a ${KINDS_TAKEN} image`;
  if (file.size > MESSAGE_LIMITS.imageBytes) return `${name} is ${formatSize(file.size)}; an image may be at most ${formatSize(MESSAGE_LIMITS.imageBytes)}`;
  if (attached >= MESSAGE_LIMITS.images) return `${name}: a message holds at most ${MESSAGE_LIMITS.images} images`;
  const bytes = new Uint8Array(await file.arrayBuffer());
  // Its type comes from its name; the gateway checks the bytes, so a misnamed file is told apart here.
  if (!isImageOfType(bytes, file.type)) return `${name} is not really a ${IMAGE_KIND_NAMES[file.type]} image (its bytes say otherwise)`;
  return { id: crypto.randomUUID(), name, file, mediaType: file.type, data: toBase64(bytes) };
}

/** Reads `files` to attach beside `attached` images already there: those a message can carry, and why each other cannot. */
export async function readAttachments(files: readonly File[], attached: number): Promise<{ images: AttachedImage[]; refusals: string[] }> {
  const images: AttachedImage[] = [];
  const refusals: string[] = [];
  for (const file of files) {
    const read = await attachment(file, attached + images.length);
    if (typeof read === 'string') refusals.push(read);
    else images.push(read);
  }
  return { images, refusals };
}
