import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestIssuer, type TestIssuer } from '@svc/test-support';
import { createOidcVerifier, type OidcVerifier } from './oidc.js';

const base64url = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');

describe('auth — OIDC user tokens against a real HTTP issuer', () => {
  let issuer: TestIssuer;
  let verifier: OidcVerifier;

  beforeAll(async () => {
    issuer = await startTestIssuer();
    verifier = createOidcVerifier({ issuer: issuer.issuer, audience: issuer.audience, clockToleranceSeconds: 5, adminClaim: 'svc_admin', jwksCooldownMs: 0 });
  });
  afterAll(() => issuer?.stop());

  it('a valid token gives the user, with name, email and admin flag', async () => {
    const token = await issuer.sign({ sub: 'alice', name: 'Alice', email: 'alice@example.com', svc_admin: true });
    expect(await verifier.verify(token)).toEqual({ kind: 'user', sub: 'alice', name: 'Alice', email: 'alice@example.com', groups: [], admin: true });
    expect((await verifier.verify(await issuer.sign({ sub: 'bob' }))).admin).toBe(false);
  });

  it('groups come from the group claim: an array (strings only) or one string; another claim when configured', async () => {
    expect((await verifier.verify(await issuer.sign({ sub: 'bob', groups: ['payments', 'release', 7, ''] }))).groups).toEqual(['payments', 'release']);
    expect((await verifier.verify(await issuer.sign({ sub: 'dave', groups: 'oncall' }))).groups).toEqual(['oncall']);
    expect((await verifier.verify(await issuer.sign({ sub: 'erin', groups: { payments: true } }))).groups).toEqual([]);
    const byRoles = createOidcVerifier({ issuer: issuer.issuer, audience: issuer.audience, groupsClaim: 'roles', jwksCooldownMs: 0 });
    expect((await byRoles.verify(await issuer.sign({ sub: 'bob', roles: ['release'], groups: ['payments'] }))).groups).toEqual(['release']);
  });

  it('keys are cached: many verifications fetch the JWKS once', async () => {
    const before = issuer.jwksFetches();
    for (let i = 0; i < 20; i++) await verifier.verify(await issuer.sign());
    expect(issuer.jwksFetches() - before).toBeLessThanOrEqual(1);
  });

  it('an unknown kid refetches the JWKS: a rotated key is accepted', async () => {
    const kid = await issuer.rotate('ES256');
    const before = issuer.jwksFetches();
    expect((await verifier.verify(await issuer.sign({ sub: 'carol' }, { kid }))).sub).toBe('carol');
    expect(issuer.jwksFetches()).toBe(before + 1);
  });

  const now = () => Math.floor(Date.now() / 1000);
  const attacks: Array<[string, () => Promise<string>, RegExp]> = [
    [
      'alg none',
      async () => `${base64url({ alg: 'none', typ: 'JWT' })}.${base64url({ sub: 'mallory', iss: issuer.issuer, aud: issuer.audience, exp: now() + 60 })}.`,
      /not accepted|malformed|not valid/,
    ],
    [
      "HS256 signed with the issuer's public key",
      async () => {
        const header = base64url({ alg: 'HS256', typ: 'JWT', kid: 'key-1' });
        const payload = base64url({ sub: 'mallory', iss: issuer.issuer, aud: issuer.audience, exp: now() + 60 });
        const signature = createHmac('sha256', JSON.stringify(issuer.publicJwk)).update(`${header}.${payload}`).digest('base64url');
        return `${header}.${payload}.${signature}`;
      },
      /algorithm is not accepted/,
    ],
    ['wrong iss', () => issuer.sign({ iss: 'https://evil.example' }), /"iss" claim/],
    ['wrong aud', () => issuer.sign({ aud: 'another-app' }), /"aud" claim/],
    ['expired', () => issuer.sign({ exp: now() - 120 }), /expired/],
    ['not yet valid', () => issuer.sign({ nbf: now() + 120 }), /not valid yet/],
    ['unknown kid', () => issuer.sign({}, { kid: 'nobody-has-this' }), /unknown key/],
    [
      'tampered signature',
      async () => {
        const [header, payload, signature] = (await issuer.sign()).split('.');
        const forged = base64url({ ...JSON.parse(Buffer.from(payload!, 'base64url').toString()), sub: 'admin', svc_admin: true });
        return `${header}.${forged}.${signature}`;
      },
      /signature is invalid/,
    ],
    ['garbage', async () => 'not.a.jwt', /malformed|not valid/],
  ];

  it.each(attacks)('refused: %s', async (_title, makeToken, message) => {
    const token = await makeToken();
    const attempt = verifier.verify(token);
    await expect(attempt).rejects.toMatchObject({ name: 'AuthenticationError', message: expect.stringMatching(message) });
    await expect(attempt).rejects.not.toMatchObject({ message: expect.stringContaining(token) });
  });

  it('a verified token is remembered, but never past its expiry', async () => {
    // Long enough to be verified twice (`exp` is in whole seconds), short enough to wait out.
    const lifetimeS = 2;
    const shortLived = createOidcVerifier({ issuer: issuer.issuer, audience: issuer.audience, clockToleranceSeconds: 0 });
    const token = await issuer.sign({ sub: 'dave', exp: now() + lifetimeS });
    expect(shortLived.remembered(token)).toBeUndefined();
    expect((await shortLived.verify(token)).sub).toBe('dave');
    expect(shortLived.remembered(token)?.sub).toBe('dave');
    expect((await shortLived.verify(token)).sub).toBe('dave');
    // Its expiry passes.
    await new Promise((resolve) => setTimeout(resolve, lifetimeS * 1000 + 100));
    expect(shortLived.remembered(token)).toBeUndefined();
    await expect(shortLived.verify(token)).rejects.toThrow(/expired/);
  });

  it('a remembered token does not make a tampered copy pass', async () => {
    const token = await issuer.sign({ sub: 'erin' });
    await verifier.verify(token);
    const [header, payload, signature] = token.split('.');
    const forged = `${header}.${base64url({ ...JSON.parse(Buffer.from(payload!, 'base64url').toString()), sub: 'root' })}.${signature}`;
    expect(verifier.remembered(forged)).toBeUndefined();
    await expect(verifier.verify(forged)).rejects.toThrow(/signature is invalid/);
  });

  it('an unreachable issuer is refused with a clear message, and retried later', async () => {
    const offline = createOidcVerifier({ issuer: 'http://127.0.0.1:1', audience: 'x' });
    await expect(offline.verify(await issuer.sign())).rejects.toThrow(/identity provider could not be reached/);
  });
});
