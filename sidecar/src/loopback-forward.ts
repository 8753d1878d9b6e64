import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { ControlPlaneClient } from './http-client.js';

/** The request's headers but those in `dropped` (the hop's own, the agent's credentials). */
function forwardedHeaders(headers: IncomingHttpHeaders, dropped: ReadonlySet<string>): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) if (value !== undefined && !dropped.has(name)) out[name] = value;
  return out;
}

/**
 * Forwards a request of the sandbox's loopback to the control plane's `path` with the worker
 * token (and `headers` of the sidecar's own), streamed both ways (a chunk passed on as it
 * arrives); `unreachable` answers when the control plane cannot be reached before the answer
 * began; `givenUp` is told when the agent went away before the answer's end.
 */
export function forwardToControlPlane(options: {
  client: ControlPlaneClient;
  path: string;
  request: IncomingMessage;
  response: ServerResponse;
  dropped: ReadonlySet<string>;
  headers?: OutgoingHttpHeaders;
  unreachable(reason: string): void;
  givenUp?(): void;
}): void {
  const { request, response, dropped } = options;
  const upstream = options.client.open(request.method ?? 'GET', options.path, { ...forwardedHeaders(request.headers, dropped), ...options.headers });
  upstream.on('response', (answer) => {
    response.writeHead(answer.statusCode ?? 502, forwardedHeaders(answer.headers, dropped));
    answer.pipe(response);
    answer.on('error', () => response.destroy());
  });
  upstream.on('error', (err: NodeJS.ErrnoException) => {
    if (response.headersSent) return void response.destroy();
    options.unreachable(err.code ?? err.message);
  });
  response.on('close', () => {
    if (response.writableFinished) return;
    upstream.destroy();
    options.givenUp?.();
  });
  request.pipe(upstream);
}
