import type { FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import { CodedError, STREAM_CLOSE } from '@svc/protocol';
import { gauge } from '@svc/service-kit';
import { createConcurrencyCap, DEFAULT_STREAM_LIMITS, type StreamLimits } from './stream-limits.js';

/** What an open WebSocket follows. */
type OpenStreamKind = 'events' | 'logs' | 'terminal';

/** The open WebSockets, so a shutdown can tell each client why (and an event viewer where to resume). */
export interface OpenStreams {
  /**
   * Before a WebSocket upgrade: takes one of the person's places (at most `maxStreamsPerUser` a
   * `sub`, admins too), given back when the connection closes; all taken → 429 `too_many_streams`
   * with `Retry-After`. A request that is not an upgrade takes none.
   */
  admit(request: FastifyRequest): void;
  /** `goodbye` gives the close reason sent at shutdown; `stream` what the socket follows (counted by it). */
  add(socket: WebSocket, goodbye: () => string, stream: OpenStreamKind): void;
  delete(socket: WebSocket): void;
  /** Closes every socket with 1012 and its goodbye. */
  closeAll(): void;
}

const viewers = gauge({
  name: 'svc_websocket_viewers',
  help: 'WebSockets open on this gateway, by what they follow (events, logs, terminal).',
  labelNames: ['stream'],
});

export function createOpenStreams(limits: Pick<StreamLimits, 'maxStreamsPerUser'> = DEFAULT_STREAM_LIMITS): OpenStreams {
  const open = new Map<WebSocket, { goodbye: () => string; stream: OpenStreamKind }>();
  const perUser = createConcurrencyCap(limits.maxStreamsPerUser);
  return {
    admit(request) {
      const principal = request.principal;
      if (!request.ws || principal?.kind !== 'user') return;
      const release = perUser.claim(principal.sub);
      if (!release) {
        throw new CodedError(
          'too_many_streams',
          `you have ${perUser.max} streams open on this gateway, the most one person may; close one (another tab or terminal), then connect again`,
        );
      }
      // The upgraded connection is this request's socket alone: its place is free when it closes, however that happens.
      const connection = request.raw.socket;
      if (connection.destroyed) release();
      else connection.once('close', release);
    },
    add(socket, goodbye, stream) {
      open.set(socket, { goodbye, stream });
      viewers.inc({ stream });
    },
    delete(socket) {
      const entry = open.get(socket);
      if (!entry) return;
      open.delete(socket);
      viewers.dec({ stream: entry.stream });
    },
    closeAll() {
      for (const [socket, { goodbye }] of open) socket.close(STREAM_CLOSE.serverRestart, goodbye());
    },
  };
}
