import { createHash, randomBytes } from 'node:crypto';
import {
  CodedError,
  isEndedStatus,
  MESSAGE_BODY_LIMIT_BYTES,
  MESSAGE_LIMITS,
  personInterruptData,
  personInterruptUid,
  personMessageData,
  personMessageUid,
  personSource,
  PostMessageBody,
  PostInterruptResponse,
  PostMessageResponse,
  WorkerParams,
  type IncomingEvent,
  type PersonChannel,
  type PostInterruptResponseType,
  type PostMessageResponseType,
  type WorkerRecord,
} from '@svc/protocol';
import type { FastifyRequest } from 'fastify';
import type { UserPrincipal, WorkerDirectory } from '@svc/auth';
import { authorizeWorker } from '../auth/authorization.js';
import { channelOf } from './audit.js';
import { keptImages } from './message-images.js';
import { errorResponses, routePlugin } from './route-plugin.js';

const errors = errorResponses(400, 401, 403, 404, 409, 413, 429, 501, 503, 504);

/**
 * A message's id: from the person's own id for it when they gave one (so their retry names the
 * same message, and its uid makes the store keep it once; another person's same id is another
 * message), otherwise new.
 */
function messageIdOf(workerId: string, person: string, clientMessageId: string | undefined): string {
  if (clientMessageId === undefined) return `msg_${randomBytes(12).toString('base64url')}`;
  return `msg_${createHash('sha256').update(`${workerId}\n${person}\n${clientMessageId}`).digest('base64url').slice(0, 22)}`;
}

/** Why a worker can take nothing more, beyond its status: a conversation whose sandbox was kept no longer, a session deleted. */
function whyEnded(record: WorkerRecord): string {
  if (record.status === 'stopped') return ' (its session was deleted)';
  if (record.activity === 'suspended' && record.keep_sandbox_s !== undefined)
    return ` (suspended longer than its keep_sandbox_s, ${record.keep_sandbox_s} s: its sandbox is gone, so its conversation cannot be resumed; start a new session)`;
  return '';
}

/** The worker a person may steer now, and who they are: theirs (or an admin's to see), not ended; a worker token may not. */
async function steerableWorker(
  request: FastifyRequest,
  workers: WorkerDirectory,
  workerId: string,
  what: string,
): Promise<{ record: WorkerRecord; person: UserPrincipal }> {
  const record = await authorizeWorker(request, workers, workerId, 'operator');
  const person = request.principal!;
  if (person.kind !== 'user') throw new CodedError('forbidden', `${what} are sent by people`);
  if (isEndedStatus(record.status)) throw new CodedError('worker_ended', `worker ${workerId} is ${record.status}${whyEnded(record)}; it takes no more ${what}`);
  return { record, person };
}

/**
 * `POST /v1/workers/{id}/messages` and `…/interrupt`: a person's message to the agent, and their
 * asking it to end its turn (docs/conversations.md). Each is published for the worker's one
 * writer like the agent's own events, sourced to the person, and answered 202 once durable; the
 * sidecar takes it from its control channel.
 */
export const messageRoutes = routePlugin('svc-message-routes', ['svc-worker-directory', 'svc-incoming-events', 'svc-message-images'], async (app) => {
  /** Publishes a person's event for the worker's one writer, sourced to them; resolves once durable. */
  const publishForPerson = (request: FastifyRequest, person: UserPrincipal, workerId: string, event: IncomingEvent) => {
    const source = personSource(channelOf(request) as PersonChannel, person.sub);
    return app.incomingEvents.publish(workerId, [event], { requestId: request.id, receivedAt: event.ts, trace: request.traceContext, sourceOf: () => source });
  };

  app.post(
    '/v1/workers/:id/messages',
    {
      // Images come base64 in the body: up to the message's own limits, not the gateway's default.
      bodyLimit: MESSAGE_BODY_LIMIT_BYTES,
      schema: {
        tags: ['conversations'],
        summary: "Send a message to the worker's agent",
        description: `Answered 202 with its \`message_id\` once durable; it is stored in the history as a \`system\` event of subtype \`person_message\` and handed to the agent once. A repeated \`client_message_id\` is stored once and answered with the same \`message_id\`. For the worker's owner (and admins); a worker token gets 403. Images (PNG, JPEG, GIF, WebP) are kept beside the history, which names each by its SHA-256 (\`details.images\`). 400 when the text is empty and there is no image, or an image's data is not the kind it is said to be; 413 \`payload_too_large\` beyond ${MESSAGE_LIMITS.textChars} characters, ${MESSAGE_LIMITS.images} images or ${MESSAGE_LIMITS.imageBytes} bytes an image (decoded); 409 \`worker_ended\` once the worker has ended, 409 \`not_conversational\` when its session runs one prompt only.`,
        params: WorkerParams,
        body: PostMessageBody,
        response: { 202: PostMessageResponse, ...errors },
      },
    },
    async (request, reply) => {
      const workerId = request.params.id;
      const { record, person } = await steerableWorker(request, app.workers, workerId, 'messages');
      if (record.mode !== 'conversation')
        throw new CodedError(
          'not_conversational',
          `worker ${workerId} runs one prompt and no more (its template's [session] mode is "one_shot"): start a session whose template has mode = "conversation"`,
        );
      const { text, images = [], client_message_id: clientMessageId } = request.body;
      if (text.length > MESSAGE_LIMITS.textChars)
        throw new CodedError('payload_too_large', `/body/text has ${text.length} characters; a message holds at most ${MESSAGE_LIMITS.textChars}`);
      if (text.trim() === '' && images.length === 0) throw new CodedError('invalid_request', '/body/text is empty: say something (or send an image)');
      const imageRefs = await keptImages(app.messageImages, workerId, images);
      const messageId = messageIdOf(workerId, person.sub, clientMessageId);
      const ts = new Date().toISOString();
      await publishForPerson(request, person, workerId, {
        type: 'system',
        uid: personMessageUid(messageId),
        ts,
        data: personMessageData(text, messageId, clientMessageId, imageRefs),
      });
      const answer: PostMessageResponseType = {
        message_id: messageId,
        worker_id: workerId,
        ...(clientMessageId === undefined ? {} : { client_message_id: clientMessageId }),
      };
      return reply.code(202).send(answer);
    },
  );

  app.post(
    '/v1/workers/:id/interrupt',
    {
      schema: {
        tags: ['conversations'],
        summary: "End the agent's current turn, not the worker",
        description:
          "Answered 202 with its `interrupt_id` once durable; stored in the history as a `system` event of subtype `person_interrupt` and handed to the agent once: Claude Code's `interrupt` control request, Codex's `turn/interrupt`, SIGINT for a generic agent. The agent's open requests of the turn are withdrawn as it answers. For the worker's owner (and admins); a worker token gets 403; 409 `worker_ended` once the worker has ended.",
        params: WorkerParams,
        response: { 202: PostInterruptResponse, ...errors },
      },
    },
    async (request, reply) => {
      const workerId = request.params.id;
      const { person } = await steerableWorker(request, app.workers, workerId, 'interrupts');
      const interruptId = `int_${randomBytes(12).toString('base64url')}`;
      const ts = new Date().toISOString();
      await publishForPerson(request, person, workerId, { type: 'system', uid: personInterruptUid(interruptId), ts, data: personInterruptData(interruptId) });
      const answer: PostInterruptResponseType = { interrupt_id: interruptId, worker_id: workerId };
      return reply.code(202).send(answer);
    },
  );
});
