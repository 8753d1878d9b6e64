import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { rememberAtMost } from './remembered.js';

/** Prefix of every worker token: recognisable by secret scanners and in a leaked-credential report. */
const WORKER_TOKEN_PREFIX = 'svcw_';
const WORKER_TOKEN_PATTERN = /^svcw_[A-Za-z0-9_-]{43}$/;

/**
 * A new opaque per-worker bearer token (256 random bits). Only its hash is stored; the token
 * itself goes to the sandbox once, at spawn.
 */
export function generateWorkerToken(): string {
  return WORKER_TOKEN_PREFIX + randomBytes(32).toString('base64url');
}

/** Whether a string has the shape of a worker token (cheap refusal before any lookup). */
export function looksLikeWorkerToken(value: string): boolean {
  return WORKER_TOKEN_PATTERN.test(value);
}

/** The stored form of a worker token: SHA-256, hex. A random 256-bit secret needs no slow hash. */
export function hashWorkerToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** Compares a presented token with a stored hash in constant time. */
export function verifyWorkerToken(token: string, storedHash: string): boolean {
  if (!looksLikeWorkerToken(token) || !/^[0-9a-f]{64}$/.test(storedHash)) return false;
  return timingSafeEqual(Buffer.from(hashWorkerToken(token), 'hex'), Buffer.from(storedHash, 'hex'));
}

/**
 * `verifyWorkerToken` that remembers the tokens it accepted (token → the hash it matched), for a
 * server that sees the same token on every request of a sidecar: hashing it each time was a
 * measurable share of a busy gateway's CPU (docs/benchmarks.md#ingest). A changed stored hash (a
 * new token) is still seen: the caller passes the current hash each time. At most
 * `maxRemembered` tokens are kept, the oldest dropped first.
 */
export function createWorkerTokenVerifier(maxRemembered = 10_000): { matches(token: string, storedHash: string): boolean } {
  const accepted = new Map<string, string>();
  return {
    matches(token, storedHash) {
      if (accepted.get(token) === storedHash) return true;
      if (!verifyWorkerToken(token, storedHash)) return false;
      rememberAtMost(accepted, token, storedHash, maxRemembered);
      return true;
    },
  };
}
