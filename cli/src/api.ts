import WebSocket from 'ws';
import { CHANNEL_HEADER, type APIErrorBody } from '@svc/protocol';
import { CliError } from './exit-codes.js';
import type { Connection } from './settings.js';

/** An `APIError` answer, printed as `error: <message> (<code>)`. */
export class ApiError extends CliError {
  constructor(
    readonly code: string,
    readonly apiMessage: string,
    readonly status: number,
  ) {
    super(`${apiMessage} (${code})`);
  }
}

/** The methods the CLI calls the REST API with. */
type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

export interface Api {
  readonly url: string;
  request<T>(method: Method, path: string, body?: unknown): Promise<T>;
  /** `GET path` for a text answer (a diff), with its headers. */
  text(path: string): Promise<{ text: string; headers: Headers }>;
  /** A WebSocket to `path` with the token. */
  socket(path: string): WebSocket;
}

/** The gateway's REST API with the user's token; every non-2xx answer becomes an `ApiError`. */
export function createApi(connection: Connection): Api {
  const headers = (json: boolean): Record<string, string> => ({
    ...(connection.token ? { authorization: `Bearer ${connection.token}` } : {}),
    // The audit trail records that a person came through the CLI.
    [CHANNEL_HEADER]: 'cli',
    ...(json ? { 'content-type': 'application/json' } : {}),
  });
  /** The answer's text, or the `ApiError` a non-2xx answer holds. */
  async function exchange(method: Method, path: string, body?: unknown): Promise<{ text: string; headers: Headers }> {
    let response: Response;
    try {
      response = await fetch(`${connection.url}${path}`, {
        method,
        headers: headers(body !== undefined),
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    } catch (err) {
      throw new CliError(`cannot reach the gateway at ${connection.url} (${networkReason(err)}); is it running? (\`svc up\` starts a local one)`);
    }
    const text = await response.text();
    if (!response.ok) {
      const error = (text.startsWith('{') ? JSON.parse(text) : undefined) as Partial<APIErrorBody> | undefined;
      if (response.status === 401 && !connection.token) throw new ApiError('unauthorized', 'no token: run `svc login` or set SVC_TOKEN', 401);
      throw new ApiError(error?.code ?? `http_${response.status}`, error?.message ?? `HTTP ${response.status}`, response.status);
    }
    return { text, headers: response.headers };
  }
  return {
    url: connection.url,
    async request<T>(method: Method, path: string, body?: unknown): Promise<T> {
      const { text } = await exchange(method, path, body);
      return (text ? JSON.parse(text) : undefined) as T;
    },
    text: (path) => exchange('GET', path),
    socket(path) {
      return new WebSocket(`${connection.url.replace(/^http/, 'ws')}${path}`, { headers: headers(false) });
    },
  };
}

/** Why a request did not reach the server: the system's code (ECONNREFUSED…), found in the cause chain. */
function networkReason(err: unknown): string {
  let current: unknown = err;
  let innermost = (err as Error).message;
  for (let depth = 0; depth < 5 && current; depth++) {
    const candidate = current as { code?: unknown; errors?: unknown[]; cause?: unknown; message?: unknown };
    if (typeof candidate.code === 'string' && candidate.code.startsWith('E')) return candidate.code;
    if (typeof candidate.message === 'string' && candidate.message !== '') innermost = candidate.message;
    current = candidate.errors?.[0] ?? candidate.cause;
  }
  return innermost;
}
