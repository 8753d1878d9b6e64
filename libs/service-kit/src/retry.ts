import type { Logger } from './logger.js';

export interface RetryOptions {
  logger: Logger;
  /** Whether a failure is worth waiting out (a dependency away); anything else is thrown at once. */
  retryable(err: unknown): boolean;
  /** The first pause; each next one doubles, up to `maxDelayMs`. */
  initialDelayMs?: number;
  maxDelayMs?: number;
  /** Stops the waiting (e.g. the process is shutting down): the last failure is thrown. */
  signal?: AbortSignal;
}

/**
 * Runs `task` until it succeeds, pausing with exponential back-off (and jitter) after each
 * retryable failure, forever: a service that needs Postgres or NATS waits for them at start
 * rather than exiting, which on Kubernetes would turn a short blip into crash-loop back-off.
 */
export async function retryWithBackoff<T>(what: string, task: () => Promise<T>, options: RetryOptions): Promise<T> {
  const maxDelay = options.maxDelayMs ?? 1000;
  let delay = options.initialDelayMs ?? 100;
  for (let attempt = 1; ; attempt++) {
    try {
      const result = await task();
      if (attempt > 1) options.logger.info({ attempts: attempt }, `${what}: done after waiting`);
      return result;
    } catch (err) {
      if (!options.retryable(err) || options.signal?.aborted) throw err;
      options.logger.warn({ err, attempt, retryInMs: delay }, `${what}: a dependency is unavailable; retrying`);
      await new Promise((resolve) => setTimeout(resolve, delay * (0.75 + Math.random() / 2)));
      delay = Math.min(delay * 2, maxDelay);
    }
  }
}
