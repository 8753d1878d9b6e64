import { SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { CodedError } from '@svc/protocol';
import { signDecisionLink, verifyDecisionLink } from './decision-links.js';

const KEY = 'k'.repeat(40);
const claims = { workerId: 'wrk_a', requestId: 'r1', decision: 'allow' as const, decidedBy: 'alice' };
const inAnHour = () => new Date(Date.now() + 3600_000);

async function refusal(promise: Promise<unknown>): Promise<{ code: string; message: string }> {
  const err = await promise.then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(err).toBeInstanceOf(CodedError);
  return err as CodedError;
}

describe('decision links (signed, expiring tokens)', () => {
  it('round-trips what it decides and as whom', async () => {
    expect(await verifyDecisionLink(KEY, await signDecisionLink(KEY, claims, inAnHour()))).toEqual(claims);
  });

  it('refuses a changed payload, another key, an expired link, and another kind of token, saying which', async () => {
    const token = await signDecisionLink(KEY, claims, inAnHour());
    const [header, , signature] = token.split('.');
    const denyPayload = Buffer.from(JSON.stringify({ wid: 'wrk_a', rid: 'r1', dec: 'deny', sub: 'mallory', aud: 'svc-decision-link' })).toString('base64url');
    expect(await refusal(verifyDecisionLink(KEY, `${header}.${denyPayload}.${signature}`))).toMatchObject({ code: 'invalid_link' });
    expect(await refusal(verifyDecisionLink('x'.repeat(40), token))).toMatchObject({ code: 'invalid_link' });
    const expired = await signDecisionLink(KEY, claims, new Date(Date.now() - 1000));
    expect(await refusal(verifyDecisionLink(KEY, expired))).toMatchObject({ code: 'link_expired', message: expect.stringContaining('expired') });
    // Signed with the key but for another audience (or none): not a decision link.
    const other = await new SignJWT({ wid: 'wrk_a', rid: 'r1', dec: 'allow' })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('alice')
      .setExpirationTime('1h')
      .sign(new TextEncoder().encode(KEY));
    expect(await refusal(verifyDecisionLink(KEY, other))).toMatchObject({ code: 'invalid_link' });
    expect(await refusal(verifyDecisionLink(KEY, 'not-a-token'))).toMatchObject({ code: 'invalid_link' });
  });

  it('will not sign with a short key', async () => {
    await expect(signDecisionLink('short', claims, inAnHour())).rejects.toThrow(/at least 32 characters/);
  });
});
