import http from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import WebSocket from 'ws';
import { newTraceparent, TRACEPARENT_HEADER } from '@svc/protocol';

/** What came back from the control plane, or that nothing did. */
export type HttpOutcome = { ok: true; status: number; body: unknown } | { ok: false; retryable: boolean; retryAfterMs?: number; reason: string };

/** Longest pause between attempts. */
const MAX_BACKOFF_MS = 10_000;

/** The pause before attempt `attempt` (0-based): 100 ms doubling, jittered, capped; a server's Retry-After wins. */
export function backoffMs(attempt: number, retryAfterMs?: number): number {
  if (retryAfterMs !== undefined) return Math.min(retryAfterMs, 60_000);
  const base = Math.min(MAX_BACKOFF_MS, 100 * 2 ** attempt);
  return base / 2 + Math.random() * (base / 2);
}

/** A response as it came off the wire. */
interface RawResponse {
  status: number;
  retryAfter: string | undefined;
  contentType: string | undefined;
  bytes: Buffer;
}

/** Bytes from the control plane (an image of a person's message), or why not and whether to retry. */
export type BytesOutcome = { ok: true; bytes: Buffer; contentType: string | undefined } | Extract<HttpOutcome, { ok: false }>;

/** What a response means to the caller: its parsed body, or why not and whether to retry (`request` is `METHOD path`). */
function outcomeOf(request: string, response: RawResponse): HttpOutcome {
  const { status } = response;
  const text = response.bytes.toString('utf8');
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = text;
  }
  if (status >= 200 && status < 300) return { ok: true, status, body: parsed };
  const retryAfter = Number(response.retryAfter);
  const code = typeof parsed === 'object' && parsed !== null && 'code' in parsed ? String((parsed as { code: unknown }).code) : String(status);
  return {
    ok: false,
    retryable: status >= 500 || status === 429,
    ...(Number.isFinite(retryAfter) && retryAfter > 0 ? { retryAfterMs: retryAfter * 1000 } : {}),
    reason: `${request} answered ${status} ${code}`,
  };
}

/** A success's bytes as they came, else what the failure means (as `outcomeOf`). */
function bytesOutcomeOf(request: string, response: RawResponse): BytesOutcome {
  if (response.status >= 200 && response.status < 300) return { ok: true, bytes: response.bytes, contentType: response.contentType };
  return outcomeOf(request, response) as Extract<HttpOutcome, { ok: false }>;
}

/** Nothing came back: the network (or the gateway's listener) failed, which a retry may get past. */
const networkFailure = (err: unknown): Extract<HttpOutcome, { ok: false }> => ({ ok: false, retryable: true, reason: `network: ${(err as Error).message}` });

/** A WebSocket to the control plane; ws takes a Unix socket only in its `ws+unix:` form (its options' socketPath is not passed on). */
function controlPlaneWebSocket(root: URL, path: string, token: string, socketPath: string | undefined): WebSocket {
  const url = socketPath ? `ws+unix://${socketPath}:${path}` : `${root.protocol.replace('http', 'ws')}//${root.host}${path}`;
  return new WebSocket(url, { headers: { authorization: `Bearer ${token}`, host: root.host } });
}

/**
 * The sidecar's only way out of the sandbox: HTTP to the gateway with the worker token. Network
 * errors, 5xx and 429 are retryable (429 and 503 honour Retry-After); other 4xx are not: they
 * mean the request itself is wrong, and retrying would not help.
 *
 * Built on `node:http`, not `fetch`: loading fetch (undici) costs the process a sizeable part of
 * its memory budget, and each request somewhat more time (docs/benchmarks.md#sidecar).
 */
export function createControlPlaneClient(baseUrl: string, token: string, options: { socketPath?: string | undefined } = {}) {
  const root = new URL(baseUrl.replace(/\/+$/, ''));
  const transport = root.protocol === 'https:' ? https : http;
  // Kept-alive connections: the long poll and the event posts each keep theirs.
  const agent = new transport.Agent({ keepAlive: true });
  const streamingAgent = new transport.Agent({ keepAlive: true });
  const basePath = root.pathname === '/' ? '' : root.pathname;
  // A sealed sandbox reaches the gateway through a Unix socket only; the URL still names it (Host, TLS).
  const controlPlane = { protocol: root.protocol, hostname: root.hostname, port: root.port, ...(options.socketPath ? { socketPath: options.socketPath } : {}) };

  function exchange(method: 'GET' | 'POST' | 'DELETE', path: string, payload: string | undefined, signal?: AbortSignal): Promise<RawResponse> {
    return new Promise((resolve, reject) => {
      const request = transport.request(
        {
          ...controlPlane,
          path: `${basePath}${path}`,
          method,
          agent,
          headers: {
            authorization: `Bearer ${token}`,
            // Each post of events starts a trace that the gateway continues (docs/tracing.md).
            ...(method === 'POST' ? { [TRACEPARENT_HEADER]: newTraceparent() } : {}),
            ...(payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }),
          },
          ...(signal ? { signal } : {}),
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () =>
            resolve({
              status: response.statusCode ?? 0,
              retryAfter: response.headers['retry-after'],
              contentType: response.headers['content-type'],
              bytes: Buffer.concat(chunks),
            }),
          );
          response.on('error', reject);
        },
      );
      request.on('error', reject);
      request.end(payload);
    });
  }

  return {
    send(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown, signal?: AbortSignal): Promise<HttpOutcome> {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      return exchange(method, path, payload, signal).then((response) => outcomeOf(`${method} ${path}`, response), networkFailure);
    },
    /** `GET path` for its bytes as they are (not JSON). */
    fetchBytes(path: string, signal?: AbortSignal): Promise<BytesOutcome> {
      return exchange('GET', path, undefined, signal).then((response) => bytesOutcomeOf(`GET ${path}`, response), networkFailure);
    },
    /**
     * A streamed request to the control plane with the worker token (the model proxy's hop):
     * the caller writes the body and reads the response. It gets its own connections, so a long
     * model stream never holds up the event posts or the control channel poll.
     */
    open(method: string, path: string, headers: http.OutgoingHttpHeaders): http.ClientRequest {
      return transport.request({
        ...controlPlane,
        path: `${basePath}${path}`,
        method,
        agent: streamingAgent,
        headers: { ...headers, authorization: `Bearer ${token}` },
      });
    },
    /** A WebSocket to the control plane's `path` with the worker token (a terminal's sandbox end), through the Unix socket where there is one. */
    webSocket: (path: string): WebSocket => controlPlaneWebSocket(root, `${basePath}${path}`, token, options.socketPath),
    /**
     * Asks the gateway for a tunnel to `target` (`host:port`) for the agent of `workerId`: a
     * CONNECT with the worker token. The gateway answers once it has decided (a person may be
     * asked): 200 and the socket is the tunnel, or a refusal whose body says why.
     */
    tunnel(workerId: string, target: string): Promise<{ status: number; socket: Socket; head: Buffer }> {
      return new Promise((resolve, reject) => {
        const request = transport.request({
          ...controlPlane,
          method: 'CONNECT',
          path: target,
          headers: { authorization: `Bearer ${token}`, 'x-svc-worker-id': workerId },
        });
        request.once('connect', (response, socket, head) => resolve({ status: response.statusCode ?? 502, socket, head }));
        request.once('error', reject);
        request.end();
      });
    },
    /** Closes the kept-alive connections. */
    close(): void {
      agent.destroy();
      streamingAgent.destroy();
    },
  };
}

export type ControlPlaneClient = ReturnType<typeof createControlPlaneClient>;
