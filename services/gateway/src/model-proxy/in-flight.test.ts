import { describe, expect, it } from 'vitest';
import { createInFlightLimit, MAX_REQUESTS_IN_FLIGHT } from './in-flight.js';

describe('model proxy requests in flight', () => {
  it('a worker gets 16 places; the 17th request is refused until one is released; other workers are not affected', () => {
    const limit = createInFlightLimit();
    expect(MAX_REQUESTS_IN_FLIGHT).toBe(16);
    const held = Array.from({ length: MAX_REQUESTS_IN_FLIGHT }, () => limit.acquire('wrk_a'));
    expect(held.every((release) => typeof release === 'function')).toBe(true);
    expect(limit.acquire('wrk_a')).toBeUndefined();
    expect(limit.acquire('wrk_b')).toBeTypeOf('function');
    held[0]!();
    expect(limit.acquire('wrk_a')).toBeTypeOf('function');
    expect(limit.acquire('wrk_a')).toBeUndefined();
  });

  it('releasing a place twice frees it once', () => {
    const limit = createInFlightLimit(2);
    const first = limit.acquire('wrk_a')!;
    limit.acquire('wrk_a');
    first();
    first();
    expect(limit.acquire('wrk_a')).toBeTypeOf('function');
    expect(limit.acquire('wrk_a')).toBeUndefined();
  });
});
