import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  apiPaths,
  MODEL_PROXY_UNFORWARDED_HEADERS,
  MODEL_REQUEST_ID_HEADER,
  modelProxyPath,
  PLACEHOLDER_MODEL_KEY,
  SANDBOX_MODEL_BASE_PATHS,
  type ModelApi,
} from '@svc/protocol';
import { backoffMs, type ControlPlaneClient } from './http-client.js';
import { forwardToControlPlane } from './loopback-forward.js';

/** Headers that end at this hop, the agent's own credentials (a placeholder), and the sidecar's own request id: never forwarded as the agent sent them. */
const DROPPED = new Set([...MODEL_PROXY_UNFORWARDED_HEADERS, MODEL_REQUEST_ID_HEADER]);

/** A refusal in the shape the agent's client expects of its provider. */
function providerError(api: ModelApi | undefined, status: number, message: string): string {
  if (api === 'openai') return JSON.stringify({ error: { message, type: 'server_error', param: null, code: null } });
  if (api === 'gemini') return JSON.stringify({ error: { code: status, message, status: status === 404 ? 'NOT_FOUND' : 'UNAVAILABLE' } });
  return JSON.stringify({ type: 'error', error: { type: status === 404 ? 'not_found_error' : 'api_error', message } });
}

/** How many times the sidecar tries to say a request was given up. */
const GIVEN_UP_ATTEMPTS = 3;

/** Tells the gateway the agent gave a request up (it is then let go, not read on), retrying what a retry may get past. */
async function sayGivenUp(client: ControlPlaneClient, workerId: string, requestId: string, warn: (message: string) => void): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const outcome = await client.send('DELETE', apiPaths.modelRequest(workerId, requestId));
    if (outcome.ok) return;
    if (!outcome.retryable || attempt === GIVEN_UP_ATTEMPTS)
      return warn(`model proxy: could not say request ${requestId} was given up (${outcome.reason}); the gateway reads its answer to the end`);
    await new Promise((resolve) => setTimeout(resolve, backoffMs(attempt, outcome.retryAfterMs)));
  }
}

export interface ModelProxy {
  /** The variables the agent gets: each API's base URL on loopback and a placeholder key. */
  agentEnv: Record<string, string>;
  /** The base URL of one API for the agent (e.g. Codex's provider `base_url`). */
  baseUrl(api: ModelApi): string;
  close(): Promise<void>;
}

/**
 * The agent's model API, on the sandbox's loopback: each request is forwarded, streamed both
 * ways, to the gateway's model proxy with the worker token; the gateway adds the real key. The
 * agent only ever holds a placeholder. Nothing is buffered: a chunk is passed on as it arrives.
 * Each request gets an id; one the agent gives up (an interrupt) is said given up, so that the
 * gateway lets it go, where one cut off by this sidecar's death is read on and kept there for the
 * agent's re-ask (docs/model-proxy.md, "A re-ask after a crash").
 */
export async function startModelProxy(options: {
  apis: readonly ModelApi[];
  workerId: string;
  client: ControlPlaneClient;
  warn(message: string): void;
}): Promise<ModelProxy> {
  const { apis, workerId, client } = options;
  const server = http.createServer((request, response) => {
    const url = request.url ?? '/';
    const api = apis.find((name) => url === `/${name}` || url.startsWith(`/${name}/`) || url.startsWith(`/${name}?`));
    if (!api) {
      response
        .writeHead(404, { 'content-type': 'application/json' })
        .end(providerError(undefined, 404, `svc model proxy: ${url.split('?')[0]} is not a model API of this worker (${apis.join(', ')})`));
      return;
    }
    const requestId = randomBytes(12).toString('base64url');
    forwardToControlPlane({
      client,
      path: `${modelProxyPath(workerId, api)}${url.slice(api.length + 1) || '/'}`,
      request,
      response,
      dropped: DROPPED,
      headers: { [MODEL_REQUEST_ID_HEADER]: requestId },
      givenUp: () => void sayGivenUp(client, workerId, requestId, options.warn),
      unreachable(reason) {
        options.warn(`model proxy: the control plane could not be reached (${reason})`);
        response
          .writeHead(502, { 'content-type': 'application/json' })
          .end(providerError(api, 502, `svc model proxy: the control plane could not be reached (${reason})`));
      },
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  const baseUrl = (api: ModelApi) => `http://127.0.0.1:${port}${SANDBOX_MODEL_BASE_PATHS[api]}`;
  const agentEnv: Record<string, string> = {};
  if (apis.includes('anthropic')) Object.assign(agentEnv, { ANTHROPIC_BASE_URL: baseUrl('anthropic'), ANTHROPIC_API_KEY: PLACEHOLDER_MODEL_KEY });
  if (apis.includes('openai')) Object.assign(agentEnv, { OPENAI_BASE_URL: baseUrl('openai'), OPENAI_API_KEY: PLACEHOLDER_MODEL_KEY });
  if (apis.includes('gemini')) Object.assign(agentEnv, { GOOGLE_GEMINI_BASE_URL: baseUrl('gemini'), GEMINI_API_KEY: PLACEHOLDER_MODEL_KEY });
  return {
    agentEnv,
    baseUrl,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
