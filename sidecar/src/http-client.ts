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

/**
 * The sidecar's only way out of the sandbox: HTTP to the gateway with the worker token. Network
 * errors, 5xx and 429 are retryable (429 and 503 honour Retry-After); other 4xx are not: they
 * mean the request itself is wrong, and retrying would not help.
 */
export function createControlPlaneClient(baseUrl: string, token: string) {
  const root = baseUrl.replace(/\/+$/, '');
  return {
    async send(method: 'GET' | 'POST', path: string, body?: unknown, signal?: AbortSignal): Promise<HttpOutcome> {
      let response: Response;
      try {
        response = await fetch(`${root}${path}`, {
          method,
          headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
          ...(signal ? { signal } : {}),
        });
      } catch (err) {
        return { ok: false, retryable: true, reason: `network: ${(err as Error).message}` };
      }
      const text = await response.text().catch(() => '');
      let parsed: unknown;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        parsed = text;
      }
      if (response.ok) return { ok: true, status: response.status, body: parsed };
      const retryAfter = Number(response.headers.get('retry-after'));
      const code = typeof parsed === 'object' && parsed !== null && 'code' in parsed ? String((parsed as { code: unknown }).code) : String(response.status);
      return {
        ok: false,
        retryable: response.status >= 500 || response.status === 429,
        ...(Number.isFinite(retryAfter) && retryAfter > 0 ? { retryAfterMs: retryAfter * 1000 } : {}),
        reason: `${method} ${path} answered ${response.status} ${code}`,
      };
    },
  };
}

export type ControlPlaneClient = ReturnType<typeof createControlPlaneClient>;
