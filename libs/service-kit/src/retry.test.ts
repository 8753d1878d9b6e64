import { describe, expect, it } from 'vitest';
import { createLogger } from './logger.js';
import { retryWithBackoff } from './retry.js';

const logger = createLogger({ name: 'retry-test', level: 'silent' });

describe('retryWithBackoff', () => {
  it('waits out retryable failures with growing pauses, then returns the result', async () => {
    const at: number[] = [];
    const result = await retryWithBackoff(
      'a task',
      async () => {
        at.push(Date.now());
        if (at.length < 4) throw new Error('away');
        return 'done';
      },
      { logger, retryable: () => true, initialDelayMs: 20, maxDelayMs: 50 },
    );
    expect(result).toBe('done');
    const pauses = at.slice(1).map((t, i) => t - at[i]!);
    // 20, 40, then capped at 50 (each within its jitter of ±25 %).
    expect(pauses[0]).toBeGreaterThanOrEqual(14);
    expect(pauses[1]).toBeGreaterThanOrEqual(29);
    expect(pauses[2]).toBeLessThan(50 * 1.25 + 30);
  });

  it('throws a failure that is not retryable at once, and stops when aborted', async () => {
    let calls = 0;
    await expect(
      retryWithBackoff(
        'a task',
        async () => {
          calls++;
          throw new Error('a bug');
        },
        { logger, retryable: () => false },
      ),
    ).rejects.toThrow('a bug');
    const controller = new AbortController();
    controller.abort();
    await expect(
      retryWithBackoff('a task', () => Promise.reject(new Error('away')), { logger, retryable: () => true, signal: controller.signal }),
    ).rejects.toThrow('away');
    expect(calls).toBe(1);
  });
});
