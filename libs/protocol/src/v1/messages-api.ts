import Type, { type Static } from 'typebox';
import type { EventData } from './events.js';
import type { StoredEvent } from './envelope.js';
import { MESSAGE_IMAGE_TYPES, MESSAGE_LIMITS, type MessageImageRefType } from './message-images.js';
import { WorkerId } from './primitives.js';
import { parseSource } from './provenance.js';
import { SYSTEM_SUBTYPES } from './system-subtypes.js';
import { isTerminalRequest } from './terminals.js';

const ClientMessageId = Type.String({
  minLength: 1,
  maxLength: 128,
  pattern: '^[A-Za-z0-9._:-]+$',
  description: "The client's own id for this message: sent again (a retry), it is stored once and answered with the same `message_id`.",
});

/** `POST /v1/workers/{id}/messages`: a person's message to the agent. */
export const PostMessageBody = Type.Object(
  {
    text: Type.String({ description: `What the person says (at most ${MESSAGE_LIMITS.textChars} characters). May be empty only with an image.` }),
    images: Type.Optional(
      Type.Array(
        Type.Object(
          {
            media_type: Type.Enum(MESSAGE_IMAGE_TYPES),
            data: Type.String({ pattern: '^[A-Za-z0-9+/]*={0,2}$', description: 'The image, base64.' }),
          },
          { additionalProperties: false },
        ),
        { minItems: 1, description: `At most ${MESSAGE_LIMITS.images}, each at most ${MESSAGE_LIMITS.imageBytes} bytes decoded (beyond: 413).` },
      ),
    ),
    client_message_id: Type.Optional(ClientMessageId),
  },
  { additionalProperties: false },
);
export type PostMessageBodyType = Static<typeof PostMessageBody>;

/** `202`: the message is durable and on its way to the agent. */
export const PostMessageResponse = Type.Object(
  {
    message_id: Type.String({ description: 'Names the message in the history (`details.message_id` of its `person_message` event).' }),
    worker_id: WorkerId,
    client_message_id: Type.Optional(ClientMessageId),
  },
  { additionalProperties: false },
);
export type PostMessageResponseType = Static<typeof PostMessageResponse>;

/** A person's message as the history holds it: a `system` event of subtype `person_message`, written by the control plane for that person. */
export function personMessageData(text: string, messageId: string, clientMessageId?: string, images: readonly MessageImageRefType[] = []): EventData<'system'> {
  return {
    level: 'info',
    message: text,
    subtype: SYSTEM_SUBTYPES.personMessage,
    details: {
      message_id: messageId,
      ...(clientMessageId === undefined ? {} : { client_message_id: clientMessageId }),
      ...(images.length === 0 ? {} : { images: images.map((image) => ({ ...image })) }),
    },
  };
}

/** The uid of a person's message: one per `message_id`, so a retried message is stored once. */
export const personMessageUid = (messageId: string) => `message:${messageId}`;

/** `202` to `POST /v1/workers/{id}/interrupt`: the interrupt is durable and on its way to the agent. */
export const PostInterruptResponse = Type.Object(
  {
    interrupt_id: Type.String({ description: 'Names the interrupt in the history (`details.interrupt_id` of its `person_interrupt` event).' }),
    worker_id: WorkerId,
  },
  { additionalProperties: false },
);
export type PostInterruptResponseType = Static<typeof PostInterruptResponse>;

/** A person's interrupt as the history holds it: a `system` event of subtype `person_interrupt`. */
export function personInterruptData(interruptId: string): EventData<'system'> {
  return {
    level: 'info',
    message: "Interrupt: end the agent's current turn.",
    subtype: SYSTEM_SUBTYPES.personInterrupt,
    details: { interrupt_id: interruptId },
  };
}

/** The uid of a person's interrupt. */
export const personInterruptUid = (interruptId: string) => `interrupt:${interruptId}`;

/**
 * Whether a stored event is a `system` event of `subtype` that a person wrote: the subtype is
 * the control plane's, and the source says a person's (never a worker's, even one stored before
 * the subtype was reserved).
 */
function isPersons(event: Pick<StoredEvent, 'type' | 'data' | 'source'>, subtype: string): event is StoredEvent<'system'> {
  return event.type === 'system' && (event.data as EventData<'system'>).subtype === subtype && parseSource(event.source).kind === 'person';
}

/** Whether a stored event is a person's interrupt. */
export const isPersonInterrupt = (event: Pick<StoredEvent, 'type' | 'data' | 'source'>): event is StoredEvent<'system'> =>
  isPersons(event, SYSTEM_SUBTYPES.personInterrupt);

/** Whether a stored event is a person's request for the workspace's changes now. */
export const isChangesRequest = (event: Pick<StoredEvent, 'type' | 'data' | 'source'>): event is StoredEvent<'system'> =>
  isPersons(event, SYSTEM_SUBTYPES.changesRequested);

/** Whether a stored event is a person's message to the agent. */
export const isPersonMessage = (event: Pick<StoredEvent, 'type' | 'data' | 'source'>): event is StoredEvent<'system'> =>
  isPersons(event, SYSTEM_SUBTYPES.personMessage);

/** A person's message's `message_id` (`details.message_id`), if the event carries one. */
export function personMessageId(event: StoredEvent<'system'>): string | undefined {
  const id = event.data.details?.['message_id'];
  return typeof id === 'string' ? id : undefined;
}

/**
 * What the sidecar takes from its control channel: decisions, people's messages and interrupts
 * (for the agent), and people's terminal and changes requests (for the sidecar itself).
 */
export function isAgentInput(event: Pick<StoredEvent, 'type' | 'data' | 'source'>): boolean {
  return event.type === 'control_response' || isPersonMessage(event) || isPersonInterrupt(event) || isTerminalRequest(event) || isChangesRequest(event);
}
