import { CHANNEL_HEADER } from '@svc/protocol';
import type { Auth } from './auth.js';

/** An API error as the gateway reports it (`APIError`: code and message), with the HTTP status. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export type Api = ReturnType<typeof createApi>;

type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

/** Calls the gateway's `/v1` API with the signed-in user's token; a 401 signs out (the page asks to sign in again). */
export function createApi(auth: Auth) {
  /** The gateway's answer when it is a success; its `APIError` thrown otherwise. */
  const call = async (method: Method, path: string, body?: unknown): Promise<Response> => {
    const token = auth.signedIn?.token;
    if (!token) throw new ApiError(401, 'unauthorized', 'sign in first');
    const response = await fetch(path, {
      method,
      // The audit trail records that a person came through the console.
      headers: { authorization: `Bearer ${token}`, [CHANNEL_HEADER]: 'console', ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    if (response.ok) return response;
    const text = await response.text();
    const error = (text ? (JSON.parse(text) as unknown) : {}) as { code?: string; message?: string };
    if (response.status === 401) auth.expired();
    throw new ApiError(response.status, error.code ?? 'internal', error.message ?? `HTTP ${response.status}`);
  };

  return {
    async request<T>(method: Method, path: string, body?: unknown): Promise<T> {
      const text = await (await call(method, path, body)).text();
      return (text ? JSON.parse(text) : undefined) as T;
    },

    /** What a path answers as bytes (an image of a message): a browser cannot send the token with an `<img src>`. */
    async blob(path: string): Promise<Blob> {
      return (await call('GET', path)).blob();
    },

    /** What a path answers as text, with its headers (a diff: they say whether it is whole). */
    async text(path: string): Promise<{ text: string; headers: Headers }> {
      const response = await call('GET', path);
      return { text: await response.text(), headers: response.headers };
    },
  };
}

/** Why a call failed, for the person: the gateway's own words, or that it could not be reached. */
export function reasonOf(err: unknown): string {
  if (err instanceof ApiError) return err.message;
  return `the gateway could not be reached (${err instanceof Error ? err.message : String(err)})`;
}
