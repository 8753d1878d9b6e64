import { describe, expect, it } from 'vitest';
import { createWorkerTokenVerifier, generateWorkerToken, hashWorkerToken, looksLikeWorkerToken, verifyWorkerToken } from './worker-token.js';

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

  it('a remembering verifier accepts what verifyWorkerToken accepts, and follows a changed hash', () => {
    const verifier = createWorkerTokenVerifier(2);
    const [first, second, third] = [generateWorkerToken(), generateWorkerToken(), generateWorkerToken()];
    expect(verifier.matches(first, hashWorkerToken(first))).toBe(true);
    expect(verifier.matches(first, hashWorkerToken(first))).toBe(true);
    expect(verifier.matches(second, hashWorkerToken(first))).toBe(false);
    // The worker got a new token: the remembered one no longer matches the stored hash.
    expect(verifier.matches(first, hashWorkerToken(second))).toBe(false);
    // Past its limit it forgets the oldest, and still answers by the hash.
    expect(verifier.matches(second, hashWorkerToken(second))).toBe(true);
    expect(verifier.matches(third, hashWorkerToken(third))).toBe(true);
    expect(verifier.matches(first, hashWorkerToken(first))).toBe(true);
    expect(verifier.matches('not a token', hashWorkerToken(first))).toBe(false);
  });
});
