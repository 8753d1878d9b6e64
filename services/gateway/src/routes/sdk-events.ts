import type { FastifySchemaCompiler } from 'fastify';
import { listStoredEvents } from '@svc/bus';
import {
  CodedError,
  describeFieldErrors,
  EVENT_LIST_LIMIT,
  ListSdkEventsQuery,
  ListSdkEventsResponse,
  MAX_EVENTS_PER_POST,
  PostSdkEventsBody,
  PostSdkEventsResponse,
  validateIncomingEvent,
  WORKER_POLICY_SOURCE,
  WORKER_SOURCE,
  workerEventViolations,
  WorkerParams,
  type EventSource,
  type EventType,
  type FieldError,
  type IncomingEvent,
} from '@svc/protocol';
import { counter } from '@svc/service-kit';
import { authorizeWorker } from '../auth/authorization.js';
import { errorResponses, routePlugin } from './route-plugin.js';

/**
 * The body of `POST …/sdk-events` is checked by the protocol's own validator rather than Ajv:
 * it checks each event's `data` against its type's schema and names the exact field
 * (`/events/3/data/tool_name is required`), where a union schema could only say "no match".
 */
const eventsAccepted = counter({
  name: 'svc_events_accepted_total',
  help: 'Events the gateway accepted (answered 202: durable in JetStream), before deduplication.',
});

const validateEventsBody: FastifySchemaCompiler<unknown> = () => (body: unknown) => {
  const events = typeof body === 'object' && body !== null && 'events' in body ? (body as { events: unknown }).events : undefined;
  const batch = events !== undefined;
  if (batch && (!Array.isArray(events) || events.length === 0 || events.length > MAX_EVENTS_PER_POST)) {
    return { error: new CodedError('invalid_request', `/body/events must be an array of 1 to ${MAX_EVENTS_PER_POST} events`) };
  }
  if (batch && Object.keys(body as object).length > 1) return { error: new CodedError('invalid_request', 'a batch body has only "events"') };
  const list: unknown[] = batch ? (events as unknown[]) : [body];
  const errors: FieldError[] = [];
  const valid: IncomingEvent[] = [];
  list.forEach((event, index) => {
    const result = validateIncomingEvent(event, batch ? `/body/events/${index}` : '/body');
    if (result.ok) valid.push(result.value);
    else errors.push(...result.errors);
  });
  if (errors.length > 0) return { error: new CodedError('invalid_request', describeFieldErrors(errors), errors) };
  // Well-formed, but is it the worker's to write? Only what an agent and its sidecar produce.
  const claims = valid.flatMap((event, index) => workerEventViolations(event, batch ? `/body/events/${index}` : '/body'));
  if (claims.length > 0) return { error: new CodedError('forbidden', `a worker may not post this: ${describeFieldErrors(claims)}`, claims) };
  return { value: valid };
};

/** Who wrote what a worker posts: its own permission engine's decisions are the policy's, the rest the worker's. */
const workerSourceOf = (event: IncomingEvent): EventSource => (event.type === 'control_response' ? WORKER_POLICY_SOURCE : WORKER_SOURCE);

const errorSchemas = errorResponses(400, 401, 403, 404, 409, 413, 415, 429);

/** `POST` (sidecar) and `GET` (viewers) `/v1/workers/{id}/sdk-events`. */
export const sdkEventRoutes = routePlugin('svc-sdk-event-routes', ['svc-bus', 'svc-worker-directory', 'svc-incoming-events'], async (app) => {
  const { bus: nc, workers } = app;

  app.post(
    '/v1/workers/:id/sdk-events',
    {
      config: { auth: 'worker' },
      validatorCompiler: ({ httpPart }) => (httpPart === 'body' ? validateEventsBody({} as never) : (value: unknown) => ({ value })),
      schema: {
        tags: ['events'],
        summary: 'Report SDK events (one, or a batch of up to 500)',
        description:
          "Answered 202 once every event is durable. A uid already received is accepted again and stored once. The worker is the source of what it posts (its `control_response` events: its own policy's); 403 `forbidden` for what only the control plane or a person may write (a decision that names a person or adds a rule, a uid in a reserved namespace, a control-plane `system` subtype), and nothing of the POST is stored.",
        params: WorkerParams,
        body: PostSdkEventsBody,
        response: { 202: PostSdkEventsResponse, ...errorSchemas },
      },
    },
    async (request, reply) => {
      const workerId = request.params.id;
      const events = request.body as unknown as IncomingEvent[];
      const receivedAt = new Date().toISOString();
      // Gathered with other POSTs' events bound for the same partition (coalescing), in order
      // on one connection, so the stream keeps the producer's order; 202 once all are durable.
      await app.incomingEvents.publish(workerId, events, { requestId: request.id, receivedAt, trace: request.traceContext, sourceOf: workerSourceOf });
      eventsAccepted.inc(events.length);
      return reply.code(202).send({ accepted: events.length });
    },
  );

  app.get(
    '/v1/workers/:id/sdk-events',
    {
      schema: {
        tags: ['events'],
        summary: 'List stored events after (or before) a cursor, in id order',
        description: `\`total\` is the number of the worker's stored events that match \`types\` (not only those in the page); there is no \`offset\`: page forwards with \`after_id\` = the last id you got, backwards with \`before_id\` = the first id you got (\`before_id=end\` reads the newest page: a viewer opening a long history at its end). With \`before_id\` the page is the \`limit\` events just before it, still in id order. Default \`limit\` ${EVENT_LIST_LIMIT.default}, maximum ${EVENT_LIST_LIMIT.max}.`,
        params: WorkerParams,
        querystring: ListSdkEventsQuery,
        response: { 200: ListSdkEventsResponse, ...errorSchemas },
      },
    },
    async (request) => {
      const workerId = request.params.id;
      await authorizeWorker(request, workers, workerId);
      const types = request.query.types ? ([...new Set(request.query.types.split(','))] as EventType[]) : undefined;
      return listStoredEvents(
        nc,
        {
          worker_id: workerId,
          after_id: request.query.after_id ?? '0',
          ...(request.query.before_id === undefined ? {} : { before_id: request.query.before_id }),
          limit: request.query.limit,
          ...(types ? { types } : {}),
        },
        { requestId: request.id },
      );
    },
  );
});
