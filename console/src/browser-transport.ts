import { WS_BEARER_PREFIX, WS_PROTOCOL } from '@svc/protocol';
import type { StreamTransport } from '@svc/viewer';

/** A WebSocket to one of the gateway's stream paths, its token in the subprotocols (a browser cannot set headers on an upgrade). */
export function gatewaySocket(path: string, token: string | undefined): WebSocket {
  const url = new URL(path, window.location.href);
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  return new WebSocket(url, [WS_PROTOCOL, `${WS_BEARER_PREFIX}${token ?? ''}`]);
}

/**
 * The event stream over the browser's WebSocket. A browser is not told why an upgrade failed
 * (it sees code 1006): the console reads the worker over HTTP first, which says "not found" or
 * "sign in", so what is left to a failed upgrade is a drop, retried by the follower.
 */
export function browserTransport(path: (afterId: string) => string, token: () => string | undefined): StreamTransport {
  return {
    open(afterId, listener) {
      const socket = gatewaySocket(path(afterId), token());
      socket.onopen = () => listener.opened();
      socket.onmessage = (message) => listener.frame(String(message.data));
      socket.onclose = (closed) => listener.closed(closed.code, closed.reason);
      return { close: (code = 1000, reason) => socket.close(code, reason) };
    },
  };
}
