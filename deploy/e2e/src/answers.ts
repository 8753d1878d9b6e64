/** One answer a client got that was not a success: what a fault looked like from outside. */
export interface FailedAnswer {
  at: number;
  /** The HTTP status, or 0 when the request did not get through (connection refused, reset). */
  status: number;
  code?: string | undefined;
  retryAfter?: string | null | undefined;
  /** How long the request took to be answered. */
  tookMs: number;
  /** The APIError's body, when there was one. */
  body: { code?: string; message?: string };
}

/** Reads what a failed (or missing) answer to a request started at `started` says. */
export async function failedAnswer(response: Response | undefined, started: number): Promise<FailedAnswer> {
  const body = response ? ((await response.json().catch(() => ({}))) as { code?: string; message?: string }) : {};
  return { at: started, status: response?.status ?? 0, code: body.code, retryAfter: response?.headers.get('retry-after'), tookMs: Date.now() - started, body };
}
