import { describe, expect, it } from 'vitest';
import { generateWorkerToken, hashWorkerToken, looksLikeWorkerToken, verifyWorkerToken } from './worker-token.js';

describe('auth — worker tokens', () => {
  it('tokens are unique, prefixed and URL-safe', () => {
    const tokens = new Set(Array.from({ length: 1000 }, generateWorkerToken));
    expect(tokens.size).toBe(1000);
    for (const token of tokens) expect(looksLikeWorkerToken(token)).toBe(true);
  });

  it('the stored hash verifies its token and no other', () => {
    const token = generateWorkerToken();
    const hash = hashWorkerToken(token);
    expect(hash).not.toContain(token.slice(5));
    expect(verifyWorkerToken(token, hash)).toBe(true);
    expect(verifyWorkerToken(generateWorkerToken(), hash)).toBe(false);
  });

  it('malformed tokens and hashes are refused without throwing', () => {
    const token = generateWorkerToken();
    const hash = hashWorkerToken(token);
    for (const bad of ['', 'Bearer x', token.slice(0, -1), `${token}x`, token.replace('svcw_', 'svcx_')]) {
      expect(verifyWorkerToken(bad, hash)).toBe(false);
    }
    expect(verifyWorkerToken(token, 'not-hex')).toBe(false);
    expect(verifyWorkerToken(token, hash.slice(1))).toBe(false);
  });
});
