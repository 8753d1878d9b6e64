import { describe, expect, it } from 'vitest';
import { createGivenUpRequests } from './given-up-requests.js';

describe('requests said given up', () => {
  it('a registered request is let go when said given up; unregistered, it is not', () => {
    const requests = createGivenUpRequests();
    let letGo = 0;
    const unregister = requests.register('wrk_a', 'req-1', () => letGo++);
    requests.giveUp('wrk_b', 'req-1');
    expect(letGo).toBe(0);
    requests.giveUp('wrk_a', 'req-1');
    expect(letGo).toBe(1);
    unregister();
    requests.register('wrk_a', 'req-2', () => letGo++);
    expect(letGo).toBe(1);
  });

  it('said given up before it registered (the two crossed): let go as it registers', async () => {
    const requests = createGivenUpRequests();
    let letGo = 0;
    requests.giveUp('wrk_a', 'req-early');
    requests.register('wrk_a', 'req-early', () => letGo++);
    await Promise.resolve();
    expect(letGo).toBe(1);
    // Remembered once.
    requests.register('wrk_a', 'req-early', () => letGo++);
    await Promise.resolve();
    expect(letGo).toBe(1);
  });
});
