import { createHash } from 'node:crypto';
import {
  apiPaths,
  isImageOfType,
  isPersonMessage,
  personMessageId,
  personMessageImages,
  SYSTEM_SUBTYPES,
  type MessageImageRefType,
  type StoredEvent,
} from '@svc/protocol';
import type { AgentEvent, ImageForAgent } from './adapters/adapter.js';
import type { ControlPlaneClient } from './http-client.js';

/** The images fetched for each person's message on its way to the agent (dropped with the message). */
const fetched = new WeakMap<StoredEvent, readonly ImageForAgent[]>();

/** The control plane did not give an image now (unreachable, busy): the message waits, and is asked for again. */
class ImagesNotReady extends Error {
  override readonly name = 'ImagesNotReady';
  constructor(
    reason: string,
    readonly retryAfterMs?: number,
  ) {
    super(`an image of a person's message could not be fetched (${reason})`);
  }
}

/** The history's word that an image of a message was not given to the agent, and why. */
function imageNotGiven(message: StoredEvent<'system'>, image: MessageImageRefType, why: string): AgentEvent {
  return {
    type: 'system',
    data: {
      level: 'warn',
      message: `An image of the message (${image.media_type}, ${image.bytes} bytes) was not given to the agent: ${why}.`,
      subtype: SYSTEM_SUBTYPES.messageUndelivered,
      details: { message_id: personMessageId(message), image_sha256: image.sha256 },
    },
  };
}

/**
 * Fetches the images a person's message names (`details.images`) from the control plane, with
 * the worker's token, before the message goes on to the agent: each must be the very bytes the
 * message names (its SHA-256 and size) and the kind it says. One the control plane no longer
 * keeps, or that is not what the message names, is said in the history (`record`) and left out;
 * the control plane out of reach throws `ImagesNotReady`, and the message waits.
 */
export async function fetchMessageImages(
  client: Pick<ControlPlaneClient, 'fetchBytes'>,
  workerId: string,
  input: StoredEvent,
  record: (event: AgentEvent) => void,
): Promise<void> {
  if (!isPersonMessage(input)) return;
  const named = personMessageImages(input);
  if (named.length === 0) return;
  const images: ImageForAgent[] = [];
  const notGiven: AgentEvent[] = [];
  for (const image of named) {
    const outcome = await client.fetchBytes(apiPaths.messageImage(workerId, image.sha256));
    if (!outcome.ok) {
      if (outcome.retryable) throw new ImagesNotReady(outcome.reason, outcome.retryAfterMs);
      notGiven.push(imageNotGiven(input, image, `the control plane answered ${outcome.reason}`));
      continue;
    }
    const { bytes } = outcome;
    const digest = createHash('sha256').update(bytes).digest('hex');
    if (digest !== image.sha256 || bytes.length !== image.bytes || !isImageOfType(bytes, image.media_type)) {
      notGiven.push(imageNotGiven(input, image, 'what came back is not the image the message names'));
      continue;
    }
    images.push({ media_type: image.media_type, data: bytes.toString('base64') });
  }
  fetched.set(input, images);
  notGiven.forEach(record);
}

/** The images fetched for a person's message (none when it names none, or before `fetchMessageImages`). */
export const imagesOf = (message: StoredEvent): readonly ImageForAgent[] => fetched.get(message) ?? [];

/** For an agent given text only: the history's word that the message's images were not given to it (none when it had none). */
export function imagesNotGiven(message: StoredEvent<'system'>, adapter: string): AgentEvent[] {
  const images = imagesOf(message).length;
  if (images === 0) return [];
  const data = {
    level: 'warn' as const,
    message: `The message's ${images} image(s) were not given to the agent: the ${adapter} adapter hands it text only.`,
    subtype: SYSTEM_SUBTYPES.messageUndelivered,
    details: { message_id: personMessageId(message) },
  };
  return [{ type: 'system', data }];
}
