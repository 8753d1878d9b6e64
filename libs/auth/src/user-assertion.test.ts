import { SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { CodedError } from '@svc/protocol';
import { readConfig } from '@svc/service-kit';
import { signDecisionLink } from './decision-links.js';
import { signUserAssertion, USER_ASSERTION_TTL_S, userAssertionKeySetting, verifyUserAssertion, type UserAssertion } from './user-assertion.js';

const KEY = 'k'.repeat(40);
const alice: UserAssertion = {
  sub: 'alice',
  name: 'Alice',
  email: 'alice@example.com',
  groups: ['payments'],
  admin: false,
  channel: 'console',
  workerId: 'wrk_a',
  requestId: 'r1',
};
const decision = { workerId: 'wrk_a', requestId: 'r1' };

async function refusal(promise: Promise<unknown>): Promise<CodedError> {
  const err = await promise.then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(err).toBeInstanceOf(CodedError);
  return err as CodedError;
}

describe('user assertions (who decides, signed by the gateway, checked by control)', () => {
  it('user assertion — round-trips the person, the channel and the decision it is for', async () => {
    expect(await verifyUserAssertion(KEY, await signUserAssertion(KEY, alice), decision)).toEqual(alice);
    const plain = { sub: 'bob', groups: [], admin: true, channel: 'link' as const, workerId: 'wrk_a', requestId: 'r1' };
    expect(await verifyUserAssertion(KEY, await signUserAssertion(KEY, plain), decision)).toEqual({ ...plain, name: undefined, email: undefined });
  });

  it('user assertion — missing, changed, signed with another key, or another kind of token: forbidden, saying why', async () => {
    expect(await refusal(verifyUserAssertion(KEY, undefined, decision))).toMatchObject({
      code: 'forbidden',
      message: expect.stringContaining('no user assertion'),
    });
    const token = await signUserAssertion(KEY, alice);
    const [header, , signature] = token.split('.');
    const mallory = Buffer.from(JSON.stringify({ sub: 'mallory', adm: true, chn: 'console', wid: 'wrk_a', rid: 'r1', aud: 'svc-user-assertion' })).toString(
      'base64url',
    );
    expect(await refusal(verifyUserAssertion(KEY, `${header}.${mallory}.${signature}`, decision))).toMatchObject({
      code: 'forbidden',
      message: expect.stringContaining('not valid'),
    });
    expect(await refusal(verifyUserAssertion('x'.repeat(40), token, decision))).toMatchObject({ code: 'forbidden' });
    expect(await refusal(verifyUserAssertion(KEY, 'not-a-token', decision))).toMatchObject({ code: 'forbidden' });
    // Unsigned ("alg": "none") claims of a valid assertion: never taken.
    const none = Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url');
    expect(await refusal(verifyUserAssertion(KEY, `${none}.${token.split('.')[1]}.`, decision))).toMatchObject({
      code: 'forbidden',
      message: expect.stringContaining('not valid'),
    });
    // A decision link signed with the same key is for another audience: not an assertion.
    const link = await signDecisionLink(KEY, { workerId: 'wrk_a', requestId: 'r1', decision: 'allow', decidedBy: 'alice' }, new Date(Date.now() + 60_000));
    expect(await refusal(verifyUserAssertion(KEY, link, decision))).toMatchObject({ code: 'forbidden', message: expect.stringContaining('not valid') });
  });

  it('user assertion — expired after its 60 s: forbidden as expired', async () => {
    const signedAt = new Date(Date.now() - (USER_ASSERTION_TTL_S + 1) * 1000);
    const token = await signUserAssertion(KEY, alice, signedAt);
    expect(await refusal(verifyUserAssertion(KEY, token, decision))).toMatchObject({ code: 'forbidden', message: expect.stringContaining('expired') });
    // Within its minute it holds.
    expect(await verifyUserAssertion(KEY, token, decision, new Date(signedAt.getTime() + 59_000))).toMatchObject({ sub: 'alice' });
  });

  it('user assertion — made for another worker or another request: forbidden, naming both', async () => {
    const token = await signUserAssertion(KEY, alice);
    expect(await refusal(verifyUserAssertion(KEY, token, { workerId: 'wrk_b', requestId: 'r1' }))).toMatchObject({
      code: 'forbidden',
      message: expect.stringContaining('request r1 of worker wrk_a, not request r1 of worker wrk_b'),
    });
    expect(await refusal(verifyUserAssertion(KEY, token, { workerId: 'wrk_a', requestId: 'r2' }))).toMatchObject({ code: 'forbidden' });
  });

  it('user assertion — signed with the key but without who, how or what: forbidden', async () => {
    const sign = (claims: Record<string, unknown>) =>
      new SignJWT(claims)
        .setProtectedHeader({ alg: 'HS256' })
        .setSubject('alice')
        .setAudience('svc-user-assertion')
        .setExpirationTime('1m')
        .sign(new TextEncoder().encode(KEY));
    for (const claims of [
      { adm: false, chn: 'console', wid: 'wrk_a' },
      { adm: 'yes', chn: 'console', wid: 'wrk_a', rid: 'r1' },
      { adm: false, chn: 'timeout', wid: 'wrk_a', rid: 'r1' },
      { adm: false, chn: 'console', wid: 'wrk_a', rid: 'r1', name: 7 },
    ]) {
      expect(await refusal(verifyUserAssertion(KEY, await sign(claims), decision))).toMatchObject({
        code: 'forbidden',
        message: expect.stringContaining('does not say'),
      });
    }
  });

  it('user assertion key — unset is undefined; a short one is refused at start with how to make one; a short key never signs', async () => {
    expect(readConfig({ key: userAssertionKeySetting }, {}).key).toBeUndefined();
    expect(readConfig({ key: userAssertionKeySetting }, { SVC_USER_ASSERTION_KEY: KEY }).key).toBe(KEY);
    expect(() => readConfig({ key: userAssertionKeySetting }, { SVC_USER_ASSERTION_KEY: 'short' })).toThrow(
      /SVC_USER_ASSERTION_KEY needs at least 32 characters/,
    );
    await expect(signUserAssertion('short', alice)).rejects.toThrow(/at least 32 characters/);
  });
});
