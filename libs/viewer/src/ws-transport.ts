import type WebSocket from 'ws';
import { refusalMessage, type StreamTransport } from './event-stream.js';

/**
 * The event stream over Node's `ws` (the CLI): `connect(afterId)` makes the socket (URL and
 * headers are the caller's); a 4xx or 5xx on the upgrade is reported as a refusal with the
 * `APIError` body's message.
 */
export function wsTransport(connect: (afterId: string) => WebSocket): StreamTransport {
  return {
    open(afterId, listener) {
      const socket = connect(afterId);
      socket.on('open', () => listener.opened());
      socket.on('message', (data) => listener.frame(String(data)));
      socket.on('unexpected-response', (request, response) => {
        let body = '';
        response.on('data', (chunk: Buffer) => (body += chunk.toString()));
        response.on('end', () => {
          request.destroy();
          const status = response.statusCode ?? 0;
          listener.refused(status, refusalMessage(status, body));
        });
      });
      socket.on('error', () => {
        // 'close' follows and decides.
      });
      socket.on('close', (code, reason) => listener.closed(code, reason.toString()));
      return { close: (code, reason) => socket.close(code, reason) };
    },
  };
}
