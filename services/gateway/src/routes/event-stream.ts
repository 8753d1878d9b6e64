import type { WebSocket } from 'ws';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { NatsConnection, WorkerDirectory } from '@svc/bus';
import { APIErrorSchema, CodedError, EVENT_LIST_LIMIT, STREAM_CLOSE, StreamSdkEventsQuery, WorkerParams, type StoredEvent, type StreamFrame } from '@svc/protocol';
import { authorizeWorker } from '../auth/authorization.js';
import { listStoredEvents } from '../event-queries.js';
import type { LiveFeeds, LiveFrame } from '../live-feeds.js';

/** The open WebSockets, so a shutdown can tell each client why (and an event viewer where to resume). */
export interface OpenStreams {
  /** `goodbye` gives the close reason sent at shutdown. */
  add(socket: WebSocket, goodbye: () => string): void;
  delete(socket: WebSocket): void;
  /** Closes every socket with 1012 and its goodbye. */
  closeAll(): void;
}

export function createOpenStreams(): OpenStreams {
  const open = new Map<WebSocket, () => string>();
  return {
    add: (socket, goodbye) => void open.set(socket, goodbye),
    delete: (socket) => void open.delete(socket),
    closeAll() {
      for (const [socket, goodbye] of open) socket.close(STREAM_CLOSE.serverRestart, goodbye());
    },
  };
}

export interface EventStreamOptions {
  nc: NatsConnection;
  workers: WorkerDirectory;
  live: LiveFeeds;
  streams: OpenStreams;
  /** How often the server pings an idle client, in ms. */
  pingIntervalMs?: number;
}

/**
 * `WS /v1/workers/{id}/sdk-events/stream?after_id=N`: the stored events after N, then live ones,
 * each exactly once and in id order (docs/event-stream.md). Watching starts before the replay and
 * live events wait while the store is read, so nothing falls between replay and live; a live
 * event whose id skips ahead (a lost announcement) is refilled from the store first.
 */
export const eventStreamRoutes: FastifyPluginAsyncTypebox<EventStreamOptions> = async (app, { nc, workers, live, streams, pingIntervalMs = 15_000 }) => {
  app.route({
    method: 'GET',
    url: '/v1/workers/:id/sdk-events/stream',
    schema: {
      tags: ['events'],
      summary: 'Stream stored events after a cursor, then live ones (WebSocket)',
      description: 'Upgrade to a WebSocket. Frames: `{kind:"event",event}` for each stored event in id order, one `{kind:"live",last_id}` when the replay is done. On shutdown the server closes with 1012 and `{"resume_after_id":"<id>"}`. See docs/event-stream.md.',
      params: WorkerParams,
      querystring: StreamSdkEventsQuery,
      response: { 400: APIErrorSchema, 401: APIErrorSchema, 403: APIErrorSchema, 404: APIErrorSchema, 429: APIErrorSchema },
    },
    // Checked before the upgrade, so a refusal is an ordinary HTTP APIError.
    preHandler: async (request) => {
      await authorizeWorker(request, workers, request.params.id);
    },
    handler: async () => {
      throw new CodedError('invalid_request', 'this endpoint is a WebSocket: connect with "Upgrade: websocket"');
    },
    wsHandler: (socket, request) => {
      const workerId = request.params.id;
      const log = request.log.child({ stream: workerId });
      let lastId = BigInt(request.query.after_id ?? '0');
      let closed = false;
      // While the store is being read (the replay, or refilling a hole), live events wait here.
      let catchingUp = true;
      let held: Array<[StoredEvent, LiveFrame]> = [];

      // Text frames, whether given a string or the UTF-8 a live feed encoded once for everyone.
      const send = (frame: string | Buffer) => {
        if (!closed) socket.send(frame, { binary: false });
      };
      const deliver = (event: StoredEvent, frame?: LiveFrame) => {
        send(frame ? frame() : JSON.stringify({ kind: 'event', event } satisfies StreamFrame));
        lastId = BigInt(event.id);
      };

      /** Sends every stored event after `lastId`, page by page. */
      const readStore = async () => {
        for (;;) {
          const page = await listStoredEvents(nc, { worker_id: workerId, after_id: lastId.toString(), limit: EVENT_LIST_LIMIT.max }, request.id);
          for (const event of page.items) deliver(event);
          if (page.items.length < EVENT_LIST_LIMIT.max || closed) return;
        }
      };

      /** Reads the store, then what arrived meanwhile; again while a held event reveals a hole. */
      const catchUp = async () => {
        catchingUp = true;
        try {
          await readStore();
          while (held.length > 0 && !closed) {
            const waiting = held;
            held = [];
            for (const [index, [event, frame]] of waiting.entries()) {
              const id = BigInt(event.id);
              if (id <= lastId) continue; // already sent (replayed or refilled)
              if (id > lastId + 1n) {
                held = [...waiting.slice(index), ...held];
                await readStore();
                break;
              }
              deliver(event, frame);
            }
          }
          catchingUp = false;
        } catch (err) {
          log.error({ err }, 'event stream failed');
          socket.close(STREAM_CLOSE.unavailable, JSON.stringify({ resume_after_id: lastId.toString() }));
        }
      };

      // Watching starts before the replay, so nothing falls between the two.
      const stopWatching = live.watch(workerId, (event, frame) => {
        if (catchingUp) return void held.push([event, frame]);
        const id = BigInt(event.id);
        if (id <= lastId) return; // already sent (replayed or refilled)
        if (id === lastId + 1n) return deliver(event, frame);
        held.push([event, frame]); // a hole: the store has what we missed
        void catchUp();
      });
      void catchUp().then(() => {
        if (!closed) send(JSON.stringify({ kind: 'live', last_id: lastId.toString() } satisfies StreamFrame));
      });

      streams.add(socket, () => JSON.stringify({ resume_after_id: lastId.toString() }));
      const ping = setInterval(() => socket.ping(), pingIntervalMs);
      socket.on('close', () => {
        closed = true;
        clearInterval(ping);
        stopWatching();
        streams.delete(socket);
      });
    },
  });
};
