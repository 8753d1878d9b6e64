import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';

/** A model API stand-in on loopback: its base URL, the request bodies it got, and how to stop it. */
export interface ModelStandIn {
  url: string;
  /** The bodies of every model request, in order. */
  requests(): Array<Record<string, unknown>>;
  /** The headers of every model request, in the same order. */
  requestHeaders(): IncomingMessage['headers'][];
  /** Every request that reached the stand-in, a model request or not (`POST /v1/messages?beta=true`). */
  seen(): string[];
  stop(): Promise<void>;
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => resolve(body));
    request.on('error', reject);
  });
}

/**
 * What the model API stand-ins share: an HTTP server on a free loopback port that
 * answers `isModelRequest` requests by parsing their JSON body, recording it and calling
 * `respond` (which streams the answer); `other` answers the rest. `path` is appended to the URL.
 */
export async function startModelStandIn(options: {
  name: string;
  path?: string;
  isModelRequest(request: IncomingMessage): boolean;
  respond(body: Record<string, unknown>, response: ServerResponse, request: IncomingMessage): void;
  other(request: IncomingMessage, response: ServerResponse): void;
}): Promise<ModelStandIn> {
  const received: Array<Record<string, unknown>> = [];
  const receivedHeaders: IncomingMessage['headers'][] = [];
  const seen: string[] = [];
  const server = createServer((request, response) => {
    seen.push(`${request.method ?? ''} ${request.url ?? ''}`);
    void (async () => {
      if (!options.isModelRequest(request)) return options.other(request, response);
      const body = JSON.parse(await readBody(request)) as Record<string, unknown>;
      received.push(body);
      receivedHeaders.push(request.headers);
      options.respond(body, response, request);
    })().catch(() => response.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error(`the ${options.name} stand-in has no port`);
  return {
    url: `http://127.0.0.1:${address.port}${options.path ?? ''}`,
    requests: () => received,
    requestHeaders: () => receivedHeaders,
    seen: () => seen,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
